//! The receiver's unopened OTs after the cut-and-choose, arranged for Fig. 4 step 5 and
//! for its summaries. All of this depends only on the OTs and C, not on the input, so it
//! is offline work:
//! - the unopened OTs with choice bit 1, in random order, with their messages `m_{j,1}`
//!   already hashed (§4.1 "hash only on demand": the receiver uses every one of them)
//!   and laid out in that same order;
//! - the unopened OTs with choice bit 0, in random order.
//!
//! π then assigns the r-th set bit of the filter the r-th one-OT and the r-th clear bit the
//! r-th zero-OT — a uniformly random injection with `BF[i] = b_{π(i)}` — and the message
//! of filter position i is `messages[rank(i)]`, found in the frame of π being sent: the
//! receiver never stores π, nor any OT rows: the messages it needs are regenerated from
//! the extension's seeds (1.5 GB at n = 2^20, where all rows would take 4.2 GB).

use super::pairs::Pair;
use crate::crypto::{Block, Prg};
use crate::ot::KosReceiver;
use crate::state::{exactly, StateReader, StateWriter};
use crate::util::bits::BitSet;
use crate::util::memory::advise_huge_pages;
use crate::util::memory::prefetch;
use crate::util::slices::split_lengths;
use crate::{Error, Result};
use rayon::prelude::*;

/// Prefetch distance when gathering rows into their shuffled order.
const AHEAD: usize = 16;
/// One-OTs per parallel task of that gathering.
const GATHER_TASK: usize = 1 << 16;
/// Filter words (64 positions each) per parallel task when building a frame of π.
const FRAME_TASK_WORDS: usize = 512;
/// Pairs per parallel task when looking up their messages.
const PAIR_TASK: usize = 1 << 14;

/// The OTs not in `skip`, split by their `choices` bit (`[zeros, ones]`), each in
/// increasing order: a parallel pass counts each stretch's share by popcount, a second
/// one writes every stretch's indices straight into its place.
fn partition(choices: &BitSet, skip: &BitSet) -> [Vec<u32>; 2] {
    const WORDS: usize = 1 << 10;
    let n = choices.len();
    let (choices, skip) = (choices.words(), &skip.words()[..choices.words().len()]);
    let tail = match n % 64 {
        0 => u64::MAX,
        r => (1 << r) - 1,
    };
    // The members of [zeros, ones] among the 64 OTs of word w.
    let word = |b: usize, w: usize| {
        let mine = if b == 1 { choices[w] } else { !choices[w] };
        let valid = if w + 1 == choices.len() {
            tail
        } else {
            u64::MAX
        };
        mine & !skip[w] & valid
    };
    let counts: Vec<[usize; 2]> = (0..choices.len().div_ceil(WORDS))
        .into_par_iter()
        .map(|c| {
            let words = c * WORDS..((c + 1) * WORDS).min(choices.len());
            [0, 1].map(|b| {
                words
                    .clone()
                    .map(|w| word(b, w).count_ones() as usize)
                    .sum()
            })
        })
        .collect();
    [0, 1].map(|b| {
        let mut out = vec![0u32; counts.iter().map(|n| n[b]).sum()];
        let parts = split_lengths(&mut out, counts.iter().map(|n| n[b]));
        parts.into_par_iter().enumerate().for_each(|(c, out)| {
            let mut k = 0;
            for w in c * WORDS..((c + 1) * WORDS).min(choices.len()) {
                let mut x = word(b, w);
                while x != 0 {
                    out[k] = (64 * w) as u32 + x.trailing_zeros();
                    k += 1;
                    x &= x - 1;
                }
            }
        });
        out
    })
}

/// The receiver's unopened OTs, shuffled and split by choice bit.
pub(super) struct Unopened {
    ones: Vec<u32>,
    messages: Vec<Block>,
    zeros: Vec<u32>,
}

impl Unopened {
    /// Arranges the OTs not in `opened` (sorted).
    pub(super) fn new(ot: KosReceiver, n_ot: usize, opened: &[u32], prg: &mut Prg) -> Self {
        let mut is_opened = BitSet::new(n_ot);
        for &j in opened {
            is_opened.set(j as usize);
        }
        let [mut zeros, sorted] = partition(ot.choices(), &is_opened);
        drop(is_opened);
        let hashed = ot.messages(&sorted);
        drop(ot);
        prg.shuffle(&mut zeros);
        let order = prg.permutation(sorted.len());
        let mut ones = vec![0; sorted.len()];
        let mut messages = vec![Block::ZERO; sorted.len()];
        advise_huge_pages(&messages);
        ones.par_chunks_mut(GATHER_TASK)
            .zip(messages.par_chunks_mut(GATHER_TASK))
            .zip(order.par_chunks(GATHER_TASK))
            .for_each(|((ones, messages), order)| {
                for (r, &c) in order.iter().enumerate() {
                    if let Some(&ahead) = order.get(r + AHEAD) {
                        prefetch(&hashed[ahead as usize]);
                        prefetch(&sorted[ahead as usize]);
                    }
                    ones[r] = sorted[c as usize];
                    messages[r] = hashed[c as usize];
                }
            });
        Unopened {
            ones,
            messages,
            zeros,
        }
    }

    /// Writes the arrangement (for a precomputed state).
    pub(super) fn save(&self, out: &mut StateWriter) -> Result<()> {
        out.u32s(&self.ones)?;
        out.blocks(&self.messages)?;
        out.u32s(&self.zeros)
    }

    /// Reads what [`Unopened::save`] wrote for `n_ot` OTs.
    pub(super) fn load(input: &mut StateReader, n_ot: usize) -> Result<Self> {
        let ones = input.u32s(n_ot, "one-OTs")?;
        let messages = exactly(input.blocks(n_ot, "one-OT messages")?, ones.len())?;
        let zeros = input.u32s(n_ot - ones.len(), "zero-OTs")?;
        if ones.iter().chain(&zeros).any(|&j| j as usize >= n_ot) {
            return Err(Error::State("an OT index out of range".into()));
        }
        Ok(Unopened {
            ones,
            messages,
            zeros,
        })
    }

    /// Pads the filter to exactly as many set bits as there are one-OTs, by setting random
    /// clear bits.
    ///
    /// The unopened OTs hold more ones than a filter of n·k insertions has set bits (the
    /// parameters leave slack for the check, and hash collisions set fewer bits), and
    /// fewer zeros than it has clear bits. A filter with extra ones still contains every
    /// item, and §5.2 already bounds the receiver to N_1 ones.
    pub(super) fn fit(&self, bf: &mut BitSet, prg: &mut Prg) -> Result<()> {
        let set = bf.count_ones();
        if set > self.ones.len() {
            return Err(Error::Unlucky(format!(
                "the Bloom filter has {set} ones but only {} unopened OTs have choice bit 1 (probability ≤ 2^-40)",
                self.ones.len()
            )));
        }
        if bf.len() - self.ones.len().min(bf.len()) > self.zeros.len() {
            return Err(Error::Unlucky(
                "fewer unopened OTs than Bloom-filter bits (probability ≤ 2^-40)".into(),
            ));
        }
        // A uniformly random set of clear positions, by rejection (few compared to the filter).
        let mut extra = (self.ones.len() - set).min(bf.len() - set);
        while extra > 0 {
            let i = prg.below(bf.len() as u64) as usize;
            if !bf.set(i) {
                extra -= 1;
            }
        }
        Ok(())
    }

    /// One frame of π for the filter `bf` that [`Unopened::fit`] has padded: appends the
    /// entries of positions `first..first + count` to `entries` (the r-th set bit of the
    /// filter gets the r-th one-OT, the r-th clear bit the r-th zero-OT; `used` counts what
    /// earlier frames took), and appends to `messages` the message `m_{π(j),1}` of each
    /// pair's position j, all of which lie in this frame and are set in `bf`.
    pub(super) fn frame(
        &self,
        bf: &BitSet,
        (first, count): (usize, usize),
        used: &mut Used,
        entries: &mut Vec<u32>,
        pairs: &[Pair],
        messages: &mut Vec<Block>,
    ) {
        debug_assert_eq!(first % 64, 0);
        let words = &bf.words()[first / 64..(first + count).div_ceil(64)];
        // One-OTs used before each word (bits past the filter's end are clear), so that
        // the frame splits into tasks that each know where their cursors start.
        let mut before = Vec::with_capacity(words.len());
        let mut ones = used.ones;
        for &word in words {
            before.push(ones);
            ones += word.count_ones() as usize;
        }
        let start = entries.len();
        entries.resize(start + count, 0);
        entries[start..]
            .par_chunks_mut(64 * FRAME_TASK_WORDS)
            .enumerate()
            .for_each(|(t, out)| {
                let w0 = t * FRAME_TASK_WORDS;
                // Cursors into the zero- and one-OTs, indexed by the filter bit: no branch
                // on the (unpredictable) bit.
                let lists = [&self.zeros, &self.ones];
                let mut at = [used.zeros + 64 * w0 - (before[w0] - used.ones), before[w0]];
                for (out, &word) in out.chunks_mut(64).zip(&words[w0..]) {
                    for (i, e) in out.iter_mut().enumerate() {
                        let bit = (word >> i & 1) as usize;
                        *e = lists[bit][at[bit]];
                        at[bit] += 1;
                    }
                }
            });
        let start = messages.len();
        messages.resize(start + pairs.len(), Block::ZERO);
        messages[start..]
            .par_chunks_mut(PAIR_TASK)
            .zip(pairs.par_chunks(PAIR_TASK))
            .for_each(|(out, pairs)| {
                for (m, p) in out.iter_mut().zip(pairs) {
                    let local = p.position as usize - first;
                    let below = words[local / 64] & ((1u64 << (local % 64)) - 1);
                    *m = self.messages[before[local / 64] + below.count_ones() as usize];
                }
            });
        used.zeros += count - (ones - used.ones);
        used.ones = ones;
    }
}

/// How many one- and zero-OTs the frames of π sent so far have used.
#[derive(Default)]
pub(super) struct Used {
    ones: usize,
    zeros: usize,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partition_splits_the_unskipped_ots_by_choice_bit_in_order() {
        for n in [1, 63, 64, 65, 1000, 70_000] {
            let choices: Vec<bool> = (0..n).map(|j| (j * 7 + j / 5) % 3 == 0).collect();
            let skip: Vec<bool> = (0..n).map(|j| j % 4 == 1).collect();
            let [zeros, ones] =
                partition(&BitSet::from_bools(&choices), &BitSet::from_bools(&skip));
            let want = |b: bool| -> Vec<u32> {
                (0..n as u32)
                    .filter(|&j| !skip[j as usize] && choices[j as usize] == b)
                    .collect()
            };
            assert_eq!(zeros, want(false), "n = {n}");
            assert_eq!(ones, want(true), "n = {n}");
        }
    }
}
