//! Every (filter position, item) pair of a set, grouped by the π frame that carries the
//! position (a counting sort on `position / FRAME`).
//!
//! Both parties compute their summaries while π streams past in position order: when the
//! frame of positions `[f·FRAME, (f+1)·FRAME)` is at hand, they fold the message of each
//! pair in that range into its item's sum. Each message lookup then stays inside one
//! frame's worth of data (the receiver) or is known a frame ahead and prefetched (the
//! sender), instead of costing a wait on a random read into gigabytes per position.

use super::permutation::FRAME;
use crate::crypto::Block;
use crate::memory::huge_vec;
use crate::tables::{BitSet, BloomHash};
use rayon::prelude::*;

/// Items whose positions one parallel task counts.
const TASK: usize = 1 << 12;

/// A filter position and the index of an item that hashes to it.
#[derive(Clone, Copy, Default)]
pub struct Pair {
    pub position: u32,
    pub item: u32,
}

/// The pairs of `h*(x)` for every item value `x`, grouped by frame.
pub struct PositionPairs {
    /// Pairs of frame f are `pairs[starts[f]..starts[f + 1]]`.
    starts: Vec<usize>,
    pairs: Vec<Pair>,
}

impl PositionPairs {
    /// Room for the pairs of `n` items with `k` hash functions, allocated and touched now:
    /// the size depends only on the set size, so this is offline work, and first-touch
    /// page faults on a gigabyte would otherwise cost the online phase about a second.
    pub fn with_capacity(n: usize, k: usize) -> Self {
        PositionPairs {
            starts: Vec::new(),
            pairs: huge_vec(n * k, Pair::default()),
        }
    }

    /// Fills in the pairs of `values` (at most the `n` of [`Self::with_capacity`]) under
    /// `hash`: positions are counted per frame in parallel, then placed in one pass.
    pub fn fill(&mut self, values: &[Block], hash: &BloomHash) {
        let frames = hash.bits().div_ceil(FRAME);
        let counts: Vec<Vec<usize>> = values
            .par_chunks(TASK)
            .map(|items| {
                let (mut counts, mut pos) = (vec![0; frames], vec![]);
                for &x in items {
                    hash.positions(x, &mut pos);
                    for &p in &pos {
                        counts[p as usize / FRAME] += 1;
                    }
                }
                counts
            })
            .collect();
        let mut starts = vec![0usize; frames + 1];
        for f in 0..frames {
            starts[f + 1] = starts[f] + counts.iter().map(|c| c[f]).sum::<usize>();
        }
        assert!(
            starts[frames] <= self.pairs.len(),
            "at most k positions an item"
        );
        let mut next = starts.clone();
        let mut pos = vec![];
        for (item, &x) in values.iter().enumerate() {
            hash.positions(x, &mut pos);
            for &position in &pos {
                let slot = &mut next[position as usize / FRAME];
                self.pairs[*slot] = Pair {
                    position,
                    item: item as u32,
                };
                *slot += 1;
            }
        }
        self.starts = starts;
    }

    /// The pairs whose positions frame `f` carries.
    pub fn frame(&self, f: usize) -> &[Pair] {
        &self.pairs[self.starts[f]..self.starts[f + 1]]
    }

    /// The Bloom filter of the items: every pair's position set.
    pub fn filter(&self, bits: usize) -> BitSet {
        let mut bf = BitSet::new(bits);
        for p in &self.pairs[..*self.starts.last().unwrap_or(&0)] {
            bf.set(p.position as usize);
        }
        bf
    }
}
