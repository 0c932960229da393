//! Running one party end to end. Every run is one session: the handshake, the party's
//! steps, and the transcript confirmation before anything is returned. Three lifecycles:
//! - [`run`]: offline, a barrier, online — one session;
//! - [`precompute`]: offline only, for at most `max_items` items of ours; the state is then
//!   [saved](Precomputed::save) to a single-use file;
//! - [`run_online`]: the online step from a [loaded](load_state) state, in a new session
//!   bound to the one that produced it.

use crate::crypto::{Block, Prg};
use crate::framework::{InBuckets, PadSeeds};
use crate::items::Items;
use crate::net::{Channel, Traffic};
use crate::protocols::{
    Context, DealerLink, Options, Output, Parameters, Phase, Progress, Protocol,
};
use crate::session::{
    agree_secret, handshake, Confirming, Hello, Mode, Resume, Role, Session, Sizes, WireParams,
};
use crate::state::file::{self, Header, StateFile};
use crate::util::memory::gib;
use crate::{Error, Result, MAX_ITEMS};
use std::any::Any;
use std::path::Path;
use std::time::{Duration, Instant};

/// Memory a run needs besides what scales with the sets (code, buffers, thread stacks).
pub const BASE_MEMORY: u64 = 64 << 20;

/// How to run one party.
pub struct RunOptions<'a> {
    /// The protocol (from [`crate::protocols::registry`]).
    pub protocol: &'static dyn Protocol,
    /// Sender or receiver.
    pub role: Role,
    /// Whether the sender learns the intersection too.
    pub both: bool,
    /// The protocol's options (`--bins`, `--sigma`).
    pub options: Options,
    /// The largest set size we accept from the peer (never more than [`MAX_ITEMS`]); where
    /// the peer's keys carry records, its rows (its keys and the repeated rows whose
    /// records it sends as well).
    pub max_peer_items: u64,
    /// The most memory this party may need, in bytes; a peer whose set would need more is
    /// refused in the handshake, before anything is allocated for it.
    pub max_memory: u64,
    /// The memory this party's input holds beside the protocol while the run lasts, in
    /// bytes (a file read whole: its bytes, rows and keys; the items at least): counted
    /// with the protocol's model against `max_memory`, so that a run the two together
    /// would take past it is refused before, not after.
    pub input_memory: u64,
    /// Worker threads for this party.
    pub threads: usize,
    /// A fixed PRG seed (tests only); `None` draws from the OS.
    pub seed: Option<Block>,
    /// Told about phase changes.
    pub progress: Option<&'a dyn Progress>,
    /// How to reach the dealer, for `--offline dealer`.
    pub dealer: Option<&'a DealerLink<'a>>,
    /// `--upload-deadline`: how long an `rr22-m` sender gives the receiver for the whole
    /// of its OKVS; `None`, the default for the sizes
    /// (`rr22::overfitting::upload_deadline`).
    pub upload_deadline: Option<Duration>,
    /// Whether this session is one bucket of a run in buckets (the report then keeps the
    /// items' pad seeds for the later rows sent after the last bucket:
    /// [`crate::later_rows`]).
    pub in_buckets: Option<InBuckets>,
}

/// What one party measured and learned.
#[derive(Clone, Debug)]
pub struct Report {
    /// The protocol's registry name.
    pub protocol: &'static str,
    /// Our role.
    pub role: Role,
    /// Our set size (for a precomputation: the most we may bring).
    pub n_self: u64,
    /// The peer's set size (for a precomputation: the most it may bring).
    pub n_peer: u64,
    /// What we learned.
    pub output: Output,
    /// Timed phases, in order.
    pub phases: Vec<Phase>,
    /// Bytes moved.
    pub traffic: Traffic,
    /// In a bucket of a run in buckets where records went to the receiver, the items' pad
    /// seeds, item by item ([`crate::later_rows`]).
    pub pad_seeds: Option<PadSeeds>,
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

/// Runs one party over `chan` on `items` (distinct items; the CLI deduplicates): offline
/// and online in one session.
pub fn run(chan: &mut dyn Channel, items: &Items, opts: &RunOptions) -> Result<Report> {
    check_input(opts, items)?;
    let party = opts.protocol.party(opts.role);
    let (output, report) = session(chan, items.len() as u64, Mode::Run, opts, |ctx| {
        let state = party.offline(ctx)?;
        barrier(ctx)?;
        party.online(ctx, state, items)
    })?;
    Ok(Report { output, ..report })
}

/// A finished offline phase, to be saved for a later [`run_online`].
pub struct Precomputed {
    header: Header,
    state: Box<dyn Any + Send>,
    protocol: &'static dyn Protocol,
    /// What the offline session measured.
    pub report: Report,
}

/// Runs only the offline phase, for sets of up to `max_items` items of ours (the peer
/// announces its own maximum).
pub fn precompute(
    chan: &mut dyn Channel,
    max_items: u64,
    opts: &RunOptions,
) -> Result<Precomputed> {
    let party = opts.protocol.party(opts.role);
    let (state, report) = session(chan, max_items, Mode::Precompute, opts, |ctx| {
        let sid = ctx.session.id;
        let secret = agree_secret(ctx.peer, &sid, &mut ctx.prg)?;
        let state = party.offline(ctx)?;
        let sizes = ctx.session.sized;
        let params = opts.protocol.params(sizes, opts.options)?.encode();
        Ok((state, sid, secret, sizes, params))
    })?;
    let (state, session, secret, sizes, params) = state;
    let mut report = report;
    for p in &mut report.phases {
        p.offline = true;
    }
    Ok(Precomputed {
        header: Header {
            protocol: opts.protocol.info().name.into(),
            role: opts.role,
            sizes,
            session,
            secret,
            params,
        },
        state,
        protocol: opts.protocol,
        report,
    })
}

impl Precomputed {
    /// Writes the state to a new file at `path` (owner-only, never over an existing file)
    /// and frees it; returns what the offline session measured.
    pub fn save(self, path: &Path) -> Result<Report> {
        let party = self.protocol.party(self.header.role);
        file::write(path, &self.header, |w| party.save(self.state.as_ref(), w))?;
        Ok(self.report)
    }
}

/// A state read back from its file, not yet claimed.
pub struct LoadedState {
    file: StateFile,
    state: Box<dyn Any + Send>,
}

impl LoadedState {
    /// Refuses `n` items if this state was precomputed for fewer.
    pub fn check_items(&self, n: usize) -> Result<()> {
        let s = self.file.header.sizes;
        let most = match self.file.header.role {
            Role::Sender => s.sender,
            Role::Receiver => s.receiver,
        };
        if n as u64 > most {
            return Err(Error::Usage(format!(
                "{n} items, more than the {most} this state was precomputed for (--max-items)"
            )));
        }
        Ok(())
    }
}

/// Reads the state at `path` for the party `opts` describes, checking that it was made
/// for this protocol and role by this release, and that it is intact.
pub fn load_state(path: &Path, opts: &RunOptions) -> Result<LoadedState> {
    let mut file = StateFile::open(path)?;
    let h = &file.header;
    let name = opts.protocol.info().name;
    if h.protocol != name || h.role != opts.role {
        return Err(Error::State(format!(
            "'{}' holds a {} state of protocol '{}', not a {} state of '{name}'",
            path.display(),
            h.role.name(),
            crate::peer_text(&h.protocol),
            opts.role.name()
        )));
    }
    if check_sizes(opts, h.sizes)?.encode() != h.params {
        return Err(Error::State(format!(
            "'{}' was made with other parameters (other options, or another venn release)",
            path.display()
        )));
    }
    let sizes = h.sizes;
    let party = opts.protocol.party(opts.role);
    let state = file.read(|r| party.load(sizes, r))?;
    Ok(LoadedState { file, state })
}

/// Runs the online phase on `items` with a precomputed state, which is used up (its file
/// deleted) once the peer has confirmed the session.
pub fn run_online(
    chan: &mut dyn Channel,
    items: &Items,
    loaded: LoadedState,
    opts: &RunOptions,
) -> Result<Report> {
    let h = &loaded.file.header;
    if h.protocol != opts.protocol.info().name || h.role != opts.role {
        return Err(Error::Usage(
            "the state was loaded for another protocol or role than this run's".into(),
        ));
    }
    loaded.check_items(items.len())?;
    check_input(opts, items)?;
    let resume = Mode::Resume(Resume {
        session: h.session,
        sizes: h.sizes,
        secret: h.secret,
    });
    let party = opts.protocol.party(opts.role);
    let LoadedState { file, state } = loaded;
    let (output, mut report) = session(chan, items.len() as u64, resume, opts, |ctx| {
        ctx.phase("use up the state", false);
        file.claim()?;
        party.online(ctx, state, items)
    })?;
    for p in &mut report.phases {
        p.offline = false;
    }
    Ok(Report { output, ..report })
}

/// The end of the offline phase: each party waits for the other, so the online phase
/// starts together on both sides (and its time is the online work alone).
fn barrier(ctx: &mut Context) -> Result<()> {
    ctx.phase("wait for the peer's offline phase", true);
    ctx.peer.send(&[])?;
    ctx.peer
        .recv_exact(0, "the end of the peer's offline phase")?;
    Ok(())
}

/// Refuses items the protocol cannot run on, or whose records are not the run's, before
/// the peer is contacted.
fn check_input(opts: &RunOptions, items: &Items) -> Result<()> {
    let protocol = opts.protocol;
    protocol.check_values(opts.role, items.value_columns())?;
    opts.options.check_records(opts.role, items)?;
    protocol.check_items(opts.options, items)
}

/// One session: checks, a thread pool, the handshake, `body`, the transcript confirmation.
/// On failure, tells the peer why (unless the link itself failed).
fn session<T>(
    chan: &mut dyn Channel,
    set_size: u64,
    mode: Mode,
    opts: &RunOptions,
    body: impl FnOnce(&mut Context) -> Result<T> + Send,
) -> Result<(T, Report)>
where
    T: Send,
{
    let info = opts.protocol.info();
    opts.options.check(info, opts.protocol.accepts())?;
    if opts.both && !info.both_allowed {
        return Err(Error::Usage(format!(
            "protocol '{}' cannot give the output to both parties (--both)",
            info.name
        )));
    }
    if opts.options.receiver_payload.is_some() && !opts.both {
        return Err(Error::Usage(
            "the receiver's records go to the sender only with --both".into(),
        ));
    }
    if opts.upload_deadline.is_some()
        && !(opts.role == Role::Sender && opts.protocol.accepts().upload_deadline)
    {
        return Err(Error::Usage(format!(
            "--upload-deadline is for a sender of a protocol that holds the receiver's \
             upload to one (rr22-m), not for a {} of '{}'",
            opts.role.name(),
            info.name
        )));
    }
    if set_size > MAX_ITEMS {
        return Err(Error::Usage(format!(
            "{set_size} items is more than the supported {MAX_ITEMS}"
        )));
    }
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(opts.threads.max(1))
        .build()
        .map_err(|e| Error::Usage(format!("cannot start {} threads: {e}", opts.threads)))?;
    let mut chan = Confirming::new(chan);
    let result = pool.install(|| session_in_pool(&mut chan, set_size, mode, opts, body));
    if let Err(e) = &result {
        if !e.is_link_failure() {
            chan.abort(&abort_reason(e));
        }
    }
    result
}

/// What the peer is told when we give up: the error if it is about the joint run; for a
/// local failure only its kind, so no paths or local limits leave this machine.
fn abort_reason(e: &Error) -> String {
    match e {
        Error::Memory(_) => "the run would need more memory than the peer allows".into(),
        Error::File { .. } | Error::State(_) | Error::Usage(_) | Error::Address(_) => {
            "the peer stopped on a local error".into()
        }
        e => e.to_string(),
    }
}

fn session_in_pool<T>(
    chan: &mut Confirming,
    set_size: u64,
    mode: Mode,
    opts: &RunOptions,
    body: impl FnOnce(&mut Context) -> Result<T>,
) -> Result<(T, Report)> {
    let mut prg = opts.seed.map_or_else(Prg::from_entropy, Prg::from_seed);
    let start = Instant::now();
    let hello = Hello {
        protocol: opts.protocol.info().name.to_string(),
        role: opts.role,
        both: opts.both,
        options: opts.options,
        set_size,
        mode,
    };
    let max_peer = opts.max_peer_items.min(MAX_ITEMS);
    let session = handshake(chan, &hello, max_peer, &mut prg, |sizes| {
        let p = check_sizes(opts, sizes)?;
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
    let (n_self, n_peer) = own_and_peer(&session);
    let key = session.key;
    chan.key(&key);
    let mut ctx = Context::new(chan, session, prg, opts.progress)
        .with_dealer(opts.dealer)
        .with_upload_deadline(opts.upload_deadline)
        .with_max_peer_rows(max_peer)
        .with_buckets(opts.in_buckets);
    let value = body(&mut ctx)?;
    let pad_seeds = ctx.take_pad_seeds();
    let mut phases = vec![handshake_phase];
    phases.extend(ctx.finish());
    // Nothing is returned before both parties agree on everything that was sent.
    let confirm_start = Instant::now();
    chan.confirm(&key, opts.role)?;
    phases.push(Phase {
        name: "confirm transcript",
        offline: false,
        duration: confirm_start.elapsed(),
    });
    let report = Report {
        protocol: opts.protocol.info().name,
        role: opts.role,
        n_self,
        n_peer,
        output: Output::Nothing,
        phases,
        traffic: chan.traffic(),
        pad_seeds,
    };
    Ok((value, report))
}

fn own_and_peer(s: &Session) -> (u64, u64) {
    match s.role {
        Role::Sender => (s.n_sender, s.n_receiver),
        Role::Receiver => (s.n_receiver, s.n_sender),
    }
}

/// The memory this party's run of `sizes` needs: the process's base, what its input holds
/// ([`RunOptions::input_memory`]) and its protocol's model
/// ([`crate::protocols::Protocol::memory`]): the figure `--max-memory` is held to, and
/// `venn bench` shows beside the peak it measures.
pub fn memory_needed(opts: &RunOptions, sizes: Sizes) -> u64 {
    (BASE_MEMORY.saturating_add(opts.input_memory)).saturating_add(opts.protocol.memory(
        opts.role,
        sizes,
        opts.options,
    ))
}

/// The parameters of a run of `sizes` by the party `opts` describes, or why it refuses
/// them: more memory than `--max-memory` allows here, or sizes the protocol does not take
/// (kbm23's field, a filter past 2^32 bits, ...). The handshake decides with it on the
/// sizes both parties announced, and `venn plan` before it lists a protocol.
pub fn check_sizes(opts: &RunOptions, sizes: Sizes) -> Result<Box<dyn Parameters>> {
    check_memory(opts, sizes)?;
    opts.protocol.params(sizes, opts.options)
}

/// Refuses sizes whose run would need more than `--max-memory` here (a peer
/// announcing 2^24 items made an rr17-bloom sender try to allocate 61 GiB).
fn check_memory(opts: &RunOptions, sizes: Sizes) -> Result<()> {
    let (own, peer) = match opts.role {
        Role::Sender => (sizes.sender, sizes.receiver),
        Role::Receiver => (sizes.receiver, sizes.sender),
    };
    let need = memory_needed(opts, sizes);
    if need > opts.max_memory {
        let input = match opts.input_memory {
            0 => String::new(),
            held => format!(" ({} of it our input's)", gib(held)),
        };
        return Err(Error::Memory(format!(
            "as the {} {}, with {peer} peer items and {own} of ours, this run would need \
             about {}{input} here, more than the {} allowed (--max-memory)",
            opts.protocol.info().name,
            opts.role.name(),
            gib(need),
            gib(opts.max_memory)
        )));
    }
    Ok(())
}
