//! The processes of `venn bench --thunder`: a `venn cloud serve` without a pool of its
//! own, `venn cloud worker`s that exit once idle, and the CPU time they took.

use super::super::process::{finish, this_binary};
use crate::failure::{Failure, Result};
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Instant;

/// Seconds a worker waits without work before it exits (after the run).
const IDLE_EXIT: u64 = 2;

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

/// This binary's `venn cloud` with `args`, in `dir`.
pub(super) fn venn(dir: &Path, args: &[&str]) -> Result<Command> {
    let mut cmd = this_binary()?;
    cmd.current_dir(dir)
        .args(["cloud"])
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    Ok(cmd)
}

/// Runs one command to its end: its stdout, wall seconds and CPU seconds.
pub(super) fn run(dir: &Path, args: &[&str], who: &str) -> Result<(String, f64, f64)> {
    let (began, cpu) = (Instant::now(), children_cpu());
    let out = finish(venn(dir, args)?.spawn()?, who)?;
    Ok((out, began.elapsed().as_secs_f64(), children_cpu() - cpu))
}

/// A service for one n, stopped (and waited for) when dropped.
pub(super) struct Service {
    child: Child,
    pub url: String,
}

impl Service {
    /// Starts `venn cloud serve` on SQLite in `dir`, and enrols the bench's workers.
    pub(super) fn start(dir: &Path) -> Result<Service> {
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
    pub(super) fn stop(mut self) -> Result<f64> {
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

/// The workers' identity file, in the scratch directory.
const WORKER: &str = "bench.worker";

/// Worker processes of `venn cloud worker`, which exit once idle.
pub(super) struct Workers(Vec<Child>);

impl Workers {
    /// Starts `workers` of `threads` threads each, serving the service at `url`.
    pub(super) fn spawn(dir: &Path, url: &str, workers: usize, threads: usize) -> Result<Workers> {
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
    pub(super) fn wait(self, dir: &Path) -> Result<f64> {
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
