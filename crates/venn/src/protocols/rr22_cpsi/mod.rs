//! Circuit PSI on VOLE (RR22 §5 with the RS21 front end: Rindal–Schoppmann, Eurocrypt
//! 2021; volePSI's `RsCpsi`; rr22.md §5): the size of the intersection (`rr22-ca`), or
//! whether it reaches a threshold, or the sum of values the sender attached to its common
//! items with their number (`rr22-sum`) — the outputs of psww18's circuit, at a fraction
//! of its gates.
//!
//! Roles: the receiver R cuckoo-hashes its items and learns the output; the sender S
//! simple-hashes its items and learns nothing.
//!
//! A front end of the generic circuit PSI ([`crate::circuit_psi`], which does the rest).
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

use crate::circuit_psi::{self, CircuitPsi, FrontEnd, Function, Kept, Side, Weights};
use crate::crypto::{Block, Prg};
use crate::framework::{Context, OutputKind, ProtocolInfo, Security};
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

/// RS21's front end of the circuit PSI on RR22's OPPRF.
pub(super) struct Rr22Cpsi;

/// The intersection's size (`rr22-ca`).
pub(super) const CA: CircuitPsi<Rr22Cpsi> = CircuitPsi::new(Function::Count, &CA_INFO);
/// The sums of the sender's values over the intersection, and its size (`rr22-sum`).
pub(super) const SUM: CircuitPsi<Rr22Cpsi> = CircuitPsi::new(Function::Sum, &SUM_INFO);

/// S, the simple-hashing side.
pub(super) struct Sender;
/// R, the cuckoo side.
pub(super) struct Receiver;

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
    roles: &crate::circuit_psi::roles(OutputKind::Count, 1024),
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
    roles: &crate::circuit_psi::roles(OutputKind::Sum, 1024),
};

impl FrontEnd for Rr22Cpsi {
    type Params = CpsiParams;
    type Sender = Sender;
    type Receiver = Receiver;
    const DOMAIN: &'static str = "venn/rr22-cpsi/base-ots";
    const CIRCUIT: &'static str = "circuit and count";
    const VALUE_COLUMNS: usize = circuit_psi::MAX_VALUE_COLUMNS;

    /// The VOLE (its pairs, and while it is made its noise and trees: rr22's 384 bytes a
    /// column at R, 160 at S), the bins' keys, tags and shares; S's three keys an item
    /// with their OPRF values, programmed values and the hint (1.4 columns a key, and its
    /// solving); R's hint.
    fn memory(p: &CpsiParams, role: Role) -> u64 {
        // Bytes of a programmed value: u64, Block or Tagged (opprf::Programmed).
        let value = match (p.function, p.tag_bits) {
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
        vole * p.oprf.len() as u64 + hint + own + bins
    }
}

/// S's VOLE: Δ and B.
impl Kept<CpsiParams> for VoleSender {
    fn save(&self, out: &mut StateWriter) -> Result<()> {
        VoleSender::save(self, out)
    }
    fn load(input: &mut StateReader, p: &CpsiParams) -> Result<Self> {
        VoleSender::load(input, p.oprf.len())
    }
}

/// R's VOLE: A and C.
impl Kept<CpsiParams> for VoleReceiver {
    fn save(&self, out: &mut StateWriter) -> Result<()> {
        VoleReceiver::save(self, out)
    }
    fn load(input: &mut StateReader, p: &CpsiParams) -> Result<Self> {
        VoleReceiver::load(input, p.oprf.len())
    }
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
pub(super) struct Learned {
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

/// What S brings into the circuit: a tag a bin, and for a sum its share of each bin's
/// value in each column (bin by bin).
pub(super) struct Tags {
    tags: Vec<u128>,
    shares: Vec<u64>,
    columns: usize,
}

impl Side<CpsiParams> for Sender {
    type Kept = VoleSender;
    type Inputs = Tags;

    /// S is the VOLE's sender, the triples' follower, the counting OTs' sender (and the
    /// summing OTs' receiver).
    fn offline(ctx: &mut Context, p: &CpsiParams) -> Result<VoleSender> {
        ctx.phase("silent VOLE", true);
        let sid = ctx.session.id;
        vole::send(
            ctx.peer,
            &mut ctx.prg,
            &sid,
            p.oprf.len(),
            Adversary::SemiHonest,
        )
    }

    /// S: its keys in all their bins, a tag (and a share) a bin, the OPPRF.
    fn inputs(ctx: &mut Context, p: &CpsiParams, vole: VoleSender, items: &Items) -> Result<Tags> {
        let hashes = Hashes::new(&ctx.session.id, None);
        ctx.phase("hash items", false);
        let oprf = oprf::receive_seed(ctx, p.oprf, None)?;
        let mut seed = Vec::new();
        ctx.peer.recv_blocks(1, &mut seed, "the cuckoo seed")?;
        let hashing = Hashing::new(&ctx.session.id, seed[0], p.bins);
        let (keys, bin_of) = hashing.senders_keys(&hashes.keys(items));
        let tag_mask = u128::MAX >> (128 - p.tag_bits);
        let tags: Vec<u128> = (0..p.bins)
            .map(|_| ctx.prg.block().as_u128() & tag_mask)
            .collect();
        ctx.phase("OPPRF", false);
        let VoleSender { delta, b } = vole;
        // A random share of each bin's value in each column, bin by bin.
        let columns = match p.function {
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
        match (p.function, p.tag_bits) {
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
        Ok(Tags {
            tags,
            shares,
            columns,
        })
    }

    fn circuit(gmw: &mut Gmw, p: &CpsiParams, inputs: &Tags, _: &mut Prg) -> Result<Shared> {
        is_zero(gmw, &inputs.tags, p.tag_bits)
    }

    /// For a sum, S's shares of the bins' values: the negated random shares it programmed.
    fn weights<'a>(function: Function, inputs: &'a Tags, _: &'a Items) -> Result<Weights<'a>> {
        let Tags {
            shares, columns, ..
        } = inputs;
        Ok(match function {
            Function::Count => Weights::None,
            Function::Sum => Weights::Shared {
                columns: *columns,
                mine: Box::new(move |i, c| shares[i * columns + c].wrapping_neg()),
            },
        })
    }
}

impl Side<CpsiParams> for Receiver {
    type Kept = VoleReceiver;
    type Inputs = Learned;

    /// R is the VOLE's receiver, the triples' leader, the counting OTs' receiver (and the
    /// summing OTs' sender).
    fn offline(ctx: &mut Context, p: &CpsiParams) -> Result<VoleReceiver> {
        ctx.phase("silent VOLE", true);
        let sid = ctx.session.id;
        vole::receive(
            ctx.peer,
            &mut ctx.prg,
            &sid,
            p.oprf.len(),
            Adversary::SemiHonest,
        )
    }

    /// R: the seeds, its cuckoo table's keys, the OPPRF.
    fn inputs(
        ctx: &mut Context,
        p: &CpsiParams,
        vole: VoleReceiver,
        items: &Items,
    ) -> Result<Learned> {
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
        let peer_keys = HASHES as u64 * p.n_s;
        let learn = (&hashes, &binned, peer_keys, p.tag_bytes());
        match (p.function, p.tag_bits) {
            (Function::Count, ..=64) => learned::<u64>(ctx, learn, vole, 0),
            (Function::Count, _) => learned::<Block>(ctx, learn, vole, 0),
            (Function::Sum, _) => {
                let columns = value_columns(ctx)?;
                learned::<Tagged>(ctx, learn, vole, columns)
            }
        }
    }

    fn circuit(gmw: &mut Gmw, p: &CpsiParams, inputs: &Learned, _: &mut Prg) -> Result<Shared> {
        is_zero(gmw, &inputs.tags, p.tag_bits)
    }

    /// For a sum, R's shares of the bins' values: the payloads it learned.
    fn weights<'a>(function: Function, inputs: &'a Learned, _: &'a Items) -> Result<Weights<'a>> {
        let payloads = &inputs.payloads;
        Ok(match function {
            Function::Count => Weights::None,
            Function::Sum => Weights::Shared {
                columns: payloads.len(),
                mine: Box::new(move |i, c| payloads[c][i]),
            },
        })
    }
}
