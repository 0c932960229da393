//! The silent VOLE protocol (BCGIKRS19 Fig. 7 with Ferret's regular noise, YWL+20), against
//! semi-honest or malicious parties:
//!
//! 1. 128 base OTs (Masny–Rindal, S receiving) seed the OT extension with S as its sender,
//!    and their choice bits are Δ: the extension's own secret, as Ferret (YWL+20) takes its
//!    Δ from IKNP's. The same base OTs, keyed apart from every extension stream
//!    ([`SenderSeeds::chosen_by_delta`]), are the OTs chosen by Δ's bits that the base VOLE
//!    multiplies with — one run of base OTs, not two.
//! 2. Base VOLE ([`base`]): one correlation β_i = z_i + y_i·Δ per tree (S holds β, R its
//!    noise value y and z); against malicious parties two more, for the checks below.
//! 3. PPRF: t·h random OTs from the extension — IKNP, or KOS15 against a malicious R (with
//!    IKNP it could send rows that reveal the extension's secret, then both sums of every
//!    level, every leaf and Δ = (c_α − b_α)/y) — R's choices the complements of its path
//!    bits; per tree and level S sends the left and right sums masked by the OT's two
//!    messages, and per tree the correction γ = Σ_j b_j + β.
//! 4. R rebuilds every leaf but α and sets c_α = γ + z + Σ_{j≠α} c_j = b_α + y·Δ.
//! 5. Against malicious parties: S checks R's base VOLE ([`base::verify`]); R checks S's
//!    trees by Ferret's consistency check (YWL+20 §4, Fig. 7): R draws χ_j = AES_seed(j)
//!    for the N noise positions once the trees are in and sends x' = Σ_i χ_{p_i}·y_i + y_f
//!    (p_i its points, y_f a spare base correlation); S answers H(Σ_j χ_j·b_j + β_f + x'·Δ),
//!    which is H(Σ_j χ_j·c_j + z_f) when c = b + e·Δ at every position and, for any other
//!    c, with probability 2^-128. A wrong leaf, sum or correction — a tree built for
//!    another Δ — is caught; S may learn from R's abort whether the one position it spoiled
//!    was a point, one bit that Ferret's LPN-with-leakage assumption covers. The sum goes
//!    hashed: raw, it would hand an R that sent x' off by ε the value ε·Δ.
//! 6. Both compress with the code: B = G·b, (A, C) = G·(e, c), so C = B + A·Δ.

use super::base;
use super::code::Pair;
use super::noise::Shape;
use super::trees;
use crate::crypto::{gf128, Aes, Block, Prg, RandomOracle};
use crate::net::Channel;
use crate::ot::{
    iknp_receive, iknp_send, kos_receive, kos_send, MasnyRindal, ReceiverSeeds, SenderSeeds,
};
use crate::state::{exactly, StateReader, StateWriter};
use crate::util::memory::{huge_zeroed, release_spare, with_huge_capacity};
use crate::{Error, Result};
use rayon::prelude::*;

/// The code's public seed (any fixed seed gives a code of the family; fixed, no party
/// chooses it).
pub(super) const CODE_SEED: Block = Block::from_u128(0x5665_6e6e_2045_7843_6f6e_7637_7832_3421);

/// The parties a VOLE withstands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Adversary {
    /// Parties that follow the protocol.
    SemiHonest,
    /// Parties that deviate arbitrarily: KOS15 for the PPRF's OTs, and both checks.
    Malicious,
}

/// S's side of a VOLE: Δ and B.
pub struct VoleSender {
    /// The global key Δ, the same for every correlation.
    pub delta: Block,
    /// One B_i for each correlation.
    pub b: Vec<Block>,
}

/// R's side of a VOLE: pairs (A_i, C_i) with C_i = B_i + A_i·Δ.
pub struct VoleReceiver {
    /// The i-th pair against the sender's B_i.
    pub pairs: Vec<Pair>,
}

impl VoleSender {
    /// Writes Δ and B (for a precomputed state).
    pub fn save(&self, out: &mut StateWriter) -> Result<()> {
        out.block(self.delta)?;
        out.blocks(&self.b)
    }

    /// Reads what [`VoleSender::save`] wrote, of length `m`.
    pub fn load(input: &mut StateReader, m: usize) -> Result<VoleSender> {
        Ok(VoleSender {
            delta: input.block()?,
            b: exactly(input.blocks(m, "VOLE values")?, m)?,
        })
    }
}

impl VoleReceiver {
    /// Writes A, then C (for a precomputed state).
    pub fn save(&self, out: &mut StateWriter) -> Result<()> {
        let half = |i: usize| self.pairs.iter().map(|p| [p.0, p.1][i]).collect::<Vec<_>>();
        out.blocks(&half(0))?;
        out.blocks(&half(1))
    }

    /// Reads what [`VoleReceiver::save`] wrote, of length `m`.
    pub fn load(input: &mut StateReader, m: usize) -> Result<VoleReceiver> {
        let a = exactly(input.blocks(m, "VOLE values")?, m)?;
        let c = exactly(input.blocks(m, "VOLE values")?, m)?;
        Ok(VoleReceiver {
            pairs: a.into_iter().zip(c).map(|(a, c)| Pair(a, c)).collect(),
        })
    }
}

/// A session id for one of the VOLE's base-OT runs.
fn sub_sid(sid: &[u8; 32], what: &str) -> [u8; 32] {
    RandomOracle::new("venn vole base OTs", sid).hash(&[what.as_bytes()])
}

/// Base correlations for `t` trees: one each, and against malicious parties one for
/// Ferret's check (index t) and the last masking the base VOLE's own check.
fn base_count(t: usize, adversary: Adversary) -> usize {
    match adversary {
        Adversary::SemiHonest => t,
        Adversary::Malicious => t + 2,
    }
}

/// The PPRF's `count` random OTs, S's side: both messages of each.
fn pprf_ots_send(
    chan: &mut dyn Channel,
    seeds: &SenderSeeds,
    count: usize,
    adversary: Adversary,
    prg: &mut Prg,
    sid: &[u8; 32],
) -> Result<Vec<[Block; 2]>> {
    if adversary == Adversary::SemiHonest {
        return iknp_send(chan, seeds, count);
    }
    let kos = kos_send(chan, seeds, count, prg, &sub_sid(sid, "PPRF OTs"))?;
    let all: Vec<u32> = (0..count as u32).collect();
    let (mut m0, mut m1) = (Vec::with_capacity(count), Vec::with_capacity(count));
    kos.messages(&all, false, &mut m0);
    kos.messages(&all, true, &mut m1);
    Ok(m0.into_iter().zip(m1).map(|(a, b)| [a, b]).collect())
}

/// The PPRF's random OTs, R's side: the message of each choice.
fn pprf_ots_receive(
    chan: &mut dyn Channel,
    seeds: &ReceiverSeeds,
    choices: &[bool],
    adversary: Adversary,
    prg: &mut Prg,
    sid: &[u8; 32],
) -> Result<Vec<Block>> {
    if adversary == Adversary::SemiHonest {
        return iknp_receive(chan, seeds, choices);
    }
    let sid = sub_sid(sid, "PPRF OTs");
    let kos = kos_receive(chan, seeds, choices.to_vec(), prg, &sid, Vec::new())?;
    Ok(kos.messages(&(0..choices.len() as u32).collect::<Vec<_>>()))
}

/// Ferret's `Σ_j χ_j·value(noise_j)` with χ_j = AES_seed(j), over the noise positions
/// from `first` on that `noise` holds, in chunks on the rayon pool.
fn ferret_sum<T: Sync>(
    seed: Block,
    first: usize,
    noise: &[T],
    value: impl Fn(&T) -> Block + Sync,
) -> Block {
    const CHUNK: usize = 1 << 12;
    let aes = Aes::new(seed);
    noise
        .par_chunks(CHUNK)
        .enumerate()
        .map_init(
            || (vec![Block::ZERO; CHUNK], vec![Block::ZERO; CHUNK]),
            |(chi, values), (c, chunk)| {
                let (chi, values) = (&mut chi[..chunk.len()], &mut values[..chunk.len()]);
                for (j, x) in chi.iter_mut().enumerate() {
                    *x = Block::from((first + c * CHUNK + j) as u64);
                }
                aes.encrypt_blocks(chi);
                values
                    .iter_mut()
                    .zip(chunk)
                    .for_each(|(v, x)| *v = value(x));
                gf128::inner_product(chi, values)
            },
        )
        .reduce(|| Block::ZERO, |a, b| a ^ b)
}

/// What S sends for Ferret's check, and R compares.
fn ferret_digest(sid: &[u8; 32], v: Block) -> [u8; 32] {
    RandomOracle::new("venn/vole/ferret check", sid).hash(&[&v.to_le_bytes()])
}

/// The sender: Δ at random, `outputs` values of B.
pub fn send(
    chan: &mut dyn Channel,
    prg: &mut Prg,
    sid: &[u8; 32],
    outputs: usize,
    adversary: Adversary,
) -> Result<VoleSender> {
    let shape = Shape::new(outputs);
    let (t, h) = (shape.trees, shape.depth);
    let seeds = SenderSeeds::new::<MasnyRindal>(chan, prg, &sub_sid(sid, "extension"))?;
    let (delta, chosen) = (seeds.delta_block(), seeds.chosen_by_delta());
    let ots = pprf_ots_send(chan, &seeds, t * h, adversary, prg, sid)?;
    let beta = base::send(chan, &chosen, delta, base_count(t, adversary))?;
    let base_check = match adversary {
        Adversary::SemiHonest => None,
        Adversary::Malicious => Some(base::challenge(chan, prg)?),
    };
    let mut leaves = huge_zeroed(shape.noise_len());
    trees::send(
        chan,
        prg,
        &shape,
        trees::Sending::Ggm {
            ots: &ots,
            beta: &beta[..t],
        },
        &mut leaves,
        |e, b| *e = b,
    )?;
    if let Some(seed) = base_check {
        let mut answer = Vec::new();
        chan.recv_blocks(4, &mut answer, "the VOLE checks")?;
        base::verify(seed, &beta, delta, [answer[0], answer[1]])?;
        let (ferret_seed, x) = (answer[2], answer[3]);
        let v = ferret_sum(ferret_seed, 0, &leaves, |&b| b) ^ beta[t] ^ (x * delta);
        chan.send(&ferret_digest(sid, v))?;
    }
    shape.code(CODE_SEED).dual_encode(&mut leaves);
    leaves.truncate(outputs);
    Ok(VoleSender { delta, b: leaves })
}

/// The receiver: `outputs` values of A (pseudorandom) and C = B + A·Δ.
pub fn receive(
    chan: &mut dyn Channel,
    prg: &mut Prg,
    sid: &[u8; 32],
    outputs: usize,
    adversary: Adversary,
) -> Result<VoleReceiver> {
    let shape = Shape::new(outputs);
    let (t, h) = (shape.trees, shape.depth);
    let seeds = ReceiverSeeds::new::<MasnyRindal>(chan, prg, &sub_sid(sid, "extension"))?;
    let pairs = seeds.chosen_by_delta();
    // The points: random choices, the path bits their complements.
    let choices: Vec<bool> = (0..t * h).map(|_| prg.u64() & 1 == 1).collect();
    let ots = pprf_ots_receive(chan, &seeds, &choices, adversary, prg, sid)?;
    // Base VOLE: R's noise values y and its z.
    let y: Vec<Block> = (0..base_count(t, adversary)).map(|_| prg.block()).collect();
    let z = base::receive(chan, &pairs, &y)?;
    let mut base_check = Vec::new();
    if adversary == Adversary::Malicious {
        chan.recv_blocks(1, &mut base_check, "the base-VOLE challenge")?;
    }
    let code = shape.code(CODE_SEED);
    // Drawn now, sent once every tree is in (only then may S learn it).
    let ferret_seed = base_check.first().map(|_| prg.block());
    let parity_sum = ferret_seed
        .map(|seed| move |split: usize, parity: &[Pair]| ferret_sum(seed, split, parity, |p| p.1));
    // Not zeroed first: pairs are aligned beyond what calloc gives, so zeroed memory
    // would be a serial memset of all of it.
    let mut noise: Vec<Pair> = with_huge_capacity(shape.noise_len());
    let trees::Rebuilt {
        points,
        split,
        parity_sum,
    } = trees::receive(
        chan,
        &shape,
        (trees::Tree::Ggm, &choices, &ots),
        &mut noise.spare_capacity_mut()[..shape.noise_len()],
        |e, tree, at_point, c| {
            e.write(match at_point {
                true => Pair(y[tree], c ^ z[tree]),
                false => Pair(Block::ZERO, c),
            });
        },
        Some((&code, parity_sum.as_ref().map(|f| f as _))),
    )?;
    // SAFETY: the capacity holds `noise_len` pairs (the slice of it above would have
    // panicked otherwise), and `receive`, having returned, wrote every one of them.
    unsafe { noise.set_len(shape.noise_len()) };
    if let (Some(&seed), Some(ferret_seed)) = (base_check.first(), ferret_seed) {
        let [y_sum, z_sum] = base::answer(seed, &y, &z);
        let chi = Aes::new(ferret_seed);
        let x = points.iter().zip(&y).fold(y[t], |acc, (&p, &y)| {
            acc ^ (chi.encrypt(Block::from(p as u64)) * y)
        });
        chan.send_blocks(&[y_sum, z_sum, ferret_seed, x])?;
        let sum = ferret_sum(ferret_seed, 0, &noise[..split], |p| p.1)
            ^ parity_sum.unwrap_or(Block::ZERO);
        let expected = ferret_digest(sid, sum ^ z[t]);
        if chan.recv_exact(32, "the Ferret check")? != expected {
            return Err(Error::CheatingDetected(
                "Ferret consistency check failed: the VOLE sender's trees do not match one Δ"
                    .into(),
            ));
        }
    }
    let (out, parity) = noise.split_at_mut(code.inputs() / 2);
    code.expand(parity, out);
    noise.truncate(outputs);
    // The pairs past the outputs (about half) go back to the system, not copied away.
    release_spare(&noise);
    Ok(VoleReceiver { pairs: noise })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::mem_pair;
    use std::time::Duration;

    fn vole(outputs: usize, adversary: Adversary, threads: usize) -> (VoleSender, VoleReceiver) {
        let (mut a, mut b) = mem_pair(Duration::from_secs(30));
        let sid = [7u8; 32];
        // Each party on a pool of its own, as `run` gives it: a party's threads wait on
        // its channel (the receiver rebuilds trees as they come), which on one shared pool
        // would keep the other party from making them.
        let pool = || {
            rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap()
        };
        std::thread::scope(|s| {
            let sender = s.spawn(move || {
                pool().install(|| {
                    send(
                        &mut a,
                        &mut Prg::from_seed(Block::from(1)),
                        &sid,
                        outputs,
                        adversary,
                    )
                })
            });
            let receiver = pool()
                .install(|| {
                    receive(
                        &mut b,
                        &mut Prg::from_seed(Block::from(2)),
                        &sid,
                        outputs,
                        adversary,
                    )
                })
                .unwrap();
            (sender.join().unwrap().unwrap(), receiver)
        })
    }

    #[test]
    fn c_is_b_plus_a_times_delta() {
        let cases = [1, 255, 256, 70_003].map(|n| (n, Adversary::SemiHonest));
        let cases = cases.into_iter().chain([(4099, Adversary::Malicious)]);
        // One thread and two: the parity half accumulated after the other trees or beside.
        for ((n, adversary), threads) in cases.flat_map(|c| [(c, 1), (c, 2)]) {
            let (s, r) = vole(n, adversary, threads);
            assert_eq!((s.b.len(), r.pairs.len()), (n, n));
            for (i, Pair(a, c)) in r.pairs.iter().enumerate() {
                assert_eq!(*c, s.b[i] ^ (*a * s.delta), "n = {n}, i = {i}");
            }
            // A is not sparse: the noise was compressed.
            let zeros = r.pairs.iter().filter(|p| p.0 == Block::ZERO).count();
            assert!(zeros < n / 100 + 1, "{zeros} zeros of {n}");
        }
    }
}
