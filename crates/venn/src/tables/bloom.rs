//! Bloom-filter hash functions as RR17 §6.1 computes them: one random-oracle call per item
//! (done by the caller when it encodes items to blocks) expanded by the AES PRG into `k`
//! positions. Protocols use the *set* `h*(x)` of distinct positions (RR17 §4.1, footnote
//! 3), so colliding hash functions cannot cancel out of a summary value.

use crate::crypto::{Block, Prg};

/// `k` hash functions into `[bits]`, keyed by a shared seed.
pub struct BloomHash {
    seed: Block,
    bits: u64,
    k: usize,
}

impl BloomHash {
    /// The functions chosen by `seed` for a filter of `bits` bits with `k` functions.
    pub fn new(seed: Block, bits: usize, k: usize) -> Self {
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

    /// Writes `h_1(x), …, h_k(x)` for the item value `x` (with repeats, in order).
    fn hashes(&self, x: Block, out: &mut Vec<u32>) {
        let mut prg = Prg::from_seed(x ^ self.seed);
        out.clear();
        out.extend((0..self.k).map(|_| prg.below(self.bits) as u32));
    }

    /// Writes `h*(x)`, the sorted set of distinct positions of the item value `x`.
    pub fn positions(&self, x: Block, out: &mut Vec<u32>) {
        self.hashes(x, out);
        out.sort_unstable();
        out.dedup();
    }

    /// Sets the bits of every item in `values` in a filter.
    pub fn filter(&self, values: &[Block]) -> Vec<bool> {
        let mut bf = vec![false; self.bits()];
        let mut pos = Vec::with_capacity(self.k);
        for &x in values {
            self.hashes(x, &mut pos);
            for &p in &pos {
                bf[p as usize] = true;
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
        let h = BloomHash::new(5, 1000, 40);
        let (mut a, mut b) = (Vec::new(), Vec::new());
        h.positions(77, &mut a);
        h.positions(77, &mut b);
        assert_eq!(a, b);
        assert!(a.windows(2).all(|w| w[0] < w[1]), "sorted, distinct");
        assert!(a.iter().all(|&p| p < 1000));
        assert!(a.len() > 30, "40 draws from 1000 rarely collide much");
        h.positions(78, &mut b);
        assert_ne!(a, b);
        let bf = h.filter(&[77]);
        assert_eq!(bf.iter().filter(|&&x| x).count(), a.len());
    }

    #[test]
    fn false_positive_rate_matches_the_sizing() {
        // k = 8 so the rate (~2^-8) is measurable.
        let (n, k) = (2000, 8);
        let h = BloomHash::new(9, bloom_bits(n, k), k);
        let bf = h.filter(&(0..n as u128).collect::<Vec<_>>());
        let mut pos = Vec::new();
        let trials = 200_000u128;
        let fp = (0..trials)
            .filter(|&t| {
                h.positions(1 << 64 | t, &mut pos);
                pos.iter().all(|&p| bf[p as usize])
            })
            .count();
        let rate = fp as f64 / trials as f64;
        assert!(rate < 2.0 / 256.0, "false-positive rate {rate}");
    }
}
