//! Silent correlated OT: the silent VOLE's GF(2) form (BCGIKRS19; Ferret, YWL+20), where
//! R's noise values are all 1. S gets Δ and B, R gets choice bits A and C with
//! C_i = B_i + A_i·Δ. The trees are half-trees (`half_tree`): one block a level, and
//! R's c_α = b_α + Δ with no correction. R's noise e, one 1 a tree at its point, is
//! compressed by the same code as its blocks, as bits beside them
//! ([`ExConv::accumulate_with_bits`]): A = G·e, C = G·c, B = G·b. Each party makes one COT each way at once ([`exchange`]) and
//! encodes its b and c side by side.
//!
//! Semi-honest only (no Ferret check): its one user is GMW's triples, a semi-honest
//! protocol. The trees' correlated OTs, of the same Δ, come from the caller: an IKNP
//! run's rows (Δ its secret, as Ferret takes its Δ from IKNP's), or the outputs of an
//! earlier COT (Ferret's bootstrapping, YWL+20 §5).
//!
//! [`ExConv::accumulate_with_bits`]: super::ExConv::accumulate_with_bits

use super::code::Pair;
use super::noise::Shape;
use super::silent::CODE_SEED;
use super::trees::{self, Sending, Tree};
use crate::crypto::{Block, Prg};
use crate::net::Channel;
use crate::Result;
use std::mem::MaybeUninit;

/// The trees' correlated OTs a COT of `outputs` takes (h per tree).
pub fn ots_needed(outputs: usize) -> usize {
    let shape = Shape::binary(outputs);
    shape.trees * shape.depth
}

/// Bytes of the tree messages one COT of `outputs` sends ([`send_trees`]).
pub fn message_bytes(outputs: usize) -> usize {
    let shape = Shape::binary(outputs);
    16 * shape.trees * Tree::Half.message_blocks(shape.depth)
}

/// A party's side of two correlated OTs of `outputs` each, one each way (the `leader`'s
/// sent first): [`send_trees`], [`receive_trees`] and [`encode`] in turn, the follower
/// receiving before it sends.
pub fn exchange(
    chan: &mut dyn Channel,
    prg: &mut Prg,
    outputs: usize,
    leader: bool,
    sending: (Block, &[Block]),
    receiving: (&[bool], &[Block]),
    noise: &mut Vec<Pair>,
) -> Result<Vec<u64>> {
    let points = if leader {
        send_trees(chan, prg, outputs, sending, noise)?;
        receive_trees(chan, outputs, receiving, noise)?
    } else {
        noise.resize(Shape::binary(outputs).noise_len(), Pair::default());
        let points = receive_trees(chan, outputs, receiving, noise)?;
        send_trees(chan, prg, outputs, sending, noise)?;
        points
    };
    Ok(encode(outputs, noise, points))
}

/// This party's COT of `outputs` as sender, for its Δ, with the trees' correlated OTs of
/// that Δ as their sender (their values q, [`ots_needed`] of them): its trees' messages
/// sent, their leaves b put into `noise`'s first blocks (`noise` sized for the COT; it is
/// reused: a run's chunks allocate it once).
pub fn send_trees(
    chan: &mut dyn Channel,
    prg: &mut Prg,
    outputs: usize,
    (delta, q): (Block, &[Block]),
    noise: &mut Vec<Pair>,
) -> Result<()> {
    let shape = Shape::binary(outputs);
    noise.resize(shape.noise_len(), Pair::default());
    let sending = Sending::Half { delta, q };
    trees::send(chan, prg, &shape, sending, noise, |e, b| e.0 = b)
}

/// The peer's COT of `outputs`, this party receiving with the trees' correlated OTs of
/// the peer's Δ (its choices and values t): the peer's trees rebuilt into `noise`'s second
/// blocks c (`noise` sized by [`send_trees`]); returns its points.
pub fn receive_trees(
    chan: &mut dyn Channel,
    outputs: usize,
    (choices, t): (&[bool], &[Block]),
    noise: &mut [Pair],
) -> Result<Vec<usize>> {
    let shape = Shape::binary(outputs);
    // SAFETY: a `MaybeUninit<Pair>` has a `Pair`'s layout; every one is initialised, and
    // `put` (the only writer) only sets a block of one, so all stay initialised.
    let places = unsafe { &mut *(noise as *mut [Pair] as *mut [MaybeUninit<Pair>]) };
    // SAFETY: `e` is one of `places`, each an initialised `Pair` (above).
    let put = |e: &mut MaybeUninit<Pair>, _, _, c| unsafe { e.assume_init_mut().1 = c };
    let receiving = (Tree::Half, choices, t);
    Ok(trees::receive(chan, &shape, receiving, places, put, None)?.points)
}

/// Both COTs of a chunk compressed by the code, `noise` holding (b, c) side by side, so
/// that the code's random reads and its coefficients serve both: on return `noise[i]` is
/// (B_i, C_i) for i below `outputs` — B this party's values as sender, C = B' + A·Δ' as
/// receiver (the peer's B' and Δ') — and the choice bits A are returned (bit i of word
/// i / 64, those past the outputs zero), from the received trees' `points`.
pub fn encode(outputs: usize, noise: &mut [Pair], points: Vec<usize>) -> Vec<u64> {
    let code = Shape::binary(outputs).code(CODE_SEED);
    // R's noise e as bits: a one at each tree's point.
    let n = code.inputs() / 2;
    let (mut out_bits, mut parity_bits) = (vec![0u64; n.div_ceil(64)], vec![0; n.div_ceil(64)]);
    for p in points {
        let (bits, i) = match p < n {
            true => (&mut out_bits, p),
            false => (&mut parity_bits, p - n),
        };
        bits[i / 64] |= 1 << (i % 64);
    }
    let (out, parity) = noise.split_at_mut(n);
    code.accumulate_with_bits(parity, &mut parity_bits);
    code.expand_with_bits(parity, out, &parity_bits, &mut out_bits);
    out_bits.truncate(outputs.div_ceil(64));
    if !outputs.is_multiple_of(64) {
        out_bits[outputs / 64] &= (1 << (outputs % 64)) - 1;
    }
    out_bits
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crypto::Prg;
    use crate::net::mem_pair;
    use crate::ot::{iknp_receive_correlated, iknp_send_correlated, test_seeds};
    use std::time::Duration;

    /// Both parties' COTs of `outputs` each way over an in-memory channel, their trees'
    /// correlated OTs from IKNP: each party's Δ, choice bits and (B, C).
    fn cot_pair(outputs: usize) -> [(Block, Vec<u64>, Vec<Pair>); 2] {
        let (mut a, mut b) = mem_pair(Duration::from_secs(30));
        let mut prg = Prg::from_seed(Block::from(3));
        let seeds = [test_seeds(&mut prg), test_seeds(&mut prg)];
        let count = ots_needed(outputs);
        // Each party on a pool of its own, as `run` gives it: a receiver waits on its
        // channel on the pool, which, shared, could leave its sender no thread.
        let party = |chan: &mut dyn Channel, leader: bool| {
            let (sending, receiving) = match leader {
                true => (&seeds[0].0, &seeds[1].1),
                false => (&seeds[1].0, &seeds[0].1),
            };
            let mut prg = Prg::from_seed(Block::from(leader as u64));
            let choices: Vec<bool> = (0..count).map(|_| prg.u64() & 1 == 1).collect();
            let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build();
            pool.unwrap().install(|| {
                let (send_ots, receive_ots) = match leader {
                    true => {
                        let s = iknp_send_correlated(chan, sending, count).unwrap();
                        (
                            s,
                            iknp_receive_correlated(chan, receiving, &choices).unwrap(),
                        )
                    }
                    false => {
                        let r = iknp_receive_correlated(chan, receiving, &choices).unwrap();
                        (iknp_send_correlated(chan, sending, count).unwrap(), r)
                    }
                };
                let delta = sending.delta_block();
                let mut noise = Vec::new();
                let sending = (delta, &send_ots[..]);
                let receiving = (&choices[..], &receive_ots[..]);
                let bits = exchange(
                    chan, &mut prg, outputs, leader, sending, receiving, &mut noise,
                )
                .unwrap();
                noise.truncate(outputs);
                (delta, bits, noise)
            })
        };
        std::thread::scope(|s| {
            let follower = s.spawn(|| party(&mut b, false));
            [party(&mut a, true), follower.join().unwrap()]
        })
    }

    #[test]
    fn c_is_b_plus_the_choice_times_delta() {
        for n in [1, 63, 64, 1000, 70_001] {
            let parties = cot_pair(n);
            for (s, r) in [(&parties[0], &parties[1]), (&parties[1], &parties[0])] {
                let ((delta, _, sent), (_, choices, received)) = (s, r);
                assert_eq!((sent.len(), choices.len()), (n, n.div_ceil(64)));
                let choice = |i: usize| (choices[i / 64] >> (i % 64)) & 1 == 1;
                for (i, (s, r)) in sent.iter().zip(received).enumerate() {
                    assert_eq!(
                        r.1,
                        s.0 ^ if choice(i) { *delta } else { Block::ZERO },
                        "n {n}, i {i}"
                    );
                }
                // The choices are about half ones (the noise was compressed), none past n.
                let ones: u32 = choices.iter().map(|w| w.count_ones()).sum();
                if n >= 1000 {
                    assert!((ones as f64 / n as f64 - 0.5).abs() < 0.05, "{ones} of {n}");
                }
                assert_eq!(choices[n.div_ceil(64) - 1] >> 1 >> ((n - 1) % 64), 0);
            }
        }
    }
}
