//! HEK12's parameters (Huang–Evans–Katz, NDSS 2012, sort-compare for the cardinality;
//! spec C.1): both sets padded to runs of n = 2^k values of w bits, the merging network's
//! comparators, and the circuit's AND gates — computed, never read from the slides.
//!
//! **Padding.** The network merges two runs of a power of two. A set smaller than n is
//! padded with dummies above every item: with w = σ + 1 bits, the receiver's dummies are
//! 2^σ + 2i and the sender's 2^σ + 2i + 1, all distinct, so no dummy equals anything. Sets
//! of exactly n items (the slides' runs) need no dummies and w = σ.
//!
//! **Hashed keys** are cut to σ = λ + 2·log₂(2n) bits: the network compares every pair of
//! the 2n values, so two distinct keys — of either party — collide with probability at most
//! 2^-40 in all.

use super::network;
use crate::circuit_psi::{CircuitParams, Function};
use crate::net::Writer;
use crate::protocols::{Accepts, Config, Options, ParamTable, Parameters, Sizes};
use crate::{Error, Result, STATISTICAL_SECURITY};

/// What hek12 takes beyond the circuit back end's options: σ (`--sigma 32`) for 32-bit
/// integer keys, none for keys of any length.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Hek12Config {
    /// The bit length of the integers; `None`: keys of any length, hashed.
    pub sigma: Option<u32>,
}

impl Config for Hek12Config {
    const ACCEPTS: Accepts = Accepts {
        sigma: &[32],
        ..Accepts::NOTHING
    };

    fn from_options(options: &Options) -> Result<Self> {
        Ok(Hek12Config {
            sigma: options.sigma,
        })
    }

    fn options(&self) -> Options {
        Options {
            sigma: self.sigma,
            ..Options::default()
        }
    }
}

/// The largest run the network takes (2^25 values a side).
const MAX_RUN: u64 = 1 << 25;

/// The parameters of one run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Hek12Params {
    /// The sender's set size.
    pub n_s: u64,
    /// The receiver's set size.
    pub n_r: u64,
    /// Bits of the items: 32 with `--sigma 32`, else the hashed length.
    pub sigma: u32,
    /// Whether items are keys hashed to σ bits (not σ-bit integers).
    pub hashed: bool,
    /// The run length n: both sets padded to it.
    pub n: u64,
    /// With `--threshold`: the receiver learns only whether the count reaches it.
    pub threshold: Option<u64>,
}

impl Hek12Params {
    /// The parameters for `sizes` and the configuration: σ-bit integers (`--sigma 32`) or
    /// hashed keys; and the threshold.
    pub(crate) fn new(sizes: Sizes, config: Hek12Config, threshold: Option<u64>) -> Result<Self> {
        let (n_s, n_r) = (sizes.sender, sizes.receiver);
        let n = n_s.max(n_r).max(1).next_power_of_two();
        if n > MAX_RUN {
            return Err(Error::Usage(format!(
                "hek12-ca merges runs of at most 2^25 items; sets of {n_s} and {n_r} need {n}"
            )));
        }
        let hashed = config.sigma.is_none();
        let sigma = config
            .sigma
            .unwrap_or(STATISTICAL_SECURITY as u32 + 2 * (2 * n).ilog2());
        Ok(Hek12Params {
            n_s,
            n_r,
            sigma,
            hashed,
            n,
            threshold,
        })
    }

    /// Whether either set is padded with dummies.
    pub(crate) fn padded(&self) -> bool {
        self.n_s != self.n || self.n_r != self.n
    }

    /// Bits of a value in the network: σ, and one more for the dummies when padded.
    pub(crate) fn width(&self) -> u32 {
        self.sigma + self.padded() as u32
    }

    /// AND gates of the circuit: 2w a comparator, w − 1 an adjacent pair's equality.
    pub(crate) fn and_gates(&self) -> u64 {
        let w = self.width() as u64;
        network::comparators(self.n as usize) * 2 * w + self.outputs() * (w - 1)
    }
}

/// The slides' circuit size as spec C.1 reconstructs it: `n·log₂ n·2σ + (2n − 1)(σ − 1) + n`
/// (a compare-exchange of 2σ gates per comparison of the merge, the adjacent equalities,
/// and n gates of output logic).
pub(super) fn paper_and_gates(p: &Hek12Params) -> u64 {
    let (n, sigma) = (p.n, p.sigma as u64);
    n * n.ilog2() as u64 * 2 * sigma + (2 * n - 1) * (sigma - 1) + n
}

/// The back end's reading (a count only).
impl CircuitParams for Hek12Params {
    type Config = Hek12Config;

    fn new(_: Function, sizes: Sizes, config: Hek12Config, threshold: Option<u64>) -> Result<Self> {
        Hek12Params::new(sizes, config, threshold)
    }

    fn front(&self) -> Hek12Config {
        Hek12Config {
            sigma: (!self.hashed).then_some(self.sigma),
        }
    }

    fn threshold(&self) -> Option<u64> {
        self.threshold
    }

    /// The network's, and the adjacent pairs' equalities.
    fn circuit_words(&self) -> usize {
        let w = self.width() as usize;
        network::triple_words(self.n as usize, self.width())
            + (w - 1) * (self.outputs() as usize).div_ceil(64)
    }

    /// Whether each adjacent pair of the merged run is equal.
    fn outputs(&self) -> u64 {
        2 * self.n - 1
    }

    /// A state made for larger sets pads smaller ones to its runs — if it was made with
    /// room for the dummies (sets of exactly a power of two have none).
    fn run_on(&mut self, sizes: Sizes) -> Result<()> {
        let width = self.width();
        (self.n_s, self.n_r) = (sizes.sender, sizes.receiver);
        if self.width() != width {
            return Err(Error::State(format!(
                "a state precomputed for sets of exactly {} items runs only on sets of that \
                 size (precompute for more items to leave room for padding)",
                self.n
            )));
        }
        Ok(())
    }
}

impl Parameters for Hek12Params {
    fn encode(&self) -> Vec<u8> {
        Writer::new()
            .u64(self.n_r)
            .u64(self.n_s)
            .u64(self.sigma as u64)
            .u8(self.hashed as u8)
            .u64(self.n)
            .u8(self.threshold.is_some() as u8)
            .u64(self.threshold.unwrap_or(0))
            .0
    }

    fn table(&self) -> ParamTable {
        ParamTable(vec![
            ("run", self.n.to_string()),
            (
                "sigma",
                format!("{}{}", self.sigma, if self.hashed { "h" } else { "" }),
            ),
            ("width", self.width().to_string()),
            (
                "comparators",
                network::comparators(self.n as usize).to_string(),
            ),
            ("ANDs", self.and_gates().to_string()),
            ("ANDs(slides)", paper_and_gates(self).to_string()),
        ])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(n_s: u64, n_r: u64, sigma: Option<u32>) -> Hek12Params {
        let sizes = Sizes {
            sender: n_s,
            receiver: n_r,
        };
        Hek12Params::new(sizes, Hek12Config { sigma }, None).unwrap()
    }

    #[test]
    fn the_slides_sorting_network_within_a_hundredth_of_a_percent() {
        // Slides (B.6): 1,408,238,538 AND gates at n = 2^20, σ = 32.
        let slide = 1_408_238_538f64;
        let p = at(1 << 20, 1 << 20, Some(32));
        assert_eq!((p.n, p.width(), p.outputs()), (1 << 20, 32, (2 << 20) - 1));
        let paper = paper_and_gates(&p) as f64;
        assert!((paper / slide - 1.0).abs() < 1e-4, "{paper} vs {slide}");
        // Ours: the merge's one extra comparator, and the count made by OTs, not n gates.
        assert_eq!(p.and_gates(), ((20 << 20) + 1) * 64 + ((2 << 20) - 1) * 31);
        assert!((p.and_gates() as f64 / slide - 1.0).abs() < 1e-3);
    }

    #[test]
    fn padding_and_hashed_keys() {
        let p = at(1000, 3, Some(32));
        assert_eq!((p.n, p.padded(), p.width()), (1024, true, 33));
        let h = at(1 << 16, 1 << 16, None);
        assert_eq!((h.sigma, h.width(), h.hashed), (40 + 34, 74, true));
        assert_eq!(at(0, 0, None).n, 1);
        let too_many = Sizes {
            sender: (1 << 25) + 1,
            receiver: 1,
        };
        assert!(Hek12Params::new(too_many, Hek12Config::default(), None).is_err());
    }
}
