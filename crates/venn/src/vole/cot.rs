//! Silent correlated OT: the silent VOLE's GF(2) form (BCGIKRS19; Ferret, YWL+20), where
//! R's noise values are all 1. S gets Δ and B, R gets choice bits A and C with
//! C_i = B_i + A_i·Δ. With y = 1 the base VOLE falls away: each tree's correction is
//! γ = Σ_j b_j + Δ, so that R's c_α = b_α + Δ ([`trees`]). R's noise e, one 1 a tree at
//! its point, is compressed by the same code as its blocks, as bits
//! ([`ExConv::accumulate_bits`]): A = G·e, C = G·c, B = G·b.
//!
//! [`ExConv::accumulate_bits`]: super::ExConv::accumulate_bits
//!
//! Semi-honest only (no Ferret check): its one user is GMW's triples, a semi-honest
//! protocol. The PPRF's random OTs come from the caller, which makes several COTs on one
//! OT-extension run; Δ too, its extension's secret, as Ferret takes its Δ from IKNP's.

use super::noise::Shape;
use super::silent::CODE_SEED;
use super::trees;
use crate::crypto::{Block, Prg};
use crate::net::Channel;
use crate::Result;

/// R's side of a correlated OT.
pub struct CotReceiver {
    /// The choice bits A, bit i of word i / 64 (the bits past the outputs zero).
    pub choices: Vec<u64>,
    /// C_i = B_i + A_i·Δ.
    pub c: Vec<Block>,
}

/// The PPRF's random OTs a COT of `outputs` takes (h per tree).
pub fn ots_needed(outputs: usize) -> usize {
    let shape = Shape::binary(outputs);
    shape.trees * shape.depth
}

/// S's side: `outputs` values B for S's `delta`, from [`ots_needed`] random OTs (`ots`,
/// both messages of each) with R.
pub fn send(
    chan: &mut dyn Channel,
    prg: &mut Prg,
    outputs: usize,
    delta: Block,
    ots: &[[Block; 2]],
) -> Result<Vec<Block>> {
    let shape = Shape::binary(outputs);
    let mut leaves = trees::send(chan, prg, &shape, ots, &vec![delta; shape.trees])?;
    shape.code(CODE_SEED).dual_encode(&mut leaves);
    leaves.truncate(outputs);
    Ok(leaves)
}

/// R's side: `outputs` choice bits and values C, from the random OTs (`choices`, random,
/// and the messages they gave) of [`send`]'s.
pub fn receive(
    chan: &mut dyn Channel,
    outputs: usize,
    ots: (&[bool], &[Block]),
) -> Result<CotReceiver> {
    let shape = Shape::binary(outputs);
    let code = shape.code(CODE_SEED);
    let z = vec![0; shape.trees];
    let trees::Rebuilt {
        mut noise, points, ..
    } = trees::receive(chan, &shape, &code, ots, &z, |_, _, c| c, None)?;
    let n = code.inputs() / 2;
    let (mut out_bits, mut parity_bits) = (vec![0u64; n.div_ceil(64)], vec![0; n.div_ceil(64)]);
    for p in points {
        let (bits, i) = match p < n {
            true => (&mut out_bits, p),
            false => (&mut parity_bits, p - n),
        };
        bits[i / 64] |= 1 << (i % 64);
    }
    code.accumulate_bits(&mut parity_bits);
    let (out, parity) = noise.split_at_mut(n);
    code.expand_with_bits(parity, out, &parity_bits, &mut out_bits);
    noise.truncate(outputs);
    out_bits.truncate(outputs.div_ceil(64));
    if !outputs.is_multiple_of(64) {
        out_bits[outputs / 64] &= (1 << (outputs % 64)) - 1;
    }
    Ok(CotReceiver {
        choices: out_bits,
        c: noise,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crypto::Prg;
    use crate::net::mem_pair;
    use crate::ot::{iknp_receive, iknp_send, test_seeds};
    use std::time::Duration;

    /// A COT of `outputs` over an in-memory channel, its OTs from IKNP.
    fn cot_pair(outputs: usize) -> (Block, Vec<Block>, CotReceiver) {
        let (mut a, mut b) = mem_pair(Duration::from_secs(30));
        let (sender_seeds, receiver_seeds) = test_seeds(&mut Prg::from_seed(3));
        let count = ots_needed(outputs);
        let mut prg = Prg::from_seed(2);
        let choices: Vec<bool> = (0..count).map(|_| prg.u64() & 1 == 1).collect();
        let delta = sender_seeds.delta_block();
        std::thread::scope(|s| {
            let sender = s.spawn(move || {
                let ots = iknp_send(&mut a, &sender_seeds, count)?;
                send(&mut a, &mut Prg::from_seed(1), outputs, delta, &ots)
            });
            let ots = iknp_receive(&mut b, &receiver_seeds, &choices).unwrap();
            let r = receive(&mut b, outputs, (&choices, &ots)).unwrap();
            (delta, sender.join().unwrap().unwrap(), r)
        })
    }

    #[test]
    fn c_is_b_plus_the_choice_times_delta() {
        for n in [1, 63, 64, 1000, 70_001] {
            let (delta, b, r) = cot_pair(n);
            assert_eq!((b.len(), r.c.len(), r.choices.len()), (n, n, n.div_ceil(64)));
            let choice = |i: usize| (r.choices[i / 64] >> (i % 64)) & 1 == 1;
            for (i, (c, b)) in r.c.iter().zip(&b).enumerate() {
                assert_eq!(*c, b ^ if choice(i) { delta } else { 0 }, "n {n}, i {i}");
            }
            // The choices are about half ones (the noise was compressed), none past n.
            let ones: u32 = r.choices.iter().map(|w| w.count_ones()).sum();
            if n >= 1000 {
                assert!((ones as f64 / n as f64 - 0.5).abs() < 0.05, "{ones} of {n}");
            }
            assert_eq!(r.choices[n.div_ceil(64) - 1] >> 1 >> ((n - 1) % 64), 0);
        }
    }
}
