//! XOR-shared bit vectors, bit-sliced: one vector holds one wire of a circuit evaluated on
//! many instances at once (ABY's SIMD gates), 64 instances to a word.

/// One party's XOR share of a vector of bits: bit `i` is bit `i % 64` of word `i / 64`,
/// and the bits past `len` are zero.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Shared {
    words: Vec<u64>,
    len: usize,
}

/// The mask of the bits of the last word of a vector of `len` bits.
fn tail_mask(len: usize) -> u64 {
    match len % 64 {
        0 => u64::MAX,
        r => (1 << r) - 1,
    }
}

impl Shared {
    /// `len` zero bits.
    pub fn zeros(len: usize) -> Self {
        Shared {
            words: vec![0; len.div_ceil(64)],
            len,
        }
    }

    /// The bits of `words` (at least `⌈len / 64⌉` of them; the rest are dropped, and so
    /// are the bits past `len`).
    pub fn from_words(mut words: Vec<u64>, len: usize) -> Self {
        words.truncate(len.div_ceil(64));
        assert_eq!(words.len(), len.div_ceil(64), "too few words");
        if let Some(last) = words.last_mut() {
            *last &= tail_mask(len);
        }
        Shared { words, len }
    }

    /// The vector of `bits`.
    pub fn from_bools(bits: impl ExactSizeIterator<Item = bool>) -> Self {
        let len = bits.len();
        let mut words = vec![0; len.div_ceil(64)];
        for (i, b) in bits.enumerate() {
            words[i / 64] |= (b as u64) << (i % 64);
        }
        Shared { words, len }
    }

    /// The number of bits.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are no bits.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The words.
    pub fn words(&self) -> &[u64] {
        &self.words
    }

    /// Bit `i`.
    pub fn get(&self, i: usize) -> bool {
        assert!(i < self.len);
        self.words[i / 64] >> (i % 64) & 1 == 1
    }

    /// The number of set bits.
    pub fn count_ones(&self) -> u64 {
        self.words.iter().map(|w| w.count_ones() as u64).sum()
    }

    /// `self ⊕ other` (a share of the XOR of the two shared vectors).
    pub fn xor(&self, other: &Shared) -> Shared {
        self.word_by_word(other, |a, b| a ^ b)
    }

    /// `self ∧ other` of two vectors in the clear (or of a share with a public vector).
    pub fn and(&self, other: &Shared) -> Shared {
        self.word_by_word(other, |a, b| a & b)
    }

    /// `f` of the two vectors' words (of equal lengths; `f(0, 0) = 0`).
    fn word_by_word(&self, other: &Shared, f: impl Fn(u64, u64) -> u64) -> Shared {
        assert_eq!(self.len, other.len, "vectors of different lengths");
        let words = self.words.iter().zip(&other.words).map(|(&a, &b)| f(a, b));
        Shared {
            words: words.collect(),
            len: self.len,
        }
    }

    /// Every bit flipped.
    pub fn not(&self) -> Shared {
        Shared::from_words(self.words.iter().map(|w| !w).collect(), self.len)
    }

    /// Bits `start..start + len`.
    pub fn slice(&self, start: usize, len: usize) -> Shared {
        assert!(start + len <= self.len, "slice past the end");
        let (word, shift) = (start / 64, start % 64);
        let words = (0..len.div_ceil(64))
            .map(|i| {
                let low = self.words[word + i] >> shift;
                let high = match (shift, self.words.get(word + i + 1)) {
                    (0, _) | (_, None) => 0,
                    (_, Some(&next)) => next << (64 - shift),
                };
                low | high
            })
            .collect();
        Shared::from_words(words, len)
    }

    /// The vectors one after another.
    pub fn concat(parts: &[&Shared]) -> Shared {
        let len = parts.iter().map(|p| p.len).sum();
        let mut out = Shared::zeros(len);
        let mut at = 0;
        for p in parts {
            out.write_at(at, p);
            at += p.len;
        }
        out
    }

    /// Writes `bits` over bits `at..at + bits.len()`.
    fn write_at(&mut self, at: usize, bits: &Shared) {
        assert!(at + bits.len <= self.len, "write past the end");
        let (word, shift) = (at / 64, at % 64);
        for (i, &w) in bits.words.iter().enumerate() {
            let valid = if i + 1 == bits.words.len() {
                tail_mask(bits.len)
            } else {
                u64::MAX
            };
            self.words[word + i] = self.words[word + i] & !(valid << shift) | w << shift;
            if shift != 0 && word + i + 1 < self.words.len() {
                let spill = valid >> (64 - shift);
                self.words[word + i + 1] = self.words[word + i + 1] & !spill | w >> (64 - shift);
            }
        }
    }

    /// The XOR of each run of `k` consecutive bits (`len` a multiple of `k ≥ 1`).
    pub fn xor_groups(&self, k: usize) -> Shared {
        assert!(k >= 1 && self.len.is_multiple_of(k), "whole groups");
        if k == 2 {
            // Each pair's XOR lands on its even bit; gather the even bits.
            let mut out = Shared::zeros(self.len / 2);
            for (i, &w) in self.words.iter().enumerate() {
                let x = w ^ (w >> 1);
                let even = (0..32).fold(0u64, |acc, b| acc | (x >> (2 * b) & 1) << b);
                out.words[i / 2] |= even << (32 * (i % 2));
            }
            return out;
        }
        Shared::from_bools(
            (0..self.len / k).map(|g| (g * k..(g + 1) * k).fold(false, |acc, i| acc ^ self.get(i))),
        )
    }

    /// The bit planes of `n` values of `bits` bits each, `value(i)` the i-th: plane j holds
    /// bit j of every value (built a group of 64 values at a time).
    pub fn planes(n: usize, bits: u32, value: impl Fn(usize) -> u128) -> Vec<Shared> {
        let mut words = vec![Vec::with_capacity(n.div_ceil(64)); bits as usize];
        let mut group = [0u128; 64];
        for start in (0..n).step_by(64) {
            let group = &mut group[..64.min(n - start)];
            for (i, v) in group.iter_mut().enumerate() {
                *v = value(start + i);
            }
            for (j, plane) in words.iter_mut().enumerate() {
                let bit = |(i, &v): (usize, &u128)| ((v >> j) as u64 & 1) << i;
                plane.push(group.iter().enumerate().map(bit).fold(0, |w, b| w | b));
            }
        }
        words
            .into_iter()
            .map(|w| Shared::from_words(w, n))
            .collect()
    }

    /// The bits at `positions`, in that order (a public permutation or selection).
    pub fn gather(&self, positions: &[u32]) -> Shared {
        Shared::from_bools(positions.iter().map(|&p| self.get(p as usize)))
    }

    /// XORs bit k of `bits` into the bit at `positions[k]`, for each k (the inverse of
    /// [`Shared::gather`] for changes: positions distinct).
    pub fn xor_at(&mut self, positions: &[u32], bits: &Shared) {
        assert_eq!(positions.len(), bits.len(), "a position per bit");
        for (k, &p) in positions.iter().enumerate() {
            let p = p as usize;
            self.words[p / 64] ^= (bits.get(k) as u64) << (p % 64);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crypto::Block;
    use crate::crypto::Prg;

    fn random(prg: &mut Prg, len: usize) -> (Shared, Vec<bool>) {
        let bits: Vec<bool> = (0..len).map(|_| prg.u64() & 1 == 1).collect();
        (Shared::from_bools(bits.iter().copied()), bits)
    }

    #[test]
    fn slices_concatenations_and_gathers_move_the_right_bits() {
        let mut prg = Prg::from_seed(Block::from(3));
        for (a, b) in [(0, 5), (63, 64), (64, 1), (100, 130), (7, 0)] {
            let ((x, xb), (y, yb)) = (random(&mut prg, a), random(&mut prg, b));
            let both = Shared::concat(&[&x, &y]);
            let expect: Vec<bool> = xb.iter().chain(&yb).copied().collect();
            assert_eq!(both, Shared::from_bools(expect.iter().copied()));
            assert_eq!(both.slice(a, b), y);
            assert_eq!(both.slice(0, a), x);
            if a + b > 3 {
                let s = both.slice(2, a + b - 3);
                assert_eq!(s, Shared::from_bools(expect[2..a + b - 1].iter().copied()));
            }
            let positions: Vec<u32> = (0..(a + b) as u32).rev().collect();
            let reversed: Vec<bool> = expect.iter().rev().copied().collect();
            assert_eq!(
                both.gather(&positions),
                Shared::from_bools(reversed.into_iter())
            );
            // XORing what was gathered back in clears every bit.
            let mut cleared = both.clone();
            cleared.xor_at(&positions, &both.gather(&positions));
            assert_eq!(cleared, Shared::zeros(a + b));
        }
    }

    #[test]
    fn groups_fold_by_xor() {
        let mut prg = Prg::from_seed(Block::from(4));
        for (k, groups) in [(2, 1), (2, 33), (2, 100), (3, 50), (1, 7), (70, 3)] {
            let (x, bits) = random(&mut prg, k * groups);
            let expect = bits.chunks(k).map(|g| g.iter().fold(false, |a, &b| a ^ b));
            assert_eq!(x.xor_groups(k), Shared::from_bools(expect), "k = {k}");
        }
    }

    #[test]
    fn bits_past_the_length_stay_zero() {
        let x = Shared::from_words(vec![u64::MAX, u64::MAX], 70);
        assert_eq!(x.words()[1], 0b11_1111);
        assert_eq!(x.not().count_ones(), 0);
        assert_eq!(Shared::zeros(70).not().count_ones(), 70);
    }
}
