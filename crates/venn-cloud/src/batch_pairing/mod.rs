//! Eight pairings with one prepared G2 point at once, on AVX-512 IFMA: the server's hot
//! loop (one pairing per stored item: docs/cloud.md, The cryptography and Performance).
//!
//! blst computes one pairing at a time with 64-bit `mulx` arithmetic; here eight items
//! share every instruction, each in its own 64-bit lane, and F_p products use the 52-bit
//! multiply-adds of IFMA ([`fp`]). The algorithms are blst's, step for step — its Miller
//! loop over the token's precomputed lines (`miller_loop_lines`) and its final
//! exponentiation (`final_exp`, hard part after Fuentes-Castañeda et al. via zkcrypto) —
//! so the tests compare every output with blst bit for bit. Only the arithmetic
//! underneath differs.
//!
//! Used where the CPU has AVX-512F and IFMA ([`available`]); elsewhere the caller pairs
//! with blst one item at a time. Only public data passes through here (stored items and a
//! run's token), so nothing needs to be constant-time.

mod fp;
mod tower;

use blst::{blst_fp12, blst_fp2, blst_fp6, blst_p2_affine};
use blstrs::{G1Affine, G2Affine};
use fp::{Bridge, Fp, Limbs};
use group::prime::PrimeCurveAffine;
use tower::{Constants, Fp12, Fp2, Fp6};

/// Items per batch: one per lane.
pub(crate) const LANES: usize = 8;

/// Lines of the Miller loop of BLS12-381 (blst's `precompute_lines`).
const LINES: usize = 68;

/// Whether this module may run here: AVX-512F and IFMA, where this CPU has them and
/// `venn::util::cpu`'s level allows them.
pub(crate) fn available() -> bool {
    use venn::util::cpu::{has_all, Feature};
    has_all(&[Feature::Avx512f, Feature::Avx512ifma])
}

/// A G2 point's Miller-loop lines in this module's form, and the constants of the
/// arithmetic.
pub(crate) struct Lines {
    /// Per line its three F_p2 coefficients `x, y, z` (as blst packs a line).
    lines: Vec<[[Limbs; 2]; 3]>,
    bridge: Bridge,
    constants: Constants,
}

impl Lines {
    /// The lines of `q` (not the identity), or `None` where the CPU lacks IFMA.
    pub(crate) fn new(q: &G2Affine) -> Option<Lines> {
        if !available() {
            return None;
        }
        let mut raw = vec![blst_fp6::default(); LINES];
        let q: &blst_p2_affine = q.as_ref();
        // SAFETY: blst writes exactly 68 lines for an affine point.
        unsafe { blst::blst_precompute_lines(raw.as_mut_ptr(), q) };
        // SAFETY: available() checked the CPU.
        Some(unsafe { Lines::convert(&raw) })
    }

    #[target_feature(enable = "avx512f,avx512ifma")]
    fn convert(raw: &[blst_fp6]) -> Lines {
        let bridge = Bridge::new();
        let fp2 = |x: &blst_fp2| x.fp.each_ref().map(|e| bridge.constant(&e.l));
        Lines {
            lines: raw.iter().map(|l| l.fp2.each_ref().map(fp2)).collect(),
            constants: Constants::new(&bridge),
            bridge,
        }
    }

    /// `e(P_k, Q)` for eight points (none the identity): Miller loop and final
    /// exponentiation, as blst's `miller_loop_lines` and `final_exp` give them.
    pub(crate) fn pairings(&self, points: &[G1Affine; LANES]) -> [blst_fp12; LANES] {
        assert!(points.iter().all(|p| !bool::from(p.is_identity())));
        // SAFETY: a `Lines` exists only where available() held.
        unsafe { self.pairings_ifma(points) }
    }

    #[target_feature(enable = "avx512f,avx512ifma")]
    fn pairings_ifma(&self, points: &[G1Affine; LANES]) -> [blst_fp12; LANES] {
        let affine = points
            .each_ref()
            .map(|p| -> &blst::blst_p1_affine { p.as_ref() });
        let x = self.bridge.load(affine.map(|p| &p.x.l));
        let y = self.bridge.load(affine.map(|p| &p.y.l));
        let f = self.miller_loop(&x.double().neg(), &y.double());
        let f = final_exponentiation(&f, &self.bridge, &self.constants);
        f.store(&self.bridge)
    }

    /// The line `k` evaluated at P, given −2·x_P and 2·y_P (blst's `post_line_by_Px2`).
    #[target_feature(enable = "avx512f,avx512ifma")]
    #[inline]
    fn line(&self, k: usize, x2: &Fp, y2: &Fp) -> [Fp2; 3] {
        let [a, b, c] = &self.lines[k];
        [
            Fp2::splat(a),
            Fp2::splat(b).mul_by_fp(x2),
            Fp2::splat(c).mul_by_fp(y2),
        ]
    }

    /// blst's `miller_loop_lines`: the loop over the bits of |z| = 0xd201000000010000,
    /// a squaring per bit and a line per doubling and per addition, conjugated at the end
    /// for z < 0.
    #[target_feature(enable = "avx512f,avx512ifma")]
    fn miller_loop(&self, x2: &Fp, y2: &Fp) -> Fp12 {
        let [l0, l1, l2] = self.line(0, x2, y2);
        let zero = Fp2::zero();
        let mut f = Fp12([Fp6([l0, l1, zero]), Fp6([zero, l2, zero])]);
        let mut k = 1;
        for doublings in [2, 3, 9, 32, 16] {
            let [a, b, c] = self.line(k, x2, y2);
            f = f.mul_by_xy00z0(&a, &b, &c);
            k += 1;
            for _ in 0..doublings {
                f = f.sqr();
                let [a, b, c] = self.line(k, x2, y2);
                f = f.mul_by_xy00z0(&a, &b, &c);
                k += 1;
            }
        }
        debug_assert_eq!(k, LINES);
        f.conjugate()
    }
}

/// An exponent of G_T in width-5 non-adjacent form, for [`powers`]: every lane is raised
/// to the same exponent, so the digits are computed once.
pub(crate) struct Exponent(Vec<i8>);

impl Exponent {
    /// The digits of `e` (little-endian 64-bit limbs), least significant first.
    pub(crate) fn new(e: &[u64; 4]) -> Exponent {
        const WIDTH: u32 = 5;
        let mut k = [e[0], e[1], e[2], e[3], 0];
        let mut digits = Vec::with_capacity(257);
        while k.iter().any(|&l| l != 0) {
            let mut d = 0i64;
            if k[0] & 1 == 1 {
                let m = (k[0] & ((1 << WIDTH) - 1)) as i64;
                d = if m >= 1 << (WIDTH - 1) {
                    m - (1 << WIDTH)
                } else {
                    m
                };
                // k −= d, as a 320-bit number.
                let (mut carry, negative) = (d.unsigned_abs(), d < 0);
                for limb in k.iter_mut() {
                    let (v, c) = match negative {
                        true => limb.overflowing_add(carry),
                        false => limb.overflowing_sub(carry),
                    };
                    (*limb, carry) = (v, c as u64);
                }
            }
            digits.push(d as i8);
            for i in 0..k.len() {
                k[i] = (k[i] >> 1) | k.get(i + 1).map_or(0, |h| h << 63);
            }
        }
        Exponent(digits)
    }
}

/// `v^e` for eight values of G_T (docs/cloud.md, Pre-tokens: a side's values raised to
/// the run's ratio): cyclotomic squarings, a table of the odd powers up to 15, negative
/// digits by conjugation (the inverse in G_T). `e` must not be zero.
pub(crate) fn powers(values: &[blst_fp12; LANES], e: &Exponent) -> [blst_fp12; LANES] {
    assert!(available() && !e.0.is_empty());
    // SAFETY: the CPU was checked.
    unsafe { powers_ifma(values, e) }
}

#[target_feature(enable = "avx512f,avx512ifma")]
fn powers_ifma(values: &[blst_fp12; LANES], e: &Exponent) -> [blst_fp12; LANES] {
    let bridge = Bridge::new();
    let a = Fp12::load(&bridge, values);
    let a2 = a.cyclotomic_sqr();
    let mut odd = [a; 8];
    for i in 1..odd.len() {
        odd[i] = odd[i - 1].mul(&a2);
    }
    let mut r: Option<Fp12> = None;
    let mut squarings = 0;
    for &d in e.0.iter().rev() {
        if let Some(x) = r.as_mut() {
            *x = x.cyclotomic_sqr();
            squarings += 1;
            if squarings % 4 == 0 {
                *x = x.reduce();
            }
        }
        if d != 0 {
            let t = odd[(d.unsigned_abs() as usize - 1) / 2];
            let t = if d < 0 { t.conjugate() } else { t };
            r = Some(r.map_or(t, |x| x.mul(&t)));
            squarings = 0;
        }
    }
    r.expect("a nonzero exponent").store(&bridge)
}

/// `a^{|z|/2}` conjugated (z < 0), for `a` in the cyclotomic subgroup (blst's
/// `raise_to_z_div_by_2`).
#[target_feature(enable = "avx512f,avx512ifma")]
fn raise_to_z_div_by_2(a: &Fp12) -> Fp12 {
    let mut r = a.cyclotomic_sqr();
    for squarings in [2, 3, 9, 32, 15] {
        r = r.mul(a);
        for i in 1..=squarings {
            r = r.cyclotomic_sqr();
            if i % 4 == 0 {
                r = r.reduce();
            }
        }
    }
    r.conjugate()
}

/// `a^z` for `a` in the cyclotomic subgroup.
#[target_feature(enable = "avx512f,avx512ifma")]
fn raise_to_z(a: &Fp12) -> Fp12 {
    raise_to_z_div_by_2(a).cyclotomic_sqr()
}

/// `f^((p^12 − 1) / r)` (up to the fixed power 3 blst's hard part also computes), step for
/// step as blst's `final_exp`.
#[target_feature(enable = "avx512f,avx512ifma")]
fn final_exponentiation(f: &Fp12, bridge: &Bridge, k: &Constants) -> Fp12 {
    // Easy part: f^((p^6 − 1)(p^2 + 1)).
    let r = f.conjugate().mul(&f.inverse(bridge));
    let r = r.mul(&r.frobenius(2, k));
    // Hard part.
    let y0 = r.cyclotomic_sqr();
    let y1 = raise_to_z(&y0);
    let y2 = raise_to_z_div_by_2(&y1);
    let y1 = y1.mul(&r.conjugate()).conjugate().mul(&y2);
    let y2 = raise_to_z(&y1);
    let y3 = raise_to_z(&y2);
    let y1 = y1.conjugate();
    let y3 = y3.mul(&y1);
    let y1 = y1.conjugate().frobenius(3, k);
    let y2 = y2.frobenius(2, k);
    let y1 = y1.mul(&y2);
    let y2 = raise_to_z(&y3).mul(&y0).mul(&r);
    let y1 = y1.mul(&y2);
    y1.mul(&y3.frobenius(1, k))
}

#[cfg(test)]
mod tests {
    use super::*;
    use blstrs::{G1Projective, G2Projective, Gt, Scalar};
    use group::{Curve, Group};

    fn blst(f: impl Fn(&mut blst_fp12)) -> blst_fp12 {
        let mut out = blst_fp12::default();
        f(&mut out);
        out
    }

    fn lines_of(q: &G2Affine) -> Vec<blst_fp6> {
        let mut raw = vec![blst_fp6::default(); LINES];
        // SAFETY: 68 lines out for an affine point.
        unsafe { blst::blst_precompute_lines(raw.as_mut_ptr(), q.as_ref()) };
        raw
    }

    #[test]
    fn eight_lanes_equal_blst_bit_for_bit() {
        if !available() {
            eprintln!("skipped: this CPU has no AVX-512 IFMA");
            return;
        }
        let mut rng = rand_core::OsRng;
        for _ in 0..3 {
            let q = G2Projective::random(&mut rng).to_affine();
            let (lines, raw) = (Lines::new(&q).unwrap(), lines_of(&q));
            let points: [G1Affine; LANES] =
                std::array::from_fn(|_| G1Projective::random(&mut rng).to_affine());
            for (p, got) in points.iter().zip(lines.pairings(&points)) {
                // SAFETY: 68 lines and an affine point in, one element out.
                let want = blst(|out| unsafe {
                    let mut ml = blst_fp12::default();
                    blst::blst_miller_loop_lines(&mut ml, raw.as_ptr(), p.as_ref());
                    blst::blst_final_exp(out, &ml);
                });
                assert!(got == want, "a lane differs from blst");
            }
        }
    }

    /// Powers of eight values against blstrs's exponentiation in G_T, for exponents of
    /// every size (one bit, all ones, random).
    #[test]
    fn powers_equal_blstrs() {
        if !available() {
            eprintln!("skipped: this CPU has no AVX-512 IFMA");
            return;
        }
        let mut rng = rand_core::OsRng;
        let gts: [Gt; LANES] = std::array::from_fn(|_| Gt::random(&mut rng));
        let values = gts.map(|g| *crate::crypto::gt_limbs(&g));
        let random = {
            use ff::Field;
            Scalar::random(&mut rng)
        };
        for s in [
            Scalar::from(1u64),
            Scalar::from(u64::MAX),
            -Scalar::from(1u64),
            random,
        ] {
            let bytes = s.to_bytes_le();
            let e: [u64; 4] = std::array::from_fn(|i| {
                u64::from_le_bytes(bytes[8 * i..][..8].try_into().unwrap())
            });
            let got = powers(&values, &Exponent::new(&e));
            for (g, v) in gts.iter().zip(got) {
                assert!(v == *crate::crypto::gt_limbs(&(g * s)));
            }
        }
    }

    #[test]
    fn every_step_equals_blst() {
        if !available() {
            eprintln!("skipped: this CPU has no AVX-512 IFMA");
            return;
        }
        // SAFETY: the CPU was checked.
        unsafe { every_step_ifma() }
    }

    #[target_feature(enable = "avx512f,avx512ifma")]
    fn every_step_ifma() {
        let mut rng = rand_core::OsRng;
        let q = G2Projective::random(&mut rng).to_affine();
        let lines = Lines::new(&q).unwrap();
        let (b, k) = (&lines.bridge, &lines.constants);
        let gts: [Gt; LANES] = std::array::from_fn(|_| Gt::random(&mut rng));
        let raw = |i: usize| -> [blst_fp12; LANES] {
            std::array::from_fn(|l| *crate::crypto::gt_limbs(&gts[(l + i) % LANES]))
        };
        let into = |x: &[blst_fp12; LANES]| Fp12::load(b, x);
        let (xs, ys) = (raw(0), raw(3));
        let (x, y) = (into(&xs), into(&ys));
        let check = |got: Fp12, want: &dyn Fn(&mut blst_fp12, &blst_fp12, &blst_fp12), what| {
            let got = got.store(b);
            for l in 0..LANES {
                assert!(got[l] == blst(|o| want(o, &xs[l], &ys[l])), "{what}");
            }
        };
        // Each blst call below reads the elements behind its references and writes one
        // to `o`: all live values, `o` apart from the others.
        check(x, &|o, a, _| *o = *a, "conversion");
        // SAFETY: elements in, one element out (above).
        let mul = |o: &mut _, a: &_, c: &_| unsafe { blst::blst_fp12_mul(o, a, c) };
        check(x.mul(&y), &mul, "mul");
        // SAFETY: as above.
        let sqr = |o: &mut _, a: &_, _: &_| unsafe { blst::blst_fp12_sqr(o, a) };
        check(x.sqr(), &sqr, "sqr");
        // SAFETY: as above.
        let inverse = |o: &mut _, a: &_, _: &_| unsafe { blst::blst_fp12_inverse(o, a) };
        check(x.inverse(b), &inverse, "inverse");
        // SAFETY: as above.
        let cyclotomic = |o: &mut blst_fp12, a: &blst_fp12, _: &blst_fp12| unsafe {
            blst::blst_fp12_cyclotomic_sqr(o, a)
        };
        check(x.cyclotomic_sqr(), &cyclotomic, "cyclotomic squaring");
        for n in 1..=3 {
            // SAFETY: as above.
            let frobenius = |o: &mut blst_fp12, a: &blst_fp12, _: &blst_fp12| unsafe {
                blst::blst_fp12_frobenius_map(o, a, n)
            };
            check(x.frobenius(n, k), &frobenius, "frobenius");
        }
        let line = lines_of(&q)[5];
        let [lx, ly, lz] = line
            .fp2
            .map(|c| Fp2(c.fp.map(|e| Fp::splat(&b.constant(&e.l)))));
        // SAFETY: as above (`line` too is a live element).
        let by_line = |o: &mut blst_fp12, a: &blst_fp12, _: &blst_fp12| unsafe {
            blst::blst_fp12_mul_by_xy00z0(o, a, &line)
        };
        check(x.mul_by_xy00z0(&lx, &ly, &lz), &by_line, "line");
        // Long chains of squarings with the reductions (values and limbs stay bounded)
        // against blstrs's exponentiation in G_T, and blst's final exponentiation.
        let z = 0xd201_0000_0001_0000u64;
        let chain = |got: Fp12, e: u64, what| {
            let got = got.store(b);
            for l in 0..LANES {
                let want = -(gts[l] * Scalar::from(e));
                assert!(got[l] == *crate::crypto::gt_limbs(&want), "{what}");
            }
        };
        chain(raise_to_z(&x), z, "x^z");
        chain(raise_to_z_div_by_2(&x), z / 2, "x^(z/2)");
        let f = final_exponentiation(&x, b, k);
        // SAFETY: as above.
        let final_exp = |o: &mut _, a: &_, _: &_| unsafe { blst::blst_final_exp(o, a) };
        check(f, &final_exp, "final exp");
        // The largest representations (limbs p − 1 everywhere), through a long chain.
        let mut p_minus_1 = blst::blst_fp { l: fp::P64 };
        p_minus_1.l[0] -= 1;
        let mut big = blst_fp12::default();
        for c in big
            .fp6
            .iter_mut()
            .flat_map(|c| &mut c.fp2)
            .flat_map(|c| &mut c.fp)
        {
            *c = p_minus_1;
        }
        let mut got = into(&[big; LANES]).mul(&into(&[big; LANES]));
        // SAFETY: as above.
        let mut want = blst(|o| unsafe { blst::blst_fp12_mul(o, &big, &big) });
        for i in 1..=40 {
            got = got.cyclotomic_sqr();
            if i % 4 == 0 {
                got = got.reduce();
            }
            // SAFETY: as above.
            want = blst(|o| unsafe { blst::blst_fp12_cyclotomic_sqr(o, &want) });
        }
        assert!(got.store(b).iter().all(|g| *g == want), "a long chain");
    }
}
