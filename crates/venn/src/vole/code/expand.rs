//! The code's second step: each output gets the sum of seven positions of the accumulated
//! parity half, drawn a batch ahead and prefetched, on the rayon pool.

use super::{Symbol, EXPANDER, REGULAR};
use crate::crypto::{Block, Prg};
use rayon::prelude::*;

/// Bits encoded beside the symbols: the parity half's, and the outputs' to add them into.
type Bits<'a> = (&'a [u64], &'a mut [u64]);

/// `out[i] ^=` the sum of `EXPANDER` positions of `parity` (one in each of `REGULAR` equal
/// parts, the rest anywhere), for every i.
///
/// The parity half is n symbols (22 MB of blocks at n = 1.4M), so each read is a miss: the
/// positions are drawn a batch of outputs ahead and each output's lines asked for into the
/// second-level cache `AHEAD` outputs before they are summed. Huge pages under `parity`
/// (see [`crate::util::memory::huge_vec`]) save most of the TLB misses: about a third of the time.
pub(super) fn expand<T: Symbol>(parity: &[T], out: &mut [T], bits: Option<Bits>, seed: Block) {
    // Parts of whole batches on the rayon pool, each drawing its positions from where its
    // first batch's lie in the stream (and its bits whole words: `PART` is a multiple of
    // 64).
    const PART: usize = 64 * Taps::BATCH;
    let parts: Vec<Option<Bits>> = match bits {
        None => (0..out.len().div_ceil(PART)).map(|_| None).collect(),
        Some((parity_bits, out_bits)) => (out_bits.chunks_mut(PART / 64))
            .map(|out_bits| Some((parity_bits, out_bits)))
            .collect(),
    };
    out.par_chunks_mut(PART)
        .zip(parts)
        .enumerate()
        .for_each(|(k, (out, bits))| {
            expand_part(parity, out, bits, Taps::new(seed, parity.len(), k * PART))
        });
}

/// [`expand`] on the outputs `out` (and their bits, the part's words), whose positions
/// `taps` draws.
fn expand_part<T: Symbol>(parity: &[T], out: &mut [T], mut bits: Option<Bits>, mut taps: Taps) {
    const AHEAD: usize = 32;
    // Batch k's positions in half k % 2, the next batch's drawn before batch k is summed.
    let mut ring = [[0; EXPANDER]; 2 * Taps::BATCH];
    taps.draw(&mut ring[..Taps::BATCH]);
    for (k, out) in out.chunks_mut(Taps::BATCH).enumerate() {
        let next = (k + 1) % 2 * Taps::BATCH;
        taps.draw(&mut ring[next..next + Taps::BATCH]);
        for (j, o) in out.iter_mut().enumerate() {
            let i = k * Taps::BATCH + j;
            for &p in &ring[(i + AHEAD) % ring.len()] {
                crate::util::memory::prefetch_l2(&parity[p as usize]);
            }
            let positions = &ring[i % ring.len()];
            *o ^= positions
                .iter()
                .fold(T::default(), |acc, &p| acc ^ parity[p as usize]);
            if let Some((parity_bits, out_bits)) = &mut bits {
                let sum = positions
                    .iter()
                    .fold(0, |acc, &p| acc ^ parity_bits[p as usize / 64] >> (p % 64));
                out_bits[i / 64] ^= (sum & 1) << (i % 64);
            }
        }
    }
}

/// The expander's positions: output i's j-th from the (7i + j)-th 64-bit word of an
/// AES-CTR stream, scaled into its range (quarter j for j < `REGULAR`, else all `m`). A
/// public code needs no exact uniformity: the bias of a scaled word is below m/2^64.
struct Taps {
    stream: Prg,
    blocks: [Block; Taps::BATCH * EXPANDER / 2],
    /// The range's start and length for each word of a group of [`Taps::GROUP`] outputs.
    start: [u32; Taps::WORDS],
    len: [u32; Taps::WORDS],
}

impl Taps {
    /// Outputs whose positions are drawn at a time.
    const BATCH: usize = 128;
    /// Outputs whose words make whole vectors of eight (and whole blocks).
    const GROUP: usize = 8;
    const WORDS: usize = Taps::GROUP * EXPANDER;

    /// The positions of outputs `first..` (`first` a multiple of [`Taps::BATCH`]) into a
    /// parity half of `m` positions.
    fn new(seed: Block, m: usize, first: usize) -> Taps {
        debug_assert_eq!(first % Taps::BATCH, 0);
        let m = u32::try_from(m).expect("positions fit in 32 bits");
        let quarter = m / REGULAR as u32;
        let range = |t: usize| match t % EXPANDER {
            j if j < REGULAR => (j as u32 * quarter, quarter),
            _ => (0, m),
        };
        Taps {
            stream: Prg::from_seed_at(seed, (first * EXPANDER / 2) as u128),
            blocks: [Block::ZERO; Taps::BATCH * EXPANDER / 2],
            start: std::array::from_fn(|t| range(t).0),
            len: std::array::from_fn(|t| range(t).1),
        }
    }

    /// The positions of the next [`Taps::BATCH`] outputs.
    fn draw(&mut self, out: &mut [[u32; EXPANDER]]) {
        self.stream.fill_blocks(&mut self.blocks);
        let (blocks, start, len) = (&self.blocks, &self.start, &self.len);
        crate::util::wide_cpu::with_avx512(
            #[inline(always)]
            || {
                let groups = out.as_flattened_mut().chunks_exact_mut(Taps::WORDS);
                for (p, b) in groups.zip(blocks.chunks_exact(Taps::WORDS / 2)) {
                    let mut words = [0; Taps::WORDS];
                    for (w, &b) in words.chunks_exact_mut(2).zip(b) {
                        (w[0], w[1]) = (b.low_u64(), b.high_u64());
                    }
                    for t in 0..Taps::WORDS {
                        p[t] = start[t] + below(words[t], u64::from(len[t])) as u32;
                    }
                }
            },
        );
    }
}

/// `x` scaled into [0, m): ⌊x·m / 2^64⌋, for m < 2^32, in 32-bit multiplies (which
/// vectorise).
#[inline(always)]
pub(super) fn below(x: u64, m: u64) -> u64 {
    ((x >> 32) * m + (((x & 0xffff_ffff) * m) >> 32)) >> 32
}
