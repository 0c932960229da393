//! Keys grouped by bin (RR22 §2.1, "Separate"), so that each bin's keys and values are
//! contiguous when its system is solved or its slice of P is read (a bin's slice, ~350 KB,
//! then stays in the L2 cache instead of every key's lookups missing all the way to
//! memory).
//!
//! A counting sort in parallel chunks of the keys: each chunk hashes its keys to bins and
//! counts them; then each chunk writes its keys of bin b after the earlier chunks' keys of
//! bin b. Every chunk owns its own piece of each bin (the output split up front), so the
//! chunks run on the caller's rayon pool without sharing anything mutable, and each writes
//! one sequential stream per bin.

use super::rows::{RowHasher, BATCH};
use crate::crypto::Block;
use crate::memory::huge_vec;
use rayon::prelude::*;
use std::ops::Range;

/// The keys' bins and the bin order that groups them.
pub(super) struct Binning {
    bins: Vec<u32>,
    /// Keys per chunk (the last may have fewer).
    chunk: usize,
    bin_count: usize,
    /// `counts[c * bin_count + b]`: how many keys of chunk c fall in bin b.
    counts: Vec<u32>,
    /// Bin b's keys are at `start[b]..start[b + 1]` in bin order.
    start: Vec<usize>,
}

impl Binning {
    /// Hashes `keys` to their bins (of `bin_count`) and counts each bin's keys.
    pub fn new(hasher: &RowHasher, keys: &[Block], bin_count: usize) -> Binning {
        // A few chunks a thread, so that the pool can balance them.
        let chunk = keys
            .len()
            .div_ceil(4 * rayon::current_num_threads())
            .max(BATCH);
        let mut bins = huge_vec(keys.len(), 0u32);
        let mut counts = vec![0u32; keys.len().div_ceil(chunk) * bin_count];
        bins.par_chunks_mut(chunk)
            .zip(keys.par_chunks(chunk))
            .zip(counts.par_chunks_mut(bin_count))
            .for_each(|((bins, keys), counts)| {
                for (b, k) in bins.chunks_mut(BATCH).zip(keys.chunks(BATCH)) {
                    hasher.bins(k, b);
                }
                for &b in bins.iter() {
                    counts[b as usize] += 1;
                }
            });
        let mut start = vec![0; bin_count + 1];
        for counts in counts.chunks(bin_count) {
            for (s, &n) in start[1..].iter_mut().zip(counts) {
                *s += n as usize;
            }
        }
        for b in 0..bin_count {
            start[b + 1] += start[b];
        }
        Binning {
            bins,
            chunk,
            bin_count,
            counts,
            start,
        }
    }

    /// Where bin `b`'s keys are in bin order.
    pub fn range(&self, b: usize) -> Range<usize> {
        self.start[b]..self.start[b + 1]
    }

    /// The most keys in one bin.
    pub fn most(&self) -> usize {
        self.start
            .windows(2)
            .map(|w| w[1] - w[0])
            .max()
            .unwrap_or(0)
    }

    /// A slice in bin order cut into its bins.
    pub fn split_mut<'a, T>(&self, mut binned: &'a mut [T]) -> Vec<&'a mut [T]> {
        (0..self.bin_count)
            .map(|b| {
                let (bin, rest) = std::mem::take(&mut binned).split_at_mut(self.range(b).len());
                binned = rest;
                bin
            })
            .collect()
    }

    /// `items` (one per key) into `out` in bin order.
    pub fn scatter<T: Copy + Send + Sync>(&self, items: &[T], out: &mut [T]) {
        assert_eq!(items.len(), self.bins.len());
        self.pieces(out, |s, n| s.split_at_mut(n))
            .into_par_iter()
            .zip(self.bins.par_chunks(self.chunk))
            .zip(items.par_chunks(self.chunk))
            .for_each(|((mut pieces, bins), items)| {
                for (&b, &x) in bins.iter().zip(items) {
                    let piece = std::mem::take(&mut pieces[b as usize]);
                    let (first, rest) = piece.split_first_mut().expect("counted");
                    *first = x;
                    pieces[b as usize] = rest;
                }
            });
    }

    /// The inverse of [`Binning::scatter`]: `binned` (in bin order) into `out` in key order.
    pub fn gather<T: Copy + Send + Sync>(&self, binned: &[T], out: &mut [T]) {
        assert_eq!(out.len(), self.bins.len());
        self.pieces(binned, |s, n| s.split_at(n))
            .into_par_iter()
            .zip(self.bins.par_chunks(self.chunk))
            .zip(out.par_chunks_mut(self.chunk))
            .for_each(|((mut pieces, bins), out)| {
                for (&b, o) in bins.iter().zip(out) {
                    let (first, rest) = pieces[b as usize].split_first().expect("counted");
                    *o = *first;
                    pieces[b as usize] = rest;
                }
            });
    }

    /// A slice in bin order cut into each chunk's piece of each bin, by chunk:
    /// `pieces[c][b]` holds chunk c's keys of bin b (`split` cuts off a slice's first n).
    fn pieces<S: Default>(&self, all: S, split: impl Fn(S, usize) -> (S, S)) -> Vec<Vec<S>> {
        let chunks = self.counts.len() / self.bin_count;
        let mut pieces: Vec<Vec<S>> = (0..chunks)
            .map(|_| (0..self.bin_count).map(|_| S::default()).collect())
            .collect();
        let mut rest = all;
        for b in 0..self.bin_count {
            for (c, pieces) in pieces.iter_mut().enumerate() {
                let (piece, after) = split(rest, self.counts[c * self.bin_count + b] as usize);
                pieces[b] = piece;
                rest = after;
            }
        }
        pieces
    }
}
