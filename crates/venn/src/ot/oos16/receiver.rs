//! The OOS16 receiver: its words encoded into the extension's rows a batch at a time,
//! then its answer to the sender's consistency check.

use super::check::{Challenge, CheckSums};
use super::column_seeds::OosReceiverSeeds;
use super::{row_of, CHECK_ROWS, COLUMNS};
use crate::crypto::{Block, Prg, RowDigest, RowHash};
use crate::net::{Channel, Reader, Writer};
use crate::ot::bch::{Bch511, Codeword, CODE_BLOCKS, DIMENSION};
use crate::ot::{ExtensionReceiver, OutgoingRows};
use crate::Result;

/// Rows of the check folded per pass over regenerated rows.
const FOLD_ROWS: usize = 1 << 12;

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
        assert!(
            words.iter().all(|w| w.as_u128() >> DIMENSION == 0),
            "76-bit words"
        );
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
    pub(super) fn encode_then(
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
            .map(|_| prg.block() & Block::low_ones(DIMENSION))
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

    pub(super) fn send_batch_then(
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
        let mut rows = vec![Block::ZERO; FOLD_ROWS * CODE_BLOCKS];
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
                    Block::ZERO
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
