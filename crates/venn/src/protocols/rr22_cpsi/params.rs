//! rr22-ca's and rr22-sum's parameters (rr22.md §5):
//!
//! - **β bins**: a 3-way cuckoo table with no stash for the receiver's items, failing
//!   with probability at most 2^-40 ([`stashless_bins`]: 1.317·n at 2^20; volePSI's
//!   `CuckooIndex` uses the same fit).
//! - **The OPRF's OKVS** for β keys, and a silent VOLE of its length m.
//! - **ℓ_k = λ + ⌈log₂ β⌉ tag bits**: a bin whose keys differ holds uniform shares of a
//!   nonzero-looking ℓ_k-bit value, which reads as zero with probability 2^-ℓ_k, so all
//!   β bins together give a false match with probability at most 2^-40. The equality
//!   circuit spends ℓ_k − 1 AND gates a bin.
//! - **The hint's OKVS** for the sender's 3·n_S keys, binary ([`crate::oprf::opprf`]).
//!
//! A count's tags are 64-bit words up to β = 2^24 bins (about 12.7 M receiver items), and
//! 128-bit ones beyond ([`crate::oprf::opprf::Programmed`]).

use super::super::{ParamTable, Parameters, Sizes};
use crate::circuit_psi::{CircuitParams, Function};
use crate::net::Writer;
use crate::okvs;
use crate::oprf::opprf::hint_params;
use crate::oprf::write_dimensions;
use crate::tables::{stashless_bins, HASHES};
use crate::vole::Shape;
use crate::{Result, STATISTICAL_SECURITY};

/// The parameters of one run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct CpsiParams {
    /// What the circuit's bits add up to.
    pub function: Function,
    /// The receiver's set size.
    pub n_r: u64,
    /// The sender's set size.
    pub n_s: u64,
    /// Bins β.
    pub bins: u64,
    /// The OPRF's OKVS, for the β bin keys.
    pub oprf: okvs::Params,
    /// Bits of a tag ℓ_k.
    pub tag_bits: u32,
    /// Output only whether the count reaches this.
    pub threshold: Option<u64>,
}

impl CpsiParams {
    /// Bytes of a tag on the wire.
    pub(crate) fn tag_bytes(&self) -> usize {
        self.tag_bits.div_ceil(8) as usize
    }
}

impl CircuitParams for CpsiParams {
    /// rr22-ca and rr22-sum take no options beyond the back end's.
    type Config = ();

    /// The parameters for `sizes` and a count's `threshold`.
    fn new(function: Function, sizes: Sizes, _: (), threshold: Option<u64>) -> Result<CpsiParams> {
        let bins = stashless_bins(sizes.receiver);
        let tag_bits = STATISTICAL_SECURITY as u32 + bins.next_power_of_two().ilog2();
        // The hint's dimensions are checked now, before anything is sent.
        hint_params(HASHES as u64 * sizes.sender)?;
        let oprf = okvs::Params::new(bins, STATISTICAL_SECURITY as u32)?;
        Ok(CpsiParams {
            function,
            n_r: sizes.receiver,
            n_s: sizes.sender,
            bins,
            oprf,
            tag_bits,
            threshold,
        })
    }

    fn front(&self) {}

    fn threshold(&self) -> Option<u64> {
        self.threshold
    }

    /// The equality circuit's ℓ_k − 1 ANDs of a vector of β bits.
    fn circuit_words(&self) -> usize {
        (self.tag_bits as usize - 1) * (self.bins as usize).div_ceil(64)
    }

    /// One a bin.
    fn outputs(&self) -> u64 {
        self.bins
    }

    /// A state made for larger sets sizes the tables.
    fn run_on(&mut self, sizes: Sizes) -> Result<()> {
        (self.n_r, self.n_s) = (sizes.receiver, sizes.sender);
        Ok(())
    }
}

impl Parameters for CpsiParams {
    fn encode(&self) -> Vec<u8> {
        let w = Writer::new().u64(self.n_r).u64(self.n_s).u64(self.bins);
        write_dimensions(w, &self.oprf)
            .u64(self.tag_bits as u64)
            .u8(self.threshold.is_some() as u8)
            .u64(self.threshold.unwrap_or(0))
            .0
    }

    fn table(&self) -> ParamTable {
        let vole = Shape::new(self.oprf.len());
        ParamTable(vec![
            ("bins", self.bins.to_string()),
            ("m", self.oprf.len().to_string()),
            ("ell_k", self.tag_bits.to_string()),
            ("ANDs", ((self.tag_bits as u64 - 1) * self.bins).to_string()),
            ("hint_keys", (HASHES as u64 * self.n_s).to_string()),
            ("t", vole.trees.to_string()),
            ("h", vole.depth.to_string()),
        ])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(n: u64) -> CpsiParams {
        let sizes = Sizes {
            sender: n,
            receiver: n,
        };
        CpsiParams::new(Function::Count, sizes, (), None).unwrap()
    }

    #[test]
    fn bins_and_tags_follow_the_stash_free_table() {
        // rr22.md §5: β ≈ 1.32·n and ℓ_k = 61 at 2^20.
        let p = at(1 << 20);
        assert_eq!(p.bins, (316u64 << 20).div_ceil(240));
        assert_eq!(p.tag_bits, 61);
        assert_eq!(p.tag_bytes(), 8);
        assert_eq!(p.circuit_words(), 60 * (p.bins as usize).div_ceil(64));
        // Small sets are hashed as for 2^8 items.
        let tiny = at(3);
        assert_eq!((tiny.bins, tiny.tag_bits), (325, 49));
        assert_eq!(tiny.tag_bytes(), 7);
    }

    #[test]
    fn tags_grow_past_64_bits_with_the_receivers_set() {
        let sizes = Sizes {
            sender: 1,
            receiver: 1 << 25,
        };
        let p = CpsiParams::new(Function::Count, sizes, (), None).unwrap();
        assert_eq!((p.tag_bits, p.tag_bytes()), (66, 9));
    }
}
