//! Bloom-filter hash functions as RR17 §6.1 computes them: one random-oracle call per item
//! (done by the caller when it encodes items to blocks) expanded by the AES PRG into `k`
//! positions. Protocols use the *set* `h*(x)` of distinct positions (RR17 §4.1, footnote
//! 3), so colliding hash functions cannot cancel out of a summary value.

use crate::crypto::{Aes, Block};
use crate::util::bits::BitSet;
use rayon::prelude::*;

/// Items whose hashes are computed in parallel before their bits are set.
const FILTER_BATCH: usize = 1 << 14;

/// `k` hash functions into `[bits]`, keyed by a shared seed.
pub struct BloomHash {
    seed: Block,
    bits: u64,
    k: usize,
}

impl BloomHash {
    /// The functions chosen by `seed` for a filter of `bits` bits (at most 2^32) with `k`
    /// functions.
    pub fn new(seed: Block, bits: usize, k: usize) -> Self {
        assert!(
            bits > 0 && bits as u64 <= 1 << 32,
            "Bloom filters have 1 to 2^32 bits"
        );
        BloomHash {
            seed,
            bits: bits as u64,
            k,
        }
    }

    /// The filter size in bits.
    pub fn bits(&self) -> usize {
        self.bits as usize
    }

    /// Writes `h_1(x), …, h_k(x)` for the item value `x` (with repeats, in order): AES-CTR
    /// keyed by `x ⊕ seed`, each 32-bit lane mapped exactly uniformly onto `[bits]`
    /// (Lemire's multiply-shift, rejecting the biased low products).
    fn hashes(&self, x: Block, out: &mut Vec<u32>) {
        let aes = Aes::new(x ^ self.seed);
        let n = self.bits;
        let reject_below = ((1u64 << 32) - n) % n;
        let mut blocks = [Block::ZERO; 32];
        let mut counter = 0u64;
        out.clear();
        while out.len() < self.k {
            let need = (self.k - out.len()).div_ceil(4).min(blocks.len());
            for b in &mut blocks[..need] {
                *b = Block::from(counter);
                counter += 1;
            }
            aes.encrypt_blocks(&mut blocks[..need]);
            for &b in &blocks[..need] {
                for lane in 0..4 {
                    let m = (b.as_u128() >> (32 * lane)) as u32 as u64 * n;
                    if (m as u32 as u64) >= reject_below && out.len() < self.k {
                        out.push((m >> 32) as u32);
                    }
                }
            }
        }
    }

    /// Writes `h*(x)`, the set of distinct positions of the item value `x`, in the order
    /// of their first occurrence (summaries XOR over the set, so order does not matter).
    pub fn positions(&self, x: Block, out: &mut Vec<u32>) {
        self.hashes(x, out);
        // Repeats are rare (about k²/2N per item): a 4096-bit filter on the low bits of the
        // positions kept so far finds the candidates, which a scan then confirms.
        let mut seen = [0u64; 64];
        let mut kept = 0;
        for i in 0..out.len() {
            let p = out[i];
            let (w, b) = ((p as usize >> 6) & 63, 1u64 << (p & 63));
            if seen[w] & b != 0 && out[..kept].contains(&p) {
                continue;
            }
            seen[w] |= b;
            out[kept] = p;
            kept += 1;
        }
        out.truncate(kept);
    }

    /// Sets the bits of every item in `values` in a filter. The hashing runs on the
    /// current thread pool; the bits are set in one thread.
    pub fn filter(&self, values: &[Block]) -> BitSet {
        let mut bf = BitSet::new(self.bits());
        for batch in values.chunks(FILTER_BATCH) {
            let hashes: Vec<Vec<u32>> = batch
                .par_chunks(1024)
                .map(|items| {
                    let (mut all, mut pos) = (Vec::with_capacity(items.len() * self.k), vec![]);
                    for &x in items {
                        self.hashes(x, &mut pos);
                        all.extend_from_slice(&pos);
                    }
                    all
                })
                .collect();
            for &p in hashes.iter().flatten() {
                bf.set(p as usize);
            }
        }
        bf
    }
}

/// The size of a filter with `k` hash functions for `n` items whose false-positive rate is
/// at most `2^-k` (the optimum `N = k·n / ln 2`), at least 128 bits.
pub fn bloom_bits(n: u64, k: usize) -> usize {
    ((k as f64 * n as f64 / std::f64::consts::LN_2).ceil() as usize).max(128)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_are_a_deterministic_set_in_range() {
        let h = BloomHash::new(Block::from(5), 1000, 40);
        let (mut a, mut b) = (Vec::new(), Vec::new());
        h.positions(Block::from(77), &mut a);
        h.positions(Block::from(77), &mut b);
        assert_eq!(a, b);
        let mut sorted = a.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), a.len(), "distinct");
        assert!(a.iter().all(|&p| p < 1000));
        assert!(a.len() > 30, "40 draws from 1000 rarely collide much");
        h.positions(Block::from(78), &mut b);
        assert_ne!(a, b);
        let bf = h.filter(&[Block::from(77)]);
        assert_eq!(bf.count_ones(), a.len());
        // Repeated hashes appear once: a tiny filter forces many.
        let tiny = BloomHash::new(Block::from(5), 50, 40);
        tiny.positions(Block::from(77), &mut a);
        tiny.hashes(Block::from(77), &mut b);
        b.sort_unstable();
        b.dedup();
        assert_eq!(a.len(), b.len());
        assert!(b.iter().all(|p| a.contains(p)));
    }

    #[test]
    fn false_positive_rate_matches_the_sizing() {
        // k = 8 so the rate (~2^-8) is measurable.
        let (n, k) = (2000, 8);
        let h = BloomHash::new(Block::from(9), bloom_bits(n, k), k);
        let bf = h.filter(&(0..n).map(Block::from).collect::<Vec<_>>());
        let mut pos = Vec::new();
        let trials = 200_000u64;
        let fp = (0..trials)
            .filter(|&t| {
                h.positions(Block::from_halves(t, 1), &mut pos);
                pos.iter().all(|&p| bf.get(p as usize))
            })
            .count();
        let rate = fp as f64 / trials as f64;
        assert!(rate < 2.0 / 256.0, "false-positive rate {rate}");
    }
}
