//! Circuit PSI on VOLE (RR22 §5 with the RS21 front end: Rindal–Schoppmann, Eurocrypt
//! 2021; volePSI's `RsCpsi`; rr22.md §5): the size of the intersection (`rr22-ca`), or
//! whether it reaches a threshold, or the sum of values the sender attached to its common
//! items with their number (`rr22-sum`) — the outputs of psww18's circuit, at a fraction
//! of its gates.
//!
//! Roles: the receiver R cuckoo-hashes its items and learns the output; the sender S
//! simple-hashes its items and learns nothing.
//!
//! **Offline** (no inputs): a silent VOLE for the OPRF (S holds Δ); the equality
//! circuit's Beaver triples from silent OT (or `--offline iknp`), and from the same OTs
//! one random OT per bin each way for the conversion of its bits to a count (S sending)
//! or a sum (both).
//!
//! **Online**: R sends fresh seeds for the OPRF's OKVS and its cuckoo table and puts each
//! of its items into one of β bins ([`hashing`]); S puts each of its items into all three
//! of its bins and draws a random tag t_i of ℓ_k bits for each bin ([`params`]). A batched
//! OPPRF ([`crate::oprf::opprf`]) gives R, for each bin, o_i = t_i where S has
//! R's item there, else a uniform value: t_i and o_i are XOR shares of z_i = t_i ⊕ o_i,
//! zero exactly at a common item. GMW computes shares of [z_i = 0] with ℓ_k − 1 AND gates
//! a bin (R, the leader, complements its share; a tree of depth ⌈log₂ ℓ_k⌉), and the
//! circuit-PSI conversion ([`crate::circuit_psi`]) adds them up: R learns the count, or
//! with `--threshold` only whether it reaches T. For a sum S also programs, beside the
//! tag, its item's value plus a random share s_i of the bin: R holds v + s_i at a common
//! item, S holds −s_i, and the bits are weighted by both shares, each party the OT sender
//! for its own.

mod hashing;
mod params;

use super::{
    Accepts, AnyParty, Context, Offline, Options, Output, OutputKind, Parameters, Party, Protocol,
    ProtocolInfo, Security, Sizes,
};
use crate::circuit_psi::{self, Function, Prepared};
use crate::crypto::Block;
use crate::gmw::{Gmw, Shared};
use crate::items::Items;
use crate::okvs::{BinnedKeys, Okvs};
use crate::oprf::opprf::{self, Programmed, Tagged};
use crate::oprf::{self, Hashes};
use crate::session::Role;
use crate::state::{StateReader, StateWriter};
use crate::tables::HASHES;
use crate::vole::{self, Adversary, VoleReceiver, VoleSender};
use crate::{Error, Result};
use hashing::Hashing;
pub(super) use params::CpsiParams;
use rayon::prelude::*;

/// RR22's circuit PSI with the function of the intersection it computes.
pub(super) struct Rr22Cpsi {
    function: Function,
}

impl Rr22Cpsi {
    /// The intersection's size (`rr22-ca`).
    pub(super) const CA: Rr22Cpsi = Rr22Cpsi {
        function: Function::Count,
    };
    /// The sum of the sender's values over the intersection, and its size (`rr22-sum`).
    pub(super) const SUM: Rr22Cpsi = Rr22Cpsi {
        function: Function::Sum,
    };
}

/// S, the simple-hashing side.
struct Sender(Function);
/// R, the cuckoo side.
struct Receiver(Function);

const PAPER: &str = "Raghuraman–Rindal, Blazing Fast PSI from Improved OKVS and Subfield \
                     VOLE (CCS 2022), §5 circuit PSI with the front end of Rindal–Schoppmann \
                     (Eurocrypt 2021): a batched OPPRF from silent VOLE and the 3H-GCT OKVS, \
                     then an equality circuit in GMW with triples from silent OT";

static CA_INFO: ProtocolInfo = ProtocolInfo {
    name: "rr22-ca",
    paper: PAPER,
    security: Security::SemiHonest,
    leakage: "The receiver learns the size of the intersection (with --threshold T only \
              whether it is at least T); the sender learns nothing. Neither learns which \
              items are common. Both learn the other's set size. Secure only if both \
              parties follow the protocol (the VOLE's and silent OT's dual LPN over the \
              ExConv code, a correlation-robust hash and the base OTs' DDH; with --offline \
              iknp the triples from IKNP). Keys of any length, hashed; two distinct keys \
              match with probability at most 2^-40. A cuckoo placement that fails (an event \
              of probability at most 2^-40) ends the run with an error, which the peer sees.",
    both_allowed: false,
    roles: &circuit_psi::roles(OutputKind::Count, 1024),
};

static SUM_INFO: ProtocolInfo = ProtocolInfo {
    name: "rr22-sum",
    paper: PAPER,
    security: Security::SemiHonest,
    leakage: "The receiver learns the size of the intersection and, for each of the \
              sender's value columns (--value-column a,b: up to 16, each an integer below \
              2^32 per row, the rows of a repeated key added), the sum (mod 2^64) of the \
              values the sender gave its common keys, and so how many columns there are; \
              the sender learns nothing. Neither learns which items are common, and the \
              receiver learns no single value unless the intersection has one item (or the \
              sums alone determine it). Both learn the other's set size. Secure only if \
              both parties follow the protocol (the VOLE's and silent OT's dual LPN over \
              the ExConv code, a correlation-robust hash and the base OTs' DDH; with \
              --offline iknp the triples from IKNP). Keys of any length, hashed; two distinct keys match with \
              probability at most 2^-40. A cuckoo placement that fails (an event of \
              probability at most 2^-40) ends the run with an error, which the peer sees.",
    both_allowed: false,
    roles: &circuit_psi::roles(OutputKind::Sum, 1024),
};

impl Protocol for Rr22Cpsi {
    fn info(&self) -> &'static ProtocolInfo {
        match self.function {
            Function::Count => &CA_INFO,
            Function::Sum => &SUM_INFO,
        }
    }

    fn params(&self, sizes: Sizes, options: Options) -> Result<Box<dyn Parameters>> {
        Ok(Box::new(CpsiParams::new(self.function, sizes, options)?))
    }

    /// From the parameters: the VOLE (its pairs, and while it is made its noise and
    /// trees: rr22's 384 bytes a column at R, 160 at S), the triples and OTs, the bins'
    /// keys, tags and shares; S's three keys an item with their OPRF values, programmed
    /// values and the hint (1.4 columns a key, and its solving); R's hint. A quarter more
    /// for what the allocator keeps.
    fn memory(&self, role: Role, sizes: Sizes, options: Options) -> u64 {
        let Ok(p) = CpsiParams::new(self.function, sizes, options) else {
            return 0; // refused by the parameters before anything is allocated
        };
        let prepared = circuit_psi::prepared_bytes(p.triple_words(), p.bins, options.offline);
        // Bytes of a programmed value: u64, Block or Tagged (opprf::Programmed).
        let value = match (self.function, p.tag_bits) {
            (Function::Count, ..=64) => 8,
            (Function::Count, _) => 16,
            (Function::Sum, _) => 24,
        };
        let hint = 2 * (HASHES as u64 * p.n_s) * value;
        let (vole, own) = match role {
            Role::Sender => (160, HASHES as u64 * p.n_s * (48 + 48 + value + 48)),
            Role::Receiver => (384, 96 * p.n_r),
        };
        let bins = p.bins * (32 + 2 * value + p.tag_bits as u64 / 2);
        let need = vole * p.oprf.len() as u64 + prepared + hint + own + bins;
        need + need / 4
    }

    fn accepts(&self) -> Accepts {
        Accepts {
            offline: &[Offline::Ot, Offline::Iknp],
            threshold: self.function == Function::Count,
            value_columns: match self.function {
                Function::Sum => circuit_psi::MAX_VALUE_COLUMNS,
                Function::Count => 0,
            },
            ..Accepts::NOTHING
        }
    }

    fn party(&self, role: Role) -> &'static dyn AnyParty {
        match (role, self.function) {
            (Role::Sender, Function::Count) => &Sender(Function::Count),
            (Role::Sender, Function::Sum) => &Sender(Function::Sum),
            (Role::Receiver, Function::Count) => &Receiver(Function::Count),
            (Role::Receiver, Function::Sum) => &Receiver(Function::Sum),
        }
    }
}

/// What the offline phase leaves for the online one: the VOLE `V`, the triples and the
/// conversion's OTs.
pub(super) struct State<V> {
    params: CpsiParams,
    vole: V,
    prepared: Prepared,
}

/// The session's parameters, which must be those the state was made for, with the run's
/// actual set sizes (a state made for larger sets sizes the tables).
fn session_params(ctx: &Context, made_for: &CpsiParams) -> Result<CpsiParams> {
    let function = made_for.function;
    let mut p = CpsiParams::new(function, ctx.session.sized, ctx.session.options)?;
    if p != *made_for {
        return Err(Error::State(
            "the precomputed VOLE and triples were made for other parameters".into(),
        ));
    }
    (p.n_r, p.n_s) = (ctx.session.n_receiver, ctx.session.n_sender);
    Ok(p)
}

/// Either party's offline phase: its side of the VOLE (`vole`), then the triples (R
/// leads) and the conversion's OTs each way (a count uses the sender's; a sum both).
fn offline<V>(
    ctx: &mut Context,
    function: Function,
    vole: impl FnOnce(&mut Context, usize) -> Result<V>,
) -> Result<State<V>> {
    let params = CpsiParams::new(function, ctx.session.sized, ctx.session.options)?;
    ctx.phase("silent VOLE", true);
    let vole = vole(ctx, params.oprf.len())?;
    let (words, bins) = (params.triple_words(), params.bins);
    let prepared = circuit_psi::prepare(ctx, "venn/rr22-cpsi/base-ots", words, bins)?;
    Ok(State {
        params,
        vole,
        prepared,
    })
}

/// Writes a state: the header, the VOLE (`vole`), the triples and OTs.
fn save_state<V>(
    state: &State<V>,
    vole: impl FnOnce(&V, &mut StateWriter) -> Result<()>,
    out: &mut StateWriter,
) -> Result<()> {
    let options = Options {
        threshold: state.params.threshold,
        ..Options::default()
    };
    circuit_psi::save_header(out, &state.params.encode(), options)?;
    vole(&state.vole, out)?;
    state.prepared.save(out)
}

/// Reads what [`save_state`] wrote for `sizes`, the VOLE by `vole(input, m)`.
fn load_state<V>(
    function: Function,
    sizes: Sizes,
    vole: impl FnOnce(&mut StateReader, usize) -> Result<V>,
    input: &mut StateReader,
) -> Result<State<V>> {
    let (encoded, options) = circuit_psi::load_header(input)?;
    let params = CpsiParams::new(function, sizes, options)?;
    if params.encode() != encoded {
        return Err(Error::State(
            "an rr22 circuit state for other parameters".into(),
        ));
    }
    let vole = vole(input, params.oprf.len())?;
    let (words, bins) = (params.triple_words(), params.bins as usize);
    let prepared = Prepared::load(input, words, bins)?;
    Ok(State {
        params,
        vole,
        prepared,
    })
}

/// Shares of [z_i = 0] for each bin i, z_i the XOR of both parties' ℓ_k-bit `tags`
/// (volePSI's `isZero` circuit): the tags' bit planes, complemented by the leader, ANDed
/// by a tree — ℓ_k − 1 AND gates a bin, ⌈log₂ ℓ_k⌉ exchanges.
fn is_zero(gmw: &mut Gmw, tags: &[u128], bits: u32) -> Result<Shared> {
    let planes = Shared::planes(tags.len(), bits, |i| tags[i]);
    let complements = planes.iter().map(|p| gmw.not(p)).collect();
    Ok(gmw.and_all(vec![complements])?.remove(0).expect("ℓ_k ≥ 1"))
}

/// What S programs into the OPPRF: at each of its keys (by function, then item) the tag of
/// the key's bin, and a payload.
struct Program<'a> {
    hashes: &'a Hashes,
    oprf: &'a Okvs,
    vole: (Block, &'a [Block]),
    keys: &'a [Block],
    bin_of: &'a [u32],
    tags: &'a [u128],
    tag_bytes: usize,
}

impl Program<'_> {
    /// Programs values `V` with payload `payload(key, bin, 0)`, and `columns − 1` more
    /// payload columns (`payload(key, bin, c)`), and sends the hints.
    fn send<V: Programmed>(
        &self,
        ctx: &mut Context,
        columns: usize,
        payload: impl Fn(usize, usize, usize) -> u64 + Sync,
    ) -> Result<()> {
        let programmed: Vec<V> = (self.bin_of.par_iter().enumerate())
            .map(|(k, &i)| V::new(self.tags[i as usize], payload(k, i as usize, 0)))
            .collect();
        let more = (1..columns)
            .map(|c| {
                (self.bin_of.par_iter().enumerate())
                    .map(|(k, &i)| payload(k, i as usize, c))
                    .collect()
            })
            .collect();
        let (keys, tag_bytes) = (self.keys, self.tag_bytes);
        opprf::send(
            ctx,
            self.hashes,
            self.oprf,
            self.vole,
            keys,
            (programmed, more),
            tag_bytes,
        )
    }
}

/// What R learns of each bin: the tag, and the payload of each value column (none for a
/// count), column by column.
struct Learned {
    tags: Vec<u128>,
    payloads: Vec<Vec<u64>>,
}

/// R's values from the OPPRF as values `V` (with the OPRF's hashes, R's keys binned for
/// its OKVS, S's number of keys and the tags' bytes), for `columns` value columns.
fn learned<V: Programmed>(
    ctx: &mut Context,
    (hashes, binned, peer_keys, tag_bytes): (&Hashes, &BinnedKeys, u64, usize),
    vole: VoleReceiver,
    columns: usize,
) -> Result<Learned> {
    let more = columns.saturating_sub(1);
    let sizes = (peer_keys, more);
    let (o, more): (Vec<V>, _) = opprf::receive(ctx, hashes, binned, vole, sizes, tag_bytes)?;
    let (tags, first) = o.iter().map(|o| (o.tag(), o.payload())).unzip();
    let payloads = match columns {
        0 => Vec::new(),
        _ => std::iter::once(first).chain(more).collect(),
    };
    Ok(Learned { tags, payloads })
}

/// The sender's number of value columns, as it announces it (between 1 and
/// [`circuit_psi::MAX_VALUE_COLUMNS`]).
fn value_columns(ctx: &mut Context) -> Result<usize> {
    let mut byte = Vec::new();
    ctx.peer
        .recv_exact_into(&mut byte, 1, "the value columns")?;
    match byte[0] as usize {
        c @ 1..=circuit_psi::MAX_VALUE_COLUMNS => Ok(c),
        c => Err(Error::protocol(
            format!("1 to {} value columns", circuit_psi::MAX_VALUE_COLUMNS),
            c.to_string(),
        )),
    }
}

impl Party for Sender {
    type State = State<VoleSender>;

    /// S is the VOLE's sender, the triples' follower, the counting OTs' sender (and the
    /// summing OTs' receiver).
    fn offline(&self, ctx: &mut Context) -> Result<Self::State> {
        offline(ctx, self.0, |ctx, m| {
            let sid = ctx.session.id;
            vole::send(ctx.peer, &mut ctx.prg, &sid, m, Adversary::SemiHonest)
        })
    }

    /// S: its keys in all their bins, a tag (and a share) a bin, the OPPRF, the circuit,
    /// its share of the output.
    fn online(&self, ctx: &mut Context, state: Self::State, items: &Items) -> Result<Output> {
        let p = session_params(ctx, &state.params)?;
        let hashes = Hashes::new(&ctx.session.id, None);
        ctx.phase("hash items", false);
        let oprf = oprf::receive_seed(ctx, p.oprf, None)?;
        let mut seed = Vec::new();
        ctx.peer.recv_blocks(1, &mut seed, "the cuckoo seed")?;
        let hashing = Hashing::new(&ctx.session.id, seed[0], p.bins);
        let (keys, bin_of) = hashing.senders_keys(&hashes.keys(items));
        let tag_mask = u128::MAX >> (128 - p.tag_bits);
        let tags: Vec<u128> = (0..p.bins).map(|_| ctx.prg.block() & tag_mask).collect();
        ctx.phase("OPPRF", false);
        let VoleSender { delta, b } = state.vole;
        // A random share of each bin's value in each column, bin by bin.
        let columns = match self.0 {
            Function::Count => 0,
            Function::Sum => items.value_columns(),
        };
        let shares: Vec<u64> = (0..p.bins as usize * columns)
            .map(|_| ctx.prg.u64())
            .collect();
        let program = Program {
            hashes: &hashes,
            oprf: &oprf,
            vole: (delta, &b),
            keys: &keys,
            bin_of: &bin_of,
            tags: &tags,
            tag_bytes: p.tag_bytes(),
        };
        match (self.0, p.tag_bits) {
            (Function::Count, ..=64) => program.send::<u64>(ctx, 0, |_, _, _| 0)?,
            (Function::Count, _) => program.send::<Block>(ctx, 0, |_, _, _| 0)?,
            (Function::Sum, _) => {
                let values = items.values().ok_or_else(|| {
                    Error::Usage("rr22-sum's sender needs a value per item".into())
                })?;
                ctx.peer.send(&[columns as u8])?;
                let n = items.len().max(1);
                // Key k is item k mod n's, by the function k / n.
                let payload = |k: usize, i: usize, c: usize| {
                    values[k % n * columns + c].wrapping_add(shares[i * columns + c])
                };
                program.send::<Tagged>(ctx, columns, payload)?
            }
        }
        drop((b, keys, bin_of));
        ctx.phase("circuit and count", false);
        let mut gmw = Gmw::new(ctx.peer, false, state.prepared.triples);
        let found = is_zero(&mut gmw, &tags, p.tag_bits)?;
        let ots = &state.prepared.ots;
        match self.0 {
            Function::Count => {
                let prg = &mut ctx.prg;
                circuit_psi::send_output(&mut gmw, &ots.sent, &found, None, p.threshold, prg)?
            }
            Function::Sum => {
                let mine = |i: usize, c: usize| shares[i * columns + c].wrapping_neg();
                circuit_psi::send_shared_sum(&mut gmw, ots, &found, columns, &mine)?
            }
        }
        Ok(Output::Nothing)
    }

    fn save(&self, state: &Self::State, out: &mut StateWriter) -> Result<()> {
        save_state(state, VoleSender::save, out)
    }

    fn load(&self, sizes: Sizes, input: &mut StateReader) -> Result<Self::State> {
        load_state(self.0, sizes, VoleSender::load, input)
    }
}

impl Party for Receiver {
    type State = State<VoleReceiver>;

    /// R is the VOLE's receiver, the triples' leader, the counting OTs' receiver (and the
    /// summing OTs' sender).
    fn offline(&self, ctx: &mut Context) -> Result<Self::State> {
        offline(ctx, self.0, |ctx, m| {
            let sid = ctx.session.id;
            vole::receive(ctx.peer, &mut ctx.prg, &sid, m, Adversary::SemiHonest)
        })
    }

    /// R: the seeds, its cuckoo table's keys, the OPPRF, the circuit, the output.
    fn online(&self, ctx: &mut Context, state: Self::State, items: &Items) -> Result<Output> {
        let p = session_params(ctx, &state.params)?;
        let hashes = Hashes::new(&ctx.session.id, None);
        ctx.phase("hash items", false);
        let oprf = oprf::send_seed(ctx, p.oprf, None)?;
        // Fresh, once the items are fixed (as the OKVS's seed).
        let seed = ctx.prg.block();
        ctx.peer.send_blocks(&[seed])?;
        let hashing = Hashing::new(&ctx.session.id, seed, p.bins);
        let keys = hashing.receivers_keys(&hashes.keys(items), &mut ctx.prg)?;
        ctx.phase("OPPRF", false);
        let binned = oprf.bin(&keys);
        let (vole, peer_keys) = (state.vole, HASHES as u64 * p.n_s);
        let learn = (&hashes, &binned, peer_keys, p.tag_bytes());
        let Learned { tags, payloads } = match (self.0, p.tag_bits) {
            (Function::Count, ..=64) => learned::<u64>(ctx, learn, vole, 0)?,
            (Function::Count, _) => learned::<Block>(ctx, learn, vole, 0)?,
            (Function::Sum, _) => {
                let columns = value_columns(ctx)?;
                learned::<Tagged>(ctx, learn, vole, columns)?
            }
        };
        drop((binned, keys));
        ctx.phase("circuit and count", false);
        let mut gmw = Gmw::new(ctx.peer, true, state.prepared.triples);
        let found = is_zero(&mut gmw, &tags, p.tag_bits)?;
        let ots = &state.prepared.ots;
        let most = p.n_r.min(p.n_s);
        match self.0 {
            Function::Count => circuit_psi::receive_output(
                &mut gmw,
                &ots.received,
                &found,
                Function::Count,
                p.threshold,
                most,
                &mut ctx.prg,
            ),
            Function::Sum => {
                let mine = |i: usize, c: usize| payloads[c][i];
                let columns = payloads.len();
                circuit_psi::receive_shared_sum(&mut gmw, ots, &found, columns, &mine, most)
            }
        }
    }

    fn save(&self, state: &Self::State, out: &mut StateWriter) -> Result<()> {
        save_state(state, VoleReceiver::save, out)
    }

    fn load(&self, sizes: Sizes, input: &mut StateReader) -> Result<Self::State> {
        load_state(self.0, sizes, VoleReceiver::load, input)
    }
}
