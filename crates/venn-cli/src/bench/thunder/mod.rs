//! `venn bench --thunder`: Thunder through the service as its users run it (docs/cloud.md).
//! For each n: the `--files` pair of CSV files (n rows each, half the keys shared), a
//! `venn cloud serve` without a pool of its own (SQLite, in a scratch directory), two
//! clients that register and upload their files (`venn cloud upload`; with `--parties 3`
//! a third uploads the first one's file under its own key), and then for each worker
//! count W: a fresh run (`venn cloud pair` over loopback), W `venn cloud worker` processes
//! of `--threads` threads, and the second client's `venn cloud result`, whose output must
//! be exactly its shared rows in input order, byte for byte.
//!
//! With `--preprocessed` (docs/cloud.md), each run is preceded by its offline phase: W workers
//! and each client's `venn cloud pretoken --wait` (one pre-token each), timed until every
//! pre-token is ready; the run is then `pair --preprocessed`, whose online work is one
//! G_T exponentiation per item of the smaller side.
//!
//! Reported: the first two uploads' wall time and all uploads' CPU time; the run's wall
//! time from the tokens handed over to the rows written (workers start after the tokens,
//! as they would join a queue); the workers' CPU time and from it the item operations
//! (pairings; raises in a preprocessed run) per second per core (a run is n pairings per
//! party, or n raises); the service's CPU time over everything (for three parties, mostly
//! its quadratic join). CPU times are the processes' own (`getrusage` of the waited-for
//! children), so a shared machine's other load shows in the wall times only.

mod clients;
mod service;

use super::files::{make_files, FilesJoin};
use super::table::{self, TableRow};
use super::ScratchDir;
use crate::failure::{Failure, Result};
use clients::{Cloud, Uploads};
use serde::Serialize;
use service::Service;
use std::path::Path;
use std::time::Duration;

/// One row of `--thunder`.
#[derive(Serialize, Clone, Debug)]
pub(super) struct ThunderRow {
    pub log2n: u32,
    pub parties: usize,
    pub workers: usize,
    pub threads_per_worker: usize,
    pub upload_a_s: f64,
    pub upload_b_s: f64,
    pub upload_cpu_s: f64,
    /// A preprocessed run's offline phase: wall time until both pre-tokens were ready,
    /// and its workers' CPU time.
    pub precompute_s: Option<f64>,
    pub precompute_cpu_s: Option<f64>,
    pub run_s: f64,
    pub worker_cpu_s: f64,
    /// What the run's workers do per item: "pairing" (n per party) or "raise" (n in all:
    /// the smaller side of a preprocessed run).
    pub item_op: &'static str,
    /// Worker CPU per item operation, in µs.
    pub us_per_op_per_core: f64,
    pub ops_per_s_per_core: f64,
    /// The run's item operations over its wall time (for three parties the run is mostly
    /// the service's quadratic join instead).
    pub ops_per_s: f64,
    /// The service's CPU over the whole row's uploads and runs (filled in on the last row
    /// of each n).
    pub service_cpu_s: Option<f64>,
    pub rows_written: usize,
    pub verified: bool,
}

/// What `venn bench --thunder` runs.
pub(crate) struct ThunderOptions<'a> {
    pub log2ns: &'a [u32],
    pub parties: usize,
    /// Runs from pre-tokens (two parties).
    pub preprocessed: bool,
    /// Worker processes of each run (a run per count).
    pub workers: &'a [usize],
    /// Threads per worker.
    pub threads: usize,
    pub timeout: u64,
    pub json: bool,
}

/// `venn bench --thunder`. Its stages: check the options, then for each n measure a run
/// per worker count against a fresh service and keep every row (each printed, and refused
/// unless verified), then the JSON of them all.
pub(crate) fn bench_thunder(o: &ThunderOptions) -> Result<()> {
    let threads = check(o)?;
    let scratch = ScratchDir::new()?;
    if !o.json {
        print_header(o, threads);
    }
    let mut rows = Vec::new();
    for &log2n in o.log2ns {
        let at = measure_at(o, scratch.path(), log2n, threads)?;
        table::keep(at, o.json, &mut rows)?;
    }
    if o.json {
        table::print_json([("thunder", serde_json::json!(rows))]);
    }
    Ok(())
}

/// Check, before anything runs: two or three parties (two for a preprocessed run), at
/// least one worker per run, every n one it runs; the threads per worker, bounded to the
/// cores.
fn check(o: &ThunderOptions) -> Result<usize> {
    if !(2..=3).contains(&o.parties) {
        return Err(Failure::Bench("--parties is 2 or 3".into()));
    }
    if o.preprocessed && o.parties != 2 {
        return Err(Failure::Bench("preprocessed runs have two parties".into()));
    }
    if o.workers.is_empty() || o.workers.contains(&0) {
        return Err(Failure::Bench(
            "--workers wants counts of at least 1".into(),
        ));
    }
    table::check_log2ns("--thunder", 2..=24, "items", o.log2ns)?;
    Ok(venn_app::threads::bounded(o.threads)?)
}

/// What each run's workers do per item (a pairing, or a raise from a pre-token).
fn item_op(o: &ThunderOptions) -> &'static str {
    match o.preprocessed {
        true => "raise",
        false => "pairing",
    }
}

/// Prints the table's head: the CPU line, what the runs are, and the columns of
/// [`ThunderRow`]'s lines.
fn print_header(o: &ThunderOptions, threads: usize) {
    let op = item_op(o);
    out!(
        "{}\nThunder through `venn cloud`, {} parties{} (SQLite; service without a pool; {threads} thread(s) per worker)\n\
         {:>5} {:>7} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>10} {:>10} {:>14} {:>11} {:>9} {:>8}",
        table::cpu_line(),
        o.parties,
        if o.preprocessed { ", preprocessed runs" } else { "" },
        "log2n", "workers", "upload a", "upload b", "up cpu", "precomp", "pre cpu", "run",
        "wrk cpu", format!("us/{op}"), format!("{op}/s/core"), format!("{op}/s"),
        "svc cpu", "verified"
    );
}

/// Empties the scratch directory for the next n.
fn clear(dir: &Path) -> Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        match path.is_dir() {
            true => std::fs::remove_dir_all(&path)?,
            false => std::fs::remove_file(&path)?,
        }
    }
    Ok(())
}

/// Measure one n: its files, a fresh service, each client's upload, a run per worker
/// count; the service's CPU time goes on the last row.
fn measure_at(
    o: &ThunderOptions,
    dir: &Path,
    log2n: u32,
    threads: usize,
) -> Result<Vec<ThunderRow>> {
    clear(dir)?;
    make_files(dir, log2n, &[FilesJoin::None])?;
    let service = Service::start(dir)?;
    // The third client of a three-party run uploads the first one's file again (its own
    // key): the expected rows stay the second client's shared ones.
    let clients = [("a", "s.csv"), ("b", "r.csv"), ("c", "s.csv")];
    let cloud = Cloud {
        dir,
        url: &service.url,
        clients: &clients[..o.parties],
        threads,
        timeout: o.timeout,
    };
    let uploads = cloud.upload()?;
    let mut at = Vec::new();
    for &workers in o.workers {
        at.push(measure_run(o, &cloud, log2n, workers, uploads)?);
        // Let the idle workers' exit and the service's cleanup settle.
        std::thread::sleep(Duration::from_millis(200));
    }
    let service_cpu = service.stop()?;
    if let Some(last) = at.last_mut() {
        last.service_cpu_s = Some(service_cpu);
    }
    Ok(at)
}

/// One run with `workers` workers (its offline phase first, if preprocessed), as a row.
fn measure_run(
    o: &ThunderOptions,
    cloud: &Cloud,
    log2n: u32,
    workers: usize,
    uploads: Uploads,
) -> Result<ThunderRow> {
    let offline = match o.preprocessed {
        true => Some(cloud.precompute(workers)?),
        false => None,
    };
    let run = cloud.run_with_workers(o.preprocessed, workers)?;
    let ops = match o.preprocessed {
        true => (1u64 << log2n) as f64,
        false => (o.parties as u64 * (1u64 << log2n)) as f64,
    };
    Ok(ThunderRow {
        log2n,
        parties: o.parties,
        workers,
        threads_per_worker: cloud.threads,
        upload_a_s: uploads.wall[0],
        upload_b_s: uploads.wall[1],
        upload_cpu_s: uploads.cpu,
        precompute_s: offline.map(|o| o.0),
        precompute_cpu_s: offline.map(|o| o.1),
        run_s: run.run_s,
        worker_cpu_s: run.worker_cpu_s,
        item_op: item_op(o),
        us_per_op_per_core: run.worker_cpu_s / ops * 1e6,
        ops_per_s_per_core: ops / run.worker_cpu_s,
        ops_per_s: ops / run.run_s,
        service_cpu_s: None,
        rows_written: run.rows_written,
        verified: run.verified,
    })
}

impl TableRow for ThunderRow {
    fn verified(&self) -> bool {
        self.verified
    }

    fn wrong(&self) -> String {
        format!(
            "thunder at n = 2^{} with {} workers: the output is not the shared rows ({} rows)",
            self.log2n, self.workers, self.rows_written
        )
    }

    fn print(&self) {
        let optional = |v: Option<f64>| v.map_or("-".into(), |s| format!("{s:.2}"));
        out!(
            "{:>5} {:>7} {:>9.2} {:>9.2} {:>9.2} {:>9} {:>9} {:>9.2} {:>10.2} {:>10.1} {:>14.0} {:>11.0} {:>9} {:>8}",
            self.log2n, self.workers, self.upload_a_s, self.upload_b_s, self.upload_cpu_s,
            optional(self.precompute_s), optional(self.precompute_cpu_s),
            self.run_s, self.worker_cpu_s, self.us_per_op_per_core,
            self.ops_per_s_per_core, self.ops_per_s,
            optional(self.service_cpu_s),
            if self.verified { "yes" } else { "NO" }
        );
    }
}
