//! HEK12 PSI-CA (Huang, Evans, Katz: *Private Set Intersection: Are Garbled Circuits
//! Better than Custom Protocols?*, NDSS 2012, sort-compare; spec C.1): the size of the
//! intersection from a sorting network on the GMW engine — the O(n log n) baseline of
//! PSWW18's slides.
//!
//! **Offline** (no inputs): the network's and comparisons' Beaver triples and one random
//! OT per output bit ([`crate::circuit_psi`]).
//!
//! **Online**: each party sorts its own values (σ-bit integers, or keys hashed to
//! λ + 2·log₂(2n) bits) ascending and shares them as bit planes: the receiver's run at
//! positions 0..n, the sender's at n..2n, padded with dummies ([`params`]). Batcher's
//! odd–even merging network ([`network`]) makes one ascending run of both; a common item
//! then sits next to itself, so the XOR-shared equality bits of the 2n − 1 adjacent pairs
//! hold one set bit per common item and no other. The random OTs turn them into shares of
//! their sum, as for PSWW18 (or, with `--threshold`, only whether it reaches T). HEK12's
//! shuffle is not needed: only the count leaves the circuit.

mod network;
mod params;

use super::{
    Accepts, AnyParty, Context, Offline, Options, Output, OutputKind, Parameters, Party, Protocol,
    ProtocolInfo, Security, Sizes,
};
use crate::circuit_psi::{self, ConversionOts, Function, Prepared};
use crate::crypto::Prg;
use crate::gmw::{Gmw, Shared};
use crate::items::Items;
use crate::session::Role;
use crate::state::{StateReader, StateWriter};
use crate::{Error, Result};
pub(super) use params::Hek12Params;

/// HEK12's sort-compare PSI-CA.
pub(super) struct Hek12;
/// The sender: its run is the second.
struct Sender;
/// The receiver: its run is the first, and it learns the count.
struct Receiver;

static INFO: ProtocolInfo = ProtocolInfo {
    name: "hek12-ca",
    paper: "Huang, Evans, Katz: Private Set Intersection: Are Garbled Circuits Better than \
            Custom Protocols? (NDSS 2012), sort-compare with Batcher's odd-even merging \
            network, on a GMW circuit with OT-based triples; the baseline of PSWW18's \
            slides",
    security: Security::SemiHonest,
    leakage: "The receiver learns the size of the intersection (with --threshold T only \
              whether it is at least T); the sender learns nothing. Neither learns which \
              items are common. Both learn the other's set size. Secure only if both \
              parties follow the protocol (GMW with triples from silent OT: dual LPN over \
              the ExConv code, a correlation-robust hash and the base OTs' DDH; \
              --offline iknp: IKNP, without the LPN assumption). With --sigma 32 the keys \
              are 32-bit integers compared exactly; other keys are hashed with a \
              per-session key to λ + 2·log2(2n) bits, so two distinct keys match with \
              probability at most 2^-40.",
    both_allowed: false,
    roles: &circuit_psi::roles(OutputKind::Count, 2048),
};

/// Domain of the triples' and OTs' base-OT session ids.
const DOMAIN: &str = "venn/hek12/base-ots";

impl Protocol for Hek12 {
    fn info(&self) -> &'static ProtocolInfo {
        &INFO
    }

    fn params(&self, sizes: Sizes, options: Options) -> Result<Box<dyn Parameters>> {
        Ok(Box::new(Hek12Params::new(sizes, options)?))
    }

    /// From the parameters: triples (3 bits an AND gate) and their generator's buffers, the
    /// random OTs, the 2n values'
    /// planes a few times over (shares, and a stage's gathered halves), a quarter more for
    /// what the allocator keeps.
    fn memory(&self, _: Role, sizes: Sizes, options: Options) -> u64 {
        let Ok(p) = Hek12Params::new(sizes, options) else {
            return 0; // refused by the parameters before anything is allocated
        };
        let prepared = circuit_psi::prepared_bytes(triple_words(&p), p.outputs(), options.offline);
        let planes = 6 * 2 * p.n * p.width() as u64 / 8;
        let values = 16 * 2 * p.n;
        let need = prepared + planes + values;
        need + need / 4
    }

    fn accepts(&self) -> Accepts {
        Accepts {
            sigma: &[32],
            offline: &[Offline::Ot, Offline::Iknp],
            threshold: true,
            ..Accepts::NOTHING
        }
    }

    fn check_items(&self, options: Options, items: &Items) -> Result<()> {
        match options.sigma {
            Some(sigma) => items.check_integers(INFO.name, sigma),
            None => Ok(()),
        }
    }

    fn party(&self, role: Role) -> &'static dyn AnyParty {
        match role {
            Role::Sender => &Sender,
            Role::Receiver => &Receiver,
        }
    }
}

/// Words of triples a run uses: the network's, the equalities', the threshold's.
fn triple_words(p: &Hek12Params) -> usize {
    let w = p.width() as usize;
    network::triple_words(p.n as usize, p.width())
        + (w - 1) * (p.outputs() as usize).div_ceil(64)
        + circuit_psi::threshold_words(p.outputs(), p.threshold)
}

/// The parameters of the session, which must be those a state was made for, with the
/// run's actual set sizes: a state made for larger sets pads smaller ones to its runs — if
/// it was made with room for the dummies (sets of exactly a power of two have none).
fn session_params(ctx: &Context, made_for: &Hek12Params) -> Result<Hek12Params> {
    let mut p = Hek12Params::new(ctx.session.sized, ctx.session.options)?;
    if p != *made_for {
        return Err(Error::State(
            "the precomputed triples were made for other parameters".into(),
        ));
    }
    let width = p.width();
    (p.n_s, p.n_r) = (ctx.session.n_sender, ctx.session.n_receiver);
    if p.width() != width {
        return Err(Error::State(format!(
            "a state precomputed for sets of exactly {} items runs only on sets of that \
             size (precompute for more items to leave room for padding)",
            p.n
        )));
    }
    Ok(p)
}

/// A party's sorted values, padded to the run with its dummies (`odd`: the sender's).
fn sorted_run(p: &Hek12Params, ctx: &Context, items: &Items, odd: bool) -> Result<Vec<u128>> {
    let mut values = items.numbers(p.sigma, p.hashed, "venn/hek12/item", &ctx.session.id)?;
    values.sort_unstable();
    let dummies =
        (0..p.n - values.len() as u64).map(|i| 1 << p.sigma | (2 * i + odd as u64) as u128);
    values.extend(dummies);
    Ok(values)
}

/// The circuit on both runs' shared planes (the receiver's first): a share of the equality
/// of each adjacent pair of the merged run.
fn evaluate(gmw: &mut Gmw, p: &Hek12Params, first: &[Shared], second: &[Shared]) -> Result<Shared> {
    let mut run: Vec<Shared> = first
        .iter()
        .zip(second)
        .map(|(a, b)| Shared::concat(&[a, b]))
        .collect();
    network::merge(gmw, &mut run, p.n as usize)?;
    let pairs = p.outputs() as usize;
    let equal: Vec<Shared> = run
        .iter()
        .map(|plane| gmw.xnor(&plane.slice(0, pairs), &plane.slice(1, pairs)))
        .collect();
    Ok(gmw.and_all(vec![equal])?.remove(0).expect("w ≥ 1"))
}

/// Shares of this party's planes, then of the peer's (each party sends its own first).
fn share_runs(gmw: &mut Gmw, mine: &[Shared], n: usize, prg: &mut Prg) -> Result<[Vec<Shared>; 2]> {
    let ours = mine
        .iter()
        .map(|x| gmw.share_input(x, prg))
        .collect::<Result<_>>()?;
    let theirs = (0..mine.len())
        .map(|_| gmw.peers_input(n))
        .collect::<Result<_>>()?;
    Ok([ours, theirs])
}

/// What the offline phase leaves for the online one (either party).
pub(super) struct State {
    params: Hek12Params,
    prepared: Prepared,
}

/// Either party's offline phase.
fn offline(ctx: &mut Context) -> Result<State> {
    let params = Hek12Params::new(ctx.session.sized, ctx.session.options)?;
    let (words, outputs) = (triple_words(&params), params.outputs());
    let prepared = circuit_psi::prepare(ctx, DOMAIN, words, outputs)?;
    Ok(State { params, prepared })
}

/// Either party's online phase up to the circuit's match bits (the sender's run second),
/// then `finish` on them.
fn online(
    ctx: &mut Context,
    state: State,
    items: &Items,
    finish: impl FnOnce(&mut Gmw, &Hek12Params, &ConversionOts, &Shared, &mut Prg) -> Result<Output>,
) -> Result<Output> {
    let State { params, prepared } = state;
    let Prepared { triples, ots } = prepared;
    let p = session_params(ctx, &params)?;
    let sender = ctx.session.role == Role::Sender;
    ctx.phase("sort", false);
    let run = sorted_run(&p, ctx, items, sender)?;
    let mine = Shared::planes(run.len(), p.width(), |i| run[i]);
    ctx.phase("network and count", false);
    let mut gmw = Gmw::new(ctx.peer, !sender, triples);
    let [ours, theirs] = share_runs(&mut gmw, &mine, p.n as usize, &mut ctx.prg)?;
    let [first, second] = if sender {
        [theirs, ours]
    } else {
        [ours, theirs]
    };
    let found = evaluate(&mut gmw, &p, &first, &second)?;
    finish(&mut gmw, &p, &ots, &found, &mut ctx.prg)
}

/// Writes either party's state.
fn save(state: &State, out: &mut StateWriter) -> Result<()> {
    circuit_psi::save_header(out, &state.params.encode(), state.params.options())?;
    state.prepared.save(out)
}

/// Reads what [`save`] wrote, for `sizes`.
fn load(sizes: Sizes, input: &mut StateReader) -> Result<State> {
    let (encoded, options) = circuit_psi::load_header(input)?;
    let params = Hek12Params::new(sizes, options)?;
    if params.encode() != encoded {
        return Err(Error::State("a hek12 state for other parameters".into()));
    }
    let (words, outputs) = (triple_words(&params), params.outputs() as usize);
    let prepared = Prepared::load(input, words, outputs)?;
    Ok(State { params, prepared })
}

impl Party for Sender {
    type State = State;

    fn offline(&self, ctx: &mut Context) -> Result<Self::State> {
        offline(ctx)
    }

    /// The sender's share of the count, or its side of the threshold's comparison.
    fn online(&self, ctx: &mut Context, state: Self::State, items: &Items) -> Result<Output> {
        online(ctx, state, items, |gmw, p, ots, found, prg| {
            circuit_psi::send_output(gmw, &ots.sent, found, None, p.threshold, prg)?;
            Ok(Output::Nothing)
        })
    }

    fn save(&self, state: &Self::State, out: &mut StateWriter) -> Result<()> {
        save(state, out)
    }

    fn load(&self, sizes: Sizes, input: &mut StateReader) -> Result<Self::State> {
        load(sizes, input)
    }
}

impl Party for Receiver {
    type State = State;

    fn offline(&self, ctx: &mut Context) -> Result<Self::State> {
        offline(ctx)
    }

    /// The count (or whether it reaches the threshold).
    fn online(&self, ctx: &mut Context, state: Self::State, items: &Items) -> Result<Output> {
        online(ctx, state, items, |gmw, p, ots, found, prg| {
            let most = p.n_s.min(p.n_r);
            let ots = &ots.received;
            circuit_psi::receive_output(gmw, ots, found, Function::Count, p.threshold, most, prg)
        })
    }

    fn save(&self, state: &Self::State, out: &mut StateWriter) -> Result<()> {
        save(state, out)
    }

    fn load(&self, sizes: Sizes, input: &mut StateReader) -> Result<Self::State> {
        load(sizes, input)
    }
}
