//! Polynomials evaluated on encrypted slots: plaintext j holds every slot's coefficient j,
//! so one evaluation computes, in each of the N slots, that slot's polynomial at that
//! slot's x (CLR17 §4, CHLR18 §4: a bin's matching or label polynomial per slot).
//!
//! The evaluation is Paterson–Stockmeyer's (CMdG+21 §4.3; APSI's `eval_patstock`): with
//! low degree ℓ, P(x) = Σᵢ x^{i(ℓ+1)} · Qᵢ(x), each Qᵢ of degree ℓ taken as fused
//! ciphertext × plaintext terms over the low powers x¹…x^ℓ (one reduction a slot every
//! many terms), then multiplied by the high power x^{i(ℓ+1)}: the products are summed
//! before they are scaled and relinearised once (all of it [`super::product`]'s). It
//! needs the powers 1…ℓ and the multiples of ℓ + 1 up to the degree ([`targets`]), which
//! [`powers`] computes from a query's sources by a [`PowersDag`]. Every ciphertext is at
//! level 0; the caller switches the result down before sending it.

use super::bfv;
use super::params::tensor;
use super::powers::PowersDag;
use super::product::{Encoded, Extended, Tensor};
use crate::{Error, Result};
use fhe::bfv::{BfvParameters, Ciphertext, RelinearizationKey};
use rayon::prelude::*;
use std::collections::HashMap;
use std::ops::Range;
use std::sync::Arc;

/// The multiples of ℓ + 1 up to `degree`, for low degree ℓ = `low`: the powers of x that
/// Paterson–Stockmeyer's blocks after the first are multiplied by.
pub fn high_powers(degree: u32, low: u32) -> Vec<u32> {
    let step = low + 1;
    (1..=degree / step).map(|i| i * step).collect()
}

/// The coefficients of each of Paterson–Stockmeyer's blocks of a polynomial of degree
/// `degree` with low degree ℓ = `low` (at least 1): block i takes coefficients i(ℓ + 1)
/// to i(ℓ + 1) + ℓ, the last fewer where the degree ends.
pub fn blocks(degree: u32, low: u32) -> impl Iterator<Item = Range<usize>> {
    let step = low as usize + 1;
    (0..=degree as usize / step).map(move |i| i * step..(i * step + step).min(degree as usize + 1))
}

/// The powers of x an evaluation of degree `degree` with low degree ℓ = `low` needs:
/// 1…ℓ and the [`high_powers`].
pub fn targets(degree: u32, low: u32) -> Vec<u32> {
    (1..=low.min(degree))
        .chain(high_powers(degree, low))
        .collect()
}

/// Powers of an encrypted x: their ciphertexts, and the lifts to Q ∪ P of those that
/// multiply Paterson–Stockmeyer's blocks (made once, used by every evaluation).
pub struct Powers {
    ciphertexts: HashMap<u32, Ciphertext>,
    lifted: HashMap<u32, Extended>,
    tensor: Arc<Tensor>,
}

impl Powers {
    /// x^`power`'s ciphertext.
    fn ciphertext(&self, power: u32) -> Result<&Ciphertext> {
        (self.ciphertexts.get(&power))
            .ok_or_else(|| Error::Usage(format!("no ciphertext of x^{power}")))
    }

    /// x^`power` lifted for products.
    fn lifted(&self, power: u32) -> Result<&Extended> {
        lifted_of(&self.lifted, power)
    }
}

/// The powers of x that `dag` computes, from the ciphertexts of its sources (`sources`:
/// each source power's ciphertext of `par`, at level 0), by products relinearised with
/// `rk` (none where `dag` computes nothing), keeping the lifts of the powers in `lift`
/// (the [`high_powers`] of the evaluations to come). Each power's lift is made once, when a product first needs it,
/// and dropped after its last; the lifts and products of each depth run on the current
/// rayon pool.
pub fn powers(
    dag: &PowersDag,
    sources: Vec<(u32, Ciphertext)>,
    lift: &[u32],
    rk: Option<&RelinearizationKey>,
    par: &Arc<BfvParameters>,
) -> Result<Powers> {
    let mut have: HashMap<u32, Ciphertext> = sources.into_iter().collect();
    if let Some(missing) = dag.sources().iter().find(|s| !have.contains_key(s)) {
        return Err(Error::Usage(format!(
            "no ciphertext of the source power {missing}"
        )));
    }
    let tensor = tensor(par)?;
    let steps = dag.steps();
    // The step after which each power's lift is not needed by a product.
    let mut last_use: HashMap<u32, usize> = HashMap::new();
    for (at, &(_, a, b)) in steps.iter().enumerate() {
        last_use.insert(a, at);
        last_use.insert(b, at);
    }
    let lift_all = |powers: Vec<u32>, have: &HashMap<u32, Ciphertext>| {
        (powers.par_iter())
            .map(|&p| {
                let ct = (have.get(&p))
                    .ok_or_else(|| Error::Usage(format!("no ciphertext of x^{p} to lift")))?;
                Ok((p, tensor.extend(ct)?))
            })
            .collect::<Result<Vec<_>>>()
    };
    let mut lifted: HashMap<u32, Extended> = HashMap::new();
    let mut at = 0;
    while at < steps.len() {
        let depth = dag.depth_of(steps[at].0);
        let level = steps[at..]
            .iter()
            .take_while(|s| dag.depth_of(s.0) == depth)
            .count();
        let batch = &steps[at..at + level];
        let mut halves: Vec<u32> = (batch.iter())
            .flat_map(|&(_, a, b)| [a, b])
            .filter(|h| !lifted.contains_key(h))
            .collect();
        halves.sort_unstable();
        halves.dedup();
        lifted.extend(lift_all(halves, &have)?);
        let made = (batch.par_iter())
            .map(|&(p, a, b)| {
                let (a, b) = (lifted_of(&lifted, a)?, lifted_of(&lifted, b)?);
                let mut product = tensor.multiply(a, b)?;
                relinearise(rk, &mut product)?;
                Ok((p, product))
            })
            .collect::<Result<Vec<_>>>()?;
        have.extend(made);
        at += level;
        lifted.retain(|p, _| last_use.get(p).is_some_and(|&last| last >= at) || lift.contains(p));
    }
    let rest: Vec<u32> = (lift.iter())
        .filter(|p| !lifted.contains_key(p))
        .copied()
        .collect();
    lifted.extend(lift_all(rest, &have)?);
    lifted.retain(|p, _| lift.contains(p));
    Ok(Powers {
        ciphertexts: have,
        lifted,
        tensor,
    })
}

/// x^`power`'s lift among `lifted`.
fn lifted_of(lifted: &HashMap<u32, Extended>, power: u32) -> Result<&Extended> {
    (lifted.get(&power)).ok_or_else(|| Error::Usage(format!("no lift of x^{power}")))
}

/// A Paterson–Stockmeyer block's share of an evaluation: a ciphertext to add, or Qᵢ(x)
/// lifted, to be multiplied by x^{i(ℓ+1)}.
enum Block {
    Ready(Ciphertext),
    Lifted(u32, Extended),
}

/// The polynomial of degree `degree` (at least 1) whose coefficients j ∈ `js` are the
/// plaintexts `plaintexts(js)` (of the powers' [`Tensor`]), evaluated at x by
/// Paterson–Stockmeyer with low degree `low`, from x's `powers` (every one of [`targets`],
/// the [`high_powers`] lifted), with no product of ciphertexts where ℓ = d (then no key:
/// `rk` is none). Its blocks run on the current rayon pool, each asking for its own ℓ + 1
/// coefficients when it runs: a polynomial need not be held whole (the d + 1 plaintexts of
/// a large set's bin are 0.25 MiB each at N = 8,192 and four moduli). The blocks' products
/// are summed before they are scaled, then relinearised with `rk` once.
pub fn evaluate(
    degree: u32,
    plaintexts: &(dyn Fn(Range<usize>) -> Result<Arc<Vec<Encoded>>> + Sync),
    low: u32,
    powers: &Powers,
    rk: Option<&RelinearizationKey>,
) -> Result<Ciphertext> {
    if degree == 0 || low == 0 {
        return Err(Error::Usage(format!(
            "a polynomial of degree {degree} with low degree {low}: both at least 1"
        )));
    }
    let tensor = &powers.tensor;
    // Each block: Qᵢ (degree ≤ ℓ) times x^{i(ℓ+1)}: ready where no product of ciphertexts
    // is needed (Q₀, and a block of a constant alone), else Qᵢ lifted for one.
    let blocks = (blocks(degree, low).collect::<Vec<_>>())
        .into_par_iter()
        .map(|js| {
            // x^{i(ℓ+1)}: block i's first coefficient.
            let power = js.start as u32;
            let block = plaintexts(js.clone())?;
            if block.len() != js.len() {
                return Err(Error::Usage(format!(
                    "{} plaintexts for coefficients {js:?}",
                    block.len()
                )));
            }
            let (constant, terms) = block.split_first().expect("at least one");
            if terms.is_empty() {
                // A constant alone: cᵢ · x^{i(ℓ+1)} (i ≥ 1: degree ≥ 1).
                let power = powers.ciphertext(power)?;
                return Ok(Block::Ready(tensor.dot(&[(power, constant)], None)?));
            }
            let lows = (1..=terms.len() as u32)
                .map(|p| powers.ciphertext(p))
                .collect::<Result<Vec<_>>>()?;
            let pairs: Vec<(&Ciphertext, &Encoded)> = lows.into_iter().zip(terms).collect();
            let inner = tensor.dot(&pairs, Some(constant))?;
            match power {
                0 => Ok(Block::Ready(inner)),
                power => Ok(Block::Lifted(power, tensor.extend(&inner)?)),
            }
        })
        .collect::<Result<Vec<Block>>>()?;
    let (mut result, mut products) = (None::<Ciphertext>, None);
    for block in blocks {
        match block {
            Block::Ready(part) => match &mut result {
                Some(sum) => *sum += &part,
                None => result = Some(part),
            },
            Block::Lifted(power, inner) => {
                let sum = products.get_or_insert_with(|| tensor.sum());
                tensor.add_product(sum, &inner, powers.lifted(power)?)?;
            }
        }
    }
    let mut result = result.expect("block 0 is not a product");
    if let Some(products) = products {
        let mut products = tensor.finish(products)?;
        relinearise(rk, &mut products)?;
        result += &products;
    }
    Ok(result)
}

/// Plaintexts `js` of the polynomial of `coefficients` (each plaintext's slots), encoded
/// by `tensor`: what a test's evaluation asks for.
#[cfg(test)]
pub(crate) fn encoded(
    tensor: &Tensor,
    coefficients: &[Vec<u64>],
    js: Range<usize>,
) -> Result<Arc<Vec<Encoded>>> {
    let encoded = coefficients[js].iter().map(|s| tensor.encode(s));
    Ok(Arc::new(encoded.collect::<Result<Vec<_>>>()?))
}

/// Relinearises `product` with `rk`: refused where there is no key (a set whose queries
/// send none needs no product).
fn relinearise(rk: Option<&RelinearizationKey>, product: &mut Ciphertext) -> Result<()> {
    let rk = rk.ok_or_else(|| Error::Usage("a product without a relinearisation key".into()))?;
    rk.relinearizes(product).map_err(bfv)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::he::params::Bfv;
    use fhe::bfv::{BfvParameters, Encoding, Plaintext, SecretKey};
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
        let xs = powers(&dag, sent, &high_powers(degree, low), Some(&rk), &par).unwrap();
        // The polynomial of `coefficients`, each encoded when the evaluation asks for it.
        let tensor = tensor(&par).unwrap();
        let eval = |coefficients: &[Vec<u64>], xs: &Powers| {
            let plaintexts = |js| encoded(&tensor, coefficients, js);
            let degree = coefficients.len().saturating_sub(1) as u32;
            evaluate(degree, &plaintexts, low, xs, Some(&rk))
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
        let mut fewer = xs;
        fewer.lifted.remove(&18);
        assert!(eval(&short, &fewer).is_err(), "x^18's lift missing");
        fewer.ciphertexts.remove(&5);
        assert!(eval(&short, &fewer).is_err(), "x^5 missing");
    }
}
