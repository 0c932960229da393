//! Beaver multiplication triples over GF(2) from random OTs (Asharov–Lindell–Schneider–
//! Zohner, CCS 2013, §5: two random OTs per triple; ABY's `MT_OT`), made a chunk at a time
//! so that no more than one chunk's OTs exist; the OTs from silent correlated OT
//! ([`crate::vole::cot`]; RR22 §5 and volePSI take their circuit's triples so) or from
//! Venn's IKNP extension ([`Source`]).
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
//! the correlated OTs (IKNP's rows, or a silent COT's values), `x_0 = H(j, q_j)`,
//! `x_1 = H(j, q_j ⊕ Δ)`, `x_u = H(j, t_j)`, the tweak `j` numbering the OTs of a direction
//! through the run (with the direction in its top bit).
//!
//! Traffic a triple: IKNP, 256 bits (a 128-bit row each way); silent OT, 2.8 bits (1.4 an
//! OT, one each way: a chunk's half-trees, one block a level, [`crate::vole::cot`]; their
//! correlated OTs, past the first chunks', from earlier chunks' outputs).

use crate::crypto::{tccr_hash, Block, Prg, RandomOracle};
use crate::net::Channel;
use crate::options::Offline;
use crate::ot::{
    iknp_receive_correlated, iknp_send_correlated, MasnyRindal, ReceiverSeeds, SenderSeeds,
};
use crate::state::{exactly, StateReader, StateWriter};
use crate::vole::{cot, Pair};
use crate::Result;

/// Where the OTs under the triples come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// Silent correlated OT: a chunk of a million OTs costs its PPRFs' few hundred
    /// kilobytes.
    SilentOt,
    /// IKNP OT extension, as ABY: 256 bits a triple.
    Iknp,
}

impl Source {
    /// The source `--offline` names: IKNP for `iknp`, silent OT otherwise.
    pub fn of(offline: Offline) -> Source {
        match offline {
            Offline::Iknp => Source::Iknp,
            _ => Source::SilentOt,
        }
    }

    /// OTs of each direction per chunk: IKNP's 16 MiB of rows, or a pair of silent COTs
    /// whose noise (twice the outputs, 32 bytes a position) is 8 MiB. A COT's fixed cost
    /// is its t = 128 half-trees of depth h, t·h blocks sent and t·h correlated OTs kept
    /// back from an earlier chunk: 1.4 bits an OT at 2^17 (h = 11); larger chunks would
    /// send less, but their code's random reads slow as its parity half (4 MiB here)
    /// outgrows the caches. Measured on psww18-ca (2^4 and 2^16 items, against IKNP in the
    /// same sitting: BENCHMARKS.md): 2^17 is 10–25% faster than 2^19 and 2^18, and 2^16 no
    /// faster.
    fn chunk(self) -> usize {
        match (self, cfg!(test)) {
            (_, true) => 1 << 12,
            (Source::Iknp, false) => 1 << 20,
            (Source::SilentOt, false) => 1 << 17,
        }
    }
}

/// Bytes [`Triples::generate`] holds besides the triples while making `words` words of
/// them: a chunk's OTs (q, q ⊕ Δ and t, 16 bytes an OT each; for silent COTs also the
/// noise of the chunks in flight, 64 bytes an OT, and the trees' correlated OTs of the
/// chunks IKNP feeds and of those kept back for later chunks, under 48 bytes each) and
/// each direction's batch of rows on its way (at most 4 MiB, and its frames as much
/// again). A memory model's share for the generator: at small sets it is most of a run's
/// memory.
pub fn working_bytes(words: usize, source: Source) -> u64 {
    let ots = (words * 64).min(source.chunk()) as u64;
    let silent = match source {
        Source::Iknp => 0,
        Source::SilentOt => {
            let chunks = (words * 64).div_ceil(source.chunk()) as u64;
            let in_flight = chunks.min(AHEAD as u64 + 1);
            let tree_ots =
                2 * chunks.min(FED_BY_IKNP as u64) * cot::ots_needed(ots as usize) as u64;
            64 * ots * in_flight + 48 * tree_ots
        }
    };
    48 * ots + silent + 2 * 2 * (4 << 20)
}

/// Random OTs of 128-bit messages made beside a run's triples ([`Triples::generate`]), one
/// set each way: as their sender this party's two messages of each, as their receiver its
/// choice and the message it got. Each message is the tweakable hash of a correlated OT,
/// as a triple's are, whole.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct RandomOts {
    /// As their sender: both messages of each OT.
    pub sent: Vec<[Block; 2]>,
    /// As their receiver: the choice bit of each OT.
    pub choices: Vec<bool>,
    /// As their receiver: the message each choice picked.
    pub received: Vec<Block>,
}

/// One party's halves of a run's triples, 64 to a word.
#[derive(Debug, PartialEq, Eq)]
pub struct Triples {
    pub(super) a: Vec<u64>,
    pub(super) b: Vec<u64>,
    pub(super) c: Vec<u64>,
}

/// One party's OTs of a chunk: as sender the hashes of `q` and `q ⊕ Δ`, as receiver its
/// choices and the hashes of `t`.
struct ChunkOts<'a> {
    x0: &'a mut [Block],
    x1: &'a mut [Block],
    choices: &'a [u64],
    xu: &'a mut [Block],
}

impl Triples {
    /// The number of words of triples (64 triples each).
    pub fn words(&self) -> usize {
        self.a.len()
    }

    /// Makes `words · 64` triples with the peer from OTs of `source`, and `extra` random
    /// OTs each way from the same extension. `leader` must be true at exactly one of the
    /// two parties (it runs its base OTs as the receiver, and sends its OTs, first).
    pub fn generate(
        chan: &mut dyn Channel,
        leader: bool,
        (words, extra): (usize, usize),
        prg: &mut Prg,
        sid: &[u8; 32],
        source: Source,
    ) -> Result<(Triples, RandomOts)> {
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
        let mut sink = Sink {
            triples: Triples {
                a: Vec::with_capacity(words),
                b: Vec::with_capacity(words),
                c: Vec::with_capacity(words),
            },
            ots: RandomOts {
                sent: Vec::with_capacity(extra),
                choices: Vec::with_capacity(extra),
                received: Vec::with_capacity(extra),
            },
            words,
        };
        // Whole words of OTs each way: the random OTs' last word cut off after.
        let total = words * 64 + extra.next_multiple_of(64);
        let run = (chan, leader, total, prg, (&sending, &receiving));
        match source {
            Source::Iknp => iknp_chunks(run, &mut sink)?,
            Source::SilentOt => silent_chunks(run, &mut sink)?,
        }
        let Sink {
            triples, mut ots, ..
        } = sink;
        ots.sent.truncate(extra);
        ots.choices.truncate(extra);
        ots.received.truncate(extra);
        Ok((triples, ots))
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

/// Where a run's OTs go: the first `words · 64` of each direction into triples, the rest
/// into random OTs.
struct Sink {
    triples: Triples,
    ots: RandomOts,
    words: usize,
}

impl Sink {
    /// Takes a batch of OTs, the run's from `first` on (a multiple of 64, as is their
    /// number), hashed with their numbers as tweaks.
    fn push(&mut self, leader: bool, first: usize, ots: ChunkOts) {
        // The top bit of a tweak names the direction: the leader's sending one is 0.
        let tweak = |sends: bool| ((sends != leader) as u64) << 63 | first as u64;
        tccr_hash(tweak(true), ots.x0);
        tccr_hash(tweak(true), ots.x1);
        tccr_hash(tweak(false), ots.xu);
        let split = (self.words * 64).saturating_sub(first).min(ots.x0.len());
        let (x0, x1, xu) = (
            low_bits(&ots.x0[..split]),
            low_bits(&ots.x1[..split]),
            low_bits(&ots.xu[..split]),
        );
        let t = &mut self.triples;
        for (((&a, &x0), &x1), &xu) in ots.choices.iter().zip(&x0).zip(&x1).zip(&xu) {
            let b = x0 ^ x1;
            t.a.push(a);
            t.b.push(b);
            t.c.push(a & b ^ x0 ^ xu);
        }
        for i in split..ots.x0.len() {
            self.ots.sent.push([ots.x0[i], ots.x1[i]]);
            self.ots
                .choices
                .push(ots.choices[i / 64] >> (i % 64) & 1 == 1);
            self.ots.received.push(ots.xu[i]);
        }
    }
}

/// The chunks' first OTs and lengths, for `total` OTs each way.
fn chunks(total: usize, source: Source) -> impl Iterator<Item = (usize, usize)> {
    let chunk = source.chunk();
    (0..total)
        .step_by(chunk)
        .map(move |first| (first, chunk.min(total - first)))
}

/// One party's making of a run's OTs: its link, whether it leads, how many OTs each way (a
/// multiple of 64), its randomness, and its base OTs' seeds as OT-extension sender and
/// receiver.
type Run<'c, 'p, 's> = (
    &'c mut dyn Channel,
    bool,
    usize,
    &'p mut Prg,
    (&'s SenderSeeds, &'s ReceiverSeeds),
);

/// A chunk of silent COTs: its first OT of the run's and how many it gives the run (a
/// multiple of 64), and its COT's outputs: those, then (if a later chunk's trees take their
/// correlated OTs from it) that chunk's, then any spare.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct SilentChunk {
    first: usize,
    len: usize,
    outputs: usize,
}

/// Chunks whose trees' correlated OTs come from IKNP; each later chunk k takes its trees'
/// from the outputs of chunk k − `FED_BY_IKNP` (Ferret's bootstrapping, YWL+20 §5). That
/// chunk is encoded by then: a party sends chunk k's trees at most [`AHEAD`] chunks before
/// it encodes chunk k, after chunk k − `AHEAD` − 1.
const FED_BY_IKNP: usize = AHEAD + 1;

/// `total` OTs (a multiple of 64) in silent chunks of at most `full` outputs: the fewest
/// chunks that hold them when each chunk that feeds a later one keeps back that chunk's
/// trees' OTs. A chunk fed so is a full one (an odd size can take more trees' OTs: 2^17 −
/// 1 outputs take 256 trees of depth 10, 2^17 take 128 of depth 11), so each keeps back
/// a full chunk's.
fn silent_plan(total: usize, full: usize) -> Vec<SilentChunk> {
    let kept = cot::ots_needed(full).next_multiple_of(64);
    let count = match total <= FED_BY_IKNP * full {
        true => total.div_ceil(full),
        false => FED_BY_IKNP + (total - FED_BY_IKNP * full).div_ceil(full - kept),
    };
    let mut first = 0;
    (0..count)
        .map(|k| {
            let feeds = k + FED_BY_IKNP < count;
            let len = match k + 1 == count {
                true => total - first,
                false => full - if feeds { kept } else { 0 },
            };
            // Only the last chunk can be short, and then only if IKNP feeds it.
            let outputs = match k + 1 == count && k < FED_BY_IKNP {
                true => len,
                false => full,
            };
            first += len;
            SilentChunk {
                first: first - len,
                len,
                outputs,
            }
        })
        .collect()
}

/// The correlated OTs of a chunk's trees, each way: as their sender its values q (Δ this
/// party's), as their receiver its choices and values t.
#[derive(Default)]
struct TreeOts {
    q: Vec<Block>,
    choices: Vec<bool>,
    t: Vec<Block>,
}

/// The OTs from silent COTs, a chunk at a time: the first [`FED_BY_IKNP`] chunks' trees'
/// correlated OTs from one IKNP run each way (the leader's sending one first), every later
/// chunk's from an earlier chunk's outputs; then per chunk a COT each way.
fn silent_chunks(run: Run, sink: &mut Sink) -> Result<()> {
    let (chan, leader, total, prg, (sending, receiving)) = run;
    let plan = silent_plan(total, Source::SilentOt.chunk());
    let mut tree_ots: Vec<TreeOts> = (0..plan.len()).map(|_| TreeOts::default()).collect();
    let from_iknp: Vec<usize> = (plan.iter().take(FED_BY_IKNP))
        .map(|c| cot::ots_needed(c.outputs))
        .collect();
    let count = from_iknp.iter().sum();
    let choices: Vec<bool> = (0..count).map(|_| prg.u64() & 1 == 1).collect();
    let (q, t) = if leader {
        let q = iknp_send_correlated(chan, sending, count)?;
        (q, iknp_receive_correlated(chan, receiving, &choices)?)
    } else {
        let t = iknp_receive_correlated(chan, receiving, &choices)?;
        (iknp_send_correlated(chan, sending, count)?, t)
    };
    let mut at = 0;
    for (ots, n) in tree_ots.iter_mut().zip(from_iknp) {
        let range = at..at + n;
        *ots = TreeOts {
            q: q[range.clone()].to_vec(),
            choices: choices[range.clone()].to_vec(),
            t: t[range].to_vec(),
        };
        at += n;
    }
    let delta = sending.delta_block();
    // Both parties send the trees of up to AHEAD chunks before they receive the peer's of
    // the first (as many as the channel's window holds with one more on its way; at
    // least one, or else the leader sends first, chunk by chunk): over a link of 80 ms a
    // chunk then waits no round trip (a run of 83 M triples has 633 chunks, 50 s of round
    // trips when each chunk's went one way and then back).
    let ahead = (chan.window() / cot::message_bytes(Source::SilentOt.chunk()))
        .saturating_sub(1)
        .min(AHEAD);
    let mut ring: Vec<Vec<Pair>> = (0..=ahead).map(|_| Vec::new()).collect();
    let slot = |k: usize| k % (ahead + 1);
    // Chunk k's trees' OTs as their sender, q (taken: each is used once).
    let take_q = |ots: &mut [TreeOts], k: usize| std::mem::take(&mut ots[k].q);
    if ahead > 0 {
        for k in 0..ahead.min(plan.len()) {
            let q = take_q(&mut tree_ots, k);
            cot::send_trees(chan, prg, plan[k].outputs, (delta, &q), &mut ring[slot(k)])?;
        }
    }
    let mut rows = Rows::default();
    for (k, chunk) in plan.iter().enumerate() {
        // Chunk k's trees' OTs as their receiver (its q went out with its trees, or goes
        // in the exchange).
        let ots = &mut tree_ots[k];
        let (tree_choices, t) = (std::mem::take(&mut ots.choices), std::mem::take(&mut ots.t));
        let receives = (&tree_choices[..], &t[..]);
        let choices = if ahead > 0 {
            if let Some(later) = plan.get(k + ahead) {
                let q = take_q(&mut tree_ots, k + ahead);
                let noise = &mut ring[slot(k + ahead)];
                cot::send_trees(chan, prg, later.outputs, (delta, &q), noise)?;
            }
            let noise = &mut ring[slot(k)];
            let points = cot::receive_trees(chan, chunk.outputs, receives, noise)?;
            cot::encode(chunk.outputs, noise, points)
        } else {
            let q = take_q(&mut tree_ots, k);
            let noise = &mut ring[0];
            let sending = (delta, &q[..]);
            cot::exchange(chan, prg, chunk.outputs, leader, sending, receives, noise)?
        };
        let noise = &ring[slot(k)];
        if let Some(fed) = plan.get(k + FED_BY_IKNP) {
            let kept = chunk.len..chunk.len + cot::ots_needed(fed.outputs);
            tree_ots[k + FED_BY_IKNP] = TreeOts {
                q: noise[kept.clone()].iter().map(|p| p.0).collect(),
                choices: (kept.clone())
                    .map(|i| choices[i / 64] >> (i % 64) & 1 == 1)
                    .collect(),
                t: noise[kept].iter().map(|p| p.1).collect(),
            };
        }
        // A batch at a time, its hashes in the cache.
        const BATCH: usize = 1 << 12;
        let batches = noise[..chunk.len]
            .chunks(BATCH)
            .zip(choices.chunks(BATCH / 64));
        for (b, (pairs, choices)) in batches.enumerate() {
            for (v, f) in [(&mut rows.q, Block::ZERO), (&mut rows.flipped, delta)] {
                v.clear();
                v.extend(pairs.iter().map(|p| p.0 ^ f));
            }
            rows.t.clear();
            rows.t.extend(pairs.iter().map(|p| p.1));
            let ots = ChunkOts {
                x0: &mut rows.q,
                x1: &mut rows.flipped,
                choices,
                xu: &mut rows.t,
            };
            sink.push(leader, chunk.first + b * BATCH, ots);
        }
    }
    Ok(())
}

/// Chunks whose trees a party sends before it receives the peer's of the first: their
/// computation (≈ 13 ms a chunk of 2^17 OTs each way) covers a 40 ms one-way delay; each
/// holds a chunk's noise (8 MiB at 2^17).
const AHEAD: usize = 4;

/// The OTs from IKNP, a chunk at a time, each chunk's rows on a segment of the extensions
/// of its own.
fn iknp_chunks(run: Run, sink: &mut Sink) -> Result<()> {
    let (chan, leader, total, prg, (sending, receiving)) = run;
    let mut rows = Rows::default();
    for (k, (first, ots)) in chunks(total, Source::Iknp).enumerate() {
        let choices: Vec<u64> = (0..ots / 64).map(|_| prg.u64()).collect();
        let send = sending.segment(k as u64);
        let receive = receiving.segment(k as u64);
        let mut incoming = send.start_in(ots, false, std::mem::take(&mut rows.q));
        let mut outgoing = receive.start(ots);
        let codewords = |from: usize, u: &mut [Block]| {
            for (j, u) in (from..ots).zip(u.iter_mut()) {
                if choices[j / 64] >> (j % 64) & 1 == 1 {
                    *u ^= Block::ONES;
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
        // As sender: q and q ⊕ Δ; as receiver: t.
        let delta = send.s()[0];
        rows.q = incoming.finish();
        rows.flipped.clear();
        rows.flipped.extend(rows.q.iter().map(|q| q ^ delta));
        rows.t.clear();
        rows.t.resize(ots.next_multiple_of(128), Block::ZERO);
        receive.replay_t().par_rows(0, &mut rows.t);
        rows.t.truncate(ots);
        let chunk = ChunkOts {
            x0: &mut rows.q,
            x1: &mut rows.flipped,
            choices: &choices,
            xu: &mut rows.t,
        };
        sink.push(leader, first, chunk);
    }
    Ok(())
}

/// Reused buffers of a chunk's OTs: as sender q and q ⊕ Δ, as receiver t.
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
        .map(|c| (c.iter().enumerate()).fold(0, |w, (i, &b)| w | (b.low_u64() & 1) << i))
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
        let [(p, _), (q, _)] = made(words, 0, Source::SilentOt);
        (p, q)
    }

    /// Both parties' triples for `words` words and `extra` random OTs each way from OTs of
    /// `source`, the leader's first.
    fn made(words: usize, extra: usize, source: Source) -> [(Triples, RandomOts); 2] {
        let (mut x, mut y) = mem_pair(Duration::from_secs(30));
        let sid = [7; 32];
        // Each party on a pool of its own, as `run` gives it: a COT's receiver waits on its
        // channel on the pool, which, shared, could leave its sender no thread.
        let party = move |chan: &mut dyn Channel, leader: bool, seed: Block| {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build();
            pool.unwrap().install(|| {
                let mut prg = Prg::from_seed(seed);
                Triples::generate(chan, leader, (words, extra), &mut prg, &sid, source).unwrap()
            })
        };
        let follower = std::thread::spawn(move || party(&mut y, false, Block::from(2)));
        let leader = party(&mut x, true, Block::from(1));
        [leader, follower.join().unwrap()]
    }

    #[test]
    fn triples_multiply_and_look_random() {
        for source in [Source::SilentOt, Source::Iknp] {
            // Several chunks (for silent OT, some fed by earlier chunks' outputs), the last
            // one short, and random OTs after the triples, the last of them in a part of a
            // word.
            let words = (FED_BY_IKNP + 3) * source.chunk() / 64 + 3;
            let extra = 1000;
            let [(p, p_ots), (q, q_ots)] = made(words, extra, source);
            check(words, &p, &q);
            for (sender, receiver) in [(&p_ots, &q_ots), (&q_ots, &p_ots)] {
                assert_eq!(sender.sent.len(), extra);
                assert_eq!(
                    (receiver.choices.len(), receiver.received.len()),
                    (extra, extra)
                );
                for ((sent, &c), &got) in (sender.sent.iter())
                    .zip(&receiver.choices)
                    .zip(&receiver.received)
                {
                    assert_eq!(sent[c as usize], got);
                    assert_ne!(sent[1 - c as usize], got);
                }
                let ones = receiver.choices.iter().filter(|&&c| c).count();
                assert!((400..600).contains(&ones), "{ones} of {extra} choices set");
            }
        }
    }

    fn check(words: usize, p: &Triples, q: &Triples) {
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
    fn silent_chunks_hold_the_run_and_keep_back_what_later_ones_take() {
        let full = Source::SilentOt.chunk();
        let kept = cot::ots_needed(full).next_multiple_of(64);
        for total in (0..40 * full)
            .step_by(64 * 97)
            .chain([full, 6 * full, 6 * full + 64])
        {
            let plan = silent_plan(total, full);
            let mut first = 0;
            for (k, chunk) in plan.iter().enumerate() {
                assert_eq!(chunk.first, first, "{total}: {plan:?}");
                assert!(chunk.len > 0 && chunk.len % 64 == 0 && chunk.outputs <= full);
                let taken = match plan.get(k + FED_BY_IKNP) {
                    Some(fed) => cot::ots_needed(fed.outputs),
                    None => 0,
                };
                assert!(chunk.len + taken <= chunk.outputs, "{total}: {chunk:?}");
                first += chunk.len;
            }
            assert_eq!(first, total);
            // The fewest chunks: one fewer would not hold the run.
            let m = plan.len().saturating_sub(1);
            let room = m * full - kept * m.saturating_sub(FED_BY_IKNP);
            assert!(
                plan.is_empty() || room < total,
                "{total}: {} chunks",
                plan.len()
            );
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
