//! The protocol API: what a protocol says about itself, its typed parameters, and a party
//! per role with an offline and an online step.
//!
//! ```text
//!   handshake ──► offline(ctx) ──► State ──► online(ctx, State, items) ──► Output
//!                (no inputs)        │  ▲
//!                              save ▼  │ load        (venn precompute / --state FILE)
//!                                 state file
//! ```
//!
//! The offline step may use the session (set sizes, parameters, randomness, links) but
//! never the inputs; its state can be written to a file and read back, so the online step
//! can run later, in another session bound to the one that produced it.

use super::{Accepts, Bins, Config, Context, Offline, Options};
use crate::items::Items;
use crate::session::{Role, Sizes};
use crate::state::{StateReader, StateWriter};
use crate::{Error, Result};
use std::any::Any;

/// The security a protocol (or one of its roles) offers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Security {
    /// No privacy at all: a baseline for measurements.
    Insecure,
    /// Secure against parties that follow the protocol but try to learn more.
    SemiHonest,
    /// Secure against parties that deviate from the protocol arbitrarily.
    Malicious,
}

impl Security {
    /// A short name.
    pub fn name(self) -> &'static str {
        match self {
            Security::Insecure => "INSECURE",
            Security::SemiHonest => "semi-honest",
            Security::Malicious => "malicious",
        }
    }
}

/// What a party learns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutputKind {
    /// The indices of its items in the intersection.
    Indices,
    /// The size of the intersection.
    Count,
    /// A sum over values associated with the items in the intersection.
    Sum,
    /// Whether the intersection's size reaches a threshold.
    Threshold,
    /// Nothing.
    Nothing,
}

impl OutputKind {
    /// A short description.
    pub fn name(self) -> &'static str {
        match self {
            OutputKind::Indices => "the intersection",
            OutputKind::Count => "the size of the intersection",
            OutputKind::Sum => "a sum over the intersection",
            OutputKind::Threshold => "whether the intersection's size reaches a threshold",
            OutputKind::Nothing => "nothing",
        }
    }
}

/// What a party learned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Output {
    /// Sorted indices of this party's items in the intersection.
    Indices(Vec<usize>),
    /// Sorted indices of this party's items in the intersection, each with the records of
    /// the peer's rows of the same key (PSI with payloads): one, or more where the peer's
    /// key has several rows.
    Records {
        /// Sorted indices of this party's items in the intersection.
        indices: Vec<usize>,
        /// The peer's records, index by index in the same order, each index's in the
        /// peer's row order: `width` bytes each.
        records: Vec<u8>,
        /// Bytes a record.
        width: usize,
        /// For each index, how many of the peer's rows (records) it has: at least one.
        rows: Vec<u32>,
    },
    /// The size of the intersection.
    Count(u64),
    /// The sums (mod 2^64) of the values the sender associated with the items in the
    /// intersection, one for each of its value columns in order, and their number.
    Sum {
        /// The size of the intersection.
        count: u64,
        /// One sum for each of the sender's value columns, in order.
        sums: Vec<u64>,
    },
    /// Whether the intersection has at least `threshold` items.
    Threshold {
        /// The size asked about, as agreed by both parties.
        threshold: u64,
        /// Whether the intersection is at least that large.
        reached: bool,
    },
    /// Nothing.
    Nothing,
}

impl Output {
    /// Its kind.
    pub fn kind(&self) -> OutputKind {
        match self {
            Output::Indices(_) | Output::Records { .. } => OutputKind::Indices,
            Output::Count(_) => OutputKind::Count,
            Output::Sum { .. } => OutputKind::Sum,
            Output::Threshold { .. } => OutputKind::Threshold,
            Output::Nothing => OutputKind::Nothing,
        }
    }

    /// The indices, for an output of that kind.
    pub fn indices(&self) -> Option<&[usize]> {
        match self {
            Output::Indices(ix) | Output::Records { indices: ix, .. } => Some(ix),
            _ => None,
        }
    }
}

/// What a protocol says about one of its roles.
pub struct RoleInfo {
    /// The role.
    pub role: Role,
    /// The adversary this role's privacy holds against.
    pub security: Security,
    /// What this role learns (without `--both`).
    pub output: OutputKind,
    /// Memory this role needs per item of the peer's set, in bytes (an upper bound for
    /// sets of 2^8 items and more; refusing a peer before allocating relies on it).
    pub peer_item_bytes: u64,
    /// Memory this role needs per item of its own set, in bytes.
    pub own_item_bytes: u64,
}

impl RoleInfo {
    /// The memory its per-item figures give for a run of these sizes, in bytes.
    pub fn memory(&self, sizes: Sizes) -> u64 {
        let (own, peer) = match self.role {
            Role::Sender => (sizes.sender, sizes.receiver),
            Role::Receiver => (sizes.receiver, sizes.sender),
        };
        (self.own_item_bytes.saturating_mul(own))
            .saturating_add(self.peer_item_bytes.saturating_mul(peer))
    }
}

/// What the registry knows about a protocol.
pub struct ProtocolInfo {
    /// The name used on the command line and in the handshake.
    pub name: &'static str,
    /// The paper (and figure) it implements.
    pub paper: &'static str,
    /// Its security model: that of its weakest role.
    pub security: Security,
    /// Who learns what.
    pub leakage: &'static str,
    /// Whether the sender may learn the intersection too (`--both`).
    pub both_allowed: bool,
    /// Its roles.
    pub roles: &'static [RoleInfo],
}

impl ProtocolInfo {
    /// What the protocol says about `role`.
    pub fn role(&self, role: Role) -> &RoleInfo {
        self.roles
            .iter()
            .find(|r| r.role == role)
            .expect("every protocol lists each of its roles")
    }
}

/// Named parameters of a protocol instance, in display order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParamTable(pub Vec<(&'static str, String)>);

impl std::fmt::Display for ParamTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let parts: Vec<String> = self.0.iter().map(|(k, v)| format!("{k}={v}")).collect();
        f.write_str(&parts.join(" "))
    }
}

/// A protocol's parameters for one pair of set sizes, typed by each protocol (its paper's
/// formulas).
pub trait Parameters: Send + Sync {
    /// The canonical encoding: the handshake compares it byte for byte and binds it into
    /// the session id.
    fn encode(&self) -> Vec<u8>;
    /// Named values in display order (`venn params`, mismatch messages).
    fn table(&self) -> ParamTable;
}

/// One role of a protocol.
pub trait Party: Sync {
    /// What the offline step leaves for the online one.
    type State: Send + 'static;

    /// The offline step: input-independent work with the peer (base OTs, OT extension,
    /// cut-and-choose, ...). It sees the session's set sizes, never the items.
    fn offline(&self, ctx: &mut Context) -> Result<Self::State>;

    /// The online step on this party's distinct items.
    fn online(&self, ctx: &mut Context, state: Self::State, items: &Items) -> Result<Output>;

    /// Writes `state` so that a later session can run the online step.
    fn save(&self, state: &Self::State, out: &mut StateWriter) -> Result<()>;

    /// Reads back what [`Party::save`] wrote. Every length is checked against what the
    /// parameters for `sizes` allow before anything is allocated.
    fn load(&self, sizes: Sizes, input: &mut StateReader) -> Result<Self::State>;
}

/// A [`Party`] with its state type erased, as the registry hands it out.
pub trait AnyParty: Sync {
    /// [`Party::offline`].
    fn offline(&self, ctx: &mut Context) -> Result<Box<dyn Any + Send>>;
    /// [`Party::online`].
    fn online(
        &self,
        ctx: &mut Context,
        state: Box<dyn Any + Send>,
        items: &Items,
    ) -> Result<Output>;
    /// [`Party::save`].
    fn save(&self, state: &(dyn Any + Send), out: &mut StateWriter) -> Result<()>;
    /// [`Party::load`].
    fn load(&self, sizes: Sizes, input: &mut StateReader) -> Result<Box<dyn Any + Send>>;
}

/// A state handed to a party other than the one that made it: a bug in the runner.
const FOREIGN_STATE: &str = "a party's state goes back to the same party";

impl<P: Party> AnyParty for P {
    fn offline(&self, ctx: &mut Context) -> Result<Box<dyn Any + Send>> {
        Ok(Box::new(Party::offline(self, ctx)?))
    }

    fn online(
        &self,
        ctx: &mut Context,
        state: Box<dyn Any + Send>,
        items: &Items,
    ) -> Result<Output> {
        let state = state.downcast::<P::State>().expect(FOREIGN_STATE);
        Party::online(self, ctx, *state, items)
    }

    fn save(&self, state: &(dyn Any + Send), out: &mut StateWriter) -> Result<()> {
        let state = state.downcast_ref::<P::State>().expect(FOREIGN_STATE);
        Party::save(self, state, out)
    }

    fn load(&self, sizes: Sizes, input: &mut StateReader) -> Result<Box<dyn Any + Send>> {
        Ok(Box::new(Party::load(self, sizes, input)?))
    }
}

/// A PSI protocol as it is written: metadata, parameters on its own typed [`Config`], and
/// a party per role. The registry hands it out as a [`Protocol`], which turns a run's
/// [`Options`] into its configuration.
pub trait TypedProtocol: Sync {
    /// The options it takes, typed.
    type Config: Config;

    /// Registry metadata.
    fn info(&self) -> &'static ProtocolInfo;

    /// The parameters for these set sizes and this configuration (the paper's formulas).
    fn params(&self, sizes: Sizes, config: Self::Config) -> Result<Box<dyn Parameters>>;

    /// Memory `role` needs for a run of these sizes and this configuration, in bytes: an
    /// upper bound, on which refusing a peer before allocating relies. By default from the
    /// role's per-item figures ([`RoleInfo`]).
    fn memory(&self, role: Role, sizes: Sizes, _config: Self::Config) -> u64 {
        self.info().role(role).memory(sizes)
    }

    /// The options it takes: its configuration's, and what it sums and bounds
    /// (`--value-column`, `--upload-deadline`); a protocol that is several (a count and a
    /// sum) may take fewer of its configuration's.
    fn accepts(&self) -> Accepts {
        <Self::Config as Config>::ACCEPTS
    }

    /// Who learns what beyond [`ProtocolInfo::leakage`] when the items carry records, for
    /// a protocol whose items can ([`Accepts::payload`]).
    fn records_leakage(&self) -> Option<&'static str> {
        None
    }

    /// Refuses `items` it cannot run on with `config`, before anything is sent (for a
    /// protocol on σ-bit integers: anything else).
    fn check_items(&self, _config: Self::Config, _items: &Items) -> Result<()> {
        Ok(())
    }

    /// The party that plays `role`.
    fn party(&self, role: Role) -> &'static dyn AnyParty;
}

/// A PSI protocol as the registry, the runner and the front ends see it: metadata,
/// parameters, and a party per role, on the union of a run's [`Options`].
pub trait Protocol: Sync {
    /// Registry metadata.
    fn info(&self) -> &'static ProtocolInfo;

    /// The parameters for these set sizes and options (the paper's formulas); options the
    /// protocol does not take are refused by name.
    fn params(&self, sizes: Sizes, options: Options) -> Result<Box<dyn Parameters>>;

    /// Memory `role` needs for a run of these sizes and options, in bytes: an upper
    /// bound, on which refusing a peer before allocating relies (`u64::MAX` for options
    /// it refuses: no budget admits a run it cannot make).
    fn memory(&self, role: Role, sizes: Sizes, options: Options) -> u64;

    /// The options it takes (`--bins`, `--sigma`, `--offline`, ...).
    fn accepts(&self) -> Accepts;

    /// Who learns what beyond [`ProtocolInfo::leakage`] when the items carry records, for
    /// a protocol whose items can ([`Accepts::payload`]).
    fn records_leakage(&self) -> Option<&'static str>;

    /// Refuses options it does not take, and `items` it cannot run on with `options`,
    /// before anything is sent (for a protocol on σ-bit integers: anything else).
    fn check_items(&self, options: Options, items: &Items) -> Result<()>;

    /// The option sets it runs with among [`Accepts::variants`] of these choices: those
    /// it refuses whatever the keys (kbm23's BFV offline phase on keys of any length) are
    /// left out; the others are for [`Options::check`] to judge.
    fn variants(&self, bins: &[Bins], sigmas: &[Option<u32>], offlines: &[Offline])
        -> Vec<Options>;

    /// Refuses values with the items of a role that takes none, items without values where
    /// `role` has its values summed ([`Accepts::value_columns`]: the sender's), and more
    /// value columns than the protocol sums.
    fn check_values(&self, role: Role, value_columns: usize) -> Result<()> {
        let name = self.info().name;
        let most = match role {
            Role::Sender => self.accepts().value_columns,
            Role::Receiver => 0,
        };
        match (most, value_columns) {
            (1.., 0) => Err(Error::Usage(format!(
                "{name} sums a value per key of the sender's: give the sender a value \
                 column (--value-column)"
            ))),
            (0, 1..) => Err(Error::Usage(format!(
                "values per key (--value-column) are only for the sender of a protocol \
                 that sums them, not for the {} of {name}",
                role.name()
            ))),
            (1, 2..) => Err(Error::Usage(format!(
                "{name} sums one value column, not {value_columns} (rr22-sum sums several)"
            ))),
            _ if value_columns > most => Err(Error::Usage(format!(
                "{name} sums at most {most} value columns in a run, not {value_columns}"
            ))),
            _ => Ok(()),
        }
    }

    /// The party that plays `role`.
    fn party(&self, role: Role) -> &'static dyn AnyParty;
}

/// `options` as `p`'s configuration: what `p` does not take refused by name first.
fn configure<P: TypedProtocol + ?Sized>(p: &P, options: Options) -> Result<P::Config> {
    options.check(p.info(), p.accepts())?;
    P::Config::from_options(&options)
}

impl<P: TypedProtocol> Protocol for P {
    fn info(&self) -> &'static ProtocolInfo {
        TypedProtocol::info(self)
    }

    fn params(&self, sizes: Sizes, options: Options) -> Result<Box<dyn Parameters>> {
        TypedProtocol::params(self, sizes, configure(self, options)?)
    }

    fn memory(&self, role: Role, sizes: Sizes, options: Options) -> u64 {
        configure(self, options).map_or(u64::MAX, |config| {
            TypedProtocol::memory(self, role, sizes, config)
        })
    }

    fn accepts(&self) -> Accepts {
        TypedProtocol::accepts(self)
    }

    fn records_leakage(&self) -> Option<&'static str> {
        TypedProtocol::records_leakage(self)
    }

    fn check_items(&self, options: Options, items: &Items) -> Result<()> {
        TypedProtocol::check_items(self, configure(self, options)?, items)
    }

    fn variants(
        &self,
        bins: &[Bins],
        sigmas: &[Option<u32>],
        offlines: &[Offline],
    ) -> Vec<Options> {
        let runs = |o: &Options| {
            let config = P::Config::from_options(o)?;
            TypedProtocol::check_items(self, config, &Items::default())
        };
        (TypedProtocol::accepts(self)
            .variants(bins, sigmas, offlines)
            .into_iter())
        .filter(|o| runs(o).is_ok())
        .collect()
    }

    fn party(&self, role: Role) -> &'static dyn AnyParty {
        TypedProtocol::party(self, role)
    }
}

/// The [`Party`] items of a party with nothing to do offline (its state is `()`).
macro_rules! no_offline_state {
    () => {
        type State = ();
        fn offline(&self, _: &mut $crate::framework::Context) -> $crate::Result<()> {
            Ok(())
        }
        fn save(&self, _: &(), _: &mut $crate::state::StateWriter) -> $crate::Result<()> {
            Ok(())
        }
        fn load(
            &self,
            _: $crate::session::Sizes,
            _: &mut $crate::state::StateReader,
        ) -> $crate::Result<()> {
            Ok(())
        }
    };
}
pub(crate) use no_offline_state;
