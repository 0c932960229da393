//! KKRT16 PSI (Kolesnikov–Kumaresan–Rosulek–Trieu, CCS 2016): the PSSZ15 cuckoo-hashing
//! PSI with the BaRK-OPRF, including the hash-index optimisation (Fig. 3).
//!
//! Roles: the PSI *receiver* (Bob in the paper) is the OPRF receiver and learns the
//! intersection; the PSI *sender* (Alice) evaluates the OPRF on her items.
//! Offline (input-independent): 128 Masny–Rindal base OTs (Bob receives), IKNP-extended
//! to k random OTs (Alice receives with random choice bits s), Alice's code key and Bob's
//! cuckoo-hash seed. Online: Fig. 3 steps 2–6.

mod evaluate;
mod params;

use evaluate::Evaluator;

pub use params::Kkrt16Params;

use super::matching::{low_bits, receive_matches, receive_positions, send_positions, send_values};
use super::{
    AnyParty, Context, Options, Output, OutputKind, Parameters, Party, Protocol, ProtocolInfo,
    RoleInfo, Security, Sizes,
};
use crate::crypto::{Block, Prg, WideHash};
use crate::items::{BlockEncoder, Items};
use crate::memory::huge_vec;
use crate::ot::{
    iknp_receive, iknp_send, oprf_receive, MasnyRindal, OprfSender, PseudorandomCode,
    ReceiverSeeds, SenderSeeds,
};
use crate::session::{CoinToss, CoinTossReply, Role};
use crate::state::{exactly, StateReader, StateWriter};
use crate::tables::{cuckoo_insert, CuckooHash, MatchTable, HASHES};
use crate::Result;

/// KKRT16 batched-OPRF PSI.
pub struct Kkrt16;
/// Alice, the sender.
struct Kkrt16Sender;
/// Bob, the receiver.
struct Kkrt16Receiver;

static INFO: ProtocolInfo = ProtocolInfo {
    name: "kkrt16",
    paper: "Kolesnikov, Kumaresan, Rosulek, Trieu: Efficient Batched Oblivious PRF with \
            Applications to PSI (CCS 2016), Fig. 2 and Fig. 3",
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
            peer_item_bytes: 96,
            own_item_bytes: 384,
        },
        RoleInfo {
            role: Role::Receiver,
            security: Security::SemiHonest,
            output: OutputKind::Indices,
            peer_item_bytes: 16,
            own_item_bytes: 256,
        },
    ],
};

/// Item values keep 126 bits; the top two carry the hash index z ∈ {1,2,3} of the
/// OPRF input `y ‖ z` (z = 0 for stash inputs), so `y ‖ z` is injective. Distinct items
/// collide with probability ≤ n_s·n_r·2^-126, within λ = 40 for sets up to 2^43.
const ITEM_MASK: Block = (1 << 126) - 1;

fn with_index(y: Block, z: usize) -> Block {
    y | (z as Block) << 126
}

fn item_values(items: &Items, sid: &[u8; 32]) -> Vec<Block> {
    let encoder = BlockEncoder::new("venn/kkrt16/item", sid);
    let mut h = items.map_all(|item| encoder.encode(item));
    h.iter_mut().for_each(|y| *y &= ITEM_MASK);
    h
}

fn random_bits(prg: &mut Prg, n: usize) -> Vec<bool> {
    (0..n).map(|_| prg.u64() & 1 == 1).collect()
}

/// The key of the pseudorandom code (Fig. 2 step 0) and the seed of the cuckoo hash
/// functions (Fig. 3 step 1) are coin-tossed in one go: the receiver commits, the sender
/// answers, the receiver opens. Both are public from then on.
const SEEDS_TOSS: &str = "KKRT16 code key and cuckoo seed";

fn session_params(ctx: &Context) -> Result<Kkrt16Params> {
    Kkrt16Params::new(ctx.session.sized.sender, ctx.session.sized.receiver)
}

impl Protocol for Kkrt16 {
    fn info(&self) -> &'static ProtocolInfo {
        &INFO
    }

    fn params(&self, sizes: Sizes, _: Options) -> Result<Box<dyn Parameters>> {
        Ok(Box::new(Kkrt16Params::new(sizes.sender, sizes.receiver)?))
    }

    fn party(&self, role: Role) -> &'static dyn AnyParty {
        match role {
            Role::Sender => &Kkrt16Sender,
            Role::Receiver => &Kkrt16Receiver,
        }
    }
}

/// Alice's offline state: her k random OTs (choice bits s, chosen seeds) and the tossed
/// code key and cuckoo seed.
pub struct SenderState {
    s: Vec<bool>,
    seeds: Vec<Block>,
    code_key: Block,
    hash_seed: Block,
}

/// Bob's offline state: his k random OT seed pairs and the tossed code key and cuckoo seed.
pub struct ReceiverState {
    seeds: Vec<[Block; 2]>,
    code_key: Block,
    hash_seed: Block,
}

impl Party for Kkrt16Sender {
    type State = SenderState;

    /// Alice: IKNP receiver (so base-OT sender) of the k seeds with random choices s.
    fn offline(&self, ctx: &mut Context) -> Result<SenderState> {
        let p = session_params(ctx)?;
        let sid = ctx.session.id;
        ctx.phase("base OTs and OT extension", true);
        let base = ReceiverSeeds::new::<MasnyRindal>(ctx.peer, &mut ctx.prg, &sid)?;
        let s = random_bits(&mut ctx.prg, p.code_bits);
        let seeds = iknp_receive(ctx.peer, &base, &s)?;
        let [code_key, hash_seed] =
            CoinTossReply::receive(ctx.peer, &sid, SEEDS_TOSS)?.answer(ctx.peer, &mut ctx.prg)?;
        Ok(SenderState {
            s,
            seeds,
            code_key,
            hash_seed,
        })
    }

    /// Alice: OPRF sender, evaluates her items.
    fn online(&self, ctx: &mut Context, state: SenderState, items: &Items) -> Result<Output> {
        let p = session_params(ctx)?;
        let sid = ctx.session.id;
        let SenderState {
            s,
            seeds,
            code_key,
            hash_seed,
        } = state;
        ctx.phase("encode items", false);
        let y = item_values(items, &sid);
        let perm = ctx.prg.permutation(items.len());
        let mut eval = Evaluator::new(
            &p,
            &y,
            &perm,
            PseudorandomCode::new(code_key),
            WideHash::new("venn/kkrt16/oprf", &sid),
            CuckooHash::new(hash_seed, p.bins),
        );

        ctx.phase("OPRF extension", false);
        // The S_j values need only the stash rows, which come first: compute them while
        // the receiver sends the rest, in step with the rows received.
        let n = items.len();
        let mut stash_values = huge_vec(n * p.stash, 0);
        let mut done = 0;
        let oprf = OprfSender::extend(ctx.peer, &seeds, &s, p.rows(), |rows| {
            if rows.rows() < p.stash {
                return;
            }
            let target = (n as u128 * rows.rows() as u128 / p.rows() as u128) as usize;
            let out = &mut stash_values[done * p.stash..target * p.stash];
            eval.stash_values(rows, done..target, out);
            done = target;
        })?;
        debug_assert_eq!(done, n);

        ctx.phase("evaluate and send", false);
        let groups = HASHES + p.stash;
        let mask = low_bits(p.out_bits);
        let mut hash_values = Vec::new();
        send_values(ctx.peer, n, groups, p.out_bits / 8, |first, out| {
            let count = out.len() / groups;
            hash_values.resize(count * HASHES, 0);
            eval.hash_values(&oprf.rows(), first..first + count, &mut hash_values);
            let stash = &stash_values[first * p.stash..(first + count) * p.stash];
            for (i, o) in out.chunks_exact_mut(groups).enumerate() {
                o[..HASHES].copy_from_slice(&hash_values[i * HASHES..(i + 1) * HASHES]);
                o[HASHES..].copy_from_slice(&stash[i * p.stash..(i + 1) * p.stash]);
                o.iter_mut().for_each(|v| *v &= mask);
            }
        })?;
        if !ctx.session.both {
            return Ok(Output::Nothing);
        }
        ctx.phase("receive intersection", false);
        receive_positions(ctx.peer, &perm, ctx.session.n_receiver as usize).map(Output::Indices)
    }

    fn save(&self, state: &SenderState, out: &mut StateWriter) -> Result<()> {
        out.bits(&state.s)?;
        out.blocks(&state.seeds)?;
        out.block(state.code_key)?;
        out.block(state.hash_seed)
    }

    fn load(&self, sizes: Sizes, input: &mut StateReader) -> Result<SenderState> {
        let k = Kkrt16Params::new(sizes.sender, sizes.receiver)?.code_bits;
        Ok(SenderState {
            s: exactly(input.bits(k, "code bits")?, k)?,
            seeds: exactly(input.blocks(k, "OT seeds")?, k)?,
            code_key: input.block()?,
            hash_seed: input.block()?,
        })
    }
}

impl Party for Kkrt16Receiver {
    type State = ReceiverState;

    /// Bob: IKNP sender (so base-OT receiver) of the k seed pairs.
    fn offline(&self, ctx: &mut Context) -> Result<ReceiverState> {
        let p = session_params(ctx)?;
        let sid = ctx.session.id;
        ctx.phase("base OTs and OT extension", true);
        let base = SenderSeeds::new::<MasnyRindal>(ctx.peer, &mut ctx.prg, &sid)?;
        let seeds = iknp_send(ctx.peer, &base, p.code_bits)?;
        let [code_key, hash_seed] =
            CoinToss::commit(ctx.peer, &sid, SEEDS_TOSS, &mut ctx.prg)?.open(ctx.peer)?;
        Ok(ReceiverState {
            seeds,
            code_key,
            hash_seed,
        })
    }

    /// Bob: OPRF receiver for his cuckoo table.
    fn online(&self, ctx: &mut Context, state: ReceiverState, items: &Items) -> Result<Output> {
        let p = session_params(ctx)?;
        let sid = ctx.session.id;
        let ReceiverState {
            seeds,
            code_key,
            hash_seed,
        } = state;
        ctx.phase("encode items", false);
        let y = item_values(items, &sid);
        ctx.phase("cuckoo hashing", false);
        let cuckoo = CuckooHash::new(hash_seed, p.bins);
        let mut bins = Vec::new();
        cuckoo.bins_of(&y, &mut bins);
        let table = cuckoo_insert(&bins, p.bins, p.stash, &mut ctx.prg)?;
        // Fig. 3 step 2: r = y for stash position j (row j), y ‖ z(y) for bin i (row s + i),
        // random dummies for empty positions.
        let mut inputs: Vec<Block> = (0..p.rows()).map(|_| ctx.prg.block()).collect();
        for (j, &item) in table.stash.iter().enumerate() {
            inputs[j] = y[item as usize];
        }
        for (i, r) in inputs[p.stash..].iter_mut().enumerate() {
            if let Some((item, z)) = table.bin(i) {
                *r = with_index(y[item], z + 1);
            }
        }

        ctx.phase("OPRF extension", false);
        let oprf = oprf_receive(ctx.peer, &seeds, &PseudorandomCode::new(code_key), &inputs)?;

        ctx.phase("receive and match", false);
        let outputs = oprf.outputs(&WideHash::new("venn/kkrt16/oprf", &sid));
        let mask = low_bits(p.out_bits);
        let mut lookup = MatchTable::with_capacity(items.len());
        for (j, &item) in table.stash.iter().enumerate() {
            lookup.insert(outputs[j] & mask, (HASHES + j) as u32, item);
        }
        for (i, out) in outputs[p.stash..].iter().enumerate() {
            if let Some((item, z)) = table.bin(i) {
                lookup.insert(out & mask, z as u32, item as u32);
            }
        }
        let groups = HASHES + p.stash;
        let n_s = ctx.session.n_sender as usize;
        let matches = receive_matches(ctx.peer, n_s, groups, p.out_bits / 8, &lookup)?;
        if ctx.session.both {
            ctx.phase("send intersection", false);
            send_positions(ctx.peer, &matches)?;
        }
        Ok(Output::Indices(
            matches.iter().map(|m| m.0 as usize).collect(),
        ))
    }

    fn save(&self, state: &ReceiverState, out: &mut StateWriter) -> Result<()> {
        out.blocks(state.seeds.as_flattened())?;
        out.block(state.code_key)?;
        out.block(state.hash_seed)
    }

    fn load(&self, sizes: Sizes, input: &mut StateReader) -> Result<ReceiverState> {
        let k = Kkrt16Params::new(sizes.sender, sizes.receiver)?.code_bits;
        let seeds = exactly(input.blocks(2 * k, "OT seed pairs")?, 2 * k)?;
        Ok(ReceiverState {
            seeds: seeds.chunks_exact(2).map(|p| [p[0], p[1]]).collect(),
            code_key: input.block()?,
            hash_seed: input.block()?,
        })
    }
}
