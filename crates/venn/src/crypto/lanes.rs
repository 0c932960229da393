//! Vectors of 128-bit lanes, each a block: what the kernels that keep blocks in registers
//! need of them — moves and XOR ([`Lanes`]), the AES rounds (VAES: the GGM and half-tree
//! levels) and carry-less products (VPCLMULQDQ: GF(2^128), [`super::gf128`]) — written
//! once for 512-bit registers (AVX-512F) and 256-bit ones (AVX2), so that one loop serves
//! both.
//!
//! Every function is `unsafe`: the CPU has the features of the intrinsics it calls (AVX-512F
//! or AVX2, and VAES or VPCLMULQDQ for those), and the caller is compiled for them
//! (`#[target_feature]`) and inlines it.

#![cfg(target_arch = "x86_64")]

use super::Block;
use std::arch::x86_64::*;

/// A vector of [`Lanes::BLOCKS`] blocks.
///
/// # Safety
/// Every method needs the CPU features of its intrinsics: AVX-512F (`__m512i`) or AVX2
/// (`__m256i`), with VAES for the AES rounds and VPCLMULQDQ for [`Lanes::clmul`]. A pointer
/// argument is valid for [`Lanes::BLOCKS`] blocks ([`Lanes::each_twice`]: half as many),
/// at any alignment.
pub(crate) trait Lanes: Copy {
    const BLOCKS: usize;
    unsafe fn load(p: *const Block) -> Self;
    unsafe fn store(self, p: *mut Block);
    unsafe fn zero() -> Self;
    /// Lane l from `lanes[l]` (the first [`Lanes::BLOCKS`] of them).
    unsafe fn from_blocks(lanes: [Block; 4]) -> Self;
    /// `b` in every lane.
    unsafe fn splat(b: &Block) -> Self;
    /// The 64-bit word `w` in every word.
    unsafe fn splat64(w: i64) -> Self;
    /// The `BLOCKS / 2` blocks at `p`, each twice: (a, a, b, b).
    unsafe fn each_twice(p: *const Block) -> Self;
    unsafe fn xor(self, o: Self) -> Self;
    /// The carry-less product of a word of each lane of `self` and `o` (VPCLMULQDQ:
    /// bit 0 of `IMM` picks `self`'s, bit 4 `o`'s).
    unsafe fn clmul<const IMM: i32>(self, o: Self) -> Self;
    /// Each lane's low words of `self` and `o` (VPUNPCKLQDQ), and high words.
    unsafe fn unpack_lo(self, o: Self) -> Self;
    unsafe fn unpack_hi(self, o: Self) -> Self;
    /// One AES round under the round key in `key`'s lanes, and the last round.
    unsafe fn aesenc(self, key: Self) -> Self;
    unsafe fn aesenclast(self, key: Self) -> Self;
    /// Each lane's two 64-bit halves swapped.
    unsafe fn swap_halves(self) -> Self;
    /// Each lane's high half, its low half zeroed.
    unsafe fn high_only(self) -> Self;
    /// The lanes, in order (zero past [`Lanes::BLOCKS`]).
    unsafe fn blocks(self) -> [Block; 4] {
        let mut out = [Block::ZERO; 4];
        // SAFETY: `out` is 4 blocks, as many as `store` writes or more; the CPU's features
        // are the caller's contract.
        unsafe { self.store(out.as_mut_ptr()) };
        out
    }
}

/// The AES-128 encryption of each lane under the round keys `keys` (each its own vector,
/// from [`Lanes::from_blocks`]), for `N` vectors side by side: the rounds interleaved to
/// hide their latency.
///
/// # Safety
/// The CPU has what `V`'s AES rounds need (see [`Lanes`]).
#[inline(always)]
pub(crate) unsafe fn encrypt<V: Lanes, const N: usize>(x: [V; N], keys: &[V; 11]) -> [V; N] {
    // SAFETY: the CPU has what `V`'s AES rounds need (the caller's contract).
    unsafe {
        let mut s = x.map(|x| x.xor(keys[0]));
        for key in &keys[1..10] {
            for s in s.iter_mut() {
                *s = s.aesenc(*key);
            }
        }
        s.map(|s| s.aesenclast(keys[10]))
    }
}

impl Lanes for __m512i {
    const BLOCKS: usize = 4;
    #[inline(always)]
    unsafe fn load(p: *const Block) -> Self {
        // SAFETY: AVX-512F (the trait's contract); `p` is valid for reading 4 blocks (the
        // caller's), and the load takes any alignment.
        unsafe { _mm512_loadu_si512(p.cast()) }
    }
    #[inline(always)]
    unsafe fn store(self, p: *mut Block) {
        // SAFETY: AVX-512F; `p` is valid for writing 4 blocks (the caller's); unaligned.
        unsafe { _mm512_storeu_si512(p.cast(), self) }
    }
    #[inline(always)]
    unsafe fn zero() -> Self {
        // SAFETY: AVX-512F (the trait's contract).
        unsafe { _mm512_setzero_si512() }
    }
    #[inline(always)]
    unsafe fn from_blocks(lanes: [Block; 4]) -> Self {
        // SAFETY: AVX-512F; `lanes` is the 4 blocks `load` reads.
        unsafe { Self::load(lanes.as_ptr()) }
    }
    #[inline(always)]
    unsafe fn each_twice(p: *const Block) -> Self {
        // SAFETY: AVX-512F; `p` is valid for reading `BLOCKS / 2` = 2 blocks (the
        // caller's), the 256-bit load's, unaligned.
        unsafe {
            let two = _mm256_loadu_si256(p.cast());
            _mm512_permutexvar_epi64(
                _mm512_set_epi64(3, 2, 3, 2, 1, 0, 1, 0),
                _mm512_castsi256_si512(two),
            )
        }
    }
    #[inline(always)]
    unsafe fn xor(self, o: Self) -> Self {
        // SAFETY: AVX-512F (the trait's contract).
        unsafe { _mm512_xor_si512(self, o) }
    }
    #[inline(always)]
    unsafe fn aesenc(self, key: Self) -> Self {
        // SAFETY: AVX-512F and VAES (the trait's contract for the AES rounds).
        unsafe { _mm512_aesenc_epi128(self, key) }
    }
    #[inline(always)]
    unsafe fn aesenclast(self, key: Self) -> Self {
        // SAFETY: AVX-512F and VAES (the trait's contract for the AES rounds).
        unsafe { _mm512_aesenclast_epi128(self, key) }
    }
    #[inline(always)]
    unsafe fn swap_halves(self) -> Self {
        // SAFETY: AVX-512F (the trait's contract).
        unsafe { _mm512_shuffle_epi32::<_MM_PERM_BADC>(self) }
    }
    #[inline(always)]
    unsafe fn high_only(self) -> Self {
        // SAFETY: AVX-512F (the trait's contract).
        unsafe { _mm512_unpackhi_epi64(_mm512_setzero_si512(), self) }
    }
    #[inline(always)]
    unsafe fn splat(b: &Block) -> Self {
        // SAFETY: AVX-512F; `b` is a reference to 16 bytes, the 128-bit load's, unaligned.
        unsafe { _mm512_broadcast_i32x4(_mm_loadu_si128((b as *const Block).cast())) }
    }
    #[inline(always)]
    unsafe fn splat64(w: i64) -> Self {
        // SAFETY: AVX-512F (the trait's contract).
        unsafe { _mm512_set1_epi64(w) }
    }
    #[inline(always)]
    unsafe fn clmul<const IMM: i32>(self, o: Self) -> Self {
        // SAFETY: AVX-512F and VPCLMULQDQ (the trait's contract for products).
        unsafe { _mm512_clmulepi64_epi128::<IMM>(self, o) }
    }
    #[inline(always)]
    unsafe fn unpack_lo(self, o: Self) -> Self {
        // SAFETY: AVX-512F (the trait's contract).
        unsafe { _mm512_unpacklo_epi64(self, o) }
    }
    #[inline(always)]
    unsafe fn unpack_hi(self, o: Self) -> Self {
        // SAFETY: AVX-512F (the trait's contract).
        unsafe { _mm512_unpackhi_epi64(self, o) }
    }
}

impl Lanes for __m256i {
    const BLOCKS: usize = 2;
    #[inline(always)]
    unsafe fn load(p: *const Block) -> Self {
        // SAFETY: AVX2 (the trait's contract); `p` is valid for reading 2 blocks (the
        // caller's), and the load takes any alignment.
        unsafe { _mm256_loadu_si256(p.cast()) }
    }
    #[inline(always)]
    unsafe fn store(self, p: *mut Block) {
        // SAFETY: AVX2; `p` is valid for writing 2 blocks (the caller's); unaligned.
        unsafe { _mm256_storeu_si256(p.cast(), self) }
    }
    #[inline(always)]
    unsafe fn zero() -> Self {
        // SAFETY: AVX2 (the trait's contract).
        unsafe { _mm256_setzero_si256() }
    }
    #[inline(always)]
    unsafe fn from_blocks(lanes: [Block; 4]) -> Self {
        // SAFETY: AVX2; `lanes` holds the 2 blocks `load` reads (and 2 more).
        unsafe { Self::load(lanes.as_ptr()) }
    }
    #[inline(always)]
    unsafe fn each_twice(p: *const Block) -> Self {
        // SAFETY: AVX2; `p` is valid for reading `BLOCKS / 2` = 1 block (the caller's),
        // the 128-bit load's, unaligned.
        unsafe { _mm256_broadcastsi128_si256(_mm_loadu_si128(p.cast())) }
    }
    #[inline(always)]
    unsafe fn xor(self, o: Self) -> Self {
        // SAFETY: AVX2 (the trait's contract).
        unsafe { _mm256_xor_si256(self, o) }
    }
    #[inline(always)]
    unsafe fn aesenc(self, key: Self) -> Self {
        // SAFETY: AVX2 and VAES (the trait's contract for the AES rounds).
        unsafe { _mm256_aesenc_epi128(self, key) }
    }
    #[inline(always)]
    unsafe fn aesenclast(self, key: Self) -> Self {
        // SAFETY: AVX2 and VAES (the trait's contract for the AES rounds).
        unsafe { _mm256_aesenclast_epi128(self, key) }
    }
    #[inline(always)]
    unsafe fn swap_halves(self) -> Self {
        // SAFETY: AVX2 (the trait's contract).
        unsafe { _mm256_shuffle_epi32::<0b01_00_11_10>(self) }
    }
    #[inline(always)]
    unsafe fn high_only(self) -> Self {
        // SAFETY: AVX2 (the trait's contract).
        unsafe { _mm256_unpackhi_epi64(_mm256_setzero_si256(), self) }
    }
    #[inline(always)]
    unsafe fn splat(b: &Block) -> Self {
        // SAFETY: AVX2; `b` is a reference to 16 bytes, the 128-bit load's, unaligned.
        unsafe { _mm256_broadcastsi128_si256(_mm_loadu_si128((b as *const Block).cast())) }
    }
    #[inline(always)]
    unsafe fn splat64(w: i64) -> Self {
        // SAFETY: AVX2 (the trait's contract).
        unsafe { _mm256_set1_epi64x(w) }
    }
    #[inline(always)]
    unsafe fn clmul<const IMM: i32>(self, o: Self) -> Self {
        // SAFETY: AVX2 and VPCLMULQDQ (the trait's contract for products).
        unsafe { _mm256_clmulepi64_epi128::<IMM>(self, o) }
    }
    #[inline(always)]
    unsafe fn unpack_lo(self, o: Self) -> Self {
        // SAFETY: AVX2 (the trait's contract).
        unsafe { _mm256_unpacklo_epi64(self, o) }
    }
    #[inline(always)]
    unsafe fn unpack_hi(self, o: Self) -> Self {
        // SAFETY: AVX2 (the trait's contract).
        unsafe { _mm256_unpackhi_epi64(self, o) }
    }
}
