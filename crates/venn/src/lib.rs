//! Venn: private set intersection.
//!
//! Two parties each hold a set of byte strings; the receiver learns which of its items the
//! sender also holds, and nothing else. See the README for the protocols, their security
//! models and the `venn` command-line tool built on this library.
//!
//! Layers (nothing imports upwards): [`protocols`] → the building blocks they share (the
//! circuit PSIs' back end, `gmw`, RR22's OPRF) → the protocol framework (the traits
//! [`protocols`] re-exports), `vole`, `okvs` → `ot`, `tables` → [`session`] → [`state`] →
//! [`crypto`], [`net`] → [`util`] (the full order, tested: `layers.rs`); [`run()`] ties a
//! protocol, a channel and a set together. The building blocks a product does not need are
//! under [`internals`], without a stability promise.

mod circuit_psi;
pub mod crypto;
mod error;
mod framework;
#[cfg(feature = "fuzz")]
pub mod fuzz;
#[cfg(feature = "bfv")]
pub mod he;
mod items;
pub mod later_rows;
#[cfg(test)]
mod layers;
pub mod net;
mod oprf;
mod options;
mod parties;
pub mod protocols;
mod run;
pub mod session;
pub mod state;
pub mod unbalanced;
pub mod util;

pub mod internals;
use internals::{gmw, okvs, ot, tables, vole};

pub use error::{peer_text, Error, Result};
pub use items::{BlockEncoder, Items};
pub use run::{
    check_sizes, load_state, memory_needed, precompute, run, run_online, LoadedState, Precomputed,
    Report, RunOptions, BASE_MEMORY,
};

/// Computational security parameter κ in bits.
pub const COMPUTATIONAL_SECURITY: usize = 128;
/// Statistical security parameter λ (σ in KKRT16) in bits.
pub const STATISTICAL_SECURITY: usize = 40;
/// The largest set a party may bring (item indices are 32-bit on the wire).
pub const MAX_ITEMS: u64 = 1 << 31;
