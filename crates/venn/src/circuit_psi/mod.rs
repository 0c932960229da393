//! The circuit PSIs' back end: one protocol, [`CircuitPsi`], generic over a front end
//! (PSWW18's two-dimensional cuckoo hashing, HEK12's sorting network, RS21's OPPRF on RR22's
//! OPRF; [`protocol`]) that says how the items become the circuit's inputs. Here is what
//! they all share around their circuits: the offline phase — the circuit's Beaver triples
//! and one random OT per output bit each way, from the same OT extension — and its state,
//! and the end of the online phase, where the circuit's XOR-shared match bits become the
//! receiver's output ([`convert`]: a count, a sum of the sender's values with its count, or
//! only whether the count reaches a threshold).
//!
//! A building block between the framework and the protocols: the front ends are in
//! `protocols/` (psww18, hek12, rr22_cpsi), each only what differs.
//!
//! Roles: the receiver leads the triples and learns the output; the sender sends the
//! random OTs (and holds any values) and learns nothing.

mod convert;
mod protocol;

use crate::crypto::{Prg, RandomOracle};
use crate::framework::{
    Accepts, Config, Context, Offline, Options, Output, OutputKind, RoleInfo, Security, Stash,
};
use crate::gmw::{Gmw, Shared, TripleSource, Triples};
use crate::session::Role;
use crate::state::{StateReader, StateWriter};
use crate::{Error, Result};
use convert::{ReceiversOts, SendersOts};
pub(crate) use protocol::{CircuitParams, CircuitPsi, FrontEnd, Kept, Side, Weights};

/// A circuit PSI's configuration: the back end's options — where the triples come from
/// (`--offline ot|iknp`), a count's threshold (`--threshold`) — and its front end's own
/// (`C`: σ, psww18's stash).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct CircuitConfig<C> {
    /// The OTs the triples come from.
    pub offline: Offline,
    /// With `--threshold`: the receiver learns only whether the count reaches it.
    pub threshold: Option<u64>,
    /// The front end's options.
    pub front: C,
}

impl<C: Config> Config for CircuitConfig<C> {
    const ACCEPTS: Accepts = Accepts {
        offline: &[Offline::Ot, Offline::Iknp],
        threshold: true,
        ..C::ACCEPTS
    };

    fn from_options(options: &Options) -> Result<Self> {
        Ok(CircuitConfig {
            offline: options.offline,
            threshold: options.threshold,
            front: C::from_options(options)?,
        })
    }

    fn options(&self) -> Options {
        Options {
            offline: self.offline,
            threshold: self.threshold,
            ..self.front.options()
        }
    }
}

/// What the circuit's match bits add up to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Function {
    /// The number of common items.
    Count,
    /// The sum of the values of the sender's common items (mod 2^64), and their number.
    Sum,
}

/// Value columns a sum adds up in one run at most: the receiver holds each bin's share of
/// every column (8 bytes a bin and column), and each column past the first costs a pass
/// of the conversion (8 bytes a bin each way).
pub const MAX_VALUE_COLUMNS: usize = 16;

/// Bits of the ring the match bits are added up in ([`convert`]).
fn ring_bits(outputs: u64, function: Function) -> u32 {
    match function {
        Function::Count => convert::counting_bits(outputs),
        Function::Sum => convert::SUM_BITS,
    }
}

/// Words of triples a threshold's comparison uses, for a circuit of `outputs` match bits.
fn threshold_words(outputs: u64, threshold: Option<u64>) -> usize {
    match threshold {
        Some(_) => convert::counting_bits(outputs) as usize - 1,
        None => 0,
    }
}

/// The roles of a circuit PSI: the sender learns nothing, the receiver `output`; each
/// needs `item_bytes` of memory per item of either set (an upper bound from 2^8 items; the
/// protocols model their memory themselves).
pub(crate) const fn roles(output: OutputKind, item_bytes: u64) -> [RoleInfo; 2] {
    [
        RoleInfo {
            role: Role::Sender,
            security: Security::SemiHonest,
            output: OutputKind::Nothing,
            peer_item_bytes: item_bytes,
            own_item_bytes: item_bytes,
        },
        RoleInfo {
            role: Role::Receiver,
            security: Security::SemiHonest,
            output,
            peer_item_bytes: item_bytes,
            own_item_bytes: item_bytes,
        },
    ]
}

/// Bytes [`prepare`] leaves and needs on the way, for `words` words of triples from the
/// OTs `offline` names and `outputs` conversion OTs: the triples (3 bits an AND gate) and
/// their generator's buffers, and the OTs each way (64 bytes an output).
fn prepared_bytes(words: usize, outputs: u64, offline: Offline) -> u64 {
    let source = TripleSource::of(offline);
    3 * 8 * words as u64 + crate::gmw::triple_working_bytes(words, source) + 64 * outputs
}

/// Random OTs for the conversion, one set each way: those this party sends in (the
/// sender's, for a count), and those it receives in (the receiver's).
struct ConversionOts {
    pub sent: SendersOts,
    pub received: ReceiversOts,
}

/// What the offline phase leaves for the online one: the triples and the conversion's OTs.
struct Prepared {
    pub triples: Triples,
    pub ots: ConversionOts,
}

/// The offline phase: `words` words of triples (the receiver leads; from the OTs
/// `offline` names) and `outputs` random OTs each way from the same extension, under a
/// session id from `domain` and the session.
fn prepare(
    ctx: &mut Context,
    domain: &str,
    offline: Offline,
    words: usize,
    outputs: u64,
) -> Result<Prepared> {
    let sid = RandomOracle::new(domain, &ctx.session.id).hash(&[b"triples"]);
    ctx.phase("triples", true);
    let leader = ctx.session.role == Role::Receiver;
    let source = TripleSource::of(offline);
    let shape = (words, outputs as usize);
    let (triples, ots) = Triples::generate(ctx.peer, leader, shape, &mut ctx.prg, &sid, source)?;
    let ots = ConversionOts {
        sent: SendersOts::new(ots.sent),
        received: ReceiversOts::new(ots.choices, ots.received),
    };
    Ok(Prepared { triples, ots })
}

impl Prepared {
    /// Writes the triples and the OTs.
    fn save(&self, out: &mut StateWriter) -> Result<()> {
        self.triples.save(out)?;
        self.ots.sent.save(out)?;
        self.ots.received.save(out)
    }

    /// Reads what [`Prepared::save`] wrote: `words` words of triples, `outputs` OTs each
    /// way.
    fn load(input: &mut StateReader, words: usize, outputs: usize) -> Result<Self> {
        let triples = Triples::load(input, words)?;
        let ots = ConversionOts {
            sent: SendersOts::load(input, outputs)?,
            received: ReceiversOts::load(input, outputs)?,
        };
        Ok(Prepared { triples, ots })
    }
}

/// Writes a state's header: the parameters' encoding and the options they were made with
/// (so that [`load_header`] can make them again for the sizes the state is for).
fn save_header(out: &mut StateWriter, encoded: &[u8], options: Options) -> Result<()> {
    out.u64(encoded.len() as u64)?;
    out.raw(encoded)?;
    out.u64(options.sigma.unwrap_or(0) as u64)?;
    out.u64(options.stash as u64)?;
    match options.threshold {
        None => out.u64(0),
        Some(t) => {
            out.u64(1)?;
            out.u64(t)
        }
    }
}

/// Reads what [`save_header`] wrote: the parameters' encoding and the options.
fn load_header(input: &mut StateReader) -> Result<(Vec<u8>, Options)> {
    let len = input.u64()?;
    if len > 128 {
        return Err(Error::State(format!("parameters of {len} bytes")));
    }
    let encoded = input.raw(len as usize)?;
    let sigma = match input.u64()? {
        0 => None,
        32 => Some(32),
        s => return Err(Error::State(format!("a circuit state for σ = {s}"))),
    };
    let stash = match input.u64()? {
        0 => Stash::Combined,
        1 => Stash::Separate,
        s => return Err(Error::State(format!("a state with stash code {s}"))),
    };
    let threshold = match input.u64()? {
        0 => None,
        1 => Some(input.u64()?),
        t => return Err(Error::State(format!("a state with threshold flag {t}"))),
    };
    let options = Options {
        sigma,
        stash,
        threshold,
        ..Options::default()
    };
    Ok((encoded, options))
}

/// A threshold compares a count: a sum has none (the options refuse it before a run).
fn refuse_threshold_of_sum(function: Function, threshold: Option<u64>) -> Result<()> {
    match (function, threshold) {
        (Function::Sum, Some(_)) => Err(Error::Usage(
            "a threshold applies to a count, not to a sum".into(),
        )),
        _ => Ok(()),
    }
}

/// The sender's end of the circuit: its share of the match bits `found` added up — each
/// weighted by `value(i)` for a sum, by 1 for a count — sent to the receiver, or with a
/// threshold its share put into the comparison.
fn send_output(
    gmw: &mut Gmw,
    ots: &SendersOts,
    found: &Shared,
    value: Option<&dyn Fn(usize) -> u64>,
    threshold: Option<u64>,
    prg: &mut Prg,
) -> Result<()> {
    let function = match value {
        Some(_) => Function::Sum,
        None => Function::Count,
    };
    refuse_threshold_of_sum(function, threshold)?;
    let bits = ring_bits(found.len() as u64, function);
    // A sum's weight carries the count in its low half (see [`convert`]).
    let weight = |i| match value {
        Some(v) => 1 | (v(i) as u128) << 64,
        None => 1,
    };
    let share = convert::senders_share(gmw.channel(), ots, found, weight, bits)?;
    match threshold {
        Some(_) => convert::sender_reaches(gmw, share as u64, bits, prg),
        None => gmw
            .channel()
            .send(&share.to_le_bytes()[..bits as usize / 8]),
    }
}

/// The receiver's end of the circuit: the count, or the sum and the count, of the match
/// bits `found` — of which at most `most` can be set — or with a threshold only whether
/// the count reaches it.
fn receive_output(
    gmw: &mut Gmw,
    ots: &ReceiversOts,
    found: &Shared,
    function: Function,
    threshold: Option<u64>,
    most: u64,
    prg: &mut Prg,
) -> Result<Output> {
    refuse_threshold_of_sum(function, threshold)?;
    let outputs = found.len() as u64;
    let bits = ring_bits(outputs, function);
    let share = convert::receivers_share(gmw.channel(), ots, found, bits)?;
    if let Some(threshold) = threshold {
        // The count is at most the outputs, so a larger T is never reached.
        let t = threshold.min(outputs + 1);
        let reached = convert::receiver_reaches(gmw, share as u64, t, bits, prg)?;
        return Ok(Output::Threshold { threshold, reached });
    }
    combine(gmw, share, function, bits, most, &[])
}

/// The receiver's output from its share and the one the sender sends: the count, or the
/// sums and the count, of at most `most`; `columns` the shares of any value columns past
/// the first (64 bits each; the first rides with the count).
fn combine(
    gmw: &mut Gmw,
    share: u128,
    function: Function,
    bits: u32,
    most: u64,
    columns: &[u64],
) -> Result<Output> {
    let bytes = bits as usize / 8;
    let mut theirs = Vec::new();
    gmw.channel()
        .recv_exact_into(&mut theirs, bytes + 8 * columns.len(), "the sender's share")?;
    let (first, rest) = theirs.split_at(bytes);
    let mut word = [0u8; 16];
    word[..bytes].copy_from_slice(first);
    let total = share.wrapping_add(u128::from_le_bytes(word)) & (u128::MAX >> (128 - bits));
    let count = total as u64 & (u64::MAX >> (64 - bits.min(64)));
    if count > most {
        return Err(Error::protocol(
            format!("a count of at most {most}"),
            count.to_string(),
        ));
    }
    Ok(match function {
        Function::Count => Output::Count(count),
        Function::Sum => {
            let rest =
                (rest.chunks_exact(8)).map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes")));
            let sums = std::iter::once((total >> 64) as u64)
                .chain(columns.iter().zip(rest).map(|(a, b)| a.wrapping_add(b)))
                .collect();
            Output::Sum { count, sums }
        }
    })
}

/// The sender's end of a sum of `columns` value columns both parties hold additive shares
/// of (mod 2^64; `mine(i, c)` its share of bit i's value in column c): the match bits
/// `found` weighted by its shares with the OTs it sends in, as in [`send_output`], and by
/// the receiver's with the receiver as the OTs' sender; its share of all sent. The first
/// column rides with the count in one 128-bit pass of the conversion; each other column
/// takes a 64-bit pass of its own each way, over the same OTs with messages of its own.
fn send_shared_sum(
    gmw: &mut Gmw,
    ots: &ConversionOts,
    found: &Shared,
    columns: usize,
    mine: &dyn Fn(usize, usize) -> u64,
) -> Result<()> {
    let chan = gmw.channel();
    let e = convert::receive_corrections(chan, &ots.sent, found.len())?;
    convert::send_corrections(chan, &ots.received, found)?;
    let mut shares = Vec::with_capacity(16 + 8 * columns);
    for c in 0..columns {
        // The receiver's shares weigh the value's 64 bits, at the top of the pass's ring.
        let bits = convert::sum_pass_bits(c);
        let weight = |i| match c {
            0 => 1 | (mine(i, 0) as u128) << 64,
            _ => mine(i, c) as u128,
        };
        let share = convert::senders_pass(chan, &ots.sent, &e, found, weight, bits, c as u64)?;
        let theirs = convert::receivers_pass(chan, &ots.received, found, 64, c as u64)?;
        let both = share.wrapping_add(theirs << (bits - 64));
        shares.extend_from_slice(&both.to_le_bytes()[..bits as usize / 8]);
    }
    chan.send(&shares)
}

/// The receiver's end of [`send_shared_sum`], `mine(i, c)` its share of bit i's value in
/// column c: the sums and the count (at most `most`).
fn receive_shared_sum(
    gmw: &mut Gmw,
    ots: &ConversionOts,
    found: &Shared,
    columns: usize,
    mine: &dyn Fn(usize, usize) -> u64,
    most: u64,
) -> Result<Output> {
    let chan = gmw.channel();
    convert::send_corrections(chan, &ots.received, found)?;
    let e = convert::receive_corrections(chan, &ots.sent, found.len())?;
    let (mut first, mut rest) = (0, Vec::with_capacity(columns));
    for c in 0..columns {
        let bits = convert::sum_pass_bits(c);
        let share = convert::receivers_pass(chan, &ots.received, found, bits, c as u64)?;
        let weight = |i| mine(i, c) as u128;
        let ours = convert::senders_pass(chan, &ots.sent, &e, found, weight, 64, c as u64)?;
        let both = share.wrapping_add(ours << (bits - 64));
        match c {
            0 => first = both,
            _ => rest.push(both as u64),
        }
    }
    combine(gmw, first, Function::Sum, convert::SUM_BITS, most, &rest)
}
