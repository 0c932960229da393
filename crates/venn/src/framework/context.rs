//! What a running party works with: its link to the peer, a way to reach a dealer (for
//! an offline phase that takes its randomness from one), the agreed session, its
//! randomness and a log of timed phases.

use super::pad_seeds::{InBuckets, PadSeeds};
use super::Config;
use crate::crypto::Prg;
use crate::net::Channel;
use crate::session::Session;
use crate::{Error, Result};
use std::time::{Duration, Instant};

/// Told when a protocol enters a phase (the CLI shows progress with it).
pub trait Progress: Sync {
    /// A new phase begins.
    fn phase(&self, name: &str);
}

/// A timed protocol phase.
#[derive(Clone, Debug)]
pub struct Phase {
    /// What happened.
    pub name: &'static str,
    /// Whether it is independent of the inputs (offline) or not (online).
    pub offline: bool,
    /// How long it took.
    pub duration: Duration,
}

/// Opens a link to the dealer (`venn dealer`), authenticated as the user configured it.
pub type DealerLink<'a> = dyn Fn() -> Result<Box<dyn Channel>> + Sync + 'a;

/// The environment of one protocol run.
pub struct Context<'a> {
    /// The link to the other party of the protocol.
    pub peer: &'a mut dyn Channel,
    /// What the handshake agreed.
    pub session: Session,
    /// This party's randomness.
    pub prg: Prg,
    progress: Option<&'a dyn Progress>,
    dealer: Option<&'a DealerLink<'a>>,
    /// The user's deadline for a peer's whole upload, where the protocol has one (rr22-m's
    /// sender); `None`, the protocol's default for the sizes.
    pub upload_deadline: Option<Duration>,
    /// The most rows the peer may bring, its items and their repeated rows together
    /// (`--max-peer-items`): bounds what it may announce of repeated rows' records.
    pub max_peer_rows: u64,
    /// Whether this session is a bucket of a run in buckets ([`InBuckets`]).
    pub in_buckets: bool,
    /// The items' pad seeds, kept in a bucket of a run in buckets.
    pad_seeds: Option<PadSeeds>,
    phases: Vec<Phase>,
    current: Option<(&'static str, bool, Instant)>,
}

impl<'a> Context<'a> {
    /// A context; the clock of a phase starts with [`Context::phase`].
    pub fn new(
        peer: &'a mut dyn Channel,
        session: Session,
        prg: Prg,
        progress: Option<&'a dyn Progress>,
    ) -> Self {
        Context {
            peer,
            session,
            prg,
            progress,
            dealer: None,
            upload_deadline: None,
            max_peer_rows: crate::MAX_ITEMS,
            in_buckets: false,
            pad_seeds: None,
            phases: Vec::new(),
            current: None,
        }
    }

    /// The context with a way to reach a dealer.
    pub fn with_dealer(self, dealer: Option<&'a DealerLink<'a>>) -> Self {
        Context { dealer, ..self }
    }

    /// The context with the user's deadline for a peer's whole upload.
    pub fn with_upload_deadline(self, upload_deadline: Option<Duration>) -> Self {
        Context {
            upload_deadline,
            ..self
        }
    }

    /// The context with the most rows the peer may bring ([`Context::max_peer_rows`]).
    pub fn with_max_peer_rows(self, max_peer_rows: u64) -> Self {
        Context {
            max_peer_rows,
            ..self
        }
    }

    /// The context of a bucket of a run in buckets, if `in_buckets` says so: a sender
    /// accepts the receiver's repeated rows in the bucket up to what is left of the run's
    /// ([`InBuckets::peer_rows`]) beside its items in the bucket, padding included; a
    /// receiver none (the sender's go after the last bucket).
    pub fn with_buckets(self, in_buckets: Option<InBuckets>) -> Self {
        use crate::session::Role;
        let Some(b) = in_buckets else {
            return self;
        };
        let max_peer_rows = match self.session.role {
            Role::Sender => b.peer_rows.saturating_add(self.session.n_receiver),
            Role::Receiver => self.session.n_sender,
        };
        Context {
            in_buckets: true,
            max_peer_rows,
            ..self
        }
    }

    /// Keeps the items' pad seeds `seeds()` in a bucket of a run in buckets.
    pub(crate) fn keep_pad_seeds(&mut self, seeds: impl FnOnce() -> PadSeeds) {
        if self.in_buckets {
            self.pad_seeds = Some(seeds());
        }
    }

    /// The pad seeds kept, if any.
    pub(crate) fn take_pad_seeds(&mut self) -> Option<PadSeeds> {
        self.pad_seeds.take()
    }

    /// The protocol's configuration, from the options the handshake agreed (which the
    /// run checked against what the protocol takes before announcing them).
    pub fn config<C: Config>(&self) -> Result<C> {
        C::from_options(&self.session.options)
    }

    /// A link to the dealer.
    pub fn dealer(&self) -> Result<Box<dyn Channel>> {
        let connect = self.dealer.ok_or_else(|| {
            Error::Usage("--offline dealer needs the dealer's address: --dealer ADDR".into())
        })?;
        connect()
    }

    /// Ends the current phase and starts `name`.
    pub fn phase(&mut self, name: &'static str, offline: bool) {
        self.end_phase();
        if let Some(p) = self.progress {
            p.phase(name);
        }
        self.current = Some((name, offline, Instant::now()));
    }

    fn end_phase(&mut self) {
        if let Some((name, offline, start)) = self.current.take() {
            self.phases.push(Phase {
                name,
                offline,
                duration: start.elapsed(),
            });
        }
    }

    /// Ends the last phase and returns the log.
    pub fn finish(mut self) -> Vec<Phase> {
        self.end_phase();
        self.phases
    }
}
