//! Thunder (Pinkas–Riva): private set intersection over encrypted data that clients have
//! outsourced to a cloud service. Clients upload their sets once, each under its own key;
//! any two (or three) that later agree on a run key hand the service tokens, and the service
//! intersects the stored sets without learning the items or the keys.
//!
//! This crate is what a client or an external worker needs, and what the service shares
//! with them (the Python wheel links it alone); the service itself (`venn cloud serve`:
//! its HTTP server, store, enrolment, spot checks and join) is the `venn-service` crate.
//!
//! - [`crypto`]: the pairing-based scheme, its hot loop eight items at a time on
//!   AVX-512 IFMA where the CPU has it (`batch_pairing`);
//! - [`api`]: the HTTP API's bodies, limits and states; [`auth`]: signed requests and
//!   worker identities; [`error`]: the API's errors, each with its HTTP status;
//! - [`worker`]: the workers that pair stored items with tokens (and raise a pre-token's
//!   precomputed values: docs/cloud.md), and a task's answer, which the service's
//!   spot checks recompute;
//! - [`client`]: what a data owner runs (register, upload, pre-tokens, pair, result), over
//!   [`http`]'s blocking HTTPS client.

pub mod api;
pub mod auth;
#[cfg(target_arch = "x86_64")]
mod batch_pairing;
pub mod client;
pub mod crypto;
pub mod error;
pub mod http;
pub mod worker;

pub use error::{Error, Result};

/// The scheme's source.
pub const PAPER: &str = "Pinkas, Riva: Thunder, PSI over encrypted data outsourced to a \
    cloud service (the talk's slides; the scheme as Venn builds it: docs/cloud.md, The \
    cryptography), on BLS12-381";

/// Its security model.
pub const SECURITY: &str = "semi-honest service; clients do not collude with it; SXDH on \
    BLS12-381 (about 117-bit security against today's best attacks on its F_p^12, below \
    κ = 128: the curve the ecosystem standardised on), H a random oracle (RFC 9380 hash to \
    G1); clients' requests signed with Ed25519";

/// Who learns what.
pub const LEAKAGE: &str = "The service learns every dataset's size and, for each run, \
    which stored positions match (the whole pattern, also across runs of the same \
    dataset), never a key, a dataset key K_i or a run key K. Each client learns its own \
    matched rows and the sizes of its runs' datasets; another client's dataset (its \
    owner, its size, even its existence) is shown only to a client its owner paired with. \
    Values of runs (i, j) and (j, k) never meet, so the service \
    cannot intersect i with k; only i and k together can make an (i, k) run. A preprocessed \
    run (docs/cloud.md, Pre-tokens) shows the service the same, plus the ratio R_j/R_i of \
    two fresh one-time shares, which says nothing as long as each pre-token serves one run (enforced on both \
    ends). A malicious service can drop or invent matches.";
