//! Fig. 4 step 6: the summary `K_x = H(x ‖ ⊕_{j ∈ h*(x)} m_{π(j),1})` of each item, over the
//! *set* h*(x) of distinct filter positions (footnote 7). The sums are accumulated as π
//! streams past (see [`super::pairs`]); the random oracle is applied at the end.

use super::pairs::Pair;
use crate::crypto::{Block, RandomOracle};
use rayon::prelude::*;

/// The running sums `⊕ m_{π(j),1}` of each item.
pub(super) struct Sums(Vec<Block>);

impl Sums {
    /// All-zero sums for `n` items.
    pub(super) fn new(n: usize) -> Self {
        Sums(vec![Block::ZERO; n])
    }

    /// Folds `messages[i]` into the sum of `pairs[i].item`.
    pub(super) fn add(&mut self, pairs: &[Pair], messages: &[Block]) {
        for (p, m) in pairs.iter().zip(messages) {
            self.0[p.item as usize] ^= m;
        }
    }

    /// The summaries `H(x ‖ sum_x)` of the item values `values`, truncated to `bits`.
    pub(super) fn finish(self, values: &[Block], sid: &[u8; 32], bits: usize) -> Vec<Block> {
        let ro = RandomOracle::new("venn/rr17/summary", sid);
        values
            .par_iter()
            .zip(self.0.par_iter())
            .map(|(x, sum)| {
                let d = ro.hash(&[&x.to_le_bytes(), &sum.to_le_bytes()]);
                Block::from_le_bytes(d[..16].try_into().expect("16 bytes")) & Block::low_ones(bits)
            })
            .collect()
    }
}
