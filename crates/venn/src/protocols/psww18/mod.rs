//! PSWW18 circuit PSI (Pinkas, Schneider, Weinert, Wieder: *Efficient Circuit-Based PSI via
//! Cuckoo Hashing*, Eurocrypt 2018; the talk's slides and ABY's `psi_2D_CH`, spec Part B):
//! the intersection is computed inside a generic two-party circuit, so its parties learn
//! only a function of it — here its size (`psww18-ca`) or whether that reaches a threshold,
//! or the sum of values the sender attached to its common items, with their number
//! (`psww18-sum`).
//!
//! Roles: Bob, the cuckoo side, is Venn's sender and learns nothing; Alice, the simple side,
//! is the receiver and learns the output.
//!
//! **Offline** (no inputs): the coin-tossed hashing seed; the circuit's Beaver triples
//! ([`crate::gmw::Triples`], two random OTs each, from silent OT or IKNP), and from the
//! same extension one random OT per output bit for the count ([`crate::circuit_psi`]).
//!
//! **Online**: both place their items by two-dimensional cuckoo hashing ([`hashing`]), share
//! their tables as bit-sliced inputs and evaluate the circuit ([`circuit`]): one shared bit
//! per bin and stash slot, set where a common item is. The bits become additive shares of
//! their sum — weighted by the values of Bob's items in those slots, for a sum — with the
//! random OTs; Bob sends his share (or, with `--threshold`, the two compare the count with
//! T in a small circuit and Alice learns only the answer).

mod circuit;
mod hashing;
mod params;

use super::{
    Accepts, AnyParty, Context, Offline, Options, Output, OutputKind, Parameters, Party, Protocol,
    ProtocolInfo, Security, Sizes,
};
use crate::circuit_psi::{self, Function, Prepared};
use crate::crypto::{Block, Prg};
use crate::gmw::{Gmw, Shared};
use crate::items::Items;
use crate::session::{CoinToss, CoinTossReply, Role};
use crate::state::{StateReader, StateWriter};
use crate::{Error, Result};
use hashing::{alices_tables, bobs_tables, Hashing};
pub(super) use params::Psww18Params;

/// PSWW18's circuit PSI with the function of the intersection it computes.
pub(super) struct Psww18 {
    function: Function,
}

impl Psww18 {
    /// The intersection's size (`psww18-ca`).
    pub(super) const CA: Psww18 = Psww18 {
        function: Function::Count,
    };
    /// The sum of the sender's values over the intersection, and its size (`psww18-sum`).
    pub(super) const SUM: Psww18 = Psww18 {
        function: Function::Sum,
    };
}

/// Bob, the sender.
struct Sender(Function);
/// Alice, the receiver.
struct Receiver(Function);

const PAPER: &str = "Pinkas, Schneider, Weinert, Wieder: Efficient Circuit-Based PSI via \
                     Cuckoo Hashing (Eurocrypt 2018), two-dimensional cuckoo hashing into a \
                     GMW circuit with OT-based triples (as in the talk's slides and ABY's \
                     psi_2D_CH)";

static CA_INFO: ProtocolInfo = ProtocolInfo {
    name: "psww18-ca",
    paper: PAPER,
    security: Security::SemiHonest,
    leakage: "The receiver learns the size of the intersection (with --threshold T only \
              whether it is at least T); the sender learns nothing. Neither learns which \
              items are common. Both learn the other's set size. Secure only if both \
              parties follow the protocol (GMW with triples from silent OT: dual LPN over \
              the ExConv code, a correlation-robust hash and the base OTs' DDH; \
              --offline iknp: IKNP, without the LPN assumption). A placement that fails \
              (an event of probability at most 2^-40) ends the run with an error, which the \
              peer sees. With --sigma 32 the keys are 32-bit integers compared exactly; \
              other keys are hashed with a per-session key to λ + log2(n_s·n_r) bits, so \
              two distinct keys match with probability at most 2^-40.",
    both_allowed: false,
    roles: &circuit_psi::roles(OutputKind::Count, 1024),
};

static SUM_INFO: ProtocolInfo = ProtocolInfo {
    name: "psww18-sum",
    paper: PAPER,
    security: Security::SemiHonest,
    leakage: "The receiver learns the size of the intersection and the sum (mod 2^64) of \
              the values the sender gave its common keys (--value-column: an integer below \
              2^32 per row, the rows of a repeated key added, so that the sum is exact \
              below 2^32 rows); the sender learns nothing. Neither \
              learns which items are common, and the receiver learns no single value \
              unless the intersection has one item (or the sum alone determines it). Both \
              learn the other's set size. Secure only if both parties follow the protocol \
              (GMW with triples from silent OT: dual LPN over the ExConv code, a \
              correlation-robust hash and the base OTs' DDH; --offline iknp: IKNP, \
              without the LPN assumption). A placement that fails (an event of \
              probability at most 2^-40) ends the run with an error, which the peer sees. \
              With --sigma 32 the keys are 32-bit integers compared exactly; other keys \
              are hashed with a per-session key to λ + log2(n_s·n_r) bits, so two \
              distinct keys match with probability at most 2^-40.",
    both_allowed: false,
    roles: &circuit_psi::roles(OutputKind::Sum, 1024),
};

/// Neither party picks the functions its peer's items are hashed with.
const SEED_TOSS: &str = "psww18 hashing seed";

impl Protocol for Psww18 {
    fn info(&self) -> &'static ProtocolInfo {
        match self.function {
            Function::Count => &CA_INFO,
            Function::Sum => &SUM_INFO,
        }
    }

    fn params(&self, sizes: Sizes, options: Options) -> Result<Box<dyn Parameters>> {
        Ok(Box::new(Psww18Params::new(sizes, options)?))
    }

    /// From the parameters: triples (3 bits an AND gate), the random OTs, both inputs'
    /// planes as bits and twice as shares, and per item its places and tables. A quarter
    /// more for what the allocator keeps.
    fn memory(&self, role: Role, sizes: Sizes, options: Options) -> u64 {
        let Ok(p) = Psww18Params::new(sizes, options) else {
            return 0; // refused by the parameters before anything is allocated
        };
        let prepared = circuit_psi::prepared_bytes(triple_words(&p), p.outputs(), options.offline);
        let inputs = 5
            * (p.ell() as u64 * p.table_comparisons()
                + p.stash_width() as u64 * p.stash_comparisons())
            / 8;
        let own = match role {
            Role::Sender => p.n_b,
            Role::Receiver => p.n_a,
        };
        let tables = 56 * p.bins + 96 * own;
        let need = prepared + inputs + tables;
        need + need / 4
    }

    fn accepts(&self) -> Accepts {
        Accepts {
            sigma: &[32],
            offline: &[Offline::Ot, Offline::Iknp],
            stash: true,
            threshold: self.function == Function::Count,
            // One column: its conversion adds the values in the top half of a 128-bit
            // ring (circuit_psi's `send_output`).
            value_columns: usize::from(self.function == Function::Sum),
            ..Accepts::NOTHING
        }
    }

    fn check_items(&self, options: Options, items: &Items) -> Result<()> {
        match options.sigma {
            Some(sigma) => items.check_integers(self.info().name, sigma),
            None => Ok(()),
        }
    }

    fn party(&self, role: Role) -> &'static dyn AnyParty {
        match (role, self.function) {
            (Role::Sender, Function::Count) => &Sender(Function::Count),
            (Role::Sender, Function::Sum) => &Sender(Function::Sum),
            (Role::Receiver, Function::Count) => &Receiver(Function::Count),
            (Role::Receiver, Function::Sum) => &Receiver(Function::Sum),
        }
    }
}

/// Words of triples a run uses: the circuit's, and the threshold's comparison.
fn triple_words(p: &Psww18Params) -> usize {
    circuit::triple_words(p) + circuit_psi::threshold_words(p.outputs(), p.threshold)
}

/// What the offline phase leaves for the online one (either party).
pub(super) struct State {
    params: Psww18Params,
    seed: Block,
    prepared: Prepared,
}

/// The parameters of the session, which must be those the state was made for, with the
/// run's actual set sizes: a state made for larger sets sizes the tables, and the stash
/// is compared with the receiver's actual items (a circuit smaller than the triples
/// were made for: the rest go unused).
fn session_params(ctx: &Context, state: &State) -> Result<Psww18Params> {
    let mut p = Psww18Params::new(ctx.session.sized, ctx.session.options)?;
    if p != state.params {
        return Err(Error::State(
            "the precomputed triples were made for other parameters".into(),
        ));
    }
    (p.n_a, p.n_b) = (ctx.session.n_receiver, ctx.session.n_sender);
    Ok(p)
}

/// Either party's offline phase: the seed toss (Alice commits), then the triples (Alice
/// leads) and the counting OTs.
fn offline(ctx: &mut Context) -> Result<State> {
    let params = Psww18Params::new(ctx.session.sized, ctx.session.options)?;
    ctx.phase("hashing seed", true);
    let sid = ctx.session.id;
    let [seed, _] = match ctx.session.role {
        Role::Sender => {
            CoinTossReply::receive(ctx.peer, &sid, SEED_TOSS)?.answer(ctx.peer, &mut ctx.prg)?
        }
        Role::Receiver => {
            CoinToss::commit(ctx.peer, &sid, SEED_TOSS, &mut ctx.prg)?.open(ctx.peer)?
        }
    };
    let (words, outputs) = (triple_words(&params), params.outputs());
    let prepared = circuit_psi::prepare(ctx, "venn/psww18/base-ots", words, outputs)?;
    Ok(State {
        params,
        seed,
        prepared,
    })
}

/// Shares of this party's input vectors.
fn share(gmw: &mut Gmw, input: &[Shared], prg: &mut Prg) -> Result<Vec<Shared>> {
    input.iter().map(|x| gmw.share_input(x, prg)).collect()
}

/// Shares of the peer's input vectors of these lengths.
fn peers(gmw: &mut Gmw, lengths: &[usize]) -> Result<Vec<Shared>> {
    lengths.iter().map(|&n| gmw.peers_input(n)).collect()
}

/// Writes a state: the header, the seed, the triples and OTs.
fn save_state(state: &State, out: &mut StateWriter) -> Result<()> {
    let p = &state.params;
    circuit_psi::save_header(out, &p.encode(), p.options())?;
    out.block(state.seed)?;
    state.prepared.save(out)
}

/// Reads what [`save_state`] wrote, for `sizes`.
fn load_state(sizes: Sizes, input: &mut StateReader) -> Result<State> {
    let (encoded, options) = circuit_psi::load_header(input)?;
    let params = Psww18Params::new(sizes, options)?;
    if params.encode() != encoded {
        return Err(Error::State("a psww18 state for other parameters".into()));
    }
    let seed = input.block()?;
    let prepared = Prepared::load(input, triple_words(&params), params.outputs() as usize)?;
    Ok(State {
        params,
        seed,
        prepared,
    })
}

impl Party for Sender {
    type State = State;

    /// Bob answers the seed toss, makes triples and the counting OTs with Alice (she
    /// leads).
    fn offline(&self, ctx: &mut Context) -> Result<Self::State> {
        offline(ctx)
    }

    /// Bob: his tables, the circuit, his share of the count or sum.
    fn online(&self, ctx: &mut Context, state: Self::State, items: &Items) -> Result<Output> {
        let p = session_params(ctx, &state)?;
        ctx.phase("hash items", false);
        let keys = items.numbers(p.sigma, p.hashed, "venn/psww18/item", &ctx.session.id)?;
        let placed = Hashing::new(&p, state.seed).place_all(&keys);
        let tables = bobs_tables(&p, &placed, &mut ctx.prg)?;
        let stash_values: Vec<u128> = tables
            .slots
            .iter()
            .enumerate()
            .map(|(slot, item)| match item {
                Some(y) => {
                    let table = (slot / p.stash_size) as u128;
                    let tagged = p.stash == super::Stash::Separate;
                    keys[*y as usize] | (tagged as u128 * table) << p.sigma
                }
                None => 0,
            })
            .collect();
        let input = circuit::bobs_input(&p, &tables, &stash_values);
        ctx.phase("circuit and count", false);
        let mut gmw = Gmw::new(ctx.peer, false, state.prepared.triples);
        let bob = share(&mut gmw, &input, &mut ctx.prg)?;
        let alice = peers(&mut gmw, &circuit::input_lengths(&p, false))?;
        let found = circuit::evaluate(&mut gmw, &p, &alice, &bob)?;
        let ots = &state.prepared.ots.sent;
        let value =
            |values: &[u64], i: usize| (tables.item_of_output(i)).map_or(0, |y| values[y as usize]);
        let weight = match self.0 {
            Function::Count => None,
            Function::Sum => Some(items.values().ok_or_else(|| {
                Error::Usage("psww18-sum's sender needs a value per item".into())
            })?),
        }
        .map(|values| move |i| value(values, i));
        let weight = weight.as_ref().map(|w| w as &dyn Fn(usize) -> u64);
        circuit_psi::send_output(&mut gmw, ots, &found, weight, p.threshold, &mut ctx.prg)?;
        Ok(Output::Nothing)
    }

    fn save(&self, state: &Self::State, out: &mut StateWriter) -> Result<()> {
        save_state(state, out)
    }

    fn load(&self, sizes: Sizes, input: &mut StateReader) -> Result<Self::State> {
        load_state(sizes, input)
    }
}

impl Party for Receiver {
    type State = State;

    /// Alice commits to the seed toss, makes triples with Bob (leading) and the counting
    /// OTs as their receiver.
    fn offline(&self, ctx: &mut Context) -> Result<Self::State> {
        offline(ctx)
    }

    /// Alice: her tables, the circuit, the count or sum (or whether the count reaches the
    /// threshold).
    fn online(&self, ctx: &mut Context, state: Self::State, items: &Items) -> Result<Output> {
        let p = session_params(ctx, &state)?;
        ctx.phase("hash items", false);
        let keys = items.numbers(p.sigma, p.hashed, "venn/psww18/item", &ctx.session.id)?;
        let placed = Hashing::new(&p, state.seed).place_all(&keys);
        let tables = alices_tables(&p, &placed, &mut ctx.prg)?;
        let stash_items: Vec<u128> = keys
            .iter()
            .zip(&tables.table_of)
            .map(|(&x, &k)| match p.stash {
                super::Stash::Separate => x | (k as u128) << p.sigma,
                super::Stash::Combined => x,
            })
            .collect();
        let input = circuit::alices_input(&p, &tables, &stash_items);
        ctx.phase("circuit and count", false);
        let mut gmw = Gmw::new(ctx.peer, true, state.prepared.triples);
        let bob = peers(&mut gmw, &circuit::input_lengths(&p, true))?;
        let alice = share(&mut gmw, &input, &mut ctx.prg)?;
        let found = circuit::evaluate(&mut gmw, &p, &alice, &bob)?;
        circuit_psi::receive_output(
            &mut gmw,
            &state.prepared.ots.received,
            &found,
            self.0,
            p.threshold,
            p.n_a.min(p.n_b),
            &mut ctx.prg,
        )
    }

    fn save(&self, state: &Self::State, out: &mut StateWriter) -> Result<()> {
        save_state(state, out)
    }

    fn load(&self, sizes: Sizes, input: &mut StateReader) -> Result<Self::State> {
        load_state(sizes, input)
    }
}
