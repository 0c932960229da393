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
use crate::tables::BloomHash;
use crate::util::bits::BitSet;
use crate::util::memory::{huge_vec, huge_zeroed};
use rayon::prelude::*;

/// Items whose positions one parallel task computes.
const TASK: usize = 1 << 12;

/// A filter position and the index of an item that hashes to it.
#[derive(Clone, Copy, Default)]
pub(super) struct Pair {
    pub position: u32,
    pub item: u32,
}

/// The pairs of `h*(x)` for every item value `x`, grouped by frame.
pub(super) struct PositionPairs {
    k: usize,
    /// `h*(x_i)` at `positions[i·k..i·k + counts[i]]`.
    positions: Vec<u32>,
    counts: Vec<u8>,
    /// Pairs of frame f are `pairs[starts[f]..starts[f + 1]]`.
    starts: Vec<usize>,
    pairs: Vec<Pair>,
}

impl PositionPairs {
    /// Room for the pairs of `n` items with `k` hash functions, allocated and touched now:
    /// the size depends only on the set size, so this is offline work, and first-touch
    /// page faults on a gigabyte would otherwise cost the online phase about a second.
    pub(super) fn with_capacity(n: usize, k: usize) -> Self {
        assert!(k <= u8::MAX as usize);
        PositionPairs {
            k,
            positions: huge_zeroed(n * k),
            counts: vec![0; n],
            starts: Vec::new(),
            pairs: huge_vec(n * k, Pair::default()),
        }
    }

    /// Fills in the pairs of `values` (at most the `n` of [`Self::with_capacity`]) under
    /// `hash`: the positions of each item are computed in parallel, then the pairs placed
    /// by frame in one pass.
    pub(super) fn fill(&mut self, values: &[Block], hash: &BloomHash) {
        let (k, n) = (self.k, values.len());
        let frames = hash.bits().div_ceil(FRAME);
        let per_task: Vec<Vec<usize>> = self.positions[..n * k]
            .par_chunks_mut(TASK * k)
            .zip(self.counts[..n].par_chunks_mut(TASK))
            .zip(values.par_chunks(TASK))
            .map(|((positions, counts), values)| {
                let (mut pos, mut per_frame) = (Vec::with_capacity(k), vec![0; frames]);
                for ((slots, count), &x) in positions.chunks_mut(k).zip(counts).zip(values) {
                    hash.positions(x, &mut pos);
                    slots[..pos.len()].copy_from_slice(&pos);
                    *count = pos.len() as u8;
                    for &p in &pos {
                        per_frame[p as usize / FRAME] += 1;
                    }
                }
                per_frame
            })
            .collect();
        let mut starts = vec![0usize; frames + 1];
        for f in 0..frames {
            starts[f + 1] = starts[f] + per_task.iter().map(|c| c[f]).sum::<usize>();
        }
        let mut next = starts.clone();
        for (item, (slots, &count)) in self.positions.chunks(k).zip(&self.counts[..n]).enumerate() {
            for &position in &slots[..count as usize] {
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
    pub(super) fn frame(&self, f: usize) -> &[Pair] {
        &self.pairs[self.starts[f]..self.starts[f + 1]]
    }

    /// The Bloom filter of the items: every pair's position set (frame by frame, so the
    /// bits set stay in cache).
    pub(super) fn filter(&self, bits: usize) -> BitSet {
        let mut bf = BitSet::new(bits);
        for p in &self.pairs[..*self.starts.last().unwrap_or(&0)] {
            bf.set(p.position as usize);
        }
        bf
    }
}
