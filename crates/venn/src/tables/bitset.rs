//! A fixed-size set of bits, one bit per element (the per-OT flags of RR17 run to 2^28
//! entries, where a byte each would cost 260 MB and most of the cache).

/// `len` bits, all clear at first.
pub struct BitSet(Vec<u64>);

impl BitSet {
    /// A set of `len` clear bits.
    pub fn new(len: usize) -> Self {
        BitSet(vec![0; len.div_ceil(64)])
    }

    /// Bit `i`.
    #[inline]
    pub fn get(&self, i: usize) -> bool {
        self.0[i / 64] >> (i % 64) & 1 == 1
    }

    /// Sets bit `i`; returns whether it was already set.
    #[inline]
    pub fn set(&mut self, i: usize) -> bool {
        let (w, b) = (i / 64, 1u64 << (i % 64));
        let was = self.0[w] & b != 0;
        self.0[w] |= b;
        was
    }
}
