//! The row-wise OT-extension step shared by IKNP (KKRT16 §2.1) and the BaRK-OPRF
//! (KKRT16 Fig. 2): the extension receiver holds seed pairs `(k_i^0, k_i^1)` for each of
//! the `k` columns and a codeword `c_j` per row; the extension sender holds `k_i^{s_i}`.
//!
//! Receiver: `t_j = G0_j`, sends `u_j = G0_j ⊕ G1_j ⊕ c_j`.
//! Sender:   `q_j = Gs_j ⊕ (u_j ∧ s) = t_j ⊕ (c_j ∧ s)`.
//!
//! Rows go over the wire in chunks as soon as they are computed, so both parties work in
//! parallel; only the first `row_bytes` bytes of a row (the `k` real columns) are sent.

use super::prg_matrix::TASK_ROWS;
use super::PrgMatrix;
use crate::crypto::{pack_rows, row_mask, unpack_row, Block, UNPACK_SLACK};
use crate::memory::advise_huge_pages;
use crate::net::Channel;
use crate::Result;
use rayon::prelude::*;

/// Rows per batch: one chunk of [`TASK_ROWS`] rows (one frame on the wire) per thread of
/// the current rayon pool, computed in parallel.
fn batch_rows() -> usize {
    TASK_ROWS * rayon::current_num_threads()
}

fn row_bytes(columns: usize) -> usize {
    assert_eq!(columns % 8, 0, "extension width is whole bytes");
    columns / 8
}

/// The extension receiver (knows both seeds of every column).
pub struct ExtensionReceiver {
    seeds0: Vec<Block>,
    g0: PrgMatrix,
    g1: PrgMatrix,
    row_bytes: usize,
}

impl ExtensionReceiver {
    /// From the seed pairs of the `k` columns.
    pub fn new(seeds: &[[Block; 2]]) -> Self {
        let (s0, s1): (Vec<Block>, Vec<Block>) = seeds.iter().map(|p| (p[0], p[1])).unzip();
        ExtensionReceiver {
            g0: PrgMatrix::new(&s0),
            seeds0: s0,
            g1: PrgMatrix::new(&s1),
            row_bytes: row_bytes(seeds.len()),
        }
    }

    /// Blocks per row.
    pub fn row_blocks(&self) -> usize {
        self.g0.row_blocks()
    }

    /// The receiver's rows `t_j` again, regenerated from the seeds (for using them after
    /// the extension without having kept them).
    pub fn replay_t(&self) -> PrgMatrix {
        PrgMatrix::new(&self.seeds0)
    }

    /// Extends `n_rows` rows. `codewords(first_row, rows)` must XOR the codewords of rows
    /// `first_row..` into `rows` (row-major, [`Self::row_blocks`] blocks per row; it may
    /// see up to 127 padding rows past `n_rows`); it runs on the rayon pool, one call per
    /// chunk of rows. The receiver's own rows `t_j` are not kept: [`Self::replay_t`]
    /// gives them again.
    pub fn extend(
        &self,
        chan: &mut dyn Channel,
        n_rows: usize,
        codewords: impl Fn(usize, &mut [Block]) + Sync,
    ) -> Result<()> {
        let (w, batch) = (self.row_blocks(), batch_rows());
        let mut u = vec![0; batch * w];
        let mut frames = vec![Vec::new(); batch / TASK_ROWS];
        for first in (0..n_rows).step_by(batch) {
            let padded = (n_rows - first).min(batch).next_multiple_of(128);
            u[..padded * w]
                .par_chunks_mut(TASK_ROWS * w)
                .zip(frames.par_iter_mut())
                .enumerate()
                .for_each(|(c, (u, frame))| {
                    let row = first + c * TASK_ROWS;
                    self.g0.xor_rows(&self.g1, row, u);
                    codewords(row, u);
                    let real = (n_rows - row).min(TASK_ROWS);
                    pack_rows(&u[..real * w], w, self.row_bytes, frame);
                });
            for frame in &frames[..padded.div_ceil(TASK_ROWS)] {
                chan.send(frame)?;
            }
        }
        chan.flush()
    }
}

/// The extension sender (knows one seed per column, chosen by its secret `s`).
pub struct ExtensionSender {
    gs: PrgMatrix,
    s: Vec<Block>,
    row_bytes: usize,
}

impl ExtensionSender {
    /// From the chosen seeds `k_i^{s_i}` and the choice bits `s`.
    pub fn new(seeds: &[Block], s: &[bool]) -> Self {
        assert_eq!(seeds.len(), s.len());
        let gs = PrgMatrix::new(seeds);
        let mut s_blocks = vec![0 as Block; gs.row_blocks()];
        for (i, _) in s.iter().enumerate().filter(|(_, &b)| b) {
            s_blocks[i / 128] |= 1 << (i % 128);
        }
        ExtensionSender {
            gs,
            s: s_blocks,
            row_bytes: row_bytes(seeds.len()),
        }
    }

    /// The secret `s` as row blocks.
    pub fn s(&self) -> &[Block] {
        &self.s
    }

    /// Blocks per row.
    pub fn row_blocks(&self) -> usize {
        self.s.len()
    }

    /// Extends `n_rows` rows and returns them (`q`, row-major, [`Self::row_blocks`] blocks
    /// a row).
    ///
    /// All of the sender's own PRG rows are expanded first, in parallel — work that needs
    /// nothing from the receiver, so it overlaps whatever the receiver is doing before it
    /// sends — then the chunks the receiver sends are folded in a batch at a time, and
    /// `after_chunk(q_so_far)` runs with every row received so far (it can do work that
    /// would otherwise wait for the whole extension).
    pub fn extend(
        &self,
        chan: &mut dyn Channel,
        n_rows: usize,
        mut after_chunk: impl FnMut(&[Block]),
    ) -> Result<Vec<Block>> {
        let (w, batch) = (self.row_blocks(), batch_rows());
        let mask = row_mask(w, self.row_bytes);
        let mut q = vec![0; n_rows.next_multiple_of(128) * w];
        advise_huge_pages(&q);
        self.gs.par_rows(0, &mut q);
        let mut frames = vec![Vec::new(); batch / TASK_ROWS];
        for first in (0..n_rows).step_by(batch) {
            let real = (n_rows - first).min(batch);
            let chunks = real.div_ceil(TASK_ROWS);
            for (c, frame) in frames[..chunks].iter_mut().enumerate() {
                let rows = (real - c * TASK_ROWS).min(TASK_ROWS);
                chan.recv_exact_into(frame, rows * self.row_bytes, "OT-extension rows")?;
                frame.resize(frame.len() + UNPACK_SLACK, 0);
            }
            q[first * w..(first + real) * w]
                .par_chunks_mut(TASK_ROWS * w)
                .zip(&frames[..chunks])
                .for_each(|(rows, frame)| {
                    let mut u = vec![0; w];
                    for (r, q_row) in rows.chunks_exact_mut(w).enumerate() {
                        unpack_row(frame, r, self.row_bytes, &mask, &mut u);
                        for ((q, u), s) in q_row.iter_mut().zip(&u).zip(&self.s) {
                            *q ^= u & s;
                        }
                    }
                });
            after_chunk(&q[..(first + real) * w]);
        }
        q.truncate(n_rows * w);
        Ok(q)
    }
}
