//! The expand-convolute code of Raghuraman–Rindal–Tanguy (RRT23, Crypto 2023, §4: "ExConv
//! 7x24"), the linear code whose dual compresses the PCG's sparse noise into pseudorandom
//! VOLE outputs (dual LPN; BCGIKRS19). Never Silver: RRT23 found low-weight codewords in it.
//!
//! Dual-encoding a vector e of length N = 2n: the parity half e[n..N) is accumulated twice —
//! each position, in order, added into the next 24 positions picked by 24 pseudorandom
//! bits and always into the 25th (cyclically) — and then each output e[i], i < n, gets the
//! sum of 7 positions of the accumulated half: one in each quarter (the regular part) and 3
//! anywhere. About 31 additions of 16 bytes an output. The code is public: its
//! coefficients come from an AES-CTR stream under a fixed seed (advanced per use by the
//! caller), as libOTe's do from its own.

use crate::crypto::{Block, Prg};
use rayon::prelude::*;
use std::ops::{BitXor, BitXorAssign};

/// What a code adds: a block, or two blocks side by side ([`Pair`]) that share the code's
/// positions — the receiver's noise and its PPRF outputs, whose random reads then share
/// their cache lines.
pub trait Symbol: Copy + Default + BitXor<Output = Self> + BitXorAssign + Send + Sync {
    /// Blocks in a symbol: the SIMD paths move whole blocks.
    const BLOCKS: usize;

    /// The blocks of `s`, in order.
    fn blocks_mut(s: &mut [Self]) -> &mut [Block];
}

impl Symbol for Block {
    const BLOCKS: usize = 1;

    fn blocks_mut(s: &mut [Block]) -> &mut [Block] {
        s
    }
}

/// Two blocks encoded together.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C, align(32))]
pub struct Pair(pub Block, pub Block);

impl BitXor for Pair {
    type Output = Pair;
    #[inline(always)]
    fn bitxor(self, o: Pair) -> Pair {
        Pair(self.0 ^ o.0, self.1 ^ o.1)
    }
}

impl BitXorAssign for Pair {
    #[inline(always)]
    fn bitxor_assign(&mut self, o: Pair) {
        *self = *self ^ o;
    }
}

impl Symbol for Pair {
    const BLOCKS: usize = 2;

    fn blocks_mut(s: &mut [Pair]) -> &mut [Block] {
        // SAFETY: a `Pair` is two `Block`s with no padding (`repr(C)`, 32 bytes, aligned
        // more strictly than a block), and any bits are a valid block: the same memory,
        // borrowed as mutably and for as long, is `2·len` blocks.
        unsafe { std::slice::from_raw_parts_mut(s.as_mut_ptr().cast::<Block>(), 2 * s.len()) }
    }
}

/// Positions after each one that it may be added into (besides the always-taken 25th).
const ACCUMULATOR: usize = 24;
/// Accumulated positions summed into each output: `REGULAR` one per equal part, the rest
/// anywhere.
const EXPANDER: usize = 7;
const REGULAR: usize = 4;

/// The code for `n` outputs from `2n` inputs, under a public seed.
#[derive(Clone, Copy, Debug)]
pub struct ExConv {
    n: usize,
    seed: Block,
}

impl ExConv {
    /// The code compressing 2`n` noise positions into `n` outputs, for `n` of at least
    /// [`ExConv::MIN_OUTPUTS`] (shorter, the accumulator would wrap onto the position it
    /// adds).
    pub fn new(n: usize, seed: Block) -> ExConv {
        assert!(n >= Self::MIN_OUTPUTS, "an ExConv code of {n} outputs");
        ExConv { n, seed }
    }

    /// The fewest outputs a code has.
    pub const MIN_OUTPUTS: usize = ACCUMULATOR + 2;

    /// Inputs the code takes (N = 2n).
    pub fn inputs(&self) -> usize {
        2 * self.n
    }

    /// Dual-encodes `e` (N long) in place; its first n positions are the result.
    pub fn dual_encode<T: Symbol>(&self, e: &mut [T]) {
        assert_eq!(e.len(), self.inputs());
        let (out, parity) = e.split_at_mut(self.n);
        self.accumulate(parity);
        self.expand(parity, out);
    }

    /// [`dual_encode`]'s first step, on the parity half `e[n..N)` alone: its two
    /// accumulations, serial (each position waits on the ones before it), so that a
    /// caller can run them beside other work — the VOLE beside the trees of the first half.
    ///
    /// [`dual_encode`]: ExConv::dual_encode
    pub fn accumulate<T: Symbol>(&self, parity: &mut [T]) {
        assert_eq!(parity.len(), self.n);
        accumulate(parity, None, self.seed);
        accumulate(parity, None, !self.seed);
    }

    /// [`dual_encode`]'s second step: `out` (`e[0..n)`) gets the accumulated `parity`'s
    /// positions added in; on the rayon pool.
    ///
    /// [`dual_encode`]: ExConv::dual_encode
    pub fn expand<T: Symbol>(&self, parity: &[T], out: &mut [T]) {
        assert_eq!((parity.len(), out.len()), (self.n, self.n));
        expand(parity, out, None, self.seed ^ 0xcc);
    }

    /// [`ExConv::accumulate`] on blocks and on a vector of bits at once (a correlated OT's
    /// noise: its choice bits, encoded beside its blocks), bit i of the parity half in bit
    /// i % 64 of word i / 64. Both take each position's coefficients from one draw, and
    /// where the blocks' vector window runs, the bits' serial chain runs on the scalar
    /// ports beside it, hidden under the vector work.
    pub fn accumulate_with_bits<T: Symbol>(&self, parity: &mut [T], parity_bits: &mut [u64]) {
        assert_eq!(parity.len(), self.n);
        assert_eq!(parity_bits.len(), self.n.div_ceil(64));
        accumulate(parity, Some(&mut *parity_bits), self.seed);
        accumulate(parity, Some(parity_bits), !self.seed);
    }

    /// [`ExConv::expand`] on blocks and on bits at once (each output's positions drawn
    /// once for both): `out` and `out_bits` get the positions of `parity` and of
    /// `parity_bits` (bits as in [`ExConv::accumulate_with_bits`]) added in.
    pub fn expand_with_bits<T: Symbol>(
        &self,
        parity: &[T],
        out: &mut [T],
        parity_bits: &[u64],
        out_bits: &mut [u64],
    ) {
        assert_eq!((parity.len(), out.len()), (self.n, self.n));
        let words = self.n.div_ceil(64);
        assert_eq!((parity_bits.len(), out_bits.len()), (words, words));
        expand(parity, out, Some((parity_bits, out_bits)), self.seed ^ 0xcc);
    }
}

/// Each position, in order, added into the following ones its 24 coefficient bits pick,
/// and into the 25th after it (all cyclically); the same for the `x.len()` bits of `bits`,
/// if given, under the same coefficients. The vector window ([`wide`]) takes the positions
/// while its registers fit in `x`; the loop below the rest (the wrap), or all of them on
/// other CPUs (the bits then by [`accumulate_bits`]).
fn accumulate<T: Symbol>(x: &mut [T], bits: Option<&mut [u64]>, seed: Block) {
    let mut rows = Rows::new(seed);
    let len = x.len();
    let (done, mut bits) = wide::accumulate(T::blocks_mut(x), T::BLOCKS, &mut rows, bits);
    if done == 0 {
        // No window ran: the bits by their own word window, under rows of their own draw.
        if let Some(bits) = bits.take() {
            accumulate_bits(bits, len, seed);
        }
    }
    let full = len.saturating_sub(ACCUMULATOR + 1);
    for i in done..len {
        let xi = x[i];
        let row = rows.next();
        if i < full {
            // No wrap: the 25 positions after i lie in the slice.
            let next = &mut x[i + 1..i + 2 + ACCUMULATOR];
            let mut set = row;
            while set != 0 {
                next[set.trailing_zeros() as usize] ^= xi;
                set &= set - 1;
            }
            next[ACCUMULATOR] ^= xi;
        } else {
            for k in 0..ACCUMULATOR {
                if (row >> k) & 1 == 1 {
                    x[(i + 1 + k) % len] ^= xi;
                }
            }
            x[(i + 1 + ACCUMULATOR) % len] ^= xi;
        }
        // The positions past the window: their bits by the definition.
        if let Some(bits) = bits.as_deref_mut() {
            add_bit(bits, len, i, row | 1 << ACCUMULATOR);
        }
    }
}

/// [`accumulate`] on the `len` bits of `x`. While a position's 25 targets lie ahead of it
/// (no wrap), two words sit in a register and each position adds its row under a mask of
/// its own bit, branch-free; the rest by the definition.
fn accumulate_bits(x: &mut [u64], len: usize, seed: Block) {
    let mut rows = Rows::new(seed);
    // Whole words whose every position's targets end before `len`: the last position of
    // word w reaches 64w + 63 + 25 < len, inside word w + 1.
    let words = (len.saturating_sub(ACCUMULATOR + 1) / 64).min(x.len().saturating_sub(1));
    if words > 0 {
        // The window's two words: position o of `lo` is the one being added.
        let (mut lo, mut hi) = (x[0], x[1]);
        let mut word_rows = [0; 64];
        for w in 0..words {
            word_rows
                .iter_mut()
                .for_each(|r| *r = rows.next() | 1 << ACCUMULATOR);
            for (o, &row) in word_rows.iter().enumerate() {
                let row = u128::from(row) << (o + 1);
                // All ones if the bit at o is set (its bit moved to the top, then spread):
                // the loop's critical path is this, an AND and an XOR.
                let mask = ((lo << (63 - o)) as i64 >> 63) as u64;
                lo ^= row as u64 & mask;
                hi ^= (row >> 64) as u64 & mask;
            }
            x[w] = lo;
            x[w + 1] = hi;
            (lo, hi) = (hi, x.get(w + 2).copied().unwrap_or(0));
        }
    }
    for i in 64 * words..len {
        add_bit(x, len, i, rows.next() | 1 << ACCUMULATOR);
    }
}

/// Bit `i` of the `len` bits of `x`, if set, added into the positions its `row` (with the
/// 25th's bit) picks after it, cyclically: the accumulator's definition, for the few
/// positions no window takes.
fn add_bit(x: &mut [u64], len: usize, i: usize, row: u64) {
    if (x[i / 64] >> (i % 64)) & 1 == 1 {
        for k in (0..=ACCUMULATOR).filter(|k| (row >> k) & 1 == 1) {
            let j = (i + 1 + k) % len;
            x[j / 64] ^= 1 << (j % 64);
        }
    }
}

/// The accumulator's coefficient rows, in order: row i is 24 bits of an AES-CTR stream
/// (bits 0..24 and 24..48 of each 64-bit word; the top 16 unused).
struct Rows {
    stream: Prg,
    blocks: [Block; Rows::BATCH],
    next: usize,
}

impl Rows {
    /// Stream blocks drawn at a time (four rows each).
    const BATCH: usize = 64;

    fn new(seed: Block) -> Rows {
        Rows {
            stream: Prg::from_seed(seed),
            blocks: [0; Rows::BATCH],
            next: 4 * Rows::BATCH,
        }
    }

    /// The next row.
    #[inline(always)]
    fn next(&mut self) -> u64 {
        if self.next == 4 * Rows::BATCH {
            self.stream.fill_blocks(&mut self.blocks);
            self.next = 0;
        }
        let i = self.next;
        self.next += 1;
        let word = (self.blocks[i / 4] >> (64 * (i / 2 % 2))) as u64;
        (word >> (ACCUMULATOR * (i % 2))) & ((1 << ACCUMULATOR) - 1)
    }
}

/// The accumulator on vector registers. Scalar, each position costs a dozen
/// read-modify-writes through memory, each waiting on the previous position's stores, and
/// a mispredicted branch on its bits. Here a window of the next positions (at least 25
/// after each) sits in registers — 512-bit ones with AVX-512 (eight for blocks, fourteen
/// for pairs), fourteen 256-bit ones for blocks with AVX2: a position is broadcast from the
/// first register and XORed into every register under a lane mask of its coefficient bits,
/// branch-free; when the first register's positions are all done it is stored and the next
/// one loaded. The loop is written once ([`window`]) over what a register does
/// ([`Lanes`]). Pairs take the scalar loop with AVX2: their window of 26 registers of
/// 256 bits spills past the sixteen there are, and measured slower than the loop (43 ms
/// against 37 ms for 1.4M pairs on a Sapphire Rapids held to AVX2; blocks 19 ms against
/// 28 ms).
mod wide {
    use super::{Block, Rows};
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
}

/// `out[i] ^=` the sum of `EXPANDER` positions of `parity` (one in each of `REGULAR` equal
/// parts, the rest anywhere), for every i.
///
/// The parity half is n symbols (22 MB of blocks at n = 1.4M), so each read is a miss: the
/// positions are drawn a batch of outputs ahead and each output's lines asked for into the
/// second-level cache `AHEAD` outputs before they are summed. Huge pages under `parity`
/// (see [`crate::util::memory::huge_vec`]) save most of the TLB misses: about a third of the time.
/// Bits encoded beside the symbols: the parity half's, and the outputs' to add them into.
type Bits<'a> = (&'a [u64], &'a mut [u64]);

fn expand<T: Symbol>(parity: &[T], out: &mut [T], bits: Option<Bits>, seed: Block) {
    // Parts of whole batches on the rayon pool, each drawing its positions from where its
    // first batch's lie in the stream (and its bits whole words: `PART` is a multiple of
    // 64).
    const PART: usize = 64 * Taps::BATCH;
    let parts: Vec<Option<Bits>> = match bits {
        None => (0..out.len().div_ceil(PART)).map(|_| None).collect(),
        Some((parity_bits, out_bits)) => (out_bits.chunks_mut(PART / 64))
            .map(|out_bits| Some((parity_bits, out_bits)))
            .collect(),
    };
    out.par_chunks_mut(PART)
        .zip(parts)
        .enumerate()
        .for_each(|(k, (out, bits))| {
            expand_part(parity, out, bits, Taps::new(seed, parity.len(), k * PART))
        });
}

/// [`expand`] on the outputs `out` (and their bits, the part's words), whose positions
/// `taps` draws.
fn expand_part<T: Symbol>(parity: &[T], out: &mut [T], mut bits: Option<Bits>, mut taps: Taps) {
    const AHEAD: usize = 32;
    // Batch k's positions in half k % 2, the next batch's drawn before batch k is summed.
    let mut ring = [[0; EXPANDER]; 2 * Taps::BATCH];
    taps.draw(&mut ring[..Taps::BATCH]);
    for (k, out) in out.chunks_mut(Taps::BATCH).enumerate() {
        let next = (k + 1) % 2 * Taps::BATCH;
        taps.draw(&mut ring[next..next + Taps::BATCH]);
        for (j, o) in out.iter_mut().enumerate() {
            let i = k * Taps::BATCH + j;
            for &p in &ring[(i + AHEAD) % ring.len()] {
                crate::util::memory::prefetch_l2(&parity[p as usize]);
            }
            let positions = &ring[i % ring.len()];
            *o ^= positions
                .iter()
                .fold(T::default(), |acc, &p| acc ^ parity[p as usize]);
            if let Some((parity_bits, out_bits)) = &mut bits {
                let sum = positions
                    .iter()
                    .fold(0, |acc, &p| acc ^ parity_bits[p as usize / 64] >> (p % 64));
                out_bits[i / 64] ^= (sum & 1) << (i % 64);
            }
        }
    }
}

/// The expander's positions: output i's j-th from the (7i + j)-th 64-bit word of an
/// AES-CTR stream, scaled into its range (quarter j for j < `REGULAR`, else all `m`). A
/// public code needs no exact uniformity: the bias of a scaled word is below m/2^64.
struct Taps {
    stream: Prg,
    blocks: [Block; Taps::BATCH * EXPANDER / 2],
    /// The range's start and length for each word of a group of [`Taps::GROUP`] outputs.
    start: [u32; Taps::WORDS],
    len: [u32; Taps::WORDS],
}

impl Taps {
    /// Outputs whose positions are drawn at a time.
    const BATCH: usize = 128;
    /// Outputs whose words make whole vectors of eight (and whole blocks).
    const GROUP: usize = 8;
    const WORDS: usize = Taps::GROUP * EXPANDER;

    /// The positions of outputs `first..` (`first` a multiple of [`Taps::BATCH`]) into a
    /// parity half of `m` positions.
    fn new(seed: Block, m: usize, first: usize) -> Taps {
        debug_assert_eq!(first % Taps::BATCH, 0);
        let m = u32::try_from(m).expect("positions fit in 32 bits");
        let quarter = m / REGULAR as u32;
        let range = |t: usize| match t % EXPANDER {
            j if j < REGULAR => (j as u32 * quarter, quarter),
            _ => (0, m),
        };
        Taps {
            stream: Prg::from_seed_at(seed, (first * EXPANDER / 2) as u128),
            blocks: [0; Taps::BATCH * EXPANDER / 2],
            start: std::array::from_fn(|t| range(t).0),
            len: std::array::from_fn(|t| range(t).1),
        }
    }

    /// The positions of the next [`Taps::BATCH`] outputs.
    fn draw(&mut self, out: &mut [[u32; EXPANDER]]) {
        self.stream.fill_blocks(&mut self.blocks);
        let (blocks, start, len) = (&self.blocks, &self.start, &self.len);
        crate::util::wide_cpu::with_avx512(
            #[inline(always)]
            || {
                let groups = out.as_flattened_mut().chunks_exact_mut(Taps::WORDS);
                for (p, b) in groups.zip(blocks.chunks_exact(Taps::WORDS / 2)) {
                    let mut words = [0; Taps::WORDS];
                    for (w, &b) in words.chunks_exact_mut(2).zip(b) {
                        (w[0], w[1]) = (b as u64, (b >> 64) as u64);
                    }
                    for t in 0..Taps::WORDS {
                        p[t] = start[t] + below(words[t], u64::from(len[t])) as u32;
                    }
                }
            },
        );
    }
}

/// `x` scaled into [0, m): ⌊x·m / 2^64⌋, for m < 2^32, in 32-bit multiplies (which
/// vectorise).
#[inline(always)]
fn below(x: u64, m: u64) -> u64 {
    ((x >> 32) * m + (((x & 0xffff_ffff) * m) >> 32)) >> 32
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::util::cpu::{self, with_level, Level};

    fn random(n: usize, seed: Block) -> Vec<Block> {
        let mut prg = Prg::from_seed(seed);
        (0..n).map(|_| prg.block()).collect()
    }

    #[test]
    fn the_dual_encoding_is_linear_and_fixed_by_its_seed() {
        for n in [ExConv::MIN_OUTPUTS, 27, 100, 4096, 100_003] {
            let code = ExConv::new(n, 42);
            let (a, b) = (random(2 * n, 1), random(2 * n, 2));
            let mut sum: Vec<Block> = a.iter().zip(&b).map(|(x, y)| x ^ y).collect();
            let (mut ea, mut eb) = (a.clone(), b.clone());
            code.dual_encode(&mut ea);
            code.dual_encode(&mut eb);
            code.dual_encode(&mut sum);
            for i in 0..n {
                assert_eq!(sum[i], ea[i] ^ eb[i], "n = {n}, i = {i}");
            }
            let mut again = a.clone();
            code.dual_encode(&mut again);
            assert_eq!(again[..n], ea[..n]);
            let mut other = a.clone();
            ExConv::new(n, 43).dual_encode(&mut other);
            assert_ne!(other[..n], ea[..n], "n = {n}");
        }
    }

    /// The code itself, pinned: outputs of the first (scalar, memory-bound) implementation,
    /// which every faster one must keep (both parties must use one code).
    #[test]
    fn the_code_is_pinned() {
        let pins: [(usize, Block, Block, Block); 4] = [
            (
                26,
                0x6520d4d9fe916515f887157d5ec12718,
                0x70b5e72c513cd1d46e0ec902cbecedcb,
                0x2cc81dd3f6e9e726566fc6095ed24812,
            ),
            (
                100,
                0x0cd0a69181f8e94cb9c31c13abad67f0,
                0xc0334740167bd557c23eb5de369cae4b,
                0x4ed627e0a405a6483e50b79df18f95f0,
            ),
            (
                5000,
                0x04019d8f1aef9d3b89c1eeed1e9f6f00,
                0x47834d4e3cb3eb9382ddcb3a2b2d6b69,
                0x1f8534f511322b00c7687f4c91919967,
            ),
            // Several parts of the expander, drawn from their places in the stream.
            (
                20_000,
                0x80d8ae94a6e4737b8269d3ac856c34a1,
                0x1a7a8f9752849dc547b862d490e10c1d,
                0xd805212d2c68826cbfca21fbfaccd513,
            ),
        ];
        // At each level, on one thread and on three (the expander's parts split among them).
        for level in Level::ALL {
            for threads in [1, 3] {
                let pool = cpu::pool_at(level, threads).unwrap();
                for (n, first, last, fold) in pins {
                    let mut e = random(2 * n, 1);
                    pool.install(|| ExConv::new(n, 42).dual_encode(&mut e));
                    let sum = e[..n].iter().fold(0, |acc, x| acc ^ x);
                    assert_eq!(
                        (e[0], e[n - 1], sum),
                        (first, last, fold),
                        "{level:?}, {threads} threads, n = {n}"
                    );
                }
            }
        }
    }

    /// The accumulator as defined, one position and one coefficient at a time.
    fn accumulate_by_definition<T: Symbol>(x: &mut [T], seed: Block) {
        let mut rows = Rows::new(seed);
        let len = x.len();
        for i in 0..len {
            let row = rows.next() | 1 << ACCUMULATOR;
            let xi = x[i];
            for k in 0..=ACCUMULATOR {
                if (row >> k) & 1 == 1 {
                    x[(i + 1 + k) % len] ^= xi;
                }
            }
        }
    }

    /// The register window (at the levels that allow it) and the scalar tail agree with
    /// the definition at every length around the window's, for blocks and pairs.
    #[test]
    fn the_accumulator_follows_its_definition() {
        let lengths = (ACCUMULATOR + 2..80).chain([255, 256, 257, 4099]);
        for len in lengths {
            let a = random(len, len as Block);
            let mut want = a.clone();
            accumulate_by_definition(&mut want, 5);
            let pairs: Vec<Pair> = a.iter().map(|&x| Pair(x, x.rotate_left(9))).collect();
            let mut want_pairs = pairs.clone();
            accumulate_by_definition(&mut want_pairs, 6);
            for level in Level::ALL {
                let mut got = a.clone();
                with_level(level, || accumulate(&mut got, None, 5));
                assert_eq!(got, want, "{level:?}, blocks, length {len}");
                let mut got = pairs.clone();
                with_level(level, || accumulate(&mut got, None, 6));
                assert_eq!(got, want_pairs, "{level:?}, pairs, length {len}");
            }
        }
    }

    #[test]
    fn below_is_the_high_word_of_the_product() {
        let mut prg = Prg::from_seed(11);
        for m in [1, 2, 3, 1000, 1_429_504, u64::from(u32::MAX)] {
            for x in (0..1000).map(|_| prg.u64()).chain([0, u64::MAX]) {
                let want = (u128::from(x) * u128::from(m)) >> 64;
                assert_eq!(u128::from(below(x, m)), want, "{x} · {m}");
            }
        }
    }

    #[test]
    fn pairs_encode_as_their_halves_do() {
        let n = 1000;
        let code = ExConv::new(n, 9);
        let (a, b) = (random(2 * n, 3), random(2 * n, 4));
        let mut pairs: Vec<Pair> = a.iter().zip(&b).map(|(&x, &y)| Pair(x, y)).collect();
        let (mut ea, mut eb) = (a, b);
        code.dual_encode(&mut ea);
        code.dual_encode(&mut eb);
        code.dual_encode(&mut pairs);
        for i in 0..n {
            assert_eq!(pairs[i], Pair(ea[i], eb[i]));
        }
    }

    /// Bits encode as blocks of 0 and 1 do: the accumulator at every length around a word
    /// and the window's, and the whole code with several parts of the expander.
    /// At each level (in a pool of its own: the expander runs on rayon's threads).
    #[test]
    fn bits_encode_as_blocks_of_their_values_do() {
        for level in Level::ALL {
            cpu::pool_at(level, 1)
                .unwrap()
                .install(bits_encode_as_blocks_of_their_values_do_at);
        }
    }

    fn bits_encode_as_blocks_of_their_values_do_at() {
        let pack = |blocks: &[Block]| -> Vec<u64> {
            let mut words = vec![0; blocks.len().div_ceil(64)];
            for (i, b) in blocks.iter().enumerate() {
                words[i / 64] |= (*b as u64 & 1) << (i % 64);
            }
            words
        };
        let bits_of = |seed| -> Vec<Block> {
            let mut prg = Prg::from_seed(seed);
            (0..2 * 20_011).map(|_| prg.block() & 1).collect()
        };
        let e = bits_of(12);
        for len in (ACCUMULATOR + 2..200).chain([255, 256, 257, 4099]) {
            let mut want = e[..len].to_vec();
            accumulate(&mut want, None, 3);
            // Beside blocks (in the blocks' window where the CPU has it) and alone (the
            // word window): the blocks keep to their own definition.
            let mut got = pack(&e[..len]);
            let blocks = random(len, 4);
            let mut with = blocks.clone();
            accumulate(&mut with, Some(&mut got), 3);
            assert_eq!(got, pack(&want), "length {len}, beside blocks");
            let mut without = blocks.clone();
            accumulate(&mut without, None, 3);
            assert_eq!(with, without, "length {len}");
            let mut got = pack(&e[..len]);
            let mut pairs: Vec<Pair> = blocks.iter().map(|&b| Pair(b, !b)).collect();
            accumulate(&mut pairs, Some(&mut got), 3);
            assert_eq!(got, pack(&want), "length {len}, beside pairs");
            let mut got = pack(&e[..len]);
            accumulate_bits(&mut got, len, 3);
            assert_eq!(got, pack(&want), "length {len}, alone");
        }
        for n in [ExConv::MIN_OUTPUTS, 100, 8191, 20_011] {
            let code = ExConv::new(n, 5);
            let noise = random(2 * n, 13);
            let (mut blocks, mut bits) = (noise.clone(), e[..2 * n].to_vec());
            code.dual_encode(&mut bits);
            let (out, parity) = blocks.split_at_mut(n);
            let (mut out_bits, mut parity_bits) = (pack(&e[..n]), pack(&e[n..2 * n]));
            code.accumulate_with_bits(parity, &mut parity_bits);
            code.expand_with_bits(parity, out, &parity_bits, &mut out_bits);
            let mut want = noise;
            code.dual_encode(&mut want);
            assert_eq!(blocks[..n], want[..n], "n = {n}");
            assert_eq!(out_bits, pack(&bits[..n]), "n = {n}");
        }
    }

    #[test]
    fn one_noise_position_reaches_many_outputs() {
        // A single nonzero parity position spreads through both accumulations and the
        // expander: about half the outputs change (the code is far from sparse).
        let n = 1 << 12;
        let code = ExConv::new(n, 7);
        let mut e = vec![0; 2 * n];
        e[n + 5] = 1;
        code.dual_encode(&mut e);
        let touched = e[..n].iter().filter(|&&x| x != 0).count();
        assert!(touched > n / 3, "{touched} of {n}");
    }
}
