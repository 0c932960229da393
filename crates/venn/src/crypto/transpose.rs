//! Transposition of 128×128 bit matrices, block-wise (Eklundh's recursive swap), never
//! bit by bit.

use super::Block;
#[cfg(target_arch = "x86_64")]
use crate::util::cpu::{self, Feature};

/// The swap masks of rounds `j = 32, 16, …, 1`, per 64-bit half.
const MASKS: [(u32, u64); 6] = [
    (32, 0x0000_0000_ffff_ffff),
    (16, 0x0000_ffff_0000_ffff),
    (8, 0x00ff_00ff_00ff_00ff),
    (4, 0x0f0f_0f0f_0f0f_0f0f),
    (2, 0x3333_3333_3333_3333),
    (1, 0x5555_5555_5555_5555),
];

/// Transposes the 128×128 bit matrix `m` in place: afterwards bit `c` of row `r` is what
/// bit `r` of row `c` was.
///
/// Seven rounds (Eklundh); round `j` swaps the off-diagonal `j×j` sub-blocks of every
/// `2j×2j` block with one masked shift-xor per row pair. Round 64 exchanges 64-bit halves;
/// in rounds `j ≤ 32` no bit crosses a half, so a row is shifted as two 64-bit lanes of one
/// SSE2 register.
pub fn transpose128(m: &mut [Block; 128]) {
    #[cfg(target_arch = "x86_64")]
    {
        if cpu::has(Feature::Avx2) {
            // SAFETY: the feature the function is compiled for was detected (`cpu::has`).
            return unsafe { avx2::transpose128(m) };
        }
        if cpu::has(Feature::Sse2) {
            return sse2::transpose128(m);
        }
    }
    portable_transpose128(m);
}

/// The same transposition in plain integer code (other architectures, and
/// `VENN_CPU=portable`).
fn portable_transpose128(m: &mut [Block; 128]) {
    let m: &mut [u128; 128] = bytemuck::cast_mut(m);
    for r in 0..64 {
        let (a, b) = (m[r], m[r + 64]);
        m[r] = (a as u64 as u128) | (b << 64);
        m[r + 64] = (a >> 64) | ((b >> 64) << 64);
    }
    for (j, mask) in MASKS {
        let (j, mask) = (j as usize, mask as u128 | (mask as u128) << 64);
        for i in (0..128).step_by(2 * j) {
            for r in i..i + j {
                let t = ((m[r] >> j) ^ m[r + j]) & mask;
                m[r + j] ^= t;
                m[r] ^= t << j;
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod sse2 {
    use super::{Block, MASKS};
    use std::arch::x86_64::*;

    pub(super) fn transpose128(m: &mut [Block; 128]) {
        // SAFETY: SSE2 is part of the x86_64 baseline; `Block` and `__m128i` have the same
        // size, and unaligned loads/stores are used throughout.
        unsafe {
            let p = m.as_mut_ptr().cast::<__m128i>();
            for r in 0..64 {
                let (a, b) = (_mm_loadu_si128(p.add(r)), _mm_loadu_si128(p.add(r + 64)));
                _mm_storeu_si128(p.add(r), _mm_unpacklo_epi64(a, b));
                _mm_storeu_si128(p.add(r + 64), _mm_unpackhi_epi64(a, b));
            }
            for (j, mask) in MASKS {
                let shift = _mm_cvtsi32_si128(j as i32);
                let mask = _mm_set1_epi64x(mask as i64);
                let j = j as usize;
                for i in (0..128).step_by(2 * j) {
                    for r in i..i + j {
                        let (x, y) = (_mm_loadu_si128(p.add(r)), _mm_loadu_si128(p.add(r + j)));
                        let t = _mm_and_si128(_mm_xor_si128(_mm_srl_epi64(x, shift), y), mask);
                        _mm_storeu_si128(p.add(r + j), _mm_xor_si128(y, t));
                        _mm_storeu_si128(p.add(r), _mm_xor_si128(x, _mm_sll_epi64(t, shift)));
                    }
                }
            }
        }
    }
}

/// Rounds 64 to 2 on two rows per 256-bit register: for `j ≥ 2` rows r and r + 1 are
/// both in the first half of their `2j×2j` block, so one register holds two rows of one
/// side of a swap; round 1 swaps within a register pair and stays on SSE2.
#[cfg(target_arch = "x86_64")]
mod avx2 {
    use super::{Block, MASKS};
    use std::arch::x86_64::*;

    /// [`super::transpose128`] on AVX2.
    ///
    /// # Safety
    /// The CPU has AVX2.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn transpose128(m: &mut [Block; 128]) {
        let p = m.as_mut_ptr();
        // `load` and `store` take rows r and r + 1 of the 128 of `m` (32 bytes, at any
        // alignment), with r + 1 ≤ 127 at every call below: in round 64, r + 64 + 1 ≤ 127
        // (r even, below 64); in round j ≥ 2, r + j + 1 ≤ i + 2j − 1 ≤ 127 (r even, below
        // i + j, and i a multiple of 2j).
        // SAFETY: the rows are inside `m`, as above.
        let load = |r: usize| unsafe { _mm256_loadu_si256(p.add(r).cast()) };
        // SAFETY: the rows are inside `m`, as above.
        let store = |r: usize, x: __m256i| unsafe { _mm256_storeu_si256(p.add(r).cast(), x) };
        for r in (0..64).step_by(2) {
            let (a, b) = (load(r), load(r + 64));
            store(r, _mm256_unpacklo_epi64(a, b));
            store(r + 64, _mm256_unpackhi_epi64(a, b));
        }
        for &(j, mask) in &MASKS[..5] {
            let shift = _mm_cvtsi32_si128(j as i32);
            let mask = _mm256_set1_epi64x(mask as i64);
            let j = j as usize;
            for i in (0..128).step_by(2 * j) {
                for r in (i..i + j).step_by(2) {
                    let (x, y) = (load(r), load(r + j));
                    let t = _mm256_and_si256(_mm256_xor_si256(_mm256_srl_epi64(x, shift), y), mask);
                    store(r + j, _mm256_xor_si256(y, t));
                    store(r, _mm256_xor_si256(x, _mm256_sll_epi64(t, shift)));
                }
            }
        }
        // Round 1 with immediate shifts over adjacent rows (the SSE2 module's general
        // round loop here made the whole transpose about 1.3 times slower).
        let (_, mask) = MASKS[5];
        let mask = _mm_set1_epi64x(mask as i64);
        let q = p.cast::<__m128i>();
        for r in (0..128).step_by(2) {
            // SAFETY: rows r and r + 1 ≤ 127 of `m`, 16 bytes each, at any alignment.
            let (x, y) = unsafe { (_mm_loadu_si128(q.add(r)), _mm_loadu_si128(q.add(r + 1))) };
            let t = _mm_and_si128(_mm_xor_si128(_mm_srli_epi64::<1>(x), y), mask);
            let (x, y) = (
                _mm_xor_si128(x, _mm_slli_epi64::<1>(t)),
                _mm_xor_si128(y, t),
            );
            // SAFETY: as the loads.
            unsafe {
                _mm_storeu_si128(q.add(r + 1), y);
                _mm_storeu_si128(q.add(r), x);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crypto::Prg;
    use crate::util::cpu::{with_level, Level};

    /// At each level (AVX2, SSE2, portable): the transpose bit by bit, and an involution.
    #[test]
    fn matches_bitwise_transpose() {
        let mut prg = Prg::from_seed(Block::from(7));
        let mut orig = [Block::ZERO; 128];
        prg.fill_blocks(&mut orig);
        for level in Level::ALL {
            let mut m = orig;
            with_level(level, || transpose128(&mut m));
            for (r, row) in m.iter().enumerate() {
                for (c, col) in orig.iter().enumerate() {
                    assert_eq!(row.bit(c), col.bit(r), "{level:?}: bit ({r},{c})");
                }
            }
            with_level(level, || transpose128(&mut m));
            assert_eq!(m, orig, "{level:?}: transpose is an involution");
        }
    }
}
