//! `ub-fhe`, the FHE query mode (CLR17; CHLR18; CMdG+21; APSI's design): the server keeps
//! its items' OPRF hashes as per-slot matching polynomials in BFV-plaintext bundles
//! ([`database`]), a client sends its items' powers encrypted under its own key and gets
//! back each bundle's polynomials evaluated at them ([`query`]): its traffic depends on
//! the server's set only through the bundle count, and the client keeps nothing between
//! queries. The sets of parameters are checked as [`params`] says.

pub mod database;
pub mod dataset;
pub mod messages;
pub mod params;
pub mod query;
pub mod session;
