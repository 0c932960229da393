//! `venn bench --protocol ub-fhe`: unbalanced PSI's FHE mode as a client meets a server,
//! over loopback TCP, in this process. For each server size 2^k: the dataset's `ub-fhe`
//! databases, one for each set a dataset of that size and a query cap of 4,096 serves
//! (every key's OPRF value, then the bins' polynomials, on all the cores), written as
//! bytes and read back (what a server's restart pays), and an update of 1,000 inserts
//! and 1,000 deletes applied to them as a delta; then for each client size m,
//! `--repeat` queries (each a session of its own: connect, describe, the OPRF round, the
//! encrypted query of the set its keys take, its answer), half of the keys in the set,
//! every answer checked against the known one (with `--label-bytes`, each server key
//! carries a label of that many bytes, and every match's label is checked too).
//!
//! The server answers on a pool of all the cores, its databases keeping up to
//! `--plaintext-cache-mib` of plaintexts between queries (the first query of a set makes
//! them); the client runs on `--threads` threads. Reported per (n, m): the set taken and
//! its bundles, the median query's time and the first's, the plaintexts kept by then (by
//! every set queried so far) and the median query's bytes each way; and per n (repeated
//! in its rows) the databases' build time and bytes, reading them back, and the delta's
//! time an operation (the server's, applying it to every database, the databases in
//! parallel on its pool) and bytes an operation.

use super::table::{self, TableRow};
use super::ub::{key, label, pool, probes, timed_queries, Server, UbOptions, UPDATE_OPS};
use crate::failure::{Failure, Result};
use rayon::prelude::*;
use serde::Serialize;
use std::sync::Arc;
use std::time::Instant;
use venn::crypto::oprf::{Mode, ServerKey};
use venn::crypto::Prg;
use venn::session::run_plan::KeyForm;
use venn::unbalanced::cache::{CacheServer, UpdateLabels};
use venn::unbalanced::fhe::dataset::{entries, FheDataset, FheDelta};
use venn::unbalanced::fhe::params::classes;
use venn::unbalanced::fhe::plaintexts::PlaintextBudget;
use venn::unbalanced::fhe::session::set_named;
use venn::unbalanced::labels::MAX_LABEL;
use venn::unbalanced::link::{fhe_offer_for, FheOffer, Published, PublishedLabels};

/// One row.
#[derive(Serialize, Clone, Debug)]
pub(super) struct FheRow {
    pub log2n: u32,
    pub client_items: usize,
    pub client_threads: usize,
    pub label_bytes: u8,
    pub set: String,
    pub bundles: u64,
    pub build_s: f64,
    pub database_bytes: u64,
    pub load_s: f64,
    pub query_ms: f64,
    pub first_query_ms: f64,
    pub kept_bytes: u64,
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
            "{:>5} {:>6} {:>7} {:>10} {:>7} {:>8.2} {:>9.1} {:>7.2} {:>9.1} {:>9.1} {:>8.0} {:>9.1} {:>9.1} {:>9.1} {:>8.1} {:>4}",
            format!("2^{}", self.log2n),
            self.client_items,
            match self.label_bytes {
                0 => "-".to_owned(),
                bytes => bytes.to_string(),
            },
            self.set,
            self.bundles,
            self.build_s,
            self.database_bytes as f64 / (1 << 20) as f64,
            self.load_s,
            self.query_ms,
            self.first_query_ms,
            self.kept_bytes as f64 / (1 << 20) as f64,
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
    if o.label_bytes
        .is_some_and(|b| b == 0 || usize::from(b) > MAX_LABEL)
    {
        return Err(Failure::Bench(format!(
            "--label-bytes of ub-fhe are 1 to {MAX_LABEL}"
        )));
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
            "{:>5} {:>6} {:>7} {:>10} {:>7} {:>8} {:>9} {:>7} {:>9} {:>9} {:>8} {:>9} {:>9} {:>9} {:>8} {:>4}",
            "n",
            "m",
            "label B",
            "set",
            "bundles",
            "build s",
            "db MiB",
            "load s",
            "query ms",
            "1st ms",
            "kept MiB",
            "up KiB",
            "down KiB",
            "upd µs/op",
            "Δ B/op",
            ""
        );
    }
    let mut rows = Vec::new();
    for &log2n in o.log2ns {
        let built = build(log2n, o, &server_pool)?;
        for &m in o.client_items {
            let row = measure(o, (log2n, &built), m, &client_pool)?;
            table::keep(vec![row], o.json, &mut rows)?;
        }
    }
    if o.json {
        table::print_json([("ub_fhe", serde_json::json!(rows))]);
    }
    Ok(())
}

/// A dataset of 2^`log2n` keys served in `ub-fhe` (every set it serves, one a query cap
/// up to 4,096), and what making it cost.
struct Built {
    server: Server,
    /// What its databases keep between queries.
    budget: Arc<PlaintextBudget>,
    /// Its databases as the server offers them.
    offers: Vec<FheOffer>,
    /// Seconds to build its databases (the keys' OPRF values not counted).
    build_s: f64,
    /// The databases' bytes, all sets.
    database_bytes: u64,
    /// Seconds to read them back from their bytes.
    load_s: f64,
    /// The update's time an operation, applied to every database.
    update_us_per_op: f64,
    /// The update's delta's bytes an operation.
    delta_bytes_per_op: f64,
}

/// The dataset of 2^`log2n` keys, each with a label of `o.label_bytes` if given, its
/// databases keeping `o.plaintext_bytes` of plaintexts.
fn build(log2n: u32, o: &UbOptions, server_pool: &rayon::ThreadPool) -> Result<Built> {
    let (n, label_bytes) = (1u64 << log2n, o.label_bytes);
    let budget = PlaintextBudget::new(o.plaintext_bytes);
    let sets = classes(n, 4096)?;
    let owned: Vec<Vec<u8>> = (0..n).map(key).collect();
    let items: Vec<&[u8]> = owned.iter().map(Vec::as_slice).collect();
    let labels: Vec<Vec<u8>> = match label_bytes {
        Some(bytes) => (0..n).map(|i| label(i, bytes)).collect(),
        None => Vec::new(),
    };
    let label_refs: Vec<&[u8]> = labels.iter().map(Vec::as_slice).collect();
    let labeled = |refs| label_bytes.map(|bytes| (refs, bytes));
    let mut prg = Prg::from_entropy();
    let secret = ServerKey::random(Mode::Voprf, &mut prg);
    let outputs = server_pool.install(|| {
        let mut all = Vec::with_capacity(items.len());
        for slice in items.chunks(1 << 16) {
            all.extend(secret.evaluate_all(slice)?);
        }
        Ok::<_, venn::Error>(all)
    })?;
    let held = entries(&outputs, labeled(&label_refs[..]), &mut prg)?;
    drop(outputs);
    let seed = prg.block();
    let (mut build_s, mut load_s, mut database_bytes) = (0.0, 0.0, 0);
    let mut datasets = Vec::new();
    for set in sets {
        let start = Instant::now();
        let dataset =
            server_pool.install(|| FheDataset::build(set.clone(), seed, &held, label_bytes))?;
        build_s += start.elapsed().as_secs_f64();
        let bytes = dataset.to_bytes();
        drop(dataset);
        let start = Instant::now();
        let dataset = FheDataset::from_bytes(set, seed, label_bytes, 0, &bytes)?;
        datasets.push(dataset.keeping_plaintexts(Some(budget.clone())));
        load_s += start.elapsed().as_secs_f64();
        database_bytes += bytes.len() as u64;
    }
    drop(held);

    // The update, applied by the server to each database.
    let changed: Vec<Vec<u8>> = (0..u64::from(UPDATE_OPS))
        .map(|i| key(n + i))
        .chain((0..u64::from(UPDATE_OPS)).map(key))
        .collect();
    let refs: Vec<&[u8]> = changed.iter().map(Vec::as_slice).collect();
    let inserted_labels: Vec<Vec<u8>> = (0..u64::from(UPDATE_OPS))
        .map(|i| label_bytes.map_or(Vec::new(), |bytes| label(n + i, bytes)))
        .collect();
    let inserted_refs: Vec<&[u8]> = inserted_labels.iter().map(Vec::as_slice).collect();
    let outputs = secret.evaluate_all(&refs)?;
    let (inserted, deleted) = outputs.split_at(UPDATE_OPS as usize);
    let inserts = entries(inserted, labeled(&inserted_refs[..]), &mut prg)?;
    let deletes = entries(deleted, None, &mut prg)?;
    let delta = FheDelta {
        from: 0,
        to: 1,
        removes: deletes.iter().map(|(hash, _)| *hash).collect(),
        relabels: Vec::new(),
        inserts,
    };
    let delta_bytes_per_op = delta.to_bytes().len() as f64 / f64::from(2 * UPDATE_OPS);
    let start = Instant::now();
    let datasets = server_pool.install(|| {
        (datasets.into_par_iter())
            .map(|dataset| Ok(Arc::new(dataset.apply(std::slice::from_ref(&delta))?)))
            .collect::<Result<Vec<_>>>()
    })?;
    let update_us_per_op = start.elapsed().as_secs_f64() * 1e6 / f64::from(2 * UPDATE_OPS);

    // The tags are the OPRF server's: built once more, not served; a labeled dataset's
    // label table tells its label length.
    let (mut cache, table) = server_pool.install(|| match label_bytes {
        Some(bytes) => CacheServer::labeled(secret, 0, &items, &label_refs, bytes, 2 * n, 4096)
            .map(|(cache, table)| (cache, Some(table))),
        None => CacheServer::new(secret, 0, &items, 2 * n, 4096).map(|cache| (cache, None)),
    })?;
    drop(label_refs);
    drop(labels);
    let (ins, del) = refs.split_at(UPDATE_OPS as usize);
    let update_labels = UpdateLabels {
        inserts: &inserted_refs,
        relabels: &[],
    };
    let label_delta = cache
        .update(ins, del, label_bytes.map(|_| update_labels))?
        .1;
    let published_labels = table.map(|table| PublishedLabels {
        version: 0,
        table: table.wire().to_vec(),
        deltas: label_delta.iter().map(|d| d.to_bytes()).collect(),
    });
    drop(items);
    drop(owned);
    let form = KeyForm {
        trim: false,
        lowercase: false,
        columns: 1,
        any: false,
    };
    let published = Published::new(cache, form, vec![], published_labels)?;
    let published = published.with_fhe(datasets, false)?;
    let offers = published.description().fhe;
    let server = Server::start(
        published,
        Arc::new(pool(server_pool.current_num_threads())?),
    )?;
    Ok(Built {
        server,
        budget,
        offers,
        build_s,
        database_bytes,
        load_s,
        update_us_per_op,
        delta_bytes_per_op,
    })
}

/// The row of `built`, a dataset of 2^`log2n` keys, queried by a client of `m` keys
/// (taking the set of the smallest cap its keys fit).
fn measure(
    o: &UbOptions,
    (log2n, built): (u32, &Built),
    m: usize,
    client_pool: &rayon::ThreadPool,
) -> Result<FheRow> {
    let n = 1u64 << log2n;
    let (owned, expected) = probes(n, m, o.label_bytes);
    let keys: Vec<&[u8]> = owned.iter().map(Vec::as_slice).collect();
    let mut prg = Prg::from_entropy();
    let timed = timed_queries(&built.server, o.repeat, &expected, &mut |session| {
        client_pool.install(|| session.query_fhe(&keys, &mut prg))
    })?;
    // The set the client took, as it chose it.
    let offer = &built.offers[fhe_offer_for(&built.offers, m)?.0];
    let (set, bundles) = (offer.set.clone(), offer.bundles);
    let indices = set_named(&set)?.indices;
    Ok(FheRow {
        log2n,
        client_items: m,
        client_threads: o.threads,
        label_bytes: o.label_bytes.unwrap_or(0),
        set,
        bundles: u64::from(bundles) * u64::from(indices),
        build_s: built.build_s,
        database_bytes: built.database_bytes,
        load_s: built.load_s,
        query_ms: timed.median_s * 1e3,
        first_query_ms: timed.first_s * 1e3,
        kept_bytes: built.budget.used(),
        query_up_bytes: timed.up,
        query_down_bytes: timed.down,
        update_us_per_op: built.update_us_per_op,
        delta_bytes_per_op: built.delta_bytes_per_op,
        verified: timed.verified,
    })
}
