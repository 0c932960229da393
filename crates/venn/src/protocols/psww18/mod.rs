//! PSWW18 circuit PSI (Pinkas, Schneider, Weinert, Wieder: *Efficient Circuit-Based PSI via
//! Cuckoo Hashing*, Eurocrypt 2018; the talk's slides and ABY's `psi_2D_CH`, spec Part B):
//! the intersection is computed inside a generic two-party circuit, so its parties learn
//! only a function of it — here its size (`psww18-ca`) or whether that reaches a threshold,
//! or the sum of values the sender attached to its common items, with their number
//! (`psww18-sum`).
//!
//! Roles: the paper's Bob, the cuckoo side, is Venn's sender and learns nothing; its Alice,
//! the simple side, is Venn's receiver and learns the output.
//!
//! A front end of the generic circuit PSI ([`crate::circuit_psi`], which does the rest).
//!
//! **Offline** (no inputs): the coin-tossed hashing seed; the circuit's Beaver triples
//! ([`crate::gmw::Triples`], two random OTs each, from silent OT or IKNP), and from the
//! same extension one random OT per output bit for the count.
//!
//! **Online**: both place their items by two-dimensional cuckoo hashing ([`hashing`]),
//! share their tables as bit-sliced inputs and evaluate the circuit ([`circuit`]): one
//! shared bit per bin and stash slot, set where a common item is. The bits become additive
//! shares of their sum — weighted by the values of the sender's items in those slots, for a
//! sum — with the random OTs; the sender sends its share (or, with `--threshold`, the two
//! compare the count with T in a small circuit and the receiver learns only the answer).

mod circuit;
mod hashing;
mod params;

use crate::circuit_psi::{CircuitPsi, FrontEnd, Function, Side, Weights};
use crate::crypto::{Block, Prg};
use crate::framework::{Context, OutputKind, ProtocolInfo, Security, Stash};
use crate::gmw::{Gmw, Shared};
use crate::items::Items;
use crate::session::{CoinToss, CoinTossReply, Role};
use crate::{Error, Result};
use hashing::{receivers_tables, senders_tables, Hashing, SendersTables};
pub(super) use params::{Psww18Config, Psww18Params};

/// PSWW18's front end of the circuit PSI.
pub(super) struct Psww18;

/// The intersection's size (`psww18-ca`).
pub(super) const CA: CircuitPsi<Psww18> = CircuitPsi::new(Function::Count, &CA_INFO);
/// The sum of the sender's values over the intersection, and its size (`psww18-sum`).
pub(super) const SUM: CircuitPsi<Psww18> = CircuitPsi::new(Function::Sum, &SUM_INFO);

/// The sender.
pub(super) struct Sender;
/// The receiver.
pub(super) struct Receiver;

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
    roles: &crate::circuit_psi::roles(OutputKind::Count, 1024),
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
    roles: &crate::circuit_psi::roles(OutputKind::Sum, 1024),
};

/// Neither party picks the functions its peer's items are hashed with.
const SEED_TOSS: &str = "psww18 hashing seed";

impl FrontEnd for Psww18 {
    type Params = Psww18Params;
    type Sender = Sender;
    type Receiver = Receiver;
    const DOMAIN: &'static str = "venn/psww18/base-ots";
    const CIRCUIT: &'static str = "circuit and count";
    // One column: its conversion adds the values in the top half of a 128-bit ring
    // (circuit_psi's `send_output`).
    const VALUE_COLUMNS: usize = 1;

    /// Both inputs' planes as bits and twice as shares, and per item its places and
    /// tables.
    fn memory(p: &Psww18Params, role: Role) -> u64 {
        let inputs = 5
            * (p.ell() as u64 * p.table_comparisons()
                + p.stash_width() as u64 * p.stash_comparisons())
            / 8;
        let own = match role {
            Role::Sender => p.n_b,
            Role::Receiver => p.n_a,
        };
        inputs + 56 * p.bins + 96 * own
    }

    fn check_items(protocol: &str, config: Psww18Config, items: &Items) -> Result<()> {
        items.check_integers(protocol, config.sigma)
    }
}

/// The phase before the triples: the seed toss, in which the receiver commits and the
/// sender answers.
fn toss_seed(ctx: &mut Context) -> Result<Block> {
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
    Ok(seed)
}

/// A party's keys as σ-bit numbers.
fn keys(ctx: &Context, p: &Psww18Params, items: &Items) -> Result<Vec<u128>> {
    items.numbers(p.sigma, p.hashed, "venn/psww18/item", &ctx.session.id)
}

/// Shares of this party's input vectors.
fn share(gmw: &mut Gmw, input: &[Shared], prg: &mut Prg) -> Result<Vec<Shared>> {
    input.iter().map(|x| gmw.share_input(x, prg)).collect()
}

/// Shares of the peer's input vectors of these lengths.
fn peers(gmw: &mut Gmw, lengths: &[usize]) -> Result<Vec<Shared>> {
    lengths.iter().map(|&n| gmw.peers_input(n)).collect()
}

/// The sender's tables and its input to the circuit.
pub(super) struct SendersInputs {
    tables: SendersTables,
    input: Vec<Shared>,
}

impl Side<Psww18Params> for Sender {
    type Kept = Block;
    type Inputs = SendersInputs;

    /// The sender answers the seed toss.
    fn offline(ctx: &mut Context, _: &Psww18Params) -> Result<Block> {
        toss_seed(ctx)
    }

    /// The sender's tables, its stash's values tagged with their table where the stashes
    /// are separate.
    fn inputs(
        ctx: &mut Context,
        p: &Psww18Params,
        seed: Block,
        items: &Items,
    ) -> Result<SendersInputs> {
        ctx.phase("hash items", false);
        let keys = keys(ctx, p, items)?;
        let placed = Hashing::new(p, seed).place_all(&keys);
        let tables = senders_tables(p, &placed, &mut ctx.prg)?;
        let stash_values: Vec<u128> = tables
            .slots
            .iter()
            .enumerate()
            .map(|(slot, item)| match item {
                Some(y) => {
                    let table = (slot / p.stash_size) as u128;
                    let tagged = p.stash == Stash::Separate;
                    keys[*y as usize] | (tagged as u128 * table) << p.sigma
                }
                None => 0,
            })
            .collect();
        let input = circuit::senders_input(p, &tables, &stash_values);
        Ok(SendersInputs { tables, input })
    }

    /// The sender shares its input first.
    fn circuit(
        gmw: &mut Gmw,
        p: &Psww18Params,
        inputs: &SendersInputs,
        prg: &mut Prg,
    ) -> Result<Shared> {
        let sender = share(gmw, &inputs.input, prg)?;
        let receiver = peers(gmw, &circuit::input_lengths(p, false))?;
        circuit::evaluate(gmw, p, &receiver, &sender)
    }

    /// For a sum, the value of the sender's item behind each match bit (0 where none is).
    fn weights<'a>(
        function: Function,
        inputs: &'a SendersInputs,
        items: &'a Items,
    ) -> Result<Weights<'a>> {
        if function == Function::Count {
            return Ok(Weights::None);
        }
        let values = items
            .values()
            .ok_or_else(|| Error::Usage("psww18-sum's sender needs a value per item".into()))?;
        let tables = &inputs.tables;
        Ok(Weights::Values(Box::new(move |i| {
            tables.item_of_output(i).map_or(0, |y| values[y as usize])
        })))
    }
}

impl Side<Psww18Params> for Receiver {
    type Kept = Block;
    type Inputs = Vec<Shared>;

    /// The receiver commits to the seed toss.
    fn offline(ctx: &mut Context, _: &Psww18Params) -> Result<Block> {
        toss_seed(ctx)
    }

    /// The receiver's tables: its items in both slots of their bins, and once per stash
    /// slot (tagged with their table where the stashes are separate).
    fn inputs(
        ctx: &mut Context,
        p: &Psww18Params,
        seed: Block,
        items: &Items,
    ) -> Result<Vec<Shared>> {
        ctx.phase("hash items", false);
        let keys = keys(ctx, p, items)?;
        let placed = Hashing::new(p, seed).place_all(&keys);
        let tables = receivers_tables(p, &placed, &mut ctx.prg)?;
        let stash_items: Vec<u128> = keys
            .iter()
            .zip(&tables.table_of)
            .map(|(&x, &k)| match p.stash {
                Stash::Separate => x | (k as u128) << p.sigma,
                Stash::Combined => x,
            })
            .collect();
        Ok(circuit::receivers_input(p, &tables, &stash_items))
    }

    /// The receiver takes the sender's shares first.
    fn circuit(
        gmw: &mut Gmw,
        p: &Psww18Params,
        input: &Vec<Shared>,
        prg: &mut Prg,
    ) -> Result<Shared> {
        let sender = peers(gmw, &circuit::input_lengths(p, true))?;
        let receiver = share(gmw, input, prg)?;
        circuit::evaluate(gmw, p, &receiver, &sender)
    }
}
