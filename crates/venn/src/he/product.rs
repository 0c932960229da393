//! Products of BFV ciphertexts in RNS form, as Halevi, Polyakov and Shoup make them ("An
//! Improved RNS Variant of the BFV Homomorphic Encryption Scheme", CT-RSA 2019, §4): each
//! part of each input lifted exactly from the base Q of its moduli to Q ∪ P (§4.1's fast
//! base extension, its correction α found in floating point), the tensor taken in NTT
//! form over Q ∪ P, scaled by t/Q into base P (§4.2: integer parts as residues, the
//! fractional part in 64-bit fixed point) and brought back to Q (§4.1 again). `fhe`'s
//! relinearisation key then takes the third part away.
//!
//! Why not `fhe`'s `Multiplicator`: its scalers take a general 128-bit route per
//! coefficient (about 30 ms a product at N = 8,192 and four moduli, on two cores without
//! AVX-512), and no work is shared between products. Here an input's lift
//! ([`Extended`]) is made once and used in every product it takes part in — a power of x
//! takes part in many — and products to be added are added before they are scaled
//! ([`Sum`]): Paterson–Stockmeyer's block products pay one scaling an evaluation, not one
//! a block.
//!
//! **Sizes.** Inputs lift to |a| ≤ Q/2, so a sum of S tensors has coefficients of at most
//! S·N·Q²/2 (each part of a tensor is at most two negacyclic products), held in Q ∪ P
//! while P > S·N·Q; the scaled y = ⌊t·x/Q⌉ is at most S·t·N·Q/2 + 1, held in P — with the
//! room that makes its α exact — while P ≥ 4·S·t·N·Q. P's primes are chosen for
//! S = [`MAX_TERMS`]. The fixed-point fraction is short of the exact one by less than
//! Σ qᵢ/2^64 (below 2^-6 for four moduli of up to 56 bits; below 1 for any Q here, whose
//! moduli sum below 2^64): a result is ⌊t·x/Q⌉ or, near a tie, one from it — as small an
//! error as the rounding itself, where the noise after a product is t·N times the
//! inputs'.

use super::bfv;
use crate::util::primes::is_prime;
use crate::{Error, Result};
use fhe::bfv::{BfvParameters, Ciphertext};
use fhe_math::ntt::NttOperator;
use fhe_math::rq::{traits::TryConvertFrom, Context, Poly, Representation};
use fhe_math::zq::Modulus;
use ndarray::Array2;
use std::sync::Arc;

/// The most tensors a [`Sum`] adds before it is scaled.
pub const MAX_TERMS: usize = 1024;

/// Tensors a [`Sum`] adds before reducing its values: each adds below 2·2^124 to a value
/// below 2^62, so seven stay below 2^128.
const LAZY: usize = 7;

/// The most moduli a ciphertext may have here: sums of that many 124-bit products, and
/// one more, stay below 2^127.
const MAX_MODULI: usize = 6;

/// A prime below 2^62 and what reducing by it takes.
#[derive(Clone, Copy, Debug)]
pub(super) struct Prime {
    p: u64,
    /// ⌊2^128 / p⌋, high and low words.
    barrett: (u64, u64),
}

impl Prime {
    pub(super) fn new(p: u64) -> Prime {
        debug_assert!(p > 2 && p < 1 << 62 && p % 2 == 1);
        // For odd p, ⌊(2^128 − 1)/p⌋ = ⌊2^128/p⌋.
        let mu = u128::MAX / u128::from(p);
        Prime {
            p,
            barrett: ((mu >> 64) as u64, mu as u64),
        }
    }

    /// `x` mod p, for any 128-bit x (Barrett: the quotient ⌊x·⌊2^128/p⌋ / 2^128⌋ is short
    /// of x's by at most 2).
    #[inline(always)]
    fn reduce(&self, x: u128) -> u64 {
        let (xh, xl) = ((x >> 64) as u64, x as u64);
        let (mh, ml) = self.barrett;
        let low = (u128::from(xl) * u128::from(ml)) >> 64;
        let b = u128::from(xh) * u128::from(ml);
        let c = u128::from(xl) * u128::from(mh);
        let mid = low + u128::from(b as u64) + u128::from(c as u64);
        let q = u128::from(xh) * u128::from(mh) + (b >> 64) + (c >> 64) + (mid >> 64);
        let r = xl.wrapping_sub((q as u64).wrapping_mul(self.p));
        let r = if r >= self.p { r - self.p } else { r };
        if r >= self.p {
            r - self.p
        } else {
            r
        }
    }

    #[inline(always)]
    fn mul(&self, a: u64, b: u64) -> u64 {
        self.reduce(u128::from(a) * u128::from(b))
    }

    /// `a`^`e` mod p.
    fn pow(&self, mut a: u64, mut e: u64) -> u64 {
        let mut r = 1 % self.p;
        while e > 0 {
            if e & 1 == 1 {
                r = self.mul(r, a);
            }
            a = self.mul(a, a);
            e >>= 1;
        }
        r
    }

    /// 1/`a` mod p (a not a multiple of p).
    pub(super) fn inverse(&self, a: u64) -> u64 {
        self.pow(a % self.p, self.p - 2)
    }

    /// The product of `factors`, mod p.
    fn product(&self, factors: impl Iterator<Item = u64>) -> u64 {
        factors.fold(1 % self.p, |acc, f| self.mul(acc, f % self.p))
    }

    /// `w` (< p) with its Shoup quotient ⌊w·2^64/p⌋.
    pub(super) fn shoup(&self, w: u64) -> (u64, u64) {
        (w, ((u128::from(w) << 64) / u128::from(self.p)) as u64)
    }

    /// `a`·w mod p for any 64-bit a, by Shoup's precomputed quotient.
    #[inline(always)]
    pub(super) fn mul_shoup(&self, a: u64, (w, w_shoup): (u64, u64)) -> u64 {
        let q = ((u128::from(a) * u128::from(w_shoup)) >> 64) as u64;
        let r = a.wrapping_mul(w).wrapping_sub(q.wrapping_mul(self.p));
        if r >= self.p {
            r - self.p
        } else {
            r
        }
    }
}

/// A ciphertext's two parts lifted to Q ∪ P, in NTT form: Q's rows, then P's, N values
/// each.
#[derive(Clone, Debug)]
pub struct Extended {
    parts: [Vec<u64>; 2],
    /// The set and level it belongs to.
    ctx: Arc<Context>,
}

/// A plaintext for products with ciphertexts: its polynomial (the slots' values through
/// the inverse NTT modulo t) in NTT form over Q.
#[derive(Clone, Debug)]
pub struct Encoded {
    values: Vec<u64>,
    ctx: Arc<Context>,
}

impl Encoded {
    /// The bytes its values take.
    pub fn bytes(&self) -> usize {
        self.values.len() * size_of::<u64>()
    }

    /// Its values' buffer, for another plaintext ([`Tensor::encode_reusing`]).
    pub fn into_buffer(self) -> Vec<u64> {
        self.values
    }
}

/// A sum of tensors of [`Extended`] ciphertexts, before scaling: three parts over Q ∪ P in
/// NTT form, each value a 128-bit sum reduced every seven tensors.
#[derive(Clone, Debug)]
pub struct Sum {
    parts: [Vec<u128>; 3],
    ctx: Arc<Context>,
    terms: usize,
    /// Tensors added since the values were last reduced.
    pending: usize,
}

impl Sum {
    /// How many tensors it holds.
    pub fn terms(&self) -> usize {
        self.terms
    }
}

/// Products of ciphertexts of one BFV set at one level.
#[derive(Debug)]
pub struct Tensor {
    par: Arc<BfvParameters>,
    ctx: Arc<Context>,
    level: usize,
    degree: usize,
    /// Q's primes, then P's.
    primes: Vec<Prime>,
    /// Their NTTs, `fhe`'s for Q's (the same transform its ciphertexts are in).
    ntt: Vec<NttOperator>,
    /// How many of the primes are Q's.
    k: usize,
    /// (Q/qᵢ)⁻¹ mod qᵢ (Shoup form) and 1/qᵢ: the lift's v and α.
    q_hat_inverse: Vec<(u64, u64)>,
    q_reciprocal: Vec<f64>,
    /// [j][i]: Q/qᵢ mod pⱼ; [j][α]: −α·Q mod pⱼ.
    q_hat_mod_p: Vec<Vec<u64>>,
    minus_q_mod_p: Vec<Vec<u64>>,
    /// Scaling: ⌊fᵢ·2^64⌋ for the fraction fᵢ of t·P·[(QP/qᵢ)⁻¹]_qᵢ / qᵢ, its integer part
    /// Iᵢ mod pⱼ ([j][i]), and t/Q mod pⱼ.
    fraction: Vec<u64>,
    integer_mod_p: Vec<Vec<u64>>,
    t_over_q_mod_p: Vec<u64>,
    /// Plaintexts: the NTT modulo t, where each slot's value goes before it (`fhe`'s
    /// batching order), and Δ = ⌊Q/t⌋ mod qᵢ.
    plain_ntt: NttOperator,
    slot_index: Vec<usize>,
    delta: Vec<(u64, u64)>,
    /// Ciphertext × plaintext products a 128-bit sum holds before it is reduced.
    dot_lazy: usize,
    /// Back from P: (P/pⱼ)⁻¹ mod pⱼ (Shoup form), 1/pⱼ, [i][j] P/pⱼ mod qᵢ and [i][α]
    /// −α·P mod qᵢ.
    p_hat_inverse: Vec<(u64, u64)>,
    p_reciprocal: Vec<f64>,
    p_hat_mod_q: Vec<Vec<u64>>,
    minus_p_mod_q: Vec<Vec<u64>>,
}

impl Tensor {
    /// Products of `par`'s ciphertexts at `level`.
    pub fn new(par: &Arc<BfvParameters>, level: usize) -> Result<Tensor> {
        let ctx = par.context_at_level(level).map_err(bfv)?.clone();
        let (n, t) = (par.degree(), par.plaintext());
        let q_moduli = ctx.moduli().to_vec();
        let k = q_moduli.len();
        let q_bits: u32 = q_moduli.iter().map(|q| u64::BITS - q.leading_zeros()).sum();
        let q_sum: u128 = q_moduli.iter().map(|&q| u128::from(q)).sum();
        if k == 0 || k > MAX_MODULI || q_sum >= 1 << 64 || q_moduli.iter().any(|&q| q >= 1 << 62) {
            return Err(Error::Params(format!(
                "products of ciphertexts over {k} moduli of {q_bits} bits: 1 to {MAX_MODULI} \
                 moduli below 2^62 summing below 2^64"
            )));
        }
        // P ≥ 4·S·t·N·Q, in primes above 2^61: one bit of room each.
        let t_bits = u64::BITS - t.leading_zeros();
        let needed = q_bits + t_bits + n.ilog2() + MAX_TERMS.ilog2() + 2;
        let m = needed.div_ceil(61) as usize;
        let step = 2 * n as u64;
        let p_moduli: Vec<u64> = (1..)
            .map(|i| (1u64 << 62) + 1 - i * step)
            .take_while(|&p| p > 1 << 61)
            .filter(|&p| is_prime(p) && !q_moduli.contains(&p))
            .take(m)
            .collect();
        if p_moduli.len() != m || m > MAX_MODULI + 1 {
            return Err(Error::Params(format!(
                "no {m} primes ≡ 1 mod {step} between 2^61 and 2^62 for products"
            )));
        }
        let q: Vec<Prime> = q_moduli.iter().map(|&q| Prime::new(q)).collect();
        let p: Vec<Prime> = p_moduli.iter().map(|&p| Prime::new(p)).collect();
        let ntt = (q_moduli.iter().chain(&p_moduli))
            .map(|&modulus| {
                Modulus::new(modulus)
                    .ok()
                    .and_then(|m| NttOperator::new(&m, n))
                    .ok_or_else(|| Error::Params(format!("no NTT of size {n} modulo {modulus}")))
            })
            .collect::<Result<Vec<_>>>()?;
        // Q/qᵢ mod qᵢ, and its inverse.
        let q_hat_inverse_plain: Vec<u64> = (0..k)
            .map(|i| q[i].inverse(q[i].product(others(&q_moduli, i))))
            .collect();
        let q_hat_inverse = (0..k).map(|i| q[i].shoup(q_hat_inverse_plain[i])).collect();
        let (q_hat_mod_p, minus_q_mod_p) = conversion(&q_moduli, &p);
        // t·P·[(QP/qᵢ)⁻¹]_qᵢ ≡ t·[(Q/qᵢ)⁻¹]_qᵢ (mod qᵢ): the fraction's numerator rᵢ. The
        // integer part Iᵢ = (t·P·[…] − rᵢ)/qᵢ ≡ −rᵢ/qᵢ (mod pⱼ), pⱼ dividing P.
        let numerator: Vec<u64> = (0..k)
            .map(|i| q[i].mul(t % q[i].p, q_hat_inverse_plain[i]))
            .collect();
        let fraction = (0..k)
            .map(|i| ((u128::from(numerator[i]) << 64) / u128::from(q[i].p)) as u64)
            .collect();
        let integer_mod_p = (p.iter())
            .map(|pj| {
                (0..k)
                    .map(|i| {
                        let minus_r = (pj.p - numerator[i] % pj.p) % pj.p;
                        pj.mul(minus_r, pj.inverse(q[i].p))
                    })
                    .collect()
            })
            .collect();
        let t_over_q_mod_p = (p.iter())
            .map(|pj| pj.mul(t % pj.p, pj.inverse(pj.product(q_moduli.iter().copied()))))
            .collect();
        let plain_ntt = (Modulus::new(t).ok())
            .and_then(|m| NttOperator::new(&m, n))
            .ok_or_else(|| Error::Params(format!("no NTT of size {n} modulo t = {t}")))?;
        // Δ ≡ (Q − (Q mod t))/t ≡ −(Q mod t)/t (mod qᵢ).
        let q_mod_t =
            (q_moduli.iter()).fold(1u128, |acc, &q| acc * u128::from(q % t) % u128::from(t));
        let delta = (q.iter())
            .map(|qi| qi.shoup(qi.mul((qi.p - q_mod_t as u64 % qi.p) % qi.p, qi.inverse(t))))
            .collect();
        let q_max = u128::from(*q_moduli.iter().max().expect("a modulus"));
        let dot_lazy = (u128::MAX / (q_max * q_max) - 1).min(1 << 20) as usize;
        let p_hat_inverse = (0..m)
            .map(|j| p[j].shoup(p[j].inverse(p[j].product(others(&p_moduli, j)))))
            .collect();
        let (p_hat_mod_q, minus_p_mod_q) = conversion(&p_moduli, &q);
        Ok(Tensor {
            par: par.clone(),
            ctx,
            level,
            degree: n,
            primes: q.into_iter().chain(p).collect(),
            ntt,
            k,
            q_hat_inverse,
            q_reciprocal: q_moduli.iter().map(|&q| 1.0 / q as f64).collect(),
            q_hat_mod_p,
            minus_q_mod_p,
            fraction,
            integer_mod_p,
            t_over_q_mod_p,
            plain_ntt,
            slot_index: slot_index(n),
            delta,
            dot_lazy,
            p_hat_inverse,
            p_reciprocal: p_moduli.iter().map(|&p| 1.0 / p as f64).collect(),
            p_hat_mod_q,
            minus_p_mod_q,
        })
    }

    /// `slots` (at most N values, each below t; the rest 0) as a plaintext for products:
    /// placed in `fhe`'s batching order, through the inverse NTT modulo t, and each
    /// modulus's NTT (what `fhe`'s encoding makes, without its copies and zeroing).
    pub fn encode(&self, slots: &[u64]) -> Result<Encoded> {
        self.encode_reusing(slots, Vec::new())
    }

    /// As [`Tensor::encode`], its values in `buffer` (another plaintext's, whose memory
    /// is touched already: fresh pages cost a fault each).
    pub fn encode_reusing(&self, slots: &[u64], buffer: Vec<u64>) -> Result<Encoded> {
        let (n, k, t) = (self.degree, self.k, self.par.plaintext());
        if slots.len() > n || slots.iter().any(|&v| v >= t) {
            return Err(Error::Usage(format!(
                "a plaintext of {} slots: at most {n}, each below {t}",
                slots.len()
            )));
        }
        let mut m = vec![0u64; n];
        (slots.iter().zip(&self.slot_index)).for_each(|(&v, &at)| m[at] = v);
        self.plain_ntt.backward(&mut m);
        let mut values = buffer;
        values.resize(k * n, 0);
        for (row, ntt) in values.chunks_exact_mut(n).zip(&self.ntt) {
            row.copy_from_slice(&m);
            ntt.forward(row);
        }
        Ok(Encoded {
            values,
            ctx: self.ctx.clone(),
        })
    }

    /// Σⱼ ctⱼ · ptⱼ over `terms` (two-part ciphertexts of this set and level), plus the
    /// plaintext `constant` (Δ·m added to the first part), as one ciphertext: products
    /// summed in 128 bits and reduced once every many terms (CLR17 §4's inner products,
    /// `fhe`'s `dot_product_scalar`).
    pub fn dot(
        &self,
        terms: &[(&Ciphertext, &Encoded)],
        constant: Option<&Encoded>,
    ) -> Result<Ciphertext> {
        let (n, k) = (self.degree, self.k);
        let ours = |ctx: &Arc<Context>| Arc::ptr_eq(ctx, &self.ctx);
        if terms.is_empty()
            || !(terms.iter()).all(|(ct, pt)| {
                ct.len() == 2 && ct.iter().all(|part| ours(part.ctx())) && ours(&pt.ctx)
            })
            || constant.is_some_and(|c| !ours(&c.ctx))
        {
            return Err(Error::Usage(
                "an inner product of no terms, or of another set's, level's or shape's \
                 ciphertexts and plaintexts"
                    .into(),
            ));
        }
        let mut sums = [vec![0u128; k * n], vec![0u128; k * n]];
        let reduce = |sums: &mut [Vec<u128>; 2]| {
            for part in sums.iter_mut() {
                for (row, prime) in part.chunks_exact_mut(n).zip(&self.primes) {
                    row.iter_mut()
                        .for_each(|v| *v = u128::from(prime.reduce(*v)));
                }
            }
        };
        for (done, (ct, pt)) in terms.iter().enumerate() {
            if done > 0 && done % self.dot_lazy == 0 {
                reduce(&mut sums);
            }
            for (sum, part) in sums.iter_mut().zip(ct.iter()) {
                let part = part.coefficients();
                let part = part
                    .as_slice()
                    .ok_or_else(|| Error::Usage("a ciphertext's layout".into()))?;
                (sum.iter_mut().zip(part).zip(&pt.values))
                    .for_each(|((s, &c), &m)| *s += u128::from(c) * u128::from(m));
            }
        }
        reduce(&mut sums);
        let [mut c0, c1] =
            sums.map(|part| part.into_iter().map(|v| v as u64).collect::<Vec<u64>>());
        if let Some(constant) = constant {
            for (i, (row, m)) in
                (c0.chunks_exact_mut(n).zip(constant.values.chunks_exact(n))).enumerate()
            {
                let (prime, delta) = (&self.primes[i], self.delta[i]);
                (row.iter_mut().zip(m)).for_each(|(c, &m)| {
                    let sum = *c + prime.mul_shoup(m, delta);
                    *c = if sum >= prime.p { sum - prime.p } else { sum };
                });
            }
        }
        let parts = [c0, c1]
            .into_iter()
            .map(|values| self.poly(values))
            .collect::<Result<Vec<Poly>>>()?;
        Ciphertext::new(parts, &self.par).map_err(bfv)
    }

    /// Values over Q in NTT form as `fhe`'s polynomial.
    fn poly(&self, values: Vec<u64>) -> Result<Poly> {
        let values = Array2::from_shape_vec((self.k, self.degree), values)
            .map_err(|e| Error::Params(format!("a polynomial's shape: {e}")))?;
        Poly::try_convert_from(values, &self.ctx, false, Representation::Ntt)
            .map_err(|e| Error::Params(format!("BFV: {e}")))
    }

    /// The moduli of Q ∪ P.
    fn rows(&self) -> usize {
        self.primes.len()
    }

    /// `ct` (two parts, of this set and level) lifted to Q ∪ P.
    pub fn extend(&self, ct: &Ciphertext) -> Result<Extended> {
        if ct.len() != 2 || !ct.iter().all(|part| Arc::ptr_eq(part.ctx(), &self.ctx)) {
            return Err(Error::Usage(format!(
                "a product of a ciphertext of {} parts at another level or of another set: \
                 two parts at level {}",
                ct.len(),
                self.level
            )));
        }
        Ok(Extended {
            parts: [self.extend_part(&ct[0]), self.extend_part(&ct[1])],
            ctx: self.ctx.clone(),
        })
    }

    /// One part (NTT form over Q) lifted to Q ∪ P: its centred coefficients' residues.
    fn extend_part(&self, part: &Poly) -> Vec<u64> {
        let (n, k) = (self.degree, self.k);
        let mut out = vec![0u64; self.rows() * n];
        for (i, row) in part.coefficients().outer_iter().enumerate() {
            out[i * n..(i + 1) * n]
                .iter_mut()
                .zip(row)
                .for_each(|(o, &c)| *o = c);
        }
        // vᵢ = [aᵢ·(Q/qᵢ)⁻¹]_qᵢ, then a = Σ vᵢ·Q/qᵢ − α·Q with α = round(Σ vᵢ/qᵢ).
        let mut v = out[..k * n].to_vec();
        for i in 0..k {
            let row = &mut v[i * n..(i + 1) * n];
            self.ntt[i].backward(row);
            let (q, w) = (&self.primes[i], self.q_hat_inverse[i]);
            row.iter_mut().for_each(|a| *a = q.mul_shoup(*a, w));
        }
        let alpha = corrections(&v, &self.q_reciprocal, n);
        let (_, upper) = out.split_at_mut(k * n);
        let (hats, minus) = (&self.q_hat_mod_p, &self.minus_q_mod_p);
        convert(&v, &alpha, (hats, minus), &self.primes[k..], upper, n);
        for (j, row) in upper.chunks_exact_mut(n).enumerate() {
            self.ntt[k + j].forward(row);
        }
        out
    }

    /// An empty sum.
    pub fn sum(&self) -> Sum {
        Sum {
            parts: std::array::from_fn(|_| vec![0u128; self.rows() * self.degree]),
            ctx: self.ctx.clone(),
            terms: 0,
            pending: 0,
        }
    }

    /// `sum` += `a` ⊗ `b`: (a₀b₀, a₀b₁ + a₁b₀, a₁b₁), slot by slot over Q ∪ P.
    pub fn add_product(&self, sum: &mut Sum, a: &Extended, b: &Extended) -> Result<()> {
        let ours = |ctx: &Arc<Context>| Arc::ptr_eq(ctx, &self.ctx);
        if !(ours(&sum.ctx) && ours(&a.ctx) && ours(&b.ctx)) {
            return Err(Error::Usage(
                "a product of another set's or level's ciphertexts".into(),
            ));
        }
        if sum.terms >= MAX_TERMS {
            return Err(Error::Usage(format!(
                "a sum of more than {MAX_TERMS} products of ciphertexts"
            )));
        }
        if sum.pending == LAZY {
            self.reduce(sum);
        }
        let [s0, s1, s2] = &mut sum.parts;
        let ([a0, a1], [b0, b1]) = (&a.parts, &b.parts);
        for c in 0..self.rows() * self.degree {
            let (x0, x1, y0, y1) = (
                u128::from(a0[c]),
                u128::from(a1[c]),
                u128::from(b0[c]),
                u128::from(b1[c]),
            );
            s0[c] += x0 * y0;
            s1[c] += x0 * y1 + x1 * y0;
            s2[c] += x1 * y1;
        }
        sum.terms += 1;
        sum.pending += 1;
        Ok(())
    }

    /// `sum`'s values reduced modulo their rows' primes.
    fn reduce(&self, sum: &mut Sum) {
        let n = self.degree;
        for part in &mut sum.parts {
            for (row, prime) in part.chunks_exact_mut(n).zip(&self.primes) {
                row.iter_mut()
                    .for_each(|v| *v = u128::from(prime.reduce(*v)));
            }
        }
        sum.pending = 0;
    }

    /// `sum` scaled by t/Q: the three-part ciphertext of the sum of its products, at this
    /// level.
    pub fn finish(&self, mut sum: Sum) -> Result<Ciphertext> {
        if !Arc::ptr_eq(&sum.ctx, &self.ctx) {
            return Err(Error::Usage(
                "a sum of another set's or level's products".into(),
            ));
        }
        self.reduce(&mut sum);
        let parts = (sum.parts.into_iter())
            .map(|part| self.scale(part.into_iter().map(|v| v as u64).collect()))
            .collect::<Result<Vec<Poly>>>()?;
        Ciphertext::new(parts, &self.par).map_err(bfv)
    }

    /// `a` ⊗ `b`, scaled: their product before relinearisation.
    pub fn multiply(&self, a: &Extended, b: &Extended) -> Result<Ciphertext> {
        let mut sum = self.sum();
        self.add_product(&mut sum, a, b)?;
        self.finish(sum)
    }

    /// One part of a sum (NTT form over Q ∪ P) as ⌊t·x/Q⌉ over Q, in NTT form.
    fn scale(&self, mut x: Vec<u64>) -> Result<Poly> {
        let (n, k) = (self.degree, self.k);
        for (row, ntt) in x.chunks_exact_mut(n).zip(&self.ntt) {
            ntt.backward(row);
        }
        let (qs, ps) = x.split_at_mut(k * n);
        // ⌊Σᵢ xᵢ·fᵢ⌉ a coefficient, in 64-bit fixed point.
        let mut rounded = vec![1u128 << 63; n];
        for (row, &f) in qs.chunks_exact(n).zip(&self.fraction) {
            (rounded.iter_mut().zip(row)).for_each(|(r, &x)| *r += u128::from(x) * u128::from(f));
        }
        // yⱼ = Σᵢ xᵢ·(Iᵢ mod pⱼ) + ⌊Σᵢ xᵢ·fᵢ⌉ + x'ⱼ·(t/Q mod pⱼ), then uⱼ = yⱼ·(P/pⱼ)⁻¹, in
        // P's rows; then y = Σⱼ uⱼ·P/pⱼ − α·P over Q.
        let q_rows: Vec<&[u64]> = qs.chunks_exact(n).collect();
        for (j, row) in ps.chunks_exact_mut(n).enumerate() {
            let (prime, w) = (&self.primes[k + j], &self.integer_mod_p[j]);
            let (t_over_q, hat_inverse) = (self.t_over_q_mod_p[j], self.p_hat_inverse[j]);
            for (c, y) in row.iter_mut().enumerate() {
                let mut acc = (rounded[c] >> 64) + u128::from(*y) * u128::from(t_over_q);
                for (x, &w) in q_rows.iter().zip(w) {
                    acc += u128::from(x[c]) * u128::from(w);
                }
                *y = prime.mul_shoup(prime.reduce(acc), hat_inverse);
            }
        }
        let alpha = corrections(ps, &self.p_reciprocal, n);
        let mut out = vec![0u64; k * n];
        let (hats, minus) = (&self.p_hat_mod_q, &self.minus_p_mod_q);
        convert(ps, &alpha, (hats, minus), &self.primes[..k], &mut out, n);
        for (row, ntt) in out.chunks_exact_mut(n).zip(&self.ntt) {
            ntt.forward(row);
        }
        self.poly(out)
    }
}

/// A fast base conversion's sums (HPS19 §4.1): into each row of `out` (N values modulo
/// its prime of `to`), Σᵢ vᵢ·(Π/mᵢ mod p) − α·(Π mod p) from the rows `v` (each vᵢ already
/// aᵢ·(Π/mᵢ)⁻¹ modulo its own mᵢ, Π the product of the mᵢ), each coefficient's `alpha`,
/// and the constants of [`conversion`].
fn convert(
    v: &[u64],
    alpha: &[u8],
    (hats, minus): (&[Vec<u64>], &[Vec<u64>]),
    to: &[Prime],
    out: &mut [u64],
    n: usize,
) {
    let rows: Vec<&[u64]> = v.chunks_exact(n).collect();
    for (((out, prime), hat), minus) in out.chunks_exact_mut(n).zip(to).zip(hats).zip(minus) {
        for (c, (out, &alpha)) in out.iter_mut().zip(alpha).enumerate() {
            let mut acc = u128::from(minus[usize::from(alpha)]);
            for (row, &h) in rows.iter().zip(hat) {
                acc += u128::from(row[c]) * u128::from(h);
            }
            *out = prime.reduce(acc);
        }
    }
}

/// `moduli` but the `i`-th.
fn others(moduli: &[u64], i: usize) -> impl Iterator<Item = u64> + '_ {
    (moduli.iter().enumerate())
        .filter(move |&(l, _)| l != i)
        .map(|(_, &m)| m)
}

/// A base conversion's constants from the moduli `from` to each prime of `to` (HPS19
/// §4.1): [to][i] the product of `from` but its i-th, and [to][α] −α times the product of
/// all of them, for α up to their number.
fn conversion(from: &[u64], to: &[Prime]) -> (Vec<Vec<u64>>, Vec<Vec<u64>>) {
    let hats = (to.iter())
        .map(|prime| {
            (0..from.len())
                .map(|i| prime.product(others(from, i)))
                .collect()
        })
        .collect();
    let minus = (to.iter())
        .map(|prime| {
            let all = prime.product(from.iter().copied());
            (0..=from.len() as u64)
                .map(|a| (prime.p - prime.mul(a, all)) % prime.p)
                .collect()
        })
        .collect();
    (hats, minus)
}

/// Each coefficient's α = ⌊Σᵢ vᵢ/qᵢ⌉ (at most the number of moduli) from the rows `v`
/// of N values and the moduli's reciprocals: exact but where Σ vᵢ/qᵢ is within k·2^-52
/// of a half, where either choice is a lift of at most Q/2 and a hair.
fn corrections(v: &[u64], reciprocal: &[f64], n: usize) -> Vec<u8> {
    let mut s = vec![0.5f64; n];
    for (row, &r) in v.chunks_exact(n).zip(reciprocal) {
        s.iter_mut().zip(row).for_each(|(s, &v)| *s += v as f64 * r);
    }
    let most = reciprocal.len() as u8;
    s.into_iter().map(|s| (s as u8).min(most)).collect()
}

/// Where `fhe` puts slot i of a batched plaintext before its inverse NTT modulo t: the
/// bit-reversed position of (3^i mod 2N − 1)/2 for the first row's N/2 slots, of
/// (2N − 3^i mod 2N − 1)/2 for the second's (its `matrix_reps_index_map`, SEAL's order).
fn slot_index(n: usize) -> Vec<usize> {
    let (half, m, bits) = (n / 2, 2 * n, n.trailing_zeros());
    let reversed = |i: usize| i.reverse_bits() >> (usize::BITS - bits);
    let mut index = vec![0; n];
    let mut power = 1;
    for i in 0..half {
        index[i] = reversed((power - 1) / 2);
        index[half + i] = reversed((m - power - 1) / 2);
        power = power * 3 % m;
    }
    index
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::he::params::Bfv;
    use crate::util::primes::{batching_prime, next_prime};
    use fhe::bfv::{Encoding, Multiplicator, Plaintext, RelinearizationKey, SecretKey};
    use fhe_traits::{FheDecoder, FheDecrypter, FheEncoder, FheEncrypter};
    use rand::{Rng, SeedableRng};

    /// Barrett's reduction is the remainder, at random and at the edges.
    #[test]
    fn reduction_is_the_remainder() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(1);
        let primes = [1 << 16, 1 << 50, 1 << 61, (1 << 62) - 100].map(next_prime);
        for p in [3].into_iter().chain(primes) {
            assert!(p < 1 << 62);
            let prime = Prime::new(p);
            let p128 = u128::from(p);
            let edges = [
                0,
                1,
                p128 - 1,
                p128,
                p128 * p128 - 1,
                u128::MAX,
                u128::MAX - p128,
            ];
            for x in edges
                .into_iter()
                .chain((0..2000).map(|_| rng.random::<u128>()))
            {
                assert_eq!(u128::from(prime.reduce(x)), x % p128, "{x} mod {p}");
            }
            for _ in 0..1000 {
                let (a, w) = (rng.random::<u64>(), rng.random_range(0..p));
                let expected = (u128::from(a) * u128::from(w) % p128) as u64;
                assert_eq!(prime.mul_shoup(a, prime.shoup(w)), expected);
            }
            let a = rng.random_range(1..p);
            assert_eq!(prime.mul(a, prime.inverse(a)), 1);
        }
    }

    /// The sets Venn uses and one at N = 4096: a product, relinearised, decrypts to the
    /// slots' products with the noise of `fhe`'s own product (within a bit), and again
    /// at depth two; a sum of products past the lazy reduction is the sum of the slots'
    /// products.
    #[test]
    fn products_are_fhes_products() {
        let t20 = batching_prime(8192, (1 << 20) - (1 << 16));
        let t24 = batching_prime(8192, (1 << 24) - (1 << 18));
        for (degree, plain, moduli) in [
            (8192, t20, vec![56, 56, 56, 50]),
            (8192, 65537, vec![56, 56, 56, 50]),
            (8192, t24, vec![50, 50, 50, 38, 30]),
            (4096, 65537, vec![54, 55]),
        ] {
            let par = (Bfv {
                degree,
                plain,
                moduli: moduli.clone(),
            })
            .build()
            .unwrap();
            let mut rng = rand::rngs::StdRng::seed_from_u64(plain);
            let sk = SecretKey::random(&par, &mut rng);
            let rk = RelinearizationKey::new(&sk, &mut rng).unwrap();
            let random = |rng: &mut rand::rngs::StdRng| -> Vec<u64> {
                (0..degree).map(|_| rng.random_range(0..plain)).collect()
            };
            let encrypt = |v: &[u64], rng: &mut rand::rngs::StdRng| -> Ciphertext {
                let pt = Plaintext::try_encode(v, Encoding::simd(), &par).unwrap();
                sk.try_encrypt(&pt, rng).unwrap()
            };
            let decrypt = |ct: &Ciphertext| -> Vec<u64> {
                let pt = sk.try_decrypt(ct).unwrap();
                Vec::<u64>::try_decode(&pt, Encoding::simd()).unwrap()
            };
            let mul = |a: &[u64], b: &[u64]| -> Vec<u64> {
                (a.iter().zip(b))
                    .map(|(&x, &y)| (u128::from(x) * u128::from(y) % u128::from(plain)) as u64)
                    .collect()
            };
            // SAFETY: variable time in the noise, which a test may learn.
            let noise = |ct: &Ciphertext| unsafe { sk.measure_noise(ct) }.unwrap() as i64;
            let tensor = Tensor::new(&par, 0).unwrap();
            let theirs = Multiplicator::default(&rk).unwrap();
            let (a, b) = (random(&mut rng), random(&mut rng));
            let (ca, cb) = (encrypt(&a, &mut rng), encrypt(&b, &mut rng));
            let (ea, eb) = (tensor.extend(&ca).unwrap(), tensor.extend(&cb).unwrap());
            let mut ours = tensor.multiply(&ea, &eb).unwrap();
            rk.relinearizes(&mut ours).unwrap();
            let fhes = theirs.multiply(&ca, &cb).unwrap();
            let ab = mul(&a, &b);
            assert_eq!(decrypt(&ours), ab, "{moduli:?}");
            assert!((noise(&ours) - noise(&fhes)).abs() <= 1, "{moduli:?}");
            if moduli.len() > 2 {
                let e = tensor.extend(&ours).unwrap();
                let mut square = tensor.multiply(&e, &e).unwrap();
                rk.relinearizes(&mut square).unwrap();
                let fhes = theirs.multiply(&fhes, &fhes).unwrap();
                assert_eq!(decrypt(&square), mul(&ab, &ab), "{moduli:?}");
                assert!((noise(&square) - noise(&fhes)).abs() <= 1, "{moduli:?}");
            }
            let mut sum = tensor.sum();
            let mut expected = vec![0u64; degree];
            for _ in 0..2 * LAZY + 3 {
                let (x, y) = (random(&mut rng), random(&mut rng));
                let (ex, ey) = (encrypt(&x, &mut rng), encrypt(&y, &mut rng));
                let (ex, ey) = (tensor.extend(&ex).unwrap(), tensor.extend(&ey).unwrap());
                tensor.add_product(&mut sum, &ex, &ey).unwrap();
                (expected.iter_mut().zip(mul(&x, &y))).for_each(|(e, p)| *e = (*e + p) % plain);
            }
            assert_eq!(sum.terms(), 2 * LAZY + 3);
            let mut sum = tensor.finish(sum).unwrap();
            rk.relinearizes(&mut sum).unwrap();
            assert_eq!(decrypt(&sum), expected, "{moduli:?}");
        }
    }

    /// Plaintexts encoded here multiply ciphertexts as `fhe`'s do: an inner product of
    /// encryptions and encodings, plus a constant, decrypts to the slots' inner product
    /// plus the constant's slots — past the lazy reduction where the moduli are 62 bits;
    /// slots of t or more, or past N, are refused.
    #[test]
    fn inner_products_with_encoded_plaintexts() {
        for (plain, moduli) in [(65537, vec![62, 62, 62]), (65537, vec![56, 56, 56, 50])] {
            let par = (Bfv {
                degree: 8192,
                plain,
                moduli: moduli.clone(),
            })
            .build()
            .unwrap();
            let n = par.degree();
            let mut rng = rand::rngs::StdRng::seed_from_u64(7);
            let sk = SecretKey::random(&par, &mut rng);
            let tensor = Tensor::new(&par, 0).unwrap();
            let mut random =
                || -> Vec<u64> { (0..n).map(|_| rng.random_range(0..plain)).collect() };
            let terms = 20;
            assert!(
                tensor.dot_lazy < terms || moduli[0] < 62,
                "{}",
                tensor.dot_lazy
            );
            let xs: Vec<Vec<u64>> = (0..terms).map(|_| random()).collect();
            let cs: Vec<Vec<u64>> = (0..=terms).map(|_| random()).collect();
            let mut rng = rand::rngs::StdRng::seed_from_u64(8);
            let cts: Vec<Ciphertext> = (xs.iter())
                .map(|x| {
                    let pt = Plaintext::try_encode(x, Encoding::simd(), &par).unwrap();
                    sk.try_encrypt(&pt, &mut rng).unwrap()
                })
                .collect();
            let encoded: Vec<Encoded> = cs.iter().map(|c| tensor.encode(c).unwrap()).collect();
            let pairs: Vec<(&Ciphertext, &Encoded)> = cts.iter().zip(&encoded[1..]).collect();
            let result = tensor.dot(&pairs, Some(&encoded[0])).unwrap();
            let got = Vec::<u64>::try_decode(&sk.try_decrypt(&result).unwrap(), Encoding::simd())
                .unwrap();
            let expected: Vec<u64> = (0..n)
                .map(|s| {
                    (0..terms).fold(cs[0][s], |acc, j| {
                        ((u128::from(acc) + u128::from(xs[j][s]) * u128::from(cs[j + 1][s]))
                            % u128::from(plain)) as u64
                    })
                })
                .collect();
            assert_eq!(got, expected, "{moduli:?}");
            let alone = tensor.dot(&pairs[..1], None).unwrap();
            let got =
                Vec::<u64>::try_decode(&sk.try_decrypt(&alone).unwrap(), Encoding::simd()).unwrap();
            let product: Vec<u64> = (0..n)
                .map(|s| ((u128::from(xs[0][s]) * u128::from(cs[1][s])) % u128::from(plain)) as u64)
                .collect();
            assert_eq!(got, product, "{moduli:?}");
            assert!(tensor.encode(&[plain]).is_err(), "a slot of t");
            assert!(tensor.encode(&vec![0; n + 1]).is_err(), "N + 1 slots");
            assert!(tensor.dot(&[], None).is_err(), "no terms");
        }
    }

    /// A product refuses three-part ciphertexts, another set's or level's, and sums past
    /// [`MAX_TERMS`].
    #[test]
    fn products_refuse_what_they_cannot_take() {
        let bfv = |moduli: Vec<usize>| {
            (Bfv {
                degree: 4096,
                plain: 65537,
                moduli,
            })
            .build()
            .unwrap()
        };
        let (par, other) = (bfv(vec![54, 55]), bfv(vec![50, 50]));
        let mut rng = rand::rngs::StdRng::seed_from_u64(3);
        let sk = SecretKey::random(&par, &mut rng);
        let pt = Plaintext::try_encode(&[1u64, 2], Encoding::simd(), &par).unwrap();
        let ct: Ciphertext = sk.try_encrypt(&pt, &mut rng).unwrap();
        let tensor = Tensor::new(&par, 0).unwrap();
        let e = tensor.extend(&ct).unwrap();
        let three = tensor.multiply(&e, &e).unwrap();
        assert!(tensor.extend(&three).is_err(), "three parts");
        let mut lower = ct.clone();
        lower.switch_to_level(1).unwrap();
        assert!(tensor.extend(&lower).is_err(), "level 1");
        let sk = SecretKey::random(&other, &mut rng);
        let pt = Plaintext::try_encode(&[1u64], Encoding::simd(), &other).unwrap();
        let theirs: Ciphertext = sk.try_encrypt(&pt, &mut rng).unwrap();
        assert!(tensor.extend(&theirs).is_err(), "another set");
        let foreign = Tensor::new(&other, 0).unwrap().extend(&theirs).unwrap();
        assert!(tensor.multiply(&e, &foreign).is_err(), "another set's lift");
        let mut sum = tensor.sum();
        for _ in 0..MAX_TERMS {
            tensor.add_product(&mut sum, &e, &e).unwrap();
        }
        assert!(
            tensor.add_product(&mut sum, &e, &e).is_err(),
            "past the cap"
        );
    }
}
