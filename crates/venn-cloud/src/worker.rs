//! Workers: stateless processes that lease a task (one chunk of one side of a run) and
//! answer it: stored points paired with the side's token, as digests (two parties),
//! values (three) or precomputed values (a pre-token's run); or a pre-token's values
//! raised to a preprocessed run's exponent, as digests. A task is a pure function of
//! public inputs, so any worker's answer is the same and a task whose worker died is
//! simply done again (docs/cloud.md, Workers).

use crate::api::{self, Task, Work, VALUE_BYTES};
use crate::auth::WorkerIdentity;
use crate::crypto::{self, PreparedToken, Secret, ITEM_BYTES, PRECOMPUTED_BYTES, TOKEN_BYTES};
use crate::error::{Error, Result};
use crate::http::{Endpoint, Http};
use blstrs::Compress;
use std::time::{Duration, Instant};

/// The answer to a task over its chunk's `input` (points, or precomputed values),
/// computed on the current rayon pool.
pub fn answer(task: &Task, input: &[u8]) -> Result<Vec<u8>> {
    if input.len() != task.items as usize * task.input_width() {
        return Err(Error::BadRequest(format!(
            "{} bytes of input for a task of {} items",
            input.len(),
            task.items
        )));
    }
    let run = api::from_hex::<{ api::ID_BYTES }>(&task.run, "run id")?;
    match &task.work {
        Work::Pair { token, parties } => {
            let token = api::from_hex::<TOKEN_BYTES>(token, "token")?;
            let token = PreparedToken::new(&crypto::decode_token(&token)?);
            let (items, _) = input.as_chunks::<ITEM_BYTES>();
            Ok(match parties {
                1 => crypto::precomputed(items, &token, &run)?.into_flattened(),
                3 => crypto::paired(items, &token, |v| {
                    let mut out = [0u8; VALUE_BYTES];
                    v.write_compressed(&mut out[..]).expect("288 bytes");
                    Ok(out)
                })?
                .into_flattened(),
                _ => crypto::digests(items, &token, &run)?.into_flattened(),
            })
        }
        Work::Raise { exponent, target } => {
            let exponent = Secret::from_bytes(&api::from_hex::<32>(exponent, "exponent")?)?;
            let target = api::from_hex::<{ api::ID_BYTES }>(target, "pre-token id")?;
            let (values, _) = input.as_chunks::<PRECOMPUTED_BYTES>();
            Ok(crypto::raised_digests(values, &exponent, &target)?.into_flattened())
        }
    }
}

/// How an external worker behaves.
#[derive(Clone, Debug)]
pub struct WorkerConfig {
    /// Threads for pairing.
    pub threads: usize,
    /// Seconds between asking for work while there is none.
    pub poll: Duration,
    /// Stop after this long without work (`None`: run until stopped).
    pub idle_exit: Option<Duration>,
}

/// `venn cloud worker`'s defaults (docs/cloud.md, Workers), declared once: the command
/// line's options default to these.
impl Default for WorkerConfig {
    fn default() -> WorkerConfig {
        WorkerConfig {
            threads: 1,
            poll: Duration::from_millis(500),
            idle_exit: None,
        }
    }
}

/// A worker's link to the service: leases tasks, fetches their input, hands in their
/// answers, authenticated by the worker's enrolled identity. Whatever computes the answers — this
/// module's [`run`], or tasks of a cluster engine fed by a driver — talks through it.
pub struct WorkerLink {
    http: Http,
    auth: [(&'static str, String); 1],
}

impl WorkerLink {
    /// A link to the service at `server`, as `identity`.
    pub fn new(server: &Endpoint, identity: &WorkerIdentity) -> Result<WorkerLink> {
        Ok(WorkerLink {
            http: Http::new(server, Duration::from_secs(300))?,
            auth: [("authorization", identity.bearer())],
        })
    }

    /// Leases the next task, if there is one.
    pub fn lease(&self) -> Result<Option<Task>> {
        match self.http.call("POST", "/v1/tasks/lease", &self.auth, b"")? {
            (204, _) => Ok(None),
            (_, body) => serde_json::from_slice(&body)
                .map(Some)
                .map_err(|e| Error::Transport(format!("a lease: {e}"))),
        }
    }

    /// A leased task's input: its chunk's points (or precomputed values).
    pub fn input(&self, task: &Task) -> Result<Vec<u8>> {
        let path = format!("/v1/tasks/{}/points", task.path());
        let (_, input) = self.http.call("GET", &path, &self.auth, b"")?;
        if input.len() > api::MAX_TASK_BYTES {
            return Err(Error::TooLarge("a task's input".into()));
        }
        Ok(input)
    }

    /// Hands in a leased task's answer.
    pub fn hand_in(&self, task: &Task, answer: &[u8]) -> Result<()> {
        let path = format!("/v1/tasks/{}/answer", task.path());
        self.http.call("PUT", &path, &self.auth, answer)?;
        Ok(())
    }
}

/// `venn cloud worker`: leases tasks from the service at `server` until stopped; returns
/// the number of tasks done. Failed requests are retried after a pause (the service may
/// be restarting); a task it cannot finish is left to its lease's expiry. A lease refused
/// as unauthenticated or forbidden (the worker was quarantined) ends it with that error.
pub fn run(server: &Endpoint, identity: &WorkerIdentity, config: &WorkerConfig) -> Result<u64> {
    let link = WorkerLink::new(server, identity)?;
    let threads = rayon::ThreadPoolBuilder::new()
        .num_threads(config.threads)
        .build()
        .map_err(|e| Error::Internal(format!("threads: {e}")))?;
    let mut done = 0u64;
    let mut idle_since = Instant::now();
    loop {
        let task = match link.lease() {
            Ok(task) => task,
            Err(e @ (Error::Unauthenticated(_) | Error::Forbidden(_))) => return Err(e),
            Err(e) => {
                eprintln!("venn cloud worker: {e}");
                None
            }
        };
        let Some(task) = task else {
            if config.idle_exit.is_some_and(|d| idle_since.elapsed() >= d) {
                return Ok(done);
            }
            std::thread::sleep(config.poll);
            continue;
        };
        let result = link
            .input(&task)
            .and_then(|input| threads.install(|| answer(&task, &input)))
            .and_then(|a| link.hand_in(&task, &a));
        match result {
            Ok(()) => done += 1,
            Err(e) => eprintln!("venn cloud worker: task {}: {e}", task.path()),
        }
        idle_since = Instant::now();
    }
}
