//! Arithmetic in GF(2^128) = GF(2)\[X\] / (X^128 + X^7 + X^2 + X + 1), the field of the KOS15
//! correlation check. Bit `i` of a [`Block`] is the coefficient of `X^i`.
//!
//! Inner products accumulate unreduced 256-bit carry-less products and reduce once at the
//! end; on x86-64 with PCLMULQDQ each product is four carry-less 64×64 multiplications,
//! with VPCLMULQDQ on 512-bit vectors four products at a time (on 256-bit ones, where the
//! CPU has no AVX-512, two). Polynomials evaluated at many points ([`add_evaluations`])
//! take a point a 128-bit lane the same way, each product reduced by carry-less
//! multiplications by X^7 + X^2 + X + 1.

use super::Block;

/// `Σ a[i] · b[i]` in GF(2^128).
pub fn inner_product(a: &[Block], b: &[Block]) -> Block {
    // SAFETY: a Block's memory is 16 initialised bytes (little-endian on every target
    // with a fast path; the portable path reads the bytes back the same way).
    let bytes = unsafe { std::slice::from_raw_parts(a.as_ptr().cast::<u8>(), 16 * a.len()) };
    if cfg!(target_endian = "little") {
        inner_product_le(bytes, b)
    } else {
        portable_inner_product(a.iter().copied(), b)
    }
}

/// `Σ a[i] · b[i]` in GF(2^128) where `a` holds the blocks `a[i]` as 16 little-endian
/// bytes each (a stream of bytes hashed where it lies).
pub fn inner_product_le(a: &[u8], b: &[Block]) -> Block {
    assert_eq!(a.len(), 16 * b.len());
    #[cfg(target_arch = "x86_64")]
    if clmul::wide512() {
        // SAFETY: the features the function is compiled for were detected (`cpu::has`).
        let (lo, hi) = unsafe { clmul::inner_product512(a, b) };
        return reduce(lo, hi);
    }
    #[cfg(target_arch = "x86_64")]
    if clmul::wide256() {
        // SAFETY: as above.
        let (lo, hi) = unsafe { clmul::inner_product256(a, b) };
        return reduce(lo, hi);
    }
    #[cfg(target_arch = "x86_64")]
    if clmul::narrow() {
        // SAFETY: as above.
        let (lo, hi) = unsafe { clmul::inner_product_wide(a, b) };
        return reduce(lo, hi);
    }
    portable_inner_product(blocks_le(a), b)
}

/// The blocks of `bytes`, 16 little-endian bytes each.
fn blocks_le(bytes: &[u8]) -> impl Iterator<Item = Block> + '_ {
    bytes
        .chunks_exact(16)
        .map(|b| Block::from_le_bytes(b.try_into().expect("16 bytes")))
}

/// `a · b` in GF(2^128).
#[inline]
pub fn mul(a: Block, b: Block) -> Block {
    #[cfg(target_arch = "x86_64")]
    if clmul::narrow() {
        // SAFETY: the features the function is compiled for were detected (`cpu::has`).
        let (lo, hi) = unsafe { clmul::mul_wide(a, b) };
        return reduce(lo, hi);
    }
    let (lo, hi) = portable_mul_wide(a, b);
    reduce(lo, hi)
}

/// `out[i] += Σ_{j=1..g} c[j−1] · x[i]^j` in GF(2^128) for the `points` x and the g
/// `coefficients` c: a polynomial without a constant term, evaluated at each point by
/// Horner's rule as x·(c_0 + x·(c_1 + … + x·c_{g−1})) (g products a point). RR22's dense
/// row (d, d^2, …, d^g) against the dense columns is this at x = d (RR22 §2, Fig. 1).
pub fn add_evaluations(points: &[Block], coefficients: &[Block], out: &mut [Block]) {
    assert_eq!(points.len(), out.len());
    // The points a vector kernel took; the rest are done here.
    #[cfg(target_arch = "x86_64")]
    let done = if clmul::wide512() {
        // SAFETY: the features the function is compiled for were detected (`cpu::has`).
        unsafe { clmul::add_evaluations512(points, coefficients, out) }
    } else if clmul::wide256() {
        // SAFETY: as above.
        unsafe { clmul::add_evaluations256(points, coefficients, out) }
    } else {
        0
    };
    #[cfg(not(target_arch = "x86_64"))]
    let done = 0;
    for (o, &x) in out[done..].iter_mut().zip(&points[done..]) {
        *o ^= coefficients
            .iter()
            .rev()
            .fold(Block::ZERO, |acc, &c| mul(acc ^ c, x));
    }
}

/// `a^-1` in GF(2^128) (`a^(2^128 − 2)`, by 127 squarings), or `None` for 0.
pub fn inverse(a: Block) -> Option<Block> {
    if a == Block::ZERO {
        return None;
    }
    // a^(2^k − 1) for k = 1, 2, …, 127, then squared once more: a^(2^128 − 2).
    let mut ones = a;
    for _ in 1..127 {
        ones = mul(mul(ones, ones), a);
    }
    Some(mul(ones, ones))
}

/// The unreduced 256-bit product of `a` and `b` as (low, high) halves, bit by bit: the
/// polynomials' coefficients as integers, shifted.
fn portable_mul_wide(a: Block, b: Block) -> (u128, u128) {
    let a = a.as_u128();
    let (mut lo, mut hi) = (0, 0);
    for i in 0..128 {
        if b.bit(i) {
            lo ^= a << i;
            if i > 0 {
                hi ^= a >> (128 - i);
            }
        }
    }
    (lo, hi)
}

fn portable_inner_product(a: impl Iterator<Item = Block>, b: &[Block]) -> Block {
    let (mut lo, mut hi) = (0, 0);
    for (x, &y) in a.zip(b) {
        let (l, h) = portable_mul_wide(x, y);
        lo ^= l;
        hi ^= h;
    }
    reduce(lo, hi)
}

/// Reduces `hi · X^128 + lo` modulo `X^128 + X^7 + X^2 + X + 1`.
fn reduce(lo: u128, hi: u128) -> Block {
    // X^128 ≡ X^7 + X^2 + X + 1: fold `hi` down twice (the second fold has at most 7 bits).
    let fold = |h: u128| -> (u128, u128) {
        let l = h ^ (h << 1) ^ (h << 2) ^ (h << 7);
        let overflow = (h >> 127) ^ (h >> 126) ^ (h >> 121);
        (l, overflow)
    };
    let (l1, o1) = fold(hi);
    let (l2, _) = fold(o1);
    Block::from_u128(lo ^ l1 ^ l2)
}

#[cfg(target_arch = "x86_64")]
mod clmul {
    use super::Block;
    use crate::crypto::lanes::Lanes;
    use crate::util::cpu::{has_all, Feature};
    use std::arch::x86_64::*;

    /// Whether this thread may run the 128-bit functions.
    #[inline]
    pub(super) fn narrow() -> bool {
        has_all(&[Feature::Pclmulqdq, Feature::Sse2])
    }

    /// Whether this thread may run the 512-bit ones.
    #[inline]
    pub(super) fn wide512() -> bool {
        has_all(&[Feature::Vpclmulqdq, Feature::Avx512f])
    }

    /// Whether this thread may run the 256-bit ones.
    #[inline]
    pub(super) fn wide256() -> bool {
        has_all(&[Feature::Vpclmulqdq, Feature::Avx2])
    }

    /// `a·b` as an unreduced (low, high) pair.
    ///
    /// # Safety
    /// The CPU has PCLMULQDQ.
    #[target_feature(enable = "pclmulqdq,sse2")]
    pub(super) unsafe fn mul_wide(a: Block, b: Block) -> (u128, u128) {
        let x = _mm_set_epi64x(a.high_u64() as i64, a.low_u64() as i64);
        let y = _mm_set_epi64x(b.high_u64() as i64, b.low_u64() as i64);
        let lo = _mm_clmulepi64_si128(x, y, 0x00);
        let mid = _mm_xor_si128(
            _mm_clmulepi64_si128(x, y, 0x10),
            _mm_clmulepi64_si128(x, y, 0x01),
        );
        let hi = _mm_clmulepi64_si128(x, y, 0x11);
        // SAFETY: both are 16 plain bytes; a u128's are its little-endian halves, low first.
        let get = |v: __m128i| unsafe { std::mem::transmute::<__m128i, u128>(v) };
        let (lo, mid, hi) = (get(lo), get(mid), get(hi));
        (lo ^ (mid << 64), hi ^ (mid >> 64))
    }

    /// `Σ a[i]·b[i]` as an unreduced (low, high) pair, `a[i]` the i-th 16 bytes of `a`.
    ///
    /// # Safety
    /// The CPU has PCLMULQDQ.
    #[target_feature(enable = "pclmulqdq,sse2")]
    pub(super) unsafe fn inner_product_wide(a: &[u8], b: &[Block]) -> (u128, u128) {
        let mut lo = _mm_setzero_si128();
        let mut mid = _mm_setzero_si128();
        let mut hi = _mm_setzero_si128();
        for (x, y) in a.chunks_exact(16).zip(b) {
            // A Block's little-endian bytes are its 64-bit halves, low first.
            // SAFETY: `x` is a chunk of exactly 16 bytes and `y` a block: what the loads
            // read, at any alignment.
            let (x, y) = unsafe {
                (
                    _mm_loadu_si128(x.as_ptr().cast()),
                    _mm_loadu_si128((y as *const Block).cast()),
                )
            };
            lo = _mm_xor_si128(lo, _mm_clmulepi64_si128(x, y, 0x00));
            mid = _mm_xor_si128(mid, _mm_clmulepi64_si128(x, y, 0x10));
            mid = _mm_xor_si128(mid, _mm_clmulepi64_si128(x, y, 0x01));
            hi = _mm_xor_si128(hi, _mm_clmulepi64_si128(x, y, 0x11));
        }
        let get = |v: __m128i| {
            let mut out = [0u8; 16];
            // SAFETY: `out` is the 16 bytes the store writes, at any alignment.
            unsafe { _mm_storeu_si128(out.as_mut_ptr().cast(), v) };
            u128::from_le_bytes(out)
        };
        let (lo, mid, hi) = (get(lo), get(mid), get(hi));
        (lo ^ (mid << 64), hi ^ (mid >> 64))
    }

    /// [`inner_product`] on 512-bit vectors.
    ///
    /// # Safety
    /// The CPU has VPCLMULQDQ and AVX-512F.
    #[target_feature(enable = "vpclmulqdq,avx512f")]
    pub(super) unsafe fn inner_product512(a: &[u8], b: &[Block]) -> (u128, u128) {
        // SAFETY: `__m512i`'s features (this function's contract), which PCLMULQDQ's
        // 128-bit form for the rest comes with.
        unsafe { inner_product::<__m512i>(a, b) }
    }

    /// [`inner_product`] on 256-bit vectors.
    ///
    /// # Safety
    /// The CPU has VPCLMULQDQ and AVX2.
    #[target_feature(enable = "vpclmulqdq,avx2")]
    pub(super) unsafe fn inner_product256(a: &[u8], b: &[Block]) -> (u128, u128) {
        // SAFETY: `__m256i`'s features (this function's contract), which PCLMULQDQ's
        // 128-bit form for the rest comes with.
        unsafe { inner_product::<__m256i>(a, b) }
    }

    /// [`inner_product_wide`] a vector of products at a time: lane `l` of each vector
    /// holds `a[BLOCKS·i + l]`, `b[BLOCKS·i + l]`, and the lanes' sums are added at the end.
    ///
    /// # Safety
    /// The CPU has what `V`'s products need (see [`Lanes`]), and PCLMULQDQ.
    #[inline(always)]
    unsafe fn inner_product<V: Lanes>(a: &[u8], b: &[Block]) -> (u128, u128) {
        // SAFETY: the CPU's features are the caller's contract; each load is of a chunk of
        // exactly `BLOCKS` blocks (16·`BLOCKS` bytes of `a`), each store to `out`'s 4.
        unsafe {
            let (mut lo, mut mid, mut hi) = (V::zero(), V::zero(), V::zero());
            let (ax, bx) = (a.chunks_exact(16 * V::BLOCKS), b.chunks_exact(V::BLOCKS));
            let (a_rest, b_rest) = (ax.remainder(), bx.remainder());
            for (x, y) in ax.zip(bx) {
                let x = V::load(x.as_ptr().cast());
                let y = V::load(y.as_ptr());
                lo = lo.xor(x.clmul::<0x00>(y));
                mid = mid.xor(x.clmul::<0x10>(y));
                mid = mid.xor(x.clmul::<0x01>(y));
                hi = hi.xor(x.clmul::<0x11>(y));
            }
            let lanes = |v: V| {
                let mut out = [Block::ZERO; 4];
                v.store(out.as_mut_ptr());
                out.iter().fold(Block::ZERO, |acc, l| acc ^ l).as_u128()
            };
            let (lo, mid, hi) = (lanes(lo), lanes(mid), lanes(hi));
            let (rest_lo, rest_hi) = inner_product_wide(a_rest, b_rest);
            (lo ^ (mid << 64) ^ rest_lo, hi ^ (mid >> 64) ^ rest_hi)
        }
    }

    /// [`add_evaluations`] on 512-bit vectors.
    ///
    /// # Safety
    /// The CPU has VPCLMULQDQ and AVX-512F.
    #[target_feature(enable = "vpclmulqdq,avx512f")]
    pub(super) unsafe fn add_evaluations512(
        points: &[Block],
        coefficients: &[Block],
        out: &mut [Block],
    ) -> usize {
        // SAFETY: `__m512i`'s features (this function's contract).
        unsafe { add_evaluations::<__m512i>(points, coefficients, out) }
    }

    /// [`add_evaluations`] on 256-bit vectors.
    ///
    /// # Safety
    /// The CPU has VPCLMULQDQ and AVX2.
    #[target_feature(enable = "vpclmulqdq,avx2")]
    pub(super) unsafe fn add_evaluations256(
        points: &[Block],
        coefficients: &[Block],
        out: &mut [Block],
    ) -> usize {
        // SAFETY: `__m256i`'s features (this function's contract).
        unsafe { add_evaluations::<__m256i>(points, coefficients, out) }
    }

    /// [`super::add_evaluations`] for the leading multiple of `BLOCKS` points, lane `l`
    /// of each vector holding point `BLOCKS·i + l`; returns how many points it took.
    ///
    /// # Safety
    /// The CPU has what `V`'s products need (see [`Lanes`]).
    #[inline(always)]
    unsafe fn add_evaluations<V: Lanes>(
        points: &[Block],
        coefficients: &[Block],
        out: &mut [Block],
    ) -> usize {
        let groups = (points.chunks_exact(V::BLOCKS)).zip(out.chunks_exact_mut(V::BLOCKS));
        let done = V::BLOCKS * groups.len();
        for (x, o) in groups {
            // SAFETY: the CPU's features are the caller's contract; `x` and `o` are chunks of
            // exactly `BLOCKS` blocks, what each load and the store take.
            unsafe {
                let x = V::load(x.as_ptr());
                let mut acc = V::zero();
                for c in coefficients.iter().rev() {
                    acc = mul(acc.xor(V::splat(c)), x);
                }
                let o = o.as_mut_ptr();
                V::load(o).xor(acc).store(o);
            }
        }
        done
    }

    /// A product `a·b` in GF(2^128) in each 128-bit lane: the 256-bit product from four
    /// carry-less multiplications, its high half h folded down by X^128 ≡ X^7 + X^2 + X + 1
    /// with three more (h's low word times 0x87; its high word times 0x87, which sits at
    /// X^64 and spills up to 7 bits past X^128, folded once more).
    ///
    /// # Safety
    /// The CPU has what `V`'s products need (see [`Lanes`]).
    #[inline(always)]
    unsafe fn mul<V: Lanes>(a: V, b: V) -> V {
        // SAFETY: the CPU has what `V`'s products need (the caller's contract).
        unsafe {
            let zero = V::zero();
            let poly = V::splat64(0x87);
            let mid = a.clmul::<0x01>(b).xor(a.clmul::<0x10>(b));
            // (mid << 64, mid >> 64) within each lane: its low word up, its high word down.
            let lo = a.clmul::<0x00>(b).xor(zero.unpack_lo(mid));
            let hi = a.clmul::<0x11>(b).xor(mid.unpack_hi(zero));
            let spill = hi.clmul::<0x01>(poly);
            let folded = hi
                .clmul::<0x00>(poly)
                .xor(zero.unpack_lo(spill).xor(spill.clmul::<0x01>(poly)));
            lo.xor(folded)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crypto::Prg;
    use crate::util::cpu::{with_level, Level};

    /// At each level: the 512-, 256- and 128-bit and portable products (the widest each level
    /// allows for inner products, PCLMULQDQ or portable for single ones).
    #[test]
    fn field_laws_and_agreement_with_the_portable_version() {
        for level in Level::ALL {
            with_level(level, field_laws_and_agreement_with_the_portable_version_at);
        }
    }

    fn field_laws_and_agreement_with_the_portable_version_at() {
        let mut prg = Prg::from_seed(Block::from(11));
        let v: Vec<Block> = (0..64).map(|_| prg.block()).collect();
        assert_eq!(mul(v[0], Block::ONE), v[0], "1 is the identity");
        assert_eq!(mul(v[0], Block::ZERO), Block::ZERO);
        assert_eq!(mul(v[0], v[1]), mul(v[1], v[0]), "commutative");
        assert_eq!(
            mul(mul(v[0], v[1]), v[2]),
            mul(v[0], mul(v[1], v[2])),
            "associative"
        );
        assert_eq!(
            mul(v[0], v[1] ^ v[2]),
            mul(v[0], v[1]) ^ mul(v[0], v[2]),
            "distributive"
        );
        // X^127 · X = X^128 = X^7 + X^2 + X + 1.
        assert_eq!(mul(Block::unit(127), Block::unit(1)), Block::from(0x87));
        assert_eq!(v[0] * v[1], mul(v[0], v[1]), "the operator");
        for &a in &v[..8] {
            assert_eq!(mul(a, inverse(a).unwrap()), Block::ONE, "inverse");
        }
        assert_eq!(inverse(Block::ONE), Some(Block::ONE));
        assert_eq!(inverse(Block::ZERO), None);
        for &a in &v[..8] {
            for &b in &v[8..16] {
                let (lo, hi) = portable_mul_wide(a, b);
                assert_eq!(mul(a, b), reduce(lo, hi), "{a:x} · {b:x}");
            }
        }
        for len in [0, 1, 3, 4, 5, 31, 32] {
            let (a, b) = (&v[..len], &v[32..32 + len]);
            let want = portable_inner_product(a.iter().copied(), b);
            assert_eq!(inner_product(a, b), want, "{len}");
            let bytes: Vec<u8> = a.iter().flat_map(|x| x.to_le_bytes()).collect();
            assert_eq!(inner_product_le(&bytes, b), want, "{len}, from bytes");
        }
    }

    #[test]
    fn evaluations_are_horner_by_single_products() {
        for level in Level::ALL {
            with_level(level, evaluations_are_horner_by_single_products_at);
        }
    }

    fn evaluations_are_horner_by_single_products_at() {
        let mut prg = Prg::from_seed(Block::from(13));
        let v: Vec<Block> = (0..64).map(|_| prg.block()).collect();
        for g in 0..5 {
            for len in [0, 1, 3, 4, 5, 17] {
                let (points, coefficients) = (&v[..len], &v[32..32 + g]);
                let mut out = v[40..40 + len].to_vec();
                add_evaluations(points, coefficients, &mut out);
                for (i, (&o, &x)) in out.iter().zip(points).enumerate() {
                    let mut want = v[40 + i];
                    let mut power = x;
                    for &c in coefficients {
                        let (lo, hi) = portable_mul_wide(c, power);
                        want ^= reduce(lo, hi);
                        let (lo, hi) = portable_mul_wide(power, x);
                        power = reduce(lo, hi);
                    }
                    assert_eq!(o, want, "g = {g}, point {i} of {len}");
                }
            }
        }
        // The fold's spill past X^128: all-ones operands.
        let mut out = [Block::ZERO; 4];
        add_evaluations(&[Block::ONES; 4], &[Block::ONES], &mut out);
        let (lo, hi) = portable_mul_wide(Block::ONES, Block::ONES);
        assert_eq!(out, [reduce(lo, hi); 4]);
    }
}
