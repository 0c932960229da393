//! `venn bench --protocol ub-cache`: unbalanced PSI's OPRF-cache mode as a long-running
//! client meets a server, over loopback TCP, in this process. For each server size 2^k:
//! the server's tag set built (every key evaluated, on all the cores), a client's first
//! sync (the whole set downloaded, checked against its digest); then for each client
//! size m, `--repeat` queries (each a session of its own: connect, describe, one OPRF
//! round per 4,096 keys, close), half of the keys in the set, every answer checked
//! against the known one; and an update of 1,000 inserts and 1,000 deletes published and
//! synced by the client as a delta.
//!
//! The server answers on a pool of all the cores; the client runs on `--threads`
//! threads. Reported per (n, m): the build's time and evaluations a second, the tag set's
//! size, the first sync's time, how long reading a kept set takes (what `venn ub query
//! --state` pays each run), the median query's time and bytes each way, and the update's
//! time an operation and its delta's bytes an operation.

use super::table::{self, TableRow};
use crate::failure::{Failure, Result};
use serde::Serialize;
use std::net::TcpListener;
use std::sync::Arc;
use std::time::{Duration, Instant};
use venn::crypto::oprf::{Mode, ServerKey};
use venn::crypto::Prg;
use venn::net::{tcp_channel, Channel};
use venn::session::run_plan::KeyForm;
use venn::unbalanced::cache::{CacheClient, CacheServer};
use venn::unbalanced::link::{serve_session, Published, Session};

/// What `--protocol ub-cache` (or `ub-fhe`) runs.
pub(crate) struct UbOptions<'a> {
    pub log2ns: &'a [u32],
    pub client_items: &'a [usize],
    pub threads: usize,
    pub repeat: usize,
    pub json: bool,
    /// ℓ: the bytes of each server key's label (`ub-fhe` only), if they carry labels.
    pub label_bytes: Option<u8>,
    /// The bytes of plaintexts the `ub-fhe` databases keep between queries.
    pub plaintext_bytes: u64,
}

/// One row.
#[derive(Serialize, Clone, Debug)]
pub(super) struct UbRow {
    pub log2n: u32,
    pub client_items: usize,
    pub client_threads: usize,
    pub build_s: f64,
    pub evaluations_per_s: f64,
    pub tag_set_bytes: u64,
    pub first_sync_s: f64,
    pub load_kept_s: f64,
    pub query_ms: f64,
    pub query_up_bytes: u64,
    pub query_down_bytes: u64,
    pub update_us_per_op: f64,
    pub delta_bytes_per_op: f64,
    pub verified: bool,
}

impl TableRow for UbRow {
    fn verified(&self) -> bool {
        self.verified
    }

    fn wrong(&self) -> String {
        format!(
            "ub-cache at 2^{} with {} client keys: an answer was not the intersection",
            self.log2n, self.client_items
        )
    }

    fn print(&self) {
        out!(
            "{:>5} {:>6} {:>8.2} {:>9.0} {:>9.2} {:>8.3} {:>8.3} {:>9.2} {:>9.1} {:>9.1} {:>9.1} {:>8.1} {:>4}",
            format!("2^{}", self.log2n),
            self.client_items,
            self.build_s,
            self.evaluations_per_s,
            self.tag_set_bytes as f64 / (1 << 20) as f64,
            self.first_sync_s,
            self.load_kept_s,
            self.query_ms,
            self.query_up_bytes as f64 / 1024.0,
            self.query_down_bytes as f64 / 1024.0,
            self.update_us_per_op,
            self.delta_bytes_per_op,
            if self.verified { "ok" } else { "WRONG" }
        );
    }
}

/// The query cap the benchmark's datasets take.
const MAX_QUERY: u32 = 4096;

/// Operations each way in the update.
pub(super) const UPDATE_OPS: u32 = 1000;

/// The `i`th key of the benchmark's set (those from `1 << 40` on are not in it).
pub(super) fn key(i: u64) -> Vec<u8> {
    format!("{i:032x}").into_bytes()
}

pub(crate) fn bench_ub(o: &UbOptions) -> Result<()> {
    if o.label_bytes.is_some() {
        return Err(Failure::Bench(
            "--label-bytes is ub-fhe's (ub-cache's benchmark is unlabeled)".into(),
        ));
    }
    if o.client_items.contains(&0) {
        return Err(Failure::Bench("--client-items are at least 1".into()));
    }
    if let Some(small) = o.log2ns.iter().find(|&&k| !(11..=30).contains(&k)) {
        return Err(Failure::Bench(format!(
            "--log2n {small}: ub-cache's benchmark takes sets of 2^11 to 2^30 keys (its \
             update deletes 1,000 of them)"
        )));
    }
    let server_pool = pool(venn_app::threads::within_cores(usize::MAX))?;
    let client_pool = pool(o.threads)?;
    if !o.json {
        out!(
            "{:>5} {:>6} {:>8} {:>9} {:>9} {:>8} {:>8} {:>9} {:>9} {:>9} {:>9} {:>8} {:>4}",
            "n",
            "m",
            "build s",
            "evals/s",
            "tags MiB",
            "sync s",
            "load s",
            "query ms",
            "up KiB",
            "down KiB",
            "upd µs/op",
            "Δ B/op",
            ""
        );
    }
    let mut rows = Vec::new();
    for &log2n in o.log2ns {
        let at = measure(o, log2n, &server_pool, &client_pool)?;
        table::keep(at, o.json, &mut rows)?;
    }
    if o.json {
        table::print_json([("ub_cache", serde_json::json!(rows))]);
    }
    Ok(())
}

pub(super) fn pool(threads: usize) -> Result<rayon::ThreadPool> {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads.max(1))
        .build()
        .map_err(|e| Failure::Bench(format!("a thread pool: {e}")))
}

/// The server, listening: each connection a session on `pool`, answering from the
/// state `published` holds when it comes.
pub(super) struct Server {
    addr: std::net::SocketAddr,
    published: Arc<std::sync::RwLock<Arc<Published>>>,
}

impl Server {
    pub(super) fn start(published: Published, pool: Arc<rayon::ThreadPool>) -> Result<Server> {
        let listener = TcpListener::bind("127.0.0.1:0").map_err(venn::Error::from)?;
        let addr = listener.local_addr().map_err(venn::Error::from)?;
        let published = Arc::new(std::sync::RwLock::new(Arc::new(published)));
        let shared = published.clone();
        std::thread::spawn(move || {
            for socket in listener.incoming().flatten() {
                let (pool, state) = (pool.clone(), shared.read().expect("lock").clone());
                std::thread::spawn(move || {
                    let Ok(mut chan) = tcp_channel(socket, Duration::from_secs(600)) else {
                        return;
                    };
                    let mut prg = Prg::from_entropy();
                    pool.install(|| serve_session(&mut chan, &state, &mut |_| Ok(()), &mut prg))
                        .ok();
                });
            }
        });
        Ok(Server { addr, published })
    }

    pub(super) fn connect(&self) -> Result<Box<dyn Channel>> {
        let socket = std::net::TcpStream::connect(self.addr).map_err(venn::Error::from)?;
        Ok(Box::new(tcp_channel(socket, Duration::from_secs(600))?))
    }
}

/// The label of key `i`, of `bytes` bytes: its key's characters backwards, repeated.
pub(super) fn label(i: u64, bytes: u8) -> Vec<u8> {
    let key = key(i);
    key.iter()
        .rev()
        .cycle()
        .take(usize::from(bytes))
        .copied()
        .collect()
}

/// A query of `m` keys against the benchmark's set of 2^k keys `n` after its update:
/// half in the set (keys [`UPDATE_OPS`].. and the inserted ones), half not; the keys,
/// and what a query finds of each: its label (of `label_bytes`; empty unlabeled) where
/// the set holds it.
pub(super) fn probes(
    n: u64,
    m: usize,
    label_bytes: Option<u8>,
) -> (Vec<Vec<u8>>, Vec<Option<Vec<u8>>>) {
    let ids: Vec<u64> = (0..m as u64)
        .map(|i| match i % 2 {
            0 => u64::from(UPDATE_OPS) + (i / 2) % (n - u64::from(UPDATE_OPS)),
            _ => (1 << 40) + i,
        })
        .collect();
    let keys = ids.iter().map(|&i| key(i)).collect();
    let found = (ids.iter())
        .map(|&i| (i < 1 << 40).then(|| label_bytes.map_or(Vec::new(), |b| label(i, b))))
        .collect();
    (keys, found)
}

/// What a query found: each key's label if the dataset holds it.
type Found = venn::Result<Vec<Option<Vec<u8>>>>;

/// `repeat` sessions with `server`, each asking `query`: the median's seconds and bytes
/// sent and received, and whether every answer was `expected` (matches and labels).
pub(super) fn timed_queries(
    server: &Server,
    repeat: usize,
    expected: &[Option<Vec<u8>>],
    query: &mut dyn FnMut(&mut Session<'_>) -> Found,
) -> Result<Timed> {
    let mut runs = Vec::new();
    let mut verified = true;
    for _ in 0..repeat.max(1) {
        let start = Instant::now();
        let mut chan = server.connect()?;
        let mut session = Session::open(&mut *chan)?;
        let found = query(&mut session)?;
        session.close()?;
        let seconds = start.elapsed().as_secs_f64();
        verified &= found == expected;
        let traffic = chan.traffic();
        runs.push((seconds, traffic.sent, traffic.received));
    }
    let first_s = runs[0].0;
    runs.sort_by(|a, b| a.0.total_cmp(&b.0));
    let (median_s, up, down) = runs[runs.len() / 2];
    Ok(Timed {
        median_s,
        first_s,
        up,
        down,
        verified,
    })
}

/// Repeated queries' times and traffic.
pub(super) struct Timed {
    /// The median query's seconds, and the first's.
    pub median_s: f64,
    pub first_s: f64,
    /// The median query's bytes up and down.
    pub up: u64,
    pub down: u64,
    /// Whether every answer was the one expected.
    pub verified: bool,
}

/// The rows of server size 2^`log2n`.
fn measure(
    o: &UbOptions,
    log2n: u32,
    server_pool: &rayon::ThreadPool,
    client_pool: &rayon::ThreadPool,
) -> Result<Vec<UbRow>> {
    let n = 1u64 << log2n;
    let owned: Vec<Vec<u8>> = (0..n).map(key).collect();
    let items: Vec<&[u8]> = owned.iter().map(Vec::as_slice).collect();
    let mut prg = Prg::from_entropy();
    let secret = ServerKey::random(Mode::Voprf, &mut prg);
    let start = Instant::now();
    let mut cache =
        server_pool.install(|| CacheServer::new(secret, 0, &items, 2 * n, MAX_QUERY))?;
    let build_s = start.elapsed().as_secs_f64();
    drop(items);
    drop(owned);
    let form = KeyForm {
        trim: false,
        lowercase: false,
        columns: 1,
        any: false,
    };
    let server_pool = Arc::new(pool(server_pool.current_num_threads())?);
    let server = Server::start(
        Published::new(cache.clone(), form, vec![], None)?,
        server_pool,
    )?;

    // The first sync: the whole set.
    let start = Instant::now();
    let mut chan = server.connect()?;
    let mut session = Session::open(&mut *chan)?;
    let client = client_pool.install(|| session.sync(None, u64::MAX))?;
    session.close()?;
    let first_sync_s = start.elapsed().as_secs_f64();
    let kept = client.tags();
    let start = Instant::now();
    let client = CacheClient::new(client.descriptor().clone(), kept, None)?;
    let load_kept_s = start.elapsed().as_secs_f64();

    // The update, and the client's delta.
    let inserts: Vec<Vec<u8>> = (0..u64::from(UPDATE_OPS)).map(|i| key(n + i)).collect();
    let deletes: Vec<Vec<u8>> = (0..u64::from(UPDATE_OPS)).map(key).collect();
    let (ins, del): (Vec<&[u8]>, Vec<&[u8]>) = (
        inserts.iter().map(Vec::as_slice).collect(),
        deletes.iter().map(Vec::as_slice).collect(),
    );
    let start = Instant::now();
    let delta = cache.update(&ins, &del, None)?.0.to_bytes();
    let update_us_per_op = start.elapsed().as_secs_f64() * 1e6 / f64::from(2 * UPDATE_OPS);
    let delta_bytes_per_op = delta.len() as f64 / f64::from(2 * UPDATE_OPS);
    *server.published.write().expect("lock") =
        Arc::new(Published::new(cache, form, vec![delta], None)?);
    let mut chan = server.connect()?;
    let mut session = Session::open(&mut *chan)?;
    let client = client_pool.install(|| session.sync(Some(client), u64::MAX))?;
    session.close()?;

    let mut rows = Vec::new();
    for &m in o.client_items {
        let (owned, expected) = probes(n, m, None);
        let keys: Vec<&[u8]> = owned.iter().map(Vec::as_slice).collect();
        let timed = timed_queries(&server, o.repeat, &expected, &mut |session| {
            client_pool.install(|| session.query(&client, &keys, &mut prg))
        })?;
        rows.push(UbRow {
            log2n,
            client_items: m,
            client_threads: o.threads,
            build_s,
            evaluations_per_s: n as f64 / build_s,
            tag_set_bytes: kept.len() as u64,
            first_sync_s,
            load_kept_s,
            query_ms: timed.median_s * 1e3,
            query_up_bytes: timed.up,
            query_down_bytes: timed.down,
            update_us_per_op,
            delta_bytes_per_op,
            verified: timed.verified,
        });
    }
    Ok(rows)
}
