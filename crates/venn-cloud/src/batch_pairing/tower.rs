//! The BLS12-381 extension tower over eight lanes, formula for formula as blst's
//! `fp12_tower.c` (its non-lazy variants), so that every intermediate value matches blst's:
//!
//! `F_p2 = F_p[u] / (u² + 1)`, `F_p6 = F_p2[v] / (v³ − (u + 1))`, `F_p12 = F_p6[w] / (w² − v)`.

use super::fp::{Bridge, Fp, Limbs};

/// Eight elements of F_p2.
#[derive(Clone, Copy)]
pub(super) struct Fp2(pub [Fp; 2]);

/// Eight elements of F_p6.
#[derive(Clone, Copy)]
pub(super) struct Fp6(pub [Fp2; 3]);

/// Eight elements of F_p12.
#[derive(Clone, Copy)]
pub(super) struct Fp12(pub [Fp6; 2]);

impl Fp2 {
    #[target_feature(enable = "avx512f,avx512ifma")]
    #[inline]
    pub(super) fn zero() -> Fp2 {
        Fp2([Fp::zero(); 2])
    }

    #[target_feature(enable = "avx512f,avx512ifma")]
    #[inline]
    pub(super) fn splat(x: &[Limbs; 2]) -> Fp2 {
        Fp2([Fp::splat(&x[0]), Fp::splat(&x[1])])
    }

    #[target_feature(enable = "avx512f,avx512ifma")]
    #[inline]
    pub(super) fn add(&self, b: &Fp2) -> Fp2 {
        Fp2([self.0[0].add(&b.0[0]), self.0[1].add(&b.0[1])])
    }

    #[target_feature(enable = "avx512f,avx512ifma")]
    #[inline]
    pub(super) fn sub(&self, b: &Fp2) -> Fp2 {
        Fp2([self.0[0].sub(&b.0[0]), self.0[1].sub(&b.0[1])])
    }

    #[target_feature(enable = "avx512f,avx512ifma")]
    #[inline]
    pub(super) fn neg(&self) -> Fp2 {
        Fp2([self.0[0].neg(), self.0[1].neg()])
    }

    #[target_feature(enable = "avx512f,avx512ifma")]
    #[inline]
    pub(super) fn double(&self) -> Fp2 {
        self.add(self)
    }

    /// Karatsuba: three products.
    #[target_feature(enable = "avx512f,avx512ifma")]
    #[inline]
    pub(super) fn mul(&self, b: &Fp2) -> Fp2 {
        let t0 = self.0[0].mul(&b.0[0]);
        let t1 = self.0[1].mul(&b.0[1]);
        let t2 = self.0[0].add(&self.0[1]).mul(&b.0[0].add(&b.0[1]));
        Fp2([t0.sub(&t1), t2.sub(&t0).sub(&t1)])
    }

    /// `(a0 + a1)(a0 − a1) + 2·a0·a1·u`.
    #[target_feature(enable = "avx512f,avx512ifma")]
    #[inline]
    pub(super) fn sqr(&self) -> Fp2 {
        let [a0, a1] = &self.0;
        Fp2([a0.add(a1).mul(&a0.sub(a1)), a0.mul(a1).double()])
    }

    #[target_feature(enable = "avx512f,avx512ifma")]
    #[inline]
    pub(super) fn mul_by_fp(&self, b: &Fp) -> Fp2 {
        Fp2([self.0[0].mul(b), self.0[1].mul(b)])
    }

    /// Multiplication by the non-residue u + 1.
    #[target_feature(enable = "avx512f,avx512ifma")]
    #[inline]
    pub(super) fn mul_by_u_plus_1(&self) -> Fp2 {
        let [a0, a1] = &self.0;
        Fp2([a0.sub(a1), a0.add(a1)])
    }

    /// The p-power Frobenius map applied n times (conjugation for odd n).
    #[target_feature(enable = "avx512f,avx512ifma")]
    #[inline]
    fn frobenius(&self, n: usize) -> Fp2 {
        match n % 2 {
            1 => Fp2([self.0[0], self.0[1].neg()]),
            _ => *self,
        }
    }

    /// `1 / a` lane by lane (through blst's inversion in F_p: this runs once per
    /// final exponentiation).
    #[target_feature(enable = "avx512f,avx512ifma")]
    #[inline]
    fn inverse(&self, bridge: &Bridge) -> Fp2 {
        let [a0, a1] = &self.0;
        let norm = bridge.store(&a0.sqr().add(&a1.sqr()));
        let inverses = norm.map(|n| {
            let (mut out, n) = (blst::blst_fp::default(), blst::blst_fp { l: n });
            // SAFETY: one element in, one out.
            unsafe { blst::blst_fp_inverse(&mut out, &n) };
            out.l
        });
        let t = bridge.load(std::array::from_fn(|lane| &inverses[lane]));
        Fp2([a0.mul(&t), a1.mul(&t).neg()])
    }
}

impl Fp6 {
    #[target_feature(enable = "avx512f,avx512ifma")]
    #[inline]
    pub(super) fn add(&self, b: &Fp6) -> Fp6 {
        Fp6(std::array::from_fn(|i| self.0[i].add(&b.0[i])))
    }

    #[target_feature(enable = "avx512f,avx512ifma")]
    #[inline]
    pub(super) fn sub(&self, b: &Fp6) -> Fp6 {
        Fp6(std::array::from_fn(|i| self.0[i].sub(&b.0[i])))
    }

    #[target_feature(enable = "avx512f,avx512ifma")]
    #[inline]
    pub(super) fn neg(&self) -> Fp6 {
        Fp6(self.0.map(|x| x.neg()))
    }

    /// Multiplication by v: `(a0, a1, a2) ↦ (a2·(u + 1), a0, a1)`.
    #[target_feature(enable = "avx512f,avx512ifma")]
    #[inline]
    fn mul_by_v(&self) -> Fp6 {
        Fp6([self.0[2].mul_by_u_plus_1(), self.0[0], self.0[1]])
    }

    /// Karatsuba over F_p2: six products.
    #[target_feature(enable = "avx512f,avx512ifma")]
    pub(super) fn mul(&self, b: &Fp6) -> Fp6 {
        let (a, b) = (&self.0, &b.0);
        let t0 = a[0].mul(&b[0]);
        let t1 = a[1].mul(&b[1]);
        let t2 = a[2].mul(&b[2]);
        let t3 = a[1].add(&a[2]).mul(&b[1].add(&b[2])).sub(&t1).sub(&t2);
        let r1 = a[0].add(&a[1]).mul(&b[0].add(&b[1])).sub(&t0).sub(&t1);
        let r2 = a[0].add(&a[2]).mul(&b[0].add(&b[2])).sub(&t0).sub(&t2);
        Fp6([
            t3.mul_by_u_plus_1().add(&t0),
            r1.add(&t2.mul_by_u_plus_1()),
            r2.add(&t1),
        ])
    }

    #[target_feature(enable = "avx512f,avx512ifma")]
    pub(super) fn sqr(&self) -> Fp6 {
        let a = &self.0;
        let s0 = a[0].sqr();
        let m01 = a[0].mul(&a[1]).double();
        let m12 = a[1].mul(&a[2]).double();
        let s2 = a[2].sqr();
        let r2 = a[2]
            .add(&a[1])
            .add(&a[0])
            .sqr()
            .sub(&s0)
            .sub(&s2)
            .sub(&m01)
            .sub(&m12);
        Fp6([
            m12.mul_by_u_plus_1().add(&s0),
            s2.mul_by_u_plus_1().add(&m01),
            r2,
        ])
    }

    /// Multiplication by `(b0, b1, 0)`.
    #[target_feature(enable = "avx512f,avx512ifma")]
    #[inline]
    fn mul_by_xy0(&self, b0: &Fp2, b1: &Fp2) -> Fp6 {
        let a = &self.0;
        let t0 = a[0].mul(b0);
        let t1 = a[1].mul(b1);
        let t3 = a[2].mul(b1).mul_by_u_plus_1();
        let r1 = a[0].add(&a[1]).mul(&b0.add(b1)).sub(&t0).sub(&t1);
        let r2 = a[2].mul(b0).add(&t1);
        Fp6([t3.add(&t0), r1, r2])
    }

    /// Multiplication by `(0, b, 0)`.
    #[target_feature(enable = "avx512f,avx512ifma")]
    #[inline]
    fn mul_by_0y0(&self, b: &Fp2) -> Fp6 {
        let a = &self.0;
        Fp6([a[2].mul(b).mul_by_u_plus_1(), a[0].mul(b), a[1].mul(b)])
    }

    #[target_feature(enable = "avx512f,avx512ifma")]
    fn inverse(&self, bridge: &Bridge) -> Fp6 {
        let a = &self.0;
        let c0 = a[0].sqr().sub(&a[1].mul(&a[2]).mul_by_u_plus_1());
        let c1 = a[2].sqr().mul_by_u_plus_1().sub(&a[0].mul(&a[1]));
        let c2 = a[1].sqr().sub(&a[0].mul(&a[2]));
        let t = c1
            .mul(&a[2])
            .add(&c2.mul(&a[1]))
            .mul_by_u_plus_1()
            .add(&c0.mul(&a[0]))
            .inverse(bridge);
        Fp6([c0.mul(&t), c1.mul(&t), c2.mul(&t)])
    }

    /// The p^n-power Frobenius map, n ∈ {1, 2, 3}.
    #[target_feature(enable = "avx512f,avx512ifma")]
    fn frobenius(&self, n: usize, k: &Constants) -> Fp6 {
        let a = self.0.map(|x| x.frobenius(n));
        let c2 = Fp::splat(&k.fp6_c2[n - 1]);
        Fp6([
            a[0],
            a[1].mul(&Fp2::splat(&k.fp6_c1[n - 1])),
            a[2].mul_by_fp(&c2),
        ])
    }
}

impl Fp12 {
    #[target_feature(enable = "avx512f,avx512ifma")]
    pub(super) fn mul(&self, b: &Fp12) -> Fp12 {
        let (a, b) = (&self.0, &b.0);
        let t0 = a[0].mul(&b[0]);
        let t1 = a[1].mul(&b[1]);
        let r1 = b[0].add(&b[1]).mul(&a[0].add(&a[1])).sub(&t0).sub(&t1);
        Fp12([t0.add(&t1.mul_by_v()), r1])
    }

    /// Multiplication by a line: the sparse element with F_p2 coefficients at 1, v·w⁰… as
    /// blst packs them, `(x, y, 0) + (0, z, 0)·w`.
    #[target_feature(enable = "avx512f,avx512ifma")]
    pub(super) fn mul_by_xy00z0(&self, x: &Fp2, y: &Fp2, z: &Fp2) -> Fp12 {
        let a = &self.0;
        let t0 = a[0].mul_by_xy0(x, y);
        let t1 = a[1].mul_by_0y0(z);
        let r1 = a[0].add(&a[1]).mul_by_xy0(x, &y.add(z)).sub(&t0).sub(&t1);
        Fp12([t0.add(&t1.mul_by_v()), r1])
    }

    #[target_feature(enable = "avx512f,avx512ifma")]
    pub(super) fn sqr(&self) -> Fp12 {
        let a = &self.0;
        let t0 = a[0].add(&a[1]).mul(&a[0].add(&a[1].mul_by_v()));
        let t1 = a[0].mul(&a[1]);
        Fp12([t0.sub(&t1).sub(&t1.mul_by_v()), t1.add(&t1)])
    }

    #[target_feature(enable = "avx512f,avx512ifma")]
    #[inline]
    pub(super) fn conjugate(&self) -> Fp12 {
        Fp12([self.0[0], self.0[1].neg()])
    }

    #[target_feature(enable = "avx512f,avx512ifma")]
    pub(super) fn inverse(&self, bridge: &Bridge) -> Fp12 {
        let a = &self.0;
        let t = a[0].sqr().sub(&a[1].sqr().mul_by_v()).inverse(bridge);
        Fp12([a[0].mul(&t), a[1].mul(&t).neg()])
    }

    /// Squaring in the cyclotomic subgroup (Granger–Scott: three F_p4 squarings). The
    /// result holds ±2·`self`, so a chain of these must [`Fp12::reduce`] at least every
    /// fourth step: the limbs (and the value) double with each.
    #[target_feature(enable = "avx512f,avx512ifma")]
    pub(super) fn cyclotomic_sqr(&self) -> Fp12 {
        let a = &self.0;
        let t0 = sqr_fp4(&a[0].0[0], &a[1].0[1]);
        let t1 = sqr_fp4(&a[1].0[0], &a[0].0[2]);
        let t2 = sqr_fp4(&a[0].0[1], &a[1].0[2]);
        // 3·t − 2·a and 3·t + 2·a.
        let minus = |t: &Fp2, a: &Fp2| t.sub(a).double().add(t);
        let plus = |t: &Fp2, a: &Fp2| t.add(a).double().add(t);
        let t21 = t2[1].mul_by_u_plus_1();
        Fp12([
            Fp6([
                minus(&t0[0], &a[0].0[0]),
                minus(&t1[0], &a[0].0[1]),
                minus(&t2[0], &a[0].0[2]),
            ]),
            Fp6([
                plus(&t21, &a[1].0[0]),
                plus(&t0[1], &a[1].0[1]),
                plus(&t1[1], &a[1].0[2]),
            ]),
        ])
    }

    /// Eight of blst's elements, one per lane.
    #[target_feature(enable = "avx512f,avx512ifma")]
    pub(super) fn load(bridge: &Bridge, x: &[blst::blst_fp12; 8]) -> Fp12 {
        Fp12(std::array::from_fn(|i| {
            Fp6(std::array::from_fn(|j| {
                Fp2(std::array::from_fn(|k| {
                    bridge.load(std::array::from_fn(|lane| &x[lane].fp6[i].fp2[j].fp[k].l))
                }))
            }))
        }))
    }

    /// Each lane as blst's element (fully reduced).
    #[target_feature(enable = "avx512f,avx512ifma")]
    pub(super) fn store(&self, bridge: &Bridge) -> [blst::blst_fp12; 8] {
        let mut out = [blst::blst_fp12::default(); 8];
        for (i, c6) in self.0.iter().enumerate() {
            for (j, c2) in c6.0.iter().enumerate() {
                for (k, c) in c2.0.iter().enumerate() {
                    for (lane, l) in bridge.store(c).into_iter().enumerate() {
                        out[lane].fp6[i].fp2[j].fp[k] = blst::blst_fp { l };
                    }
                }
            }
        }
        out
    }

    /// Every coefficient below 4p ([`Fp::reduce`]).
    #[target_feature(enable = "avx512f,avx512ifma")]
    pub(super) fn reduce(&self) -> Fp12 {
        Fp12(
            self.0
                .map(|c6| Fp6(c6.0.map(|c2| Fp2(c2.0.map(|c| c.reduce()))))),
        )
    }

    /// The p^n-power Frobenius map, n ∈ {1, 2, 3}.
    #[target_feature(enable = "avx512f,avx512ifma")]
    pub(super) fn frobenius(&self, n: usize, k: &Constants) -> Fp12 {
        let c = Fp2::splat(&k.fp12[n - 1]);
        let r1 = self.0[1].frobenius(n, k);
        Fp12([self.0[0].frobenius(n, k), Fp6(r1.0.map(|x| x.mul(&c)))])
    }
}

/// `(a0 + a1·t)²` in `F_p4 = F_p2[t] / (t² − (u + 1))`.
#[target_feature(enable = "avx512f,avx512ifma")]
#[inline]
fn sqr_fp4(a0: &Fp2, a1: &Fp2) -> [Fp2; 2] {
    let t0 = a0.sqr();
    let t1 = a1.sqr();
    [
        t1.mul_by_u_plus_1().add(&t0),
        a0.add(a1).sqr().sub(&t0).sub(&t1),
    ]
}

/// The Frobenius coefficients (blst's `frobenius_map_fp6`/`_fp12` tables, in blst's
/// Montgomery form, converted once).
pub(super) struct Constants {
    fp6_c1: [[Limbs; 2]; 3],
    fp6_c2: [Limbs; 3],
    fp12: [[Limbs; 2]; 3],
}

/// R = 2^384 mod p: blst's one.
const ONE: [u64; 6] = [
    0x7609_0000_0002_fffd,
    0xebf4_000b_c40c_0002,
    0x5f48_9857_53c7_58ba,
    0x77ce_5853_7052_5745,
    0x5c07_1a97_a256_ec6d,
    0x15f6_5ec3_fa80_e493,
];

const ZERO: [u64; 6] = [0; 6];

/// The imaginary part of (u + 1)^((p − 1) / 3) (its real part is 0), which is also
/// (u + 1)^((2p^2 − 2) / 3).
const XI_P_MINUS_1_OVER_3: [u64; 6] = [
    0xcd03_c9e4_8671_f071,
    0x5dab_2246_1fcd_a5d2,
    0x5870_42af_d385_1b95,
    0x8eb6_0ebe_01ba_cb9e,
    0x03f9_7d6e_83d0_50d2,
    0x18f0_2065_5463_8741,
];

/// (u + 1)^((p^n − 1) / 3), n = 1, 2, 3.
const FP6_C1: [[[u64; 6]; 2]; 3] = [
    [ZERO, XI_P_MINUS_1_OVER_3],
    [
        [
            0x30f1_361b_798a_64e8,
            0xf3b8_ddab_7ece_5a2a,
            0x16a8_ca3a_c615_77f7,
            0xc26a_2ff8_74fd_029b,
            0x3636_b766_6070_1c6e,
            0x051b_a4ab_241b_6160,
        ],
        ZERO,
    ],
    [ZERO, ONE],
];

/// (u + 1)^((2p^n − 2) / 3), n = 1, 2, 3 (in F_p).
const FP6_C2: [[u64; 6]; 3] = [
    [
        0x890d_c9e4_8675_45c3,
        0x2af3_2253_3285_a5d5,
        0x5088_0866_309b_7e2c,
        0xa20d_1b8c_7e88_1024,
        0x14e4_f04f_e2db_9068,
        0x14e5_6d3f_1564_853a,
    ],
    XI_P_MINUS_1_OVER_3,
    [
        0x43f5_ffff_fffc_aaae,
        0x32b7_fff2_ed47_fffd,
        0x07e8_3a49_a2e9_9d69,
        0xeca8_f331_8332_bb7a,
        0xef14_8d1e_a0f4_c069,
        0x040a_b326_3eff_0206,
    ],
];

/// (u + 1)^((p^n − 1) / 6), n = 1, 2, 3.
const FP12_C: [[[u64; 6]; 2]; 3] = [
    [
        [
            0x0708_9552_b319_d465,
            0xc669_5f92_b50a_8313,
            0x97e8_3ccc_d117_228f,
            0xa35b_aeca_b2dc_29ee,
            0x1ce3_93ea_5daa_ce4d,
            0x08f2_220f_b0fb_66eb,
        ],
        [
            0xb2f6_6aad_4ce5_d646,
            0x5842_a06b_fc49_7cec,
            0xcf48_95d4_2599_d394,
            0xc11b_9cba_40a8_e8d0,
            0x2e38_13cb_e5a0_de89,
            0x110e_efda_8884_7faf,
        ],
    ],
    [
        [
            0xecfb_361b_798d_ba3a,
            0xc100_ddb8_9186_5a2c,
            0x0ec0_8ff1_232b_da8e,
            0xd5c1_3cc6_f1ca_4721,
            0x4722_2a47_bf7b_5c04,
            0x0110_f184_e51c_5f59,
        ],
        ZERO,
    ],
    [
        [
            0x3e2f_585d_a55c_9ad1,
            0x4294_213d_86c1_8183,
            0x3828_44c8_8b62_3732,
            0x92ad_2afd_1910_3e18,
            0x1d79_4e4f_ac7c_f0b9,
            0x0bd5_92fc_7d82_5ec8,
        ],
        [
            0x7bcf_a7a2_5aa3_0fda,
            0xdc17_dec1_2a92_7e7c,
            0x2f08_8dd8_6b4e_bef1,
            0xd1ca_2087_da74_d4a7,
            0x2da2_5966_96ce_bc1d,
            0x0e2b_7eed_bbfd_87d2,
        ],
    ],
];

impl Constants {
    #[target_feature(enable = "avx512f,avx512ifma")]
    pub(super) fn new(bridge: &Bridge) -> Constants {
        let fp2 = |x: &[[u64; 6]; 2]| [bridge.constant(&x[0]), bridge.constant(&x[1])];
        Constants {
            fp6_c1: FP6_C1.each_ref().map(fp2),
            fp6_c2: FP6_C2.each_ref().map(|x| bridge.constant(x)),
            fp12: FP12_C.each_ref().map(fp2),
        }
    }
}
