//! KBM23's parameters (§III-C, §V-A, Table II): k = 3 cuckoo functions, α bins, the
//! sender's bin size β, the suffix domain D and the comparison field 𝔽_Q — computed, never
//! read from the table.
//!
//! **α — a larger table, not the paper's 1.27n.** The paper runs 3-way cuckoo hashing
//! into α = 1.27n bins with no stash and gives no failure analysis (spec E18). The
//! empirical fit of `cryptoTools` (`CuckooIndex::selectParams`: λ ≈ 240·e − 256 − log₂n
//! for three functions and no stash) puts 1.27n at about 2^-29 at n = 2^20. A stash is
//! no way out here: a stashed item has no bin and must be compared with all of the sender's
//! items in a field of full item width (spec §2.7). So α = ⌈e·n⌉ with e from the fit at
//! λ = 40, never below the paper's 1.27 (e = 1.317 at 2^20, 1.342 at 2^26: 3.7–5.7 % more
//! bins and traffic than Table II), and tables are sized as for at least 2^8 items. A
//! failed insertion is an error, never an endless loop.
//!
//! **β** is the least bin size with α·Pr[Binomial(k·n_B, 1/α) > β] ≤ 2^-40 (§III-C2, the
//! union bound over bins). Table II's β is two more than this bound at α = 1.27n, at each
//! of its four n (its source, PSSZ15's Eq. 3, is looser; the spec's "exact + 1" bounds
//! Pr[load ≥ β], one more again); Venn uses the bound itself. With the larger α this
//! makes the online traffic at 2^20 479 bits an element against Table II's 516.
//!
//! **D and Q** (§III-C4 with the secure reading of spec E4/E5): an item x < 2^σ splits into
//! `x_R = x mod D` and `x_L = ⌊x / D⌋` with D = ⌈2^σ/α⌉ (the ceiling keeps x_L < α, so the
//! split is injective at the top of the domain, where the authors' floor collides); the
//! value compared is `j·D + x_R` for the hash function j used, the receiver's dummy is k·D
//! and the sender's k·D + 1, so Q is the least prime ≥ k·D + 2. This gives Table II's
//! log Q.
//!
//! **σ.** `--sigma 32` runs on 32-bit integer keys, as in all of the paper's experiments.
//! Any other keys are hashed with a per-session key to σ = λ + ⌈log₂ n_A⌉ + ⌈log₂ n_B⌉
//! bits (spec §2.8), so a false match between two distinct keys has probability at most
//! n_A·n_B / 2^σ ≤ 2^-40; the field then grows to about σ − log₂ α + log₂ 3 bits.

use super::field::Field;
use crate::net::Writer;
use crate::protocols::{Accepts, Config, Offline, Options, ParamTable, Parameters, Sizes};
use crate::tables::simple_hash::bin_size;
use crate::tables::{stashless_expansion, SMALLEST_STASHLESS};
use crate::util::primes::next_prime;
use crate::{Error, Result, STATISTICAL_SECURITY};

/// Where this build can take the tuples from: BFV only with the `bfv` feature (on by
/// default), so that `--offline bfv` is refused before a run starts without it.
const OFFLINE: &[Offline] = if cfg!(feature = "bfv") {
    &[Offline::Ot, Offline::Dealer, Offline::Bfv]
} else {
    &[Offline::Ot, Offline::Dealer]
};

/// What kbm23 takes: where its tuples come from (`--offline`), and σ (`--sigma 32`) for
/// 32-bit integer keys, none for keys of any length.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Kbm23Config {
    /// Where the tuples come from.
    pub offline: Offline,
    /// The bit length of the integers; `None`: keys of any length, hashed.
    pub sigma: Option<u32>,
}

impl Config for Kbm23Config {
    const ACCEPTS: Accepts = Accepts {
        sigma: &[32],
        offline: OFFLINE,
        ..Accepts::NOTHING
    };

    fn from_options(options: &Options) -> Result<Self> {
        Ok(Kbm23Config {
            offline: options.offline,
            sigma: options.sigma,
        })
    }

    fn options(&self) -> Options {
        Options {
            offline: self.offline,
            sigma: self.sigma,
            ..Options::default()
        }
    }
}

/// Cuckoo hash functions (§V-A: k = 3, the least online traffic for n in 2^20..2^26).
pub(super) const K: usize = 3;

/// The paper's table expansion, the least Venn uses.
const PAPER_EXPANSION: f64 = 1.27;

/// The bins per item e for n items in a 3-way cuckoo table without a stash to fail with
/// probability at most 2^-40 ([`stashless_expansion`]), and at least 1.27.
pub(super) fn expansion(n: u64) -> f64 {
    stashless_expansion(n).max(PAPER_EXPANSION)
}

/// The parameters of one run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Kbm23Params {
    /// The receiver's set size.
    pub n_a: u64,
    /// The sender's set size.
    pub n_b: u64,
    /// Bits of the items as split: 32 with `--sigma 32`, else the hashed length.
    pub sigma: u32,
    /// Whether items are keys hashed to σ bits (not σ-bit integers).
    pub hashed: bool,
    /// Bins α.
    pub alpha: u64,
    /// The sender's bin size β.
    pub beta: usize,
    /// The suffix domain D = ⌈2^σ/α⌉.
    pub d: u64,
    /// The comparison field.
    pub field: Field,
}

/// BFV's ring degree N under `--offline bfv` (KBM23 §IV-B): slots per ciphertext.
pub(super) const BFV_DEGREE: usize = 8192;

/// The least prime `t ≡ 1 (mod 2N)` with `t ≥ least`: the plaintext (and comparison)
/// modulus under `--offline bfv`, so that BFV packs N slots ([`super::bfv`]).
pub(super) fn plaintext_modulus(least: u64) -> u64 {
    crate::util::primes::batching_prime(BFV_DEGREE, least)
}

impl Kbm23Params {
    /// The parameters for `sizes`, on σ-bit integers (`Some(32)`) or hashed keys (`None`).
    pub fn new(sizes: Sizes, sigma: Option<u32>) -> Result<Self> {
        let (n_a, n_b) = (sizes.receiver, sizes.sender);
        let alpha = (expansion(n_a) * n_a.max(SMALLEST_STASHLESS) as f64).ceil() as u64;
        let log2 = |n: u64| n.max(1).next_power_of_two().ilog2();
        let hashed = sigma.is_none();
        let sigma = sigma.unwrap_or(STATISTICAL_SECURITY as u32 + log2(n_a) + log2(n_b));
        let d = (1u128 << sigma).div_ceil(alpha as u128);
        let least = K as u128 * d + 2;
        if least >= 1 << 62 {
            return Err(Error::Usage(format!(
                "kbm23 on keys hashed to {sigma} bits (for sets of {n_a} and {n_b}) would \
                 compare in a field of more than 62 bits, which it does not support: use \
                 integer keys (--sigma 32) or another protocol"
            )));
        }
        Ok(Kbm23Params {
            n_a,
            n_b,
            sigma,
            hashed,
            alpha,
            // At least one slot, a dummy, when the sender's set is empty.
            beta: bin_size(K as u64 * n_b, alpha).max(1),
            d: d as u64,
            field: Field::new(next_prime(least as u64)),
        })
    }

    /// The parameters for `sizes` and the configuration: under `--offline bfv` the field
    /// is BFV's plaintext space (`plaintext_modulus`), and only 32-bit integer keys.
    pub fn for_config(sizes: Sizes, config: Kbm23Config) -> Result<Self> {
        let mut p = Kbm23Params::new(sizes, config.sigma)?;
        if config.offline == Offline::Bfv {
            if p.hashed {
                return Err(Error::Usage(
                    "kbm23 --offline bfv runs on 32-bit integer keys only (--sigma 32)".into(),
                ));
            }
            p.field = Field::new(plaintext_modulus(p.receivers_dummy() + 2));
        }
        Ok(p)
    }

    /// The receiver's dummy, `k·D`, above every value an item is stored as.
    pub fn receivers_dummy(&self) -> u64 {
        K as u64 * self.d
    }

    /// The sender's dummy, `k·D + 1`.
    pub fn senders_dummy(&self) -> u64 {
        K as u64 * self.d + 1
    }

    /// The comparisons of a run, α·β.
    pub fn comparisons(&self) -> usize {
        self.alpha as usize * self.beta
    }

    /// Online bits per element (Eq. 12 without a stash): α·(β + 1)·ℓ / n_A.
    pub fn bits_per_element(&self) -> f64 {
        (self.alpha as f64 * (self.beta + 1) as f64 * self.field.bits() as f64)
            / self.n_a.max(1) as f64
    }
}

impl Parameters for Kbm23Params {
    fn encode(&self) -> Vec<u8> {
        Writer::new()
            .u64(self.n_a)
            .u64(self.n_b)
            .u64(self.sigma as u64)
            .u8(self.hashed as u8)
            .u64(self.alpha)
            .u64(self.beta as u64)
            .u64(self.d)
            .u64(self.field.modulus())
            .0
    }

    fn table(&self) -> ParamTable {
        ParamTable(vec![
            ("k", K.to_string()),
            ("alpha", self.alpha.to_string()),
            ("beta", self.beta.to_string()),
            (
                "sigma",
                format!("{}{}", self.sigma, if self.hashed { "h" } else { "" }),
            ),
            ("D", self.d.to_string()),
            ("Q", self.field.modulus().to_string()),
            ("log2Q", self.field.bits().to_string()),
            ("bits/elem", format!("{:.0}", self.bits_per_element())),
        ])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(log2n: u32, sigma: Option<u32>) -> Kbm23Params {
        let n = 1 << log2n;
        Kbm23Params::new(
            Sizes {
                sender: n,
                receiver: n,
            },
            sigma,
        )
        .unwrap()
    }

    /// Table II, k = 3: (log₂n, β, log Q, bits per element).
    const TABLE_II: [(u32, usize, u32, f64); 4] = [
        (20, 28, 14, 516.0),
        (22, 28, 12, 442.0),
        (24, 29, 10, 381.0),
        (26, 29, 8, 305.0),
    ];

    #[test]
    fn table_ii_from_the_formulas_at_the_papers_alpha() {
        for (log2n, beta, log_q, bits) in TABLE_II {
            let n = 1u64 << log2n;
            let alpha = (1.27 * n as f64).ceil() as u64;
            // Table II's β is the 2^-40 bound plus two.
            assert_eq!(bin_size(3 * n, alpha) + 2, beta, "2^{log2n}");
            let d = (1u64 << 32).div_ceil(alpha);
            let q = Field::new(next_prime(3 * d + 2));
            assert_eq!(q.bits(), log_q, "2^{log2n}");
            // Eq. 12 with Table II's β and log Q, within its rounding.
            let eq12 = alpha as f64 * (beta + 1) as f64 * log_q as f64 / n as f64;
            assert!((eq12 - bits).abs() <= 1.0, "2^{log2n}: {eq12} vs {bits}");
        }
    }

    #[test]
    fn venns_parameters_beside_table_ii() {
        // (log₂n, e, α, β, log Q): the larger table of the cryptoTools fit.
        for (log2n, e, beta, log_q) in [
            (20, 1.3167, 25, 14),
            (22, 1.325, 26, 12),
            (24, 1.3333, 26, 10),
            (26, 1.3417, 27, 8),
        ] {
            let p = at(log2n, Some(32));
            let n = 1u64 << log2n;
            assert!((expansion(n) - e).abs() < 1e-3, "2^{log2n}");
            assert_eq!(p.alpha, (expansion(n) * n as f64).ceil() as u64);
            assert_eq!((p.beta, p.field.bits()), (beta, log_q), "2^{log2n}");
            // Injective split: the largest item's x_L is a bin.
            assert!(((1u64 << 32) - 1) / p.d < p.alpha);
            assert!(p.field.modulus() >= 3 * p.d + 2);
        }
        // The online traffic at 2^20: α·(β+1)·ℓ bits, 59.9 MiB against Table V's 64.
        let p = at(20, Some(32));
        let mib = p.bits_per_element() * (1 << 20) as f64 / 8.0 / (1 << 20) as f64;
        assert!((59.8..60.0).contains(&mib), "{mib} MiB");
    }

    #[test]
    fn hashed_keys_and_small_sets() {
        let p = at(20, None);
        assert_eq!((p.sigma, p.hashed), (80, true));
        assert!(
            p.field.bits() > 60 && p.field.bits() <= 62,
            "{}",
            p.field.bits()
        );
        let tiny = Kbm23Params::new(
            Sizes {
                sender: 3,
                receiver: 1,
            },
            Some(32),
        )
        .unwrap();
        assert_eq!(tiny.alpha, (1.27f64 * 256.0).ceil() as u64);
        let too_big = Kbm23Params::new(
            Sizes {
                sender: 1 << 30,
                receiver: 1 << 10,
            },
            None,
        );
        assert!(too_big.unwrap_err().to_string().contains("--sigma 32"));
    }
}
