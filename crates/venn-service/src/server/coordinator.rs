//! The coordinator: the service's state over its store, the leases of tasks, a run's
//! start once its last token or scalar is in, its join once its last task is answered
//! (an external worker's answer spot-checked first), the expiry of runs that wait too
//! long, and the service's own pool of workers.

use super::admission::RegistrationRate;
use super::Config;
use crate::error::Result;
use crate::store::{self, Store};
use crate::{join, spot_check};
use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tracing::Instrument;
use venn_cloud::api::{self, RunState};
use venn_cloud::worker;
use venn_cloud::Error;

/// The running service.
pub(super) struct Service {
    pub(super) store: Store,
    pub(super) config: Config,
    /// Registrations tried per peer.
    pub(super) registrations: RegistrationRate,
    /// Leases and a run's start are serialised: one service process hands out each task
    /// once and starts each run once (under PostgreSQL's READ COMMITTED, two owners' last
    /// tokens arriving together would each see the other's missing).
    pub(super) transitions: tokio::sync::Mutex<()>,
    /// Runs being joined now.
    joining: Mutex<HashSet<String>>,
    /// Woken when tasks appear.
    pub(super) work: tokio::sync::Notify,
}

impl Service {
    /// A service over `store`. Runs whose tasks all finished before a restart are joined
    /// now, and answers failed runs left behind (an answer racing its run's failure) are
    /// removed. Clients disabled for a key registered first under another name are logged.
    pub(super) async fn start(store: Store, config: Config) -> Result<Arc<Self>> {
        let service = Arc::new(Service {
            store,
            registrations: RegistrationRate::new(config.registrations_per_minute),
            config,
            transitions: tokio::sync::Mutex::new(()),
            joining: Mutex::new(HashSet::new()),
            work: tokio::sync::Notify::new(),
        });
        for (name, kept_by) in service.store.disabled_clients().await? {
            tracing::warn!(
                "client {name} is disabled: its key was registered first as client \
                 {kept_by}, which keeps it; nothing of {name}'s was moved (docs/cloud.md, \
                 Enrolment and invitations)"
            );
        }
        for run in service.store.runs_in(RunState::Failed).await? {
            service.store.discard(&run).await?;
        }
        service.store.sweep_used_pretokens().await?;
        service.expire_waiting().await?;
        for run in service.store.runs_in(RunState::Computing).await? {
            if service.store.all_done(&run).await? {
                service.clone().join_in_background(run);
            }
        }
        if service.config.threads > 0 {
            tokio::spawn(pool(service.clone()));
        }
        tokio::spawn(expire_in_background(service.clone()));
        Ok(service)
    }
    /// When runs made before now have waited past `--token-wait` for their tokens or
    /// scalars.
    pub(super) fn expired(&self) -> i64 {
        api::now() - self.config.token_wait_seconds as i64
    }

    /// Fails the runs that waited too long for tokens or scalars.
    pub(super) async fn expire_waiting(&self) -> Result<()> {
        self.store.expire_waiting(self.expired()).await
    }

    /// Leases the next task, if any, to external worker `worker` (`None`: the service's
    /// own pool).
    pub(super) async fn lease(&self, worker: Option<&str>) -> Result<Option<store::Leased>> {
        let _one = self.transitions.lock().await;
        self.store.lease(self.config.lease_seconds, worker).await
    }

    /// Takes an answer of the service's own pool (trusted); joins the run if it was the
    /// last.
    async fn answer(self: &Arc<Self>, leased: &store::Leased, answer: Vec<u8>) -> Result<()> {
        check_length(&leased.task, &answer)?;
        self.complete(leased, answer).await
    }

    /// Takes external worker `worker`'s answer once `--spot-checks` of its items agree
    /// with the service's own computation of them. One that differs is refused (403 —
    /// the worker may no longer work here), the worker is quarantined and the task goes
    /// back to the queue at once, with the worker's answers to runs not yet joined.
    pub(super) async fn answer_from(
        self: &Arc<Self>,
        worker: &str,
        leased: &store::Leased,
        answer: Vec<u8>,
    ) -> Result<()> {
        check_length(&leased.task, &answer)?;
        let (task, input, k) = (
            leased.task.clone(),
            leased.input.clone(),
            self.config.spot_checks,
        );
        let (answer, differs) = store::blocking(move || {
            let differs = spot_check::check(&task, &input, &answer, k)?;
            Ok((answer, differs))
        })
        .await?;
        if let Some(item) = differs {
            let path = leased.task.path();
            let reason = format!("item {item} of its answer to task {path} was wrong");
            self.store.quarantine_worker(worker, &reason).await?;
            self.work.notify_waiters();
            tracing::warn!(worker, "worker quarantined: {reason}");
            return Err(Error::Forbidden(format!(
                "the answer to task {path} is refused (item {item} is wrong, by the \
                 service's spot check): worker {worker} is quarantined"
            ))
            .into());
        }
        self.complete(leased, answer).await
    }

    /// Stores a checked answer; joins the run if it was the last.
    async fn complete(self: &Arc<Self>, leased: &store::Leased, answer: Vec<u8>) -> Result<()> {
        let t = &leased.task;
        if self.store.complete(&t.run, t.side, t.chunk, answer).await? {
            self.clone().join_in_background(t.run.clone());
        }
        Ok(())
    }

    /// Joins a run whose tasks are all done (once, however many answers arrive).
    fn join_in_background(self: Arc<Self>, run: String) {
        if !self
            .joining
            .lock()
            .expect("not poisoned")
            .insert(run.clone())
        {
            return;
        }
        let span = tracing::info_span!(parent: None, "run", run = %run);
        let joined = async move {
            match join::join(&self.store, &run).await {
                Ok(()) => tracing::info!("joined"),
                Err(e) => {
                    tracing::error!("failed: {e}");
                    let _ = self.store.fail(&run, &e.to_string()).await;
                }
            }
            self.joining.lock().expect("not poisoned").remove(&run);
        };
        tokio::spawn(joined.instrument(span));
    }

    /// Wakes the workers for a run that `started`, and joins it at once if it has no
    /// tasks (empty sides).
    pub(super) async fn started(self: Arc<Self>, id: &str, started: bool) -> Result<()> {
        if started {
            self.work.notify_waiters();
            if self.store.all_done(id).await? {
                self.join_in_background(id.to_owned());
            }
        }
        Ok(())
    }
}

/// Refuses an answer whose length is not its task's.
fn check_length(task: &api::Task, answer: &[u8]) -> Result<()> {
    let expected = task.items as usize * task.answer_width();
    if answer.len() != expected {
        return Err(Error::BadRequest(format!(
            "an answer of {} bytes to a task of {} items (expected {expected})",
            answer.len(),
            task.items
        ))
        .into());
    }
    Ok(())
}

/// Fails the runs that wait past `--token-wait`, every tenth of it (1 to 60 seconds), so a
/// run is failed at most that long after its wait whether or not anything else happens.
async fn expire_in_background(service: Arc<Service>) {
    let every = Duration::from_secs((service.config.token_wait_seconds / 10).clamp(1, 60));
    loop {
        tokio::time::sleep(every).await;
        if let Err(e) = service.expire_waiting().await {
            tracing::error!("failing runs that waited too long: {e}");
        }
    }
}

/// The service's own workers: lease, compute on `threads` threads, answer.
async fn pool(service: Arc<Service>) {
    let threads = rayon::ThreadPoolBuilder::new()
        .num_threads(service.config.threads)
        .thread_name(|i| format!("venn-cloud-pool-{i}"))
        .build()
        .map(Arc::new);
    let threads = match threads {
        Ok(t) => t,
        Err(e) => {
            tracing::error!("no pool of workers: {e}");
            return;
        }
    };
    loop {
        let leased = match service.lease(None).await {
            Ok(Some(l)) => l,
            Ok(None) => {
                let _ = tokio::time::timeout(Duration::from_secs(1), service.work.notified()).await;
                continue;
            }
            Err(e) => {
                tracing::error!("leasing: {e}");
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
        };
        let t = &leased.task;
        let span = tracing::info_span!("task", run = %t.run, side = t.side, chunk = t.chunk);
        work_on(&service, &threads, &leased).instrument(span).await;
    }
}

/// One task of the service's own pool: its answer computed on `threads` and taken.
async fn work_on(service: &Arc<Service>, threads: &Arc<rayon::ThreadPool>, leased: &store::Leased) {
    tracing::debug!(items = leased.task.items, "leased by the service's pool");
    let path = leased.input.clone();
    let task = leased.task.clone();
    let pool = threads.clone();
    let answer = store::blocking(move || {
        let points = std::fs::read(&path)?;
        Ok(pool.install(|| worker::answer(&task, &points))?)
    })
    .await;
    let done = match answer {
        Ok(a) => service.answer(leased, a).await,
        Err(e) => Err(e),
    };
    match done {
        Ok(()) => tracing::debug!("answered"),
        Err(e) => tracing::error!("failed: {e}"),
    }
}
