//! The silent VOLE protocol, semi-honest (BCGIKRS19 Fig. 7 with Ferret's regular noise and
//! a base VOLE by Gilboa's OT multiplication):
//!
//! 1. Base OTs (Masny–Rindal, both with S receiving): 128 seeding IKNP with S as its
//!    sender, and 128 with S's choices the bits of Δ.
//! 2. Base VOLE: for each bit j of Δ, R expands its two OT messages to t blocks r0_j, r1_j
//!    and sends d_j = r0_j + r1_j + y·X^j; S takes r_{Δ_j,j} + Δ_j·d_j = r0_j + Δ_j·y·X^j;
//!    summed over j, S holds β = z + y·Δ where R holds z = Σ_j r0_j (t values, y R's noise).
//! 3. PPRF: t·h IKNP random OTs, R's choices the complements of its path bits; per tree
//!    and level S sends the left and right sums masked by the OT's two messages, and per
//!    tree the correction γ = Σ_j b_j + β.
//! 4. R rebuilds every leaf but α, sets c_α = γ + z + Σ_{j≠α} c_j = b_α + y·Δ, and both
//!    compress with the code: B = G·b, (A, C) = G·(e, c), so C = B + A·Δ.

use super::code::Pair;
use super::noise::Shape;
use super::pprf;
use crate::crypto::{gf128, Block, Prg, RandomOracle};
use crate::net::Channel;
use crate::ot::{iknp_receive, iknp_send, BaseOt, MasnyRindal, ReceiverSeeds, SenderSeeds};
use crate::Result;

/// The code's public seed (any fixed seed gives a code of the family; fixed, no party
/// chooses it).
const CODE_SEED: Block = 0x5665_6e6e_2045_7843_6f6e_7637_7832_3421;

/// S's side of a VOLE: Δ and B.
pub struct VoleSender {
    pub delta: Block,
    pub b: Vec<Block>,
}

/// R's side of a VOLE: A and C = B + A·Δ.
pub struct VoleReceiver {
    pub a: Vec<Block>,
    pub c: Vec<Block>,
}

/// A session id for one of the VOLE's base-OT runs.
fn sub_sid(sid: &[u8; 32], what: &str) -> [u8; 32] {
    RandomOracle::new("venn vole base OTs", sid).hash(&[what.as_bytes()])
}

/// `t` blocks expanded from an OT message.
fn expand_seed(seed: Block, t: usize) -> Vec<Block> {
    let mut prg = Prg::from_seed(seed);
    (0..t).map(|_| prg.block()).collect()
}

/// The sender: Δ at random, `outputs` values of B.
pub fn send(
    chan: &mut dyn Channel,
    prg: &mut Prg,
    sid: &[u8; 32],
    outputs: usize,
) -> Result<VoleSender> {
    let shape = Shape::new(outputs);
    let (t, h) = (shape.trees, shape.depth);
    let seeds = SenderSeeds::new::<MasnyRindal>(chan, prg, &sub_sid(sid, "extension"))?;
    let delta = prg.block();
    let delta_bits: Vec<bool> = (0..128).map(|j| (delta >> j) & 1 == 1).collect();
    let chosen = MasnyRindal::receive(chan, &delta_bits, prg, &sub_sid(sid, "delta"))?;
    let ots = iknp_send(chan, &seeds, t * h)?;
    // Base VOLE: β = Σ_j r_{Δ_j, j} + Δ_j·d_j.
    let mut beta = vec![0; t];
    let mut d = Vec::new();
    for (j, &m) in chosen.iter().enumerate() {
        chan.recv_blocks(t, &mut d, "a base-VOLE row")?;
        let r = expand_seed(m, t);
        for i in 0..t {
            beta[i] ^= r[i] ^ if delta_bits[j] { d[i] } else { 0 };
        }
    }
    // The trees, their level sums masked by the OTs, and the corrections.
    let mut leaves = vec![0; shape.noise_len()];
    let mut message = Vec::with_capacity(t * (2 * h + 1));
    for (i, tree) in leaves.chunks_exact_mut(shape.block()).enumerate() {
        let sums = pprf::expand_sender(prg.block(), h, tree);
        for (l, sum) in sums.iter().enumerate() {
            let m = ots[i * h + l];
            message.extend([sum[0] ^ m[0], sum[1] ^ m[1]]);
        }
    }
    for (i, tree) in leaves.chunks_exact(shape.block()).enumerate() {
        message.push(tree.iter().fold(beta[i], |acc, b| acc ^ b));
    }
    chan.send_blocks(&message)?;
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
) -> Result<VoleReceiver> {
    let shape = Shape::new(outputs);
    let (t, h) = (shape.trees, shape.depth);
    let seeds = ReceiverSeeds::new::<MasnyRindal>(chan, prg, &sub_sid(sid, "extension"))?;
    let pairs = MasnyRindal::send(chan, 128, prg, &sub_sid(sid, "delta"))?;
    // The points: random choices, the path bits their complements.
    let choices: Vec<bool> = (0..t * h).map(|_| prg.u64() & 1 == 1).collect();
    let ots = iknp_receive(chan, &seeds, &choices)?;
    // Base VOLE: R's noise values y and z = Σ_j r0_j.
    let y: Vec<Block> = (0..t).map(|_| prg.block()).collect();
    let mut z = vec![0; t];
    for (j, pair) in pairs.iter().enumerate() {
        let (r0, r1) = (expand_seed(pair[0], t), expand_seed(pair[1], t));
        let d: Vec<Block> = (0..t)
            .map(|i| r0[i] ^ r1[i] ^ gf128::mul(y[i], 1 << j))
            .collect();
        chan.send_blocks(&d)?;
        for i in 0..t {
            z[i] ^= r0[i];
        }
    }
    let mut message = Vec::new();
    chan.recv_blocks(t * (2 * h + 1), &mut message, "the PPRF's sums")?;
    let (sums, corrections) = message.split_at(t * 2 * h);
    let mut noise = vec![Pair::default(); shape.noise_len()];
    let mut leaves = vec![0; shape.block()];
    for (i, block) in noise.chunks_exact_mut(shape.block()).enumerate() {
        let mut alpha = 0;
        let off_path: Vec<Block> = (0..h)
            .map(|l| {
                let k = i * h + l;
                let c = usize::from(choices[k]);
                alpha = alpha << 1 | (1 - c);
                sums[2 * k + c] ^ ots[k]
            })
            .collect();
        pprf::expand_receiver(alpha, &off_path, &mut leaves);
        let others = leaves.iter().fold(0, |acc, c| acc ^ c);
        leaves[alpha] = corrections[i] ^ z[i] ^ others;
        for (j, (n, &c)) in block.iter_mut().zip(&leaves).enumerate() {
            *n = Pair(if j == alpha { y[i] } else { 0 }, c);
        }
    }
    shape.code(CODE_SEED).dual_encode(&mut noise);
    noise.truncate(outputs);
    Ok(VoleReceiver {
        a: noise.iter().map(|p| p.0).collect(),
        c: noise.iter().map(|p| p.1).collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::mem_pair;
    use std::time::Duration;

    fn vole(outputs: usize) -> (VoleSender, VoleReceiver) {
        let (mut a, mut b) = mem_pair(Duration::from_secs(30));
        let sid = [7u8; 32];
        std::thread::scope(|s| {
            let sender = s.spawn(move || send(&mut a, &mut Prg::from_seed(1), &sid, outputs));
            let receiver = receive(&mut b, &mut Prg::from_seed(2), &sid, outputs).unwrap();
            (sender.join().unwrap().unwrap(), receiver)
        })
    }

    #[test]
    fn c_is_b_plus_a_times_delta() {
        for n in [1, 255, 256, 70_003] {
            let (s, r) = vole(n);
            assert_eq!((s.b.len(), r.a.len(), r.c.len()), (n, n, n));
            for i in 0..n {
                assert_eq!(
                    r.c[i],
                    s.b[i] ^ gf128::mul(r.a[i], s.delta),
                    "n = {n}, i = {i}"
                );
            }
            // A is not sparse: the noise was compressed.
            let zeros = r.a.iter().filter(|&&a| a == 0).count();
            assert!(zeros < n / 100 + 1, "{zeros} zeros of {n}");
        }
    }
}
