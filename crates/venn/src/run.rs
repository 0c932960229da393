//! Running one party of a protocol end to end: handshake, protocol, report.

use crate::crypto::{Block, Prg};
use crate::items::Items;
use crate::net::{Channel, Traffic};
use crate::protocols::{Context, Phase, Progress, Protocol};
use crate::session::{handshake, Confirming, Hello, Role, WireParams};
use crate::{Error, Result, MAX_ITEMS};
use std::time::{Duration, Instant};

/// How to run one party.
pub struct RunOptions<'a> {
    /// The protocol (from [`crate::protocols::registry`]).
    pub protocol: &'static dyn Protocol,
    /// Sender or receiver.
    pub role: Role,
    /// Whether the sender learns the intersection too.
    pub both: bool,
    /// The largest set size we accept from the peer (never more than [`MAX_ITEMS`]).
    pub max_peer_items: u64,
    /// Worker threads for this party.
    pub threads: usize,
    /// A fixed PRG seed (tests only); `None` draws from the OS.
    pub seed: Option<Block>,
    /// Told about phase changes.
    pub progress: Option<&'a dyn Progress>,
}

/// What one party measured and learned.
#[derive(Clone, Debug)]
pub struct Report {
    /// The protocol's registry name.
    pub protocol: &'static str,
    /// Our role.
    pub role: Role,
    /// Our set size.
    pub n_self: usize,
    /// The peer's set size.
    pub n_peer: u64,
    /// Sorted indices of our items in the intersection, if we learn it.
    pub intersection: Option<Vec<usize>>,
    /// Timed phases, in order.
    pub phases: Vec<Phase>,
    /// Bytes moved.
    pub traffic: Traffic,
}

impl Report {
    /// Time spent in input-independent phases.
    pub fn offline(&self) -> Duration {
        self.phases
            .iter()
            .filter(|p| p.offline)
            .map(|p| p.duration)
            .sum()
    }
    /// Time spent in input-dependent phases.
    pub fn online(&self) -> Duration {
        self.phases
            .iter()
            .filter(|p| !p.offline)
            .map(|p| p.duration)
            .sum()
    }
}

/// Runs one party over `chan` on `items` (distinct items; the CLI deduplicates).
pub fn run(chan: &mut dyn Channel, items: &Items, opts: &RunOptions) -> Result<Report> {
    let info = opts.protocol.info();
    if opts.both && !info.both_allowed {
        return Err(Error::Usage(format!(
            "protocol '{}' cannot give the output to both parties (--both)",
            info.name
        )));
    }
    if items.len() as u64 > MAX_ITEMS {
        return Err(Error::Usage(format!(
            "{} items is more than the supported {MAX_ITEMS}",
            items.len()
        )));
    }
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(opts.threads.max(1))
        .build()
        .map_err(|e| Error::Usage(format!("cannot start {} threads: {e}", opts.threads)))?;
    let mut chan = Confirming::new(chan);
    let result = pool.install(|| run_in_pool(&mut chan, items, opts));
    if let Err(e) = &result {
        if !e.is_link_failure() {
            chan.abort(&e.to_string());
        }
    }
    result
}

fn run_in_pool(chan: &mut Confirming, items: &Items, opts: &RunOptions) -> Result<Report> {
    let mut prg = opts.seed.map_or_else(Prg::from_entropy, Prg::from_seed);
    let start = Instant::now();
    let hello = Hello {
        protocol: opts.protocol.info().name.to_string(),
        role: opts.role,
        both: opts.both,
        set_size: items.len() as u64,
    };
    let max_peer = opts.max_peer_items.min(MAX_ITEMS);
    let session = handshake(chan, &hello, max_peer, &mut prg, |ns, nr| {
        let p = opts.protocol.params(ns, nr)?;
        Ok(WireParams {
            encoding: p.encode(),
            shown: p.table().to_string(),
        })
    })?;
    let handshake_phase = Phase {
        name: "handshake",
        offline: true,
        duration: start.elapsed(),
    };
    let n_peer = session.n_peer();
    let mut ctx = Context::new(chan, session, prg, opts.progress);
    let intersection = match opts.role {
        Role::Sender => opts.protocol.send(&mut ctx, items)?,
        Role::Receiver => Some(opts.protocol.receive(&mut ctx, items)?),
    };
    let mut phases = vec![handshake_phase];
    phases.extend(ctx.finish());
    // Nothing is output before both parties agree on everything that was sent.
    let confirm_start = Instant::now();
    chan.confirm()?;
    phases.push(Phase {
        name: "confirm transcript",
        offline: false,
        duration: confirm_start.elapsed(),
    });
    Ok(Report {
        protocol: opts.protocol.info().name,
        role: opts.role,
        n_self: items.len(),
        n_peer,
        intersection,
        phases,
        traffic: chan.traffic(),
    })
}
