//! RR17 Bloom-filter PSI with cut-and-choose (Rindal & Rosulek, "Improved private set
//! intersection against malicious adversaries", Eurocrypt 2017, Fig. 4).
//!
//! Offline: Bloom-filter seeds by coin tossing (commit, then open); N_ot KOS15 random OTs in
//! which the receiver (Bob) uses an α fraction of ones; the cut-and-choose of a p_chk
//! fraction of them, which bounds the ones Bob can have left. Online: Bob maps his Bloom
//! filter onto unopened OTs with π; the sender (Alice) sends, in random order, the summary
//! `K_x = H(x ‖ ⊕_{j ∈ h*(x)} m_{π(j),1})` of each of her items; Bob outputs the items whose
//! summary he can recompute.
//!
//! Items always go through the random oracle (one call per item, expanded by the AES PRG
//! into the k positions, §6.1): the proof extracts Bob's input by observing those queries.

mod cut_and_choose;
mod pairs;
mod params;
mod permutation;
mod summaries;
mod unopened;

pub use params::Rr17BloomParams;

use super::matching::{receive_matches, send_values};
use super::{output_bits, Context, Parameters, Protocol, ProtocolInfo, Security};
use crate::crypto::{Block, Prg, RandomOracle};
use crate::items::Items;
use crate::ot::{base_ot_receive, base_ot_send, kos_receive, kos_send, KosReceiver, BASE_OTS};
use crate::session::{CoinToss, CoinTossReply};
use crate::tables::{BloomHash, MatchTable};
use crate::Result;
use pairs::PositionPairs;
use permutation::FRAME;
use summaries::Sums;
use unopened::{Unopened, Used};

/// RR17 malicious-secure Bloom-filter PSI.
pub struct Rr17Bloom;

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
};

fn params(ctx: &Context) -> Rr17BloomParams {
    Rr17BloomParams::new(ctx.session.n_receiver.max(1))
}

/// Fig. 4 step 1: the seed of the Bloom-filter hash functions is coin-tossed; the receiver
/// commits to its share, the sender answers with its own, the receiver opens.
const SEED_TOSS: &str = "Bloom-filter seed";

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

/// The receiver's offline phase (Fig. 4 steps 1–4) with `ones` choice bits set to 1.
fn receiver_offline(ctx: &mut Context, p: &Rr17BloomParams, ones: usize) -> Result<Offline> {
    let sid = ctx.session.id;
    ctx.phase("coin tossing and random OTs", true);
    let [seed, _] = CoinToss::commit(ctx.chan, &sid, SEED_TOSS, &mut ctx.prg)?.open(ctx.chan)?;
    let base = base_ot_send(ctx.chan, BASE_OTS, &mut ctx.prg, &sid)?;
    let choices = choice_bits(p.n_ot as usize, ones, &mut ctx.prg);
    let ot = kos_receive(ctx.chan, &base, choices, &mut ctx.prg, &sid)?;
    ctx.phase("cut-and-choose", true);
    let opened = cut_and_choose::respond(ctx.chan, &ot, p)?;
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

impl Protocol for Rr17Bloom {
    fn info(&self) -> &'static ProtocolInfo {
        &INFO
    }

    fn params(&self, n_sender: u64, n_receiver: u64) -> Result<Box<dyn Parameters>> {
        Ok(Box::new(Rr17BloomParams::with_output(
            n_sender, n_receiver,
        )?))
    }

    /// Alice: the OT sender, who checks and then sends summaries.
    fn send(&self, ctx: &mut Context, items: &Items) -> Result<Option<Vec<usize>>> {
        let p = params(ctx);
        let sid = ctx.session.id;
        let v = output_bits(ctx.session.n_sender, ctx.session.n_receiver);
        ctx.phase("coin tossing and random OTs", true);
        let [seed, _] =
            CoinTossReply::receive(ctx.chan, &sid, SEED_TOSS)?.answer(ctx.chan, &mut ctx.prg)?;
        let delta: Vec<bool> = (0..BASE_OTS).map(|_| ctx.prg.u64() & 1 == 1).collect();
        let base = base_ot_receive(ctx.chan, &delta, &mut ctx.prg, &sid)?;
        let ot = kos_send(ctx.chan, &delta, &base, p.n_ot as usize, &mut ctx.prg, &sid)?;
        ctx.phase("cut-and-choose", true);
        let opened = cut_and_choose::challenge(ctx.chan, &ot, &p, &mut ctx.prg)?;
        let mut pairs = PositionPairs::with_capacity(items.len(), p.k);
        ctx.phase("wait for the receiver's offline work", true);
        ctx.chan
            .recv_exact(1, "end of the receiver's offline phase")?;

        ctx.phase("receive permutation", false);
        let hash = BloomHash::new(seed, p.n_bf as usize, p.k);
        let values = item_values(items, &sid, seed);
        let perm = ctx.prg.permutation(items.len());
        let permuted: Vec<Block> = perm.iter().map(|&i| values[i as usize]).collect();
        pairs.fill(&permuted, &hash);
        let mut sums = Sums::new(items.len());
        let (mut wanted, mut messages) = (vec![], vec![]);
        permutation::receive(ctx.chan, p.n_bf as usize, p.n_ot, &opened, |first, pi| {
            let frame = pairs.frame(first / FRAME);
            wanted.clear();
            wanted.extend(frame.iter().map(|q| pi[q.position as usize - first]));
            messages.clear();
            ot.messages(&wanted, true, &mut messages);
            sums.add(frame, &messages);
        })?;
        drop(ot);
        ctx.phase("summaries", false);
        let k = sums.finish(&permuted, &sid, v);
        send_values(ctx.chan, items.len(), 1, v / 8, |first, out| {
            out.copy_from_slice(&k[first..first + out.len()]);
        })?;
        Ok(None)
    }

    /// Bob: the OT receiver, who passes the check and learns the intersection.
    fn receive(&self, ctx: &mut Context, items: &Items) -> Result<Vec<usize>> {
        let p = params(ctx);
        let sid = ctx.session.id;
        let v = output_bits(ctx.session.n_sender, ctx.session.n_receiver);
        let ones = (p.alpha * p.n_ot as f64).round() as usize;
        let Offline { seed, ot, opened } = receiver_offline(ctx, &p, ones)?;
        ctx.phase("arrange unopened OTs", true);
        let ots = Unopened::new(ot, p.n_ot as usize, &opened, &mut ctx.prg);
        let mut pairs = PositionPairs::with_capacity(items.len(), p.k);
        // The online phase starts when both parties are done with the offline one.
        ctx.chan.send(&[1])?;
        ctx.chan.flush()?;

        ctx.phase("Bloom filter and permutation", false);
        let hash = BloomHash::new(seed, p.n_bf as usize, p.k);
        let values = item_values(items, &sid, seed);
        pairs.fill(&values, &hash);
        let mut bf = pairs.filter(p.n_bf as usize);
        ots.fit(&mut bf, &mut ctx.prg)?;
        let (mut sums, mut used, mut messages) = (Sums::new(items.len()), Used::default(), vec![]);
        permutation::send(
            ctx.chan,
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
        let mut table = MatchTable::with_capacity(items.len());
        for (i, &k) in mine.iter().enumerate() {
            table.insert(k, 0, i as u32);
        }
        let n_s = ctx.session.n_sender as usize;
        let matches = receive_matches(ctx.chan, n_s, 1, v / 8, &table)?;
        Ok(matches.iter().map(|m| m.0 as usize).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::mem_pair;
    use crate::net::{Reader, Writer};
    use crate::session::{Role, Session};
    use crate::Error;
    use std::time::Duration;

    const N: u64 = 1 << 10;

    fn items(tag: &str) -> Items {
        (0..N).map(|i| format!("{tag}{i}")).collect()
    }

    /// Runs the honest sender against `cheater` (given a receiver-side context).
    fn honest_sender_vs(
        seed: u128,
        cheater: impl FnOnce(&mut Context) -> Result<()> + Send,
    ) -> Result<Option<Vec<usize>>> {
        let session = |role| Session {
            id: [5; 32],
            role,
            n_sender: N,
            n_receiver: N,
            both: false,
        };
        let (mut a, mut b) = mem_pair(Duration::from_secs(20));
        std::thread::scope(|s| {
            let t = s.spawn(move || {
                let mut ctx = Context::new(
                    &mut b,
                    session(Role::Receiver),
                    Prg::from_seed(seed + 1),
                    None,
                );
                let _ = cheater(&mut ctx);
            });
            let mut ctx = Context::new(&mut a, session(Role::Sender), Prg::from_seed(seed), None);
            let result = Rr17Bloom.send(&mut ctx, &items("x"));
            drop(ctx);
            drop(a);
            let _ = t.join();
            result
        })
    }

    fn is_cheating(r: &Result<Option<Vec<usize>>>, what: &str) -> bool {
        matches!(r, Err(Error::CheatingDetected(w)) if w.contains(what))
    }

    #[test]
    fn sets_needing_more_than_2_32_ots_are_refused() {
        assert!(Rr17Bloom.params(1 << 20, 1 << 20).is_ok());
        let Err(e) = Rr17Bloom.params(1, 1 << 26) else {
            panic!("accepted")
        };
        assert!(
            matches!(e, Error::Params(_)) && e.to_string().contains("2^32"),
            "{e}"
        );
    }

    #[test]
    fn choice_bits_have_exactly_the_requested_ones() {
        let mut prg = Prg::from_seed(1);
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
        let caught = (0..100u128)
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
        seed: u128,
        online: impl FnOnce(&mut Context, &Rr17BloomParams, Offline) -> Result<()> + Send,
    ) -> Result<Option<Vec<usize>>> {
        honest_sender_vs(seed, |ctx| {
            let p = Rr17BloomParams::new(N);
            let ones = (p.alpha * p.n_ot as f64).round() as usize;
            let off = receiver_offline(ctx, &p, ones)?;
            ctx.chan.send(&[1])?;
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
        permutation::send(ctx.chan, pi.len(), p.n_ot, |first, count, out| {
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
            CoinToss::commit(ctx.chan, &sid, SEED_TOSS, &mut ctx.prg)?.open(ctx.chan)?;
            let base = base_ot_send(ctx.chan, BASE_OTS, &mut ctx.prg, &sid)?;
            let ones = (p.alpha * p.n_ot as f64).round() as usize;
            let choices = choice_bits(p.n_ot as usize, ones, &mut ctx.prg);
            let ot = kos_receive(ctx.chan, &base, choices, &mut ctx.prg, &sid)?;
            // Claim every opened OT used choice bit 0, with a made-up aggregate.
            let msg = ctx.chan.recv_exact(16, "seed")?;
            let c = cut_and_choose::challenge_set(Reader::new(&msg, "seed").block()?, &p);
            let _ = &ot;
            let bits = vec![0xFFu8; c.len().div_ceil(8)];
            ctx.chan.send(&Writer::new().bytes(&bits).block(12345).0)
        });
        assert!(is_cheating(&r, "r*"), "{r:?}");
    }
}
