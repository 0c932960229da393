//! The cut-and-choose and Bloom-filter parameters of RR17 §5.2 (Fig. 5).
//!
//! For a set size n, a number k of hash functions and a checking probability p_chk:
//! - honest ones: `N_maxones = (1+δ)·p_chk·m_h¹` with `m_h¹ = n·k + N_maxones` (a fixed
//!   point) and δ from the Chernoff bound `e^{-δ²μ/(2+δ)} ≤ e^{-λ}`;
//! - a malicious receiver passes with `m_a¹` ones only if `(1−δ')·p_chk·m_a¹ ≤ N_maxones`,
//!   `δ' = sqrt(2λ / (p_chk·m_a¹))`; it then keeps at most
//!   `N_1 = (1−p_chk)·m_a¹ + sqrt(2λ·p_chk·m_a¹)` ones;
//! - `N_bf = N_1 · 2^{κ/k}`, so `(N_1/N_bf)^k ≤ 2^-κ`;
//! - `N_ot = N_bf + (1+δ*)·p_chk·N_ot` (a fixed point), so fewer than `N_bf` OTs stay
//!   unopened with probability ≤ e^{-λ};
//! - `α = m_h¹ / N_ot`.
//!
//! The paper's formulas put λ straight into the exponent of `e`, i.e. they bound each bad
//! event by `e^{-λ} ≈ 2^{-57.7}` rather than `2^{-λ}`. That is the conservative reading
//! (more slack for the honest party, a larger filter against the malicious one), and it is
//! the one that reproduces Fig. 5 (to 0.02%), so it is the one used here.
//! k ∈ [80, 100] and p_chk ∈ {0.001, 0.002, …, 0.100} are searched for the smallest N_ot.

use crate::net::Writer;
use crate::protocols::{output_bits, ParamTable, Parameters, Sizes};
use crate::{Error, Result};
use crate::{COMPUTATIONAL_SECURITY, STATISTICAL_SECURITY};

/// The parameters of one RR17 Bloom-filter run.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Rr17BloomParams {
    /// The receiver's set size, which sizes the filter.
    pub n: u64,
    /// Bloom-filter hash functions.
    pub k: usize,
    /// Probability that an OT is opened in the cut-and-choose.
    pub p_chk: f64,
    /// Random OTs in all.
    pub n_ot: u64,
    /// Bloom-filter bits.
    pub n_bf: u64,
    /// Fraction of ones among the honest receiver's choice bits.
    pub alpha: f64,
    /// Ones the receiver may reveal in the cut-and-choose and still pass.
    pub n_maxones: u64,
}

/// The smallest δ with `e^{-δ²μ/(2+δ)} ≤ e^{-λ}`.
fn upper_tail_delta(mu: f64) -> f64 {
    let l = STATISTICAL_SECURITY as f64;
    (l + (l * l + 8.0 * l * mu).sqrt()) / (2.0 * mu)
}

impl Rr17BloomParams {
    /// The derivation of §5.2 for given `n`, `k`, `p_chk`.
    pub(crate) fn derive(n: u64, k: usize, p_chk: f64) -> Self {
        let lambda = STATISTICAL_SECURITY as f64;
        let nk = n.max(1) as f64 * k as f64;
        let mut maxones = 0.0;
        let mut m1 = nk;
        for _ in 0..100 {
            m1 = nk + maxones;
            let mu = m1 * p_chk;
            maxones = (1.0 + upper_tail_delta(mu)) * mu;
        }
        // p·m_a − sqrt(2λ·p·m_a) = N_maxones, solved for u = sqrt(p·m_a).
        let u = ((2.0 * lambda).sqrt() + (2.0 * lambda + 4.0 * maxones).sqrt()) / 2.0;
        let m_a = u * u / p_chk;
        let n_1 = (1.0 - p_chk) * m_a + (2.0 * lambda * p_chk * m_a).sqrt();
        let n_bf = n_1 * 2f64.powf(COMPUTATIONAL_SECURITY as f64 / k as f64);
        let mut n_ot = n_bf / (1.0 - p_chk);
        for _ in 0..100 {
            let mu = n_ot * p_chk;
            n_ot = n_bf + (1.0 + upper_tail_delta(mu)) * mu;
        }
        Rr17BloomParams {
            n,
            k,
            p_chk,
            n_ot: n_ot.ceil() as u64,
            n_bf: n_bf.ceil() as u64,
            alpha: m1 / n_ot,
            n_maxones: maxones.floor() as u64,
        }
    }

    /// The parameters with the fewest OTs for a receiver set of `n` items.
    pub(crate) fn new(n: u64) -> Self {
        (80..=100)
            .flat_map(|k| (1..=100).map(move |p| Self::derive(n, k, p as f64 / 1000.0)))
            .min_by_key(|p| p.n_ot)
            .expect("a non-empty search space")
    }

    /// The parameters with the output length `v` for these set sizes.
    pub(crate) fn with_output(n_sender: u64, n_receiver: u64) -> Result<WithOutput> {
        let p = Rr17BloomParams::new(n_receiver.max(1));
        // OT indices are 32-bit on the wire (π) and in memory; this also keeps a peer from
        // announcing a set that would make us allocate hundreds of gigabytes.
        if p.n_ot > u32::MAX as u64 {
            return Err(Error::Params(format!(
                "a receiver set of {n_receiver} items needs {} OTs, more than the supported 2^32",
                p.n_ot
            )));
        }
        let sizes = Sizes {
            sender: n_sender,
            receiver: n_receiver,
        };
        Ok(WithOutput(p, output_bits(sizes)))
    }
}

/// [`Rr17BloomParams`] and the output length `v` of the summaries.
pub(crate) struct WithOutput(pub Rr17BloomParams, pub usize);

impl Parameters for WithOutput {
    fn encode(&self) -> Vec<u8> {
        let p = &self.0;
        Writer::new()
            .u64(p.k as u64)
            .u64(p.p_chk.to_bits())
            .u64(p.n_ot)
            .u64(p.n_bf)
            .u64(p.alpha.to_bits())
            .u64(p.n_maxones)
            .u64(self.1 as u64)
            .0
    }

    fn table(&self) -> ParamTable {
        let p = &self.0;
        ParamTable(vec![
            ("p_chk", format!("{:.3}", p.p_chk)),
            ("k", p.k.to_string()),
            ("N_ot", p.n_ot.to_string()),
            ("N_bf", p.n_bf.to_string()),
            ("alpha", format!("{:.3}", p.alpha)),
            ("N_maxones", p.n_maxones.to_string()),
            ("v", self.1.to_string()),
        ])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RR17 Fig. 5: n, p_chk, k, N_ot, N_bf, α, N_maxones.
    const FIG5: [(u32, f64, usize, u64, u64, f64, u64); 4] = [
        (8, 0.099, 94, 99_372, 88_627, 0.274, 3_182),
        (12, 0.053, 94, 1_187_141, 1_121_959, 0.344, 22_958),
        (16, 0.024, 91, 16_992_857, 16_579_297, 0.360, 150_181),
        (20, 0.010, 90, 260_252_093, 257_635_123, 0.366, 962_092),
    ];

    /// Asserts that `got` is within `tolerance` (relative) of Fig. 5's `want`.
    fn assert_close(log_n: u32, what: &str, got: u64, want: u64, tolerance: f64) {
        assert!(
            (got as f64 / want as f64 - 1.0).abs() <= tolerance,
            "2^{log_n}: {what} {got} vs {want}"
        );
    }

    #[test]
    fn the_derivation_reproduces_figure_5_at_the_papers_choices() {
        for (log_n, p, k, n_ot, n_bf, alpha, maxones) in FIG5 {
            let d = Rr17BloomParams::derive(1 << log_n, k, p);
            assert_close(log_n, "N_ot", d.n_ot, n_ot, 0.001);
            assert_close(log_n, "N_bf", d.n_bf, n_bf, 0.001);
            assert!((d.alpha - alpha).abs() < 0.001, "2^{log_n}: α {}", d.alpha);
            assert_close(log_n, "N_maxones", d.n_maxones, maxones, 0.001);
        }
    }

    #[test]
    fn the_search_is_within_two_percent_of_figure_5() {
        for (log_n, _, _, n_ot, n_bf, _, _) in FIG5 {
            let p = Rr17BloomParams::new(1 << log_n);
            assert_close(log_n, "N_ot", p.n_ot, n_ot, 0.02);
            assert_close(log_n, "N_bf", p.n_bf, n_bf, 0.02);
            assert!(
                p.n_ot <= n_ot,
                "the search never does worse than the paper's choice"
            );
            assert!((80..=100).contains(&p.k) && (0.001..=0.1).contains(&p.p_chk));
        }
    }

    #[test]
    fn the_bounds_hold() {
        let p = Rr17BloomParams::new(1 << 12);
        // The honest receiver has the n·k ones it needs after the check.
        let m1 = p.alpha * p.n_ot as f64;
        assert!(m1 - p.n_maxones as f64 >= (1u64 << 12) as f64 * p.k as f64 - 1.0);
        // Enough unopened OTs for the filter, in expectation with room to spare.
        assert!((p.n_ot as f64) * (1.0 - p.p_chk) > p.n_bf as f64);
    }
}
