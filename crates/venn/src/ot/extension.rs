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
use crate::net::Channel;
use crate::Result;
use rayon::prelude::*;

/// Most chunks of [`TASK_ROWS`] rows in one batch. Two parties each running one
/// extension's receiver and another's sender send a whole batch before reading one
/// ([`crate::ot::oos16::both_ways`]), so a batch must fit in the send queue with room to
/// spare whatever the thread count: 16 chunks of 512-bit rows are 4 MiB.
const MAX_BATCH_TASKS: usize = 16;
const _: () = assert!(
    TASK_ROWS * MAX_BATCH_TASKS * 64 <= 8 << 20,
    "half the 16 MiB queue"
);

/// Rows per batch: one chunk of [`TASK_ROWS`] rows (one frame on the wire) per thread of
/// the current rayon pool (at most [`MAX_BATCH_TASKS`]), computed in parallel.
fn batch_rows() -> usize {
    TASK_ROWS * rayon::current_num_threads().min(MAX_BATCH_TASKS)
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
        let mut rows = self.start(n_rows);
        while !rows.done() {
            rows.send_batch(chan, &codewords)?;
        }
        Ok(())
    }

    /// An extension of `n_rows` rows to be sent a batch at a time (so that a party can
    /// take another extension's batches in between).
    pub fn start(&self, n_rows: usize) -> OutgoingRows<'_> {
        let batch = batch_rows();
        OutgoingRows {
            ext: self,
            n_rows,
            next: 0,
            u: vec![Block::ZERO; batch * self.row_blocks()],
            frames: vec![Vec::new(); batch / TASK_ROWS],
        }
    }
}

/// The receiver's rows of an extension, sent a batch at a time
/// ([`ExtensionReceiver::start`]).
pub struct OutgoingRows<'a> {
    ext: &'a ExtensionReceiver,
    n_rows: usize,
    /// The first row not yet sent.
    next: usize,
    u: Vec<Block>,
    frames: Vec<Vec<u8>>,
}

impl OutgoingRows<'_> {
    /// Whether every row has been sent.
    pub fn done(&self) -> bool {
        self.next >= self.n_rows
    }

    /// The most bytes one batch puts on the wire.
    pub fn batch_bytes(&self) -> usize {
        self.u.len() * std::mem::size_of::<Block>()
    }

    /// Computes the next batch of rows (codewords as for [`ExtensionReceiver::extend`])
    /// and queues it for sending.
    pub fn send_batch(
        &mut self,
        chan: &mut dyn Channel,
        codewords: &(impl Fn(usize, &mut [Block]) + Sync),
    ) -> Result<()> {
        let (ext, n_rows, first) = (self.ext, self.n_rows, self.next);
        let w = ext.row_blocks();
        let padded = (n_rows - first)
            .min(self.frames.len() * TASK_ROWS)
            .next_multiple_of(128);
        self.u[..padded * w]
            .par_chunks_mut(TASK_ROWS * w)
            .zip(self.frames.par_iter_mut())
            .enumerate()
            .for_each(|(c, (u, frame))| {
                let row = first + c * TASK_ROWS;
                ext.g0.xor_rows(&ext.g1, row, u);
                codewords(row, u);
                let real = (n_rows - row).min(TASK_ROWS);
                pack_rows(&u[..real * w], w, ext.row_bytes, frame);
            });
        for frame in &self.frames[..padded.div_ceil(TASK_ROWS)] {
            chan.send(frame)?;
        }
        self.next = (first + padded).min(n_rows);
        Ok(())
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
        let mut s_blocks = vec![Block::ZERO; gs.row_blocks()];
        for (i, _) in s.iter().enumerate().filter(|(_, &b)| b) {
            s_blocks[i / 128] |= Block::unit(i % 128);
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
        after_chunk: impl FnMut(&[Block]),
    ) -> Result<Vec<Block>> {
        self.extend_into(chan, n_rows, Vec::new(), after_chunk)
    }

    /// [`Self::extend`] into the memory of `buf` (the rows of an earlier extension, say),
    /// rather than fresh pages, which the kernel must clear on first touch.
    pub fn extend_into(
        &self,
        chan: &mut dyn Channel,
        n_rows: usize,
        buf: Vec<Block>,
        mut after_chunk: impl FnMut(&[Block]),
    ) -> Result<Vec<Block>> {
        let mut rows = self.start_in(n_rows, true, buf);
        while !rows.done() {
            rows.receive_batch(chan)?;
            after_chunk(rows.so_far());
        }
        Ok(rows.finish())
    }

    /// An extension of `n_rows` rows to be received a batch at a time. With `ahead`, all
    /// of the sender's own PRG rows are expanded now (see [`Self::extend`]); without, each
    /// batch's as it comes, while its rows are in cache (for a party that is busy with
    /// other work until the batches arrive).
    ///
    /// The rows are on ordinary pages: they are written in order and mostly read in order,
    /// and on this project's benchmark machine a fresh huge page cost about seven times
    /// as much to fault in per byte as small pages (rr17-ec at 2^20: 0.83× the wall time
    /// without huge pages, kkrt16 unchanged).
    pub fn start(&self, n_rows: usize, ahead: bool) -> IncomingRows<'_> {
        self.start_in(n_rows, ahead, Vec::new())
    }

    /// [`Self::start`] with the rows in the memory of `q`.
    pub fn start_in(&self, n_rows: usize, ahead: bool, mut q: Vec<Block>) -> IncomingRows<'_> {
        let w = self.row_blocks();
        q.clear();
        q.resize(n_rows.next_multiple_of(128) * w, Block::ZERO);
        if ahead {
            self.gs.par_rows(0, &mut q);
        }
        IncomingRows {
            ext: self,
            q,
            n_rows,
            next: 0,
            expanded: ahead,
            frames: vec![Vec::new(); batch_rows() / TASK_ROWS],
        }
    }
}

/// The sender's rows of an extension, received a batch at a time
/// ([`ExtensionSender::start`]).
pub struct IncomingRows<'a> {
    ext: &'a ExtensionSender,
    q: Vec<Block>,
    n_rows: usize,
    /// The first row not yet received.
    next: usize,
    /// Whether the sender's own PRG rows are already in `q`.
    expanded: bool,
    frames: Vec<Vec<u8>>,
}

impl IncomingRows<'_> {
    /// Whether every row has been received.
    pub fn done(&self) -> bool {
        self.next >= self.n_rows
    }

    /// Receives the next batch of rows and folds it in: `q_j = Gs_j ⊕ (u_j ∧ s)`.
    pub fn receive_batch(&mut self, chan: &mut dyn Channel) -> Result<()> {
        let (ext, first) = (self.ext, self.next);
        let w = ext.row_blocks();
        let mask = row_mask(w, ext.row_bytes);
        let real = (self.n_rows - first).min(self.frames.len() * TASK_ROWS);
        let chunks = real.div_ceil(TASK_ROWS);
        for (c, frame) in self.frames[..chunks].iter_mut().enumerate() {
            let rows = (real - c * TASK_ROWS).min(TASK_ROWS);
            chan.recv_exact_into(frame, rows * ext.row_bytes, "OT-extension rows")?;
            frame.resize(frame.len() + UNPACK_SLACK, 0);
        }
        let end = (first + real).next_multiple_of(128);
        let expanded = self.expanded;
        self.q[first * w..end * w]
            .par_chunks_mut(TASK_ROWS * w)
            .zip(&self.frames[..chunks])
            .enumerate()
            .for_each(|(c, (rows, frame))| {
                if !expanded {
                    ext.gs.rows(first + c * TASK_ROWS, rows);
                }
                let mut u = vec![Block::ZERO; w];
                for (r, q_row) in rows
                    .chunks_exact_mut(w)
                    .enumerate()
                    .take(real - c * TASK_ROWS)
                {
                    unpack_row(frame, r, ext.row_bytes, &mask, &mut u);
                    for ((q, u), s) in q_row.iter_mut().zip(&u).zip(&ext.s) {
                        *q ^= u & s;
                    }
                }
            });
        self.next = first + real;
        Ok(())
    }

    /// The rows received so far.
    pub fn so_far(&self) -> &[Block] {
        &self.q[..self.next * self.ext.row_blocks()]
    }

    /// All the rows, once every batch is in.
    pub fn finish(mut self) -> Vec<Block> {
        assert!(self.done(), "every batch received");
        self.q.truncate(self.n_rows * self.ext.row_blocks());
        self.q
    }
}
