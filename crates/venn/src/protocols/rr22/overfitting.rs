//! How far a cheating `rr22-m` receiver gets beyond the OKVS's size m, and the deadline
//! that keeps it close to m.
//!
//! The OKVS OPRF answers the receiver R on exactly the keys x with Decode(P, x) = H^B(x)
//! for the P it encoded. An honest P holds its n_R keys; a cheating R may hash a large pool
//! of candidates first and then pick a P that happens to decode correctly on more than m
//! of them — "overfitting" the OKVS (Han–Kim–Lee–Son, *Revisiting OKVS-based OPRF and
//! PSI: Cryptanalysis and Better Construction*, Asiacrypt 2024). So "at most m items",
//! PaXoS's and RS21's relaxation, holds only against a bounded number of hashes.
//!
//! Venn bounds them in time: the sender draws a fresh salt at the start of the online
//! phase, H^B and the OKVS's rows are keyed by it (nothing can be hashed before it is
//! known, in an earlier session or in the offline phase), and the whole of A' must arrive
//! within one deadline of the salt ([`upload_deadline`]), not one timeout per message.
//!
//! The bound ([`ceiling`]) is a union bound in the random-oracle model: for a fixed set S
//! of s = m + k queried keys, the labels H^B(S) are uniform in F^s and those some P fits
//! form a subspace of dimension at most m, so S is fitted with probability at most
//! 2^(−ℓk); over the C(q, s) sets of a receiver's q hashes,
//! Pr[n' ≥ m + k] ≤ C(q, m + k) · 2^(−ℓk). It depends on m and q only, not on the rows'
//! shape. The figures are Venn's own analysis (the paper's text was not at hand); the
//! attacks known on 3-wise sparse rows gain far less than the ceiling (+0.5 % of m for
//! about 2^44 work).

use crate::STATISTICAL_SECURITY;
use std::time::Duration;

/// The part of the deadline for the upload of A' that does not grow with it.
pub(crate) const UPLOAD_GRACE: Duration = Duration::from_secs(30);

/// The slowest link the default deadline allows for, in bytes a second (10 MB/s).
pub(crate) const UPLOAD_RATE: u64 = 10_000_000;

/// The hash evaluations a second the stated bound assumes of a cheating receiver: 2^40,
/// several hundred GPUs' worth.
pub(crate) const ATTACKER_HASHES_LOG2: f64 = 40.0;

/// The bits of an OKVS value (ℓ: the width of H^B, one GF(2^128) element).
const LABEL_BITS: f64 = 128.0;

/// The default deadline for the whole of A' (m blocks of 16 bytes), counted from the
/// sender's sending the salt: [`UPLOAD_GRACE`] plus its bytes at [`UPLOAD_RATE`] (32 s at
/// 2^20 items, 66 s at 2^24).
pub(crate) fn upload_deadline(m: usize) -> Duration {
    UPLOAD_GRACE + Duration::from_secs_f64((m as f64 * 16.0) / UPLOAD_RATE as f64)
}

/// The most keys, as a multiple of m, that a receiver who evaluated 2^`log2_q` hashes can
/// make an OKVS of m values decode correctly (except with probability 2^-λ): the least
/// s ≥ m with log2 C(q, s) ≤ ℓ·(s − m) − λ, over m. Only m and q enter.
pub(crate) fn ceiling(m: u64, log2_q: f64) -> f64 {
    let (m, q) = (m as f64, log2_q.exp2());
    if q <= m {
        return 1.0;
    }
    let fits = |s: f64| log2_choose(q, s) - LABEL_BITS * (s - m) + STATISTICAL_SECURITY as f64;
    let (mut lo, mut hi) = (m, q);
    if fits(hi) > 0.0 {
        return q / m;
    }
    while hi - lo > 1.0_f64.max(1e-7 * m) {
        let mid = (lo + hi) / 2.0;
        if fits(mid) > 0.0 {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    hi / m
}

/// The bound [`ceiling`] gives a receiver that hashes at 2^[`ATTACKER_HASHES_LOG2`] a
/// second for `deadline`: (n'/m, log2 of its hashes).
pub(crate) fn ceiling_within(m: u64, deadline: Duration) -> (f64, f64) {
    let log2_q = ATTACKER_HASHES_LOG2 + deadline.as_secs_f64().max(1.0).log2();
    (ceiling(m, log2_q), log2_q)
}

/// log2 C(n, k) for real n ≥ k ≥ 0, n possibly astronomically larger than k.
fn log2_choose(n: f64, k: f64) -> f64 {
    let ln = if k * 100.0 < n {
        // ln(n!/(n−k)!) = Σ_{i<k} ln(n − i) = k·ln n + Σ ln(1 − i/n), the sum's first two
        // terms exact enough for i/n ≤ 1/100.
        let (s1, s2) = (k * (k - 1.0) / 2.0, (k - 1.0) * k * (2.0 * k - 1.0) / 6.0);
        k * n.ln() - s1 / n - s2 / (2.0 * n * n) - ln_gamma(k + 1.0)
    } else {
        ln_gamma(n + 1.0) - ln_gamma(k + 1.0) - ln_gamma(n - k + 1.0)
    };
    ln / std::f64::consts::LN_2
}

/// ln Γ(x) for x ≥ 1, by Stirling's series after shifting x past 10 (error below 1e-10).
fn ln_gamma(mut x: f64) -> f64 {
    let mut shift = 0.0;
    while x < 10.0 {
        shift -= x.ln();
        x += 1.0;
    }
    let inv = 1.0 / x;
    let inv2 = inv * inv;
    let series = inv * (1.0 / 12.0 - inv2 * (1.0 / 360.0 - inv2 * (1.0 / 1260.0)));
    shift + (x - 0.5) * x.ln() - x + 0.5 * (2.0 * std::f64::consts::PI).ln() + series
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crypto::{Aes, Block, Prg};
    use crate::okvs::{Okvs, Params};
    use crate::oprf::{okvs_seed, Hashes};
    use std::collections::HashMap;

    #[test]
    fn ln_gamma_matches_factorials() {
        let mut f = 0.0f64;
        for n in 1..60u32 {
            f += f64::from(n).ln();
            assert!(
                (ln_gamma(f64::from(n) + 1.0) - f).abs() < 1e-9 * f.max(1.0),
                "{n}"
            );
        }
    }

    /// The ceiling at 2^20 items (m = 1,414,720) for the hash budgets of the analysis the
    /// bound comes from, its table reproduced to two decimals.
    #[test]
    fn the_ceiling_matches_the_union_bound_table() {
        let m = 1_414_720;
        for (log2_q, want) in [(30.0, 1.09), (40.0, 1.19), (46.0, 1.26), (50.0, 1.31)] {
            let got = ceiling(m, log2_q);
            assert!((got - want).abs() < 0.006, "q = 2^{log2_q}: {got}");
        }
        assert_eq!(ceiling(m, 20.0), 1.0, "fewer hashes than m");
        let (bound, log2_q) = ceiling_within(m, upload_deadline(m as usize));
        assert!((log2_q - 45.0).abs() < 0.1, "{log2_q}");
        assert!((1.24..1.27).contains(&bound), "{bound}");
    }

    /// Labels of `bits` bits: H^B cut short, so that a birthday search is within a test's
    /// reach (the attack's cost grows as 2^(bits·(t−1)/t) for a t-fold fit).
    fn labels(h_b: &Aes, keys: &[Block], bits: u32) -> Vec<Block> {
        let mut out = vec![Block::ZERO; keys.len()];
        Hashes::hash_to(h_b, keys, &mut out);
        out.iter_mut()
            .for_each(|l| *l &= Block::low_ones(bits as usize));
        out
    }

    /// The "sequential birthday" overfit of a one-bin OKVS (the dense columns left 0):
    /// each sparse column in turn takes the value most of the keys whose last column it
    /// is propose, P[c] = label + P[c1] + P[c2], and keeps those keys. Returns P and the
    /// keys it decodes correctly.
    fn overfit(okvs: &Okvs, keys: &[Block], labels: &[Block]) -> (Vec<Block>, Vec<usize>) {
        let cols = okvs.sparse_columns(keys);
        let mut by_last: Vec<Vec<usize>> = vec![Vec::new(); okvs.params().sparse as usize];
        for (i, c) in cols.iter().enumerate() {
            by_last[*c.iter().max().unwrap() as usize].push(i);
        }
        let mut p = vec![Block::ZERO; okvs.params().len()];
        let mut kept = Vec::new();
        for (col, keys) in by_last.iter().enumerate() {
            let propose = |i: usize| {
                let mut c = cols[i];
                c.sort_unstable();
                labels[i] ^ p[c[0] as usize] ^ p[c[1] as usize]
            };
            let mut votes: HashMap<Block, Vec<usize>> = HashMap::new();
            for &i in keys {
                votes.entry(propose(i)).or_default().push(i);
            }
            if let Some((value, voters)) = votes.into_iter().max_by_key(|(_, v)| v.len()) {
                p[col] = value;
                kept.extend(voters);
            }
        }
        (p, kept)
    }

    /// How many of `keys[kept]` the real decoder maps to their labels under `p`.
    fn decoded(okvs: &Okvs, p: &[Block], keys: &[Block], labels: &[Block]) -> usize {
        let mut out = vec![Block::ZERO; keys.len()];
        okvs.decode(p, keys, &mut out);
        out.iter().zip(labels).filter(|(o, l)| o == l).count()
    }

    fn pool(prg: &mut Prg, q: usize) -> Vec<Block> {
        (0..q).map(|_| prg.block()).collect()
    }

    /// The relaxation is real: a receiver that knows H^B and the rows before it fits P
    /// (the schedule before the salt: both followed from the session id alone, and each
    /// message had a timeout of its own) makes an OKVS of m values answer on well over m
    /// of its pool, every one checked by the real decoder. 16-bit labels stand for
    /// 128-bit ones and a pool of 2^18 for the hashes a long window buys.
    #[test]
    fn a_receiver_hashing_before_it_fits_gets_more_than_m_answers() {
        let params = Params::new(700, STATISTICAL_SECURITY as u32).unwrap();
        assert_eq!(params.bins, 1);
        let sid = [3; 32];
        let mut prg = Prg::from_seed(Block::from(5));
        let (seed, hashes) = (prg.block(), Hashes::new(&sid, None));
        let okvs = Okvs::new(params, seed);
        let keys = pool(&mut prg, 1 << 18);
        let labels = labels(&hashes.h_b, &keys, 16);
        let (p, kept) = overfit(&okvs, &keys, &labels);
        let keys: Vec<Block> = kept.iter().map(|&i| keys[i]).collect();
        let labels: Vec<Block> = kept.iter().map(|&i| labels[i]).collect();
        let m = okvs.params().len();
        assert_eq!(decoded(&okvs, &p, &keys, &labels), keys.len());
        assert!(keys.len() * 10 > m * 12, "{} of m = {m}", keys.len());
    }

    /// The salt closes that window: a fit made before the salt is known (under any
    /// guess of it) is worth nothing once H^B and the rows are keyed by the real one —
    /// the receiver must redo all its hashing after the salt, within the upload deadline
    /// (that a late upload is refused is the protocol suite's test).
    #[test]
    fn a_fit_made_before_the_salt_answers_almost_nothing_after_it() {
        let params = Params::new(700, STATISTICAL_SECURITY as u32).unwrap();
        let sid = [3; 32];
        let mut prg = Prg::from_seed(Block::from(6));
        let (r, guess, salt) = (prg.block(), prg.block(), prg.block());
        let keys = pool(&mut prg, 1 << 18);
        let early = Okvs::new(params, okvs_seed(r, Some(guess)));
        let early_labels = labels(&Hashes::new(&sid, Some(guess)).h_b, &keys, 16);
        let (p, kept) = overfit(&early, &keys, &early_labels);
        let keys: Vec<Block> = kept.iter().map(|&i| keys[i]).collect();
        let m = early.params().len();
        assert!(keys.len() > m, "the early fit itself works");
        let late = Okvs::new(params, okvs_seed(r, Some(salt)));
        let late_labels = labels(&Hashes::new(&sid, Some(salt)).h_b, &keys, 16);
        let still = decoded(&late, &p, &keys, &late_labels);
        assert!(still * 100 < m, "{still} of {} still answered", keys.len());
    }
}
