//! The consistency check's shared parts (OOS16 §4): the challenge bits drawn from the
//! sender's seed, and the sums both sides fold over their rows.

use super::CHECK_ROWS;
use crate::crypto::{Block, Prg};

/// The check's bits x_j^(l) (bit l of `bits(j)`), from the sender's seed χ.
pub(super) struct Challenge {
    prg: Prg,
}

impl Challenge {
    pub(super) fn new(seed: Block) -> Self {
        Challenge {
            prg: Prg::from_seed(seed),
        }
    }

    /// The bits of the next row (rows are taken in order from 0).
    pub(super) fn next_row(&mut self) -> u64 {
        self.prg.u64() & ((1 << CHECK_ROWS) - 1)
    }
}

/// The check's sums `Σ_j x_j^(l) · row_j` for each l < 40, folded a row at a time with
/// the method of four Russians: a row is XORed into one of 256 buckets for each byte of its
/// 40 bits x_j (5 XORs, where XORing it into each sum its bits select takes 20 on
/// average), and each sum is gathered from the buckets at the end.
pub(super) struct CheckSums<const N: usize> {
    /// `buckets[256·c + v]`: the XOR of the rows whose byte c of x is v.
    buckets: Vec<[Block; N]>,
}

impl<const N: usize> CheckSums<N> {
    const BYTES: usize = {
        assert!(
            CHECK_ROWS.is_multiple_of(8),
            "whole bytes of challenge bits"
        );
        CHECK_ROWS / 8
    };

    pub(super) fn new() -> Self {
        CheckSums {
            buckets: vec![[Block::ZERO; N]; 256 * Self::BYTES],
        }
    }

    /// Adds `row` to the sums whose bit is set in `x` (a receiver's row carries its word as
    /// a fifth block).
    pub(super) fn fold(&mut self, row: &[Block; N], x: u64) {
        for c in 0..Self::BYTES {
            let bucket = &mut self.buckets[256 * c + (x >> (8 * c)) as usize % 256];
            for (a, r) in bucket.iter_mut().zip(row) {
                *a ^= r;
            }
        }
    }

    /// The sums, sum l for bit l.
    pub(super) fn sums(&self) -> [[Block; N]; CHECK_ROWS] {
        let mut sums = [[Block::ZERO; N]; CHECK_ROWS];
        for (v, bucket) in self.buckets.iter().enumerate() {
            let (c, v) = (v / 256, v % 256);
            for (i, sum) in sums[8 * c..8 * c + 8].iter_mut().enumerate() {
                if v >> i & 1 == 1 {
                    for (a, r) in sum.iter_mut().zip(bucket) {
                        *a ^= r;
                    }
                }
            }
        }
        sums
    }
}
