//! Elements grouped by bucket, in parallel: a counting sort in chunks of the elements.
//! Each chunk assigns its elements to buckets and counts them; then each chunk writes its
//! elements of bucket b after the earlier chunks' elements of bucket b. Every chunk owns
//! its own piece of each bucket (the output split up front), so the chunks run on the
//! caller's rayon pool without sharing anything mutable, and each writes one sequential
//! stream per bucket. Within a bucket the elements keep their order, so the result does
//! not depend on the number of threads.
//!
//! The OKVS's bins (RR22 §2.1, "Separate": each bin's keys contiguous, so its system is
//! solved in the L2 cache) and the match table's regions (each built in the cache, one per
//! task) are made this way.

use crate::util::memory::huge_zeroed;
use rayon::prelude::*;
use std::ops::Range;

/// Elements assigned at least this many at a time.
const MIN_CHUNK: usize = 1024;

/// Which bucket each element is in, and the bucket order that groups them.
pub struct Buckets {
    /// Each element's bucket.
    of: Vec<u32>,
    /// Elements per chunk (the last may have fewer).
    chunk: usize,
    count: usize,
    /// `counts[c * count + b]`: how many elements of chunk c are in bucket b.
    counts: Vec<u32>,
    /// Bucket b's elements are at `start[b]..start[b + 1]` in bucket order.
    start: Vec<usize>,
}

impl Buckets {
    /// `len` elements in `count` buckets: `assign(first, out)` writes the buckets (each
    /// below `count`) of elements `first..first + out.len()`.
    pub fn new(len: usize, count: usize, assign: impl Fn(usize, &mut [u32]) + Sync) -> Buckets {
        // A few chunks a thread, so that the pool can balance them.
        let chunk = len
            .div_ceil(4 * rayon::current_num_threads())
            .max(MIN_CHUNK);
        let mut of = huge_zeroed::<u32>(len);
        let mut counts = vec![0u32; len.div_ceil(chunk) * count];
        of.par_chunks_mut(chunk)
            .enumerate()
            .zip(counts.par_chunks_mut(count))
            .for_each(|((c, of), counts)| {
                assign(c * chunk, of);
                for &b in of.iter() {
                    counts[b as usize] += 1;
                }
            });
        let mut start = vec![0; count + 1];
        for counts in counts.chunks(count) {
            for (s, &n) in start[1..].iter_mut().zip(counts) {
                *s += n as usize;
            }
        }
        for b in 0..count {
            start[b + 1] += start[b];
        }
        Buckets {
            of,
            chunk,
            count,
            counts,
            start,
        }
    }

    /// Where bucket `b`'s elements are in bucket order.
    pub fn range(&self, b: usize) -> Range<usize> {
        self.start[b]..self.start[b + 1]
    }

    /// The most elements in one bucket.
    pub fn most(&self) -> usize {
        self.start
            .windows(2)
            .map(|w| w[1] - w[0])
            .max()
            .unwrap_or(0)
    }

    /// A slice in bucket order cut into its buckets.
    pub fn split_mut<'a, T>(&self, mut sorted: &'a mut [T]) -> Vec<&'a mut [T]> {
        (0..self.count)
            .map(|b| {
                let (bucket, rest) = std::mem::take(&mut sorted).split_at_mut(self.range(b).len());
                sorted = rest;
                bucket
            })
            .collect()
    }

    /// `items` (one per element) into `out` in bucket order.
    pub fn scatter<T: Copy + Send + Sync>(&self, items: &[T], out: &mut [T]) {
        assert_eq!(items.len(), self.of.len());
        self.scatter_with(|i| items[i], out);
    }

    /// `item(i)` for each element i into `out` in bucket order.
    pub fn scatter_with<T: Send>(&self, item: impl Fn(usize) -> T + Sync, out: &mut [T]) {
        assert_eq!(out.len(), self.of.len());
        self.pieces(out, |s, n| s.split_at_mut(n))
            .into_par_iter()
            .zip(self.of.par_chunks(self.chunk))
            .enumerate()
            .for_each(|(c, (mut pieces, of))| {
                for (i, &b) in (c * self.chunk..).zip(of) {
                    let piece = std::mem::take(&mut pieces[b as usize]);
                    let (first, rest) = piece.split_first_mut().expect("counted");
                    *first = item(i);
                    pieces[b as usize] = rest;
                }
            });
    }

    /// The inverse of [`Buckets::scatter`]: `sorted` (in bucket order) into `out` in
    /// element order.
    pub fn gather<T: Copy + Send + Sync>(&self, sorted: &[T], out: &mut [T]) {
        assert_eq!(out.len(), self.of.len());
        self.pieces(sorted, |s, n| s.split_at(n))
            .into_par_iter()
            .zip(self.of.par_chunks(self.chunk))
            .zip(out.par_chunks_mut(self.chunk))
            .for_each(|((mut pieces, of), out)| {
                for (&b, o) in of.iter().zip(out) {
                    let (first, rest) = pieces[b as usize].split_first().expect("counted");
                    *o = *first;
                    pieces[b as usize] = rest;
                }
            });
    }

    /// A slice in bucket order cut into each chunk's piece of each bucket, by chunk:
    /// `pieces[c][b]` holds chunk c's elements of bucket b (`split` cuts off a slice's
    /// first n).
    fn pieces<S: Default>(&self, all: S, split: impl Fn(S, usize) -> (S, S)) -> Vec<Vec<S>> {
        let chunks = self.counts.len() / self.count;
        let mut pieces: Vec<Vec<S>> = (0..chunks)
            .map(|_| (0..self.count).map(|_| S::default()).collect())
            .collect();
        let mut rest = all;
        for b in 0..self.count {
            for (c, pieces) in pieces.iter_mut().enumerate() {
                let (piece, after) = split(rest, self.counts[c * self.count + b] as usize);
                pieces[b] = piece;
                rest = after;
            }
        }
        pieces
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Scattered in bucket order, each bucket keeping element order, on any pool; and
    /// gathered back.
    #[test]
    fn scatter_sorts_stably_by_bucket_and_gather_undoes_it() {
        let len = 10_000;
        let bucket = |i: usize| ((i * 7919) % 13) as u32;
        let items: Vec<u64> = (0..len as u64).map(|i| i * 3 + 1).collect();
        let mut want: Vec<u64> = items.clone();
        want.sort_by_key(|&x| bucket(((x - 1) / 3) as usize));
        for threads in [1, 3] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            pool.install(|| {
                let b = Buckets::new(len, 13, |first, out| {
                    for (i, o) in (first..).zip(out) {
                        *o = bucket(i);
                    }
                });
                let mut sorted = vec![0; len];
                b.scatter(&items, &mut sorted);
                assert_eq!(sorted, want);
                let mut with = vec![0; len];
                b.scatter_with(|i| items[i], &mut with);
                assert_eq!(with, want);
                for k in 0..13 {
                    assert!(sorted[b.range(k)]
                        .iter()
                        .all(|&x| bucket(((x - 1) / 3) as usize) == k as u32));
                }
                assert_eq!(b.most(), (0..13).map(|k| b.range(k).len()).max().unwrap());
                let mut back = vec![0; len];
                b.gather(&sorted, &mut back);
                assert_eq!(back, items);
            });
        }
    }
}
