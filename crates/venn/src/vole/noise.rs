//! The shape of a silent VOLE: t noise blocks of 2^h positions (regular noise, one point
//! each), N = t·2^h ≥ 2n, compressed to N/2 ≥ n outputs by a rate-1/2 code.
//!
//! The noise weight for κ = 128 (rr22.md §3.3): against a linear test the noise's bias is
//! (1 − δ) per block for values uniform in GF(2^128) (not (1 − 2δ) as for bits, which is
//! the bound libOTe and CryProt apply), with δ = 1/4 the relative minimum distance that
//! RRT23 estimates for ExConv7x24; so t ≥ ⌈−κ / log2(1 − δ)⌉ = 309, taken as 312 (a
//! multiple of 8). Blocks are powers of two (the GGM tree's leaves): h is the largest with
//! 2^h·t_min ≤ 2n, and t = ⌈2n / 2^h⌉, between 312 and 624.

use super::code::ExConv;

/// Noise blocks at least (see the module docs).
pub const MIN_TREES: usize = {
    // ⌈128 / −log2(3/4)⌉ = ⌈308.4⌉, rounded up to a multiple of 8.
    312
};

/// Noise blocks at least for a correlated OT, whose noise is binary: a linear test's bias
/// is (1 − 2δ) per block (rr22.md §3.3), so t ≥ ⌈−κ / log2(1 − 2δ)⌉ = 128 at δ = 1/4, as
/// libOTe takes for its silent OT.
pub const MIN_BINARY_TREES: usize = 128;

/// The dimensions of one silent VOLE.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    /// Outputs asked for.
    pub outputs: usize,
    /// Noise blocks (GGM trees), t.
    pub trees: usize,
    /// Each tree's depth h: 2^h positions a block.
    pub depth: usize,
}

impl Shape {
    /// The shape giving at least `outputs` VOLE outputs.
    pub fn new(outputs: usize) -> Shape {
        Shape::with_trees(outputs, MIN_TREES)
    }

    /// The shape giving at least `outputs` correlated OTs (binary noise).
    pub fn binary(outputs: usize) -> Shape {
        Shape::with_trees(outputs, MIN_BINARY_TREES)
    }

    /// At least `outputs` outputs from at least `min_trees` noise blocks.
    fn with_trees(outputs: usize, min_trees: usize) -> Shape {
        let least = 2 * outputs.max(ExConv::MIN_OUTPUTS).max(min_trees);
        let depth = ((least / min_trees).max(2)).ilog2() as usize;
        Shape {
            outputs,
            trees: least.div_ceil(1 << depth),
            depth,
        }
    }

    /// Positions of a noise block.
    pub fn block(&self) -> usize {
        1 << self.depth
    }

    /// The noise vector's length N.
    pub fn noise_len(&self) -> usize {
        self.trees << self.depth
    }

    /// The code that compresses the noise.
    pub fn code(&self, seed: crate::crypto::Block) -> ExConv {
        ExConv::new(self.noise_len() / 2, seed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_noise_weight_bound_is_kept() {
        let t = (128.0 / -(0.75f64).log2()).ceil() as usize;
        assert_eq!(t.div_ceil(8) * 8, MIN_TREES);
        for n in [1, 255, 256, 1000, 1 << 16, 1_426_063, 1 << 24, 1 << 27] {
            let s = Shape::new(n);
            assert!(
                s.trees >= MIN_TREES && s.trees <= 2 * MIN_TREES,
                "{n}: {s:?}"
            );
            assert!(
                s.noise_len() / 2 >= n.max(ExConv::MIN_OUTPUTS),
                "{n}: {s:?}"
            );
            assert!(s.depth >= 1);
        }
        // At 2^20 PSI items (1.43M OKVS columns): 349 trees of 2^13.
        let s = Shape::new(1_426_063);
        assert_eq!((s.trees, s.depth), (349, 13));
        let t = (128.0 / -(1.0 - 2.0 * 0.25f64).log2()).ceil() as usize;
        assert_eq!(t, MIN_BINARY_TREES);
        for n in [1, 1000, 1 << 20, 3_000_017] {
            let s = Shape::binary(n);
            assert!(
                s.trees >= t && s.trees <= 2 * t && s.noise_len() / 2 >= n,
                "{s:?}"
            );
        }
    }
}
