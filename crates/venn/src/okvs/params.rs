//! The OKVS's dimensions for a number of keys (RR22 §3.1–3.2, Eq. (2)–(3); the constants as
//! the authors' code has them, which the paper prints rounded), with the keys split into
//! bins of about 2^14 (§2.1, "Separate") so that each bin's system fits in the cache.
//!
//! Failure is bounded over the whole encoding, not per bin (volePSI gives each bin the
//! plain λ, so its total is #bins·2^-λ: 2^-34 at 2^20): an overfull bin has probability at
//! most 2^-(λ+1) in all (the exact binomial tail, summed over the bins), and each bin's
//! system is sized for 2^-(λ+1+log2 #bins), so the two together stay under 2^-λ.
//!
//! With binary dense columns ([`Params::binary`]) a third failure joins them: a gap whose
//! random dense bits are dependent. A gap of at most g rows over g + λ' random bits has
//! full rank except with probability 2^-λ' (RR22 Lemma 2.1: its equations are
//! independent and uniform, each holding a gap row's own bits). So each bin's sparse
//! system is sized for 2^-(λ+2+log2 #bins), its dense part has g + λ' columns for
//! λ' = ⌈λ + 2 + log2 #bins⌉, and 2^-(λ+1) + 2^-(λ+2) + 2^-(λ+2) = 2^-λ.

use crate::{Error, Result};

/// The most dense columns a binary dense part ([`super::dense::BitRow`]) has: its bits
/// are one word.
pub(super) const MAX_BIT_COLUMNS: usize = 64;

/// Keys per bin, on average (RR22 §4: "bins of about 2^14 keys").
pub const BIN_KEYS: u64 = 1 << 14;
/// Rows of the sparse part: three columns each (RR22's w = 3).
pub(super) const WEIGHT: u32 = 3;
/// The fit of Eq. (3) holds from 2^6 keys on; fewer keys get the dimensions of 2^6 (a
/// system with fewer random rows over the same columns fails no more often).
const MIN_KEYS: u64 = 1 << 6;

/// How the keys are split and each bin's system is shaped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Params {
    /// Bins the keys are split into.
    pub bins: u64,
    /// The most keys a bin may take (beyond it the encoding fails, with probability at
    /// most 2^-(λ+1)).
    pub bin_keys: u64,
    /// Sparse columns per bin (m').
    pub sparse: u64,
    /// Dense columns per bin: g for values in GF(2^128) (the row's d, d^2, …, d^g), or
    /// g + λ' for binary dense parts.
    pub dense: u64,
    /// The statistical security λ the dimensions are for.
    pub lambda: u32,
    /// Whether the dense parts are binary ([`Params::binary`]): their λ' columns are part
    /// of the failure bound.
    pub binary: bool,
}

impl Params {
    /// The dimensions for `keys` keys and failure at most 2^-`lambda`, with field rows.
    pub fn new(keys: u64, lambda: u32) -> Result<Params> {
        Params::shaped(keys, lambda, false)
    }

    /// [`Params::new`] with binary dense parts (values of any width). At most 64 dense
    /// columns: at λ = 40, up to [`crate::MAX_ITEMS`] keys (2^17 bins) take 62.
    pub fn binary(keys: u64, lambda: u32) -> Result<Params> {
        Params::shaped(keys, lambda, true)
    }

    fn shaped(keys: u64, lambda: u32, binary: bool) -> Result<Params> {
        if keys > crate::MAX_ITEMS {
            return Err(Error::Params(format!(
                "an OKVS of {keys} keys: at most {} are supported",
                crate::MAX_ITEMS
            )));
        }
        let bins = keys.div_ceil(BIN_KEYS).max(1);
        let bin_keys = match bins {
            1 => keys,
            _ => max_bin_load(keys, bins, f64::from(lambda) + 1.0),
        };
        let share = if binary { 2.0 } else { 1.0 };
        let bin_lambda = f64::from(lambda) + share + (bins as f64).log2();
        let (sparse, gap) = bin_dimensions(bin_keys.max(MIN_KEYS), bin_lambda);
        let dense = gap + if binary { bin_lambda.ceil() as u64 } else { 0 };
        if binary && dense as usize > MAX_BIT_COLUMNS {
            return Err(Error::Params(format!(
                "a binary OKVS of {keys} keys at 2^-{lambda} needs {dense} dense columns, \
                 over {MAX_BIT_COLUMNS}"
            )));
        }
        Ok(Params {
            bins,
            bin_keys,
            sparse,
            dense,
            lambda,
            binary,
        })
    }

    /// Columns per bin (m' + g).
    pub fn bin_len(&self) -> usize {
        (self.sparse + self.dense) as usize
    }

    /// The encoding's length (m): every bin's columns.
    pub fn len(&self) -> usize {
        self.bins as usize * self.bin_len()
    }

    /// Whether the encoding is empty (never: a bin has columns even for no keys).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A bin's sparse and dense columns for `n` keys at failure 2^-`lambda` (RR22 Eq. (3) for
/// w = 3: the expansion e from the fitted slope and intercept, and g dense columns for
/// the gap, Lemma 3.4: duplicate-row failures fall as (e·n)^-(w-2) per dense column).
fn bin_dimensions(n: u64, lambda: f64) -> (u64, u64) {
    let log_n = (n as f64).log2();
    let log_w = f64::from(WEIGHT).log2();
    let c3 = 0.093 * log_w.powi(3) - 1.01 * log_w.powi(2) + 2.925 * log_w - 0.133;
    let slope = (0.555 * log_n + c3).exp2();
    let intercept = -9.2 - 1.223 * slope;
    let expansion = (lambda - intercept) / slope;
    let sparse = (expansion * n as f64).floor() as u64;
    let dense = (lambda / (f64::from(WEIGHT - 2) * (expansion * n as f64).log2())).floor() as u64;
    (sparse, dense)
}

/// The smallest load that `keys` keys thrown uniformly into `bins` bins exceed in some bin
/// with probability at most 2^-`lambda` (a union bound over the bins of the exact binomial
/// tail).
fn max_bin_load(keys: u64, bins: u64, lambda: f64) -> u64 {
    let target = -lambda * std::f64::consts::LN_2 - (bins as f64).ln();
    let (n, p) = (keys as f64, 1.0 / bins as f64);
    let mean = keys / bins;
    // ln P[X = k] for k from the mean up, by the ratio of successive terms; from
    // ln P[X = mean] by Stirling's series, exact to far below the 2^-40 that matters.
    let ln_pmf_mean =
        ln_choose(keys, mean) + mean as f64 * p.ln() + (n - mean as f64) * (-p).ln_1p();
    let mut terms = vec![ln_pmf_mean];
    let (mut k, mut ln_term) = (mean, ln_pmf_mean);
    // Far enough that the rest of the tail is below 2^-200 of what is summed.
    while ln_term > target - 140.0 && k < keys {
        ln_term += ((n - k as f64) / (k as f64 + 1.0)).ln() + (p / (1.0 - p)).ln();
        k += 1;
        terms.push(ln_term);
    }
    // ln P[X > mean + i] for i from the top down; the first over the target stops.
    let mut tail = f64::NEG_INFINITY;
    for i in (1..terms.len()).rev() {
        let with = log_add(tail, terms[i]);
        if with > target {
            return mean + i as u64;
        }
        tail = with;
    }
    mean
}

/// ln(e^a + e^b).
fn log_add(a: f64, b: f64) -> f64 {
    let (hi, lo) = if a > b { (a, b) } else { (b, a) };
    if lo == f64::NEG_INFINITY {
        return hi;
    }
    hi + (lo - hi).exp().ln_1p()
}

/// ln C(n, k) by Stirling's series for ln n!.
fn ln_choose(n: u64, k: u64) -> f64 {
    ln_factorial(n) - ln_factorial(k) - ln_factorial(n - k)
}

/// ln n!: summed for small n, Stirling's series with three correction terms otherwise
/// (its error below 1/(1680·n^7): under 1e-15 from n = 64 on).
fn ln_factorial(n: u64) -> f64 {
    if n < 64 {
        return (2..=n).map(|i| (i as f64).ln()).sum();
    }
    let x = n as f64;
    let inv = 1.0 / x;
    let inv2 = inv * inv;
    x * x.ln() - x + 0.5 * (2.0 * std::f64::consts::PI * x).ln() + inv / 12.0 - inv * inv2 / 360.0
        + inv * inv2 * inv2 / 1260.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dimensions_follow_the_fit() {
        // RR22's fit at λ = 40 for one unclustered system (rr22.md §2.2): e ≈ 1.2437 and
        // g = 2 at 2^16, e ≈ 1.2274 and g = 1 at 2^20.
        for (n, e, g) in [(1u64 << 16, 1.2437, 2), (1 << 20, 1.2274, 1)] {
            let (sparse, dense) = bin_dimensions(n, 40.0);
            let got = sparse as f64 / n as f64;
            assert!((got - e).abs() < 5e-4, "n = {n}: e = {got}");
            assert_eq!(dense, g, "n = {n}");
        }
    }

    #[test]
    fn bins_hold_their_load_at_the_bound() {
        // 2^20 keys in 64 bins: the mean 16,384, σ ≈ 127; 2^-47 is about 8σ out.
        let load = max_bin_load(1 << 20, 64, 41.0);
        assert!((17_300..17_450).contains(&load), "{load}");
        // The bound is tight: one less exceeds it.
        let tail = |b: u64| {
            let (n, p) = (1u64 << 20, 1.0 / 64.0);
            (b + 1..=b + 3000)
                .map(|k| {
                    (ln_choose(n, k) + k as f64 * f64::ln(p) + (n - k) as f64 * (-p).ln_1p()).exp()
                })
                .sum::<f64>()
                * 64.0
        };
        assert!(tail(load) <= 2f64.powi(-41), "{}", tail(load));
        assert!(tail(load - 1) > 2f64.powi(-41), "{}", tail(load - 1));
    }

    #[test]
    fn the_whole_encoding_is_about_1_35_per_key() {
        for (log_n, most) in [(16, 1.36), (20, 1.36), (24, 1.37)] {
            let p = Params::new(1 << log_n, 40).unwrap();
            let ratio = p.len() as f64 / (1u64 << log_n) as f64;
            assert!(ratio < most && ratio > 1.2, "2^{log_n}: {ratio} ({p:?})");
        }
        let one = Params::new(1, 40).unwrap();
        assert_eq!((one.bins, one.bin_keys), (1, 1));
        assert!(one.len() >= 64, "{one:?}");
        assert!(Params::new(crate::MAX_ITEMS + 1, 40).is_err());
    }

    /// Binary dense parts: the gap's g columns and λ' = ⌈λ + 2 + log2 #bins⌉ more, the
    /// sparse part sized for 2^-λ' too (a little wider than the field rows' at 2^-(λ' − 1)).
    #[test]
    fn binary_dense_parts_add_the_rank_bound() {
        for log_n in [0, 10, 14, 16, 20, 24, 31] {
            let n = 1u64 << log_n;
            let (field, binary) = (Params::new(n, 40).unwrap(), Params::binary(n, 40).unwrap());
            assert_eq!((field.bins, field.bin_keys), (binary.bins, binary.bin_keys));
            let lambda = 42.0 + (binary.bins as f64).log2();
            let (sparse, gap) = bin_dimensions(binary.bin_keys.max(MIN_KEYS), lambda);
            assert_eq!(binary.sparse, sparse, "2^{log_n}");
            assert_eq!(binary.dense, gap + lambda.ceil() as u64, "2^{log_n}");
            assert!(
                binary.sparse >= field.sparse && binary.dense <= 64,
                "{binary:?}"
            );
        }
        assert!(Params::binary(crate::MAX_ITEMS, 48).is_err());
    }

    #[test]
    fn ln_factorial_is_exact_where_it_matters() {
        let exact: f64 = (2..=200u64).map(|i| (i as f64).ln()).sum();
        assert!((ln_factorial(200) - exact).abs() < 1e-9 * exact);
        assert!(
            (ln_factorial(16) - (2..=16u64).map(|i| (i as f64).ln()).sum::<f64>()).abs() < 1e-12
        );
    }
}
