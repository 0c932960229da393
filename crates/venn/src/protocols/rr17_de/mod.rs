//! Rindal–Rosulek, "Malicious-secure private set intersection via dual execution" (CCS
//! 2017): the dual-execution protocol ([`Rr17De`], Fig. 4) and the encode-commit protocol
//! ([`Rr17Ec`], §6.4 and App. B), both in the random-oracle model with F_encode realised by
//! OOS16 over BCH-(511, 76, 171) ([`crate::ot::oos16`]).
//!
//! Roles: the paper's Alice (Fig. 4, Fig. 9) is Venn's sender and its Bob Venn's receiver.
//! The paper's subscripts stay: n_A and μ_A are the sender's set size and slots a bin, n_B
//! and μ_B the receiver's; in direction A the sender is the F_encode sender, in B the
//! receiver.
//!
//! What they share, here: the hashing seed by coin tossing, simple hashing with phasing into
//! m bins (§6.1, §7), and encoding one's own slots as OOS receiver.

mod commit;
mod dual;
mod join;
mod params;
mod rom;
mod standard;

pub(super) use commit::Rr17Ec;
pub(super) use rom::Rr17De;
pub(super) use standard::Rr17DeSm;

use super::{Bins, Context, Sizes};
use crate::crypto::{Block, RandomOracle, RowDigest, RowHash};
use crate::items::Items;
use crate::ot::oos16::{OosReceiver, OosReceiverSeeds, Words, CHECK_ROWS};
use crate::session::{CoinToss, CoinTossReply, Role};
use crate::tables::simple_hash::{hashed_bits, phase, SlotTable};
use crate::{Error, Result, STATISTICAL_SECURITY};

/// Fig. 4 and Fig. 9 step 1: the hashing seed, tossed as the receiver commits to its share,
/// the sender answers and the receiver opens; `label` names the protocol's toss.
fn toss_seed(ctx: &mut Context, role: Role, label: &'static str) -> Result<Block> {
    let sid = ctx.session.id;
    let [seed, _] = match role {
        Role::Sender => {
            CoinTossReply::receive(ctx.peer, &sid, label)?.answer(ctx.peer, &mut ctx.prg)?
        }
        Role::Receiver => CoinToss::commit(ctx.peer, &sid, label, &mut ctx.prg)?.open(ctx.peer)?,
    };
    Ok(seed)
}

/// How the protocols hash: set sizes, m bins and the bits of a hashed item.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Hashing {
    /// The sender's set size.
    n_a: u64,
    /// The receiver's set size.
    n_b: u64,
    /// Bins: ⌊n/4⌋ (LAN) or ⌊n/10⌋ (WAN) for n the larger set, at least 1 (§6.6).
    m: u64,
    /// Bits of an item's hashed value ([`hashed_bits`]), or of a σ-bit item.
    bits: u32,
}

impl Hashing {
    /// The hashing of a run of `name` in the random-oracle model between sets of `sizes`:
    /// items hashed to [`hashed_bits`] bits.
    fn new(name: &str, sizes: Sizes, bins: Bins) -> Result<Self> {
        let h = Hashing::of_bits(sizes, bins, hashed_bits);
        // Distinct items must not share a hashed value (spec §3.3).
        let (n_a, n_b, bits) = (h.n_a, h.n_b, h.bits);
        if (bits as f64) < STATISTICAL_SECURITY as f64 + (n_a as f64 * n_b as f64).log2() {
            return Err(Error::Usage(format!(
                "{name} hashes items to {bits} bits, too few for sets of {n_a} and {n_b}"
            )));
        }
        Ok(h)
    }

    /// Sets of `sizes` in m bins (by `bins`), items of `bits(m)` bits.
    fn of_bits(sizes: Sizes, bins: Bins, bits: impl Fn(u64) -> u32) -> Self {
        let (n_a, n_b) = (sizes.sender.max(1), sizes.receiver.max(1));
        let m = bins.count(n_a.max(n_b));
        Hashing {
            n_a,
            n_b,
            m,
            bits: bits(m),
        }
    }

    /// Bits of a representative, the word a slot encodes: ⌊v/m⌋ < 2^bits / m (spec §3.2,
    /// E5).
    fn word_bits(&self) -> u32 {
        self.bits - self.m.ilog2()
    }

    /// Refuses a run of `name` whose `counts` (of slots, OT instances or values), which it
    /// indexes in 32 bits, do not fit with the OOS16 check rows.
    fn fit_32_bits(name: &str, counts: &[u128]) -> Result<()> {
        if counts
            .iter()
            .any(|&count| count + CHECK_ROWS as u128 > u32::MAX as u128)
        {
            return Err(Error::Usage(format!(
                "{name} would count more than 2^32 OTs, slots or values: the sets are too large"
            )));
        }
        Ok(())
    }
}

/// Session ids and hashes of one run, each bound to the protocol's name and the session.
struct Domains {
    name: &'static str,
    sid: [u8; 32],
}

impl Domains {
    fn new(name: &'static str, ctx: &Context) -> Self {
        Domains {
            name,
            sid: ctx.session.id,
        }
    }

    fn oracle(&self, purpose: &str) -> RandomOracle {
        RandomOracle::new(&format!("venn/{}/{purpose}", self.name), &self.sid)
    }

    /// The session id of one direction's seed OTs.
    fn direction_sid(&self, direction: &str) -> [u8; 32] {
        self.oracle("direction").hash(&[direction.as_bytes()])
    }

    /// The output hash of one direction's encodings (the OOS16 random oracle, §2.2.4).
    fn encoding_hash(&self, direction: &str) -> RowHash {
        RowHash::new(&format!("venn/{}/{direction}", self.name), &self.sid)
    }

    /// Each item's hashed value v(x) < 2^bits (§7: hashing to a smaller domain, a random
    /// oracle keyed by the session and the coin-tossed seed).
    fn hashed(&self, h: &Hashing, seed: Block, items: &Items) -> Vec<Block> {
        let key = self.oracle("item-key").hash(&[&seed.to_le_bytes()]);
        let ro = RandomOracle::new(&format!("venn/{}/item", self.name), &key);
        let shift = 128 - h.bits;
        items.map_all(|x| Block::from_u128(ro.hash_block(x).as_u128() >> shift))
    }
}

/// Each hashed value's bin and representative (its word in F_encode).
fn phased(values: &[Block], m: u64) -> (Vec<usize>, Vec<Block>) {
    values.iter().map(|&v| phase(v, m)).unzip()
}

/// The items in this party's filled slots, in slot order.
struct OwnSlots {
    items: Vec<u32>,
}

impl OwnSlots {
    /// The slots' OOS16 words (each filled slot's item's representative; the empty slots
    /// hold the zero word), and the items in the filled slots.
    fn new(slots: &SlotTable, reps: &[Block]) -> (Words, Self) {
        let (filled, items): (Vec<u32>, Vec<u32>) = (0..slots.len())
            .filter_map(|j| Some((j as u32, slots.item_at(j)?)))
            .unzip();
        let words = items.iter().map(|&x| reps[x as usize]).collect();
        let words = Words::new(slots.len(), filled, words);
        (words, OwnSlots { items })
    }

    /// The encoding of each item's own slot, in item order, from the encodings of the
    /// filled slots (in slot order).
    fn by_item(&self, outputs: Vec<RowDigest>) -> Vec<RowDigest> {
        let mut own = vec![[0; 8]; self.items.len()];
        for (&i, o) in self.items.iter().zip(outputs) {
            own[i as usize] = o;
        }
        own
    }
}

/// Encodes this party's slots in the direction where it is the OOS receiver, and proves
/// it; returns the encoding of each item's own slot, in item order.
fn encode_own(
    ctx: &mut Context,
    seeds: &OosReceiverSeeds,
    slots: &SlotTable,
    reps: &[Block],
    hash: &RowHash,
) -> Result<Vec<RowDigest>> {
    let (words, own) = OwnSlots::new(slots, reps);
    let receiver = OosReceiver::new(seeds);
    let outputs = receiver.encode(ctx.peer, words, &mut ctx.prg, hash)?;
    Ok(own.by_item(outputs))
}

/// Runs a sender and a receiver, honest or cheating, against each other.
#[cfg(test)]
mod test_parties {
    use super::*;
    use crate::crypto::Prg;
    use crate::net::mem_pair;
    use crate::protocols::Options;
    use crate::session::Session;
    use std::time::Duration;

    /// The sender's `n_a` and the receiver's `n_b` items; the receiver's first `shared` are
    /// also the sender's (its last ones).
    pub(super) fn sets(n_a: usize, n_b: usize, shared: usize) -> (Items, Items) {
        let sender = (0..n_a).map(|i| match i.checked_sub(n_a - shared) {
            Some(k) => format!("shared {k}"),
            None => format!("sender {i}"),
        });
        let receiver = (0..n_b).map(|i| match i < shared {
            true => format!("shared {i}"),
            false => format!("receiver {i}"),
        });
        (sender.collect(), receiver.collect())
    }

    /// Each item as a 64-bit integer in decimal (its FNV-1a hash: distinct for distinct
    /// test items with overwhelming probability), for the standard-model protocol.
    pub(super) fn integers(items: &Items) -> Items {
        let hash = |item: &[u8]| {
            item.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
                (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
            })
        };
        (0..items.len())
            .map(|i| hash(items.get(i)).to_string())
            .collect()
    }

    /// Runs `sender` and `receiver`, each given its context, over an in-memory link.
    pub(super) fn run<A: Send, B: Send>(
        sizes: (usize, usize),
        options: Options,
        sender: impl FnOnce(&mut Context) -> Result<A> + Send,
        receiver: impl FnOnce(&mut Context) -> Result<B> + Send,
    ) -> (Result<A>, Result<B>) {
        let session = |role| Session {
            id: [7; 32],
            role,
            n_sender: sizes.0 as u64,
            n_receiver: sizes.1 as u64,
            sized: Sizes {
                sender: sizes.0 as u64,
                receiver: sizes.1 as u64,
            },
            both: false,
            options,
            key: [0; 32],
        };
        let (mut a, mut b) = mem_pair(Duration::from_secs(20));
        std::thread::scope(|s| {
            let t = s.spawn(move || {
                let mut ctx = Context::new(
                    &mut b,
                    session(Role::Receiver),
                    Prg::from_seed(Block::from(2)),
                    None,
                );
                receiver(&mut ctx)
            });
            let mut ctx = Context::new(
                &mut a,
                session(Role::Sender),
                Prg::from_seed(Block::from(1)),
                None,
            );
            let sender = sender(&mut ctx);
            drop(ctx);
            drop(a);
            (sender, t.join().expect("receiver finishes"))
        })
    }
}
