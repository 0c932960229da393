//! The protocol framework: what every protocol implements and works with, apart from the
//! protocols themselves ([`crate::protocols`], which re-exports it for the library's users)
//! and below the building blocks they share, which use it too: RR22's OPRF and OPPRF
//! ([`crate::oprf`]) and the circuit PSIs' back end ([`crate::circuit_psi`]), one generic
//! protocol whose front ends are protocols.
//!
//! - the [`TypedProtocol`] trait a protocol implements, the [`Protocol`] the registry hands
//!   out (the same, on the union of a run's options), the [`Party`] trait, what a protocol says about itself
//!   ([`ProtocolInfo`], [`RoleInfo`], [`Security`]), its [`Parameters`] and what a party
//!   learns ([`Output`]): `api.rs`;
//! - [`Context`]: what a running party works with (links, session, randomness, phases);
//! - [`Config`]: a protocol's own options, typed, and [`Accepts`]: which of a run's options
//!   a protocol takes;
//! - what the hash-based protocols share: their output length ([`output_bits`]) and the
//!   comparison of the sender's values with the receiver's ([`matching`]).

mod accepts;
mod api;
mod config;
mod context;
pub(crate) mod matching;
mod output_bits;
mod pad_seeds;

pub use accepts::{Accepts, Bins, Offline, Options, Stash};
pub(crate) use api::no_offline_state;
pub use api::{
    AnyParty, Output, OutputKind, ParamTable, Parameters, Party, Protocol, ProtocolInfo, RoleInfo,
    Security, TypedProtocol,
};
pub use config::Config;
pub use context::{Context, DealerLink, Phase, Progress};
pub(crate) use output_bits::{output_bits, round_up_to_byte, OutputBits};
pub use pad_seeds::{InBuckets, PadSeeds};
