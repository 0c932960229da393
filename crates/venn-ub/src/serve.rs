//! `venn ub serve`: answers clients from a dataset's published state, each connection a
//! session on a thread of its own ([`venn::unbalanced::link::serve_session`]).
//!
//! Every client is untrusted. A connection is taken only if it opens as a client does
//! (a TLS handshake with a trusted certificate, or the plain hello on loopback), screened
//! on a thread of its own so that one slow to speak holds up nobody; at most
//! `max_sessions` are screened or served at once (the next is closed and logged); each message has
//! `timeout` and a whole session `session_limit`; each client — its certificate's
//! fingerprint under TLS, its address otherwise — has a bucket of OPRF evaluations
//! (`burst`, refilled at `per_day`), taken before anything is evaluated, since the OPRF is
//! what stops a client testing guesses offline.
//!
//! The server checks the manifest every second and follows a new one: sessions that start
//! after it answer from it, those under way finish on theirs. A new key's epoch leaves the
//! old key answering requests of its epoch for `grace` (in sessions under way and in new
//! ones, through later updates of the new epoch); after that a request under it is refused
//! as `EpochChanged`, in every session.

use crate::publish::{FheLoaded, Manifest};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock, Weak};
use std::time::{Duration, Instant};
use venn::crypto::Prg;
use venn::unbalanced::fhe::dataset::FheDataset;
use venn::unbalanced::fhe::plaintexts::PlaintextBudget;
use venn::unbalanced::link::{looks_like_hello, serve_session, Published, HELLO_PREFIX};
use venn::unbalanced::oprf_round::Refusal;
use venn::unbalanced::rate::RateLimiter;
use venn::{Error, Result};
use venn_app::transport::Transport;

/// What `venn ub serve` was asked to do.
pub struct ServeArgs {
    /// The dataset's directory.
    pub dir: PathBuf,
    /// Where to listen.
    pub listen: String,
    /// How links are secured.
    pub transport: Transport,
    /// How long a client may take for each message.
    pub timeout: Duration,
    /// How long a session may last.
    pub session_limit: Duration,
    /// The most sessions at once.
    pub max_sessions: usize,
    /// The most evaluations a client gets at once.
    pub burst: u64,
    /// The evaluations a client's bucket gains a day.
    pub per_day: u64,
    /// How long an old key answers after a rotation.
    pub grace: Duration,
    /// Stop after this many sessions (tests); `None`: serve until stopped.
    pub sessions: Option<u64>,
    /// The bytes of plaintexts the `ub-fhe` databases keep between queries.
    pub plaintext_bytes: u64,
}

/// How often the manifest is looked at.
const RELOAD_EVERY: Duration = Duration::from_secs(1);

/// What the sessions share.
struct Shared {
    published: RwLock<Arc<Published>>,
    limits: Mutex<RateLimiter<String>>,
    active: AtomicUsize,
    finished: AtomicU64,
    /// The key's epoch now published.
    epoch: AtomicU32,
    /// The epoch before it, and until when its key still answers.
    retired: Mutex<Option<(u32, Instant)>>,
    /// What the `ub-fhe` databases keep between queries.
    plaintexts: Arc<PlaintextBudget>,
}

impl Shared {
    /// Refuses a request in a session answering from epoch `mine` once that key is
    /// neither the current one nor within its grace: sessions under way when the key
    /// changed stop answering under the old key when new ones do.
    fn check_epoch(&self, mine: u32) -> std::result::Result<(), Refusal> {
        let current = self.epoch.load(Ordering::SeqCst);
        let retired = *self.retired.lock().unwrap_or_else(|e| e.into_inner());
        let within = retired.is_some_and(|(e, until)| e == mine && Instant::now() < until);
        match mine == current || within {
            true => Ok(()),
            false => Err(Refusal::EpochChanged { current }),
        }
    }
}

/// The manifest a server answers from, and its `ub-fhe` databases as loaded (what the
/// next publish's deltas apply to).
pub(crate) struct Current {
    pub(crate) manifest: Manifest,
    fhe: Option<FheLoaded>,
}

/// What `read` names, loaded; read again where a publish replaced it meanwhile (a
/// publish removes the files of the manifest before once the new one is in place).
/// Its `ub-fhe` databases keep plaintexts within `budget`.
pub(crate) fn load_current(
    dir: &Path,
    mut read: Manifest,
    budget: &Arc<PlaintextBudget>,
) -> Result<(Current, Published)> {
    for _ in 0..10 {
        match read.load_following(dir, None, None, Some(budget)) {
            Ok((published, fhe)) => {
                let current = Current {
                    manifest: read,
                    fhe,
                };
                return Ok((current, published));
            }
            Err(e) => match Manifest::read(dir)? {
                now if now == read => return Err(e),
                now => read = now,
            },
        }
    }
    Err(Error::State(
        "the dataset was published anew ten times while the server started".into(),
    ))
}

/// Serves until `args.sessions` are done (or forever); `on_bound` is told the address.
pub fn serve(args: ServeArgs, on_bound: impl FnOnce(SocketAddr)) -> Result<()> {
    let read = Manifest::read(&args.dir)?;
    if args.burst < u64::from(read.max_query) {
        return Err(Error::Usage(format!(
            "a client's burst of {} evaluations is less than one query of the dataset's \
             {} items: raise --rate-burst",
            args.burst, read.max_query
        )));
    }
    let start = Instant::now();
    let budget = PlaintextBudget::new(args.plaintext_bytes);
    let (mut current, published) = load_current(&args.dir, read, &budget)?;
    let listener = args.transport.bind(&args.listen)?;
    let bound = listener.local_addr()?;
    let manifest = &current.manifest;
    tracing::info!(
        address = %bound,
        epoch = manifest.epoch,
        version = manifest.version,
        items = manifest.items,
        seconds = start.elapsed().as_secs_f64(),
        "serving"
    );
    on_bound(bound);
    if let Some(fhe) = &current.fhe {
        warm(fhe, &budget);
    }
    let shared = Arc::new(Shared {
        published: RwLock::new(Arc::new(published)),
        limits: Mutex::new(RateLimiter::new(args.burst, args.per_day)),
        active: AtomicUsize::new(0),
        finished: AtomicU64::new(0),
        epoch: AtomicU32::new(manifest.epoch),
        retired: Mutex::new(None),
        plaintexts: budget,
    });
    listener.set_nonblocking(true)?;
    let (mut workers, mut checked) = (Vec::new(), Instant::now());
    let opening = (HELLO_PREFIX, looks_like_hello as fn(&[u8]) -> bool);
    loop {
        let done = shared.finished.load(Ordering::SeqCst);
        if args.sessions.is_some_and(|n| done >= n) {
            break;
        }
        if checked.elapsed() >= RELOAD_EVERY {
            checked = Instant::now();
            follow(&args, &shared, &mut current);
            workers.retain(|w: &std::thread::JoinHandle<()>| !w.is_finished());
        }
        let (socket, from) = match listener.accept() {
            Ok(accepted) => accepted,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(5));
                continue;
            }
            // Out of descriptors, a connection reset before it was taken: look again.
            Err(e) => {
                tracing::warn!("accepting a connection: {e}");
                std::thread::sleep(Duration::from_millis(50));
                continue;
            }
        };
        // Connections being screened count with the sessions: a flood of silent ones
        // fills the slots for their PROBE at most, and never holds up the loop.
        if shared.active.fetch_add(1, Ordering::SeqCst) >= args.max_sessions {
            shared.active.fetch_sub(1, Ordering::SeqCst);
            tracing::warn!(from = %from.ip(), "refused a connection: {} under way", args.max_sessions);
            continue;
        }
        let (shared, transport) = (shared.clone(), args.transport.clone());
        let (timeout, limit) = (args.timeout, args.session_limit);
        workers.push(std::thread::spawn(move || {
            match transport.screen(socket, timeout, opening) {
                Ok(mut chan) => {
                    let peer = chan.peer().unwrap_or_else(|| "an unknown peer".into());
                    session(&mut *chan, &shared, &peer, limit);
                    shared.finished.fetch_add(1, Ordering::SeqCst);
                }
                Err(why) => tracing::warn!(from = %from.ip(), "rejected a connection: {why}"),
            }
            shared.active.fetch_sub(1, Ordering::SeqCst);
        }));
    }
    for w in workers {
        let _ = w.join();
    }
    Ok(())
}

/// Serves one session and logs how it went.
fn session(chan: &mut dyn venn::net::Channel, shared: &Shared, peer: &str, limit: Duration) {
    let start = Instant::now();
    chan.set_deadline(Some(start + limit));
    let published = shared
        .published
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .clone();
    let mine = published.description().cache.epoch;
    let mut admit = |count: u32| {
        shared.check_epoch(mine)?;
        let mut limits = shared.limits.lock().unwrap_or_else(|e| e.into_inner());
        limits.take(&peer.to_owned(), u64::from(count), Instant::now())
    };
    let mut prg = Prg::from_entropy();
    let seconds = || start.elapsed().as_secs_f64();
    match serve_session(chan, &published, &mut admit, &mut prg) {
        Ok(served) => tracing::info!(
            %peer,
            syncs = served.syncs,
            answered = served.answered,
            evaluated = served.evaluated,
            fhe = served.fhe,
            refused = served.refused,
            seconds = seconds(),
            "session"
        ),
        Err(e) => tracing::warn!(%peer, seconds = seconds(), "session ended: {e}"),
    }
}

/// Makes the plaintexts `loaded`'s databases keep within `budget` on a thread of its own,
/// the smallest query cap first, so that no client's query pays for them (a first fill
/// costs several queries' time); it stops once a database is no longer published (a
/// later publish's are warmed anew, what they share with these kept).
fn warm(loaded: &FheLoaded, budget: &Arc<PlaintextBudget>) {
    if budget.limit() == 0 {
        return;
    }
    let datasets: Vec<Weak<FheDataset>> = loaded.datasets().iter().map(Arc::downgrade).collect();
    let budget = budget.clone();
    std::thread::spawn(move || {
        let start = Instant::now();
        for dataset in &datasets {
            let Some(dataset) = dataset.upgrade() else {
                return;
            };
            // Only this thread holds it: no longer published.
            let stop = || Arc::strong_count(&dataset) == 1;
            if let Err(e) = dataset.warm(&stop) {
                tracing::warn!(
                    "the ub-fhe plaintexts of {} were not made: {e}",
                    dataset.set().name
                );
                return;
            }
            if stop() {
                return;
            }
            tracing::info!(
                set = dataset.set().name,
                kept_mib = budget.used() >> 20,
                seconds = start.elapsed().as_secs_f64(),
                "plaintexts made"
            );
        }
    });
}

/// Follows a new manifest, if one was published: sessions from now on answer from it
/// (its `ub-fhe` databases from the current ones by the deltas since, where they
/// follow). A manifest that does not load (its files replaced meanwhile by a later
/// publish) is tried again at the next look.
fn follow(args: &ServeArgs, shared: &Shared, current: &mut Current) {
    let start = Instant::now();
    let manifest = &current.manifest;
    {
        let mut limits = shared.limits.lock().unwrap_or_else(|e| e.into_inner());
        limits.prune(Instant::now());
    }
    let next = match Manifest::read(&args.dir) {
        Ok(next) if next != *manifest => next,
        Ok(_) => return,
        Err(e) => {
            tracing::warn!("the manifest does not read: {e}");
            return;
        }
    };
    let mut retired = *shared.retired.lock().unwrap_or_else(|e| e.into_inner());
    if next.epoch > manifest.epoch {
        retired = Some((manifest.epoch, Instant::now() + args.grace));
    }
    let loaded = next.load_following(
        &args.dir,
        retired,
        current.fhe.as_ref(),
        Some(&shared.plaintexts),
    );
    match loaded {
        Ok((published, fhe)) => {
            *shared.retired.lock().unwrap_or_else(|e| e.into_inner()) = retired;
            shared.epoch.store(next.epoch, Ordering::SeqCst);
            *shared.published.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(published);
            tracing::info!(
                epoch = next.epoch,
                version = next.version,
                items = next.items,
                seconds = start.elapsed().as_secs_f64(),
                "published"
            );
            if let Some(fhe) = &fhe {
                warm(fhe, &shared.plaintexts);
            }
            *current = Current {
                manifest: next,
                fhe,
            };
        }
        Err(e) => tracing::warn!("a new manifest does not load yet: {e}"),
    }
}
