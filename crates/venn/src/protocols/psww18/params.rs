//! PSWW18's parameters (Pinkas–Schneider–Weinert–Wieder, Eurocrypt 2018, as in the talk's
//! slides and ABY's `psi_2D_CH`; spec B.2–B.4): two tables of b = ⌈2.4·n⌉ bins, the stash,
//! the width ℓ of a stored value and the circuit's AND gates — computed, never read from
//! the slides.
//!
//! **The stash, one slot more than ABY.** ABY sizes the sender's stash with PSSZ15's table
//! (the least s for which one cuckoo table overflows a stash of s with probability
//! ≤ 2^-40). The sender fills two tables, so its stash must absorb two tables' overflows:
//! with a Poisson-like overflow count of mean μ per table, P[X + Y > s] ≈ 2^(s+1)·P[X > s],
//! up to 16× the bound at s = 3, and two separate stashes fail with twice one's
//! probability. One more slot multiplies the failure probability by about 2μ/(s + 2), below
//! 2^-8 at every size the table covers (its s implies μ ≤ 2^-8.8 at 2^20): so Venn's
//! combined stash holds s + 1 items and each separate stash s + 1. This costs n·(σ − 1) AND
//! gates per slot: 15 % more gates than the slides' combined-stash circuit at 2^20, σ = 32.
//! [`paper_and_gates`] keeps the slides' accounting, with their s, to check it.
//!
//! **The receiver's placement has no stash** (slides: 2^40 runs of 4 tables of 1.2n bins of
//! two, the stash needed with frequency ∝ n^-3 and once in 2^39.15 runs at n = 2^12, so
//! ≤ 2^-40 from n = 2^13 on). Tables are sized as for at least 2^14 items (≤ 2^-43 by that
//! extrapolation; fewer items in the same table can only fail less often), which with the
//! sender's stash keeps the whole placement within 2^-40.
//!
//! **Stored values** (permutation-based hashing, PSSZ15 and ABY; spec B.2): an item
//! x < 2^σ splits into its low a = ⌈log₂ b⌉ bits x_L and the rest x_R; function j of table
//! k maps it to y = x_L ⊕ F_{k,j}(x_R) < 2^a, bin y mod b, and stores (x_R, q = ⌊y / b⌋,
//! tag_j): ℓ = σ − a + 3 bits, and (table, bin, value) determines x. (Taking more bits
//! into x_L would make the bins more uniform, but x_R then takes few values, and a trial
//! with 8 more bits at 2^20 put up to 15 items a table in the stash: the edges of the
//! cuckoo graph become XOR offsets of few kinds.)

use crate::circuit_psi::{CircuitParams, Function};
use crate::net::Writer;
use crate::protocols::{Accepts, Config, Options, ParamTable, Parameters, Sizes, Stash};
use crate::{Error, Result, STATISTICAL_SECURITY};

/// What psww18 takes beyond the circuit back end's options: σ (`--sigma 32`) for 32-bit
/// integer keys, none for keys of any length, and the stash (`--stash`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Psww18Config {
    /// The bit length of the integers; `None`: keys of any length, hashed.
    pub sigma: Option<u32>,
    /// One stash for both tables, or one per table.
    pub stash: Stash,
}

impl Config for Psww18Config {
    const ACCEPTS: Accepts = Accepts {
        sigma: &[32],
        stash: true,
        ..Accepts::NOTHING
    };

    fn from_options(options: &Options) -> Result<Self> {
        Ok(Psww18Config {
            sigma: options.sigma,
            stash: options.stash,
        })
    }

    fn options(&self) -> Options {
        Options {
            sigma: self.sigma,
            stash: self.stash,
            ..Options::default()
        }
    }
}

/// Bins per item in each of the two tables (ABY's ε = 2.4).
pub(super) const EXPANSION: f64 = 2.4;

/// Tables are sized as for at least this many items (see the module docs).
const SMALLEST_TABLE: u64 = 1 << 14;

/// PSSZ15's stash size for one 2-way cuckoo table of 2.4n bins to overflow with
/// probability ≤ 2^-40, as ABY's `assign_max_stash_size` tabulates it.
pub(super) fn pssz15_stash(n: u64) -> usize {
    match n {
        n if n >= 1 << 24 => 2,
        n if n >= 1 << 20 => 3,
        n if n >= 1 << 16 => 5,
        n if n >= 1 << 13 => 6,
        n if n >= 1 << 12 => 7,
        n if n >= 1 << 11 => 9,
        n if n >= 1 << 10 => 11,
        _ => 12,
    }
}

/// The parameters of one run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Psww18Params {
    /// The sender's (the cuckoo side's) set size.
    pub n_b: u64,
    /// The receiver's (the simple side's) set size.
    pub n_a: u64,
    /// Bits of the items: 32 with `--sigma 32`, else the hashed length.
    pub sigma: u32,
    /// Whether items are keys hashed to σ bits (not σ-bit integers).
    pub hashed: bool,
    /// Bins b of each table.
    pub bins: u64,
    /// a = ⌈log₂ b⌉.
    pub a: u32,
    /// The stash variant.
    pub stash: Stash,
    /// With `--threshold`: the receiver learns only whether the count reaches it.
    pub threshold: Option<u64>,
    /// Stash slots of each stash.
    pub stash_size: usize,
}

impl Psww18Params {
    /// The parameters for `sizes` and the configuration: σ-bit integers (`--sigma 32`) or
    /// hashed keys, the stash; and the threshold.
    pub(crate) fn new(sizes: Sizes, config: Psww18Config, threshold: Option<u64>) -> Result<Self> {
        let Psww18Config { sigma, stash } = config;
        let (n_a, n_b) = (sizes.receiver, sizes.sender);
        let n = n_a.max(n_b).max(SMALLEST_TABLE);
        let bins = (EXPANSION * n as f64).ceil() as u64;
        let a = bins.next_power_of_two().ilog2();
        let log2 = |n: u64| n.max(1).next_power_of_two().ilog2();
        let hashed = sigma.is_none();
        let sigma = sigma.unwrap_or(STATISTICAL_SECURITY as u32 + log2(n_a) + log2(n_b));
        if sigma <= a {
            return Err(Error::Usage(format!(
                "psww18 on {sigma}-bit items needs fewer than 2^{sigma} bins; sets of \
                 {n_a} and {n_b} need {bins}"
            )));
        }
        Ok(Psww18Params {
            n_b,
            n_a,
            sigma,
            hashed,
            bins,
            a,
            stash,
            threshold,
            stash_size: pssz15_stash(n) + 1,
        })
    }

    /// ℓ = σ − a + 3: bits of a stored value.
    pub(crate) fn ell(&self) -> u32 {
        self.sigma - self.a + 3
    }

    /// Stash slots in all.
    pub(crate) fn stash_slots(&self) -> usize {
        match self.stash {
            Stash::Combined => self.stash_size,
            Stash::Separate => 2 * self.stash_size,
        }
    }

    /// Comparisons of stored values: the sender's value of each bin of both tables against
    /// the receiver's two slots.
    pub(crate) fn table_comparisons(&self) -> u64 {
        4 * self.bins
    }

    /// Comparisons of the sender's stash items with each of the receiver's items.
    pub(crate) fn stash_comparisons(&self) -> u64 {
        self.stash_slots() as u64 * self.n_a
    }

    /// Bits of a stash comparison: the item, and with separate stashes the table too. (An
    /// item the sender stashed from L alone is still in R's table; compared with all of the
    /// receiver's items it would be found twice when the receiver placed it in R. So stash
    /// k's items carry k, the receiver's items the table they were placed in, and each is
    /// found once.)
    pub(crate) fn stash_width(&self) -> u32 {
        self.sigma + (self.stash == Stash::Separate) as u32
    }

    /// AND gates of the circuit: an ℓ-bit equality per table comparison, a stash-width one
    /// per stash comparison, and each stash slot's valid bit.
    pub(crate) fn and_gates(&self) -> u64 {
        self.table_comparisons() * (self.ell() as u64 - 1)
            + self.stash_comparisons() * (self.stash_width() as u64 - 1)
            + self.stash_slots() as u64
    }
}

/// The slides' accounting (spec B.4): `2·(2b)·(ℓ − 1) + s·n·(σ − 1)` and the Hamming
/// weight's `m − popcount(m)` for m = 2b + s outputs, with ABY's stash of s = PSSZ15's
/// (2s for separate stashes).
pub(super) fn paper_and_gates(p: &Psww18Params) -> u64 {
    let s = pssz15_stash(p.n_a.max(p.n_b)) as u64
        * match p.stash {
            Stash::Combined => 1,
            Stash::Separate => 2,
        };
    let m = 2 * p.bins + s;
    4 * p.bins * (p.ell() as u64 - 1)
        + s * p.n_a * (p.sigma as u64 - 1)
        + (m - m.count_ones() as u64)
}

/// The back end's reading: the same circuit for a count and a sum.
impl CircuitParams for Psww18Params {
    type Config = Psww18Config;

    fn new(
        _: Function,
        sizes: Sizes,
        config: Psww18Config,
        threshold: Option<u64>,
    ) -> Result<Self> {
        Psww18Params::new(sizes, config, threshold)
    }

    fn front(&self) -> Psww18Config {
        Psww18Config {
            sigma: (!self.hashed).then_some(self.sigma),
            stash: self.stash,
        }
    }

    fn threshold(&self) -> Option<u64> {
        self.threshold
    }

    /// An ℓ-bit equality per table comparison, a stash-width one per stash comparison,
    /// and each stash slot's valid bit, each a vector of bits.
    fn circuit_words(&self) -> usize {
        let (table, stash) = (
            self.table_comparisons() as usize,
            self.stash_comparisons() as usize,
        );
        (self.ell() as usize - 1) * table.div_ceil(64)
            + (self.stash_width() as usize - 1) * stash.div_ceil(64)
            + self.stash_slots().div_ceil(64)
    }

    /// One per bin of both tables and per stash slot.
    fn outputs(&self) -> u64 {
        2 * self.bins + self.stash_slots() as u64
    }

    /// The tables stay sized for the sets the state was made for, and the stash is
    /// compared with the receiver's actual items (a circuit smaller than the triples were
    /// made for: the rest go unused).
    fn run_on(&mut self, sizes: Sizes) -> Result<()> {
        (self.n_a, self.n_b) = (sizes.receiver, sizes.sender);
        Ok(())
    }
}

impl Parameters for Psww18Params {
    fn encode(&self) -> Vec<u8> {
        Writer::new()
            .u64(self.n_a)
            .u64(self.n_b)
            .u64(self.sigma as u64)
            .u8(self.hashed as u8)
            .u64(self.bins)
            .u8(self.stash as u8)
            .u64(self.stash_size as u64)
            .u8(self.threshold.is_some() as u8)
            .u64(self.threshold.unwrap_or(0))
            .0
    }

    fn table(&self) -> ParamTable {
        ParamTable(vec![
            ("bins", format!("2x{}", self.bins)),
            (
                "sigma",
                format!("{}{}", self.sigma, if self.hashed { "h" } else { "" }),
            ),
            ("ell", self.ell().to_string()),
            (
                "stash",
                format!("{} {}", self.stash.name(), self.stash_slots()),
            ),
            ("ANDs", self.and_gates().to_string()),
            ("ANDs(slides)", paper_and_gates(self).to_string()),
        ])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(sizes: Sizes, sigma: Option<u32>, stash: Stash) -> Result<Psww18Params> {
        Psww18Params::new(sizes, Psww18Config { sigma, stash }, None)
    }

    fn at(log2n: u32, sigma: Option<u32>, stash: Stash) -> Psww18Params {
        let n = 1 << log2n;
        let sizes = Sizes {
            sender: n,
            receiver: n,
        };
        with(sizes, sigma, stash).unwrap()
    }

    #[test]
    fn the_slides_circuit_sizes_within_four_percent() {
        // Slides (B.6), n = 2^20, σ = 32.
        for (stash, slide) in [
            (Stash::Combined, 215_665_732),
            (Stash::Separate, 313_183_300),
        ] {
            let p = at(20, Some(32), stash);
            assert_eq!((p.bins, p.a, p.ell()), (2_516_583, 22, 13));
            let ours = paper_and_gates(&p) as f64;
            let off = (ours / slide as f64 - 1.0).abs();
            assert!(off < 0.04, "{stash:?}: {ours} vs {slide} ({off:.3})");
        }
        // Spec B.4's figure for ℓ = 13.
        assert_eq!(
            paper_and_gates(&at(20, Some(32), Stash::Combined)),
            223_346_710
        );
    }

    #[test]
    fn venns_circuit_and_its_stash() {
        let p = at(20, Some(32), Stash::Combined);
        assert_eq!((p.stash_size, p.stash_slots()), (4, 4));
        assert_eq!(
            p.and_gates(),
            4 * 2_516_583 * 12 + 4 * (1 << 20) * 31 + 4,
            "one slot more than the slides' s = 3"
        );
        let separate = at(20, Some(32), Stash::Separate);
        assert_eq!(separate.stash_slots(), 8);
        assert_eq!(
            separate.and_gates(),
            4 * 2_516_583 * 12 + 8 * (1 << 20) * 32 + 8,
            "each stash comparison one bit wider, for the table"
        );
        // Small sets use tables sized for 2^14 items and that size's stash.
        let small = at(8, Some(32), Stash::Combined);
        assert_eq!((small.bins, small.stash_size), (39_322, 7));
        // Hashed keys: σ = 40 + 20 + 20 at 2^20.
        let h = at(20, None, Stash::Combined);
        assert_eq!((h.sigma, h.ell()), (80, 61));
        let too_many = Sizes {
            sender: 1 << 31,
            receiver: 1 << 31,
        };
        assert!(with(too_many, Some(32), Stash::Combined).is_err());
    }
}
