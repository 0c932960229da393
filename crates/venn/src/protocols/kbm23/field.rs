//! The prime field 𝔽_Q of KBM23's comparisons (§III-A: "a finite field 𝔽_Q"), for primes
//! Q < 2^63, and vectors of its elements packed at ℓ = ⌈log₂ Q⌉ bits each — the layout of
//! the wire (§V-A counts αβ·log Q bits) and of the stored tuples.

use crate::crypto::Prg;
use crate::util::wide_cpu::with_avx512;
use crate::{Error, Result};
use std::hint::select_unpredictable;

/// 𝔽_Q.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Field {
    q: u64,
    bits: u32,
    /// `⌊(2^64 − 1) / q⌋`, for Barrett reduction of products below 2^64 (Q < 2^32).
    barrett: u64,
    /// `⌊2^(2ℓ) / q⌋`, for Barrett reduction of products below Q² (ℓ ≤ 21).
    barrett_narrow: u64,
}

/// The widest ℓ of [`Narrow`]: `x·⌊2^(2ℓ)/Q⌋ < 2^(3ℓ + 1)` must fit 64 bits.
const NARROW_BITS: u32 = 21;

impl Field {
    /// The field of the prime `q` (2 < q < 2^63; primality is the caller's:
    /// [`crate::util::primes::next_prime`] makes it).
    pub fn new(q: u64) -> Self {
        assert!(q > 2 && q < 1 << 63, "Q = {q} out of range");
        let bits = 64 - (q - 1).leading_zeros();
        Field {
            q,
            bits,
            barrett: u64::MAX / q,
            barrett_narrow: if bits <= NARROW_BITS {
                ((1u128 << (2 * bits)) / q as u128) as u64
            } else {
                0
            },
        }
    }

    /// Q.
    pub fn modulus(&self) -> u64 {
        self.q
    }

    /// ℓ = ⌈log₂ Q⌉, the bits of an element on the wire.
    pub fn bits(&self) -> u32 {
        self.bits
    }

    /// `a + b` (without branches: the operands are uniform, a branch on them would be
    /// mispredicted half the time, and the compiler made one of a masked add).
    #[inline(always)]
    pub fn add(&self, a: u64, b: u64) -> u64 {
        self.reduce_once(a + b)
    }

    /// `a − b`.
    #[inline(always)]
    pub fn sub(&self, a: u64, b: u64) -> u64 {
        let (d, borrow) = a.overflowing_sub(b);
        select_unpredictable(borrow, d.wrapping_add(self.q), d)
    }

    /// `x mod Q` for `x < 2Q`.
    #[inline(always)]
    fn reduce_once(&self, x: u64) -> u64 {
        let (d, borrow) = x.overflowing_sub(self.q);
        select_unpredictable(borrow, x, d)
    }

    /// `a · b`.
    #[inline(always)]
    pub fn mul(&self, a: u64, b: u64) -> u64 {
        if self.bits <= 32 {
            // x < Q² < 2^64; the Barrett quotient is at most 2 short, so r < 3Q.
            let x = a * b;
            let quotient = ((x as u128 * self.barrett as u128) >> 64) as u64;
            let r = x - quotient * self.q;
            self.reduce_once(self.reduce_once_of_three(r))
        } else {
            (a as u128 * b as u128 % self.q as u128) as u64
        }
    }

    /// `a·b + c`.
    #[inline(always)]
    pub fn mul_add(&self, a: u64, b: u64, c: u64) -> u64 {
        match self.narrow() {
            Some(n) => n.mul_add(a, b, c),
            None => self.add(self.mul(a, b), c),
        }
    }

    /// The field with products reduced in 64-bit lanes, for ℓ ≤ 21.
    #[inline(always)]
    pub fn narrow(&self) -> Option<Narrow> {
        (self.bits <= NARROW_BITS).then_some(Narrow {
            q: self.q,
            barrett: self.barrett_narrow,
            shift: 2 * self.bits,
        })
    }

    /// `x − Q` if `x ≥ 2Q`, for `x < 3Q`.
    #[inline(always)]
    fn reduce_once_of_three(&self, x: u64) -> u64 {
        let (d, borrow) = x.overflowing_sub(2 * self.q);
        let keep = (borrow as u64).wrapping_neg();
        (x & keep) | (d.wrapping_add(self.q) & !keep)
    }

    /// `a^e`.
    pub fn pow(&self, mut a: u64, mut e: u64) -> u64 {
        let mut r = 1;
        while e > 0 {
            if e & 1 == 1 {
                r = self.mul(r, a);
            }
            a = self.mul(a, a);
            e >>= 1;
        }
        r
    }

    /// `a⁻¹` for `a ≠ 0` (Fermat).
    pub fn inv(&self, a: u64) -> u64 {
        assert!(a != 0 && a < self.q, "no inverse of {a}");
        self.pow(a, self.q - 2)
    }

    /// A uniform element of 𝔽_Q.
    pub fn random(&self, prg: &mut Prg) -> u64 {
        prg.below(self.q)
    }

    /// A uniform element of 𝔽*_Q.
    pub fn random_nonzero(&self, prg: &mut Prg) -> u64 {
        1 + prg.below(self.q - 1)
    }
}

/// 𝔽_Q for ℓ ≤ 21, its products reduced by a Barrett quotient that needs only 64-bit
/// products, which the compiler vectorises.
#[derive(Clone, Copy)]
pub struct Narrow {
    q: u64,
    /// `⌊2^shift / q⌋`.
    barrett: u64,
    /// `2ℓ`.
    shift: u32,
}

impl Narrow {
    /// `a + b`.
    #[inline(always)]
    pub fn add(&self, a: u64, b: u64) -> u64 {
        let x = a + b;
        x.min(x.wrapping_sub(self.q))
    }

    /// `a·b + c`: `x = a·b + c < Q² ≤ 2^(2ℓ)`, so the quotient `⌊x·⌊2^(2ℓ)/Q⌋ / 2^(2ℓ)⌋`
    /// is at most one short of `⌊x/Q⌋`, and `x·⌊2^(2ℓ)/Q⌋ < 2^(3ℓ+1)` fits.
    #[inline(always)]
    pub fn mul_add(&self, a: u64, b: u64, c: u64) -> u64 {
        let x = a * b + c;
        let quotient = (x * self.barrett) >> self.shift;
        let r = x - quotient * self.q;
        r.min(r.wrapping_sub(self.q))
    }
}

/// Elements of a field packed at `bits` bits each, little-endian: element `i` is bits
/// `i·bits .. (i + 1)·bits` of the byte string.
pub(super) struct Packed {
    bits: u32,
    len: usize,
    /// The packed bytes, with 15 bytes of slack so any element is one unaligned 16-byte
    /// read.
    bytes: Vec<u8>,
}

/// Bytes of slack after the packed elements.
const SLACK: usize = 15;

impl Packed {
    /// The elements of `values`, each below 2^bits.
    pub(super) fn from_values(bits: u32, values: impl ExactSizeIterator<Item = u64>) -> Self {
        let mut w = PackedWriter::new(bits, values.len());
        values.for_each(|v| w.push(v));
        w.finish()
    }

    /// Reads `len` elements of `field` from `bytes` (as [`Packed::as_bytes`] wrote them),
    /// refusing a wrong length, an element `≥ Q` or set bits past the last element. The
    /// buffer becomes the vector's (and [`Packed::into_bytes`] gives it back for reuse).
    pub(super) fn parse(field: &Field, len: usize, mut bytes: Vec<u8>, what: &str) -> Result<Self> {
        let bits = field.bits();
        if bytes.len() != packed_bytes(bits, len) {
            return Err(Error::protocol(
                format!(
                    "{what}: {} bytes for {len} elements of {bits} bits",
                    packed_bytes(bits, len)
                ),
                format!("{} bytes", bytes.len()),
            ));
        }
        let tail = (len * bits as usize) % 8;
        if tail != 0 && bytes[bytes.len() - 1] >> tail != 0 {
            return Err(Error::protocol(
                format!("{what}: zero bits past the last element"),
                "bits set",
            ));
        }
        bytes.resize(bytes.len() + SLACK, 0);
        let packed = Packed { bits, len, bytes };
        let mut chunk = [0; 1024];
        for start in (0..len).step_by(chunk.len()) {
            let chunk = &mut chunk[..(len - start).min(1024)];
            packed.unpack(start, chunk);
            // A branch-free scan first: the rare bad input pays for finding the element.
            let max = with_avx512(
                #[inline(always)]
                || chunk.iter().fold(0, |m, &v| m.max(v)),
            );
            if max >= field.modulus() {
                let i = chunk
                    .iter()
                    .position(|&v| v >= field.modulus())
                    .expect("one");
                return Err(Error::protocol(
                    format!("{what}: elements below Q = {}", field.modulus()),
                    format!("element {} = {}", start + i, chunk[i]),
                ));
            }
        }
        Ok(packed)
    }

    /// Elements `start..start + out.len()` into `out`. Eight elements from an index that
    /// is a multiple of eight fill exactly `bits` whole bytes, so for `bits ≤ 16` they
    /// come from one 16-byte read.
    pub(super) fn unpack(&self, start: usize, out: &mut [u64]) {
        assert!(start + out.len() <= self.len, "elements past the end");
        let aligned = start.next_multiple_of(8).min(start + out.len());
        let (head, rest) = out.split_at_mut(aligned - start);
        for (i, v) in head.iter_mut().enumerate() {
            *v = self.get(start + i);
        }
        let (bits, m) = (self.bits as usize, mask(self.bits));
        let mut done = aligned;
        if bits <= 16 {
            let rest_len = rest.len();
            let mut groups = rest.chunks_exact_mut(8);
            let mut byte = aligned / 8 * bits;
            // The second four start `4·bits` bits in: `bits / 2` bytes and 4 bits for odd
            // `bits`, which leaves them room in a 64-bit word (4·15 + 4 ≤ 64).
            let (second, shift) = (bits / 2, 4 * bits % 8);
            let word =
                |at: usize| u64::from_le_bytes(self.bytes[at..at + 8].try_into().expect("8"));
            for group in &mut groups {
                let (lo, hi) = (word(byte), word(byte + second) >> shift);
                for k in 0..4 {
                    group[k] = lo >> (k * bits) & m;
                    group[k + 4] = hi >> (k * bits) & m;
                }
                byte += bits;
            }
            done += rest_len - groups.into_remainder().len();
        }
        for (i, v) in out[done - start..].iter_mut().enumerate() {
            *v = self.get(done + i);
        }
    }

    /// Element `i`.
    #[inline(always)]
    pub(super) fn get(&self, i: usize) -> u64 {
        debug_assert!(i < self.len);
        let bit = i * self.bits as usize;
        let at = &self.bytes[bit / 8..bit / 8 + 16];
        let word = u128::from_le_bytes(at.try_into().expect("16 bytes"));
        ((word >> (bit % 8)) as u64) & mask(self.bits)
    }

    /// The buffer, for reuse.
    pub(super) fn into_bytes(self) -> Vec<u8> {
        self.bytes
    }

    /// The packed elements, `⌈len·bits / 8⌉` bytes.
    pub(super) fn as_bytes(&self) -> &[u8] {
        &self.bytes[..packed_bytes(self.bits, self.len)]
    }
}

/// Writes elements one after another, into a byte string that only grows.
pub(super) struct PackedWriter {
    bits: u32,
    len: usize,
    bytes: Vec<u8>,
    /// Bits not yet written, the first `filled` of `acc`.
    acc: u128,
    filled: u32,
}

impl PackedWriter {
    /// A writer of elements of `bits` bits, with room for `capacity`.
    pub(super) fn new(bits: u32, capacity: usize) -> Self {
        PackedWriter::reusing(bits, capacity, Vec::new())
    }

    /// A writer into `buf` (emptied first): the memory of a frame sent before, rather than
    /// fresh pages, which the kernel must clear on first touch (about 0.6 s a GiB here).
    pub(super) fn reusing(bits: u32, capacity: usize, mut buf: Vec<u8>) -> Self {
        assert!((1..=64).contains(&bits));
        buf.clear();
        buf.reserve(packed_bytes(bits, capacity) + SLACK);
        PackedWriter {
            bits,
            len: 0,
            bytes: buf,
            acc: 0,
            filled: 0,
        }
    }

    /// Appends `v < 2^bits`.
    #[inline(always)]
    pub(super) fn push(&mut self, v: u64) {
        debug_assert!(v <= mask(self.bits));
        self.acc |= (v as u128) << self.filled;
        self.filled += self.bits;
        self.len += 1;
        if self.filled >= 64 {
            self.bytes
                .extend_from_slice(&(self.acc as u64).to_le_bytes());
            self.acc >>= 64;
            self.filled -= 64;
        }
    }

    /// Appends `values`, each below 2^bits: eight at a time, as `bits` whole bytes, while
    /// the writer is at a multiple of eight elements and `bits ≤ 16`.
    pub(super) fn extend(&mut self, values: &[u64]) {
        let mut values = values;
        if self.bits <= 16 {
            while !self.len.is_multiple_of(8) && !values.is_empty() {
                self.push(values[0]);
                values = &values[1..];
            }
            if self.len.is_multiple_of(8) {
                self.flush_whole_bytes();
                let bits = self.bits as usize;
                let mut groups = values.chunks_exact(8);
                self.bytes.reserve(groups.len() * bits + 16);
                for group in &mut groups {
                    debug_assert!(group.iter().all(|&v| v <= mask(self.bits)));
                    let (mut lo, mut hi) = (0, 0);
                    for k in 0..4 {
                        lo |= group[k] << (k * bits);
                        hi |= group[k + 4] << (k * bits);
                    }
                    let word = lo as u128 | (hi as u128) << (4 * bits);
                    // Sixteen bytes stored, the `16 − bits` past the group dropped.
                    self.bytes.extend_from_slice(&word.to_le_bytes());
                    self.bytes.truncate(self.bytes.len() - (16 - bits));
                }
                self.len += values.len() - groups.remainder().len();
                values = groups.remainder();
            }
        }
        values.iter().for_each(|&v| self.push(v));
    }

    /// Appends the elements of `other`: its bytes as they are while this writer is at a
    /// multiple of eight elements (where whole bytes end).
    pub(super) fn append(&mut self, other: &Packed) {
        debug_assert_eq!(self.bits, other.bits);
        if !self.len.is_multiple_of(8) {
            (0..other.len).for_each(|i| self.push(other.get(i)));
            return;
        }
        self.flush_whole_bytes();
        let groups = other.len / 8 * 8;
        self.bytes
            .extend_from_slice(&other.bytes[..packed_bytes(self.bits, groups)]);
        self.len += groups;
        (groups..other.len).for_each(|i| self.push(other.get(i)));
    }

    /// Writes out the accumulator, which at a multiple of eight elements holds whole
    /// bytes.
    fn flush_whole_bytes(&mut self) {
        debug_assert!(self.len.is_multiple_of(8));
        let whole = self.filled as usize / 8;
        self.bytes
            .extend_from_slice(&self.acc.to_le_bytes()[..whole]);
        (self.acc, self.filled) = (0, 0);
    }

    /// The elements written.
    pub(super) fn finish(mut self) -> Packed {
        let tail = self.filled.div_ceil(8) as usize;
        self.bytes
            .extend_from_slice(&self.acc.to_le_bytes()[..tail]);
        self.bytes.extend_from_slice(&[0; SLACK]);
        Packed {
            bits: self.bits,
            len: self.len,
            bytes: self.bytes,
        }
    }
}

/// The bytes of `len` elements of `bits` bits.
pub(super) fn packed_bytes(bits: u32, len: usize) -> usize {
    (len * bits as usize).div_ceil(8)
}

fn mask(bits: u32) -> u64 {
    u64::MAX >> (64 - bits)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crypto::Block;
    use crate::util::cpu::{with_level, Level};
    use crate::util::primes::{is_prime, next_prime};

    #[test]
    fn arithmetic_agrees_with_wide_integers() {
        let mut prg = Prg::from_seed(Block::from(1));
        for q in [
            3,
            9689,
            65521,
            65537,
            2_097_143,
            65537,
            4_294_967_291,
            next_prime(1 << 61),
            (1 << 62) + 135,
        ] {
            let f = Field::new(q);
            for _ in 0..2000 {
                let (a, b) = (f.random(&mut prg), f.random(&mut prg));
                let wide = |x: u128| (x % q as u128) as u64;
                assert_eq!(f.add(a, b), wide(a as u128 + b as u128));
                assert_eq!(f.sub(a, b), wide(a as u128 + q as u128 - b as u128));
                assert_eq!(f.mul(a, b), wide(a as u128 * b as u128));
                let c = f.random(&mut prg);
                assert_eq!(f.mul_add(a, b, c), wide(a as u128 * b as u128 + c as u128));
            }
            assert_eq!(f.mul(q - 1, q - 1), 1);
            assert_eq!(f.mul_add(q - 1, q - 1, q - 1), 0);
            if is_prime(q) {
                let a = f.random_nonzero(&mut prg);
                assert_eq!(f.mul(a, f.inv(a)), 1);
            }
        }
        assert_eq!(Field::new(9689).bits(), 14);
        assert_eq!(Field::new(8191).bits(), 13);
        assert_eq!(Field::new(65537).bits(), 17);
    }

    /// At each level (the AVX-512 clone of the parser's scan, or not).
    #[test]
    fn packing_round_trips_and_refuses_what_is_not_elements() {
        for level in Level::ALL {
            with_level(
                level,
                packing_round_trips_and_refuses_what_is_not_elements_at,
            );
        }
    }

    fn packing_round_trips_and_refuses_what_is_not_elements_at() {
        let mut prg = Prg::from_seed(Block::from(2));
        for q in [5, 9689, 65537, next_prime(1 << 61)] {
            let f = Field::new(q);
            for len in [0, 1, 7, 8, 9, 100] {
                let values: Vec<u64> = (0..len).map(|_| f.random(&mut prg)).collect();
                let packed = Packed::from_values(f.bits(), values.iter().copied());
                assert_eq!(packed.as_bytes().len(), packed_bytes(f.bits(), len));
                let back = Packed::parse(&f, len, packed.as_bytes().to_vec(), "test").unwrap();
                assert!((0..len).all(|i| back.get(i) == values[i]), "Q = {q}, {len}");
                assert!(Packed::parse(&f, len + 8, packed.as_bytes().to_vec(), "test").is_err());
            }
        }
        for bits in [3, 14, 16, 17, 62] {
            let values: Vec<u64> = (0..200).map(|_| prg.u64() >> (64 - bits)).collect();
            let one_by_one = Packed::from_values(bits, values.iter().copied());
            let mut pieces = PackedWriter::new(bits, 0);
            let mut at = 0;
            for (k, len) in [3, 8, 1, 16, 0, 9, 40].into_iter().cycle().enumerate() {
                let len = len.min(values.len() - at);
                if k % 3 == 0 {
                    values[at..at + len].iter().for_each(|&v| pieces.push(v));
                } else {
                    pieces.extend(&values[at..at + len]);
                }
                at += len;
                if at == values.len() {
                    break;
                }
            }
            assert_eq!(
                pieces.finish().as_bytes(),
                one_by_one.as_bytes(),
                "{bits} bits"
            );
            for start in 0..20 {
                for len in [0, 1, 7, 8, 9, 33, 180 - start] {
                    let mut out = vec![0; len];
                    one_by_one.unpack(start, &mut out);
                    assert_eq!(
                        out,
                        values[start..start + len],
                        "{bits} bits, {start}+{len}"
                    );
                }
            }
        }
        let f = Field::new(9689);
        let too_big = Packed::from_values(14, [0, 9689, 0].into_iter());
        let Err(e) = Packed::parse(&f, 3, too_big.as_bytes().to_vec(), "d") else {
            panic!("an element ≥ Q is refused")
        };
        assert!(e.to_string().contains("element 1"), "{e}");
        // The one element ≥ Q last, at lengths around vectors' and the scan's chunks.
        for len in [1, 7, 8, 9, 17, 1024, 1025] {
            let values = (0..len).map(|i| if i + 1 == len { 9689 } else { 9688 });
            let last = Packed::from_values(14, values);
            let Err(e) = Packed::parse(&f, len, last.as_bytes().to_vec(), "d") else {
                panic!("an element ≥ Q last of {len} is refused")
            };
            assert!(
                e.to_string().contains(&format!("element {}", len - 1)),
                "{e}"
            );
        }
        let mut stray = Packed::from_values(14, [0; 3].into_iter())
            .as_bytes()
            .to_vec();
        *stray.last_mut().unwrap() |= 0x80;
        assert!(
            Packed::parse(&f, 3, stray, "d").is_err(),
            "bits past the last element"
        );
    }
}
