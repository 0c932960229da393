//! The accumulator on vector registers. Scalar, each position costs a dozen
//! read-modify-writes through memory, each waiting on the previous position's stores, and
//! a mispredicted branch on its bits. Here a window of the next positions (at least 25
//! after each) sits in registers — 512-bit ones with AVX-512 (eight for blocks, fourteen
//! for pairs), fourteen 256-bit ones for blocks with AVX2: a position is broadcast from the
//! first register and XORed into every register under a lane mask of its coefficient bits,
//! branch-free; when the first register's positions are all done it is stored and the next
//! one loaded. The loop is written once ([`window`]) over what a register does
//! ([`Lanes`]). Pairs take the scalar loop with AVX2: their window of 26 registers of
//! 256 bits spills past the sixteen there are, and measured slower than the loop (43 ms
//! against 37 ms for 1.4M pairs on a Sapphire Rapids held to AVX2; blocks 19 ms against
//! 28 ms).

use super::rows::Rows;
use crate::crypto::Block;
#[cfg(target_arch = "x86_64")]
use crate::util::cpu::{has, Feature};

/// Accumulates `x`, symbols of `blocks` blocks, and `bits` if given, from the first
/// position while the window fits in `x` (so without wrapping) on a CPU with AVX-512F
/// or AVX2; returns how many positions are done (0 elsewhere), their rows taken from
/// `rows`, and the bits.
pub(super) fn accumulate<'b>(
    x: &mut [Block],
    blocks: usize,
    rows: &mut Rows,
    mut bits: Option<&'b mut [u64]>,
) -> (usize, Option<&'b mut [u64]>) {
    #[cfg(target_arch = "x86_64")]
    if has(Feature::Avx512f) || has(Feature::Avx2) {
        let bit_window = bits.as_deref_mut().map(BitWindow::new);
        // SAFETY: the features each function is compiled for were detected
        // (`cpu::has`).
        let done = unsafe {
            match (has(Feature::Avx512f), blocks) {
                (true, 1) => on512::<1, 8>(x, rows, bit_window),
                (true, 2) => on512::<2, 14>(x, rows, bit_window),
                (false, 1) => on256::<1, 14>(x, rows, bit_window),
                _ => 0,
            }
        };
        return (done, bits);
    }
    let _ = (x, blocks, rows);
    (0, bits)
}

/// The bits' side of the window: a position's row added under a mask of its own bit,
/// branch-free, in two words held in registers (the position in the first), on the
/// scalar ports while the vector ones add the symbols. Its chain (a shift, an AND, a
/// negation, an AND and an XOR) is far shorter than a position's vector work.
#[cfg(target_arch = "x86_64")]
struct BitWindow<'b> {
    words: &'b mut [u64],
    /// The first word's index: `lo` and `hi` stand for `words[at]` and `words[at + 1]`.
    at: usize,
    lo: u64,
    hi: u64,
}

#[cfg(target_arch = "x86_64")]
impl<'b> BitWindow<'b> {
    fn new(words: &'b mut [u64]) -> BitWindow<'b> {
        let (lo, hi) = (words[0], words.get(1).copied().unwrap_or(0));
        BitWindow {
            words,
            at: 0,
            lo,
            hi,
        }
    }

    /// Position `p` (the one after the last added) added into the positions its `row`
    /// (with the 25th's bit) picks, all before the slice's end.
    #[inline(always)]
    fn add(&mut self, p: usize, row: u64) {
        let mut s = p - 64 * self.at;
        if s == 64 {
            self.words[self.at] = self.lo;
            self.at += 1;
            self.lo = self.hi;
            self.hi = self.words.get(self.at + 1).copied().unwrap_or(0);
            s = 0;
        }
        let mask = ((self.lo >> s) & 1).wrapping_neg();
        let targets = u128::from(row) << (s + 1);
        self.lo ^= targets as u64 & mask;
        self.hi ^= (targets >> 64) as u64 & mask;
    }

    /// The words held back written.
    fn finish(self) {
        self.words[self.at] = self.lo;
        if let Some(hi) = self.words.get_mut(self.at + 1) {
            *hi = self.hi;
        }
    }
}

/// What the window needs of a register of `LANES` 64-bit lanes. Each function is
/// `unsafe`: the CPU has the features of the intrinsics it calls, which the caller
/// ([`on512`], [`on256`]) is compiled for, and inlined into; the pointer given to
/// [`Lanes::load`] or [`Lanes::store`] is valid for `LANES / 2` blocks.
#[cfg(target_arch = "x86_64")]
trait Lanes: Copy {
    const LANES: usize;
    /// The register from memory, and back.
    unsafe fn load(p: *const Block) -> Self;
    unsafe fn store(self, p: *mut Block);
    /// An index vector for [`Lanes::permute`]: lane l from lane `from[l]`.
    unsafe fn index(from: [usize; 8]) -> Self;
    /// The lanes of `self` picked by `index`.
    unsafe fn permute(self, index: Self) -> Self;
    /// The selector of a register whose lane l is bit `bit[l]` of a position's targets.
    unsafe fn select(bit: [usize; 8]) -> Self;
    /// The targets `t` in every lane.
    unsafe fn splat(t: u64) -> Self;
    /// `self`, with `x` XORed into the lanes whose bit of `targets` (as `select` names
    /// it) is set.
    unsafe fn xor_where(self, targets: Self, select: Self, x: Self) -> Self;
}

#[cfg(target_arch = "x86_64")]
impl Lanes for std::arch::x86_64::__m512i {
    const LANES: usize = 8;
    #[inline(always)]
    unsafe fn load(p: *const Block) -> Self {
        // SAFETY: AVX-512F (the trait's contract); `p` is valid for reading 4 blocks, the
        // load's 64 bytes (the caller's), at any alignment.
        unsafe { std::arch::x86_64::_mm512_loadu_si512(p.cast()) }
    }
    #[inline(always)]
    unsafe fn store(self, p: *mut Block) {
        // SAFETY: AVX-512F; `p` is valid for writing 4 blocks (the caller's); unaligned.
        unsafe { std::arch::x86_64::_mm512_storeu_si512(p.cast(), self) }
    }
    #[inline(always)]
    unsafe fn index(from: [usize; 8]) -> Self {
        // SAFETY: AVX-512F; the array is the 64 bytes the load reads.
        unsafe { std::arch::x86_64::_mm512_loadu_si512(from.map(|l| l as i64).as_ptr().cast()) }
    }
    #[inline(always)]
    unsafe fn permute(self, index: Self) -> Self {
        // SAFETY: AVX-512F (the trait's contract).
        unsafe { std::arch::x86_64::_mm512_permutexvar_epi64(index, self) }
    }
    /// Lane l holds 2^bit[l], tested against the targets (VPTESTMQ).
    #[inline(always)]
    unsafe fn select(bit: [usize; 8]) -> Self {
        // SAFETY: AVX-512F; the array is the 64 bytes the load reads.
        unsafe { std::arch::x86_64::_mm512_loadu_si512(bit.map(|b| 1i64 << b).as_ptr().cast()) }
    }
    #[inline(always)]
    unsafe fn splat(t: u64) -> Self {
        // SAFETY: AVX-512F (the trait's contract).
        unsafe { std::arch::x86_64::_mm512_set1_epi64(t as i64) }
    }
    #[inline(always)]
    unsafe fn xor_where(self, targets: Self, select: Self, x: Self) -> Self {
        // SAFETY: AVX-512F (the trait's contract).
        unsafe {
            use std::arch::x86_64::*;
            let mask = _mm512_test_epi64_mask(targets, select);
            _mm512_mask_xor_epi64(self, mask, self, x)
        }
    }
}

#[cfg(target_arch = "x86_64")]
impl Lanes for std::arch::x86_64::__m256i {
    const LANES: usize = 4;
    #[inline(always)]
    unsafe fn load(p: *const Block) -> Self {
        // SAFETY: AVX2 (the trait's contract); `p` is valid for reading 2 blocks, the load's
        // 32 bytes (the caller's), at any alignment.
        unsafe { std::arch::x86_64::_mm256_loadu_si256(p.cast()) }
    }
    #[inline(always)]
    unsafe fn store(self, p: *mut Block) {
        // SAFETY: AVX2; `p` is valid for writing 2 blocks (the caller's); unaligned.
        unsafe { std::arch::x86_64::_mm256_storeu_si256(p.cast(), self) }
    }
    /// 32-bit indices (VPERMD): lane l's two halves from lane `from[l]`'s.
    #[inline(always)]
    unsafe fn index(from: [usize; 8]) -> Self {
        // SAFETY: AVX2; `halves` is the 32 bytes the load reads.
        unsafe {
            let halves: [i32; 8] = std::array::from_fn(|i| (2 * from[i / 2] + i % 2) as i32);
            std::arch::x86_64::_mm256_loadu_si256(halves.as_ptr().cast())
        }
    }
    #[inline(always)]
    unsafe fn permute(self, index: Self) -> Self {
        // SAFETY: AVX2 (the trait's contract).
        unsafe { std::arch::x86_64::_mm256_permutevar8x32_epi32(self, index) }
    }
    /// Lane l holds 2^bit[l], compared with itself ANDed with the targets (VPCMPEQQ).
    #[inline(always)]
    unsafe fn select(bit: [usize; 8]) -> Self {
        // SAFETY: AVX2; `lanes` is the 32 bytes the load reads.
        unsafe {
            let lanes: [i64; 4] = std::array::from_fn(|l| 1 << bit[l]);
            std::arch::x86_64::_mm256_loadu_si256(lanes.as_ptr().cast())
        }
    }
    #[inline(always)]
    unsafe fn splat(t: u64) -> Self {
        // SAFETY: AVX2 (the trait's contract).
        unsafe { std::arch::x86_64::_mm256_set1_epi64x(t as i64) }
    }
    #[inline(always)]
    unsafe fn xor_where(self, targets: Self, select: Self, x: Self) -> Self {
        // SAFETY: AVX2 (the trait's contract).
        unsafe {
            use std::arch::x86_64::*;
            let mask = _mm256_cmpeq_epi64(_mm256_and_si256(targets, select), select);
            _mm256_xor_si256(self, _mm256_and_si256(mask, x))
        }
    }
}

/// [`window`] on 512-bit registers.
///
/// # Safety
/// The CPU has AVX-512F.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn on512<const S: usize, const R: usize>(
    x: &mut [Block],
    rows: &mut Rows,
    bits: Option<BitWindow>,
) -> usize {
    // SAFETY: AVX-512F, all `__m512i`'s functions need (this function's contract).
    unsafe { window::<std::arch::x86_64::__m512i, S, R>(x, rows, bits) }
}

/// [`window`] on 256-bit registers.
///
/// # Safety
/// The CPU has AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn on256<const S: usize, const R: usize>(
    x: &mut [Block],
    rows: &mut Rows,
    bits: Option<BitWindow>,
) -> usize {
    // SAFETY: AVX2, all `__m256i`'s functions need (this function's contract).
    unsafe { window::<std::arch::x86_64::__m256i, S, R>(x, rows, bits) }
}

/// [`accumulate`] for symbols of `S` blocks, `per` = `LANES/(2S)` a register, in a
/// window of `R` registers: enough that the last position of the first register
/// reaches its 25th.
///
/// # Safety
/// The CPU has what `V`'s functions need.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn window<V: Lanes, const S: usize, const R: usize>(
    x: &mut [Block],
    rows: &mut Rows,
    mut bits: Option<BitWindow>,
) -> usize {
    use super::ACCUMULATOR;
    let per = V::LANES / (2 * S);
    let window = R * per;
    assert!(window > per + ACCUMULATOR && window <= 64);
    let len = x.len() / S;
    if len < window + per {
        return 0;
    }
    let x = x.as_mut_ptr();
    // Symbol p, for p ≤ `len` at every use below: inside `x`, or just past its end.
    // SAFETY: `p·S ≤ x.len()`, as said.
    let at = |p: usize| unsafe { x.add(p * S) };
    // Symbol o's 64-bit lanes, repeated over the register.
    let lanes: [V; 4] = std::array::from_fn(|o| {
        let from = std::array::from_fn(|l| (2 * S * o + l % (2 * S)) % V::LANES);
        // SAFETY: the CPU has `V`'s features (the caller's contract).
        unsafe { V::index(from) }
    });
    // Lane l of register r belongs to the symbol at base + r·per + l/(2S).
    let select: [V; R] = std::array::from_fn(|r| {
        let bits = std::array::from_fn(|l| r * per + l / (2 * S));
        // SAFETY: the CPU has `V`'s features (the caller's contract).
        unsafe { V::select(bits) }
    });
    // Register r of the window holds the `per` symbols (`LANES / 2` blocks) from
    // `base + r·per`, inside `x` while `base + window ≤ len`, which the loop keeps.
    // SAFETY: `V`'s features (the caller's contract); `base` is 0, `window < len`.
    let mut w: [V; R] = std::array::from_fn(|r| unsafe { V::load(at(r * per)) });
    let mut base = 0;
    while base + window + per <= len {
        for (o, lanes) in lanes.iter().enumerate().take(per) {
            // Bit p of `targets`: the symbol at base + p gets this one.
            let row = rows.next() | 1 << ACCUMULATOR;
            if let Some(bits) = &mut bits {
                bits.add(base + o, row);
            }
            // SAFETY: the CPU has `V`'s features (the caller's contract).
            unsafe {
                let targets = V::splat(row << (o + 1));
                let xo = w[0].permute(*lanes);
                for (w, select) in w.iter_mut().zip(&select) {
                    *w = w.xor_where(targets, *select, xo);
                }
            }
        }
        // SAFETY: `V`'s features; register 0 at `base`, and the next one after the
        // window's, at `base + window`, both inside `x` (`base + window + per ≤ len`).
        let last = unsafe {
            w[0].store(at(base));
            V::load(at(base + window))
        };
        w = std::array::from_fn(|r| if r + 1 < R { w[r + 1] } else { last });
        base += per;
    }
    for (r, w) in w.iter().enumerate() {
        // SAFETY: `V`'s features; the window's registers, inside `x` (`base + window ≤
        // len` when the loop ends).
        unsafe { w.store(at(base + r * per)) };
    }
    if let Some(bits) = bits {
        bits.finish();
    }
    base
}
