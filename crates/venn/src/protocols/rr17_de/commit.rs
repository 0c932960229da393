//! RR17 encode-commit PSI in the random-oracle model (Rindal–Rosulek CCS 2017, §5.3 and
//! §6.4; the protocol figure is App. B, "Fig. 9"), F_encode realised by OOS16 over
//! BCH-(511, 76, 171) ([`crate::ot::oos16`]).
//!
//! Offline: the hashing seed by coin tossing; 512 KOS15 random OTs seed one OOS16
//! extension in which the sender is the OOS sender and the receiver encodes its slots.
//!
//! Online: both hash their items to ℓ_h-bit values v(x) and phase them into m bins. The
//! receiver puts each item at a uniformly random unused slot of its μ (zero words in the
//! rest; a bin with more than μ items fails its run), encodes its slots and proves it; it
//! keeps, for each item y at slot p of bin b, the tag `⟦y'⟧^TAG_{b,p}` (32 bits) and key
//! `⟦y'⟧^ENC_{b,p}` (128 bits), two slices of the encoding (a random-oracle output). Only
//! once its proof holds does the sender send, for each x in a random order, a commitment
//! `COMM(v(x); r_x) = H(v(x) ‖ r_x)` (256 bits, fresh r_x of κ = 128 bits) and, for each j
//! ∈ [μ], `⟦x'⟧^TAG_{b,j} ‖ ⟦x'⟧^ENC_{b,j} ⊕ r_x`. The receiver outputs y when the pair at
//! its slot carries its tag and opens the commitment to v(y): a tag alone is never an
//! output.
//!
//! The sender's slots play no part, so its bins need no bound; its commitments bind it to
//! exactly n_A items (Thm. 3), where a cheating receiver may still hold up to m·μ. Only the
//! receiver learns the intersection and `--both` is refused, as for dual execution (§6.7).

use super::{encode_own, phased, toss_seed, Domains, Hashing};
use crate::crypto::{block_of_words, Block, RandomOracle, RowDigest};
use crate::items::Items;
use crate::net::{Channel, Writer};
use crate::ot::oos16::{OosReceiverSeeds, OosSender, OosSenderSeeds};
use crate::protocols::matching::CHUNK_ITEMS;
use crate::protocols::{
    AnyParty, Bins, Context, Output, OutputKind, ParamTable, Parameters, Party, ProtocolInfo,
    RoleInfo, Security, Sizes, TypedProtocol,
};
use crate::session::Role;
use crate::state::{StateReader, StateWriter};
use crate::tables::simple_hash::{bin_size, SlotTable};
use crate::tables::TagTable;
use crate::Result;

/// RR17 encode-commit PSI (random-oracle model).
pub(crate) struct Rr17Ec;
/// The sender.
struct EcSender;
/// The receiver.
struct EcReceiver;

/// Bytes of a commitment `H(v(x) ‖ r_x)` (spec §5.4: C = 2κ).
const COMMITMENT_BYTES: usize = 32;
/// Bytes of a tag τ (spec §5.4: its length trades traffic against trial openings; with 32
/// bits the receiver expects n_A·n_B·2^-32 tags that match without opening, about 256 at
/// 2^20).
const TAG_BYTES: usize = 4;
/// Bytes of a masked decommitment `ENC ⊕ r_x` (κ bits).
const KEY_BYTES: usize = 16;
/// Bytes of one pair `tag ‖ ENC ⊕ r_x`.
const PAIR_BYTES: usize = TAG_BYTES + KEY_BYTES;

/// The label of the hashing seed's coin toss.
const SEED_TOSS: &str = "rr17-ec hashing seed";

static INFO: ProtocolInfo = ProtocolInfo {
    name: "rr17-ec",
    paper: "Rindal, Rosulek: Malicious-Secure Private Set Intersection via Dual Execution \
            (CCS 2017), encode-commit: §6.4 and App. B (Fig. 9), F_encode by OOS16 over \
            BCH-(511,76,171) (§7), commitments H(x‖r)",
    security: Security::Malicious,
    leakage: "The receiver learns the intersection; the sender learns nothing. Both learn the \
              other's set size. Secure against a malicious party in the random-oracle model \
              (UC; a cheating receiver's set may hold up to m·μ items, about 7.75n at n = \
              2^20, a cheating sender's exactly its declared size, one commitment each); a \
              receiver whose OT-extension rows do not each encode one value is caught by the \
              OOS16 check before the sender sends anything that depends on them.",
    both_allowed: false,
    roles: &[
        RoleInfo {
            role: Role::Sender,
            security: Security::Malicious,
            output: OutputKind::Nothing,
            // The receiver's rows: m·μ of 64 bytes, m·μ ≈ 8 n_B.
            peer_item_bytes: 600,
            // Its values, keys and bins in item and sending order (tuples are streamed);
            // the receiver's rows when its set sets m (m·μ ≈ 3.25 n_A at worst).
            own_item_bytes: 400,
        },
        RoleInfo {
            role: Role::Receiver,
            security: Security::Malicious,
            output: OutputKind::Indices,
            // Its slot words (m·μ of 16 bytes) when the sender's set sets m; its tuples
            // stream.
            peer_item_bytes: 200,
            // Slot words, encodings, tag table, keys and values.
            own_item_bytes: 600,
        },
    ],
};

/// The parameters of one run (Fig. 9 header, spec §5.4).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Rr17EcParams {
    /// Set sizes, m bins (⌊n/4⌋ or ⌊n/10⌋ for n the larger set) and hashed-item bits.
    hashing: Hashing,
    /// Slots in the receiver's bins (there are m·μ OOS16 instances).
    pub mu: usize,
}

impl Rr17EcParams {
    pub(super) fn new(sizes: Sizes, bins: Bins) -> Result<Self> {
        let hashing = Hashing::new(INFO.name, sizes, bins)?;
        let mu = bin_size(hashing.n_b, hashing.m);
        // The receiver's slots (OOS16 instances).
        Hashing::fit_32_bits(INFO.name, &[hashing.m as u128 * mu as u128])?;
        Ok(Rr17EcParams { hashing, mu })
    }

    /// Bytes of one of the sender's tuples: a commitment and μ pairs.
    fn tuple_bytes(&self) -> usize {
        COMMITMENT_BYTES + self.mu * PAIR_BYTES
    }
}

impl Parameters for Rr17EcParams {
    fn encode(&self) -> Vec<u8> {
        Writer::new()
            .u64(self.hashing.m)
            .u64(self.mu as u64)
            .u64(self.hashing.bits as u64)
            .u64(self.tuple_bytes() as u64)
            .0
    }

    fn table(&self) -> ParamTable {
        ParamTable(vec![
            ("bins", self.hashing.m.to_string()),
            ("mu_receiver", self.mu.to_string()),
            // OOS16 instances: the receiver encodes its m·μ slots.
            ("ots", (self.hashing.m * self.mu as u64).to_string()),
            ("hashed_bits", self.hashing.bits.to_string()),
            ("commitment_bits", (8 * COMMITMENT_BYTES).to_string()),
            ("tag_bits", (8 * TAG_BYTES).to_string()),
            ("key_bits", (8 * KEY_BYTES).to_string()),
        ])
    }
}

impl TypedProtocol for Rr17Ec {
    type Config = Bins;

    fn info(&self) -> &'static ProtocolInfo {
        &INFO
    }

    fn params(&self, sizes: Sizes, bins: Bins) -> Result<Box<dyn Parameters>> {
        Ok(Box::new(Rr17EcParams::new(sizes, bins)?))
    }

    fn party(&self, role: Role) -> &'static dyn AnyParty {
        match role {
            Role::Sender => &EcSender,
            Role::Receiver => &EcReceiver,
        }
    }
}

/// `COMM(v; r) = H(v ‖ r)`, a random oracle bound to the session (App. A: straight-line
/// extractable and hiding in the non-programmable random-oracle model).
fn commitment(oracle: &RandomOracle, v: Block, r: Block) -> [u8; COMMITMENT_BYTES] {
    oracle.hash(&[&v.to_le_bytes(), &r.to_le_bytes()])
}

/// `⟦v⟧^TAG` and `⟦v⟧^ENC` (Fig. 9 step 3): disjoint slices of the encoding.
fn tag_and_key(encoding: &RowDigest) -> (u32, Block) {
    (encoding[0], block_of_words(&encoding[1..5]))
}

/// How many items ahead the sender's sending loop loads the rows of the bin it will need.
const AHEAD: usize = 4;

/// `values` in the order `order` (`order[k]` is the index of the k-th).
fn gathered<T: Copy>(order: &[u32], values: &[T]) -> Vec<T> {
    order.iter().map(|&x| values[x as usize]).collect()
}

/// What the sender keeps from the offline phase.
pub(super) struct EcSenderState {
    seed: Block,
    sending: OosSenderSeeds,
}

/// What the receiver keeps from the offline phase.
pub(super) struct EcReceiverState {
    seed: Block,
    encoding: OosReceiverSeeds,
}

impl Party for EcSender {
    type State = EcSenderState;

    /// Fig. 9 step 1 and the seed OTs of the receiver's slots.
    fn offline(&self, ctx: &mut Context) -> Result<EcSenderState> {
        let d = Domains::new(INFO.name, ctx);
        ctx.phase("coin tossing and seed OTs", true);
        let seed = toss_seed(ctx, Role::Sender, SEED_TOSS)?;
        let sending = OosSenderSeeds::new(ctx.peer, &mut ctx.prg, &d.direction_sid("A"))?;
        Ok(EcSenderState { seed, sending })
    }

    /// Fig. 9 steps 2–4.
    fn online(&self, ctx: &mut Context, state: EcSenderState, items: &Items) -> Result<Output> {
        send_tuples(ctx, state, items, |_, _| {})?;
        Ok(Output::Nothing)
    }

    fn save(&self, state: &EcSenderState, out: &mut StateWriter) -> Result<()> {
        out.block(state.seed)?;
        state.sending.save(out)
    }

    fn load(&self, _: Sizes, input: &mut StateReader) -> Result<EcSenderState> {
        Ok(EcSenderState {
            seed: input.block()?,
            sending: OosSenderSeeds::load(input)?,
        })
    }
}

/// The sender's Fig. 9 steps 2–4: its tuples, streamed in a random order, each frame passed
/// through `then(frame, tuple_bytes)` before it is sent (tests play cheating senders with
/// it).
fn send_tuples(
    ctx: &mut Context,
    state: EcSenderState,
    items: &Items,
    mut then: impl FnMut(&mut Vec<u8>, usize),
) -> Result<()> {
    let p = Rr17EcParams::new(ctx.session.sized, ctx.config()?)?;
    let d = Domains::new(INFO.name, ctx);
    ctx.phase("hashing and encoding", false);
    // Tuples go out in a random order, so its items are put in that order now (its output
    // is nothing: the order need not be kept): value k is of the item sent k-th.
    let values = d.hashed(&p.hashing, state.seed, items);
    let values = gathered(&ctx.prg.permutation(values.len()), &values);
    let (bins, reps) = phased(&values, p.hashing.m);
    let hash = d.encoding_hash("A");
    // The receiver's slots; its proof is checked before anything depends on them.
    let rows = OosSender::new(&state.sending).receive(
        ctx.peer,
        p.hashing.m as usize * p.mu,
        &mut ctx.prg,
    )?;
    ctx.phase("commitments", false);
    // Pair j of an item's tuple is for the receiver's slot j of its bin.
    let (tuple, mu) = (p.tuple_bytes(), p.mu);
    let oracle = d.oracle("commit");
    let mut encodings = Vec::with_capacity(mu);
    let mut frame = Vec::with_capacity(CHUNK_ITEMS * tuple);
    for first in (0..values.len()).step_by(CHUNK_ITEMS) {
        let count = (values.len() - first).min(CHUNK_ITEMS);
        frame.resize(count * tuple, 0);
        for (k, t) in (first..).zip(frame.chunks_exact_mut(tuple)) {
            // Its items go out in a random order, so the rows of the bin of each are a
            // cache miss: they are asked for AHEAD items early.
            if let Some(&b) = bins.get(k + AHEAD) {
                rows.prefetch(b * mu, mu);
            }
            let (b, r) = (bins[k], ctx.prg.block());
            t[..COMMITMENT_BYTES].copy_from_slice(&commitment(&oracle, values[k], r));
            encodings.clear();
            rows.encode_word(&hash, b * mu, mu, reps[k], &mut encodings);
            let pairs = t[COMMITMENT_BYTES..].chunks_exact_mut(PAIR_BYTES);
            for (pair, e) in pairs.zip(&encodings) {
                let (tag, key) = tag_and_key(e);
                pair[..TAG_BYTES].copy_from_slice(&tag.to_le_bytes());
                pair[TAG_BYTES..].copy_from_slice(&(key ^ r).to_le_bytes());
            }
        }
        then(&mut frame, tuple);
        ctx.peer.send(&frame)?;
    }
    Ok(())
}

/// The pairs `(tag, ENC ⊕ r)` of one of the sender's tuples.
fn pairs(tuple: &[u8]) -> impl Iterator<Item = (u32, Block)> + '_ {
    tuple[COMMITMENT_BYTES..]
        .chunks_exact(PAIR_BYTES)
        .map(|pair| {
            let (tag, masked) = pair.split_at(TAG_BYTES);
            let tag = u32::from_le_bytes(tag.try_into().expect("4 bytes"));
            (
                tag,
                Block::from_le_bytes(masked.try_into().expect("16 bytes")),
            )
        })
}

/// The receiver's side of Fig. 9 step 4: what it holds to open the sender's commitments.
struct Openings {
    table: TagTable,
    /// `⟦y'⟧^ENC` of each of its items' slot.
    keys: Vec<Block>,
    /// Its items' hashed values.
    values: Vec<Block>,
    oracle: RandomOracle,
    mu: usize,
}

impl Openings {
    /// Fig. 9 steps 2 and 3 for the receiver: its slots encoded and proved, and its tags
    /// and keys.
    fn new(ctx: &mut Context, state: EcReceiverState, items: &Items) -> Result<Self> {
        let p = Rr17EcParams::new(ctx.session.sized, ctx.config()?)?;
        let d = Domains::new(INFO.name, ctx);
        ctx.phase("hashing and encoding", false);
        let values = d.hashed(&p.hashing, state.seed, items);
        let (bins, reps) = phased(&values, p.hashing.m);
        let slots = SlotTable::place(&bins, p.hashing.m as usize, p.mu, &mut ctx.prg)?;
        drop(bins);
        let own = encode_own(ctx, &state.encoding, &slots, &reps, &d.encoding_hash("A"))?;
        let (tags, keys): (Vec<u32>, Vec<Block>) = own.iter().map(tag_and_key).unzip();
        let groups = slots.slot_of.iter().map(|s| s % p.mu as u32);
        Ok(Openings {
            table: TagTable::new(tags.into_iter().zip(groups)),
            keys,
            values,
            oracle: d.oracle("commit"),
            mu: p.mu,
        })
    }

    /// Receives the sender's `n_a` tuples of μ pairs (exactly; a tuple more or less is a
    /// protocol error) and calls `opened(y, r, k)` for each of the receiver's items y whose
    /// pair opens the commitment, with r, of the k-th tuple.
    fn receive(
        &self,
        chan: &mut dyn Channel,
        n_a: usize,
        mut opened: impl FnMut(usize, Block, usize),
    ) -> Result<()> {
        let mu = self.mu;
        // Tuples ahead whose tags' buckets are loaded early.
        const AHEAD: usize = 2;
        let tuple = COMMITMENT_BYTES + mu * PAIR_BYTES;
        let mut frame = Vec::new();
        for first in (0..n_a).step_by(CHUNK_ITEMS) {
            let count = (n_a - first).min(CHUNK_ITEMS);
            chan.recv_exact_into(&mut frame, count * tuple, "commitment tuples")?;
            let tuples: Vec<&[u8]> = frame.chunks_exact(tuple).collect();
            for (k, t) in tuples.iter().enumerate() {
                // Pair j of the tuple AHEAD later, loaded as pair j of this one is looked up
                // (one at a time: a burst of loads would overflow the miss buffers).
                let mut later = tuples.get(k + AHEAD).map(|t| pairs(t));
                let committed = &t[..COMMITMENT_BYTES];
                for (j, (tag, masked)) in pairs(t).enumerate() {
                    if let Some((tag, _)) = later.as_mut().and_then(Iterator::next) {
                        self.table.prefetch(tag);
                    }
                    self.table.find(tag, j as u32, |y| {
                        let y = y as usize;
                        let r = masked ^ self.keys[y];
                        if commitment(&self.oracle, self.values[y], r) == committed {
                            opened(y, r, first + k);
                        }
                    });
                }
            }
        }
        Ok(())
    }
}

impl Party for EcReceiver {
    type State = EcReceiverState;

    /// Fig. 9 step 1 and the seed OTs of its slots.
    fn offline(&self, ctx: &mut Context) -> Result<EcReceiverState> {
        let d = Domains::new(INFO.name, ctx);
        ctx.phase("coin tossing and seed OTs", true);
        let seed = toss_seed(ctx, Role::Receiver, SEED_TOSS)?;
        let encoding = OosReceiverSeeds::new(ctx.peer, &mut ctx.prg, &d.direction_sid("A"))?;
        Ok(EcReceiverState { seed, encoding })
    }

    /// Fig. 9 steps 2–4.
    fn online(&self, ctx: &mut Context, state: EcReceiverState, items: &Items) -> Result<Output> {
        let openings = Openings::new(ctx, state, items)?;
        ctx.phase("trial openings", false);
        let mut found = Vec::new();
        let n_a = ctx.session.n_sender as usize;
        openings.receive(ctx.peer, n_a, |y, _, _| found.push(y))?;
        found.sort_unstable();
        found.dedup();
        Ok(Output::Indices(found))
    }

    fn save(&self, state: &EcReceiverState, out: &mut StateWriter) -> Result<()> {
        out.block(state.seed)?;
        state.encoding.save(out)
    }

    fn load(&self, _: Sizes, input: &mut StateReader) -> Result<EcReceiverState> {
        Ok(EcReceiverState {
            seed: input.block()?,
            encoding: OosReceiverSeeds::load(input)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_parties::{run, sets};
    use super::*;
    use crate::protocols::Options;
    use crate::Error;

    const N: usize = 300;
    const SHARED: usize = 60;

    /// An honest receiver's output against a sender who runs the protocol but changes its
    /// tuples with `cheat(tuples, tuple_bytes)` before they are sent.
    fn against_sender(cheat: impl FnMut(&mut Vec<u8>, usize) + Send) -> Result<Output> {
        let (a, b) = sets(N, N, SHARED);
        run(
            (N, N),
            Options::default(),
            |ctx| {
                let state = Party::offline(&EcSender, ctx)?;
                send_tuples(ctx, state, &a, cheat)
            },
            |ctx| {
                let state = Party::offline(&EcReceiver, ctx)?;
                Party::online(&EcReceiver, ctx, state, &b)
            },
        )
        .1
    }

    fn indices(output: Result<Output>) -> Vec<usize> {
        match output {
            Ok(Output::Indices(found)) => found,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn an_honest_sender_gives_the_intersection() {
        let found = indices(against_sender(|_, _| {}));
        assert_eq!(found, (0..SHARED).collect::<Vec<_>>());
    }

    /// Spec §9 item 15: the sender commits to one item and encodes another (each commitment
    /// moved to the next tuple): nothing opens, nothing is output, and the receiver does
    /// not abort (a failed opening is an input choice, §6.3).
    #[test]
    fn commitments_to_other_items_open_nothing() {
        let found = indices(against_sender(|packed, tuple| {
            let n = packed.len() / tuple;
            let commitments: Vec<u8> = (0..n)
                .flat_map(|k| packed[k * tuple..k * tuple + COMMITMENT_BYTES].to_vec())
                .collect();
            for k in 0..n {
                let from = (k + 1) % n * COMMITMENT_BYTES;
                packed[k * tuple..k * tuple + COMMITMENT_BYTES]
                    .copy_from_slice(&commitments[from..from + COMMITMENT_BYTES]);
            }
        }));
        assert!(found.is_empty(), "{found:?}");
    }

    /// Spec §9 item 16: the right tags with altered masked keys: a tag match alone is never
    /// an output.
    #[test]
    fn a_tag_without_its_key_is_no_output() {
        let found = indices(against_sender(|packed, tuple| {
            for t in packed.chunks_exact_mut(tuple) {
                for pair in t[COMMITMENT_BYTES..].chunks_exact_mut(PAIR_BYTES) {
                    pair[TAG_BYTES] ^= 1;
                }
            }
        }));
        assert!(found.is_empty(), "{found:?}");
    }

    /// Spec §9 item 19: the first half of the tuples sent twice (in place of the second):
    /// each item of the first half that the receiver holds is output once, nothing else.
    #[test]
    fn a_tuple_sent_twice_outputs_its_item_once() {
        let found = indices(against_sender(|packed, tuple| {
            let half = packed.len() / tuple / 2 * tuple;
            packed.copy_within(..half, half);
        }));
        assert!(
            !found.is_empty() && found.iter().all(|&y| y < SHARED),
            "{found:?}"
        );
        assert!(found.is_sorted() && found.windows(2).all(|w| w[0] < w[1]));
    }

    /// Spec §9 item 17: a tuple fewer or more than the sender's declared size is a protocol
    /// error, not an output.
    #[test]
    fn a_missing_or_surplus_tuple_is_refused() {
        for more in [false, true] {
            let r = against_sender(|packed, tuple| {
                let len = packed.len();
                packed.resize(if more { len + tuple } else { len - tuple }, 0);
            });
            assert!(matches!(r, Err(Error::Protocol { .. })), "{r:?}");
        }
    }

    /// Spec §9 item 18: every pair of every tuple given the tag of the first tuple's pair
    /// (the same j): the receiver's work stays one lookup a pair, and only the first
    /// tuple's item can open.
    #[test]
    fn tags_copied_into_every_tuple_open_at_most_the_original() {
        let found = indices(against_sender(|packed, tuple| {
            let first = packed[..tuple].to_vec();
            for t in packed.chunks_exact_mut(tuple) {
                let pairs = t[COMMITMENT_BYTES..].chunks_exact_mut(PAIR_BYTES);
                let originals = first[COMMITMENT_BYTES..].chunks_exact(PAIR_BYTES);
                for (pair, original) in pairs.zip(originals) {
                    pair[..TAG_BYTES].copy_from_slice(&original[..TAG_BYTES]);
                }
            }
        }));
        assert!(
            found.len() <= 1 && found.iter().all(|&y| y < SHARED),
            "{found:?}"
        );
    }

    #[test]
    fn tags_and_keys_are_disjoint_slices_of_the_encoding() {
        let base: RowDigest = [1, 2, 3, 4, 5, 6, 7, 8];
        let (tag, key) = tag_and_key(&base);
        for w in 0..8 {
            let mut e = base;
            e[w] ^= 0x8000_0001;
            let (t, k) = tag_and_key(&e);
            assert_eq!(
                (t != tag, k != key),
                (w == 0, (1..5).contains(&w)),
                "word {w}"
            );
        }
    }

    /// The Pearson correlation of two equally long sequences.
    fn correlation(a: &[f64], b: &[f64]) -> f64 {
        let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
        let (ma, mb) = (mean(a), mean(b));
        let cov: f64 = a.iter().zip(b).map(|(x, y)| (x - ma) * (y - mb)).sum();
        let var = |v: &[f64], m: f64| v.iter().map(|x| (x - m) * (x - m)).sum::<f64>();
        cov / (var(a, ma) * var(b, mb)).sqrt()
    }

    /// Spec §9 items 6 and 21, against a receiver who holds all of the sender's items: it
    /// opens every tuple, but each with its own r (a reused r would let it test guesses
    /// against the other commitments offline), and a tuple's place says nothing of its
    /// item's place in the sender's input or of its bin.
    #[test]
    fn a_receiver_holding_everything_sees_fresh_randomness_in_a_random_order() {
        let (a, _) = sets(N, N, 0);
        let (opened, bins) = run(
            (N, N),
            Options::default(),
            |ctx| {
                let state = Party::offline(&EcSender, ctx)?;
                send_tuples(ctx, state, &a, |_, _| {})
            },
            |ctx| {
                let state = Party::offline(&EcReceiver, ctx)?;
                let p = Rr17EcParams::new(ctx.session.sized, ctx.config()?)?;
                let values = Domains::new(INFO.name, ctx).hashed(&p.hashing, state.seed, &a);
                let bins = phased(&values, p.hashing.m).0;
                let openings = Openings::new(ctx, state, &a)?;
                let mut opened = Vec::new();
                openings.receive(ctx.peer, N, |y, r, k| opened.push((y, r, k)))?;
                Ok((opened, bins))
            },
        )
        .1
        .expect("an honest run");
        assert_eq!(opened.len(), N, "each tuple opens once");
        let mut rs: Vec<Block> = opened.iter().map(|o| o.1).collect();
        rs.sort_unstable_by_key(|r| r.as_u128());
        rs.dedup();
        assert_eq!(rs.len(), N, "a fresh r for each item");
        let place: Vec<f64> = opened.iter().map(|o| o.2 as f64).collect();
        let input: Vec<f64> = opened.iter().map(|o| o.0 as f64).collect();
        let bin: Vec<f64> = opened.iter().map(|o| bins[o.0] as f64).collect();
        // For a uniform order the correlation has standard deviation 1/sqrt(N - 1) ≈ 0.06.
        for (what, c) in [
            ("input", correlation(&place, &input)),
            ("bin", correlation(&place, &bin)),
        ] {
            assert!(c.abs() < 0.25, "the order follows the {what} order: {c}");
        }
    }
}
