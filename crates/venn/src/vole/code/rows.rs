//! The accumulator's coefficient rows, drawn from an AES-CTR stream.

use super::ACCUMULATOR;
use crate::crypto::{Block, Prg};

/// The accumulator's coefficient rows, in order: row i is 24 bits of an AES-CTR stream
/// (bits 0..24 and 24..48 of each 64-bit word; the top 16 unused).
pub(super) struct Rows {
    stream: Prg,
    blocks: [Block; Rows::BATCH],
    next: usize,
}

impl Rows {
    /// Stream blocks drawn at a time (four rows each).
    const BATCH: usize = 64;

    pub(super) fn new(seed: Block) -> Rows {
        Rows {
            stream: Prg::from_seed(seed),
            blocks: [Block::ZERO; Rows::BATCH],
            next: 4 * Rows::BATCH,
        }
    }

    /// The next row.
    #[inline(always)]
    pub(super) fn next(&mut self) -> u64 {
        if self.next == 4 * Rows::BATCH {
            self.stream.fill_blocks(&mut self.blocks);
            self.next = 0;
        }
        let i = self.next;
        self.next += 1;
        let word = (self.blocks[i / 4].as_u128() >> (64 * (i / 2 % 2))) as u64;
        (word >> (ACCUMULATOR * (i % 2))) & ((1 << ACCUMULATOR) - 1)
    }
}
