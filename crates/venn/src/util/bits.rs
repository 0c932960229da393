//! A fixed-size set of bits, one bit per element (the per-OT flags and the Bloom filter of
//! RR17 run to 2^28 entries, where a byte each would cost 260 MB and most of the cache).
//! Large sets live on huge pages: they are read at random.

use crate::util::memory::huge_zeroed;
use rayon::prelude::*;

/// `len` bits, all clear at first.
pub struct BitSet {
    words: Vec<u64>,
    len: usize,
}

impl BitSet {
    /// A set of `len` clear bits.
    pub fn new(len: usize) -> Self {
        BitSet {
            words: huge_zeroed(len.div_ceil(64)),
            len,
        }
    }

    /// The set whose bit `i` is `bits[i]` (packed in parallel on the rayon pool).
    pub fn from_bools(bits: &[bool]) -> Self {
        BitSet {
            words: bits
                .par_chunks(64)
                .map(|c| c.iter().rev().fold(0, |w, &b| w << 1 | b as u64))
                .collect(),
            len: bits.len(),
        }
    }

    /// The number of bits.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the set has no bits at all.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bit `i`.
    #[inline]
    pub fn get(&self, i: usize) -> bool {
        self.words[i / 64] >> (i % 64) & 1 == 1
    }

    /// Sets bit `i`; returns whether it was already set.
    #[inline]
    pub fn set(&mut self, i: usize) -> bool {
        let (w, b) = (i / 64, 1u64 << (i % 64));
        let was = self.words[w] & b != 0;
        self.words[w] |= b;
        was
    }

    /// The number of set bits.
    pub fn count_ones(&self) -> usize {
        self.words.iter().map(|w| w.count_ones() as usize).sum()
    }

    /// The bits in order.
    pub fn iter(&self) -> impl Iterator<Item = bool> + '_ {
        (0..self.len).map(|i| self.get(i))
    }

    /// The 64-bit words, bit `i` at bit `i % 64` of word `i / 64`.
    pub fn words(&self) -> &[u64] {
        &self.words
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packing_bools_keeps_every_bit() {
        let bools: Vec<bool> = (0..1000).map(|i| i % 3 == 0 || i % 7 == 1).collect();
        let b = BitSet::from_bools(&bools);
        assert_eq!(b.len(), 1000);
        assert!(b.iter().eq(bools.iter().copied()));
    }

    #[test]
    fn set_get_and_count() {
        let mut b = BitSet::new(1000);
        let set = [0, 5, 63, 64, 65, 500, 999];
        for &i in &set {
            assert!(!b.set(i));
        }
        assert!(b.set(5), "already set");
        assert_eq!(b.count_ones(), set.len());
        assert_eq!(b.iter().filter(|&x| x).count(), set.len());
        assert!((0..1000).all(|i| b.get(i) == set.contains(&i)));
    }
}
