//! `venn bench --protocol ub-fhe`: unbalanced PSI's FHE mode as a client meets a server,
//! over loopback TCP, in this process. For each server size 2^k and each client size m:
//! the dataset's `ub-fhe` database built for the set a dataset of that size and query cap
//! takes (every key's OPRF value, then the bins' polynomials, on all the cores), written
//! as bytes and read back (what a server's restart pays); `--repeat` queries (each a
//! session of its own: connect, describe, the OPRF round, the encrypted query, its
//! answer), half of the keys in the set, every answer checked against the known one; and
//! an update of 1,000 inserts and 1,000 deletes applied to the database as a delta.
//!
//! The server answers on a pool of all the cores; the client runs on `--threads`
//! threads. Reported per (n, m): the set and its bundles, the database's build time and
//! bytes, reading it back, the median query's time and bytes each way, and the delta's
//! time an operation (the server's, applying it) and bytes an operation.

use super::table::{self, TableRow};
use super::ub::{key, pool, probes, timed_queries, Server, UbOptions, UPDATE_OPS};
use crate::failure::{Failure, Result};
use serde::Serialize;
use std::sync::Arc;
use std::time::Instant;
use venn::crypto::oprf::{Mode, ServerKey};
use venn::crypto::Prg;
use venn::session::run_plan::KeyForm;
use venn::unbalanced::cache::CacheServer;
use venn::unbalanced::fhe::dataset::{entries, FheDataset, FheDelta};
use venn::unbalanced::fhe::params::for_sizes;
use venn::unbalanced::link::Published;
use venn::unbalanced::oprf_round::padded_count;

/// One row.
#[derive(Serialize, Clone, Debug)]
pub(super) struct FheRow {
    pub log2n: u32,
    pub client_items: usize,
    pub client_threads: usize,
    pub set: String,
    pub bundles: u64,
    pub build_s: f64,
    pub database_bytes: u64,
    pub load_s: f64,
    pub query_ms: f64,
    pub query_up_bytes: u64,
    pub query_down_bytes: u64,
    pub update_us_per_op: f64,
    pub delta_bytes_per_op: f64,
    pub verified: bool,
}

impl TableRow for FheRow {
    fn verified(&self) -> bool {
        self.verified
    }

    fn wrong(&self) -> String {
        format!(
            "ub-fhe at 2^{} with {} client keys: an answer was not the intersection",
            self.log2n, self.client_items
        )
    }

    fn print(&self) {
        out!(
            "{:>5} {:>6} {:>10} {:>7} {:>8.2} {:>9.1} {:>7.2} {:>9.1} {:>9.1} {:>9.1} {:>9.1} {:>8.1} {:>4}",
            format!("2^{}", self.log2n),
            self.client_items,
            self.set,
            self.bundles,
            self.build_s,
            self.database_bytes as f64 / (1 << 20) as f64,
            self.load_s,
            self.query_ms,
            self.query_up_bytes as f64 / 1024.0,
            self.query_down_bytes as f64 / 1024.0,
            self.update_us_per_op,
            self.delta_bytes_per_op,
            if self.verified { "ok" } else { "WRONG" }
        );
    }
}

pub(crate) fn bench_ub_fhe(o: &UbOptions) -> Result<()> {
    if o.client_items.iter().any(|&m| m == 0 || m > 4096) {
        return Err(Failure::Bench(
            "--client-items of ub-fhe are 1 to 4,096 (a set's query cap)".into(),
        ));
    }
    if let Some(k) = o.log2ns.iter().find(|&&k| !(11..=29).contains(&k)) {
        return Err(Failure::Bench(format!(
            "--log2n {k}: ub-fhe's benchmark takes sets of 2^11 to 2^29 keys (its update \
             deletes 1,000 of them)"
        )));
    }
    let server_pool = pool(venn_app::threads::within_cores(usize::MAX))?;
    let client_pool = pool(o.threads)?;
    if !o.json {
        out!(
            "{:>5} {:>6} {:>10} {:>7} {:>8} {:>9} {:>7} {:>9} {:>9} {:>9} {:>9} {:>8} {:>4}",
            "n",
            "m",
            "set",
            "bundles",
            "build s",
            "db MiB",
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
        for &m in o.client_items {
            let row = measure(o, log2n, m, &server_pool, &client_pool)?;
            table::keep(vec![row], o.json, &mut rows)?;
        }
    }
    if o.json {
        table::print_json([("ub_fhe", serde_json::json!(rows))]);
    }
    Ok(())
}

/// The row of server size 2^`log2n` and client size `m`.
fn measure(
    o: &UbOptions,
    log2n: u32,
    m: usize,
    server_pool: &rayon::ThreadPool,
    client_pool: &rayon::ThreadPool,
) -> Result<FheRow> {
    let n = 1u64 << log2n;
    let set = for_sizes(n, padded_count(m as u32))?;
    let name = set.name.to_owned();
    let owned: Vec<Vec<u8>> = (0..n).map(key).collect();
    let items: Vec<&[u8]> = owned.iter().map(Vec::as_slice).collect();
    let mut prg = Prg::from_entropy();
    let secret = ServerKey::random(Mode::Voprf, &mut prg);
    let outputs = server_pool.install(|| {
        let mut all = Vec::with_capacity(items.len());
        for slice in items.chunks(1 << 16) {
            all.extend(secret.evaluate_all(slice)?);
        }
        Ok::<_, venn::Error>(all)
    })?;
    let held = entries(&outputs, None, &mut prg)?;
    drop(outputs);
    let seed = prg.block();
    let start = Instant::now();
    let dataset = server_pool.install(|| FheDataset::build(set.clone(), seed, &held, None))?;
    let build_s = start.elapsed().as_secs_f64();
    drop(held);
    let bytes = dataset.to_bytes();
    let start = Instant::now();
    let dataset = FheDataset::from_bytes(set.clone(), seed, None, 0, &bytes)?;
    let load_s = start.elapsed().as_secs_f64();
    let database_bytes = bytes.len() as u64;
    drop(bytes);

    // The update, applied by the server to its database.
    let changed: Vec<Vec<u8>> = (0..u64::from(UPDATE_OPS))
        .map(|i| key(n + i))
        .chain((0..u64::from(UPDATE_OPS)).map(key))
        .collect();
    let refs: Vec<&[u8]> = changed.iter().map(Vec::as_slice).collect();
    let changed = entries(&secret.evaluate_all(&refs)?, None, &mut prg)?;
    let (inserts, deletes) = changed.split_at(UPDATE_OPS as usize);
    let delta = FheDelta {
        from: 0,
        to: 1,
        removes: deletes.iter().map(|(hash, _)| *hash).collect(),
        relabels: Vec::new(),
        inserts: inserts.to_vec(),
    };
    let delta_bytes_per_op = delta.to_bytes().len() as f64 / f64::from(2 * UPDATE_OPS);
    let start = Instant::now();
    let dataset = dataset.apply(&[delta])?;
    let update_us_per_op = start.elapsed().as_secs_f64() * 1e6 / f64::from(2 * UPDATE_OPS);
    let bundles = u64::from(dataset.most_bundles()) * u64::from(set.indices);

    // The tags are the OPRF server's: built once more, not served.
    let cache = server_pool.install(|| CacheServer::new(secret, 0, &items, 2 * n, 4096))?;
    let mut cache = cache;
    let (ins, del) = refs.split_at(UPDATE_OPS as usize);
    cache.update(ins, del, None)?;
    drop(items);
    drop(owned);
    let form = KeyForm {
        trim: false,
        lowercase: false,
        columns: 1,
        any: false,
    };
    let published =
        Published::new(cache, form, vec![], None)?.with_fhe(Arc::new(dataset), false)?;
    let server = Server::start(
        published,
        Arc::new(pool(server_pool.current_num_threads())?),
    )?;

    let (owned, expected) = probes(n, m);
    let keys: Vec<&[u8]> = owned.iter().map(Vec::as_slice).collect();
    let (query_s, up, down, verified) =
        timed_queries(&server, o.repeat, &expected, &mut |session| {
            client_pool.install(|| session.query_fhe(&keys, &mut prg))
        })?;
    Ok(FheRow {
        log2n,
        client_items: m,
        client_threads: o.threads,
        set: name,
        bundles,
        build_s,
        database_bytes,
        load_s,
        query_ms: query_s * 1e3,
        query_up_bytes: up,
        query_down_bytes: down,
        update_us_per_op,
        delta_bytes_per_op,
        verified,
    })
}
