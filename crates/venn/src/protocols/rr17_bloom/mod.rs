//! RR17 Bloom-filter PSI with cut-and-choose (Rindal & Rosulek, "Improved private set
//! intersection against malicious adversaries", Eurocrypt 2017, Fig. 4). Roles: Fig. 4's
//! Alice is Venn's sender and its Bob Venn's receiver.
//!
//! Offline: Bloom-filter seeds by coin tossing (commit, then open); N_ot KOS15 random OTs
//! in which the receiver uses an α fraction of ones; the cut-and-choose of a p_chk fraction
//! of them, which bounds the ones the receiver can have left. Online: the receiver maps its
//! Bloom filter onto unopened OTs with π; the sender sends, in random order, the summary
//! `K_x = H(x ‖ ⊕_{j ∈ h*(x)} m_{π(j),1})` of each of its items; the receiver outputs the
//! items whose summary it can recompute.
//!
//! Items always go through the random oracle (one call per item, expanded by the AES PRG
//! into the k positions, §6.1): the proof extracts the receiver's input by observing those
//! queries.

mod cut_and_choose;
mod pairs;
mod params;
mod permutation;
mod summaries;
mod unopened;

pub(super) use params::Rr17BloomParams;

use super::matching::{receive_matches, send_values};
use super::{
    output_bits, AnyParty, Context, Output, OutputKind, Parameters, Party, ProtocolInfo, RoleInfo,
    Security, Sizes, TypedProtocol,
};
use crate::crypto::{Block, Prg, RandomOracle};
use crate::items::Items;
use crate::ot::{
    kos_receive, kos_send, KosReceiver, KosSender, MasnyRindal, ReceiverSeeds, SenderSeeds,
};
use crate::session::{CoinToss, CoinTossReply, Role};
use crate::state::{StateReader, StateWriter};
use crate::tables::{BloomHash, MatchTable};
use crate::{Error, Result};
use pairs::PositionPairs;
use permutation::FRAME;
use summaries::Sums;
use unopened::{Unopened, Used};

/// RR17 malicious-secure Bloom-filter PSI.
pub(super) struct Rr17Bloom;
/// The sender.
struct Rr17Sender;
/// The receiver.
struct Rr17Receiver;

static INFO: ProtocolInfo = ProtocolInfo {
    name: "rr17-bloom",
    paper: "Rindal, Rosulek: Improved Private Set Intersection against Malicious Adversaries \
            (Eurocrypt 2017), Fig. 4 with the §4.1 optimisations",
    security: Security::Malicious,
    leakage: "The receiver learns the intersection; the sender learns nothing. Both learn the \
              other's set size. Secure against a malicious party (UC, random-OT hybrid, Bloom \
              hashes and H as non-programmable random oracles); cheating is caught by the \
              cut-and-choose and the KOS15 check, or costs the cheater 2^-κ.",
    both_allowed: false,
    roles: &[
        RoleInfo {
            role: Role::Sender,
            security: Security::Malicious,
            output: OutputKind::Nothing,
            // N_ot ≤ 260·n_r OT rows of 16 bytes for n_r ≥ 2^16 (Fig. 5); smaller sets
            // fit in the runner's base allowance. Measured: 5.2 GB at n = 2^20.
            peer_item_bytes: 4400,
            own_item_bytes: 1536,
        },
        RoleInfo {
            role: Role::Receiver,
            security: Security::Malicious,
            output: OutputKind::Indices,
            // Its one-OT messages and OT indices after the cut-and-choose, and its
            // items' filter positions. Measured: 4.7 GB at n = 2^20.
            peer_item_bytes: 64,
            own_item_bytes: 4800,
        },
    ],
};

fn params(ctx: &Context) -> Rr17BloomParams {
    Rr17BloomParams::new(ctx.session.sized.receiver.max(1))
}

/// Fig. 4 step 1: the seed of the Bloom-filter hash functions is coin-tossed; the receiver
/// commits to its share, the sender answers with its own, the receiver opens.
const SEED_TOSS: &str = "Bloom-filter seed";
/// The sender's (position, item) pairs whose OT messages it holds at a time.
const PAIRS_BATCH: usize = 1 << 16;

/// The item values the Bloom hashes and the summaries use: one random-oracle call per item,
/// bound to the session and the coin-tossed seed.
fn item_values(items: &Items, sid: &[u8; 32], seed: Block) -> Vec<Block> {
    let context = RandomOracle::new("venn/rr17/item-key", sid).hash(&[&seed.to_le_bytes()]);
    let ro = RandomOracle::new("venn/rr17/item", &context);
    items.map_all(|x| ro.hash_block(x))
}

/// What the receiver holds after the offline phase.
struct Offline {
    seed: Block,
    ot: KosReceiver,
    opened: Vec<u32>,
}

/// The opened set C read from a state: sorted, distinct and in range, as the sender's
/// checks of π assume.
fn opened_set(c: Vec<u32>, n_ot: u64) -> Result<Vec<u32>> {
    let ordered = c.windows(2).all(|w| w[0] < w[1]);
    if !ordered || c.last().is_some_and(|&j| j as u64 >= n_ot) {
        return Err(Error::State(
            "the opened OTs are not a set of OT indices".into(),
        ));
    }
    Ok(c)
}

/// The receiver's offline phase (Fig. 4 steps 1–4) with `ones` choice bits set to 1.
fn receiver_offline(ctx: &mut Context, p: &Rr17BloomParams, ones: usize) -> Result<Offline> {
    let sid = ctx.session.id;
    ctx.phase("coin tossing and random OTs", true);
    let [seed, _] = CoinToss::commit(ctx.peer, &sid, SEED_TOSS, &mut ctx.prg)?.open(ctx.peer)?;
    let base = ReceiverSeeds::new::<MasnyRindal>(ctx.peer, &mut ctx.prg, &sid)?;
    let choices = choice_bits(p.n_ot as usize, ones, &mut ctx.prg);
    let ot = kos_receive(ctx.peer, &base, choices, &mut ctx.prg, &sid, Vec::new())?;
    ctx.phase("cut-and-choose", true);
    let opened = cut_and_choose::respond(ctx.peer, &ot, p)?;
    Ok(Offline { seed, ot, opened })
}

/// `count` choice bits of which exactly `ones` are 1, every such string equally likely
/// (selection sampling, Knuth's Algorithm S: one sequential pass).
fn choice_bits(count: usize, ones: usize, prg: &mut Prg) -> Vec<bool> {
    let mut needed = ones.min(count) as u64;
    (0..count)
        .map(|i| {
            let take = prg.below((count - i) as u64) < needed;
            needed -= take as u64;
            take
        })
        .collect()
}

impl TypedProtocol for Rr17Bloom {
    type Config = ();

    fn info(&self) -> &'static ProtocolInfo {
        &INFO
    }

    fn params(&self, sizes: Sizes, _: ()) -> Result<Box<dyn Parameters>> {
        Ok(Box::new(Rr17BloomParams::with_output(
            sizes.sender,
            sizes.receiver,
        )?))
    }

    fn party(&self, role: Role) -> &'static dyn AnyParty {
        match role {
            Role::Sender => &Rr17Sender,
            Role::Receiver => &Rr17Receiver,
        }
    }
}

/// The sender's offline state: the Bloom seed, its checked random OTs, the opened set C,
/// and room for its items' filter positions (allocated offline: it only depends on the
/// size).
pub(super) struct SenderState {
    seed: Block,
    ot: KosSender,
    opened: Vec<u32>,
    pairs: PositionPairs,
}

/// The receiver's offline state: the Bloom seed, its unopened OTs arranged for π, and room
/// for its own items' filter positions.
pub(super) struct ReceiverState {
    seed: Block,
    ots: Unopened,
    pairs: PositionPairs,
}

impl Party for Rr17Sender {
    type State = SenderState;

    /// Fig. 4 steps 1–4 on the sender's side: the seed, the random OTs, the cut-and-choose.
    fn offline(&self, ctx: &mut Context) -> Result<SenderState> {
        let p = params(ctx);
        let sid = ctx.session.id;
        ctx.phase("coin tossing and random OTs", true);
        let [seed, _] =
            CoinTossReply::receive(ctx.peer, &sid, SEED_TOSS)?.answer(ctx.peer, &mut ctx.prg)?;
        let base = SenderSeeds::new::<MasnyRindal>(ctx.peer, &mut ctx.prg, &sid)?;
        let ot = kos_send(ctx.peer, &base, p.n_ot as usize, &mut ctx.prg, &sid)?;
        ctx.phase("cut-and-choose", true);
        let opened = cut_and_choose::challenge(ctx.peer, &ot, &p, &mut ctx.prg)?;
        let pairs = PositionPairs::with_capacity(ctx.session.sized.sender as usize, p.k);
        Ok(SenderState {
            seed,
            ot,
            opened,
            pairs,
        })
    }

    /// Fig. 4 steps 5–6 on the sender's side: check π, send the summaries.
    fn online(&self, ctx: &mut Context, state: SenderState, items: &Items) -> Result<Output> {
        let p = params(ctx);
        let sid = ctx.session.id;
        let v = output_bits(ctx.session.sized);
        let SenderState {
            seed,
            ot,
            opened,
            mut pairs,
        } = state;
        ctx.phase("receive permutation", false);
        let hash = BloomHash::new(seed, p.n_bf as usize, p.k);
        let values = item_values(items, &sid, seed);
        let perm = ctx.prg.permutation(items.len());
        let permuted: Vec<Block> = perm.iter().map(|&i| values[i as usize]).collect();
        pairs.fill(&permuted, &hash);
        let mut sums = Sums::new(items.len());
        let (mut wanted, mut messages) = (vec![], vec![]);
        permutation::receive(ctx.peer, p.n_bf as usize, p.n_ot, &opened, |first, pi| {
            // A batch of the frame's pairs at a time: a small receiver's filter is a frame
            // or two, which then hold most of the sender's n·k pairs, and their messages
            // (16 bytes each) would pass the memory model's figure.
            for batch in pairs.frame(first / FRAME).chunks(PAIRS_BATCH) {
                wanted.clear();
                wanted.extend(batch.iter().map(|q| pi[q.position as usize - first]));
                messages.clear();
                ot.messages(&wanted, true, &mut messages);
                sums.add(batch, &messages);
            }
        })?;
        drop(ot);
        ctx.phase("summaries", false);
        let k = sums.finish(&permuted, &sid, v);
        send_values(ctx.peer, items.len(), 1, v / 8, |first, out| {
            out.copy_from_slice(&k[first..first + out.len()]);
        })?;
        Ok(Output::Nothing)
    }

    fn save(&self, state: &SenderState, out: &mut StateWriter) -> Result<()> {
        out.block(state.seed)?;
        state.ot.save(out)?;
        out.u32s(&state.opened)
    }

    fn load(&self, sizes: Sizes, input: &mut StateReader) -> Result<SenderState> {
        let p = Rr17BloomParams::with_output(sizes.sender, sizes.receiver)?.0;
        Ok(SenderState {
            seed: input.block()?,
            ot: KosSender::load(input, p.n_ot as usize)?,
            opened: opened_set(input.u32s(p.n_ot as usize, "opened OTs")?, p.n_ot)?,
            pairs: PositionPairs::with_capacity(sizes.sender as usize, p.k),
        })
    }
}

impl Party for Rr17Receiver {
    type State = ReceiverState;

    /// Fig. 4 steps 1–4 on the receiver's side, then its unopened OTs arranged for π.
    fn offline(&self, ctx: &mut Context) -> Result<ReceiverState> {
        let p = params(ctx);
        let ones = (p.alpha * p.n_ot as f64).round() as usize;
        let Offline { seed, ot, opened } = receiver_offline(ctx, &p, ones)?;
        ctx.phase("arrange unopened OTs", true);
        let ots = Unopened::new(ot, p.n_ot as usize, &opened, &mut ctx.prg);
        let pairs = PositionPairs::with_capacity(ctx.session.sized.receiver as usize, p.k);
        Ok(ReceiverState { seed, ots, pairs })
    }

    /// Fig. 4 steps 5–6 on the receiver's side: send π, match the summaries.
    fn online(&self, ctx: &mut Context, state: ReceiverState, items: &Items) -> Result<Output> {
        let p = params(ctx);
        let sid = ctx.session.id;
        let v = output_bits(ctx.session.sized);
        let ReceiverState {
            seed,
            ots,
            mut pairs,
        } = state;
        ctx.phase("Bloom filter and permutation", false);
        let hash = BloomHash::new(seed, p.n_bf as usize, p.k);
        let values = item_values(items, &sid, seed);
        pairs.fill(&values, &hash);
        let mut bf = pairs.filter(p.n_bf as usize);
        ots.fit(&mut bf, &mut ctx.prg)?;
        let (mut sums, mut used, mut messages) = (Sums::new(items.len()), Used::default(), vec![]);
        permutation::send(
            ctx.peer,
            p.n_bf as usize,
            p.n_ot,
            |first, count, entries| {
                let frame = pairs.frame(first / FRAME);
                messages.clear();
                ots.frame(
                    &bf,
                    (first, count),
                    &mut used,
                    entries,
                    frame,
                    &mut messages,
                );
                sums.add(frame, &messages);
            },
        )?;
        ctx.phase("receive and match", false);
        let mine = sums.finish(&values, &sid, v);
        let table = MatchTable::build(items.len(), mine.len(), |i| (mine[i], 0, i as u32));
        let n_s = ctx.session.n_sender as usize;
        let matches = receive_matches(ctx.peer, n_s, 1, v / 8, &table)?;
        Ok(Output::Indices(
            matches.iter().map(|m| m.0 as usize).collect(),
        ))
    }

    fn save(&self, state: &ReceiverState, out: &mut StateWriter) -> Result<()> {
        out.block(state.seed)?;
        state.ots.save(out)
    }

    fn load(&self, sizes: Sizes, input: &mut StateReader) -> Result<ReceiverState> {
        let p = Rr17BloomParams::with_output(sizes.sender, sizes.receiver)?.0;
        Ok(ReceiverState {
            seed: input.block()?,
            ots: Unopened::load(input, p.n_ot as usize)?,
            pairs: PositionPairs::with_capacity(sizes.receiver as usize, p.k),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::mem_pair;
    use crate::net::{Reader, Writer};
    use crate::session::Session;
    use crate::Error;
    use std::time::Duration;

    const N: u64 = 1 << 10;

    fn items(tag: &str) -> Items {
        (0..N).map(|i| format!("{tag}{i}")).collect()
    }

    /// Runs the honest sender against `cheater` (given a receiver-side context).
    fn honest_sender_vs(
        seed: u64,
        cheater: impl FnOnce(&mut Context) -> Result<()> + Send,
    ) -> Result<Output> {
        let session = |role| Session {
            id: [5; 32],
            role,
            n_sender: N,
            n_receiver: N,
            sized: Sizes {
                sender: N,
                receiver: N,
            },
            both: false,
            options: Default::default(),
            key: [0; 32],
        };
        let (mut a, mut b) = mem_pair(Duration::from_secs(20));
        std::thread::scope(|s| {
            let t = s.spawn(move || {
                let mut ctx = Context::new(
                    &mut b,
                    session(Role::Receiver),
                    Prg::from_seed(Block::from(seed + 1)),
                    None,
                );
                let _ = cheater(&mut ctx);
            });
            let mut ctx = Context::new(
                &mut a,
                session(Role::Sender),
                Prg::from_seed(Block::from(seed)),
                None,
            );
            let result = Party::offline(&Rr17Sender, &mut ctx)
                .and_then(|state| Party::online(&Rr17Sender, &mut ctx, state, &items("x")));
            drop(ctx);
            drop(a);
            let _ = t.join();
            result
        })
    }

    fn is_cheating(r: &Result<Output>, what: &str) -> bool {
        matches!(r, Err(Error::CheatingDetected(w)) if w.contains(what))
    }

    #[test]
    fn sets_needing_more_than_2_32_ots_are_refused() {
        let sizes = |sender, receiver| Sizes { sender, receiver };
        assert!(Rr17Bloom.params(sizes(1 << 20, 1 << 20), ()).is_ok());
        let Err(e) = Rr17Bloom.params(sizes(1, 1 << 26), ()) else {
            panic!("accepted")
        };
        assert!(
            matches!(e, Error::Params(_)) && e.to_string().contains("2^32"),
            "{e}"
        );
    }

    #[test]
    fn choice_bits_have_exactly_the_requested_ones() {
        let mut prg = Prg::from_seed(Block::from(1));
        for (count, ones) in [(1000, 0), (1000, 1000), (1000, 367), (1, 1)] {
            let b = choice_bits(count, ones, &mut prg);
            assert_eq!((b.len(), b.iter().filter(|&&x| x).count()), (count, ones));
        }
        let b = choice_bits(10_000, 5_000, &mut prg);
        let first_half = b[..5_000].iter().filter(|&&x| x).count();
        assert!(
            (2_300..2_700).contains(&first_half),
            "spread evenly: {first_half}"
        );
    }

    #[test]
    fn a_receiver_with_twice_the_allowed_ones_is_caught() {
        let p = Rr17BloomParams::new(N);
        let caught = (0..100u64)
            .filter(|&seed| {
                let r = honest_sender_vs(seed * 7, |ctx| {
                    let ones = (2.0 * p.alpha * p.n_ot as f64) as usize;
                    receiver_offline(ctx, &p, ones).map(|_| ())
                });
                is_cheating(&r, "opened OTs")
            })
            .count();
        assert!(caught >= 99, "caught in {caught} of 100 runs");
    }

    /// The honest offline phase, then `online` in place of the honest online phase.
    fn cheat_online(
        seed: u64,
        online: impl FnOnce(&mut Context, &Rr17BloomParams, Offline) -> Result<()> + Send,
    ) -> Result<Output> {
        honest_sender_vs(seed, |ctx| {
            let p = Rr17BloomParams::new(N);
            let ones = (p.alpha * p.n_ot as f64).round() as usize;
            let off = receiver_offline(ctx, &p, ones)?;
            online(ctx, &p, off)
        })
    }

    /// A valid π for a filter of `items("x")`, as the honest receiver would send.
    fn honest_pi(ctx: &mut Context, p: &Rr17BloomParams, off: Offline) -> Vec<u32> {
        let hash = BloomHash::new(off.seed, p.n_bf as usize, p.k);
        let mut bf = hash.filter(&item_values(&items("x"), &ctx.session.id, off.seed));
        let ots = Unopened::new(off.ot, p.n_ot as usize, &off.opened, &mut ctx.prg);
        ots.fit(&mut bf, &mut ctx.prg).unwrap();
        let (mut pi, mut used) = (vec![], Used::default());
        for first in (0..bf.len()).step_by(FRAME) {
            let count = (bf.len() - first).min(FRAME);
            ots.frame(&bf, (first, count), &mut used, &mut pi, &[], &mut vec![]);
        }
        pi
    }

    fn send_pi(ctx: &mut Context, p: &Rr17BloomParams, pi: &[u32]) -> Result<()> {
        permutation::send(ctx.peer, pi.len(), p.n_ot, |first, count, out| {
            out.extend_from_slice(&pi[first..first + count])
        })
    }

    #[test]
    fn bad_permutations_are_caught() {
        let r = cheat_online(1, |ctx, p, off| {
            let mut pi = honest_pi(ctx, p, off);
            pi[7] = pi[3];
            send_pi(ctx, p, &pi)
        });
        assert!(is_cheating(&r, "not injective"), "{r:?}");
        let r = cheat_online(2, |ctx, p, off| {
            let opened = off.opened[0];
            let mut pi = honest_pi(ctx, p, off);
            pi[0] = opened;
            send_pi(ctx, p, &pi)
        });
        assert!(is_cheating(&r, "opened set"), "{r:?}");
        let r = cheat_online(3, |ctx, p, off| {
            let mut pi = honest_pi(ctx, p, off);
            let w = permutation::entry_bits(p.n_ot);
            pi[0] = ((1u64 << w) - 1) as u32;
            assert!((1u64 << w) > p.n_ot, "the test needs a value out of range");
            send_pi(ctx, p, &pi)
        });
        assert!(is_cheating(&r, "out of range"), "{r:?}");
    }

    #[test]
    fn a_wrong_proof_of_zero_choice_bits_is_caught() {
        let r = honest_sender_vs(4, |ctx| {
            let p = Rr17BloomParams::new(N);
            let sid = ctx.session.id;
            CoinToss::commit(ctx.peer, &sid, SEED_TOSS, &mut ctx.prg)?.open(ctx.peer)?;
            let base = ReceiverSeeds::new::<MasnyRindal>(ctx.peer, &mut ctx.prg, &sid)?;
            let ones = (p.alpha * p.n_ot as f64).round() as usize;
            let choices = choice_bits(p.n_ot as usize, ones, &mut ctx.prg);
            let ot = kos_receive(ctx.peer, &base, choices, &mut ctx.prg, &sid, Vec::new())?;
            // Claim every opened OT used choice bit 0, with a made-up aggregate.
            let msg = ctx.peer.recv_exact(16, "seed")?;
            let c = cut_and_choose::challenge_set(Reader::new(&msg, "seed").block()?, &p);
            let _ = &ot;
            let bits = vec![0xFFu8; c.len().div_ceil(8)];
            ctx.peer
                .send(&Writer::new().bytes(&bits).block(Block::from(12345)).0)
        });
        assert!(is_cheating(&r, "r*"), "{r:?}");
    }
}
