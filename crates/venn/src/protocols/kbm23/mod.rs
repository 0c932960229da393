//! KBM23 (Kerschbaum, Blass, Mahdavi: *Faster Secure Comparisons with Offline Phase for
//! Efficient Private Set Intersection*, NDSS 2023), Algorithm 1 with set OLE tuples
//! (§III-C5): PSI whose online phase is one field element per bin from the receiver and one
//! per comparison from the sender, with four field operations per comparison.
//!
//! Roles: the paper's Alice, who cuckoo-hashes and learns the intersection, is Venn's
//! receiver; its Bob, who simple-hashes and learns nothing, is Venn's sender. The paper's
//! subscripts stay: s_A, r_A and T_A are the receiver's, s_B, r_B and T_B the sender's.
//!
//! **Offline** (no inputs): the coin-tossed hashing seed, and α set tuples — from Gilboa
//! product sharing on IKNP OTs after base OTs (`tuples`, §IV-D, `--offline ot`), from BFV
//! (`bfv`, §IV-B, `--offline bfv`), or from a trusted dealer (`dealer`, §IV-A,
//! `--offline dealer`).
//!
//! **Online** (Algorithm 1): the receiver puts its items in α bins by 3-way cuckoo hashing
//! with permutation-based hashing (`tables`) and sends `c_i = s_A,i − T_A[i]` for every
//! bin; the sender puts each of its items in all three of its bins, β values a bin in
//! random order, and answers `d_i,j = (c_i + T_B[i,j] + s_B,i,j) · w_i,j`; the receiver's
//! item in bin i is in the intersection exactly when some `d_i,j = r_A,i,j` (Thm 1:
//! `(d − r_A)·r_B = T_B − T_A`, and r_B ≠ 0). Each side's messages go a range of bins at a
//! time, one range in flight.

#[cfg(feature = "bfv")]
mod bfv;
pub mod dealer;
mod field;
mod params;
mod tables;
mod tuples;

use super::{
    AnyParty, Context, Offline, Output, OutputKind, Parameters, Party, ProtocolInfo, RoleInfo,
    Security, Sizes, TypedProtocol,
};
use crate::crypto::Block;
use crate::items::Items;
use crate::net::Channel;
use crate::ot::{MasnyRindal, ReceiverSeeds, SenderSeeds};
use crate::session::{CoinToss, CoinTossReply, Role};
use crate::state::{StateReader, StateWriter};
use crate::util::wide_cpu::with_avx512;
use crate::{Error, Result};
use field::{packed_bytes, Field, Packed, PackedWriter};
pub use params::{Kbm23Config, Kbm23Params};
use tables::{receivers_table, Hashing, Placed, SendersValues, GROUP_BINS, REGION_BINS};
use tuples::{receivers_tuples, senders_tuples, ReceiversTuples, SendersTuples};

/// KBM23 PSI, its tuples made by OT, BFV or a dealer (`--offline`).
pub struct Kbm23;
/// The sender.
struct Kbm23Sender;
/// The receiver.
struct Kbm23Receiver;

/// A party asked for BFV tuples in a build without BFV (refused earlier: [`Kbm23Config`]
/// takes no `--offline bfv` then).
#[cfg(not(feature = "bfv"))]
fn no_bfv() -> Error {
    Error::Usage("this venn was built without BFV (the `bfv` feature): --offline bfv".into())
}

static INFO: ProtocolInfo = ProtocolInfo {
    name: "kbm23",
    paper: "Kerschbaum, Blass, Mahdavi: Faster Secure Comparisons with Offline Phase for \
            Efficient Private Set Intersection (NDSS 2023), Algorithm 1 with set OLE tuples \
            (§III-C5), tuples by Gilboa product sharing on IKNP OTs (§IV-D, --offline ot), \
            BFV homomorphic encryption (§IV-B, --offline bfv) or a trusted dealer (§IV-A, \
            --offline dealer)",
    security: Security::SemiHonest,
    leakage: "The receiver learns the intersection; the sender learns nothing. Both learn the \
              other's set size. Secure only if both parties follow the protocol (Thm 2, 3; \
              the OT offline phase assumes a correlation-robust hash and the base OTs' DDH; \
              the BFV one RLWE at 128-bit security, its results flooded so that they say \
              nothing of the sender's tuples but with probability 2^-40). \
              With --offline dealer the tuples come from `venn dealer`, which sees no input \
              but knows every tuple: a dealer that colludes with either party, or reads the \
              parties' link, learns the other's set. \
              With --sigma 32 the keys are 32-bit integers compared exactly; other keys are \
              hashed with a per-session key to λ + log2(n_s·n_r) bits, so two distinct keys \
              match with probability at most 2^-40.",
    both_allowed: false,
    roles: &[
        RoleInfo {
            role: Role::Sender,
            security: Security::SemiHonest,
            output: OutputKind::Nothing,
            // Per bin (1.27–1.35 per peer item), β ≤ 32 comparisons of field elements of at
            // most 8 bytes (w, u, and s_B while the OT phase makes u), the outgoing d: the
            // bound for bucket sizes; a run's own estimate is `memory` below.
            peer_item_bytes: 1100,
            own_item_bytes: 64,
        },
        RoleInfo {
            role: Role::Receiver,
            security: Security::SemiHonest,
            output: OutputKind::Indices,
            peer_item_bytes: 16,
            // r_A for β comparisons a bin, s_A, the cuckoo table and the d received.
            own_item_bytes: 800,
        },
    ],
};

/// The hashing seed is coin-tossed: neither party picks the functions its peer's items
/// are hashed with.
const SEED_TOSS: &str = "kbm23 hashing seed";

/// Bins per online frame: a group of regions of the sender's table.
const FRAME_BINS: usize = GROUP_BINS;

impl TypedProtocol for Kbm23 {
    type Config = Kbm23Config;

    fn info(&self) -> &'static ProtocolInfo {
        &INFO
    }

    fn params(&self, sizes: Sizes, config: Kbm23Config) -> Result<Box<dyn Parameters>> {
        Ok(Box::new(Kbm23Params::for_config(sizes, config)?))
    }

    /// From the parameters: the packed tuples (the sender's w and u, and s_B while the OT
    /// phase makes u; the receiver's s_A and r_A), a frame of each direction, and per item
    /// its places and the sender's three values. A quarter more for what the allocator
    /// keeps.
    fn memory(&self, role: Role, sizes: Sizes, config: Kbm23Config) -> u64 {
        let Ok(p) = Kbm23Params::for_config(sizes, config) else {
            return 0; // refused by the parameters before anything is allocated
        };
        let packed = |len: usize| packed_bytes(p.field.bits(), len) as u64;
        let frame = packed(FRAME_BINS * p.beta) + 4 * (REGION_BINS * p.beta * 8) as u64;
        let need = match role {
            Role::Sender => 3 * packed(p.comparisons()) + 96 * p.n_b + frame,
            Role::Receiver => {
                2 * packed(p.comparisons())
                    + packed(p.alpha as usize)
                    + 56 * p.n_a
                    + 24 * p.alpha
                    + frame
            }
        };
        need + need / 4
    }

    fn check_items(&self, config: Kbm23Config, items: &Items) -> Result<()> {
        match (config.sigma, config.offline) {
            (Some(_), _) => items.check_integers(INFO.name, config.sigma),
            (None, Offline::Bfv) => Err(Error::Usage(
                "kbm23 --offline bfv runs on 32-bit integer keys only (--sigma 32)".into(),
            )),
            (None, _) => Ok(()),
        }
    }

    fn party(&self, role: Role) -> &'static dyn AnyParty {
        match role {
            Role::Sender => &Kbm23Sender,
            Role::Receiver => &Kbm23Receiver,
        }
    }
}

/// The session's parameters, which must be those the state was made with.
fn session_params(ctx: &Context, made_for: &Kbm23Params) -> Result<Kbm23Params> {
    let p = Kbm23Params::for_config(ctx.session.sized, ctx.config()?)?;
    if p != *made_for {
        return Err(Error::State(
            "the precomputed tuples were made for other parameters".into(),
        ));
    }
    Ok(p)
}

/// Each item's bins and suffix: σ-bit integers as they are, other keys hashed to σ bits
/// under a key bound to the session.
fn place_items(p: &Kbm23Params, h: &Hashing, sid: &[u8; 32], items: &Items) -> Result<Vec<Placed>> {
    let numbers = items.numbers(p.sigma, p.hashed, "venn/kbm23/item", sid)?;
    Ok(h.place_all(numbers.into_iter()))
}

/// Writes the parameters' σ choice and packed arrays of a state.
fn save_arrays(
    p: &Kbm23Params,
    seed: Block,
    arrays: [&Packed; 2],
    out: &mut StateWriter,
) -> Result<()> {
    out.u64(if p.hashed { 0 } else { p.sigma as u64 })?;
    out.u64(p.field.modulus())?;
    out.block(seed)?;
    for a in arrays {
        out.raw(a.as_bytes())?;
    }
    Ok(())
}

/// Reads what [`save_arrays`] wrote: the parameters for `sizes`, the seed and the two
/// arrays of the given lengths (each element checked to be below Q).
fn load_arrays(
    sizes: Sizes,
    input: &mut StateReader,
    lengths: impl Fn(&Kbm23Params) -> [usize; 2],
) -> Result<(Kbm23Params, Block, [Packed; 2])> {
    let sigma = match input.u64()? {
        0 => None,
        32 => Some(32),
        s => return Err(Error::State(format!("a kbm23 state for σ = {s}"))),
    };
    // The field tells the offline phases apart: BFV's is its plaintext space.
    let q = input.u64()?;
    let p = [Offline::Ot, Offline::Bfv]
        .into_iter()
        .filter_map(|offline| Kbm23Params::for_config(sizes, Kbm23Config { offline, sigma }).ok())
        .find(|p| p.field.modulus() == q)
        .ok_or_else(|| Error::State(format!("a kbm23 state for a field of {q} elements")))?;
    let seed = input.block()?;
    let mut array = |len| {
        let bytes = input.raw(packed_bytes(p.field.bits(), len))?;
        Packed::parse(&p.field, len, bytes, "tuples")
            .map_err(|e| Error::State(format!("the state's tuples are damaged: {e}")))
    };
    let [first, second] = lengths(&p);
    let arrays = [array(first)?, array(second)?];
    Ok((p, seed, arrays))
}

/// The sender's state: the parameters, the hashing seed and its halves of the tuples, as
/// `w_ij = r_B,ij⁻¹` and `u_ij = (k·D + 1 + s_B,ij)·w_ij`. The sender's table is mostly its
/// own dummy `k·D + 1`: writing `T_B = k·D + 1 + δ`, its answer `(c_i + T_B + s_B)·w` is
/// `(c_i + δ)·w + u`, and s_B itself is not needed.
pub struct SenderState {
    params: Kbm23Params,
    seed: Block,
    tuples: SendersTuples,
}

/// The receiver's state: the parameters, the hashing seed and its halves of the tuples.
pub struct ReceiverState {
    params: Kbm23Params,
    seed: Block,
    tuples: ReceiversTuples,
}

impl Party for Kbm23Sender {
    type State = SenderState;

    /// The sender answers the seed toss and makes its halves of the tuples: with OT it
    /// sends the base OTs (it is the IKNP receiver: its choices are the bits of r_B).
    fn offline(&self, ctx: &mut Context) -> Result<SenderState> {
        let config: Kbm23Config = ctx.config()?;
        let params = Kbm23Params::for_config(ctx.session.sized, config)?;
        let sid = ctx.session.id;
        ctx.phase("hashing seed", true);
        let [seed, _] =
            CoinTossReply::receive(ctx.peer, &sid, SEED_TOSS)?.answer(ctx.peer, &mut ctx.prg)?;
        let tuples = match config.offline {
            // Its OT offline phase is IKNP's (`iknp` is refused by its `accepts`).
            Offline::Ot | Offline::Iknp => {
                ctx.phase("base OTs", true);
                let base = ReceiverSeeds::new::<MasnyRindal>(ctx.peer, &mut ctx.prg, &sid)?;
                ctx.phase("OLE tuples (Gilboa, IKNP)", true);
                senders_tuples(ctx.peer, &base, &params, &mut ctx.prg)?
            }
            Offline::Dealer => {
                ctx.phase("OLE tuples from the dealer", true);
                dealer::senders_tuples(&mut *ctx.dealer()?, sid, &params)?
            }
            #[cfg(feature = "bfv")]
            Offline::Bfv => {
                ctx.phase("OLE tuples (BFV)", true);
                bfv::senders_tuples(ctx.peer, &params, &mut ctx.prg)?
            }
            #[cfg(not(feature = "bfv"))]
            Offline::Bfv => return Err(no_bfv()),
        };
        Ok(SenderState {
            params,
            seed,
            tuples,
        })
    }

    /// The sender: its values by region, then for each range of bins as its `c` arrives,
    /// each region's random slots and its `d`.
    fn online(&self, ctx: &mut Context, state: SenderState, items: &Items) -> Result<Output> {
        let p = session_params(ctx, &state.params)?;
        let (f, beta, alpha) = (p.field, p.beta, p.alpha as usize);
        ctx.phase("hash items", false);
        let h = Hashing::new(&p, state.seed);
        let mut values = SendersValues::new(&p, &h, &place_items(&p, &h, &ctx.session.id, items)?);
        ctx.phase("compare", false);
        let slots = REGION_BINS.min(alpha) * beta;
        let [mut delta, mut w, mut u, mut c] = [(); 4].map(|_| vec![0; slots]);
        let (mut frame, mut sent) = (Vec::new(), Vec::new());
        for first in (0..alpha).step_by(FRAME_BINS) {
            let bins = FRAME_BINS.min(alpha - first);
            ctx.peer
                .recv_exact_into(&mut frame, packed_bytes(f.bits(), bins), "c")?;
            let c_frame = Packed::parse(&f, bins, std::mem::take(&mut frame), "c")?;
            let mut d = PackedWriter::reusing(f.bits(), bins * beta, sent);
            for region in (first..first + bins).step_by(REGION_BINS) {
                let bins = REGION_BINS.min(first + bins - region);
                let len = bins * beta;
                values.offsets(&f, region / REGION_BINS, bins, &mut ctx.prg, &mut delta)?;
                state.tuples.w.unpack(region * beta, &mut w[..len]);
                state.tuples.u.unpack(region * beta, &mut u[..len]);
                c_frame.unpack(region - first, &mut c[..bins]);
                answer(&f, beta, &c[..bins], &mut delta, &w[..len], &u[..len]);
                d.extend(&delta);
            }
            frame = c_frame.into_bytes();
            let d = d.finish();
            ctx.peer.send(d.as_bytes())?;
            sent = d.into_bytes();
        }
        Ok(Output::Nothing)
    }

    fn save(&self, state: &SenderState, out: &mut StateWriter) -> Result<()> {
        let t = &state.tuples;
        save_arrays(&state.params, state.seed, [&t.w, &t.u], out)
    }

    fn load(&self, sizes: Sizes, input: &mut StateReader) -> Result<SenderState> {
        let (params, seed, [w, u]) =
            load_arrays(sizes, input, |p| [p.comparisons(), p.comparisons()])?;
        Ok(SenderState {
            params,
            seed,
            tuples: SendersTuples { w, u },
        })
    }
}

/// The sender's answers for consecutive bins, in place of the offsets δ of its table:
/// `d_ij = (c_i + δ_ij)·w_ij + u_ij` (see [`SenderState`]).
fn answer(f: &Field, beta: usize, c: &[u64], delta: &mut [u64], w: &[u64], u: &[u64]) {
    with_avx512(
        #[inline(always)]
        || answer_any(f, beta, c, delta, w, u),
    )
}

#[inline(always)]
fn answer_any(f: &Field, beta: usize, c: &[u64], delta: &mut [u64], w: &[u64], u: &[u64]) {
    match f.narrow() {
        Some(n) => answer_with(beta, c, delta, w, u, |a, b, w, u| {
            n.mul_add(n.add(a, b), w, u)
        }),
        None => answer_with(beta, c, delta, w, u, |a, b, w, u| {
            f.mul_add(f.add(a, b), w, u)
        }),
    }
}

/// `d = op(c_i, δ, w, u)` for each slot of consecutive bins (each caller's `op` its own
/// copy of the loop, for the compiler to vectorise).
#[inline(always)]
fn answer_with(
    beta: usize,
    c: &[u64],
    delta: &mut [u64],
    w: &[u64],
    u: &[u64],
    op: impl Fn(u64, u64, u64, u64) -> u64,
) {
    let slots = delta
        .chunks_exact_mut(beta)
        .zip(w.chunks_exact(beta).zip(u.chunks_exact(beta)));
    for (&c, (delta, (w, u))) in c.iter().zip(slots) {
        for (d, (&w, &u)) in delta.iter_mut().zip(w.iter().zip(u)) {
            *d = op(c, *d, w, u);
        }
    }
}

/// The receiver's items (`u32::MAX` for none) of consecutive bins whose answers `d` include
/// the `r_A` of their bin (Algorithm 1, line 11).
fn matches(beta: usize, d: &[u64], r: &[u64], items: &[u32], found: &mut Vec<usize>) {
    with_avx512(
        #[inline(always)]
        || {
            let bins = d.chunks_exact(beta).zip(r.chunks_exact(beta));
            for (&item, (d, r)) in items.iter().zip(bins) {
                if item != u32::MAX && d.iter().zip(r).fold(false, |m, (d, r)| m | (d == r)) {
                    found.push(item as usize);
                }
            }
        },
    )
}

/// Sends `c_i = s_A,i − T_A[i]` for the frame of bins from `first`.
fn send_c(
    chan: &mut dyn Channel,
    p: &Kbm23Params,
    s: &Packed,
    values: &[u64],
    first: usize,
) -> Result<()> {
    let count = FRAME_BINS.min(p.alpha as usize - first);
    let c = Packed::from_values(
        p.field.bits(),
        (first..first + count).map(|i| p.field.sub(s.get(i), values[i])),
    );
    chan.send(c.as_bytes())
}

impl Party for Kbm23Receiver {
    type State = ReceiverState;

    /// The receiver commits to the seed toss and makes its halves of the tuples: with OT it
    /// receives the base OTs (it is the IKNP sender, with r_A in its messages).
    fn offline(&self, ctx: &mut Context) -> Result<ReceiverState> {
        let config: Kbm23Config = ctx.config()?;
        let params = Kbm23Params::for_config(ctx.session.sized, config)?;
        let sid = ctx.session.id;
        ctx.phase("hashing seed", true);
        let [seed, _] =
            CoinToss::commit(ctx.peer, &sid, SEED_TOSS, &mut ctx.prg)?.open(ctx.peer)?;
        let tuples = match config.offline {
            // Its OT offline phase is IKNP's (`iknp` is refused by its `accepts`).
            Offline::Ot | Offline::Iknp => {
                ctx.phase("base OTs", true);
                let base = SenderSeeds::new::<MasnyRindal>(ctx.peer, &mut ctx.prg, &sid)?;
                ctx.phase("OLE tuples (Gilboa, IKNP)", true);
                receivers_tuples(ctx.peer, &base, &params, &mut ctx.prg)?
            }
            Offline::Dealer => {
                ctx.phase("OLE tuples from the dealer", true);
                dealer::receivers_tuples(&mut *ctx.dealer()?, sid, &params)?
            }
            #[cfg(feature = "bfv")]
            Offline::Bfv => {
                ctx.phase("OLE tuples (BFV)", true);
                bfv::receivers_tuples(ctx.peer, &params, &mut ctx.prg)?
            }
            #[cfg(not(feature = "bfv"))]
            Offline::Bfv => return Err(no_bfv()),
        };
        Ok(ReceiverState {
            params,
            seed,
            tuples,
        })
    }

    /// The receiver: its cuckoo table, `c` a range of bins ahead, and the matches in each
    /// range of `d`.
    fn online(&self, ctx: &mut Context, state: ReceiverState, items: &Items) -> Result<Output> {
        let p = session_params(ctx, &state.params)?;
        let (f, beta, alpha) = (p.field, p.beta, p.alpha as usize);
        ctx.phase("hash items", false);
        let h = Hashing::new(&p, state.seed);
        let placed = place_items(&p, &h, &ctx.session.id, items)?;
        let table = receivers_table(&p, &h, &placed, &mut ctx.prg)?;
        ctx.phase("compare", false);
        let (s, r) = (&state.tuples.s, &state.tuples.r);
        send_c(ctx.peer, &p, s, &table.values, 0)?;
        let mut found = Vec::new();
        let mut frame = Vec::new();
        let slots = REGION_BINS.min(alpha) * beta;
        let (mut d_region, mut r_region) = (vec![0; slots], vec![0; slots]);
        for first in (0..alpha).step_by(FRAME_BINS) {
            if first + FRAME_BINS < alpha {
                send_c(ctx.peer, &p, s, &table.values, first + FRAME_BINS)?;
            }
            let bins = FRAME_BINS.min(alpha - first);
            ctx.peer
                .recv_exact_into(&mut frame, packed_bytes(f.bits(), bins * beta), "d")?;
            let d = Packed::parse(&f, bins * beta, std::mem::take(&mut frame), "d")?;
            for region in (0..bins).step_by(REGION_BINS) {
                let len = REGION_BINS.min(bins - region) * beta;
                let (d_region, r_region) = (&mut d_region[..len], &mut r_region[..len]);
                d.unpack(region * beta, d_region);
                r.unpack((first + region) * beta, r_region);
                let items = &table.items[first + region..];
                matches(beta, d_region, r_region, items, &mut found);
            }
            frame = d.into_bytes();
        }
        found.sort_unstable();
        Ok(Output::Indices(found))
    }

    fn save(&self, state: &ReceiverState, out: &mut StateWriter) -> Result<()> {
        let t = &state.tuples;
        save_arrays(&state.params, state.seed, [&t.s, &t.r], out)
    }

    fn load(&self, sizes: Sizes, input: &mut StateReader) -> Result<ReceiverState> {
        let (params, seed, [s, r]) =
            load_arrays(sizes, input, |p| [p.alpha as usize, p.comparisons()])?;
        Ok(ReceiverState {
            params,
            seed,
            tuples: ReceiversTuples { s, r },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crypto::Prg;
    use crate::util::cpu::{with_level, Level};
    use crate::util::primes::next_prime;

    /// The sender's answers and the receiver's matches at each level (their AVX-512 clones,
    /// or not) against their definitions in wide integers, in a narrow and a wide field,
    /// over runs of bins that leave tails of vectors.
    #[test]
    fn answers_and_matches_follow_their_definitions_at_every_level() {
        let mut prg = Prg::from_seed(Block::from(6));
        let beta = 3;
        for q in [65537, next_prime(1 << 61)] {
            let f = Field::new(q);
            for bins in [0, 1, 5, 17] {
                let slots = bins * beta;
                let mut random =
                    |n: usize| -> Vec<u64> { (0..n).map(|_| f.random(&mut prg)).collect() };
                let (c, delta, w, u) = (random(bins), random(slots), random(slots), random(slots));
                let mut r = random(slots);
                let want: Vec<u64> = (0..slots)
                    .map(|i| {
                        let sum = (c[i / beta] as u128 + delta[i] as u128) % q as u128;
                        ((sum * w[i] as u128 + u[i] as u128) % q as u128) as u64
                    })
                    .collect();
                // Every other bin has its r_A among its answers; every third has no item.
                for b in (0..bins).step_by(2) {
                    r[b * beta + b % beta] = want[b * beta + b % beta];
                }
                let items: Vec<u32> = (0..bins as u32)
                    .map(|b| if b % 3 == 2 { u32::MAX } else { 100 + b })
                    .collect();
                let found_want: Vec<usize> = (0..bins)
                    .filter(|&b| items[b] != u32::MAX && b % 2 == 0)
                    .map(|b| items[b] as usize)
                    .collect();
                for level in Level::ALL {
                    let mut d = delta.clone();
                    with_level(level, || answer(&f, beta, &c, &mut d, &w, &u));
                    assert_eq!(d, want, "Q = {q}, {bins} bins, {level:?}");
                    let mut found = Vec::new();
                    with_level(level, || matches(beta, &d, &r, &items, &mut found));
                    assert_eq!(found, found_want, "Q = {q}, {bins} bins, {level:?}");
                }
            }
        }
    }
}
