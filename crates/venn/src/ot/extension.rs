//! The row-wise OT-extension step shared by IKNP (KKRT16 §2.1) and the BaRK-OPRF
//! (KKRT16 Fig. 2): the extension receiver holds seed pairs `(k_i^0, k_i^1)` for each of
//! the `k` columns and a codeword `c_j` per row; the extension sender holds `k_i^{s_i}`.
//!
//! Receiver: `t_j = G0_j`, sends `u_j = G0_j ⊕ G1_j ⊕ c_j`.
//! Sender:   `q_j = Gs_j ⊕ (u_j ∧ s) = t_j ⊕ (c_j ∧ s)`.
//!
//! Rows go over the wire in chunks as soon as they are computed, so both parties work in
//! parallel; only the first `row_bytes` bytes of a row (the `k` real columns) are sent.

use super::PrgMatrix;
use crate::crypto::{pack_rows, row_mask, unpack_row, Block, UNPACK_SLACK};
use crate::net::Channel;
use crate::Result;

/// Rows per chunk (a multiple of 128).
const CHUNK_ROWS: usize = 4096;

fn chunks(n_rows: usize) -> impl Iterator<Item = (usize, usize, usize)> {
    (0..n_rows).step_by(CHUNK_ROWS).map(move |first| {
        let real = (n_rows - first).min(CHUNK_ROWS);
        (first, real, real.next_multiple_of(128))
    })
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

    /// The receiver's rows `t_j` again from the start, regenerated from the seeds (for
    /// using them after the extension without having kept them).
    pub fn replay_t(&self) -> PrgMatrix {
        PrgMatrix::new(&self.seeds0)
    }

    /// Extends `n_rows` rows. `codewords(first_row, rows)` must XOR the codewords of rows
    /// `first_row..` into `rows` (row-major, [`Self::row_blocks`] blocks per row; it may
    /// see up to 127 padding rows past `n_rows`). `on_t(first_row, t)` receives the
    /// receiver's rows `t_j` of each chunk (padding rows included; a scratch buffer the
    /// callback may overwrite).
    pub fn extend(
        &mut self,
        chan: &mut dyn Channel,
        n_rows: usize,
        mut codewords: impl FnMut(usize, &mut [Block]),
        mut on_t: impl FnMut(usize, &mut [Block]),
    ) -> Result<()> {
        let w = self.row_blocks();
        let mut t = vec![0; CHUNK_ROWS * w];
        let mut u = vec![0; CHUNK_ROWS * w];
        let mut frame = Vec::with_capacity(CHUNK_ROWS * self.row_bytes);
        for (first, real, padded) in chunks(n_rows) {
            let (t, u) = (&mut t[..padded * w], &mut u[..padded * w]);
            self.g0.next_rows(padded, t);
            self.g1.next_rows(padded, u);
            for (u, t) in u.iter_mut().zip(t.iter()) {
                *u ^= t;
            }
            codewords(first, u);
            pack_rows(&u[..real * w], w, self.row_bytes, &mut frame);
            chan.send(&frame)?;
            on_t(first, t);
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

    /// Extends `n_rows` rows into `q` (row-major, [`Self::row_blocks`] blocks a row).
    ///
    /// All of the sender's own PRG rows are expanded into `q` first — work that needs
    /// nothing from the receiver, so it overlaps whatever the receiver is doing before it
    /// sends — then each chunk the receiver sends is folded in as it arrives, and
    /// `after_chunk(q_so_far)` runs with every row received so far (it can do work that
    /// would otherwise wait for the whole extension).
    pub fn extend(
        &mut self,
        chan: &mut dyn Channel,
        n_rows: usize,
        q: &mut Vec<Block>,
        mut after_chunk: impl FnMut(&[Block]),
    ) -> Result<()> {
        let w = self.row_blocks();
        let mask = row_mask(w, self.row_bytes);
        q.clear();
        q.resize(n_rows.next_multiple_of(128) * w, 0);
        for rows in q.chunks_mut(CHUNK_ROWS * w) {
            self.gs.next_rows(rows.len() / w, rows);
        }
        let mut frame = Vec::with_capacity(CHUNK_ROWS * self.row_bytes + UNPACK_SLACK);
        let mut u = vec![0; w];
        for (first, real, _) in chunks(n_rows) {
            chan.recv_exact_into(&mut frame, real * self.row_bytes, "OT-extension rows")?;
            frame.resize(frame.len() + UNPACK_SLACK, 0);
            let rows = &mut q[first * w..(first + real) * w];
            for (r, q_row) in rows.chunks_exact_mut(w).enumerate() {
                unpack_row(&frame, r, self.row_bytes, &mask, &mut u);
                for ((q, u), s) in q_row.iter_mut().zip(&u).zip(&self.s) {
                    *q ^= u & s;
                }
            }
            after_chunk(&q[..(first + real) * w]);
        }
        q.truncate(n_rows * w);
        Ok(())
    }
}
