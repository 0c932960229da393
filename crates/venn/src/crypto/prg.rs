//! AES-CTR pseudorandom generator, seeded from OS entropy or from a given seed.

use super::{Aes, Block};
use crate::util::slices::split_lengths;
use rayon::prelude::*;

/// Blocks generated per AES call; large enough for AES-NI pipelining.
const BATCH: usize = 64;

/// AES-128 in counter mode. One per party; tests may seed it.
pub struct Prg {
    aes: Aes,
    counter: u128,
    buf: [Block; BATCH],
    used: usize,
    /// The high half of the last block `u64` drew from, if not yet used.
    spare: Option<u64>,
}

impl Prg {
    /// A PRG with the given seed.
    pub fn from_seed(seed: Block) -> Self {
        Prg {
            aes: Aes::new(seed),
            counter: 0,
            buf: [Block::ZERO; BATCH],
            used: BATCH,
            spare: None,
        }
    }

    /// The PRG of `seed` moved on to its `block`-th block (a stream split among threads
    /// from where each part begins).
    pub fn from_seed_at(seed: Block, block: u128) -> Self {
        Prg {
            counter: block,
            ..Prg::from_seed(seed)
        }
    }

    /// A PRG seeded from the operating system's entropy source.
    pub fn from_entropy() -> Self {
        let mut seed = [0u8; 16];
        getrandom::getrandom(&mut seed).expect("the operating system has no entropy source");
        Prg::from_seed(Block::from_le_bytes(seed))
    }

    /// Fills `out` with pseudorandom blocks.
    pub fn fill_blocks(&mut self, out: &mut [Block]) {
        for b in out.iter_mut() {
            *b = Block::from_u128(self.counter);
            self.counter = self.counter.wrapping_add(1);
        }
        self.aes.encrypt_blocks(out);
    }

    /// The next pseudorandom block.
    pub fn block(&mut self) -> Block {
        if self.used == BATCH {
            let mut buf = [Block::ZERO; BATCH];
            self.fill_blocks(&mut buf);
            self.buf = buf;
            self.used = 0;
        }
        self.used += 1;
        self.buf[self.used - 1]
    }

    /// The next pseudorandom 64-bit word (both halves of each block are used).
    pub fn u64(&mut self) -> u64 {
        if let Some(x) = self.spare.take() {
            return x;
        }
        let b = self.block();
        self.spare = Some(b.high_u64());
        b.low_u64()
    }

    /// An exactly uniform integer in `0..bound` (Lemire's multiply-shift with rejection of
    /// the biased low products), for `bound > 0`.
    pub fn below(&mut self, bound: u64) -> u64 {
        assert!(bound > 0);
        let mut m = self.u64() as u128 * bound as u128;
        if (m as u64) < bound {
            let threshold = bound.wrapping_neg() % bound;
            while (m as u64) < threshold {
                m = self.u64() as u128 * bound as u128;
            }
        }
        (m >> 64) as u64
    }

    /// Fills `out` with pseudorandom bytes.
    pub fn fill_bytes(&mut self, out: &mut [u8]) {
        for chunk in out.chunks_mut(16) {
            let b = self.block().to_le_bytes();
            chunk.copy_from_slice(&b[..chunk.len()]);
        }
    }

    /// A uniformly random permutation of `0..n`.
    pub fn permutation(&mut self, n: usize) -> Vec<u32> {
        let mut p: Vec<u32> = (0..n as u32).into_par_iter().collect();
        self.shuffle(&mut p);
        p
    }

    /// Shuffles `v` uniformly at random. Small slices use Fisher–Yates; large ones the
    /// Rao–Sandelius method (each element to one of 256 random buckets, each bucket
    /// shuffled, buckets concatenated — exactly uniform), whose memory accesses stay within
    /// cache-sized buckets instead of jumping across the whole array. Both steps run on the
    /// rayon pool, each part of `PART` elements and each bucket with a PRG seeded from this
    /// one in order, so the result does not depend on the number of threads.
    pub fn shuffle<T: Copy + Send + Sync>(&mut self, v: &mut [T]) {
        const IN_CACHE: usize = 1 << 18;
        const BUCKETS: usize = 256;
        const PART: usize = 1 << 16;
        if v.len() <= IN_CACHE {
            for i in (1..v.len()).rev() {
                let j = self.below(i as u64 + 1) as usize;
                v.swap(i, j);
            }
            return;
        }
        let seeds: Vec<Block> = (0..v.len().div_ceil(PART)).map(|_| self.block()).collect();
        // parts[p][b]: part p's elements of bucket b.
        let parts: Vec<Vec<Vec<T>>> = v
            .par_chunks(PART)
            .zip(seeds)
            .map(|(part, seed)| {
                let mut prg = Prg::from_seed(seed);
                let mut buckets: Vec<Vec<T>> = (0..BUCKETS)
                    .map(|_| Vec::with_capacity(part.len() / BUCKETS * 5 / 4 + 16))
                    .collect();
                for chunk in part.chunks(16) {
                    let r = prg.block();
                    for (k, &x) in chunk.iter().enumerate() {
                        buckets[(r.as_u128() >> (8 * k)) as usize & (BUCKETS - 1)].push(x);
                    }
                }
                buckets
            })
            .collect();
        let sizes = (0..BUCKETS).map(|b| parts.iter().map(|p| p[b].len()).sum());
        let prgs: Vec<Prg> = (0..BUCKETS).map(|_| Prg::from_seed(self.block())).collect();
        split_lengths(v, sizes)
            .into_par_iter()
            .enumerate()
            .zip(prgs)
            .for_each(|((b, out), mut prg)| {
                let mut at = 0;
                for part in &parts {
                    out[at..at + part[b].len()].copy_from_slice(&part[b]);
                    at += part[b].len();
                }
                prg.shuffle(out);
            });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeded_streams_are_reproducible_and_distinct() {
        let (mut a, mut b, mut c) = (
            Prg::from_seed(Block::from(1)),
            Prg::from_seed(Block::from(1)),
            Prg::from_seed(Block::from(2)),
        );
        let xs: Vec<Block> = (0..1000).map(|_| a.block()).collect();
        let ys: Vec<Block> = (0..1000).map(|_| b.block()).collect();
        let zs: Vec<Block> = (0..1000).map(|_| c.block()).collect();
        assert_eq!(xs, ys);
        assert_ne!(xs, zs);
        let distinct: std::collections::HashSet<_> = xs.iter().collect();
        assert_eq!(distinct.len(), 1000);
        let mut bulk = vec![Block::ZERO; 1000];
        Prg::from_seed(Block::from(1)).fill_blocks(&mut bulk);
        assert_eq!(bulk, xs, "block-wise and bulk output agree");
        // Bits are balanced (a loose check that would catch a stuck or zero stream).
        let ones: u32 = xs.iter().map(|x| x.count_ones()).sum();
        assert!(
            (60_000..68_000).contains(&ones),
            "{ones} ones in 128000 bits"
        );
    }

    #[test]
    fn large_shuffles_are_permutations_and_look_uniform() {
        let mut prg = Prg::from_seed(Block::from(8));
        let n = 1 << 19;
        let mut v: Vec<u32> = (0..n).collect();
        prg.shuffle(&mut v);
        // A permutation, with about as many fixed points as a uniform one, and the first
        // quarter holding about a quarter of the smallest quarter.
        let mut sorted = v.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..n).collect::<Vec<u32>>());
        let fixed = v
            .iter()
            .enumerate()
            .filter(|(i, &x)| *i as u32 == x)
            .count();
        assert!(fixed < 10, "{fixed} fixed points (expected about 1)");
        let quarter = v[..(n as usize) / 4].iter().filter(|&&x| x < n / 4).count() as f64;
        let expect = n as f64 / 16.0;
        assert!(
            (quarter - expect).abs() < 5.0 * expect.sqrt(),
            "{quarter} vs {expect}"
        );
    }

    #[test]
    fn large_shuffles_do_not_depend_on_the_thread_count() {
        let shuffled = |threads| {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            pool.install(|| Prg::from_seed(Block::from(4)).permutation(1 << 20))
        };
        assert_eq!(shuffled(1), shuffled(3));
    }

    #[test]
    fn below_and_permutation() {
        let mut prg = Prg::from_seed(Block::from(3));
        assert!((0..10_000).all(|_| prg.below(7) < 7));
        // Exactly uniform even for a bound near 2^64: both halves of the range equally often.
        let big = (1u64 << 63) + (1 << 62);
        let low = (0..20_000).filter(|_| prg.below(big) < big / 2).count();
        assert!((9_500..10_500).contains(&low), "{low}");
        let mut p = prg.permutation(1000);
        assert_ne!(p, (0..1000).collect::<Vec<u32>>(), "shuffled");
        p.sort_unstable();
        assert_eq!(p, (0..1000).collect::<Vec<u32>>(), "a permutation");
    }
}
