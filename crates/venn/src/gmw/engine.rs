//! GMW evaluation (Goldreich–Micali–Wigderson, STOC 1987, two parties; as in ABY,
//! Demmler–Schneider–Zohner, NDSS 2015): every wire XOR-shared, XOR and NOT local, and each
//! layer of AND gates one exchange of masked bits, its triples from [`Triples`].
//!
//! **AND with a triple** `(a, b, c)`: each party opens `d = x ⊕ a` and `e = y ⊕ b`; with
//! `D`, `E` the opened values, `z = c ⊕ (D ∧ b) ⊕ (E ∧ a)`, and the leader also adds
//! `D ∧ E`. A layer's ANDs go out together; a circuit takes as many exchanges as its AND
//! depth. Triples are used a word (64) at a time, each AND's vector starting at a word.

use super::shared::Shared;
use super::triples::Triples;
use crate::crypto::{Block, Prg};
use crate::net::Channel;
use crate::{Error, Result};

/// Words of one frame of an exchange (1 MiB).
const FRAME_WORDS: usize = 1 << 17;

/// One party of a GMW evaluation.
pub struct Gmw<'a> {
    chan: &'a mut dyn Channel,
    leader: bool,
    triples: Triples,
    /// Words of triples used.
    used: usize,
}

impl<'a> Gmw<'a> {
    /// Evaluation with `triples` (made with the same `leader` as here).
    pub fn new(chan: &'a mut dyn Channel, leader: bool, triples: Triples) -> Self {
        Gmw {
            chan,
            leader,
            triples,
            used: 0,
        }
    }

    /// The channel to the peer.
    pub fn channel(&mut self) -> &mut dyn Channel {
        self.chan
    }

    /// Words of triples not yet used.
    pub fn triples_left(&self) -> usize {
        self.triples.words() - self.used
    }

    /// Shares this party's `input`: the peer's share is a PRG stream of a seed sent to it,
    /// this party's the input XOR that stream.
    pub fn share_input(&mut self, input: &Shared, prg: &mut Prg) -> Result<Shared> {
        let seed = prg.block();
        self.chan.send(&seed.to_le_bytes())?;
        let pad = stream(seed, input.len());
        Ok(input.xor(&pad))
    }

    /// This party's share of the peer's input of `len` bits ([`Gmw::share_input`]).
    pub fn peers_input(&mut self, len: usize) -> Result<Shared> {
        let mut seed = Vec::new();
        self.chan.recv_exact_into(&mut seed, 16, "input seed")?;
        let seed = Block::from_le_bytes(seed.try_into().expect("16 bytes"));
        Ok(stream(seed, len))
    }

    /// A share of the public vector `bits` (the leader holds it, the other party zeros).
    pub fn constant(&self, bits: &Shared) -> Shared {
        if self.leader {
            bits.clone()
        } else {
            Shared::zeros(bits.len())
        }
    }

    /// A share of the complement of the shared `x`.
    pub fn not(&self, x: &Shared) -> Shared {
        if self.leader {
            x.not()
        } else {
            x.clone()
        }
    }

    /// A share of `¬(x ⊕ y)`, bit by bit: which bits are equal.
    pub fn xnor(&self, x: &Shared, y: &Shared) -> Shared {
        self.not(&x.xor(y))
    }

    /// Shares of `x ∧ y` for each pair, in one exchange.
    pub fn and(&mut self, pairs: &[(&Shared, &Shared)]) -> Result<Vec<Shared>> {
        let words: usize = pairs.iter().map(|(x, _)| x.words().len()).sum();
        if words > self.triples_left() {
            return Err(Error::State(format!(
                "the circuit needs more AND gates than the offline phase made triples for \
                 ({} words left, {words} needed)",
                self.triples_left()
            )));
        }
        let t = self.used..self.used + words;
        let (a, b, c) = (
            &self.triples.a[t.clone()],
            &self.triples.b[t.clone()],
            &self.triples.c[t],
        );
        // d and e, each pair's words in turn.
        let mut mine = Vec::with_capacity(2 * words);
        let mut at = 0;
        for (x, y) in pairs {
            assert_eq!(x.len(), y.len(), "AND of vectors of different lengths");
            let n = x.words().len();
            mine.extend(x.words().iter().zip(&a[at..at + n]).map(|(x, a)| x ^ a));
            mine.extend(y.words().iter().zip(&b[at..at + n]).map(|(y, b)| y ^ b));
            at += n;
        }
        let theirs = exchange(self.chan, &mine)?;
        let mut out = Vec::with_capacity(pairs.len());
        let (mut at, mut opened) = (0, 0);
        for (x, _) in pairs {
            let n = x.words().len();
            let d = mine[opened..opened + n].iter().zip(&theirs[opened..]);
            let e = mine[opened + n..opened + 2 * n]
                .iter()
                .zip(&theirs[opened + n..]);
            let z = d
                .zip(e)
                .enumerate()
                .map(|(i, ((d0, d1), (e0, e1)))| {
                    let (d, e) = (d0 ^ d1, e0 ^ e1);
                    let k = at + i;
                    let z = c[k] ^ (d & b[k]) ^ (e & a[k]);
                    if self.leader {
                        z ^ (d & e)
                    } else {
                        z
                    }
                })
                .collect();
            out.push(Shared::from_words(z, x.len()));
            at += n;
            opened += 2 * n;
        }
        self.used += words;
        Ok(out)
    }

    /// Shares of the AND of each group's vectors (of one length within a group), by a tree
    /// of depth ⌈log₂ k⌉ for k vectors: the groups' ANDs of one depth in one exchange.
    /// `k − 1` ANDs of a vector's length a group; an empty group gives `None`.
    pub fn and_all(&mut self, mut groups: Vec<Vec<Shared>>) -> Result<Vec<Option<Shared>>> {
        while groups.iter().any(|g| g.len() > 1) {
            let pairs: Vec<(&Shared, &Shared)> = groups
                .iter()
                .flat_map(|g| g.chunks_exact(2).map(|p| (&p[0], &p[1])))
                .collect();
            let mut products = self.and(&pairs)?.into_iter();
            groups = groups
                .into_iter()
                .map(|g| {
                    let odd = (g.len() % 2 == 1).then(|| g.last().cloned()).flatten();
                    let halves = products.by_ref().take(g.len() / 2);
                    halves.chain(odd).collect()
                })
                .collect();
        }
        Ok(groups.into_iter().map(|g| g.into_iter().next()).collect())
    }

    /// Opens `x` to both parties.
    pub fn reveal(&mut self, x: &Shared) -> Result<Shared> {
        let theirs = exchange(self.chan, x.words())?;
        let words = x.words().iter().zip(&theirs).map(|(a, b)| a ^ b).collect();
        Ok(Shared::from_words(words, x.len()))
    }
}

/// `len` bits of the PRG stream of `seed`.
fn stream(seed: Block, len: usize) -> Shared {
    let mut blocks = vec![Block::ZERO; len.div_ceil(128)];
    Prg::from_seed(seed).fill_blocks(&mut blocks);
    let words = blocks
        .iter()
        .flat_map(|&b| [b.low_u64(), b.high_u64()])
        .collect();
    Shared::from_words(words, len)
}

/// Sends `mine` and receives as many words from the peer, who does the same: in frames,
/// as many ahead of those received as the channel's [`Channel::window`] holds (4 MiB at
/// the default queue; at least one), so neither party's sending can wait for the other's
/// receiving.
fn exchange(chan: &mut dyn Channel, mine: &[u64]) -> Result<Vec<u64>> {
    let frames: Vec<&[u64]> = mine.chunks(FRAME_WORDS).collect();
    let window = (chan.window() / (FRAME_WORDS * 8)).max(1);
    let mut theirs = Vec::with_capacity(mine.len());
    let (mut bytes, mut buf) = (Vec::new(), Vec::new());
    let mut send = |chan: &mut dyn Channel, frame: &[u64]| -> Result<()> {
        bytes.clear();
        bytes.extend(frame.iter().flat_map(|w| w.to_le_bytes()));
        chan.send(&bytes)
    };
    for frame in frames.iter().take(window) {
        send(chan, frame)?;
    }
    for (k, frame) in frames.iter().enumerate() {
        if let Some(next) = frames.get(k + window) {
            send(chan, next)?;
        }
        chan.recv_exact_into(&mut buf, frame.len() * 8, "masked AND inputs")?;
        theirs.extend(
            buf.chunks_exact(8)
                .map(|w| u64::from_le_bytes(w.try_into().expect("8 bytes"))),
        );
    }
    Ok(theirs)
}
