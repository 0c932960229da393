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

use super::files::make_files;
use super::ScratchDir;
use crate::failure::{Failure, Result};
use serde::Serialize;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Seconds a worker waits without work before it exits (after the run).
const IDLE_EXIT: u64 = 2;

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

/// CPU seconds (user + system) of the terminated children waited for so far.
fn children_cpu() -> f64 {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage fills the struct it is given.
    let usage = unsafe {
        libc::getrusage(libc::RUSAGE_CHILDREN, usage.as_mut_ptr());
        usage.assume_init()
    };
    let seconds = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    seconds(usage.ru_utime) + seconds(usage.ru_stime)
}

/// This binary with `args`, in `dir`.
fn venn(dir: &Path, args: &[&str]) -> Result<Command> {
    let mut cmd = Command::new(std::env::current_exe()?);
    cmd.current_dir(dir)
        .args(["cloud"])
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    Ok(cmd)
}

/// Waits for `child`; its stdout, or an error with its stderr if it failed.
fn finish(child: Child, who: &str) -> Result<String> {
    let out = child.wait_with_output()?;
    if !out.status.success() {
        return Err(Failure::Bench(format!(
            "{who} failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        )));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Runs one command to its end: its stdout, wall seconds and CPU seconds.
fn run(dir: &Path, args: &[&str], who: &str) -> Result<(String, f64, f64)> {
    let (began, cpu) = (Instant::now(), children_cpu());
    let out = finish(venn(dir, args)?.spawn()?, who)?;
    Ok((out, began.elapsed().as_secs_f64(), children_cpu() - cpu))
}

/// A service for one n, stopped (and waited for) when dropped.
struct Service {
    child: Child,
    url: String,
}

impl Service {
    fn start(dir: &Path) -> Result<Service> {
        let mut child = venn(
            dir,
            &[
                "serve",
                "--listen",
                "127.0.0.1:0",
                "--threads",
                "0",
                "--data",
                "data",
            ],
        )?
        .stderr(Stdio::null())
        .spawn()?;
        let mut line = String::new();
        let mut stdout = BufReader::new(child.stdout.take().expect("piped"));
        stdout.read_line(&mut line)?;
        // The rest of its output is drained, so that the service never blocks on it.
        std::thread::spawn(move || std::io::copy(&mut stdout, &mut std::io::sink()));
        let Some(addr) = line.trim().strip_prefix("listening ") else {
            let _ = child.kill();
            let _ = child.wait();
            return Err(Failure::Bench(format!(
                "venn cloud serve did not start: {line:?}"
            )));
        };
        let service = Service {
            url: format!("http://{addr}"),
            child,
        };
        // One identity for the bench's workers, enrolled beside the running service.
        let enrol = ["enrol-worker", "--data", "data", "--name", "bench"];
        finish(
            venn(dir, &enrol)?.args(["--out", WORKER]).spawn()?,
            "venn cloud enrol-worker",
        )?;
        Ok(service)
    }

    /// Stops the service: its CPU seconds.
    fn stop(mut self) -> Result<f64> {
        let cpu = children_cpu();
        self.child.kill()?;
        self.child.wait()?;
        Ok(children_cpu() - cpu)
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A run between the uploaded datasets (the first client leads, the others connect to
/// it): its id, once every token is handed over.
fn pair(
    dir: &Path,
    url: &str,
    clients: &[&str],
    preprocessed: bool,
    timeout: u64,
) -> Result<String> {
    let timeout = timeout.to_string();
    let args = |who: &str, link: [&str; 2], partners: &str| -> Vec<String> {
        let mut args: Vec<String> = [
            "pair",
            "--server",
            url,
            "--identity",
            &format!("{who}.id"),
            "--key-file",
            &format!("{who}.key"),
            "--timeout",
            &timeout,
        ]
        .map(String::from)
        .to_vec();
        args.extend(link.map(String::from));
        if !partners.is_empty() {
            args.extend(["--partners".into(), partners.into()]);
        }
        if preprocessed {
            args.push("--preprocessed".into());
        }
        args
    };
    let command = |args: Vec<String>| {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        venn(dir, &args)
    };
    let partners = (clients.len() - 1).to_string();
    let mut leader = command(args(clients[0], ["--listen", "127.0.0.1:0"], &partners))?.spawn()?;
    // The leader announces its address on stderr; what else it says is kept for errors.
    let mut err = BufReader::new(leader.stderr.take().expect("piped"));
    let (mut line, mut said) = (String::new(), String::new());
    let addr = loop {
        line.clear();
        if err.read_line(&mut line)? == 0 {
            let _ = leader.kill();
            let _ = leader.wait();
            return Err(Failure::Bench(format!(
                "venn cloud pair did not listen: {said}"
            )));
        }
        if let Some((_, addr)) = line.trim().rsplit_once("listening on ") {
            break addr.to_string();
        }
        said += &line;
    };
    let others = clients[1..]
        .iter()
        .map(|who| Ok(command(args(who, ["--connect", &addr], ""))?.spawn()?))
        .collect::<Result<Vec<Child>>>()?;
    let others: Vec<Result<String>> = others
        .into_iter()
        .zip(&clients[1..])
        .map(|(c, who)| finish(c, &format!("venn cloud pair ({who})")))
        .collect();
    let _ = err.read_to_string(&mut said);
    let out = finish(leader, "venn cloud pair (leader)")
        .map_err(|e| Failure::Bench(format!("{e}{said}")))?;
    for o in others {
        o?;
    }
    Ok(out.trim().to_string())
}

/// The workers' identity file, in the scratch directory.
const WORKER: &str = "bench.worker";

/// Worker processes of `venn cloud worker`, which exit once idle.
struct Workers(Vec<Child>);

impl Workers {
    fn spawn(dir: &Path, url: &str, workers: usize, threads: usize) -> Result<Workers> {
        let (threads, idle) = (threads.to_string(), IDLE_EXIT.to_string());
        let args = [
            "worker",
            "--server",
            url,
            "--worker-identity",
            WORKER,
            "--threads",
            &threads,
            "--idle-exit",
            &idle,
        ];
        // Workers' messages go to files (a pipe nobody reads while they work would fill).
        let children = (0..workers)
            .map(|k| {
                let log = std::fs::File::create(dir.join(format!("worker-{k}.err")))?;
                Ok(venn(dir, &args)?
                    .stdout(Stdio::null())
                    .stderr(log)
                    .spawn()?)
            })
            .collect::<Result<Vec<Child>>>()?;
        Ok(Workers(children))
    }

    /// Waits for every worker to exit: their CPU seconds.
    fn wait(self, dir: &Path) -> Result<f64> {
        let cpu = children_cpu();
        for (k, mut w) in self.0.into_iter().enumerate() {
            let status = w.wait()?;
            if !status.success() {
                let log = std::fs::read_to_string(dir.join(format!("worker-{k}.err")))?;
                return Err(Failure::Bench(format!(
                    "venn cloud worker {k} failed ({status}): {log}"
                )));
            }
        }
        Ok(children_cpu() - cpu)
    }
}

/// A preprocessed run's offline phase with `workers` workers: one pre-token per client,
/// waited for. (Wall seconds until all are ready, the workers' CPU seconds.)
fn precompute(
    dir: &Path,
    url: &str,
    clients: &[&str],
    workers: usize,
    threads: usize,
    timeout: u64,
) -> Result<(f64, f64)> {
    let began = Instant::now();
    let workers = Workers::spawn(dir, url, workers, threads)?;
    let wait = timeout.to_string();
    let made = clients
        .iter()
        .map(|who| {
            let (id, key) = (format!("{who}.id"), format!("{who}.key"));
            let args = [
                "pretoken",
                "--server",
                url,
                "--identity",
                &id,
                "--key-file",
                &key,
                "--wait",
                &wait,
            ];
            Ok(venn(dir, &args)?.spawn()?)
        })
        .collect::<Result<Vec<Child>>>()?;
    let made: Vec<Result<String>> = made
        .into_iter()
        .map(|c| finish(c, "venn cloud pretoken"))
        .collect();
    let wall = began.elapsed().as_secs_f64();
    let cpu = workers.wait(dir)?;
    for m in made {
        m?;
    }
    Ok((wall, cpu))
}

/// One run with `workers` worker processes: (wall seconds, the workers' CPU seconds, rows
/// written, verified).
fn run_with_workers(
    dir: &Path,
    url: &str,
    clients: &[&str],
    preprocessed: bool,
    workers: usize,
    threads: usize,
    timeout: u64,
) -> Result<(f64, f64, usize, bool)> {
    let id = pair(dir, url, clients, preprocessed, timeout)?;
    let began = Instant::now();
    let workers = Workers::spawn(dir, url, workers, threads)?;
    let _ = std::fs::remove_file(dir.join("out.csv"));
    let wait = timeout.to_string();
    let result = venn(
        dir,
        &[
            "result",
            "--server",
            url,
            "--identity",
            "b.id",
            "--key-file",
            "b.key",
            "--input",
            "r.csv",
            "--column",
            "key",
            "--run",
            &id,
            "--output",
            "out.csv",
            "--wait",
            &wait,
        ],
    )?
    .spawn()?;
    let result = finish(result, "venn cloud result");
    let run_s = began.elapsed().as_secs_f64();
    let worker_cpu = workers.wait(dir)?;
    result?;
    let out = std::fs::read(dir.join("out.csv"))?;
    let rows = out
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        .saturating_sub(1);
    let verified = out == std::fs::read(dir.join("expected.csv"))?;
    Ok((run_s, worker_cpu, rows, verified))
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

/// `venn bench --thunder`.
pub(crate) fn bench_thunder(o: &ThunderOptions) -> Result<()> {
    let (parties, timeout, json) = (o.parties, o.timeout, o.json);
    let workers = o.workers;
    if !(2..=3).contains(&parties) {
        return Err(Failure::Bench("--parties is 2 or 3".into()));
    }
    if o.preprocessed && parties != 2 {
        return Err(Failure::Bench("preprocessed runs have two parties".into()));
    }
    if workers.is_empty() || workers.contains(&0) {
        return Err(Failure::Bench(
            "--workers wants counts of at least 1".into(),
        ));
    }
    let threads = venn_app::threads::bounded(o.threads)?;
    let scratch = ScratchDir::new()?;
    let dir = scratch.path();
    let op = if o.preprocessed { "raise" } else { "pairing" };
    if !json {
        out!(
            "{}\nThunder through `venn cloud`, {parties} parties{} (SQLite; service without a pool; {threads} thread(s) per worker)\n\
             {:>5} {:>7} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>10} {:>10} {:>14} {:>11} {:>9} {:>8}",
            super::cpu_line(),
            if o.preprocessed { ", preprocessed runs" } else { "" },
            "log2n", "workers", "upload a", "upload b", "up cpu", "precomp", "pre cpu", "run",
            "wrk cpu", format!("us/{op}"), format!("{op}/s/core"), format!("{op}/s"),
            "svc cpu", "verified"
        );
    }
    let mut rows = Vec::new();
    for &log2n in o.log2ns {
        if !(2..=24).contains(&log2n) {
            return Err(Failure::Bench(format!(
                "--thunder runs 2^2 to 2^24 items, not 2^{log2n}"
            )));
        }
        for entry in std::fs::read_dir(dir)? {
            let path = entry?.path();
            match path.is_dir() {
                true => std::fs::remove_dir_all(&path)?,
                false => std::fs::remove_file(&path)?,
            }
        }
        make_files(dir, log2n)?;
        let service = Service::start(dir)?;
        let url = service.url.clone();
        // The third client of a three-party run uploads the first one's file again (its
        // own key): the expected rows stay the second client's shared ones.
        let clients = [("a", "s.csv"), ("b", "r.csv"), ("c", "s.csv")];
        let clients = &clients[..parties];
        let names: Vec<&str> = clients.iter().map(|c| c.0).collect();
        let mut upload = [0.0; 3];
        let mut upload_cpu = 0.0;
        for (k, &(who, input)) in clients.iter().enumerate() {
            let id = format!("{who}.id");
            run(
                dir,
                &[
                    "register",
                    "--server",
                    &url,
                    "--identity",
                    &id,
                    "--name",
                    who,
                ],
                "venn cloud register",
            )?;
            let key = format!("{who}.key");
            let (_, wall, cpu) = run(
                dir,
                &[
                    "upload",
                    "--server",
                    &url,
                    "--identity",
                    &id,
                    "--dataset",
                    "d",
                    "--input",
                    input,
                    "--column",
                    "key",
                    "--key-file",
                    &key,
                ],
                "venn cloud upload",
            )?;
            upload[k] = wall;
            upload_cpu += cpu;
        }
        let mut at_n = Vec::new();
        for &w in workers {
            let offline = match o.preprocessed {
                true => Some(precompute(dir, &url, &names, w, threads, timeout)?),
                false => None,
            };
            let (run_s, worker_cpu, rows_written, verified) =
                run_with_workers(dir, &url, &names, o.preprocessed, w, threads, timeout)?;
            let ops = match o.preprocessed {
                true => (1u64 << log2n) as f64,
                false => (parties as u64 * (1u64 << log2n)) as f64,
            };
            at_n.push(ThunderRow {
                log2n,
                parties,
                workers: w,
                threads_per_worker: threads,
                upload_a_s: upload[0],
                upload_b_s: upload[1],
                upload_cpu_s: upload_cpu,
                precompute_s: offline.map(|o| o.0),
                precompute_cpu_s: offline.map(|o| o.1),
                run_s,
                worker_cpu_s: worker_cpu,
                item_op: op,
                us_per_op_per_core: worker_cpu / ops * 1e6,
                ops_per_s_per_core: ops / worker_cpu,
                ops_per_s: ops / run_s,
                service_cpu_s: None,
                rows_written,
                verified,
            });
            // Let the idle workers' exit and the service's cleanup settle.
            std::thread::sleep(Duration::from_millis(200));
        }
        let service_cpu = service.stop()?;
        if let Some(last) = at_n.last_mut() {
            last.service_cpu_s = Some(service_cpu);
        }
        for row in at_n {
            if !json {
                let optional = |v: Option<f64>| v.map_or("-".into(), |s| format!("{s:.2}"));
                out!(
                    "{:>5} {:>7} {:>9.2} {:>9.2} {:>9.2} {:>9} {:>9} {:>9.2} {:>10.2} {:>10.1} {:>14.0} {:>11.0} {:>9} {:>8}",
                    row.log2n, row.workers, row.upload_a_s, row.upload_b_s, row.upload_cpu_s,
                    optional(row.precompute_s), optional(row.precompute_cpu_s),
                    row.run_s, row.worker_cpu_s, row.us_per_op_per_core,
                    row.ops_per_s_per_core, row.ops_per_s,
                    optional(row.service_cpu_s),
                    if row.verified { "yes" } else { "NO" }
                );
            }
            if !row.verified {
                return Err(Failure::Bench(format!(
                    "thunder at n = 2^{} with {} workers: the output is not the shared rows \
                     ({} rows)",
                    row.log2n, row.workers, row.rows_written
                )));
            }
            rows.push(row);
        }
    }
    if json {
        let cpu = venn::util::cpu::describe();
        let out = serde_json::json!({ "cpu": cpu, "thunder": rows });
        out!(
            "{}",
            serde_json::to_string_pretty(&out).expect("serialisable")
        );
    }
    Ok(())
}
