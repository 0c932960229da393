//! A key's place in the OKVS: its bin, and its row there — three distinct sparse columns
//! and the dense coefficient d (RR22 §2, Fig. 1: a weight-3 row with the "field row"
//! (d, d^2, …, d^g) appended).
//!
//! Two fixed-key hashes under the session's seed r, h_i(x) = AES_{r_i}(x) + x: the row's
//! columns come from h_1's two halves and the bin's from h_2's, so a key's bin and its
//! columns inside the bin are independent (volePSI takes both from one hash, by residues
//! of overlapping windows; with bins a power of two that ties the bin to low bits that the
//! columns also depend on). Every index is the high half of a 64×64-bit product (Lemire's
//! reduction: no division), uniform up to m/2^64. A binary dense part (for values of any
//! width, [`super::dense::BitRow`]) takes a third hash, h_3, of its own.

use super::params::Params;
use crate::crypto::{Aes, Block};

/// Hashes keys to bins and rows for one encoding.
pub struct RowHasher {
    rows: Aes,
    bins: Aes,
    dense: Aes,
    bin_count: u64,
    sparse: u64,
}

/// Keys hashed at a time (the AES pipelines fill).
pub(super) const BATCH: usize = 64;

impl RowHasher {
    /// The hasher of an encoding with these dimensions and seed.
    pub(super) fn new(params: &Params, seed: Block) -> RowHasher {
        // Two keys from the seed, fixed apart (the domain of each hash).
        let key = |i: u64| Aes::fixed().encrypt(seed ^ Block::from(i));
        RowHasher {
            rows: Aes::new(key(1)),
            bins: Aes::new(key(2)),
            dense: Aes::new(key(3)),
            bin_count: params.bins,
            sparse: params.sparse,
        }
    }

    /// The bin of each of `keys` (at most [`BATCH`]).
    pub fn bins(&self, keys: &[Block], out: &mut [u32]) {
        let mut h = [Block::ZERO; BATCH];
        let h = &mut h[..keys.len()];
        self.bins.encrypt_blocks_to(keys, h);
        for ((o, h), k) in out.iter_mut().zip(h.iter()).zip(keys) {
            *o = below((h ^ k).low_u64(), self.bin_count) as u32;
        }
    }

    /// The row inside its bin of each of `keys` (at most [`BATCH`]): three distinct sparse
    /// columns (below the bin's m') into `cols`, the dense coefficient d into `ds` (the
    /// row's dense part is (d, d^2, …, d^g)). The third column takes the high half of the
    /// bin's hash, whose low half gave the bin.
    pub fn rows(&self, keys: &[Block], cols: &mut [[u32; 3]], ds: &mut [Block]) {
        let mut g = [Block::ZERO; BATCH];
        let g = &mut g[..keys.len()];
        self.rows.encrypt_blocks_to(keys, ds);
        self.bins.encrypt_blocks_to(keys, g);
        for ((c, d), (k, g)) in cols.iter_mut().zip(ds.iter_mut()).zip(keys.iter().zip(g)) {
            *d ^= k;
            *c = distinct(d.low_u64(), d.high_u64(), (*g ^ k).high_u64(), self.sparse);
        }
    }

    /// h_3 of each of `keys` (at most [`BATCH`]) into `out`: the bits of a binary dense
    /// part, independent of the row's columns and bin.
    pub fn dense_bits(&self, keys: &[Block], out: &mut [Block]) {
        self.dense.encrypt_blocks_to(keys, out);
        out.iter_mut().zip(keys).for_each(|(h, k)| *h ^= k);
    }
}

/// `x` scaled into [0, m): uniform for uniform x, up to m/2^64.
#[inline]
fn below(x: u64, m: u64) -> u64 {
    ((u128::from(x) * u128::from(m)) >> 64) as u64
}

/// Three distinct columns below `m`, uniform over the ordered triples: the first from m
/// values, the second from the m−1 others, the third from the m−2 left.
#[inline]
fn distinct(a: u64, b: u64, c: u64, m: u64) -> [u32; 3] {
    let c0 = below(a, m);
    let mut c1 = below(b, m - 1);
    if c1 >= c0 {
        c1 += 1;
    }
    let (lo, hi) = if c0 < c1 { (c0, c1) } else { (c1, c0) };
    let mut c2 = below(c, m - 2);
    if c2 >= lo {
        c2 += 1;
    }
    if c2 >= hi {
        c2 += 1;
    }
    [c0 as u32, c1 as u32, c2 as u32]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn triples_are_distinct_and_uniform() {
        // Over m = 5, all 60 ordered triples appear about equally often.
        let mut counts = std::collections::HashMap::new();
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for _ in 0..600_000 {
            let t = distinct(next(), next(), next(), 5);
            assert!(t[0] != t[1] && t[1] != t[2] && t[0] != t[2] && t.iter().all(|&c| c < 5));
            *counts.entry(t).or_insert(0u32) += 1;
        }
        assert_eq!(counts.len(), 60);
        for (t, n) in counts {
            assert!((9_400..10_600).contains(&n), "{t:?}: {n}");
        }
    }
}
