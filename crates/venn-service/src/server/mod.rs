//! `venn cloud serve`: the HTTP API (docs/cloud.md), its coordinator and its pool of workers.
//!
//! Clients act only on their own datasets; a run's status and results go only to the
//! owners of its datasets, each getting its own side's positions; external workers lease
//! tasks under identities the operator enrolled ([`crate::enrolment`]), only the worker
//! holding a task's lease may fetch its input and answer it, and every answer is
//! spot-checked before it is taken ([`crate::spot_check`]): one that fails is refused
//! (403), its task goes back to the queue at once and its worker is quarantined. Every
//! body is bounded before it is read and must arrive by its request's deadline, every
//! point is checked as it arrives, and connections are admitted fairly (`admission`).
//!
//! Its modules (private):
//!
//! - `connections`: the listener, TLS, a deadline per connection, one request each;
//!   `admission`: which connections and registrations are let in;
//! - `extractors`: a request signed by a client, or from an enrolled worker, its body
//!   bounded and read by the deadline;
//! - `routes`: the API's routes and how an error is answered; their handlers in
//!   `datasets` (registration, datasets, chunks, grants), `runs`, `pretokens` and
//!   `tasks` (the external workers');
//! - `coordinator`: the service's state, leases, a run's start and join, the expiry of
//!   runs that wait too long, and the service's own pool of workers.

mod admission;
mod connections;
mod coordinator;
mod datasets;
mod extractors;
mod pretokens;
mod routes;
mod runs;
mod tasks;

use crate::store;
use std::sync::Arc;

pub use connections::{run, serve};

/// How the service runs.
#[derive(Clone, Debug)]
pub struct Config {
    /// How long a worker holds a task before another may take it.
    pub lease_seconds: u64,
    /// The most items of a dataset.
    pub max_items: u64,
    /// The most datasets a client keeps (open or sealed).
    pub max_datasets: u64,
    /// The most items a client keeps over all its datasets.
    pub max_client_items: u64,
    /// The most pre-tokens of a dataset whose values are on disk at once (592 bytes per
    /// item each, until the run that uses it ends).
    pub max_pretokens: u64,
    /// How long a run waits for its tokens or scalars before it fails (and frees the
    /// pre-tokens given to it).
    pub token_wait_seconds: u64,
    /// Threads of the service's own pool of workers (0: external workers only).
    pub threads: usize,
    /// How long a connection has for its request, TLS handshake, head and body, from the
    /// moment it is accepted (one request per connection).
    pub request_seconds: u64,
    /// The most connections served at once (more are closed as soon as accepted).
    pub max_connections: usize,
    /// The most connections served at once from one peer (an IPv4 address, or an IPv6
    /// /64 network).
    pub max_connections_per_peer: usize,
    /// The most connections served at once from one network (an IPv4 /24, or an IPv6 /48),
    /// below `max_connections`: when every place is taken, the oldest connection still
    /// waiting for its request, of the network holding the most, makes way for a newcomer.
    pub max_connections_per_network: usize,
    /// Who may register: anyone, or only a client with an operator's invite.
    pub registration: Registration,
    /// The most clients registered.
    pub max_clients: u64,
    /// The most datasets kept (open or sealed) by all clients together.
    pub max_total_datasets: u64,
    /// The most items kept by all clients together.
    pub max_total_items: u64,
    /// The most registrations tried per minute from one peer (an IPv4 address, or an IPv6
    /// /64 network).
    pub registrations_per_minute: u32,
    /// The most pairs a three-party run's join may compare (n1·n2: every pair of its first
    /// two sides' values is looked up in a table of the third's).
    pub max_join_work: u64,
    /// Items of each external worker's answer recomputed before it is taken (capped at
    /// the chunk's; 0: external workers are trusted): see [`crate::spot_check`].
    pub spot_checks: usize,
}

/// `venn cloud serve`'s defaults (docs/cloud.md, Running the service), declared once: the
/// command line's options default to these. Registration is by invitation; the command
/// line opens it on a loopback address.
impl Default for Config {
    fn default() -> Config {
        Config {
            lease_seconds: 300,
            max_items: 1 << 24,
            max_datasets: 64,
            max_client_items: 1 << 26,
            max_pretokens: 4,
            token_wait_seconds: 86400,
            threads: 2,
            request_seconds: 60,
            max_connections: 512,
            max_connections_per_peer: 64,
            max_connections_per_network: 128,
            registration: Registration::Invite,
            max_clients: 1024,
            max_total_datasets: 4096,
            max_total_items: 1 << 30,
            registrations_per_minute: 10,
            max_join_work: 1 << 32,
            // A worker falsifying a quarter of a chunk is caught with probability ≥ 0.9999.
            spot_checks: 32,
        }
    }
}

impl Config {
    /// The limits on what a client keeps.
    pub(super) fn quotas(&self) -> store::Quotas {
        store::Quotas {
            max_items: self.max_items,
            max_datasets: self.max_datasets,
            max_client_items: self.max_client_items,
            max_total_datasets: self.max_total_datasets,
            max_total_items: self.max_total_items,
        }
    }
}

/// Who may register with the service.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Registration {
    /// Anyone who reaches the service.
    Open,
    /// Only a client presenting an unused invite from the operator (`venn cloud invite`).
    Invite,
}

/// Where the service keeps things and how it runs.
#[derive(Clone, Debug)]
pub struct Setup {
    /// The address to listen on.
    pub listen: String,
    /// The metadata store (`sqlite://FILE` or `postgres://…`).
    pub database: String,
    /// The data directory (chunk files, answers, results).
    pub dir: std::path::PathBuf,
    /// TLS for the API (`None`: plain HTTP).
    pub tls: Option<Arc<rustls::ServerConfig>>,
    /// How the service runs (leases, limits).
    pub config: Config,
}
