//! RR17 dual-execution PSI in the random-oracle model (Rindal–Rosulek, "Malicious-secure
//! private set intersection via dual execution", CCS 2017, Fig. 4 with the §6.2
//! aggregation), F_encode realised by OOS16 over BCH-(511, 76, 171) ([`crate::ot::oos16`]).
//!
//! Offline: the hashing seed by coin tossing; 512 KOS15 random OTs per direction seed the
//! two OOS16 extensions — direction A (Alice, the sender, is OOS sender; Bob encodes his
//! slots) and direction B (Bob is OOS sender; Alice encodes hers).
//!
//! Online: each party hashes its items to ℓ_h-bit values (a random oracle, keyed by the
//! session and the seed), phases them into m bins and puts each at a uniformly random
//! unused slot of μ (zero words in the rest). Alice encodes her slots in direction B and
//! proves consistency; Bob verifies, then encodes his in direction A and proves; Alice
//! verifies. Only then does Alice send, for each item x in a random order and each
//! j ∈ [μ_B], `⟦x'⟧ᴬ_{b,j} ⊕ ⟦x'⟧ᴮ_{b,p}` (her slot p); Bob outputs each y for which some
//! `⟦y'⟧ᴬ_{b,p} ⊕ ⟦y'⟧ᴮ_{b,j}`, j ∈ [μ_A], is among them. The values have
//! ℓ = λ + log2(n_A·μ_B) + log2(n_B·μ_A) bits (Fig. 4's λ + 2 log(nμ) for unequal sizes,
//! spec §4.9), so a value Alice makes up without encoding matches with probability ≤ 2^-λ.
//!
//! Only Bob learns the intersection: a Bob who also returned values could make Alice learn
//! X ∩ Y' for any Y' ⊆ Y of his choice (§6.7), so `--both` is refused.

use super::{encode_own, phased, toss_seed, Domains, Hashing};
use crate::crypto::{first_block, Block, RowDigest, RowHash};
use crate::items::Items;
use crate::memory::huge_vec;
use crate::net::Writer;
use crate::ot::oos16::{OosReceiverSeeds, OosRows, OosSender, OosSenderSeeds};
use crate::protocols::matching::{receive_matches, send_packed};
use crate::protocols::{
    round_up_to_byte, AnyParty, Context, Output, OutputKind, ParamTable, Parameters, Party,
    Protocol, ProtocolInfo, RoleInfo, Security, Sizes,
};
use crate::session::Role;
use crate::state::{StateReader, StateWriter};
use crate::tables::simple_hash::{bin_size, SlotTable};
use crate::tables::MatchTable;
use crate::{Result, STATISTICAL_SECURITY};

/// RR17 dual-execution PSI (random-oracle model).
pub struct Rr17De;
/// Alice, the sender.
struct DeSender;
/// Bob, the receiver.
struct DeReceiver;

/// The label of the hashing seed's coin toss.
const SEED_TOSS: &str = "rr17-de hashing seed";

static INFO: ProtocolInfo = ProtocolInfo {
    name: "rr17-de",
    paper: "Rindal, Rosulek: Malicious-Secure Private Set Intersection via Dual Execution \
            (CCS 2017), Fig. 4 with §6.2, F_encode by OOS16 over BCH-(511,76,171) (§7)",
    security: Security::Malicious,
    leakage: "The receiver learns the intersection; the sender learns nothing. Both learn the \
              other's set size. Secure against a malicious party in the random-oracle model \
              (UC, with the paper's relaxation: a cheating party's set may hold up to m·μ \
              items, about 7.75n at n = 2^20); a party whose OT-extension rows do not each \
              encode one value is caught by the OOS16 check before anything depends on them.",
    both_allowed: false,
    roles: &[
        RoleInfo {
            role: Role::Sender,
            security: Security::Malicious,
            output: OutputKind::Nothing,
            // Direction A's rows: m·μ_B rows of 64 bytes, m·μ_B ≈ 7.75 n_B.
            peer_item_bytes: 600,
            // Her slot words, outputs and item values.
            own_item_bytes: 600,
        },
        RoleInfo {
            role: Role::Receiver,
            security: Security::Malicious,
            output: OutputKind::Indices,
            // Direction B's rows (m·μ_A of 64 bytes) and Alice's values as they stream.
            peer_item_bytes: 600,
            // μ_A table entries of 24 bytes per item, slot words and outputs.
            own_item_bytes: 1400,
        },
    ],
};

/// The parameters of one run (Fig. 4 header, §6.6, spec §4.4 and §4.9).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rr17DeParams {
    /// Set sizes, m bins (⌊n/4⌋ for n the larger set) and hashed-item bits.
    hashing: Hashing,
    /// Slots in Alice's bins (direction B has m·μ_A instances).
    pub mu_a: usize,
    /// Slots in Bob's bins (direction A has m·μ_B instances).
    pub mu_b: usize,
    /// Bytes of a comparison value.
    pub value_bytes: usize,
}

impl Rr17DeParams {
    pub fn new(sizes: Sizes) -> Result<Self> {
        let h = Hashing::new(INFO.name, sizes)?;
        let (mu_a, mu_b) = (bin_size(h.n_a, h.m), bin_size(h.n_b, h.m));
        // Slots of each direction and comparison values of each party.
        let (ma, mb) = (mu_a as u64, mu_b as u64);
        let counts = [(h.m, ma), (h.m, mb), (h.n_a, mb), (h.n_b, ma)];
        Hashing::fit_32_bits(INFO.name, &counts.map(|(a, b)| a as u128 * b as u128))?;
        let value_bits = STATISTICAL_SECURITY as f64
            + (h.n_a as f64 * mu_b as f64).log2()
            + (h.n_b as f64 * mu_a as f64).log2();
        let value_bytes = round_up_to_byte(value_bits) / 8;
        assert!(value_bytes <= 16, "comparison values fit a block");
        Ok(Rr17DeParams {
            hashing: h,
            mu_a,
            mu_b,
            value_bytes,
        })
    }
}

impl Parameters for Rr17DeParams {
    fn encode(&self) -> Vec<u8> {
        Writer::new()
            .u64(self.hashing.m)
            .u64(self.mu_a as u64)
            .u64(self.mu_b as u64)
            .u64(self.hashing.bits as u64)
            .u64(self.value_bytes as u64)
            .0
    }

    fn table(&self) -> ParamTable {
        ParamTable(vec![
            ("bins", self.hashing.m.to_string()),
            ("mu_sender", self.mu_a.to_string()),
            ("mu_receiver", self.mu_b.to_string()),
            // OOS16 instances per direction: Bob encodes m·μ_B slots (A), Alice m·μ_A (B).
            ("ots_A", (self.hashing.m * self.mu_b as u64).to_string()),
            ("ots_B", (self.hashing.m * self.mu_a as u64).to_string()),
            ("hashed_bits", self.hashing.bits.to_string()),
            ("v", (8 * self.value_bytes).to_string()),
        ])
    }
}

impl Protocol for Rr17De {
    fn info(&self) -> &'static ProtocolInfo {
        &INFO
    }

    fn params(&self, sizes: Sizes) -> Result<Box<dyn Parameters>> {
        Ok(Box::new(Rr17DeParams::new(sizes)?))
    }

    fn party(&self, role: Role) -> &'static dyn AnyParty {
        match role {
            Role::Sender => &DeSender,
            Role::Receiver => &DeReceiver,
        }
    }
}

/// Bob's table entries gathered before they are inserted (so their slots can be prefetched).
const INSERT_BATCH: usize = 4096;

/// Fig. 4 step 2: hash, phase and place `items` in m bins of μ slots. Returns the slots
/// and each item's representative (its word in F_encode).
fn place(
    ctx: &mut Context,
    p: &Rr17DeParams,
    seed: Block,
    items: &Items,
    mu: usize,
) -> Result<(SlotTable, Vec<Block>)> {
    let values = Domains::new(INFO.name, ctx).hashed(&p.hashing, seed, items);
    let (bins, reps) = phased(&values, p.hashing.m);
    let slots = SlotTable::place(&bins, p.hashing.m as usize, mu, &mut ctx.prg)?;
    Ok((slots, reps))
}

/// This party's items in bin `b` (its slots `b·μ_own ..`, each kept with its slot).
fn bin_items(slots: &SlotTable, b: usize) -> impl Iterator<Item = (usize, u32)> + '_ {
    (b * slots.mu..(b + 1) * slots.mu)
        .filter_map(|slot| slots.item_at[slot].map(|x| (x as usize, slot as u32)))
}

/// Reused buffers for [`encode_bin`].
#[derive(Default)]
struct BinScratch {
    /// The bin's items of this party, each with its slot.
    items: Vec<(usize, u32)>,
    words: Vec<Block>,
    /// `encodings[j·items.len() + k]`: item k in the peer's row j of the bin.
    encodings: Vec<RowDigest>,
}

/// This party's `items` of bin `b` (each with its slot), each encoded in
/// every one of the peer's `mu_peer` rows of the bin (where this party is the OOS sender).
fn encode_bin(
    items: impl Iterator<Item = (usize, u32)>,
    reps: &[Block],
    rows: &OosRows,
    hash: &RowHash,
    b: usize,
    mu_peer: usize,
    s: &mut BinScratch,
) {
    s.items.clear();
    s.items.extend(items);
    s.words.clear();
    s.words.extend(s.items.iter().map(|&(x, _)| reps[x]));
    s.encodings.clear();
    if !s.items.is_empty() {
        rows.encode(hash, b * mu_peer, mu_peer, &s.words, &mut s.encodings);
    }
}

/// A comparison value: the XOR of two encodings' first 128 bits, cut to `bytes` bytes.
fn combine(a: &RowDigest, b: &RowDigest, bytes: usize) -> Block {
    let v = first_block(a) ^ first_block(b);
    if bytes >= 16 {
        v
    } else {
        v & ((1 << (8 * bytes)) - 1)
    }
}

/// What both parties keep from the offline phase.
pub struct DeState {
    seed: Block,
    /// Seeds of the direction in which this party is the OOS sender.
    sending: OosSenderSeeds,
    /// Seeds of the direction in which it encodes its own slots.
    encoding: OosReceiverSeeds,
}

/// Fig. 4 step 1 and the seed OTs of both directions, A first: in A Alice is the OOS
/// sender and Bob encodes his slots, in B the other way round.
fn offline(ctx: &mut Context, role: Role) -> Result<DeState> {
    let d = Domains::new(INFO.name, ctx);
    ctx.phase("coin tossing and seed OTs", true);
    let seed = toss_seed(ctx, role, SEED_TOSS)?;
    let (sid_a, sid_b) = (d.direction_sid("A"), d.direction_sid("B"));
    let (sending, encoding) = match role {
        Role::Sender => {
            let sending = OosSenderSeeds::new(ctx.peer, &mut ctx.prg, &sid_a)?;
            (
                sending,
                OosReceiverSeeds::new(ctx.peer, &mut ctx.prg, &sid_b)?,
            )
        }
        Role::Receiver => {
            let encoding = OosReceiverSeeds::new(ctx.peer, &mut ctx.prg, &sid_a)?;
            (
                OosSenderSeeds::new(ctx.peer, &mut ctx.prg, &sid_b)?,
                encoding,
            )
        }
    };
    Ok(DeState {
        seed,
        sending,
        encoding,
    })
}

fn save_state(state: &DeState, out: &mut StateWriter) -> Result<()> {
    out.block(state.seed)?;
    state.sending.save(out)?;
    state.encoding.save(out)
}

fn load_state(input: &mut StateReader) -> Result<DeState> {
    Ok(DeState {
        seed: input.block()?,
        sending: OosSenderSeeds::load(input)?,
        encoding: OosReceiverSeeds::load(input)?,
    })
}

impl Party for DeSender {
    type State = DeState;

    fn offline(&self, ctx: &mut Context) -> Result<DeState> {
        offline(ctx, Role::Sender)
    }

    fn online(&self, ctx: &mut Context, state: DeState, items: &Items) -> Result<Output> {
        let p = Rr17DeParams::new(ctx.session.sized)?;
        let d = Domains::new(INFO.name, ctx);
        ctx.phase("hashing and encoding", false);
        let (slots, reps) = place(ctx, &p, state.seed, items, p.mu_a)?;
        let (hash_a, hash_b) = (d.encoding_hash("A"), d.encoding_hash("B"));
        // Direction B: encode her slots and prove it.
        let own = encode_own(ctx, &state.encoding, &slots, &reps, &hash_b)?;
        // Direction A: Bob's slots; his proof is checked before anything depends on them.
        let rows = OosSender::new(&state.sending).receive(
            ctx.peer,
            p.hashing.m as usize * p.mu_b,
            &mut ctx.prg,
        )?;
        ctx.phase("comparison values", false);
        // Items go out in a random order (rank[x] = x's place), each with μ_B values: value
        // j is for Bob's slot j of the bin. They are computed bin by bin (the bin's rows
        // read once, in order) into the frames' bytes, an item's values side by side, while
        // Bob fills his table; then sent.
        let rank = ctx.prg.permutation(items.len());
        let (mu, bytes) = (p.mu_b, p.value_bytes);
        let mut packed = huge_vec(items.len() * mu * bytes, 0u8);
        let mut bin = BinScratch::default();
        for b in 0..p.hashing.m as usize {
            encode_bin(bin_items(&slots, b), &reps, &rows, &hash_a, b, mu, &mut bin);
            let k = bin.items.len();
            for (i, &(x, _)) in bin.items.iter().enumerate() {
                let at = rank[x] as usize * mu * bytes;
                let values = packed[at..at + mu * bytes].chunks_exact_mut(bytes);
                for (j, v) in values.enumerate() {
                    let value = combine(&bin.encodings[j * k + i], &own[x], bytes);
                    v.copy_from_slice(&value.to_le_bytes()[..bytes]);
                }
            }
        }
        send_packed(ctx.peer, mu, bytes, &packed)?;
        Ok(Output::Nothing)
    }

    fn save(&self, state: &DeState, out: &mut StateWriter) -> Result<()> {
        save_state(state, out)
    }

    fn load(&self, _: Sizes, input: &mut StateReader) -> Result<DeState> {
        load_state(input)
    }
}

impl Party for DeReceiver {
    type State = DeState;

    fn offline(&self, ctx: &mut Context) -> Result<DeState> {
        offline(ctx, Role::Receiver)
    }

    fn online(&self, ctx: &mut Context, state: DeState, items: &Items) -> Result<Output> {
        let p = Rr17DeParams::new(ctx.session.sized)?;
        let d = Domains::new(INFO.name, ctx);
        ctx.phase("hashing and encoding", false);
        let (slots, reps) = place(ctx, &p, state.seed, items, p.mu_b)?;
        // Direction B: Alice's slots; her proof is checked before anything depends on them.
        let rows = OosSender::new(&state.sending).receive(
            ctx.peer,
            p.hashing.m as usize * p.mu_a,
            &mut ctx.prg,
        )?;
        // Direction A: encode his slots and prove it.
        let (hash_a, hash_b) = (d.encoding_hash("A"), d.encoding_hash("B"));
        let own = encode_own(ctx, &state.encoding, &slots, &reps, &hash_a)?;
        ctx.phase("comparison values", false);
        let mut table = MatchTable::with_capacity(items.len() * p.mu_a);
        let mut pending = Vec::with_capacity(INSERT_BATCH + p.mu_a * p.mu_b);
        let mut bin = BinScratch::default();
        // Bin by bin: each of Alice's rows of the bin against each of Bob's items in it.
        for b in 0..p.hashing.m as usize {
            let items = bin_items(&slots, b);
            encode_bin(items, &reps, &rows, &hash_b, b, p.mu_a, &mut bin);
            for (e, theirs) in bin.encodings.iter().enumerate() {
                let (j, (y, slot)) = (e / bin.items.len(), bin.items[e % bin.items.len()]);
                let value = combine(&own[y], theirs, p.value_bytes);
                // Alice's value for y comes in the group of y's slot in its bin.
                pending.push((value, slot % p.mu_b as u32, (y * p.mu_a + j) as u32));
            }
            if pending.len() >= INSERT_BATCH {
                table.insert_batch(&pending);
                pending.clear();
            }
        }
        table.insert_batch(&pending);
        let n_a = ctx.session.n_sender as usize;
        let matches = receive_matches(ctx.peer, n_a, p.mu_b, p.value_bytes, &table)?;
        let mut found: Vec<usize> = matches.iter().map(|&(e, _)| e as usize / p.mu_a).collect();
        found.dedup();
        Ok(Output::Indices(found))
    }

    fn save(&self, state: &DeState, out: &mut StateWriter) -> Result<()> {
        save_state(state, out)
    }

    fn load(&self, _: Sizes, input: &mut StateReader) -> Result<DeState> {
        load_state(input)
    }
}
