//! PSI from a batched OPRF and cuckoo hashing (KKRT16 Fig. 3), the paradigm of PSZ14 and
//! PSSZ15, with KKRT16's hash-index optimisation. One implementation, two OPRFs:
//!
//! - `kkrt16` ([`kkrt16`]): the BaRK-OPRF (KKRT16 Fig. 2), one 424–448-bit extension row per
//!   bin whatever the item length;
//! - `pssz15` ([`pssz15`]): PSSZ15's OPRF from KK13 1-out-of-256 OTs, one 256-bit row per
//!   byte of the phased item, the baseline of KKRT16 Tables 3–5.
//!
//! Roles: the PSI *receiver* (Bob in KKRT16 Fig. 3) is the OPRF receiver and learns the
//! intersection; the PSI *sender* (Alice) evaluates the OPRF on its items. Offline
//! (input-independent): 128 Masny–Rindal base OTs (the receiver receives), IKNP-extended to
//! k random OTs (the sender receives with random choice bits s), and a coin-tossed key of
//! the OPRF's code and seed of the hash functions. Online: Fig. 3 steps 2–6.

mod evaluate;
mod kkrt16;
mod pssz15;

use evaluate::Evaluator;

pub(super) use kkrt16::Kkrt16;
pub(super) use pssz15::Pssz15;

use super::matching::{receive_matches, send_positions, send_values_with, sender_output};
use super::{
    AnyParty, Config, Context, Output, ParamTable, Parameters, Party, ProtocolInfo, Sizes,
    TypedProtocol,
};
use crate::crypto::{Block, Prg};
use crate::items::Items;
use crate::net::{Channel, Writer};
use crate::ot::{iknp_receive, iknp_send, MasnyRindal, OprfRows, OprfSender};
use crate::ot::{ReceiverSeeds, SenderSeeds};
use crate::session::{CoinToss, CoinTossReply, Role};
use crate::state::{exactly, StateReader, StateWriter};
use crate::tables::{cuckoo_insert, MatchTable, HASHES};
use crate::util::memory::huge_zeroed;
use crate::Result;
use std::marker::PhantomData;

/// Items whose stash values (`S_j`, s of them an item) the sender computes at a time.
const STASH_BATCH: usize = 1 << 14;

/// The shape of one run of Fig. 3.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Layout {
    /// Cuckoo bins, 1.2·n_receiver (at least 1.2·2^8).
    pub bins: usize,
    /// Maximum stash size s.
    pub stash: usize,
    /// Width k of the OT extension in bits.
    pub columns: usize,
    /// OPRF output length v in bits.
    pub out_bits: usize,
}

impl Layout {
    /// OPRF instances: one per stash position, then one per bin.
    pub(super) fn instances(&self) -> usize {
        self.stash + self.bins
    }
}

/// KKRT16's parameters are the layout itself (Table 2: s, k, v, and the bins).
impl Parameters for Layout {
    fn encode(&self) -> Vec<u8> {
        Writer::new()
            .u64(self.stash as u64)
            .u64(self.columns as u64)
            .u64(self.out_bits as u64)
            .u64(self.bins as u64)
            .0
    }

    fn table(&self) -> ParamTable {
        ParamTable(vec![
            ("s", self.stash.to_string()),
            ("k", self.columns.to_string()),
            ("v", self.out_bits.to_string()),
            ("bins", self.bins.to_string()),
        ])
    }
}

/// Where items go in the tables, and what the OPRF is evaluated on there.
pub(super) trait Hashing: Sync {
    /// Writes `[h_1(y), h_2(y), h_3(y)]` for each item value to `out`.
    fn bins_of(&self, y: &[Block], out: &mut Vec<[u32; HASHES]>);

    /// The OPRF input of item value `y` in bin `h_z(y)`, `z ∈ {1, 2, 3}` (Fig. 3 step 2:
    /// it names `z`, so one item's inputs are distinct).
    fn input(&self, y: Block, z: usize) -> Block;

    /// The OPRF input of item value `y` in the stash (Fig. 3: `y` itself, or `y` in a form
    /// that [`Hashing::dummy`] never takes).
    fn stash_input(&self, y: Block) -> Block;

    /// A random input for an empty bin (or, with `stash`, stash position) that no input
    /// the sender evaluates there can equal: the receiver sees the sender's values for
    /// every instance, so a dummy that hit one of the sender's inputs would show the
    /// receiver an item outside the intersection.
    fn dummy(&self, prg: &mut Prg, stash: bool) -> Block;
}

/// A batched OPRF: instance `j` is a PRF `F(k_j, ·)` of which the receiver learns the value
/// on one input and the sender can evaluate at will.
pub(super) trait BatchedOprf: Sync {
    /// The OT-extension rows taken by instances `0..instances`.
    fn ot_rows(&self, instances: usize) -> usize;

    /// The receiver's side: `F(k_j, inputs[j])` for every instance `j`.
    fn receive(
        &self,
        chan: &mut dyn Channel,
        seeds: &[[Block; 2]],
        inputs: &[Block],
    ) -> Result<Vec<Block>>;

    /// The sender's side: `out[e] = F(k_{instances[e]}, inputs[input_at[e]])`, on the
    /// extension rows `ot` it has (which must cover the instances).
    fn eval(
        &self,
        ot: &OprfRows,
        instances: &[u32],
        inputs: &[Block],
        input_at: &[u32],
        out: &mut [Block],
    );
}

/// One protocol of the paradigm: its OPRF, its hashing and its parameters.
pub(super) trait Variant: Sync + 'static {
    /// The protocol's description.
    const INFO: &'static ProtocolInfo;
    /// The name of the coin toss of the code key and hash seed.
    const SEEDS_TOSS: &'static str;
    /// The options it takes.
    type Config: Config;
    /// Its parameters.
    type Params: Parameters + 'static;
    /// Its OPRF.
    type Oprf: BatchedOprf;
    /// Its hashing.
    type Hashing: Hashing;

    /// The parameters for these sizes and this configuration.
    fn params(sizes: Sizes, config: Self::Config) -> Result<Self::Params>;
    /// The shape of a run with these parameters.
    fn layout(p: &Self::Params) -> Layout;
    /// The OT-extension width for these sizes (the configuration does not change it): what a saved
    /// state is read back with, where only the sizes are known.
    fn columns(sizes: Sizes) -> Result<usize>;
    /// Refuses items the protocol cannot run on, before the peer is contacted.
    fn check_items(config: Self::Config, items: &Items) -> Result<()>;
    /// The values the protocol runs on, one per item (distinct for distinct items, but
    /// with probability ≤ 2^-λ over all pairs of both parties' items).
    fn values(p: &Self::Params, items: &Items, sid: &[u8; 32]) -> Result<Vec<Block>>;
    /// The OPRF under the coin-tossed code key.
    fn oprf(p: &Self::Params, code_key: Block, sid: &[u8; 32]) -> Self::Oprf;
    /// The hash functions under the coin-tossed seed.
    fn hashing(p: &Self::Params, seed: Block) -> Self::Hashing;
}

/// KKRT16 Fig. 3 with the OPRF and hashing of `V`.
pub(super) struct OprfPsi<V>(PhantomData<fn() -> V>);

impl<V> OprfPsi<V> {
    /// The protocol.
    pub(super) const NEW: Self = OprfPsi(PhantomData);
}

/// The sender.
struct Sender<V>(PhantomData<fn() -> V>);
/// The receiver.
struct Receiver<V>(PhantomData<fn() -> V>);

impl<V> Sender<V> {
    const NEW: Self = Sender(PhantomData);
}

impl<V> Receiver<V> {
    const NEW: Self = Receiver(PhantomData);
}

fn session_params<V: Variant>(ctx: &Context) -> Result<V::Params> {
    V::params(ctx.session.sized, ctx.config()?)
}

fn random_bits(prg: &mut Prg, n: usize) -> Vec<bool> {
    (0..n).map(|_| prg.u64() & 1 == 1).collect()
}

impl<V: Variant> TypedProtocol for OprfPsi<V> {
    type Config = V::Config;

    fn info(&self) -> &'static ProtocolInfo {
        V::INFO
    }

    fn params(&self, sizes: Sizes, config: V::Config) -> Result<Box<dyn Parameters>> {
        Ok(Box::new(V::params(sizes, config)?))
    }

    fn check_items(&self, config: V::Config, items: &Items) -> Result<()> {
        V::check_items(config, items)
    }

    fn party(&self, role: Role) -> &'static dyn AnyParty {
        match role {
            Role::Sender => &Sender::<V>::NEW,
            Role::Receiver => &Receiver::<V>::NEW,
        }
    }
}

/// The sender's offline state: its k random OTs (choice bits s, chosen seeds) and the
/// tossed code key and hash seed.
pub(super) struct SenderState {
    s: Vec<bool>,
    seeds: Vec<Block>,
    code_key: Block,
    hash_seed: Block,
}

/// The receiver's offline state: its k random OT seed pairs and the tossed code key and
/// hash seed.
pub(super) struct ReceiverState {
    seeds: Vec<[Block; 2]>,
    code_key: Block,
    hash_seed: Block,
}

impl<V: Variant> Party for Sender<V> {
    type State = SenderState;

    /// The sender: IKNP receiver (so base-OT sender) of the k seeds with random choices s.
    fn offline(&self, ctx: &mut Context) -> Result<SenderState> {
        let l = V::layout(&session_params::<V>(ctx)?);
        let sid = ctx.session.id;
        ctx.phase("base OTs and OT extension", true);
        let base = ReceiverSeeds::new::<MasnyRindal>(ctx.peer, &mut ctx.prg, &sid)?;
        let s = random_bits(&mut ctx.prg, l.columns);
        let seeds = iknp_receive(ctx.peer, &base, &s)?;
        let [code_key, hash_seed] = CoinTossReply::receive(ctx.peer, &sid, V::SEEDS_TOSS)?
            .answer(ctx.peer, &mut ctx.prg)?;
        Ok(SenderState {
            s,
            seeds,
            code_key,
            hash_seed,
        })
    }

    /// The sender: OPRF sender, evaluates its items.
    fn online(&self, ctx: &mut Context, state: SenderState, items: &Items) -> Result<Output> {
        let p = session_params::<V>(ctx)?;
        let l = V::layout(&p);
        let sid = ctx.session.id;
        let SenderState {
            s,
            seeds,
            code_key,
            hash_seed,
        } = state;
        ctx.phase("encode items", false);
        let y = V::values(&p, items, &sid)?;
        let perm = ctx.prg.permutation(items.len());
        let oprf = V::oprf(&p, code_key, &sid);
        let hashing = V::hashing(&p, hash_seed);
        let mut eval = Evaluator::new(&l, &y, &perm, &oprf, &hashing);

        ctx.phase("OPRF extension", false);
        // The S_j values need only the stash rows, which come first: compute them while
        // the receiver sends the rest, in step with the rows received.
        let n = items.len();
        let (stash_rows, all_rows) = (oprf.ot_rows(l.stash), oprf.ot_rows(l.instances()));
        let mut stash_values = huge_zeroed(n * l.stash);
        let mut done = 0;
        let ot = OprfSender::extend(ctx.peer, &seeds, &s, all_rows, |rows| {
            if rows.rows() < stash_rows {
                return;
            }
            let target = (n as u128 * rows.rows() as u128 / all_rows as u128) as usize;
            // A batch at a time: a small receiver's rows come at once, and the working
            // space for all n items' s evaluations would pass the memory model's figure
            // (2.5× it for 2^20 items against 2^10, where s = 12).
            while done < target {
                let end = target.min(done + STASH_BATCH);
                let out = &mut stash_values[done * l.stash..end * l.stash];
                eval.stash_values(rows, done..end, out);
                done = end;
            }
        })?;
        debug_assert_eq!(done, n);

        ctx.phase("evaluate and send", false);
        let groups = HASHES + l.stash;
        let mask = Block::low_ones(l.out_bits);
        // Frames are made in parallel, each with its own evaluator (working space).
        let evaluator = || {
            let eval = Evaluator::new(&l, &y, &perm, &oprf, &hashing);
            (eval, Vec::new())
        };
        send_values_with(
            ctx.peer,
            n,
            groups,
            l.out_bits / 8,
            evaluator,
            |(eval, hash_values), first, out| {
                let count = out.len() / groups;
                hash_values.resize(count * HASHES, Block::ZERO);
                eval.hash_values(&ot.rows(), first..first + count, hash_values);
                let stash = &stash_values[first * l.stash..(first + count) * l.stash];
                for (i, o) in out.chunks_exact_mut(groups).enumerate() {
                    o[..HASHES].copy_from_slice(&hash_values[i * HASHES..(i + 1) * HASHES]);
                    o[HASHES..].copy_from_slice(&stash[i * l.stash..(i + 1) * l.stash]);
                    o.iter_mut().for_each(|v| *v &= mask);
                }
            },
        )?;
        sender_output(ctx, &perm)
    }

    fn save(&self, state: &SenderState, out: &mut StateWriter) -> Result<()> {
        out.bits(&state.s)?;
        out.blocks(&state.seeds)?;
        out.block(state.code_key)?;
        out.block(state.hash_seed)
    }

    fn load(&self, sizes: Sizes, input: &mut StateReader) -> Result<SenderState> {
        let k = V::columns(sizes)?;
        Ok(SenderState {
            s: exactly(input.bits(k, "code bits")?, k)?,
            seeds: exactly(input.blocks(k, "OT seeds")?, k)?,
            code_key: input.block()?,
            hash_seed: input.block()?,
        })
    }
}

impl<V: Variant> Party for Receiver<V> {
    type State = ReceiverState;

    /// The receiver: IKNP sender (so base-OT receiver) of the k seed pairs.
    fn offline(&self, ctx: &mut Context) -> Result<ReceiverState> {
        let l = V::layout(&session_params::<V>(ctx)?);
        let sid = ctx.session.id;
        ctx.phase("base OTs and OT extension", true);
        let base = SenderSeeds::new::<MasnyRindal>(ctx.peer, &mut ctx.prg, &sid)?;
        let seeds = iknp_send(ctx.peer, &base, l.columns)?;
        let [code_key, hash_seed] =
            CoinToss::commit(ctx.peer, &sid, V::SEEDS_TOSS, &mut ctx.prg)?.open(ctx.peer)?;
        Ok(ReceiverState {
            seeds,
            code_key,
            hash_seed,
        })
    }

    /// The receiver: OPRF receiver for its cuckoo table.
    fn online(&self, ctx: &mut Context, state: ReceiverState, items: &Items) -> Result<Output> {
        let p = session_params::<V>(ctx)?;
        let l = V::layout(&p);
        let sid = ctx.session.id;
        let ReceiverState {
            seeds,
            code_key,
            hash_seed,
        } = state;
        ctx.phase("encode items", false);
        let y = V::values(&p, items, &sid)?;
        ctx.phase("cuckoo hashing", false);
        let hashing = V::hashing(&p, hash_seed);
        let mut bins = Vec::new();
        hashing.bins_of(&y, &mut bins);
        let table = cuckoo_insert(&bins, l.bins, l.stash, &mut ctx.prg)?;
        // Fig. 3 step 2: r = y for stash position j (instance j), the input of y in its
        // bin i (instance s + i), dummies for empty positions.
        let mut inputs: Vec<Block> = (0..l.instances())
            .map(|j| hashing.dummy(&mut ctx.prg, j < l.stash))
            .collect();
        for (j, &item) in table.stash.iter().enumerate() {
            inputs[j] = hashing.stash_input(y[item as usize]);
        }
        for (i, r) in inputs[l.stash..].iter_mut().enumerate() {
            if let Some((item, z)) = table.bin(i) {
                *r = hashing.input(y[item], z + 1);
            }
        }

        ctx.phase("OPRF extension", false);
        let oprf = V::oprf(&p, code_key, &sid);
        let outputs = oprf.receive(ctx.peer, &seeds, &inputs)?;

        ctx.phase("receive and match", false);
        let mask = Block::low_ones(l.out_bits);
        // (output, group, item) of each stashed item, then of each bin's item.
        let entries: Vec<(usize, u32, u32)> = (table.stash.iter().enumerate())
            .map(|(j, &item)| (j, (HASHES + j) as u32, item))
            .chain((0..outputs.len() - l.stash).filter_map(|i| {
                let (item, z) = table.bin(i)?;
                Some((l.stash + i, z as u32, item as u32))
            }))
            .collect();
        let lookup = MatchTable::build(items.len(), entries.len(), |k| {
            let (output, group, item) = entries[k];
            (outputs[output] & mask, group, item)
        });
        let groups = HASHES + l.stash;
        let n_s = ctx.session.n_sender as usize;
        let matches = receive_matches(ctx.peer, n_s, groups, l.out_bits / 8, &lookup)?;
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
        let k = V::columns(sizes)?;
        let seeds = exactly(input.blocks(2 * k, "OT seed pairs")?, 2 * k)?;
        Ok(ReceiverState {
            seeds: seeds.chunks_exact(2).map(|p| [p[0], p[1]]).collect(),
            code_key: input.block()?,
            hash_seed: input.block()?,
        })
    }
}
