//! OOS16 actively secure 1-out-of-N OT extension (Orrù–Orsini–Scholl, CT-RSA 2017) over
//! the BCH-(511, 76, 171) code: RR17's random-oracle F_encode (Fig. 2, §4 and §7). Each
//! instance j encodes one 76-bit word w_j of the receiver; the sender can then encode any
//! word in that instance, and the two encodings of w_j agree.
//!
//! On the extension core ([`ExtensionReceiver`] / [`ExtensionSender`], 512 columns):
//! the receiver sends `u_j = T⁰_j ⊕ T¹_j ⊕ C(w_j)`; the sender gets
//! `q_j = T⁰_j ⊕ (C(w_j) ∧ Δ)`. Encodings are `⟦w⟧_j = H(j, q_j ⊕ (C(w) ∧ Δ))` for the
//! sender and `⟦w_j⟧_j = H(j, T⁰_j)` for the receiver, `H` a [`RowHash`] (index and
//! session bound in).
//!
//! **The consistency check** (OOS16 §4, as libOTe runs it): the receiver appends
//! s = λ = 40 rows for random words; only once all rows are in does the sender send a
//! seed χ, expanded to bits x_j^(l); the receiver answers, for each l,
//! `t̃ = T⁰_{N+l} ⊕ ⊕_j x_j^(l)·T⁰_j` and `w̃ = w_{N+l} ⊕ ⊕_j x_j^(l)·w_j`, and the sender
//! accepts iff `q̃ ⊕ t̃ = C(w̃) ∧ Δ` for every l (by linearity an honest receiver always
//! passes). A receiver whose rows are not `T⁰ ⊕ T¹ ⊕ C(w)` fails each repetition with
//! probability ≥ 1/2 unless it guesses bits of Δ; encoding a second word in a row would
//! need `(C(w) ⊕ C(w')) ∧ Δ`, at least d − s = 131 unknown bits of Δ. Each answer is
//! masked by its own random padding row and word, so the check tells the sender nothing
//! about the words whatever χ it picks.
//!
//! The 512 column seeds must come from a malicious-secure OT ([`OosSenderSeeds::new`],
//! [`OosReceiverSeeds::new`]: KOS15 random OTs), not from IKNP.

use super::bch::{Bch511, Codeword, CODE_BLOCKS, DIMENSION, LENGTH};
use super::{
    kos_receive, kos_send, ExtensionReceiver, ExtensionSender, IncomingRows, MasnyRindal,
    OutgoingRows, ReceiverSeeds, SenderSeeds,
};
use crate::crypto::{Block, Prg, RowDigest, RowHash};
use crate::net::{Channel, Reader, Writer};
use crate::state::{exactly, StateReader, StateWriter};
use crate::util::memory::prefetch_range;
use crate::{Error, Result, STATISTICAL_SECURITY};

/// Columns of the extension (the code's 511, rounded up to whole blocks).
pub const COLUMNS: usize = 128 * CODE_BLOCKS;
/// Repetitions of the consistency check (s = λ).
pub const CHECK_ROWS: usize = STATISTICAL_SECURITY;
/// Rows of the check folded per pass over regenerated rows.
const FOLD_ROWS: usize = 1 << 12;

const _: () = assert!(LENGTH < COLUMNS && CHECK_ROWS <= 64);

/// The sender's column seeds: random choices Δ and the keys `k_i^{Δ_i}`.
pub struct OosSenderSeeds {
    delta: Vec<bool>,
    keys: Vec<Block>,
}

impl OosSenderSeeds {
    /// 512 KOS15 random OTs as their receiver, with random choices Δ (`sid` should name
    /// this direction).
    pub fn new(chan: &mut dyn Channel, prg: &mut Prg, sid: &[u8; 32]) -> Result<Self> {
        let base = ReceiverSeeds::new::<MasnyRindal>(chan, prg, sid)?;
        let delta: Vec<bool> = (0..COLUMNS).map(|_| prg.u64() & 1 == 1).collect();
        let kos = kos_receive(chan, &base, delta.clone(), prg, sid, Vec::new())?;
        let all: Vec<u32> = (0..COLUMNS as u32).collect();
        Ok(OosSenderSeeds {
            keys: kos.messages(&all),
            delta,
        })
    }

    /// Writes the seeds (for a precomputed state).
    pub fn save(&self, out: &mut StateWriter) -> Result<()> {
        out.bits(&self.delta)?;
        out.blocks(&self.keys)
    }

    /// Reads what [`OosSenderSeeds::save`] wrote.
    pub fn load(input: &mut StateReader) -> Result<Self> {
        Ok(OosSenderSeeds {
            delta: exactly(input.bits(COLUMNS, "OOS16 choices")?, COLUMNS)?,
            keys: exactly(input.blocks(COLUMNS, "OOS16 keys")?, COLUMNS)?,
        })
    }
}

/// The receiver's column seeds: both keys `(k_i^0, k_i^1)` of each column.
pub struct OosReceiverSeeds {
    keys: Vec<[Block; 2]>,
}

impl OosReceiverSeeds {
    /// 512 KOS15 random OTs as their sender (`sid` should name this direction).
    pub fn new(chan: &mut dyn Channel, prg: &mut Prg, sid: &[u8; 32]) -> Result<Self> {
        let base = SenderSeeds::new::<MasnyRindal>(chan, prg, sid)?;
        let kos = kos_send(chan, &base, COLUMNS, prg, sid)?;
        let all: Vec<u32> = (0..COLUMNS as u32).collect();
        let (mut k0, mut k1) = (Vec::new(), Vec::new());
        kos.messages(&all, false, &mut k0);
        kos.messages(&all, true, &mut k1);
        Ok(OosReceiverSeeds {
            keys: k0.into_iter().zip(k1).map(|(a, b)| [a, b]).collect(),
        })
    }

    /// Writes the seeds (for a precomputed state).
    pub fn save(&self, out: &mut StateWriter) -> Result<()> {
        out.blocks(self.keys.as_flattened())
    }

    /// Reads what [`OosReceiverSeeds::save`] wrote.
    pub fn load(input: &mut StateReader) -> Result<Self> {
        let keys = exactly(input.blocks(2 * COLUMNS, "OOS16 key pairs")?, 2 * COLUMNS)?;
        Ok(OosReceiverSeeds {
            keys: keys.chunks_exact(2).map(|k| [k[0], k[1]]).collect(),
        })
    }
}

/// A row as a codeword-sized array.
fn row_of(rows: &[Block], j: usize) -> Codeword {
    rows[j * CODE_BLOCKS..(j + 1) * CODE_BLOCKS]
        .try_into()
        .expect("one row")
}

fn xor_into(acc: &mut Codeword, row: &Codeword) {
    for (a, r) in acc.iter_mut().zip(row) {
        *a ^= r;
    }
}

/// The check's bits x_j^(l) (bit l of `bits(j)`), from the sender's seed χ.
struct Challenge {
    prg: Prg,
}

impl Challenge {
    fn new(seed: Block) -> Self {
        Challenge {
            prg: Prg::from_seed(seed),
        }
    }

    /// The bits of the next row (rows are taken in order from 0).
    fn next_row(&mut self) -> u64 {
        self.prg.u64() & ((1 << CHECK_ROWS) - 1)
    }
}

/// The check's sums `Σ_j x_j^(l) · row_j` for each l < 40, folded a row at a time with
/// the method of four Russians: a row is XORed into one of 256 buckets for each byte of its
/// 40 bits x_j (5 XORs, where XORing it into each sum its bits select takes 20 on
/// average), and each sum is gathered from the buckets at the end.
struct CheckSums<const N: usize> {
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

    fn new() -> Self {
        CheckSums {
            buckets: vec![[0; N]; 256 * Self::BYTES],
        }
    }

    /// Adds `row` to the sums whose bit is set in `x` (a receiver's row carries its word as
    /// a fifth block).
    fn fold(&mut self, row: &[Block; N], x: u64) {
        for c in 0..Self::BYTES {
            let bucket = &mut self.buckets[256 * c + (x >> (8 * c)) as usize % 256];
            for (a, r) in bucket.iter_mut().zip(row) {
                *a ^= r;
            }
        }
    }

    /// The sums, sum l for bit l.
    fn sums(&self) -> [[Block; N]; CHECK_ROWS] {
        let mut sums = [[0; N]; CHECK_ROWS];
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

/// The words an OOS16 receiver encodes, one per instance: `words[k]` in instance `at[k]`
/// and the zero word in each of the other instances below `n` — in a table of hash bins
/// most slots are empty, and their words need not be stored.
pub struct Words {
    n: usize,
    at: Vec<u32>,
    words: Vec<Block>,
}

impl Words {
    /// `words[k]` (below 2^76) in instance `at[k]` (increasing, below `n`).
    pub fn new(n: usize, at: Vec<u32>, words: Vec<Block>) -> Self {
        assert!(at.len() == words.len() && at.is_sorted_by(|a, b| a < b));
        assert!(at.last().is_none_or(|&j| (j as usize) < n));
        assert!(words.iter().all(|w| w >> DIMENSION == 0), "76-bit words");
        Words { n, at, words }
    }

    /// `words[j]` in instance j.
    pub fn dense(words: Vec<Block>) -> Self {
        Self::new(words.len(), (0..words.len() as u32).collect(), words)
    }

    /// The instances from `first` that hold a word: `(k, at[k])` for each, increasing.
    fn from(&self, first: usize) -> impl Iterator<Item = (usize, usize)> + '_ {
        let k = self.at.partition_point(|&j| (j as usize) < first);
        (k..self.at.len()).map(|k| (k, self.at[k] as usize))
    }
}

/// The OOS16 receiver of one direction.
pub struct OosReceiver {
    ext: ExtensionReceiver,
}

impl OosReceiver {
    /// The receiver of the direction these column seeds (both keys of each) were made for.
    pub fn new(seeds: &OosReceiverSeeds) -> Self {
        assert_eq!(seeds.keys.len(), COLUMNS);
        OosReceiver {
            ext: ExtensionReceiver::new(&seeds.keys),
        }
    }

    /// Encodes `words` in their instances, then answers the sender's consistency check.
    /// Returns its own encodings `⟦w_j⟧_j = H(j, T⁰_j)` of the instances j that hold a
    /// word, in order: computed while the check regenerates the rows, which are not
    /// stored.
    pub fn encode(
        &self,
        chan: &mut dyn Channel,
        words: Words,
        prg: &mut Prg,
        hash: &RowHash,
    ) -> Result<Vec<RowDigest>> {
        self.encode_then(chan, words, prg, hash, |_, _| {})
    }

    /// [`Self::encode`], with `then(first_row, rows)` applied to each chunk of corrections
    /// before it is sent (tests play cheating receivers with it).
    fn encode_then(
        &self,
        chan: &mut dyn Channel,
        words: Words,
        prg: &mut Prg,
        hash: &RowHash,
        then: impl Fn(usize, &mut [Block]) + Sync,
    ) -> Result<Vec<RowDigest>> {
        let mut encoding = self.start(words, prg);
        while !encoding.done() {
            encoding.send_batch_then(chan, &then)?;
        }
        encoding.prove(chan, hash)
    }

    /// Starts encoding `words` in their instances: the corrections then go out a batch
    /// at a time ([`OosEncoding::send_batch`]), then [`OosEncoding::prove`] answers the
    /// check.
    pub fn start(&self, words: Words, prg: &mut Prg) -> OosEncoding<'_> {
        let padding = (0..CHECK_ROWS)
            .map(|_| prg.block() & ((1 << DIMENSION) - 1))
            .collect();
        OosEncoding {
            ext: &self.ext,
            rows: self.ext.start(words.n + CHECK_ROWS),
            words,
            padding,
        }
    }
}

/// An OOS16 receiver's encoding in progress ([`OosReceiver::start`]).
pub struct OosEncoding<'a> {
    ext: &'a ExtensionReceiver,
    rows: OutgoingRows<'a>,
    words: Words,
    /// The check's padding words, in the instances after the words'.
    padding: Vec<Block>,
}

impl OosEncoding<'_> {
    /// Whether every correction has been sent.
    pub fn done(&self) -> bool {
        self.rows.done()
    }

    /// Computes the next batch of corrections `u_j = T⁰_j ⊕ T¹_j ⊕ C(w_j)` and queues it.
    pub fn send_batch(&mut self, chan: &mut dyn Channel) -> Result<()> {
        self.send_batch_then(chan, &|_, _| {})
    }

    fn send_batch_then(
        &mut self,
        chan: &mut dyn Channel,
        then: &(impl Fn(usize, &mut [Block]) + Sync),
    ) -> Result<()> {
        let (words, padding, code) = (&self.words, &self.padding, Bch511::get());
        self.rows.send_batch(chan, &|first, rows: &mut [Block]| {
            let end = first + rows.len() / CODE_BLOCKS;
            let mut add = |j: usize, w: Block| {
                let row = &mut rows[(j - first) * CODE_BLOCKS..][..CODE_BLOCKS];
                for (x, c) in row.iter_mut().zip(code.encode(w)) {
                    *x ^= c;
                }
            };
            // The words' instances among these rows, then the padding's (C(0) = 0 in
            // the others).
            for (k, j) in words.from(first).take_while(|&(_, j)| j < end) {
                add(j, words.words[k]);
            }
            for (j, &w) in (words.n..).zip(padding) {
                if (first..end).contains(&j) {
                    add(j, w);
                }
            }
            then(first, rows);
        })
    }

    /// Once every correction is sent: takes the sender's seed and answers the check.
    /// Returns the encodings of the instances that hold a word, as [`OosReceiver::encode`]
    /// does.
    pub fn prove(self, chan: &mut dyn Channel, hash: &RowHash) -> Result<Vec<RowDigest>> {
        assert!(self.done(), "every correction sent");
        let (n, words) = (self.words.n, &self.words);
        let seed = Reader::new(
            &chan.recv_exact(16, "OOS16 check seed")?,
            "OOS16 check seed",
        )
        .block()?;
        let t = self.ext.replay_t();
        let mut challenge = Challenge::new(seed);
        // Row and word together: four blocks of T⁰_j, then w_j.
        let mut sums = CheckSums::new();
        let mut rows = vec![0; FOLD_ROWS * CODE_BLOCKS];
        let mut outputs = Vec::with_capacity(words.at.len());
        let (mut todo, mut next) = (&words.at[..], 0);
        let total = n + CHECK_ROWS;
        for first in (0..total).step_by(FOLD_ROWS) {
            let len = (total - first).min(FOLD_ROWS);
            t.rows(first, &mut rows[..len.next_multiple_of(128) * CODE_BLOCKS]);
            for r in 0..len {
                let (j, row) = (first + r, row_of(&rows, r));
                let w = if j >= n {
                    self.padding[j - n]
                } else if words.at.get(next) == Some(&(j as u32)) {
                    next += 1;
                    words.words[next - 1]
                } else {
                    0
                };
                let both: [Block; CODE_BLOCKS + 1] =
                    std::array::from_fn(|b| if b < CODE_BLOCKS { row[b] } else { w });
                if j < n {
                    sums.fold(&both, challenge.next_row());
                } else {
                    sums.fold(&both, 1 << (j - n));
                }
            }
            let k = todo.partition_point(|&i| (i as usize) < first + len);
            let picked: Vec<Codeword> = todo[..k]
                .iter()
                .map(|&i| row_of(&rows, i as usize - first))
                .collect();
            hash.hash(&picked, |e| todo[e] as u64, &mut outputs);
            todo = &todo[k..];
        }
        let mut proof = Writer::new();
        for b in sums.sums().as_flattened() {
            proof = proof.block(*b);
        }
        chan.send(&proof.0)?;
        Ok(outputs)
    }
}

/// The OOS16 sender of one direction.
pub struct OosSender {
    ext: ExtensionSender,
}

/// What the sender keeps: its rows `q_j` and Δ, to encode any word in any instance.
pub struct OosRows {
    q: Vec<Block>,
    delta: Codeword,
    n: usize,
}

impl OosSender {
    /// The sender of the direction these column seeds (Δ and its keys) were made for.
    pub fn new(seeds: &OosSenderSeeds) -> Self {
        assert_eq!(seeds.keys.len(), COLUMNS);
        OosSender {
            ext: ExtensionSender::new(&seeds.keys, &seeds.delta),
        }
    }

    /// Receives the corrections of `n` instances and runs the consistency check; a
    /// receiver whose rows do not each encode one word is caught here
    /// ([`Error::CheatingDetected`]).
    pub fn receive(&self, chan: &mut dyn Channel, n: usize, prg: &mut Prg) -> Result<OosRows> {
        let mut incoming = self.start(n, true);
        while !incoming.done() {
            incoming.receive_batch(chan)?;
        }
        incoming.challenge(chan, prg)?.verify(chan)
    }

    /// Starts receiving the corrections of `n` instances a batch at a time
    /// ([`OosIncoming::receive_batch`]; `ahead` as for [`ExtensionSender::start`]); then
    /// [`OosIncoming::challenge`] and [`OosChallenge::verify`] run the check.
    pub fn start(&self, n: usize, ahead: bool) -> OosIncoming<'_> {
        OosIncoming {
            rows: self.ext.start(n + CHECK_ROWS, ahead),
            delta: self.ext.s().try_into().expect("512 columns"),
            n,
        }
    }
}

/// An OOS16 sender's instances being received ([`OosSender::start`]).
pub struct OosIncoming<'a> {
    rows: IncomingRows<'a>,
    delta: Codeword,
    /// Instances (without the check's rows).
    n: usize,
}

impl OosIncoming<'_> {
    /// Whether every row (the check's included) is in.
    pub fn done(&self) -> bool {
        self.rows.done()
    }

    /// Receives the next batch of corrections.
    pub fn receive_batch(&mut self, chan: &mut dyn Channel) -> Result<()> {
        self.rows.receive_batch(chan)
    }

    /// Once every row is in: sends the check's seed (only now, so the receiver's rows
    /// cannot depend on it).
    pub fn challenge(self, chan: &mut dyn Channel, prg: &mut Prg) -> Result<OosChallenge> {
        assert!(self.done(), "the seed goes out only after every row is in");
        let seed = prg.block();
        chan.send(&Writer::new().block(seed).0)?;
        Ok(OosChallenge {
            q: self.rows.finish(),
            delta: self.delta,
            n: self.n,
            seed,
        })
    }
}

/// The sender's side of the check, its seed sent ([`OosIncoming::challenge`]).
pub struct OosChallenge {
    q: Vec<Block>,
    delta: Codeword,
    n: usize,
    seed: Block,
}

impl OosChallenge {
    /// Folds the sender's side of the check (it needs only her rows and the seed, so it
    /// runs while the receiver folds his), then takes the proof and checks it.
    pub fn verify(self, chan: &mut dyn Channel) -> Result<OosRows> {
        let OosChallenge {
            mut q,
            delta,
            n,
            seed,
        } = self;
        let mut challenge = Challenge::new(seed);
        let mut q_sums = CheckSums::new();
        for j in 0..n {
            q_sums.fold(&row_of(&q, j), challenge.next_row());
        }
        let len = CHECK_ROWS * (CODE_BLOCKS + 1) * 16;
        let proof = chan.recv_exact(len, "OOS16 check")?;
        let mut r = Reader::new(&proof, "OOS16 check");
        let code = Bch511::get();
        for (l, q_sum) in q_sums.sums().iter_mut().enumerate() {
            xor_into(q_sum, &row_of(&q, n + l));
            let mut t: Codeword = [0; CODE_BLOCKS];
            for b in t.iter_mut() {
                *b = r.block()?;
            }
            let w = r.block()?;
            let expected = code.encode(w & ((1 << DIMENSION) - 1));
            let consistent = w >> DIMENSION == 0
                && (0..CODE_BLOCKS).all(|b| q_sum[b] ^ t[b] == expected[b] & delta[b]);
            if !consistent {
                return Err(Error::CheatingDetected(
                    "OOS16 consistency check failed: the receiver's rows do not each encode one word"
                        .into(),
                ));
            }
        }
        r.finish()?;
        q.truncate(n * CODE_BLOCKS);
        Ok(OosRows { q, delta, n })
    }
}

/// Both directions of a dual execution at once (RR17 Fig. 4 step 3; spec §4.3 N2 and N4,
/// "concurrently"): encodes this party's words as the receiver of one extension
/// (`encoding`) while taking the peer's instances as the sender of the other
/// (`incoming`), a batch of each in turn, so that neither party waits for the other's
/// direction; then both checks. The peer runs the same with the two extensions' roles
/// swapped. Returns this party's encodings of its words (as [`OosReceiver::encode`]) and
/// the peer's checked rows. The peer's rows are used for
/// nothing before its check has passed, and this party's words were fixed before any of
/// the peer's rows arrived.
pub fn both_ways(
    chan: &mut dyn Channel,
    mut encoding: OosEncoding,
    mut incoming: OosIncoming,
    prg: &mut Prg,
    hash: &RowHash,
) -> Result<(Vec<RowDigest>, OosRows)> {
    while !encoding.done() || !incoming.done() {
        if !encoding.done() {
            encoding.send_batch(chan)?;
        }
        if !incoming.done() {
            incoming.receive_batch(chan)?;
        }
    }
    let challenge = incoming.challenge(chan, prg)?;
    let own = encoding.prove(chan, hash)?;
    Ok((own, challenge.verify(chan)?))
}

impl OosRows {
    /// The number of instances.
    pub fn len(&self) -> usize {
        self.n
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// Frees the rows of the instances from `from` on: a caller done with them gets their
    /// memory back. (The rows are one large allocation, which glibc shrinks in place with
    /// `mremap`; an allocator that moved it would copy the rows that remain.)
    pub fn release(&mut self, from: usize) {
        if from < self.n {
            self.n = from;
            self.q.truncate(from * CODE_BLOCKS);
            self.q.shrink_to_fit();
        }
    }

    /// The encodings of each of `words` (each below 2^76) in each of the `count` instances
    /// from `first`: `out[j·words.len() + k] = ⟦words[k]⟧_{first + j} =
    /// H(first + j, q ⊕ (C(words[k]) ∧ Δ))`, appended to `out`. (A bin's rows against the
    /// bin's items: each codeword is computed once.)
    pub fn encode(
        &self,
        hash: &RowHash,
        first: usize,
        count: usize,
        words: &[Block],
        out: &mut Vec<RowDigest>,
    ) {
        assert!(first + count <= self.n);
        let code = Bch511::get();
        let masked: Vec<Codeword> = words
            .iter()
            .map(|&w| {
                let c = code.encode(w);
                std::array::from_fn(|b| c[b] & self.delta[b])
            })
            .collect();
        let rows: Vec<Codeword> = (first..first + count)
            .flat_map(|j| {
                let q = row_of(&self.q, j);
                masked
                    .iter()
                    .map(move |m| std::array::from_fn(|b| q[b] ^ m[b]))
            })
            .collect();
        let per = words.len();
        hash.hash(&rows, |e| (first + e / per) as u64, out);
    }

    /// Starts loading the rows of the instances `first..first + count`.
    pub fn prefetch(&self, first: usize, count: usize) {
        prefetch_range(&self.q[first * CODE_BLOCKS..(first + count) * CODE_BLOCKS]);
    }

    /// The encodings of `word` (below 2^76) in the `count` instances from `first`:
    /// `⟦word⟧_{first + j}` appended to `out` for each j. (One item in each of a bin's
    /// rows.)
    pub fn encode_word(
        &self,
        hash: &RowHash,
        first: usize,
        count: usize,
        word: Block,
        out: &mut Vec<RowDigest>,
    ) {
        assert!(first + count <= self.n);
        let c = Bch511::get().encode(word);
        let masked: Codeword = std::array::from_fn(|b| c[b] & self.delta[b]);
        const LANES: usize = RowHash::LANES;
        let mut rows = [[0; CODE_BLOCKS]; LANES];
        for at in (first..first + count).step_by(LANES) {
            let len = (first + count - at).min(LANES);
            for (l, row) in rows[..len].iter_mut().enumerate() {
                let q = row_of(&self.q, at + l);
                *row = std::array::from_fn(|b| q[b] ^ masked[b]);
            }
            hash.hash(&rows[..len], |e| (at + e) as u64, out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::mem_pair;
    use std::time::Duration;

    /// Seeds for both sides without running OTs.
    fn seeds(prg: &mut Prg) -> (OosSenderSeeds, OosReceiverSeeds) {
        let (delta, keys, pairs) = super::super::seeds::test_columns(prg, COLUMNS);
        (
            OosSenderSeeds { delta, keys },
            OosReceiverSeeds { keys: pairs },
        )
    }

    fn words(prg: &mut Prg, n: usize) -> Vec<Block> {
        (0..n)
            .map(|_| prg.block() & ((1 << DIMENSION) - 1))
            .collect()
    }

    fn test_hash() -> RowHash {
        RowHash::new("test", b"sid")
    }

    /// What a cheating receiver does to a chunk of its corrections (first row, rows).
    type Tamper = dyn Fn(usize, &mut [Block]) + Send + Sync;
    /// What one party of [`both_ways_run`] got: its row digests and its rows.
    type BothWays = Result<(Vec<RowDigest>, OosRows)>;

    /// Runs one direction; `cheat` may change the receiver's corrections before they are
    /// sent (it then answers the check as for its words). Returns the sender's rows and the
    /// receiver's encodings of the instances that hold a word (under [`test_hash`]).
    fn run(
        n: usize,
        receiver_words: Words,
        cheat: Option<Box<Tamper>>,
    ) -> (Result<OosRows>, Vec<RowDigest>) {
        let mut prg = Prg::from_seed(3);
        let (s, r) = seeds(&mut prg);
        let (mut a, mut b) = mem_pair(Duration::from_secs(20));
        let t = std::thread::spawn(move || {
            let receiver = OosReceiver::new(&r);
            let mut prg = Prg::from_seed(4);
            let (w, h) = (receiver_words, &test_hash());
            match cheat {
                None => receiver.encode(&mut b, w, &mut prg, h),
                Some(cheat) => receiver.encode_then(&mut b, w, &mut prg, h, cheat),
            }
        });
        let rows = OosSender::new(&s).receive(&mut a, n, &mut Prg::from_seed(5));
        drop(a);
        let encoded = t.join().unwrap();
        (rows, encoded.expect("the receiver finishes"))
    }

    #[test]
    fn both_sides_agree_on_the_receivers_words_and_only_on_them() {
        let n = 5000;
        let mut prg = Prg::from_seed(9);
        let w = words(&mut prg, n);
        let (rows, mine) = run(n, Words::dense(w.clone()), None);
        let rows = rows.expect("an honest receiver passes the check");
        let hash = test_hash();
        for j in [0, 1, 127, 128, 4095, 4096, n - 1] {
            let mut theirs = Vec::new();
            rows.encode(&hash, j, 1, &[w[j], w[j] ^ 1, w[(j + 1) % n]], &mut theirs);
            assert_eq!(theirs[0], mine[j], "instance {j}: the receiver's word");
            assert_ne!(theirs[1], mine[j], "instance {j}: another word");
            assert_ne!(theirs[2], mine[j], "instance {j}: another word");
        }
        // The index is bound in: equal rows in two instances give different encodings.
        let mut a = Vec::new();
        hash.hash(&[[7; CODE_BLOCKS]; 2], |e| e as u64 + 1, &mut a);
        assert_ne!(a[0], a[1]);
        // Several instances at once: instance-major, then word.
        let mut many = Vec::new();
        rows.encode(&hash, 10, 3, &[w[10], w[11], w[12]], &mut many);
        assert_eq!([many[0], many[4], many[8]], [mine[10], mine[11], mine[12]]);
        // One word in a run of instances longer than a batch of hashes.
        let mut one = Vec::new();
        rows.encode_word(&hash, 3, 11, w[12], &mut one);
        assert_eq!(one.len(), 11);
        assert_eq!(one[9], mine[12]);
        let mut each = Vec::new();
        rows.encode(&hash, 3, 11, &[w[12]], &mut each);
        assert_eq!(one, each);
        // Rows freed from an instance on give their memory back and leave the others as
        // they were.
        let mut rows = rows;
        rows.release(n + 1);
        assert_eq!(rows.len(), n);
        rows.release(4097);
        assert_eq!(rows.len(), 4097);
        assert_eq!(rows.q.capacity(), 4097 * CODE_BLOCKS);
        for j in [0, 4095, 4096] {
            let mut theirs = Vec::new();
            rows.encode(&hash, j, 1, &[w[j]], &mut theirs);
            assert_eq!(theirs[0], mine[j], "instance {j} after a release");
        }
    }

    #[test]
    fn instances_without_a_word_hold_the_zero_word() {
        // Words in a few instances, across batch and fold boundaries; the rest hold 0.
        let n = 9000;
        let at: Vec<u32> = vec![0, 5, 127, 128, 4095, 4096, 8191, 8192, 8999];
        let mut prg = Prg::from_seed(13);
        let w = words(&mut prg, at.len());
        let (rows, mine) = run(n, Words::new(n, at.clone(), w.clone()), None);
        let rows = rows.expect("an honest receiver passes the check");
        assert_eq!(mine.len(), at.len(), "an encoding for each word");
        let hash = test_hash();
        for (k, &j) in at.iter().enumerate() {
            let mut theirs = Vec::new();
            rows.encode(&hash, j as usize, 1, &[w[k], 0], &mut theirs);
            assert_eq!(theirs[0], mine[k], "instance {j}");
            assert_ne!(theirs[1], mine[k], "instance {j}");
        }
        // An empty instance holds the zero word: the same seeds and receiver coins with
        // dense zero words give the same receiver rows T⁰_j, so the sender's encoding of 0
        // there is the dense receiver's own encoding.
        let (_, zeros) = run(n, Words::dense(vec![0; n]), None);
        for j in [1, 126, 129, 4097, 8998] {
            let mut theirs = Vec::new();
            rows.encode(&hash, j, 1, &[0, w[0]], &mut theirs);
            assert_eq!(theirs[0], zeros[j], "instance {j}");
            assert_ne!(theirs[1], zeros[j], "instance {j}");
        }
    }

    /// Two parties running [`both_ways`] against each other, each the receiver of one
    /// extension and the sender of the other, with unequal instance counts; `cheat` may
    /// change the second party's corrections. Returns what each party got.
    fn both_ways_run(words: [Vec<Block>; 2], cheat: Option<Box<Tamper>>) -> [BothWays; 2] {
        let mut prg = Prg::from_seed(20);
        let (s_ab, r_ab) = seeds(&mut prg);
        let (s_ba, r_ba) = seeds(&mut prg);
        let (mut a, mut b) = mem_pair(Duration::from_secs(20));
        let [wa, wb] = words;
        let (na, nb) = (wa.len(), wb.len());
        let t = std::thread::spawn(move || {
            // Party b: receiver of b→a (its words wb), sender of a→b (na instances).
            let (receiver, sender) = (OosReceiver::new(&r_ba), OosSender::new(&s_ab));
            let mut prg = Prg::from_seed(22);
            let mut encoding = receiver.start(Words::dense(wb), &mut prg);
            let incoming = sender.start(na, false);
            if let Some(cheat) = cheat {
                while !encoding.done() {
                    encoding.send_batch_then(&mut b, &cheat)?;
                }
            }
            both_ways(&mut b, encoding, incoming, &mut prg, &test_hash())
        });
        let (receiver, sender) = (OosReceiver::new(&r_ab), OosSender::new(&s_ba));
        let mut prg = Prg::from_seed(21);
        let encoding = receiver.start(Words::dense(wa), &mut prg);
        let incoming = sender.start(nb, false);
        let first = both_ways(&mut a, encoding, incoming, &mut prg, &test_hash());
        drop(a);
        [first, t.join().unwrap()]
    }

    #[test]
    fn both_ways_agree_in_each_direction() {
        // Unequal counts; with the check's 40 rows, 8192 rows are whole batches and
        // 8320 one row block past them.
        for (na, nb) in [(9000, 5000), (8192 - CHECK_ROWS, 8320 - CHECK_ROWS)] {
            let mut prg = Prg::from_seed(23);
            let (wa, wb) = (words(&mut prg, na), words(&mut prg, nb));
            let [a, b] = both_ways_run([wa.clone(), wb.clone()], None);
            let ((mine_a, rows_from_b), (mine_b, rows_from_a)) = (a.unwrap(), b.unwrap());
            assert_eq!((rows_from_a.len(), rows_from_b.len()), (na, nb));
            let hash = test_hash();
            for (mine, rows, w) in [(&mine_a, &rows_from_a, &wa), (&mine_b, &rows_from_b, &wb)] {
                for j in 0..w.len() {
                    let mut theirs = Vec::new();
                    rows.encode(&hash, j, 1, &[w[j], w[j] ^ 1], &mut theirs);
                    assert_eq!(theirs[0], mine[j], "instance {j}");
                    assert_ne!(theirs[1], mine[j], "instance {j}: another word");
                }
            }
        }
    }

    #[test]
    fn both_ways_catch_a_cheating_receiver() {
        let mut prg = Prg::from_seed(24);
        let (wa, wb) = (words(&mut prg, 5000), words(&mut prg, 5000));
        let flip = |first: usize, rows: &mut [Block]| {
            if first == 4096 {
                rows[3 * CODE_BLOCKS + 1] ^= (u64::MAX as Block) << 30;
            }
        };
        let [a, _] = both_ways_run([wa, wb], Some(Box::new(flip)));
        assert!(
            matches!(a, Err(Error::CheatingDetected(_))),
            "{:?}",
            a.err()
        );
    }

    #[test]
    fn a_receiver_whose_rows_encode_no_codeword_is_caught() {
        let n = 3000;
        let mut prg = Prg::from_seed(10);
        let w = words(&mut prg, n);
        // 64 bits flipped in one row: that row is T⁰ ⊕ T¹ ⊕ (a non-codeword). (A flip
        // where Δ is 0 changes nothing for the sender, so one bit would go unseen half the
        // time; 64 go unseen only if all 64 bits of Δ there are 0.)
        let flip = |first: usize, rows: &mut [Block]| {
            if (first..first + rows.len() / CODE_BLOCKS).contains(&1234) {
                rows[(1234 - first) * CODE_BLOCKS + 2] ^= (u64::MAX as Block) << 40;
            }
        };
        let (rows, _) = run(n, Words::dense(w), Some(Box::new(flip)));
        assert!(
            matches!(rows, Err(Error::CheatingDetected(_))),
            "{:?}",
            rows.err()
        );
    }

    #[test]
    fn a_receiver_that_encodes_another_word_than_it_claims_is_caught() {
        let n = 3000;
        let mut prg = Prg::from_seed(11);
        let w = words(&mut prg, n);
        // Row 17 carries C(w ⊕ 5) although the check is answered for w: rows and
        // answers disagree by a codeword.
        let other = Bch511::get().encode(5);
        let swap = move |first: usize, rows: &mut [Block]| {
            if first == 0 {
                for (x, c) in rows[17 * CODE_BLOCKS..18 * CODE_BLOCKS]
                    .iter_mut()
                    .zip(other)
                {
                    *x ^= c;
                }
            }
        };
        let (rows, _) = run(n, Words::dense(w), Some(Box::new(swap)));
        assert!(matches!(rows, Err(Error::CheatingDetected(_))));
    }

    /// Spec §9 test 5: the verifier picks the check's seed, so a malicious one may pick
    /// any (here the zero seed). The proof stays independent of the receiver's words: each
    /// answer carries one padding row, fresh and uniform, with coefficient exactly one, so
    /// `w̃_l = Σ_j x_j^(l)·w_j ⊕ w_{n+l}` — for all-zero words the padding word itself.
    #[test]
    fn the_proof_is_masked_by_a_fresh_padding_row_whatever_the_seed() {
        let n = 1000;
        for zero_words in [true, false] {
            let mut prg = Prg::from_seed(12);
            let w = match zero_words {
                true => vec![0; n],
                false => words(&mut prg, n),
            };
            let (s, r) = seeds(&mut prg);
            let (mut a, mut b) = mem_pair(Duration::from_secs(20));
            // All-zero words as a table with no item in it.
            let words = match zero_words {
                true => Words::new(n, Vec::new(), Vec::new()),
                false => Words::dense(w.clone()),
            };
            let t = std::thread::spawn(move || {
                let mut prg = Prg::from_seed(4);
                OosReceiver::new(&r).encode(&mut b, words, &mut prg, &test_hash())
            });
            let verifier: &mut dyn Channel = &mut a;
            OosSender::new(&s)
                .ext
                .extend(verifier, n + CHECK_ROWS, |_| {})
                .unwrap();
            verifier.send(&Writer::new().block(0).0).unwrap();
            let len = CHECK_ROWS * (CODE_BLOCKS + 1) * 16;
            let proof = verifier.recv_exact(len, "proof").unwrap();
            t.join().unwrap().unwrap();
            // The receiver's padding words are the first draws of its PRG.
            let mut padding_prg = Prg::from_seed(4);
            let padding: Vec<Block> = (0..CHECK_ROWS)
                .map(|_| padding_prg.block() & ((1 << DIMENSION) - 1))
                .collect();
            let mut sums = [0 as Block; CHECK_ROWS];
            let mut challenge = Challenge::new(0);
            for &w in &w {
                let x = challenge.next_row();
                for (l, sum) in sums.iter_mut().enumerate() {
                    if x >> l & 1 == 1 {
                        *sum ^= w;
                    }
                }
            }
            let mut r = Reader::new(&proof, "proof");
            for l in 0..CHECK_ROWS {
                for _ in 0..CODE_BLOCKS {
                    r.block().unwrap();
                }
                let answer = r.block().unwrap();
                assert_eq!(answer, sums[l] ^ padding[l], "answer {l}");
                if zero_words {
                    assert_eq!(answer, padding[l], "answer {l} is the padding word");
                }
            }
            assert!(padding.iter().all(|&p| p != 0));
        }
    }

    #[test]
    fn seeds_from_kos15_make_a_working_extension() {
        let (mut a, mut b) = mem_pair(Duration::from_secs(30));
        let t = std::thread::spawn(move || {
            let mut prg = Prg::from_seed(1);
            let seeds = OosReceiverSeeds::new(&mut b, &mut prg, &[7; 32]).unwrap();
            let w = Words::dense(vec![1, 2, 3]);
            OosReceiver::new(&seeds)
                .encode(&mut b, w, &mut prg, &RowHash::new("t", b""))
                .unwrap()
        });
        let mut prg = Prg::from_seed(2);
        let seeds = OosSenderSeeds::new(&mut a, &mut prg, &[7; 32]).unwrap();
        let rows = OosSender::new(&seeds).receive(&mut a, 3, &mut prg).unwrap();
        let mine = t.join().unwrap();
        let hash = RowHash::new("t", b"");
        for (j, m) in mine.iter().enumerate() {
            let mut theirs = Vec::new();
            rows.encode(&hash, j, 1, &[j as Block + 1], &mut theirs);
            assert_eq!(&theirs[0], m);
        }
    }
}
