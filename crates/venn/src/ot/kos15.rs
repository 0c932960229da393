//! KOS15 random-OT extension (Keller–Orsini–Scholl, "Actively secure OT extension with
//! optimal overhead", CRYPTO 2015, Fig. 7): IKNP plus a correlation check that catches a
//! malicious receiver whose rows are not consistent with one choice bit each.
//!
//! The receiver pads its choices with κ + λ random ones, so that the check values reveal
//! nothing about the real choices. After the extension, both derive random
//! `χ_j ∈ GF(2^128)` from a coin-tossed seed (the receiver commits to its half before the
//! sender reveals its own, so neither side can bias χ); the receiver sends
//! `x = Σ χ_j·r_j` and `t = Σ χ_j·t_j`, and the sender checks `Σ χ_j·q_j = t ⊕ x·Δ`.
//!
//! Outputs are hashed only when used (RR17 §4.1, "hash only on demand"):
//! `m_{j,b} = H(j, q_j ⊕ b·Δ)` for the sender and `m_{j,r_j} = H(j, t_j)` for the receiver,
//! j counted from the extension's `first` OT (an extension run in segments numbers each
//! segment on from the last: [`KosSending::start`]).
//!
//! **One check, not four (a decision).** libOTe runs this correlation check four times
//! over independent χ "to mitigate the uncertainty surrounding the KOS security" (its
//! proof was found to have a gap, and later analyses such as SoftSpokenOT's re-derive the
//! check's soundness). Venn runs it once, as KOS15 Fig. 7 and RR17 (which sets its
//! parameters for exactly this extension) specify: over GF(2^128) with κ + λ padding rows,
//! a receiver whose rows carry an inconsistent codeword passes with probability about
//! 2^-128 per guess of the Δ bits it targets, and what it can learn by guessing is the
//! selective-failure leakage that KOS15's proof and RR17's cut-and-choose already account
//! for. Four checks would cost four times the check (about a tenth of the extension at
//! 2^20) for no attack known against one. Should a concrete weakness of the single check
//! appear, the remedy is local to [`check_sums`]: toss one seed per repetition and compare
//! each sum.

use super::prg_matrix::TASK_ROWS;
use super::{
    ExtensionReceiver, ExtensionSender, IncomingRows, OutgoingRows, PrgMatrix, ReceiverSeeds,
    SenderSeeds,
};
use crate::crypto::{gf128, tccr_hash_with, Aes, Block, Prg};
use crate::net::{Channel, Reader, Writer};
use crate::session::{CoinToss, CoinTossReply, ShareSent};
use crate::state::{exactly, StateReader, StateWriter};
use crate::util::bits::BitSet;
use crate::util::memory::advise_huge_pages;
use crate::util::memory::prefetch;
use crate::util::slices::split_lengths;
use crate::{Error, Result, COMPUTATIONAL_SECURITY, STATISTICAL_SECURITY};
use rayon::prelude::*;

/// Extra random OTs the receiver adds to hide its choices from the check (κ + λ).
const CHECK_PADDING: usize = COMPUTATIONAL_SECURITY + STATISTICAL_SECURITY;
/// Rows whose χ are generated at a time during the check.
const CHECK_CHUNK: usize = 1 << 16;
/// OT indices within one extension (or one segment) are 32-bit (the callers' index lists);
/// the hash tweaks `first + j` are 64-bit.
const MAX_OTS: usize = 1 << 32;

/// The coin toss for the seed of the χ_j: the receiver commits before the extension, the
/// sender answers only after it, so neither knows χ while its rows can still change.
const CHECK_TOSS: &str = "KOS15 check seed";

/// Where the correlation check reads the rows: kept in memory (the sender's `q_j`) or
/// regenerated from the seeds (the receiver's `t_j`).
enum Rows<'a> {
    Kept(&'a [Block]),
    Regenerated(&'a PrgMatrix),
}

impl Rows<'_> {
    /// Rows `first..first + len` (`first` a multiple of 128), regenerated into `buf` if
    /// need be.
    fn get<'b>(&'b self, first: usize, len: usize, buf: &'b mut Vec<Block>) -> &'b [Block] {
        match self {
            Rows::Kept(rows) => &rows[first..first + len],
            Rows::Regenerated(matrix) => {
                buf.resize(len.next_multiple_of(128), Block::ZERO);
                matrix.rows(first, buf);
                &buf[..len]
            }
        }
    }
}

/// `Σ χ_j · rows_j` and `Σ_{j : bit_j} χ_j` over the first `n` rows, for `χ_j = AES_seed(j)`
/// (the AES-CTR PRG's j-th block), in chunks on the rayon pool; XOR is associative, so the
/// sums do not depend on how the chunks are split among threads. Also returns the rows at
/// `keep` (increasing indices), read on the way.
fn check_sums(
    seed: Block,
    rows: Rows,
    n: usize,
    bits: Option<&[bool]>,
    keep: &[u32],
) -> (Block, Block, Vec<Block>) {
    let aes = Aes::new(seed);
    let chunks: Vec<_> = (0..n.div_ceil(CHECK_CHUNK))
        .into_par_iter()
        .map_init(
            || (Vec::new(), Vec::new()),
            |(chi, buf), c| {
                let first = c * CHECK_CHUNK;
                let len = (n - first).min(CHECK_CHUNK);
                chi.clear();
                chi.extend((first..first + len).map(|j| Block::from(j as u64)));
                aes.encrypt_blocks(chi);
                let rows = rows.get(first, len, buf);
                let product = gf128::inner_product(chi, rows);
                let selected = bits.map_or(Block::ZERO, |bits| {
                    chi.iter()
                        .zip(&bits[first..first + len])
                        .filter(|(_, &b)| b)
                        .fold(Block::ZERO, |acc, (x, _)| acc ^ x)
                });
                let from = keep.partition_point(|&j| (j as usize) < first);
                let to = keep.partition_point(|&j| (j as usize) < first + len);
                let kept: Vec<Block> = keep[from..to]
                    .iter()
                    .map(|&j| rows[j as usize - first])
                    .collect();
                (product, selected, kept)
            },
        )
        .collect();
    let (mut product, mut selected) = (Block::ZERO, Block::ZERO);
    let mut kept = Vec::with_capacity(keep.len());
    for (p, s, k) in chunks {
        product ^= p;
        selected ^= s;
        kept.extend(k);
    }
    (product, selected, kept)
}

/// The sender's outputs: `Δ` and the rows `q_j`.
pub struct KosSender {
    delta: Block,
    q: Vec<Block>,
    /// The session-wide index of OT 0, added to every hash tweak (see [`KosSending::start`]).
    first: u64,
}

impl KosSender {
    /// The number of OTs.
    pub fn len(&self) -> usize {
        self.q.len()
    }

    /// Whether there are no OTs.
    pub fn is_empty(&self) -> bool {
        self.q.is_empty()
    }

    /// Writes Δ and the rows (for a precomputed state; an extension numbered from 0).
    pub fn save(&self, out: &mut StateWriter) -> Result<()> {
        assert_eq!(self.first, 0, "only whole extensions are saved");
        out.block(self.delta)?;
        out.blocks(&self.q)
    }

    /// Reads what [`KosSender::save`] wrote for `count` OTs.
    pub fn load(input: &mut StateReader, count: usize) -> Result<Self> {
        let delta = input.block()?;
        let q = exactly(input.blocks(count, "OT rows")?, count)?;
        advise_huge_pages(&q);
        Ok(KosSender { delta, q, first: 0 })
    }

    /// Appends `m_{j, bit}` for each `j` in `indices` to `out`, hashed now (with the tweak
    /// `first + j`). The rows are read ahead of use, so scattered indices cost little more
    /// than sequential ones.
    pub fn messages(&self, indices: &[u32], bit: bool, out: &mut Vec<Block>) {
        let offset = if bit { self.delta } else { Block::ZERO };
        hash_messages(indices, self.first, &self.q, offset, out);
    }
}

/// OTs per parallel task when gathering and hashing messages.
const HASH_TASK: usize = 1 << 13;

/// Appends `H(first + j, rows[j] ⊕ offset)` for each `j` in `indices` to `out`, in
/// parallel tasks on the rayon pool.
fn hash_messages(indices: &[u32], first: u64, rows: &[Block], offset: Block, out: &mut Vec<Block>) {
    const AHEAD: usize = 32;
    let start = out.len();
    out.resize(start + indices.len(), Block::ZERO);
    out[start..]
        .par_chunks_mut(HASH_TASK)
        .zip(indices.par_chunks(HASH_TASK))
        .for_each(|(out, js)| {
            for (i, (o, &j)) in out.iter_mut().zip(js).enumerate() {
                if let Some(&next) = js.get(i + AHEAD) {
                    prefetch(&rows[next as usize]);
                }
                *o = rows[j as usize] ^ offset;
            }
            hash_indexed(js, first, out);
        });
}

/// Replaces each `rows[i]` by `H(first + indices[i], rows[i])`, in parallel tasks.
fn hash_indexed(indices: &[u32], first: u64, rows: &mut [Block]) {
    rows.par_chunks_mut(HASH_TASK)
        .zip(indices.par_chunks(HASH_TASK))
        .for_each(|(rows, js)| {
            let mut tweaks = [0u64; 128];
            for (rows, js) in rows.chunks_mut(tweaks.len()).zip(js.chunks(tweaks.len())) {
                for (t, &j) in tweaks.iter_mut().zip(js) {
                    *t = first + j as u64;
                }
                tccr_hash_with(&tweaks[..js.len()], rows);
            }
        });
}

/// The receiver's outputs: its choice bits, and the rows `t_j` as the PRG matrix they came
/// from. The rows are not kept: regenerating one costs about as much as reading it back
/// from memory would, and keeping them would take 16 bytes per OT (4.2 GB at RR17's
/// n = 2^20) — so the receiver's messages are computed, not just hashed, on demand.
pub struct KosReceiver {
    choices: BitSet,
    t: PrgMatrix,
    /// The rows `t_j` the caller asked to keep, unhashed.
    kept: Vec<u32>,
    kept_rows: Vec<Block>,
    /// The session-wide index of OT 0 (see [`KosReceiving::start`]).
    first: u64,
}

impl KosReceiver {
    /// The choice bit of OT `j`.
    pub fn choice(&self, j: usize) -> bool {
        self.choices.get(j)
    }

    /// Every choice bit.
    pub fn choices(&self) -> &BitSet {
        &self.choices
    }

    /// `m_{j, r_j} = H(j, t_j)` for each `j` the extension was asked to keep, in order (read
    /// during the correlation check: nothing is regenerated).
    pub fn into_kept_messages(self) -> Vec<Block> {
        let mut out = self.kept_rows;
        hash_indexed(&self.kept, self.first, &mut out);
        out
    }

    /// `m_{j, r_j} = H(j, t_j)` for each `j` in `indices` (increasing), in that order: each
    /// chunk of rows that holds a wanted index is regenerated, on the rayon pool.
    pub fn messages(&self, indices: &[u32]) -> Vec<Block> {
        assert!(indices.is_sorted(), "indices in increasing order");
        let mut out = vec![Block::ZERO; indices.len()];
        advise_huge_pages(&out);
        // The wanted indices chunk by chunk of rows: (chunk, its indices).
        let mut groups = Vec::new();
        let mut todo = indices;
        while let Some(&j) = todo.first() {
            let c = j as usize / TASK_ROWS;
            let k = todo.partition_point(|&i| (i as usize) < (c + 1) * TASK_ROWS);
            groups.push((c, &todo[..k]));
            todo = &todo[k..];
        }
        let parts = split_lengths(&mut out, groups.iter().map(|g| g.1.len()));
        groups
            .into_par_iter()
            .zip(parts)
            .for_each_init(Vec::new, |rows, ((c, js), out)| {
                let first = c * TASK_ROWS;
                rows.resize(TASK_ROWS, Block::ZERO);
                let len = (self.choices.len() - first).min(TASK_ROWS);
                self.t.rows(first, &mut rows[..len.next_multiple_of(128)]);
                for (o, &j) in out.iter_mut().zip(js) {
                    *o = rows[j as usize - first];
                }
                hash_indexed(js, self.first, out);
            });
        out
    }
}

/// The KOS15 sender (it was the receiver of the base OTs, with choice bits `delta`):
/// extends to `count` random OTs and verifies the receiver's correlation check.
pub fn kos_send(
    chan: &mut dyn Channel,
    seeds: &SenderSeeds,
    count: usize,
    prg: &mut Prg,
    sid: &[u8; 32],
) -> Result<KosSender> {
    let ext = seeds.extension();
    let mut sending = KosSending::start(chan, &ext, count, 0, sid, true)?;
    while !sending.done() {
        sending.receive_batch(chan)?;
    }
    sending.challenge(chan, prg)?.verify(chan)
}

/// A KOS15 sender's extension being received a batch at a time (so that a party can run
/// the other side of another extension in between).
pub struct KosSending<'a> {
    rows: IncomingRows<'a>,
    toss: CoinTossReply,
    delta: Block,
    count: usize,
    first: u64,
}

impl<'a> KosSending<'a> {
    /// Takes the receiver's commitment to its half of the check seed and starts an
    /// extension of `count` OTs on `ext` (`ahead` as for [`ExtensionSender::start`]).
    ///
    /// The OTs are numbered from `first` in the hash tweaks: an extension run in segments
    /// (one Δ, a fresh `ext` and `sid` and its own check per segment, KOS15 Fig. 7's
    /// Extend called again) numbers each segment's OTs after the last one's, so that no
    /// two OTs under one Δ share a tweak.
    pub fn start(
        chan: &mut dyn Channel,
        ext: &'a ExtensionSender,
        count: usize,
        first: u64,
        sid: &[u8; 32],
        ahead: bool,
    ) -> Result<Self> {
        assert!(count <= MAX_OTS, "at most 2^32 OTs");
        let toss = CoinTossReply::receive(chan, sid, CHECK_TOSS)?;
        Ok(KosSending {
            rows: ext.start(count + CHECK_PADDING, ahead),
            toss,
            delta: ext.s()[0],
            count,
            first,
        })
    }

    /// Whether every row is in.
    pub fn done(&self) -> bool {
        self.rows.done()
    }

    /// Receives the next batch of rows.
    pub fn receive_batch(&mut self, chan: &mut dyn Channel) -> Result<()> {
        self.rows.receive_batch(chan)
    }

    /// Once every row is in: sends this side's half of the check seed.
    pub fn challenge(self, chan: &mut dyn Channel, prg: &mut Prg) -> Result<KosChallenge> {
        assert!(
            self.done(),
            "the seed share goes out only after every row is in"
        );
        let toss = self.toss.send_share(chan, prg)?;
        Ok(KosChallenge {
            q: self.rows.finish(),
            toss,
            delta: self.delta,
            count: self.count,
            first: self.first,
        })
    }
}

/// The sender's side of the correlation check, its half of the seed sent.
pub struct KosChallenge {
    q: Vec<Block>,
    toss: ShareSent,
    delta: Block,
    count: usize,
    first: u64,
}

impl KosChallenge {
    /// Takes the receiver's opening and its check, and verifies the check.
    pub fn verify(self, chan: &mut dyn Channel) -> Result<KosSender> {
        let KosChallenge {
            mut q,
            toss,
            delta,
            count,
            first,
        } = self;
        let [seed, _] = toss.receive_opening(chan)?;
        let msg = chan.recv_exact(32, "correlation check")?;
        let mut r = Reader::new(&msg, "correlation check");
        let (x, t) = (r.block()?, r.block()?);
        let (q_sum, _, _) = check_sums(seed, Rows::Kept(&q), q.len(), None, &[]);
        if q_sum != t ^ (x * delta) {
            return Err(Error::CheatingDetected(
                "KOS15 correlation check failed: the OT-extension receiver's rows do not match one choice bit each".into(),
            ));
        }
        q.truncate(count);
        Ok(KosSender { delta, q, first })
    }
}

/// The KOS15 receiver (it was the sender of the base OTs, holding `seeds`): receives
/// `m_{j, choices_j}` for every `j`, keeping the rows of the OTs in `keep` (increasing) for
/// [`KosReceiver::into_kept_messages`].
pub fn kos_receive(
    chan: &mut dyn Channel,
    seeds: &ReceiverSeeds,
    choices: Vec<bool>,
    prg: &mut Prg,
    sid: &[u8; 32],
    keep: Vec<u32>,
) -> Result<KosReceiver> {
    let ext = seeds.extension();
    let mut receiving = KosReceiving::start(chan, &ext, choices, 0, prg, sid, keep)?;
    while !receiving.done() {
        receiving.send_batch(chan)?;
    }
    receiving.answer_check(chan)
}

/// A KOS15 receiver's extension being sent a batch at a time.
pub struct KosReceiving<'a> {
    ext: &'a ExtensionReceiver,
    rows: OutgoingRows<'a>,
    /// The choices, then the check's padding.
    choices: Vec<bool>,
    toss: CoinToss,
    keep: Vec<u32>,
    first: u64,
}

impl<'a> KosReceiving<'a> {
    /// Commits to this side's half of the check seed and starts an extension on `ext`
    /// for `choices` (see [`kos_receive`]), its OTs numbered from `first` (see
    /// [`KosSending::start`]).
    pub fn start(
        chan: &mut dyn Channel,
        ext: &'a ExtensionReceiver,
        mut choices: Vec<bool>,
        first: u64,
        prg: &mut Prg,
        sid: &[u8; 32],
        keep: Vec<u32>,
    ) -> Result<Self> {
        let count = choices.len();
        assert!(count <= MAX_OTS, "at most 2^32 OTs");
        assert!(keep.is_sorted() && keep.last().is_none_or(|&j| (j as usize) < count));
        choices.extend((0..CHECK_PADDING).map(|_| prg.u64() & 1 == 1));
        let toss = CoinToss::commit(chan, sid, CHECK_TOSS, prg)?;
        Ok(KosReceiving {
            ext,
            rows: ext.start(choices.len()),
            choices,
            toss,
            keep,
            first,
        })
    }

    /// Whether every row has been sent.
    pub fn done(&self) -> bool {
        self.rows.done()
    }

    /// Computes and queues the next batch of rows (codeword `r_j · 1^κ`).
    pub fn send_batch(&mut self, chan: &mut dyn Channel) -> Result<()> {
        let choices = &self.choices;
        self.rows.send_batch(chan, &|first, u: &mut [Block]| {
            for (u, &c) in u.iter_mut().zip(&choices[first..]) {
                *u ^= if c { Block::ONES } else { Block::ZERO };
            }
        })
    }

    /// Once every row is sent: the receiver's half of the check (open the seed, send `x`
    /// and `t`).
    pub fn answer_check(self, chan: &mut dyn Channel) -> Result<KosReceiver> {
        let KosReceiving {
            ext,
            mut choices,
            toss,
            keep,
            first,
            ..
        } = self;
        let count = choices.len() - CHECK_PADDING;
        let t = ext.replay_t();
        let kept_rows = answer_check(chan, toss, &choices, &t, &keep)?;
        choices.truncate(count);
        Ok(KosReceiver {
            choices: BitSet::from_bools(&choices),
            t,
            kept: keep,
            kept_rows,
            first,
        })
    }
}

/// The receiver's half of the check: open the seed, send `x` and `t`. Returns the rows at
/// `keep`, read on the way.
fn answer_check(
    chan: &mut dyn Channel,
    toss: CoinToss,
    choices: &[bool],
    t: &PrgMatrix,
    keep: &[u32],
) -> Result<Vec<Block>> {
    let [seed, _] = toss.open(chan)?;
    let n = choices.len();
    let (t_sum, x, kept) = check_sums(seed, Rows::Regenerated(t), n, Some(choices), keep);
    chan.send(&Writer::new().block(x).block(t_sum).0)?;
    Ok(kept)
}

#[cfg(test)]
mod tests {
    use super::super::iknp::extend_rows;
    use super::*;
    use crate::net::mem_pair;
    use std::time::Duration;

    use super::super::seeds::test_seeds as base;

    #[test]
    fn honest_receiver_gets_exactly_its_messages() {
        let mut prg = Prg::from_seed(Block::from(21));
        let (sender_seeds, pairs) = base(&mut prg);
        // More than one chunk of the check, so the kept rows span chunks.
        let count = CHECK_CHUNK + 3000;
        let choices: Vec<bool> = (0..count).map(|_| prg.u64() & 1 == 1).collect();
        let (mut a, mut b) = mem_pair(Duration::from_secs(10));
        let c2 = choices.clone();
        let keep: Vec<u32> = (0..count as u32).step_by(7).collect();
        let k2 = keep.clone();
        let t = std::thread::spawn(move || {
            kos_receive(
                &mut b,
                &pairs,
                c2,
                &mut Prg::from_seed(Block::from(5)),
                &[1; 32],
                k2,
            )
            .unwrap()
        });
        let sender = kos_send(
            &mut a,
            &sender_seeds,
            count,
            &mut Prg::from_seed(Block::from(6)),
            &[1; 32],
        )
        .unwrap();
        let receiver = t.join().unwrap();
        assert_eq!(sender.len(), count);
        let all: Vec<u32> = (0..count as u32).collect();
        let (mut m0, mut m1) = (vec![], vec![]);
        sender.messages(&all, false, &mut m0);
        sender.messages(&all, true, &mut m1);
        let got = receiver.messages(&all);
        for j in 0..count {
            assert_eq!(receiver.choice(j), choices[j]);
            let (mine, other) = if choices[j] {
                (m1[j], m0[j])
            } else {
                (m0[j], m1[j])
            };
            assert_eq!(got[j], mine, "OT {j}");
            assert_ne!(got[j], other, "OT {j}");
        }
        // On demand: any subset, in any order, gives the same messages.
        let mut some = vec![];
        sender.messages(&[17, 3], true, &mut some);
        assert_eq!(some, vec![m1[17], m1[3]]);
        // A subset gives exactly those messages, in the order asked.
        let kept: Vec<u32> = (0..count as u32)
            .filter(|&j| choices[j as usize] && j % 3 == 0)
            .collect();
        let messages = receiver.messages(&kept);
        let wanted: Vec<Block> = kept.iter().map(|&j| got[j as usize]).collect();
        assert_eq!(messages, wanted);
        // The rows kept during the check are the messages of those OTs.
        let wanted: Vec<Block> = keep.iter().map(|&j| got[j as usize]).collect();
        assert_eq!(receiver.into_kept_messages(), wanted);
    }

    #[test]
    fn segments_are_fresh_extensions_under_one_delta() {
        // Two segments of one extension, the second numbered on from the first: each gives
        // the receiver exactly its messages, and no message repeats across segments (fresh
        // column streams, distinct tweaks) although Δ is the same.
        let mut prg = Prg::from_seed(Block::from(31));
        let (sender_seeds, pairs) = base(&mut prg);
        let count = 3000;
        let rows = |ext: ExtensionReceiver| {
            let mut rows = vec![Block::ZERO; 128 * ext.row_blocks()];
            ext.replay_t().rows(0, &mut rows);
            rows
        };
        let streams = [pairs.extension(), pairs.segment(0), pairs.segment(1)].map(rows);
        assert!(streams[0] != streams[1] && streams[1] != streams[2] && streams[0] != streams[2]);
        let mut seen = std::collections::HashSet::new();
        for k in 0..2u64 {
            let choices: Vec<bool> = (0..count).map(|_| prg.u64() & 1 == 1).collect();
            let first = k * count as u64;
            let (mut a, mut b) = mem_pair(Duration::from_secs(10));
            let (c2, p2) = (choices.clone(), &pairs);
            let (sender, receiver) = std::thread::scope(|scope| {
                let t = scope.spawn(move || {
                    let ext = p2.segment(k);
                    let mut prg = Prg::from_seed(Block::from(5 + k));
                    let keep = (0..count as u32).collect();
                    let mut r = KosReceiving::start(
                        &mut b,
                        &ext,
                        c2,
                        first,
                        &mut prg,
                        &[k as u8; 32],
                        keep,
                    )
                    .unwrap();
                    while !r.done() {
                        r.send_batch(&mut b).unwrap();
                    }
                    r.answer_check(&mut b).unwrap()
                });
                let ext = sender_seeds.segment(k);
                let mut s =
                    KosSending::start(&mut a, &ext, count, first, &[k as u8; 32], false).unwrap();
                while !s.done() {
                    s.receive_batch(&mut a).unwrap();
                }
                let mut prg = Prg::from_seed(Block::from(6));
                let sender = s
                    .challenge(&mut a, &mut prg)
                    .unwrap()
                    .verify(&mut a)
                    .unwrap();
                (sender, t.join().unwrap())
            });
            let all: Vec<u32> = (0..count as u32).collect();
            let (mut m0, mut m1) = (vec![], vec![]);
            sender.messages(&all, false, &mut m0);
            sender.messages(&all, true, &mut m1);
            let got = receiver.into_kept_messages();
            for j in 0..count {
                let (mine, other) = if choices[j] {
                    (m1[j], m0[j])
                } else {
                    (m0[j], m1[j])
                };
                assert_eq!(got[j], mine, "segment {k}, OT {j}");
                assert_ne!(got[j], other);
                assert!(
                    seen.insert(m0[j]) && seen.insert(m1[j]),
                    "a message repeats"
                );
            }
        }
    }

    #[test]
    fn outputs_do_not_depend_on_the_thread_count() {
        // Several batches of several chunks, with a partial last chunk.
        let count = 5 * 4096 + 1000;
        // One pool per party, as in a real run.
        let pool = |threads| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap()
        };
        let run = |threads: usize| {
            let (pool, p2) = (pool(threads), pool(threads));
            let mut prg = Prg::from_seed(Block::from(77));
            let (sender_seeds, pairs) = base(&mut prg);
            let choices: Vec<bool> = (0..count).map(|_| prg.u64() & 1 == 1).collect();
            let (mut a, mut b) = mem_pair(Duration::from_secs(10));
            let t = std::thread::spawn(move || {
                p2.install(|| {
                    let mut prg = Prg::from_seed(Block::from(5));
                    kos_receive(&mut b, &pairs, choices, &mut prg, &[1; 32], Vec::new()).unwrap()
                })
            });
            let sender = pool.install(|| {
                let mut prg = Prg::from_seed(Block::from(6));
                kos_send(&mut a, &sender_seeds, count, &mut prg, &[1; 32]).unwrap()
            });
            let receiver = t.join().unwrap();
            let all: Vec<u32> = (0..count as u32).collect();
            let mut m1 = vec![];
            pool.install(|| sender.messages(&all, true, &mut m1));
            (m1, pool.install(|| receiver.messages(&all)))
        };
        assert!(run(1) == run(3));
    }

    /// A receiver whose rows carry a codeword that is not all-zero or all-one (the
    /// classic attack that would let it learn bits of Δ). Returns Δ's bit 9 and the result.
    fn cheating_run(seed: u64) -> (bool, Result<KosSender>) {
        let mut prg = Prg::from_seed(Block::from(seed));
        let (sender_seeds, pairs) = base(&mut prg);
        let flipped_delta_bit = sender_seeds.delta[9];
        let count = 1000;
        let (mut a, mut b) = mem_pair(Duration::from_secs(10));
        let t = std::thread::spawn(move || {
            let mut prg = Prg::from_seed(Block::from(seed + 1));
            let choices: Vec<bool> = (0..count + CHECK_PADDING)
                .map(|_| prg.u64() & 1 == 1)
                .collect();
            let toss = CoinToss::commit(&mut b, &[2; 32], CHECK_TOSS, &mut prg)?;
            // Flip one column bit in one row: that row's choice is inconsistent.
            let t = extend_rows(&mut b, &pairs.keys, &choices, |first, u| {
                if first == 0 {
                    u[5] ^= Block::unit(9);
                }
            })?;
            answer_check(&mut b, toss, &choices, &t, &[]).map(|_| ())
        });
        let result = kos_send(
            &mut a,
            &sender_seeds,
            count,
            &mut Prg::from_seed(Block::from(seed + 2)),
            &[2; 32],
        );
        let _ = t.join().unwrap();
        (flipped_delta_bit, result)
    }

    #[test]
    fn a_receiver_with_inconsistent_rows_is_caught() {
        // The flip changes the sender's row exactly when Δ's bit 9 is 1; then the check must
        // fail (except with probability 2^-128). When the bit is 0 the rows stay consistent
        // and the run is honest — the attacker's guess about Δ was simply wrong, the
        // selective-failure leakage KOS15's proof accounts for.
        let (mut caught, mut passed) = (0, 0);
        for seed in 0..40 {
            match cheating_run(seed * 10) {
                (true, Err(Error::CheatingDetected(what))) => {
                    assert!(what.contains("correlation check"));
                    caught += 1;
                }
                (true, other) => panic!("cheating receiver not caught: {:?}", other.err()),
                (false, Ok(_)) => passed += 1,
                (false, Err(e)) => panic!("consistent rows rejected: {e}"),
            }
        }
        assert!(
            caught > 0 && passed > 0,
            "both cases occurred ({caught} caught, {passed} passed)"
        );
    }

    #[test]
    fn a_truncated_check_message_is_a_clean_error() {
        let mut prg = Prg::from_seed(Block::from(41));
        let (sender_seeds, pairs) = base(&mut prg);
        let (mut a, mut b) = mem_pair(Duration::from_secs(10));
        let t = std::thread::spawn(move || {
            let choices = vec![false; 10 + CHECK_PADDING];
            CoinToss::commit(
                &mut b,
                &[4; 32],
                CHECK_TOSS,
                &mut Prg::from_seed(Block::from(1)),
            )?;
            extend_rows(&mut b, &pairs.keys, &choices, |_, _| {})?;
            (&mut b as &mut dyn Channel).recv(16)?;
            b.send(&[0; 40])
        });
        let err = kos_send(&mut a, &sender_seeds, 10, &mut prg, &[4; 32])
            .err()
            .unwrap();
        let _ = t.join().unwrap();
        assert!(matches!(err, Error::Protocol { .. }), "{err}");
    }
}
