//! Workers: stateless processes that lease a task (one chunk of one side of a run),
//! pair its items with the side's token and answer with digests (two parties) or values
//! (three). A task is a pure function of public inputs, so any worker's answer is the
//! same and a task whose worker died is simply done again (spec F).

use crate::api::{self, Task, VALUE_BYTES};
use crate::auth::WorkerSecret;
use crate::crypto::{self, PreparedToken, ITEM_BYTES, TOKEN_BYTES};
use crate::error::{Error, Result};
use crate::http::{Endpoint, Http};
use blstrs::Compress;
use std::time::{Duration, Instant};

/// The answer to a task over its chunk's `points`, computed on the current rayon pool.
pub fn answer(task: &Task, points: &[u8]) -> Result<Vec<u8>> {
    if points.len() != task.items as usize * ITEM_BYTES {
        return Err(Error::BadRequest(format!(
            "{} bytes of points for a task of {} items",
            points.len(),
            task.items
        )));
    }
    let token = api::from_hex::<TOKEN_BYTES>(&task.token, "token")?;
    let token = PreparedToken::new(&crypto::decode_token(&token)?);
    let (items, _) = points.as_chunks::<ITEM_BYTES>();
    if task.parties == 3 {
        let values = crypto::paired(items, &token, |v| {
            let mut out = [0u8; VALUE_BYTES];
            v.write_compressed(&mut out[..]).expect("288 bytes");
            Ok(out)
        })?;
        Ok(values.into_flattened())
    } else {
        let run = api::from_hex::<{ api::ID_BYTES }>(&task.run, "run id")?;
        Ok(crypto::digests(items, &token, &run)?.into_flattened())
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

/// `venn cloud worker`: leases tasks from the service at `server` until stopped; returns
/// the number of tasks done. Failed requests are retried after a pause (the service may
/// be restarting); a task it cannot finish is left to its lease's expiry.
pub fn run(server: &Endpoint, secret: &WorkerSecret, config: &WorkerConfig) -> Result<u64> {
    let http = Http::new(server, Duration::from_secs(300))?;
    let threads = rayon::ThreadPoolBuilder::new()
        .num_threads(config.threads)
        .build()
        .map_err(|e| Error::Internal(format!("threads: {e}")))?;
    let auth = [("authorization", secret.bearer())];
    let mut done = 0u64;
    let mut idle_since = Instant::now();
    loop {
        let task = match http.call("POST", "/v1/tasks/lease", &auth, b"") {
            Ok((204, _)) => None,
            Ok((_, body)) => Some(
                serde_json::from_slice::<Task>(&body)
                    .map_err(|e| Error::Transport(format!("a lease: {e}")))?,
            ),
            Err(e @ Error::Unauthenticated(_)) => return Err(e),
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
        let path = format!("/v1/tasks/{}", task.path());
        let result = http
            .call("GET", &format!("{path}/points"), &auth, b"")
            .and_then(|(_, points)| {
                if points.len() > api::MAX_CHUNK_ITEMS * ITEM_BYTES {
                    return Err(Error::TooLarge("a task's points".into()));
                }
                threads.install(|| answer(&task, &points))
            })
            .and_then(|a| http.call("PUT", &format!("{path}/answer"), &auth, &a));
        match result {
            Ok(_) => done += 1,
            Err(e) => eprintln!("venn cloud worker: task {}: {e}", task.path()),
        }
        idle_since = Instant::now();
    }
}
