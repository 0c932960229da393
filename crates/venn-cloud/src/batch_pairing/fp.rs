//! Eight elements of F_p at once, one per 64-bit lane of AVX-512 registers, multiplied with
//! the 52-bit multiply-adds of AVX-512 IFMA.
//!
//! An element is eight limbs of radix 2^52, limb `i` of all eight lanes in register `i`,
//! kept in Montgomery form with R = 2^416 (`x` is held as `x·R mod p`, up to multiples
//! of p). The representation is *lazy*: limbs are signed 64-bit and unnormalised, and the
//! integer they denote may be any multiple-of-p shift of the value within
//! (−2^16·p, 2^16·p). Additions and subtractions are therefore single vector adds; only
//! [`Fp::mul`] normalises, by adding 2^16·p and propagating carries, so that its operands
//! are non-negative 52-bit limbs below 2^398 — and then the Montgomery product
//! `(a·b + m·p) / 2^416 < 2^796 / 2^416 + p < 2p` is back in range, its limbs below 2^53
//! after one parallel carry step. The tower above never adds more than a few dozen such
//! products, far inside both the value bound and the 63-bit limb headroom — except chains of
//! cyclotomic squarings, whose result holds ±2·(the operand), so that values and limbs
//! double each step: those call [`Fp::reduce`] every fourth step.

use std::arch::x86_64::*;

/// Limbs per element (8 · 52 = 416 bits).
pub(super) const LIMBS: usize = 8;
/// One element in radix 2^52, lane-free: how constants are kept and broadcast.
pub(super) type Limbs = [u64; LIMBS];
/// One element in blst's form: six 64-bit limbs, Montgomery with R = 2^384, below p.
pub(super) type Blst = [u64; 6];

const MASK: u64 = (1 << 52) - 1;

/// p, little-endian 64-bit limbs.
pub(super) const P64: Blst = [
    0xb9fe_ffff_ffff_aaab,
    0x1eab_fffe_b153_ffff,
    0x6730_d2a0_f6b0_f624,
    0x6477_4b84_f385_12bf,
    0x4b1b_a7b6_434b_acd7,
    0x1a01_11ea_397f_e69a,
];

/// A number of up to 448 bits (seven 64-bit limbs) in radix 2^52.
const fn radix52(x: [u64; 7]) -> Limbs {
    let mut out = [0u64; LIMBS];
    let mut i = 0;
    while i < LIMBS {
        let (word, shift) = (52 * i / 64, 52 * i % 64);
        let mut v = x[word] >> shift;
        if shift > 12 && word + 1 < 7 {
            v |= x[word + 1] << (64 - shift);
        }
        out[i] = v & MASK;
        i += 1;
    }
    out
}

const fn widen(x: Blst) -> [u64; 7] {
    [x[0], x[1], x[2], x[3], x[4], x[5], 0]
}

/// p in radix 2^52.
const P: Limbs = radix52(widen(P64));

/// 2^16·p: added before a product so that any lazy value becomes non-negative.
const OFFSET: Limbs = {
    let mut w = [0u64; 7];
    let mut i = 0;
    while i < 6 {
        w[i] |= P64[i] << 16;
        w[i + 1] = P64[i] >> 48;
        i += 1;
    }
    radix52(w)
};

/// −p^{-1} mod 2^52 (Newton's iteration for p^{-1} mod 2^64).
const P_INV: u64 = {
    let mut inv: u64 = 1;
    let mut i = 0;
    while i < 6 {
        inv = inv.wrapping_mul(2u64.wrapping_sub(P64[0].wrapping_mul(inv)));
        i += 1;
    }
    inv.wrapping_neg() & MASK
};

/// ⌊2^52 / (p_7 + 1)⌋ for p's top limb p_7 (17 bits).
const TOP_RECIPROCAL: u64 = (1 << 52) / (P[LIMBS - 1] + 1);

/// Eight elements of F_p, one per lane.
#[derive(Clone, Copy)]
pub(super) struct Fp([__m512i; LIMBS]);

/// The same constant in every lane.
#[target_feature(enable = "avx512f,avx512ifma")]
#[inline]
fn splat(x: u64) -> __m512i {
    _mm512_set1_epi64(x as i64)
}

impl Fp {
    /// Zero in every lane.
    #[target_feature(enable = "avx512f,avx512ifma")]
    #[inline]
    pub(super) fn zero() -> Fp {
        Fp([_mm512_setzero_si512(); LIMBS])
    }

    /// The same element (already in this module's Montgomery form) in every lane.
    #[target_feature(enable = "avx512f,avx512ifma")]
    #[inline]
    pub(super) fn splat(x: &Limbs) -> Fp {
        Fp(std::array::from_fn(|i| splat(x[i])))
    }

    #[target_feature(enable = "avx512f,avx512ifma")]
    #[inline]
    pub(super) fn add(&self, b: &Fp) -> Fp {
        Fp(std::array::from_fn(|i| _mm512_add_epi64(self.0[i], b.0[i])))
    }

    #[target_feature(enable = "avx512f,avx512ifma")]
    #[inline]
    pub(super) fn sub(&self, b: &Fp) -> Fp {
        Fp(std::array::from_fn(|i| _mm512_sub_epi64(self.0[i], b.0[i])))
    }

    #[target_feature(enable = "avx512f,avx512ifma")]
    #[inline]
    pub(super) fn neg(&self) -> Fp {
        Fp::zero().sub(self)
    }

    #[target_feature(enable = "avx512f,avx512ifma")]
    #[inline]
    pub(super) fn double(&self) -> Fp {
        self.add(self)
    }

    /// Non-negative 52-bit limbs of the same value plus 2^16·p (below 2^398).
    #[target_feature(enable = "avx512f,avx512ifma")]
    #[inline]
    fn normalized(&self) -> [__m512i; LIMBS] {
        self.add(&Fp::splat(&OFFSET)).carried()
    }

    /// The same non-negative value with its carries propagated: 52-bit limbs, the top one
    /// holding the rest.
    #[target_feature(enable = "avx512f,avx512ifma")]
    #[inline]
    fn carried(&self) -> [__m512i; LIMBS] {
        let mask = splat(MASK);
        let mut out = self.0;
        for i in 0..LIMBS - 1 {
            out[i + 1] = _mm512_add_epi64(out[i + 1], _mm512_srai_epi64::<52>(out[i]));
            out[i] = _mm512_and_si512(out[i], mask);
        }
        out
    }

    /// The Montgomery product `a·b / 2^416` of normalised operands (operand scanning, one
    /// reduction step per limb of `a`).
    #[target_feature(enable = "avx512f,avx512ifma")]
    #[inline]
    fn montgomery(a: &[__m512i; LIMBS], b: &[__m512i; LIMBS]) -> Fp {
        let zero = _mm512_setzero_si512();
        let mut t = [zero; LIMBS + 1];
        for ai in a {
            for j in 0..LIMBS {
                t[j] = _mm512_madd52lo_epu64(t[j], *ai, b[j]);
                t[j + 1] = _mm512_madd52hi_epu64(t[j + 1], *ai, b[j]);
            }
            let m = _mm512_madd52lo_epu64(zero, t[0], splat(P_INV));
            for j in 0..LIMBS {
                t[j] = _mm512_madd52lo_epu64(t[j], m, splat(P[j]));
                t[j + 1] = _mm512_madd52hi_epu64(t[j + 1], m, splat(P[j]));
            }
            // t[0] is now 0 mod 2^52: divide by 2^52, its carry into the next limb.
            let carry = _mm512_srli_epi64::<52>(t[0]);
            for j in 0..LIMBS {
                t[j] = t[j + 1];
            }
            t[0] = _mm512_add_epi64(t[0], carry);
            t[LIMBS] = zero;
        }
        // One parallel carry step: limbs below 2^53 (the top limb keeps the value's top).
        let mask = splat(MASK);
        Fp(std::array::from_fn(|i| {
            let low = if i + 1 < LIMBS {
                _mm512_and_si512(t[i], mask)
            } else {
                t[i]
            };
            match i {
                0 => low,
                _ => _mm512_add_epi64(low, _mm512_srli_epi64::<52>(t[i - 1])),
            }
        }))
    }

    /// The same element as a value below 4p with limbs below 2^53: a quotient estimated
    /// from the top limb (through a 52-bit reciprocal of p's top limb, never too large) and
    /// taken away. For chains that add an operand back into a result (cyclotomic
    /// squarings), which would otherwise double its size each step.
    #[target_feature(enable = "avx512f,avx512ifma")]
    #[inline]
    pub(super) fn reduce(&self) -> Fp {
        let zero = _mm512_setzero_si512();
        let n = self.normalized();
        let q = _mm512_madd52hi_epu64(zero, n[LIMBS - 1], splat(TOP_RECIPROCAL));
        let mut r = n;
        for j in 0..LIMBS {
            r[j] = _mm512_sub_epi64(r[j], _mm512_madd52lo_epu64(zero, q, splat(P[j])));
            if j + 1 < LIMBS {
                r[j + 1] = _mm512_sub_epi64(r[j + 1], _mm512_madd52hi_epu64(zero, q, splat(P[j])));
            }
        }
        Fp(r)
    }

    /// `a·b` (below 2p, limbs unnormalised).
    #[target_feature(enable = "avx512f,avx512ifma")]
    #[inline]
    pub(super) fn mul(&self, b: &Fp) -> Fp {
        Fp::montgomery(&self.normalized(), &b.normalized())
    }

    #[target_feature(enable = "avx512f,avx512ifma")]
    #[inline]
    pub(super) fn sqr(&self) -> Fp {
        let a = self.normalized();
        Fp::montgomery(&a, &a)
    }

    /// Eight elements given as 52-bit limbs (in whatever Montgomery form they are), no
    /// conversion.
    #[target_feature(enable = "avx512f,avx512ifma")]
    #[inline]
    pub(super) fn from_lanes(lanes: &[Limbs; 8]) -> Fp {
        Fp(std::array::from_fn(|i| {
            let column: [u64; 8] = std::array::from_fn(|lane| lanes[lane][i]);
            // SAFETY: `column` is the eight u64 (64 bytes) the load reads, at any alignment.
            unsafe { _mm512_loadu_epi64(column.as_ptr() as *const i64) }
        }))
    }

    /// Each lane's 52-bit limbs of a non-negative value.
    #[target_feature(enable = "avx512f,avx512ifma")]
    #[inline]
    fn to_lanes(self) -> [Limbs; 8] {
        let limbs = self.carried();
        let mut columns = [[0u64; 8]; LIMBS];
        for (column, limb) in columns.iter_mut().zip(limbs) {
            // SAFETY: `column` is the eight u64 (64 bytes) the store writes, at any alignment.
            unsafe { _mm512_storeu_epi64(column.as_mut_ptr() as *mut i64, limb) };
        }
        std::array::from_fn(|lane| std::array::from_fn(|i| columns[i][lane]))
    }
}

/// The bridge to and from blst's representation (R = 2^384): multiplying by 2^448 mod p
/// turns `x·2^384` into `x·2^416`, multiplying by 2^384 mod p turns it back.
#[derive(Clone, Copy)]
pub(super) struct Bridge {
    into: Limbs,
    out_of: Limbs,
}

impl Bridge {
    /// The two constants, from blst itself (its Montgomery forms of 2^64 and of 1 are the
    /// integers 2^448 and 2^384 mod p).
    pub(super) fn new() -> Bridge {
        let montgomery = |x: Blst| {
            let mut out = blst::blst_fp::default();
            // SAFETY: six limbs in, one element out.
            unsafe { blst::blst_fp_from_uint64(&mut out, x.as_ptr()) };
            radix52(widen(out.l))
        };
        Bridge {
            into: montgomery([0, 1, 0, 0, 0, 0]),
            out_of: montgomery([1, 0, 0, 0, 0, 0]),
        }
    }

    /// Eight blst elements as lanes.
    #[target_feature(enable = "avx512f,avx512ifma")]
    #[inline]
    pub(super) fn load(&self, x: [&Blst; 8]) -> Fp {
        let lanes: [Limbs; 8] = std::array::from_fn(|lane| radix52(widen(*x[lane])));
        Fp::from_lanes(&lanes).mul(&Fp::splat(&self.into))
    }

    /// One blst element in this module's form, for constants.
    #[target_feature(enable = "avx512f,avx512ifma")]
    #[inline]
    pub(super) fn constant(&self, x: &Blst) -> Limbs {
        let fp = self.load([x; 8]);
        Fp::canonical(fp)[0]
    }

    /// Each lane as blst's fully reduced element.
    #[target_feature(enable = "avx512f,avx512ifma")]
    #[inline]
    pub(super) fn store(&self, x: &Fp) -> [Blst; 8] {
        let lanes = Fp::canonical(x.mul(&Fp::splat(&self.out_of)));
        lanes.map(|l| {
            let mut w = [0u64; 6];
            for (i, limb) in l.iter().enumerate() {
                let (word, shift) = (52 * i / 64, 52 * i % 64);
                w[word] |= limb << shift;
                if shift > 12 && word + 1 < 6 {
                    w[word + 1] |= limb >> (64 - shift);
                }
            }
            w
        })
    }
}

impl Fp {
    /// Each lane of a product (non-negative, below 2p) reduced below p, in radix 2^52.
    #[target_feature(enable = "avx512f,avx512ifma")]
    #[inline]
    fn canonical(product: Fp) -> [Limbs; 8] {
        product
            .to_lanes()
            .map(|l| if less(&l, &P) { l } else { minus(&l, &P) })
    }
}

fn less(a: &Limbs, b: &Limbs) -> bool {
    for i in (0..LIMBS).rev() {
        if a[i] != b[i] {
            return a[i] < b[i];
        }
    }
    false
}

fn minus(a: &Limbs, b: &Limbs) -> Limbs {
    let mut out = [0u64; LIMBS];
    let mut borrow = 0u64;
    for i in 0..LIMBS {
        let v = a[i].wrapping_sub(b[i]).wrapping_sub(borrow);
        borrow = v >> 63;
        out[i] = v & MASK;
    }
    out
}
