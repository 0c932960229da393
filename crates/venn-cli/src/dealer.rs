//! `venn dealer`: KBM23's trusted dealer (§IV-A) as a service. Parties that run kbm23
//! with `--offline dealer --dealer ADDR` each connect here with their session's id, role
//! and set sizes; the two connections of one session are paired and dealt their tuples on
//! a thread of their own, and the dealer goes on serving others. It never sees an input.
//!
//! Every connection is untrusted: its request is bounded and checked (set sizes up to
//! `--max-items`), a connection whose partner does not come within `--timeout` is dropped
//! with a reason, at most [`MAX_WAITING`] parties wait at once, and a pair that does not
//! match (sizes, σ, roles) is refused.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use venn::crypto::Prg;
use venn::net::Channel;
use venn::protocols::kbm23::dealer::{deal, looks_like_request, Request, REQUEST_PREFIX};
use venn::session::Role;
use venn::{Error, Result};
use venn_app::transport::Transport;

/// What `venn dealer` was asked to do.
pub(crate) struct DealerArgs {
    pub listen: String,
    pub transport: Transport,
    /// How long a party may take to send its request, and to wait for its partner.
    pub timeout: Duration,
    /// The largest set size tuples are made for.
    pub max_items: u64,
    /// Stop after this many sessions (benchmarks and tests); `None`: serve until killed.
    pub sessions: Option<u64>,
}

/// The most parties left waiting for their partners at once: a flood of lone requests
/// (from anyone the TLS settings let in) is refused, not held.
const MAX_WAITING: usize = 256;

/// A party waiting for its partner.
struct Waiting {
    request: Request,
    chan: Box<dyn Channel>,
    since: Instant,
}

/// Serves sessions until `--sessions` are done (or forever); `on_bound` is told the
/// address listened on.
pub(crate) fn serve(args: DealerArgs, on_bound: impl FnOnce(SocketAddr)) -> Result<()> {
    let listener = args.transport.bind(&args.listen)?;
    on_bound(listener.local_addr()?);
    let waiting: Arc<Mutex<HashMap<[u8; 32], Waiting>>> = Arc::default();
    let dealt = Arc::new(AtomicU64::new(0));
    let mut workers = Vec::new();
    loop {
        if args
            .sessions
            .is_some_and(|n| dealt.load(Ordering::SeqCst) >= n)
        {
            break;
        }
        // A short wait, to look at the count and the waiting parties again.
        let plain = (REQUEST_PREFIX, looks_like_request as fn(&[u8]) -> bool);
        let chan = match args.transport.accept_within(
            &listener,
            Duration::from_millis(200),
            args.timeout,
            plain,
        ) {
            Ok(chan) => chan,
            Err(Error::Timeout(_)) => {
                expire(&waiting, args.timeout);
                workers.retain(|w: &std::thread::JoinHandle<()>| !w.is_finished());
                continue;
            }
            Err(e) => return Err(e),
        };
        let (waiting, dealt, max_items, timeout) =
            (waiting.clone(), dealt.clone(), args.max_items, args.timeout);
        workers.push(std::thread::spawn(move || {
            if let Some(n) = take(chan, &waiting, max_items, timeout) {
                dealt.fetch_add(n, Ordering::SeqCst);
            }
        }));
    }
    for w in workers {
        let _ = w.join();
    }
    Ok(())
}

/// Drops the parties that waited longer than `timeout` for their partner.
fn expire(waiting: &Mutex<HashMap<[u8; 32], Waiting>>, timeout: Duration) {
    let mut waiting = waiting.lock().unwrap_or_else(|e| e.into_inner());
    waiting.retain(|_, w| {
        let keep = w.since.elapsed() < timeout;
        if !keep {
            w.chan
                .abort("the other party of the session did not reach the dealer in time");
        }
        keep
    });
}

/// Reads a party's request; pairs it with its partner's and deals, or leaves it waiting.
/// Returns 1 when a session was dealt.
fn take(
    mut chan: Box<dyn Channel>,
    waiting: &Mutex<HashMap<[u8; 32], Waiting>>,
    max_items: u64,
    timeout: Duration,
) -> Option<u64> {
    let request = match Request::read(&mut *chan, max_items) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("venn dealer: refused a request: {e}");
            chan.abort(&e.to_string());
            return None;
        }
    };
    let partner = {
        let mut waiting = waiting.lock().unwrap_or_else(|e| e.into_inner());
        match waiting.remove(&request.session) {
            Some(w) if w.since.elapsed() < timeout => w,
            _ if waiting.len() >= MAX_WAITING => {
                drop(waiting);
                eprintln!("venn dealer: refused a request: {MAX_WAITING} parties already wait");
                chan.abort("the dealer has too many parties waiting for their partners");
                return None;
            }
            _ => {
                let since = Instant::now();
                waiting.insert(
                    request.session,
                    Waiting {
                        request,
                        chan,
                        since,
                    },
                );
                return None;
            }
        }
    };
    let id = hex(&request.session[..4]);
    let start = Instant::now();
    let mut other = partner.chan;
    let result = deal(
        [&mut *chan, &mut *other],
        [request, partner.request],
        &mut Prg::from_entropy(),
    );
    match result {
        Ok(sent) => {
            let to = |role: Role| {
                if request.role == role {
                    sent[0]
                } else {
                    sent[1]
                }
            };
            eprintln!(
                "venn dealer: session {id}…: tuples for {} sender and {} receiver items in \
                 {:.3} s; sent {} bytes to the receiver, {} to the sender",
                request.sizes.sender,
                request.sizes.receiver,
                start.elapsed().as_secs_f64(),
                to(Role::Receiver),
                to(Role::Sender),
            );
            Some(1)
        }
        Err(e) => {
            eprintln!("venn dealer: session {id}…: {e}");
            chan.abort(&e.to_string());
            other.abort(&e.to_string());
            None
        }
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
