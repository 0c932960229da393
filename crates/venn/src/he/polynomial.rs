//! Polynomials evaluated on encrypted slots: plaintext j holds every slot's coefficient j,
//! so one evaluation computes, in each of the N slots, that slot's polynomial at that
//! slot's x (CLR17 §4, CHLR18 §4: a bin's matching or label polynomial per slot).
//!
//! The evaluation is Paterson–Stockmeyer's (CMdG+21 §4.3; APSI's `eval_patstock`): with
//! low degree ℓ, P(x) = Σᵢ x^{i(ℓ+1)} · Qᵢ(x), each Qᵢ of degree ℓ taken as fused
//! ciphertext × plaintext terms over the low powers x¹…x^ℓ (`fhe`'s `dot_product_scalar`,
//! one reduction per slot), then multiplied by the high power x^{i(ℓ+1)} without
//! relinearisation, the products summed and relinearised once. It needs the powers
//! 1…ℓ and the multiples of ℓ + 1 up to the degree ([`targets`]), which [`powers`]
//! computes from a query's sources by a [`PowersDag`]. Every ciphertext is at level 0;
//! the caller switches the result down before sending it.

use super::params::multiplicator;
use super::powers::PowersDag;
use crate::{Error, Result};
use fhe::bfv::{dot_product_scalar, BfvParameters, Ciphertext, Plaintext, RelinearizationKey};
use rayon::prelude::*;
use std::collections::HashMap;
use std::sync::Arc;

/// The powers of x an evaluation of degree `degree` with low degree ℓ = `low` needs:
/// 1…ℓ and the multiples of ℓ + 1 up to the degree.
pub fn targets(degree: u32, low: u32) -> Vec<u32> {
    let step = low + 1;
    (1..=low.min(degree))
        .chain((1..=degree / step).map(|i| i * step))
        .collect()
}

/// The powers of x that `dag` computes, from the ciphertexts of its sources (`sources`:
/// each source power's ciphertext of `par`, at level 0), by products relinearised with
/// `rk`: the products of each depth run on the current rayon pool.
pub fn powers(
    dag: &PowersDag,
    sources: Vec<(u32, Ciphertext)>,
    rk: &RelinearizationKey,
    par: &Arc<BfvParameters>,
) -> Result<HashMap<u32, Ciphertext>> {
    let mut have: HashMap<u32, Ciphertext> = sources.into_iter().collect();
    if let Some(missing) = dag.sources().iter().find(|s| !have.contains_key(s)) {
        return Err(Error::Usage(format!(
            "no ciphertext of the source power {missing}"
        )));
    }
    let multiplicator = multiplicator(par, rk)?;
    let steps = dag.steps();
    let mut at = 0;
    while at < steps.len() {
        let depth = dag.depth_of(steps[at].0);
        let level = steps[at..]
            .iter()
            .take_while(|s| dag.depth_of(s.0) == depth)
            .count();
        let made = (steps[at..at + level].par_iter())
            .map(|&(p, a, b)| {
                Ok((
                    p,
                    multiplicator.multiply(&have[&a], &have[&b]).map_err(bfv)?,
                ))
            })
            .collect::<Result<Vec<_>>>()?;
        have.extend(made);
        at += level;
    }
    Ok(have)
}

/// The polynomial of degree `degree` (at least 1) whose coefficient j is the plaintext
/// `coefficient(j)` (at level 0), evaluated at x by Paterson–Stockmeyer with low degree
/// `low`, from x's `powers` (every one of [`targets`]); relinearised with `rk`. Its blocks
/// run on the current rayon pool, each encoding its own ℓ + 1 coefficients when it runs:
/// a polynomial is never held whole (the d + 1 plaintexts of a large set's bin are
/// gigabytes: about 0.3 MB each at N = 8,192 in NTT form).
pub fn evaluate(
    degree: u32,
    coefficient: &(dyn Fn(usize) -> Result<Plaintext> + Sync),
    low: u32,
    powers: &HashMap<u32, Ciphertext>,
    rk: &RelinearizationKey,
) -> Result<Ciphertext> {
    if degree == 0 || low == 0 {
        return Err(Error::Usage(format!(
            "a polynomial of degree {degree} with low degree {low}: both at least 1"
        )));
    }
    let power = |p: u32| {
        powers
            .get(&p)
            .ok_or_else(|| Error::Usage(format!("no ciphertext of x^{p}")))
    };
    let step = low + 1;
    let blocks = degree / step + 1;
    // Each block: Qᵢ (degree ≤ ℓ) times x^{i(ℓ+1)}, as a 2-part ciphertext where no product
    // of ciphertexts is needed (Q₀, and a block of a constant alone), else 3 parts.
    let parts = (0..blocks)
        .into_par_iter()
        .map(|i| {
            let first = (i * step) as usize;
            let last = (first + low as usize).min(degree as usize);
            let terms = first + 1..=last;
            let constant = coefficient(first)?;
            if terms.is_empty() {
                // A constant alone: cᵢ · x^{i(ℓ+1)} (i ≥ 1: degree ≥ 1).
                return Ok((power(i * step)? * &constant, false));
            }
            let lows = (1..=terms.clone().count() as u32)
                .map(power)
                .collect::<Result<Vec<_>>>()?;
            let terms = terms.map(coefficient).collect::<Result<Vec<_>>>()?;
            let mut inner = dot_product_scalar(lows.into_iter(), terms.iter()).map_err(bfv)?;
            inner += &constant;
            match i {
                0 => Ok((inner, false)),
                i => Ok((&inner * power(i * step)?, true)),
            }
        })
        .collect::<Result<Vec<(Ciphertext, bool)>>>()?;
    let (mut products, mut rest) = (None::<Ciphertext>, None::<Ciphertext>);
    for (part, is_product) in parts {
        let sum = match is_product {
            true => &mut products,
            false => &mut rest,
        };
        match sum {
            Some(sum) => *sum += &part,
            None => *sum = Some(part),
        }
    }
    let mut result = rest.expect("block 0 is not a product");
    if let Some(mut products) = products {
        rk.relinearizes(&mut products).map_err(bfv)?;
        result += &products;
    }
    Ok(result)
}

/// `fhe`'s error as Venn's.
fn bfv(e: fhe::Error) -> Error {
    Error::Params(format!("BFV: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::he::params::Bfv;
    use fhe::bfv::{BfvParameters, Encoding, SecretKey};
    use fhe_traits::{FheDecoder, FheDecrypter, FheEncoder, FheEncrypter};
    use rand::{Rng, SeedableRng};
    use std::sync::Arc;

    /// `a` · `b` mod `t`.
    fn mul(a: u64, b: u64, t: u64) -> u64 {
        ((u128::from(a) * u128::from(b)) % u128::from(t)) as u64
    }

    /// The bits of noise budget left in `ct` under `sk`: the bits of its modulus, less
    /// t's, less its noise, less one.
    fn margin(sk: &SecretKey, ct: &Ciphertext, par: &BfvParameters) -> i64 {
        // SAFETY: variable time in the noise, which a test may learn.
        let noise = unsafe { sk.measure_noise(ct) }.unwrap() as i64;
        let level = par.level_of_context(ct[0].ctx()).unwrap();
        let modulus: usize = par.moduli_sizes()[..par.moduli().len() - level]
            .iter()
            .sum();
        let t = i64::from(u64::BITS - par.plaintext().leading_zeros());
        modulus as i64 - t - noise - 1
    }

    /// Each slot's polynomial at that slot's x, as plain arithmetic mod t.
    fn plain_eval(coefficients: &[Vec<u64>], x: &[u64], t: u64) -> Vec<u64> {
        (0..x.len())
            .map(|s| {
                coefficients
                    .iter()
                    .rev()
                    .fold(0, |acc, c| (mul(acc, x[s], t) + c[s]) % t)
            })
            .collect()
    }

    /// V1M-4096's set (N = 8192, t = 65537, moduli 56, 56, 56, 50; d = 98, ℓ = 8, sources
    /// 1, 3, 4, 9, 27): per-slot matching polynomials Π(x − yⱼ) evaluate to 0 exactly in
    /// the slots whose x is a root, random polynomials to their plain values, and the
    /// result switched to the last modulus keeps at least 6 bits of noise budget.
    #[test]
    fn polynomials_evaluate_slot_by_slot_with_room_to_spare() {
        let par: Arc<BfvParameters> = (Bfv {
            degree: 8192,
            plain: 65537,
            moduli: vec![56, 56, 56, 50],
        })
        .build()
        .unwrap();
        let (n, t) = (par.degree(), par.plaintext());
        let mut rng = rand::rngs::StdRng::seed_from_u64(11);
        let sk = SecretKey::random(&par, &mut rng);
        let rk = RelinearizationKey::new(&sk, &mut rng).unwrap();
        let (degree, low, sources) = (98u32, 8u32, [1u32, 3, 4, 9, 27]);
        let dag = PowersDag::new(&sources, &targets(degree, low)).unwrap();
        let x: Vec<u64> = (0..n).map(|_| rng.random_range(0..t)).collect();
        let encrypt = |values: &[u64], rng: &mut rand::rngs::StdRng| -> Ciphertext {
            let pt = Plaintext::try_encode(values, Encoding::simd(), &par).unwrap();
            sk.try_encrypt(&pt, rng).unwrap()
        };
        let sent: Vec<(u32, Ciphertext)> = sources
            .iter()
            .map(|&s| {
                let xs: Vec<u64> = x
                    .iter()
                    .map(|&v| (0..s).fold(1, |a, _| mul(a, v, t)))
                    .collect();
                (s, encrypt(&xs, &mut rng))
            })
            .collect();
        let xs = powers(&dag, sent, &rk, &par).unwrap();
        // The polynomial of `coefficients`, each encoded when the evaluation asks for it.
        let eval = |coefficients: &[Vec<u64>], xs: &HashMap<u32, Ciphertext>| {
            let encode = |j: usize| {
                Plaintext::try_encode(&coefficients[j], Encoding::simd(), &par).map_err(bfv)
            };
            let degree = coefficients.len().saturating_sub(1) as u32;
            evaluate(degree, &encode, low, xs, &rk)
        };
        let decrypt = |ct: &Ciphertext| -> Vec<u64> {
            let pt = sk.try_decrypt(ct).unwrap();
            Vec::<u64>::try_decode(&pt, Encoding::simd()).unwrap()
        };

        // Matching polynomials: roots y₁…y_d per slot, x a root in even slots.
        let mut coefficients = vec![vec![0u64; n]; degree as usize + 1];
        for s in 0..n {
            let mut poly = vec![1u64];
            for j in 0..degree as usize {
                let root = match (s % 2, j) {
                    (0, 0) => x[s],
                    _ => rng.random_range(0..t),
                };
                // poly · (x − root).
                let mut next = vec![0u64; poly.len() + 1];
                for (k, &c) in poly.iter().enumerate() {
                    next[k + 1] = (next[k + 1] + c) % t;
                    next[k] = (next[k] + t - mul(c, root, t)) % t;
                }
                poly = next;
            }
            (0..=degree as usize).for_each(|k| coefficients[k][s] = poly[k]);
        }
        let mut result = eval(&coefficients, &xs).unwrap();
        let expected = plain_eval(&coefficients, &x, t);
        result.switch_to_level(par.max_level()).unwrap();
        let got = decrypt(&result);
        assert_eq!(got, expected);
        assert!(got.iter().step_by(2).all(|&v| v == 0));
        let left = margin(&sk, &result, &par);
        assert!(left >= 6, "{left} bits of noise budget left");

        // Random polynomials of a degree that is not a multiple of ℓ + 1.
        let short: Vec<Vec<u64>> = (0..=40)
            .map(|_| (0..n).map(|_| rng.random_range(0..t)).collect())
            .collect();
        let result = eval(&short, &xs).unwrap();
        assert_eq!(decrypt(&result), plain_eval(&short, &x, t));
        assert!(eval(&short[..1], &xs).is_err(), "degree 0");
        let mut fewer = xs.clone();
        fewer.remove(&18);
        assert!(eval(&short, &fewer).is_err(), "x^18 missing");
    }
}
