//! The 128-bit block every hot loop works on: an element of GF(2^128) (the field of
//! [`super::gf128`]) and a string of 128 bits, never an integer. Its operators are the
//! field's (`^` adds, `*` multiplies) and the bit string's (`&`, `|`, `!`); there is no `+`,
//! `-` or shift, so integer arithmetic on a block does not type-check, and code that does
//! need the integer (hashing into a range, a table index) says so with [`Block::as_u128`].

use std::fmt;
use std::ops::{
    BitAnd, BitAndAssign, BitOr, BitOrAssign, BitXor, BitXorAssign, Mul, MulAssign, Not,
};

#[cfg(not(target_endian = "little"))]
compile_error!("Venn's wire format and AES batching assume a little-endian machine");

/// A 128-bit block. Bit `i` is `(b >> i) & 1` of [`Block::as_u128`]; on the wire it is 16
/// little-endian bytes. `repr(transparent)`: its memory is a `u128`'s, so slices of blocks
/// may be read as bytes or `u128`s and loaded into SIMD registers.
#[repr(transparent)]
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash, Debug)]
pub struct Block(u128);

// SAFETY: a `Block` is a `u128` (`repr(transparent)`), which is `Zeroable` and `Pod`: every
// bit pattern is a valid block, all zeros included, and it has no padding.
unsafe impl bytemuck::Zeroable for Block {}
// SAFETY: as above.
unsafe impl bytemuck::Pod for Block {}

impl Block {
    /// The field's 0, the all-zero bit string.
    pub const ZERO: Block = Block(0);
    /// The field's 1 (the polynomial X^0).
    pub const ONE: Block = Block(1);
    /// The all-ones bit string.
    pub const ONES: Block = Block(u128::MAX);

    /// The block whose bits are those of `x` (bit `i` is `(x >> i) & 1`).
    #[inline]
    pub const fn from_u128(x: u128) -> Block {
        Block(x)
    }

    /// The block's bits as an integer: where code really works on 128-bit integers.
    #[inline]
    pub const fn as_u128(self) -> u128 {
        self.0
    }

    /// The block of 16 little-endian bytes (the wire's).
    #[inline]
    pub const fn from_le_bytes(bytes: [u8; 16]) -> Block {
        Block(u128::from_le_bytes(bytes))
    }

    /// The block's 16 little-endian bytes (the wire's).
    #[inline]
    pub const fn to_le_bytes(self) -> [u8; 16] {
        self.0.to_le_bytes()
    }

    /// The block of the two 64-bit halves, `low` bits 0..64.
    #[inline]
    pub const fn from_halves(low: u64, high: u64) -> Block {
        Block((high as u128) << 64 | low as u128)
    }

    /// Bits 0..64.
    #[inline]
    pub const fn low_u64(self) -> u64 {
        self.0 as u64
    }

    /// Bits 64..128.
    #[inline]
    pub const fn high_u64(self) -> u64 {
        (self.0 >> 64) as u64
    }

    /// Bit `i` (`i < 128`).
    #[inline]
    pub const fn bit(self, i: usize) -> bool {
        (self.0 >> i) & 1 == 1
    }

    /// The number of bits set (the Hamming weight).
    #[inline]
    pub const fn count_ones(self) -> u32 {
        self.0.count_ones()
    }

    /// The block with only bit `i` set (`i < 128`): the monomial X^i.
    #[inline]
    pub const fn unit(i: usize) -> Block {
        Block(1 << i)
    }

    /// The block whose bits `0..n` are set (`n ≤ 128`).
    #[inline]
    pub const fn low_ones(n: usize) -> Block {
        if n >= 128 {
            Block::ONES
        } else {
            Block((1 << n) - 1)
        }
    }
}

/// The block of a 64-bit integer, zero-extended (a counter, a tweak, a seed).
impl From<u64> for Block {
    #[inline]
    fn from(x: u64) -> Block {
        Block(x as u128)
    }
}

impl fmt::LowerHex for Block {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::LowerHex::fmt(&self.0, f)
    }
}

/// A bitwise operator by value and by reference on either side, and its assigning form.
macro_rules! bitwise {
    ($Op:ident, $op:ident, $OpAssign:ident, $op_assign:ident, $sym:tt) => {
        impl $Op for Block {
            type Output = Block;
            #[inline(always)]
            fn $op(self, o: Block) -> Block {
                Block(self.0 $sym o.0)
            }
        }
        impl $Op<&Block> for Block {
            type Output = Block;
            #[inline(always)]
            fn $op(self, o: &Block) -> Block {
                Block(self.0 $sym o.0)
            }
        }
        impl $Op<Block> for &Block {
            type Output = Block;
            #[inline(always)]
            fn $op(self, o: Block) -> Block {
                Block(self.0 $sym o.0)
            }
        }
        impl $Op<&Block> for &Block {
            type Output = Block;
            #[inline(always)]
            fn $op(self, o: &Block) -> Block {
                Block(self.0 $sym o.0)
            }
        }
        impl $OpAssign for Block {
            #[inline(always)]
            fn $op_assign(&mut self, o: Block) {
                self.0 = self.0 $sym o.0;
            }
        }
        impl $OpAssign<&Block> for Block {
            #[inline(always)]
            fn $op_assign(&mut self, o: &Block) {
                self.0 = self.0 $sym o.0;
            }
        }
    };
}

// Addition in GF(2^128).
bitwise!(BitXor, bitxor, BitXorAssign, bitxor_assign, ^);
bitwise!(BitAnd, bitand, BitAndAssign, bitand_assign, &);
bitwise!(BitOr, bitor, BitOrAssign, bitor_assign, |);

impl Not for Block {
    type Output = Block;
    #[inline(always)]
    fn not(self) -> Block {
        Block(!self.0)
    }
}

/// Multiplication in GF(2^128) ([`super::gf128::mul`]).
impl Mul for Block {
    type Output = Block;
    #[inline]
    fn mul(self, o: Block) -> Block {
        super::gf128::mul(self, o)
    }
}

impl MulAssign for Block {
    #[inline]
    fn mul_assign(&mut self, o: Block) {
        *self = *self * o;
    }
}

/// Bytes of slack [`unpack_row`] may read past the last row.
pub const UNPACK_SLACK: usize = 64;

/// Writes the first `row_bytes` bytes of each row (`w` blocks a row, `row_bytes ≤ 16·w`)
/// back to back into `out`, with fixed-size block copies only.
pub fn pack_rows(rows: &[Block], w: usize, row_bytes: usize, out: &mut Vec<u8>) {
    assert!(row_bytes <= 16 * w && w > 0);
    let n = rows.len() / w;
    // Every byte is written below: only bytes `out` never held are zeroed (callers reuse
    // their frames).
    out.truncate(n * row_bytes + 16 * w);
    out.resize(n * row_bytes + 16 * w, 0);
    for (r, row) in rows.chunks_exact(w).enumerate() {
        // Each row writes 16·w bytes; the next row overwrites the tail past row_bytes.
        for (i, b) in row.iter().enumerate() {
            let at = r * row_bytes + 16 * i;
            out[at..at + 16].copy_from_slice(&b.to_le_bytes());
        }
    }
    out.truncate(n * row_bytes);
}

/// The masks that keep the first `row_bytes` bytes of a `w`-block row.
pub fn row_mask(w: usize, row_bytes: usize) -> Vec<Block> {
    (0..w)
        .map(|i| {
            let bytes = row_bytes.saturating_sub(16 * i).min(16);
            Block::low_ones(8 * bytes)
        })
        .collect()
}

/// Reads row `r` written by [`pack_rows`] from `bytes`, which must extend
/// [`UNPACK_SLACK`] bytes past the packed rows; `mask` comes from [`row_mask`].
#[inline]
pub fn unpack_row(bytes: &[u8], r: usize, row_bytes: usize, mask: &[Block], out: &mut [Block]) {
    for (i, (o, m)) in out.iter_mut().zip(mask).enumerate() {
        let at = r * row_bytes + 16 * i;
        *o = Block::from_le_bytes(bytes[at..at + 16].try_into().expect("16 bytes")) & m;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The named methods are the integer operations they stand for, bit 0 the least
    /// significant, and the wire bytes are little-endian.
    #[test]
    fn named_methods_are_the_integer_view() {
        let x: u128 = 0x0123_4567_89ab_cdef_fedc_ba98_7654_3210;
        let b = Block::from_u128(x);
        assert_eq!(b.as_u128(), x);
        assert_eq!((b.low_u64(), b.high_u64()), (x as u64, (x >> 64) as u64));
        assert_eq!(Block::from_halves(b.low_u64(), b.high_u64()), b);
        assert_eq!(b.to_le_bytes(), x.to_le_bytes());
        assert_eq!(Block::from_le_bytes(x.to_le_bytes()), b);
        assert!((0..128).all(|i| b.bit(i) == ((x >> i) & 1 == 1)));
        assert!((0..128).all(|i| Block::unit(i).as_u128() == 1 << i));
        assert_eq!(Block::low_ones(0), Block::ZERO);
        assert_eq!(Block::low_ones(70).as_u128(), (1 << 70) - 1);
        assert_eq!(Block::low_ones(128), Block::ONES);
        assert_eq!(Block::from(u64::MAX).as_u128(), u64::MAX as u128);
        assert_eq!(b.count_ones(), x.count_ones());
        assert_eq!(format!("{b:040x}"), format!("{x:040x}"));
        // The operators: XOR (the field's addition), AND, OR and NOT of the bits.
        let y = Block::from_u128(!x.rotate_left(5));
        assert_eq!((b ^ y).as_u128(), x ^ y.as_u128());
        assert_eq!((b & y).as_u128(), x & y.as_u128());
        assert_eq!((b | y).as_u128(), x | y.as_u128());
        assert_eq!((!b).as_u128(), !x);
        // By reference too, as loops over slices take them.
        let (mut z, refs) = (b, [b, y]);
        z ^= &refs[1];
        z &= Block::ONES;
        z |= Block::ZERO;
        assert_eq!(z, refs.iter().fold(Block::ZERO, |acc, r| acc ^ r));
    }

    #[test]
    fn pack_then_unpack_keeps_exactly_the_row_bytes() {
        let rows: Vec<Block> = (0..12u128)
            .map(|i| Block::from_u128(i.wrapping_mul(0x9e37_79b9_7f4a_7c15_f39c_c060_5ced_c834)))
            .collect();
        // One buffer for every case, as callers reuse theirs: what it held before (other
        // rows, the 0xff slack) must not show through.
        let mut packed = vec![0xaa; 1000];
        for (w, row_bytes) in [(4, 56), (1, 7), (1, 16), (3, 33), (1, 7)] {
            pack_rows(&rows[..rows.len() / w * w], w, row_bytes, &mut packed);
            assert_eq!(packed.len(), rows.len() / w * row_bytes);
            packed.resize(packed.len() + UNPACK_SLACK, 0xff);
            let mask = row_mask(w, row_bytes);
            let mut out = vec![Block::ZERO; w];
            for (r, row) in rows.chunks_exact(w).enumerate() {
                unpack_row(&packed, r, row_bytes, &mask, &mut out);
                let want: Vec<Block> = row.iter().zip(&mask).map(|(b, m)| b & m).collect();
                assert_eq!(out, want, "w={w} row_bytes={row_bytes} row {r}");
            }
        }
    }
}
