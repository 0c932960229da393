//! Thunder (Pinkas–Riva): private set intersection over encrypted data that clients have
//! outsourced to a cloud service. Clients upload their sets once, each under its own key;
//! any two (or three) that later agree on a run key hand the service tokens, and the service
//! intersects the stored sets without learning the items or the keys.
//!
//! - [`crypto`]: the pairing-based scheme, its hot loop eight items at a time on
//!   AVX-512 IFMA where the CPU has it (`batch_pairing`);
//! - [`server`], [`store`], [`join`]: the service (`venn cloud serve`), its store and its
//!   coordinator's join;
//! - [`worker`]: the workers that pair stored items with tokens;
//! - [`client`]: what a data owner runs (register, upload, pair, result).

pub mod api;
pub mod auth;
#[cfg(target_arch = "x86_64")]
mod batch_pairing;
pub mod client;
pub mod crypto;
pub mod error;
pub mod http;
pub mod join;
pub mod server;
pub mod store;
pub mod worker;

pub use error::{Error, Result};
