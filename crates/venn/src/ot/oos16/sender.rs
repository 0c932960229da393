//! The OOS16 sender: the receiver's rows taken in, the consistency check run on them, and
//! what it keeps to encode any word in any instance.

use super::check::{Challenge, CheckSums};
use super::column_seeds::OosSenderSeeds;
use super::{row_of, CHECK_ROWS, COLUMNS};
use crate::crypto::{Block, Prg, RowDigest, RowHash};
use crate::net::{Channel, Reader, Writer};
use crate::ot::bch::{Bch511, Codeword, CODE_BLOCKS, DIMENSION};
use crate::ot::{ExtensionSender, IncomingRows};
use crate::util::memory::prefetch_range;
use crate::{Error, Result};

/// The OOS16 sender of one direction.
pub struct OosSender {
    pub(super) ext: ExtensionSender,
}

/// What the sender keeps: its rows `q_j` and Δ, to encode any word in any instance.
pub struct OosRows {
    pub(super) q: Vec<Block>,
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
    /// Folds the sender's side of the check (it needs only its rows and the seed, so it
    /// runs while the receiver folds its own), then takes the proof and checks it.
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
            let mut t: Codeword = [Block::ZERO; CODE_BLOCKS];
            for b in t.iter_mut() {
                *b = r.block()?;
            }
            let w = r.block()?;
            let expected = code.encode(w & Block::low_ones(DIMENSION));
            let consistent = w.as_u128() >> DIMENSION == 0
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
        let mut rows = [[Block::ZERO; CODE_BLOCKS]; LANES];
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

fn xor_into(acc: &mut Codeword, row: &Codeword) {
    for (a, r) in acc.iter_mut().zip(row) {
        *a ^= r;
    }
}
