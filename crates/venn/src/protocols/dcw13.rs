//! DCW13 (Dong, Chen, Wen, CCS 2013), the *semi-honest* garbled-Bloom-filter protocol as
//! RR17 §3 describes it, with the random-GBF optimisation of PSZ14 (RR17 §4.1). The
//! malicious variant's N/2-out-of-N secret sharing is left out: RR17 §3.1 shows it
//! insecure.
//!
//! Roles: RR17's Alice is Venn's sender and its Bob Venn's receiver.
//!
//! The receiver puts its items in a Bloom filter `B` and uses its bits as choice bits
//! of `N` random OTs (IKNP); the sender's choice-1 messages form a random garbled Bloom
//! filter `G`, so the receiver learns `G[j]` exactly where `B[j] = 1`. The sender sends, in
//! random order, the summary `K_x = ⊕_{j ∈ h*(x)} G[j]` of each item over the *set* of its
//! positions (RR17 footnote 3); the receiver computes `K_y` for its items and matches.
//!
//! Parameters: `k = λ = 40` hash functions and `N = k·n_r / ln 2` bits, so a Bloom-filter
//! false positive — which would let the receiver test a guessed item of the sender's — has
//! probability at most 2^-40 per item.

use super::matching::{receive_matches, send_positions, send_values, sender_output};
use super::{
    output_bits, AnyParty, Context, Output, OutputKind, ParamTable, Parameters, Party,
    ProtocolInfo, RoleInfo, Security, Sizes, TypedProtocol,
};
use crate::crypto::Block;
use crate::items::{BlockEncoder, Items};
use crate::net::Writer;
use crate::ot::{iknp_receive, iknp_send, MasnyRindal, ReceiverSeeds, SenderSeeds};
use crate::session::{CoinToss, CoinTossReply, Role};
use crate::state::{StateReader, StateWriter};
use crate::tables::{bloom_bits, BloomHash, MatchTable};
use crate::{Error, Result, STATISTICAL_SECURITY};

/// DCW13 semi-honest PSI with a random garbled Bloom filter.
pub(super) struct Dcw13;
/// The sender.
struct Dcw13Sender;
/// The receiver.
struct Dcw13Receiver;

static INFO: ProtocolInfo = ProtocolInfo {
    name: "dcw13",
    paper: "Dong, Chen, Wen: When Private Set Intersection Meets Big Data (CCS 2013), \
            semi-honest GBF protocol with the random-GBF optimisation, as in RR17 §3 and §4.1",
    security: Security::SemiHonest,
    leakage: "The receiver learns the intersection; the sender learns nothing (with --both, \
              the sender learns the intersection too). Both learn the other's set size. \
              Secure only if both parties follow the protocol.",
    both_allowed: true,
    roles: &[
        RoleInfo {
            role: Role::Sender,
            security: Security::SemiHonest,
            output: OutputKind::Nothing,
            peer_item_bytes: 4096,
            own_item_bytes: 256,
        },
        RoleInfo {
            role: Role::Receiver,
            security: Security::SemiHonest,
            output: OutputKind::Indices,
            peer_item_bytes: 64,
            own_item_bytes: 2048,
        },
    ],
};

/// The Bloom-filter hash seed is coin-tossed (receiver commits, sender answers), so
/// neither party picks the functions the other's items are hashed with.
const SEED_TOSS: &str = "Bloom-filter seed";

/// Bloom-filter hash functions: `k = λ`.
const BLOOM_HASHES: usize = STATISTICAL_SECURITY;

struct Params {
    bits: usize,
    out_bits: usize,
}

impl Parameters for Params {
    fn encode(&self) -> Vec<u8> {
        Writer::new()
            .u64(BLOOM_HASHES as u64)
            .u64(self.bits as u64)
            .u64(self.out_bits as u64)
            .0
    }
    fn table(&self) -> ParamTable {
        ParamTable(vec![
            ("k", BLOOM_HASHES.to_string()),
            ("N_bf", self.bits.to_string()),
            ("v", self.out_bits.to_string()),
        ])
    }
}

fn params(sizes: Sizes) -> Params {
    Params {
        bits: bloom_bits(sizes.receiver, BLOOM_HASHES),
        out_bits: output_bits(sizes),
    }
}

/// `⊕_{j ∈ h*(x)} G[j]` for each item value, truncated to `bits`.
fn summaries(
    hash: &BloomHash,
    values: &[Block],
    g: impl Fn(usize) -> Block,
    bits: usize,
) -> Vec<Block> {
    let mut pos = Vec::new();
    values
        .iter()
        .map(|&x| {
            hash.positions(x, &mut pos);
            pos.iter().fold(Block::ZERO, |acc, &j| acc ^ g(j as usize)) & Block::low_ones(bits)
        })
        .collect()
}

fn item_values(items: &Items, sid: &[u8; 32]) -> Vec<Block> {
    let encoder = BlockEncoder::new("venn/dcw13/item", sid);
    encoder.encode_all(items, Block::ONES)
}

impl TypedProtocol for Dcw13 {
    type Config = ();

    fn info(&self) -> &'static ProtocolInfo {
        &INFO
    }

    fn params(&self, sizes: Sizes, _: ()) -> Result<Box<dyn Parameters>> {
        let p = params(sizes);
        if p.bits as u64 > 1 << 32 {
            return Err(Error::Params(format!(
                "a receiver set of {} items needs a {}-bit filter, more than the supported 2^32",
                sizes.receiver, p.bits
            )));
        }
        Ok(Box::new(p))
    }

    fn party(&self, role: Role) -> &'static dyn AnyParty {
        match role {
            Role::Sender => &Dcw13Sender,
            Role::Receiver => &Dcw13Receiver,
        }
    }
}

/// The sender's offline state: its OT-extension seeds and the Bloom seed.
pub(super) struct SenderState {
    base: SenderSeeds,
    seed: Block,
}

/// The receiver's offline state: its OT-extension seeds and the Bloom seed.
pub(super) struct ReceiverState {
    base: ReceiverSeeds,
    seed: Block,
}

impl Party for Dcw13Sender {
    type State = SenderState;

    /// The sender receives the base OTs (it is the IKNP sender) and tosses the Bloom seed.
    fn offline(&self, ctx: &mut Context) -> Result<SenderState> {
        let sid = ctx.session.id;
        ctx.phase("base OTs", true);
        let base = SenderSeeds::new::<MasnyRindal>(ctx.peer, &mut ctx.prg, &sid)?;
        let [seed, _] =
            CoinTossReply::receive(ctx.peer, &sid, SEED_TOSS)?.answer(ctx.peer, &mut ctx.prg)?;
        Ok(SenderState { base, seed })
    }

    /// The sender: the OT-extension sender; its choice-1 messages are the random GBF.
    fn online(&self, ctx: &mut Context, state: SenderState, items: &Items) -> Result<Output> {
        let p = params(ctx.session.sized);
        let sid = ctx.session.id;
        let hash = BloomHash::new(state.seed, p.bits, BLOOM_HASHES);
        ctx.phase("hash items", false);
        let values = item_values(items, &sid);
        ctx.phase("OT extension", false);
        let pairs = iknp_send(ctx.peer, &state.base, p.bits)?;
        ctx.phase("send summaries", false);
        let perm = ctx.prg.permutation(items.len());
        let permuted: Vec<Block> = perm.iter().map(|&i| values[i as usize]).collect();
        let k = summaries(&hash, &permuted, |j| pairs[j][1], p.out_bits);
        send_values(ctx.peer, items.len(), 1, p.out_bits / 8, |first, out| {
            out.copy_from_slice(&k[first..first + out.len()]);
        })?;
        sender_output(ctx, &perm)
    }

    fn save(&self, state: &SenderState, out: &mut StateWriter) -> Result<()> {
        state.base.save(out)?;
        out.block(state.seed)
    }

    fn load(&self, _: Sizes, input: &mut StateReader) -> Result<SenderState> {
        Ok(SenderState {
            base: SenderSeeds::load(input)?,
            seed: input.block()?,
        })
    }
}

impl Party for Dcw13Receiver {
    type State = ReceiverState;

    /// The receiver sends the base OTs (it is the IKNP receiver) and tosses the Bloom seed.
    fn offline(&self, ctx: &mut Context) -> Result<ReceiverState> {
        let sid = ctx.session.id;
        ctx.phase("base OTs", true);
        let base = ReceiverSeeds::new::<MasnyRindal>(ctx.peer, &mut ctx.prg, &sid)?;
        let [seed, _] =
            CoinToss::commit(ctx.peer, &sid, SEED_TOSS, &mut ctx.prg)?.open(ctx.peer)?;
        Ok(ReceiverState { base, seed })
    }

    /// The receiver: the OT-extension receiver with its Bloom filter as choice bits.
    fn online(&self, ctx: &mut Context, state: ReceiverState, items: &Items) -> Result<Output> {
        let p = params(ctx.session.sized);
        let sid = ctx.session.id;
        let hash = BloomHash::new(state.seed, p.bits, BLOOM_HASHES);
        ctx.phase("hash items", false);
        let values = item_values(items, &sid);
        ctx.phase("Bloom filter and OT extension", false);
        let bf: Vec<bool> = hash.filter(&values).iter().collect();
        let g = iknp_receive(ctx.peer, &state.base, &bf)?;
        ctx.phase("receive and match", false);
        let mine = summaries(&hash, &values, |j| g[j], p.out_bits);
        let table = MatchTable::build(items.len(), mine.len(), |i| (mine[i], 0, i as u32));
        let n_s = ctx.session.n_sender as usize;
        let matches = receive_matches(ctx.peer, n_s, 1, p.out_bits / 8, &table)?;
        if ctx.session.both {
            ctx.phase("send intersection", false);
            send_positions(ctx.peer, &matches)?;
        }
        Ok(Output::Indices(
            matches.iter().map(|m| m.0 as usize).collect(),
        ))
    }

    fn save(&self, state: &ReceiverState, out: &mut StateWriter) -> Result<()> {
        state.base.save(out)?;
        out.block(state.seed)
    }

    fn load(&self, _: Sizes, input: &mut StateReader) -> Result<ReceiverState> {
        Ok(ReceiverState {
            base: ReceiverSeeds::load(input)?,
            seed: input.block()?,
        })
    }
}
