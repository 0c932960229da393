//! Thunder's service (`venn cloud serve`, docs/cloud.md): the HTTP API and its coordinator
//! ([`server`]), where it keeps things ([`store`]), the join of a run's answers into each
//! side's matches ([`join`]), the operator's enrolment of external workers and invitations
//! ([`enrolment`]), the spot checks of those workers' answers ([`spot_check`]) and its log
//! ([`logs`]: `tracing`, filtered by `RUST_LOG`).
//!
//! Its own crate so that what clients and workers link — venn-cloud: the scheme, the API's
//! bodies and errors, signed requests, the HTTP client, the worker — carries no server
//! stack (axum, hyper, tokio, sqlx): the Python wheel depends on venn-cloud alone.

pub mod enrolment;
pub mod error;
pub mod join;
pub mod logs;
pub mod server;
pub mod spot_check;
pub mod store;

pub use error::{Error, Result};
