//! Beaver multiplication triples over GF(2) from random OTs (Asharov–Lindell–Schneider–
//! Zohner, CCS 2013, §5: two random OTs per triple; ABY's `MT_OT`), on Venn's IKNP
//! extension, made a chunk at a time so that no more than one chunk's OT rows exist.
//!
//! A triple is `(a_P, b_P, c_P)` at each party P with `(a_0 ⊕ a_1)(b_0 ⊕ b_1) = c_0 ⊕ c_1`.
//! The cross term `a_1·b_0` comes from a random OT with party 0 as sender, messages
//! `(x_0, x_1)`, and party 1 as receiver with a random choice `u`, which gets `x_u`: with
//! `a_1 := u` and `b_0 := x_0 ⊕ x_1`, `x_u = x_0 ⊕ a_1·b_0`, so `a_1·b_0` is shared as
//! `(x_0, x_u)`. The other cross term comes from an OT in the other direction, so each
//! party is an OT sender and an OT receiver once per triple and computes
//! `c_P = a_P·b_P ⊕ x_0 (as sender) ⊕ x_u (as receiver)`.
//!
//! The OT messages are single bits: the low bit of the tweakable correlation-robust hash of
//! the IKNP rows, `x_0 = H(j, q_j)`, `x_1 = H(j, q_j ⊕ Δ)`, `x_u = H(j, t_j)`, the tweak `j`
//! numbering the OTs of a direction through the run (with the direction in its top bit).

use crate::crypto::{tccr_hash, Block, Prg, RandomOracle};
use crate::net::Channel;
use crate::ot::{MasnyRindal, ReceiverSeeds, SenderSeeds};
use crate::state::{exactly, StateReader, StateWriter};
use crate::Result;

/// OTs of each direction per chunk: 16 MiB of rows.
const CHUNK_OTS: usize = if cfg!(test) { 1 << 12 } else { 1 << 20 };

/// Bytes [`Triples::generate`] holds besides the triples while making `words` words of
/// them: a chunk's rows (q, q ⊕ Δ and t, 16 bytes an OT each) and each direction's batch
/// of rows on its way (at most 4 MiB, and its frames as much again). A memory model's
/// share for the generator: at small sets it is most of a run's memory.
pub fn working_bytes(words: usize) -> u64 {
    let ots = (words * 64).min(CHUNK_OTS) as u64;
    48 * ots + 2 * 2 * (4 << 20)
}

/// One party's halves of a run's triples, 64 to a word.
#[derive(Debug, PartialEq, Eq)]
pub struct Triples {
    pub(super) a: Vec<u64>,
    pub(super) b: Vec<u64>,
    pub(super) c: Vec<u64>,
}

impl Triples {
    /// The number of words of triples (64 triples each).
    pub fn words(&self) -> usize {
        self.a.len()
    }

    /// Makes `words · 64` triples with the peer. `leader` must be true at exactly one of
    /// the two parties (it runs its base OTs as the receiver first).
    pub fn generate(
        chan: &mut dyn Channel,
        leader: bool,
        words: usize,
        prg: &mut Prg,
        sid: &[u8; 32],
    ) -> Result<Triples> {
        let oracle = RandomOracle::new("venn/gmw/direction", sid);
        let sids = [
            oracle.hash(&[b"leader sends"]),
            oracle.hash(&[b"follower sends"]),
        ];
        let (sending, receiving) = if leader {
            let sending = SenderSeeds::new::<MasnyRindal>(chan, prg, &sids[0])?;
            (
                sending,
                ReceiverSeeds::new::<MasnyRindal>(chan, prg, &sids[1])?,
            )
        } else {
            let receiving = ReceiverSeeds::new::<MasnyRindal>(chan, prg, &sids[0])?;
            (
                SenderSeeds::new::<MasnyRindal>(chan, prg, &sids[1])?,
                receiving,
            )
        };
        // The top bit of a tweak names the direction: the leader's sending one is 0.
        let direction = |sends: bool| ((sends != leader) as u64) << 63;
        let mut t = Triples {
            a: Vec::with_capacity(words),
            b: Vec::with_capacity(words),
            c: Vec::with_capacity(words),
        };
        let mut rows = Rows::default();
        for (k, first) in (0..words * 64).step_by(CHUNK_OTS).enumerate() {
            let ots = CHUNK_OTS.min(words * 64 - first);
            let choices: Vec<u64> = (0..ots / 64).map(|_| prg.u64()).collect();
            let send = sending.segment(k as u64);
            let receive = receiving.segment(k as u64);
            let mut incoming = send.start_in(ots, false, std::mem::take(&mut rows.q));
            let mut outgoing = receive.start(ots);
            let codewords = |from: usize, u: &mut [Block]| {
                for (j, u) in (from..ots).zip(u.iter_mut()) {
                    if choices[j / 64] >> (j % 64) & 1 == 1 {
                        *u ^= Block::MAX;
                    }
                }
            };
            // Both directions at once, as many batches sent ahead of those received as the
            // channel's window holds (8 MiB at the default queue: a 1 Gbit/s link's bytes in
            // flight over 64 ms; at least one): in lockstep (a batch each way in turn) each
            // batch waited a one-way delay for the peer's, 1.2 MB/s on a 40 Mbit/s, 80 ms
            // link; within the window, neither party's sending waits for the other to stop
            // sending.
            let window = (chan.window() / outgoing.batch_bytes()).max(1);
            let mut ahead = 0;
            while !incoming.done() || !outgoing.done() {
                while !outgoing.done() && (ahead < window || incoming.done()) {
                    outgoing.send_batch(chan, &codewords)?;
                    ahead += 1;
                }
                if !incoming.done() {
                    incoming.receive_batch(chan)?;
                    ahead -= 1;
                }
            }
            let tweak = |sends| direction(sends) | first as u64;
            // As sender: x_0 and x_0 ⊕ x_1.
            let delta = send.s()[0];
            rows.q = incoming.finish();
            rows.flipped.clear();
            rows.flipped.extend(rows.q.iter().map(|q| q ^ delta));
            tccr_hash(tweak(true), &mut rows.q);
            tccr_hash(tweak(true), &mut rows.flipped);
            let x0 = low_bits(&rows.q);
            let x1 = low_bits(&rows.flipped);
            // As receiver: x_u.
            rows.t.clear();
            rows.t.resize(ots.next_multiple_of(128), 0);
            receive.replay_t().par_rows(0, &mut rows.t);
            rows.t.truncate(ots);
            tccr_hash(tweak(false), &mut rows.t);
            let xu = low_bits(&rows.t);
            for (((&a, &x0), &x1), &xu) in choices.iter().zip(&x0).zip(&x1).zip(&xu) {
                let b = x0 ^ x1;
                t.a.push(a);
                t.b.push(b);
                t.c.push(a & b ^ x0 ^ xu);
            }
        }
        Ok(t)
    }

    /// Writes the triples (for a precomputed state).
    pub fn save(&self, out: &mut StateWriter) -> Result<()> {
        [&self.a, &self.b, &self.c]
            .into_iter()
            .try_for_each(|v| out.u64s(v))
    }

    /// Reads what [`Triples::save`] wrote: exactly `words` words of each.
    pub fn load(input: &mut StateReader, words: usize) -> Result<Triples> {
        let mut read = || exactly(input.u64s(words, "triples")?, words);
        Ok(Triples {
            a: read()?,
            b: read()?,
            c: read()?,
        })
    }
}

/// Reused row buffers of a chunk.
#[derive(Default)]
struct Rows {
    q: Vec<Block>,
    flipped: Vec<Block>,
    t: Vec<Block>,
}

/// The low bit of each block, 64 to a word (the number of blocks is a multiple of 64).
fn low_bits(blocks: &[Block]) -> Vec<u64> {
    blocks
        .chunks_exact(64)
        .map(|c| c.iter().rev().fold(0, |w, &b| w << 1 | (b & 1) as u64))
        .collect()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::net::mem_pair;
    use crate::Error;
    use std::time::Duration;

    /// Both parties' triples for `words` words, made over an in-memory channel.
    pub(crate) fn triple_pair(words: usize) -> (Triples, Triples) {
        let (mut x, mut y) = mem_pair(Duration::from_secs(30));
        let sid = [7; 32];
        let follower = std::thread::spawn(move || {
            Triples::generate(&mut y, false, words, &mut Prg::from_seed(2), &sid).unwrap()
        });
        let leader = Triples::generate(&mut x, true, words, &mut Prg::from_seed(1), &sid).unwrap();
        (leader, follower.join().unwrap())
    }

    #[test]
    fn triples_multiply_and_look_random() {
        // Several chunks, the last one short.
        let words = 2 * CHUNK_OTS / 64 + 3;
        let (p, q) = triple_pair(words);
        assert_eq!((p.words(), q.words()), (words, words));
        for i in 0..words {
            let (a, b) = (p.a[i] ^ q.a[i], p.b[i] ^ q.b[i]);
            assert_eq!(a & b, p.c[i] ^ q.c[i], "word {i}");
        }
        // Each party's a and b, and the shared a and b, are about half ones.
        let ones = |v: &[u64]| v.iter().map(|w| w.count_ones() as f64).sum::<f64>();
        let bits = (words * 64) as f64;
        for v in [&p.a, &p.b, &q.a, &q.b, &p.c] {
            assert!((ones(v) / bits - 0.5).abs() < 0.02);
        }
    }

    #[test]
    fn saved_triples_load_back_and_a_wrong_count_is_refused() {
        let (p, _) = triple_pair(5);
        let mut bytes = Vec::new();
        p.save(&mut StateWriter::new(&mut bytes)).unwrap();
        let back = Triples::load(&mut StateReader::new(&mut bytes.as_slice()), 5).unwrap();
        assert_eq!(back, p);
        let wrong = Triples::load(&mut StateReader::new(&mut bytes.as_slice()), 6);
        assert!(matches!(wrong, Err(Error::State(_))));
    }
}
