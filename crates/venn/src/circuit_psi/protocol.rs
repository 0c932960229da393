//! One circuit PSI, generic over its front end ([`FrontEnd`]): PSWW18's two-dimensional
//! cuckoo hashing, HEK12's sorting network or RS21's OPPRF bring the parties' items into a
//! circuit of match bits; everything around that is this back end's.
//!
//! - **Offline**: the front end's own input-independent work ([`Side::offline`]: psww18's
//!   hashing seed, rr22's VOLE), then the circuit's triples and the conversion's random OTs
//!   ([`prepare`](super::prepare): the receiver leads). The state holds the three.
//! - **Online**: the front end's inputs ([`Side::inputs`]), its circuit on the GMW engine
//!   ([`Side::circuit`]), then the output: the match bits added up — weighted by values
//!   where a sum asks for them ([`Side::weights`]) — the sender's share sent, the
//!   receiver's output (a count, sums, or whether the count reaches a threshold).
//!
//! Roles: the receiver learns the output; the sender learns nothing.

use super::{
    load_header, prepare, prepared_bytes, receive_output, receive_shared_sum, save_header,
    send_output, send_shared_sum, threshold_words, CircuitConfig, Function, Prepared,
};
use crate::crypto::{Block, Prg};
use crate::framework::{
    Accepts, AnyParty, Config, Context, Options, Output, Parameters, Party, ProtocolInfo,
    TypedProtocol,
};
use crate::gmw::{Gmw, Shared};
use crate::items::Items;
use crate::session::{Role, Sizes};
use crate::state::{StateReader, StateWriter};
use crate::{Error, Result};
use std::marker::PhantomData;

/// A front end's parameters, as the back end reads them.
pub(crate) trait CircuitParams: Parameters + PartialEq + Sized + 'static {
    /// The front end's own options ([`CircuitConfig::front`]).
    type Config: Config;
    /// The parameters of a run computing `function` for `sizes`, the front end's options
    /// and a count's `threshold` (the paper's formulas), or why it cannot run there.
    fn new(
        function: Function,
        sizes: Sizes,
        front: Self::Config,
        threshold: Option<u64>,
    ) -> Result<Self>;
    /// The front end's options they were made with (a state's header holds them).
    fn front(&self) -> Self::Config;
    /// The threshold they were made with.
    fn threshold(&self) -> Option<u64>;
    /// Words of triples the circuit takes (a threshold's comparison comes on top).
    fn circuit_words(&self) -> usize;
    /// The circuit's match bits: one conversion OT each way for each.
    fn outputs(&self) -> u64;
    /// These parameters, made for a precomputed state's set sizes, for the run's actual
    /// `sizes` (no larger), or why the state cannot serve them.
    fn run_on(&mut self, sizes: Sizes) -> Result<()>;
}

/// What a circuit PSI's front end says: its parameters and its two sides; the rest is the
/// back end's.
pub(crate) trait FrontEnd: Sync + 'static {
    /// Its parameters.
    type Params: CircuitParams;
    /// The sender's side.
    type Sender: Side<Self::Params>;
    /// The receiver's side.
    type Receiver: Side<Self::Params>;
    /// Domain of the triples' and OTs' base-OT session ids.
    const DOMAIN: &'static str;
    /// The online phase that evaluates the circuit and converts its bits.
    const CIRCUIT: &'static str;
    /// The value columns a sum adds up at most.
    const VALUE_COLUMNS: usize;
    /// Bytes `role` needs beyond the triples and OTs: its inputs, tables and the like (an
    /// upper bound from 2^8 items; a quarter more comes on top for the allocator).
    fn memory(p: &Self::Params, role: Role) -> u64;
    /// Refuses items `protocol` (a function of this front end) cannot run on with its
    /// options (for σ-bit integers: anything else), before anything is sent.
    fn check_items(_protocol: &str, _front: FrontConfig<Self>, _items: &Items) -> Result<()> {
        Ok(())
    }
}

/// A front end's own options.
pub(crate) type FrontConfig<F> = <<F as FrontEnd>::Params as CircuitParams>::Config;

/// The params of a run computing `function` for `sizes` with `config`.
fn params<P: CircuitParams>(
    function: Function,
    sizes: Sizes,
    config: CircuitConfig<P::Config>,
) -> Result<P> {
    P::new(function, sizes, config.front, config.threshold)
}

/// What a side keeps from its offline phase beside the triples, in its state.
pub(crate) trait Kept<P>: Send + Sized + 'static {
    /// Writes it.
    fn save(&self, out: &mut StateWriter) -> Result<()>;
    /// Reads what [`Kept::save`] wrote, every length bounded by `p`.
    fn load(input: &mut StateReader, p: &P) -> Result<Self>;
}

/// Nothing kept.
impl<P> Kept<P> for () {
    fn save(&self, _: &mut StateWriter) -> Result<()> {
        Ok(())
    }
    fn load(_: &mut StateReader, _: &P) -> Result<()> {
        Ok(())
    }
}

/// A seed.
impl<P> Kept<P> for Block {
    fn save(&self, out: &mut StateWriter) -> Result<()> {
        out.block(*self)
    }
    fn load(input: &mut StateReader, _: &P) -> Result<Block> {
        input.block()
    }
}

/// What weighs a party's match bits in the conversion.
pub(crate) enum Weights<'a> {
    /// Nothing of its own: a count, or at the receiver a sum of the sender's values.
    None,
    /// The sender's value at each match bit (a sum of one column it holds alone).
    Values(Box<dyn Fn(usize) -> u64 + 'a>),
    /// Its additive share (mod 2^64) of the value at each match bit (first argument) in
    /// each of `columns` columns (second): a sum of values both parties hold shares of.
    Shared {
        /// The value columns.
        columns: usize,
        /// Its share of a bit's value in a column.
        mine: Box<dyn Fn(usize, usize) -> u64 + 'a>,
    },
}

/// One role's side of a front end: how it brings its items into the circuit.
pub(crate) trait Side<P>: Sync + 'static {
    /// What its offline phase makes before the triples (psww18's hashing seed, rr22's
    /// VOLE).
    type Kept: Kept<P>;
    /// What its online phase brings into the circuit (its tables, its tags).
    type Inputs;
    /// The offline work before the triples, in phases of its own.
    fn offline(ctx: &mut Context, p: &P) -> Result<Self::Kept>;
    /// The online work before the circuit (the items hashed and placed, sorted, or through
    /// the OPPRF), in phases of its own.
    fn inputs(ctx: &mut Context, p: &P, kept: Self::Kept, items: &Items) -> Result<Self::Inputs>;
    /// The circuit on both parties' inputs: this party's share of each match bit.
    fn circuit(gmw: &mut Gmw, p: &P, inputs: &Self::Inputs, prg: &mut Prg) -> Result<Shared>;
    /// What weighs its match bits for `function`: by default nothing of its own.
    fn weights<'a>(
        _function: Function,
        _inputs: &'a Self::Inputs,
        _items: &'a Items,
    ) -> Result<Weights<'a>> {
        Ok(Weights::None)
    }
}

/// A circuit PSI computing `function` with front end `F`.
pub(crate) struct CircuitPsi<F> {
    function: Function,
    info: &'static ProtocolInfo,
    front_end: PhantomData<F>,
}

impl<F> CircuitPsi<F> {
    /// The protocol computing `function`, registered as `info`.
    pub(crate) const fn new(function: Function, info: &'static ProtocolInfo) -> Self {
        CircuitPsi {
            function,
            info,
            front_end: PhantomData,
        }
    }
}

/// Words of triples a run takes: its circuit's and a threshold's comparison.
fn triple_words<P: CircuitParams>(p: &P) -> usize {
    p.circuit_words() + threshold_words(p.outputs(), p.threshold())
}

impl<F: FrontEnd> TypedProtocol for CircuitPsi<F> {
    type Config = CircuitConfig<FrontConfig<F>>;

    fn info(&self) -> &'static ProtocolInfo {
        self.info
    }

    fn params(&self, sizes: Sizes, config: Self::Config) -> Result<Box<dyn Parameters>> {
        Ok(Box::new(params::<F::Params>(self.function, sizes, config)?))
    }

    /// From the parameters: the triples (3 bits an AND gate) and their generator's
    /// buffers, the conversion's OTs, and what the front end needs; a quarter more for
    /// what the allocator keeps.
    fn memory(&self, role: Role, sizes: Sizes, config: Self::Config) -> u64 {
        let Ok(p) = params::<F::Params>(self.function, sizes, config) else {
            return 0; // refused by the parameters before anything is allocated
        };
        let prepared = prepared_bytes(triple_words(&p), p.outputs(), config.offline);
        let need = prepared + F::memory(&p, role);
        need + need / 4
    }

    /// Its configuration's, but a threshold for a count only, values for a sum only.
    fn accepts(&self) -> Accepts {
        let count = self.function == Function::Count;
        Accepts {
            threshold: count,
            value_columns: if count { 0 } else { F::VALUE_COLUMNS },
            ..Self::Config::ACCEPTS
        }
    }

    fn check_items(&self, config: Self::Config, items: &Items) -> Result<()> {
        F::check_items(self.info.name, config.front, items)
    }

    fn party(&self, role: Role) -> &'static dyn AnyParty {
        match (role, self.function) {
            (Role::Sender, Function::Count) => &CircuitParty::<F, F::Sender>::COUNT,
            (Role::Sender, Function::Sum) => &CircuitParty::<F, F::Sender>::SUM,
            (Role::Receiver, Function::Count) => &CircuitParty::<F, F::Receiver>::COUNT,
            (Role::Receiver, Function::Sum) => &CircuitParty::<F, F::Receiver>::SUM,
        }
    }
}

/// A party of front end `F` on side `S`, computing its function.
struct CircuitParty<F, S>(Function, PhantomData<(F, S)>);

impl<F, S> CircuitParty<F, S> {
    const COUNT: Self = CircuitParty(Function::Count, PhantomData);
    const SUM: Self = CircuitParty(Function::Sum, PhantomData);
}

/// What the offline phase leaves for the online one: the parameters it was made for, what
/// the side kept, the triples and OTs.
struct State<P, K> {
    params: P,
    kept: K,
    prepared: Prepared,
}

/// The session's parameters, which must be those the state was made for, for the run's
/// actual set sizes (a state made for larger sets sizes the tables; the circuit's triples
/// beyond them go unused).
fn session_params<P: CircuitParams>(ctx: &Context, function: Function, made_for: &P) -> Result<P> {
    let mut p = params::<P>(function, ctx.session.sized, ctx.config()?)?;
    if p != *made_for {
        return Err(Error::State(
            "the precomputed triples were made for other parameters".into(),
        ));
    }
    p.run_on(Sizes {
        sender: ctx.session.n_sender,
        receiver: ctx.session.n_receiver,
    })?;
    Ok(p)
}

impl<F: FrontEnd, S: Side<F::Params>> Party for CircuitParty<F, S> {
    type State = State<F::Params, S::Kept>;

    /// The side's own offline work, then the triples and the conversion's OTs.
    fn offline(&self, ctx: &mut Context) -> Result<Self::State> {
        let config: CircuitConfig<FrontConfig<F>> = ctx.config()?;
        let params = params::<F::Params>(self.0, ctx.session.sized, config)?;
        let kept = S::offline(ctx, &params)?;
        let (words, outputs) = (triple_words(&params), params.outputs());
        let prepared = prepare(ctx, F::DOMAIN, config.offline, words, outputs)?;
        Ok(State {
            params,
            kept,
            prepared,
        })
    }

    /// The side's inputs, the circuit, then the sender's share or the receiver's output.
    fn online(&self, ctx: &mut Context, state: Self::State, items: &Items) -> Result<Output> {
        let p = session_params(ctx, self.0, &state.params)?;
        let Prepared { triples, ots } = state.prepared;
        let inputs = S::inputs(ctx, &p, state.kept, items)?;
        ctx.phase(F::CIRCUIT, false);
        let (role, threshold) = (ctx.session.role, p.threshold());
        let most = ctx.session.n_sender.min(ctx.session.n_receiver);
        let mut gmw = Gmw::new(ctx.peer, role == Role::Receiver, triples);
        let found = S::circuit(&mut gmw, &p, &inputs, &mut ctx.prg)?;
        let prg = &mut ctx.prg;
        match (role, S::weights(self.0, &inputs, items)?) {
            (Role::Sender, Weights::None) => {
                send_output(&mut gmw, &ots.sent, &found, None, threshold, prg)?
            }
            (Role::Sender, Weights::Values(value)) => {
                send_output(&mut gmw, &ots.sent, &found, Some(&*value), threshold, prg)?
            }
            (Role::Sender, Weights::Shared { columns, mine }) => {
                send_shared_sum(&mut gmw, &ots, &found, columns, &*mine)?
            }
            (Role::Receiver, Weights::Shared { columns, mine }) => {
                return receive_shared_sum(&mut gmw, &ots, &found, columns, &*mine, most)
            }
            (Role::Receiver, _) => {
                let ots = &ots.received;
                return receive_output(&mut gmw, ots, &found, self.0, threshold, most, prg);
            }
        }
        Ok(Output::Nothing)
    }

    fn save(&self, state: &Self::State, out: &mut StateWriter) -> Result<()> {
        let options = Options {
            threshold: state.params.threshold(),
            ..state.params.front().options()
        };
        save_header(out, &state.params.encode(), options)?;
        state.kept.save(out)?;
        state.prepared.save(out)
    }

    fn load(&self, sizes: Sizes, input: &mut StateReader) -> Result<Self::State> {
        let (encoded, options) = load_header(input)?;
        let front = FrontConfig::<F>::from_options(&options)?;
        let params = F::Params::new(self.0, sizes, front, options.threshold)?;
        if params.encode() != encoded {
            return Err(Error::State(
                "a circuit PSI state for other parameters".into(),
            ));
        }
        let kept = S::Kept::load(input, &params)?;
        let (words, outputs) = (triple_words(&params), params.outputs() as usize);
        let prepared = Prepared::load(input, words, outputs)?;
        Ok(State {
            params,
            kept,
            prepared,
        })
    }
}
