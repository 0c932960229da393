//! `venn cloud serve`: the HTTP API (docs/cloud.md), its coordinator and its pool of workers.
//!
//! Clients act only on their own datasets; a run's status and results go only to the
//! owners of its datasets, each getting its own side's positions; external workers lease
//! tasks under identities the operator enrolled ([`crate::enrolment`]), only the worker
//! holding a task's lease may fetch its input and answer it, and every answer is
//! spot-checked before it is taken ([`crate::spot_check`]): one that fails is refused
//! (403), its task goes back to the queue at once and its worker is quarantined. Every
//! body is bounded before it is read and must arrive by its request's deadline, every
//! point is checked as it arrives, and connections are admitted fairly (`admission`).

use crate::admission::{self, Admission, Caps, Permit};
use crate::api::{
    self, ChunkReceipt, DatasetState, Grant, NewDataset, NewPretoken, NewRun, PretokenState,
    Register, RunKind, RunState, Scalar, Seal, Token, MAX_CHUNK_ITEMS,
};
use crate::auth::{self, Claim};
use crate::crypto::{self, ITEM_BYTES, TOKEN_BYTES};
use crate::error::{Error, Result};
use crate::store::{self, Store};
use crate::{join, spot_check, worker};
use axum::body::Bytes;
use axum::extract::{FromRequest, Path, Query, Request, State};
use axum::http::request::Parts;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post, put};
use axum::{Json, Router};
use rayon::prelude::*;
use std::collections::{HashMap, HashSet};
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How an error is answered: its HTTP status, and its message as the body.
impl Error {
    /// The HTTP status of the error.
    pub fn status(&self) -> StatusCode {
        match self {
            Error::BadRequest(_) => StatusCode::BAD_REQUEST,
            Error::Unauthenticated(_) => StatusCode::UNAUTHORIZED,
            Error::Forbidden(_) => StatusCode::FORBIDDEN,
            Error::NotFound(_) => StatusCode::NOT_FOUND,
            Error::Conflict(_) => StatusCode::CONFLICT,
            Error::TooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            Error::TooMany(_) => StatusCode::TOO_MANY_REQUESTS,
            Error::Timeout(_) => StatusCode::REQUEST_TIMEOUT,
            Error::Internal(_) | Error::Transport(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// The message without the kind's prefix (what goes into an answer's body).
    fn message(&self) -> &str {
        match self {
            Error::BadRequest(m)
            | Error::Unauthenticated(m)
            | Error::Forbidden(m)
            | Error::NotFound(m)
            | Error::Conflict(m)
            | Error::TooLarge(m)
            | Error::TooMany(m)
            | Error::Timeout(m)
            | Error::Internal(m)
            | Error::Transport(m) => m,
        }
    }
}

impl IntoResponse for Error {
    /// The answer: the error's message, except for a failure of the service, whose cause
    /// (the store's error, a path in the data directory) goes to the log under a request id
    /// that the answer gives instead.
    fn into_response(self) -> Response {
        let message = match &self {
            Error::Internal(cause) | Error::Transport(cause) => {
                let mut id = [0u8; 8];
                crate::api::getrandom(&mut id);
                let id = hex::encode(id);
                eprintln!("venn cloud: request {id} failed: {cause}");
                format!("the service failed (request {id}; its log says why)")
            }
            other => other.message().to_owned(),
        };
        let body = serde_json::json!({ "error": message });
        (self.status(), axum::Json(body)).into_response()
    }
}

/// The largest request body: a full chunk of points.
const MAX_BODY: usize = MAX_CHUNK_ITEMS * ITEM_BYTES;

/// How the service runs.
#[derive(Clone, Debug)]
pub struct Config {
    /// How long a worker holds a task before another may take it.
    pub lease_seconds: u64,
    /// The most items of a dataset.
    pub max_items: u64,
    /// The most datasets a client keeps (open or sealed).
    pub max_datasets: u64,
    /// The most items a client keeps over all its datasets.
    pub max_client_items: u64,
    /// The most pre-tokens of a dataset whose values are on disk at once (592 bytes per
    /// item each, until the run that uses it ends).
    pub max_pretokens: u64,
    /// How long a run waits for its tokens or scalars before it fails (and frees the
    /// pre-tokens given to it).
    pub token_wait_seconds: u64,
    /// Threads of the service's own pool of workers (0: external workers only).
    pub threads: usize,
    /// How long a connection has for its request, TLS handshake, head and body, from the
    /// moment it is accepted (one request per connection).
    pub request_seconds: u64,
    /// The most connections served at once (more are closed as soon as accepted).
    pub max_connections: usize,
    /// The most connections served at once from one peer (an IPv4 address, or an IPv6
    /// /64 network).
    pub max_connections_per_peer: usize,
    /// The most connections served at once from one network (an IPv4 /24, or an IPv6 /48),
    /// below `max_connections`: when every place is taken, the oldest connection still
    /// waiting for its request, of the network holding the most, makes way for a newcomer.
    pub max_connections_per_network: usize,
    /// Who may register: anyone, or only a client with an operator's invite.
    pub registration: Registration,
    /// The most clients registered.
    pub max_clients: u64,
    /// The most datasets kept (open or sealed) by all clients together.
    pub max_total_datasets: u64,
    /// The most items kept by all clients together.
    pub max_total_items: u64,
    /// The most registrations tried per minute from one peer (an IPv4 address, or an IPv6
    /// /64 network).
    pub registrations_per_minute: u32,
    /// The most pairs a three-party run's join may compare (n1·n2: every pair of its first
    /// two sides' values is looked up in a table of the third's).
    pub max_join_work: u64,
    /// Items of each external worker's answer recomputed before it is taken (capped at
    /// the chunk's; 0: external workers are trusted): see [`spot_check`].
    pub spot_checks: usize,
}

impl Config {
    /// The limits on what a client keeps.
    fn quotas(&self) -> store::Quotas {
        store::Quotas {
            max_items: self.max_items,
            max_datasets: self.max_datasets,
            max_client_items: self.max_client_items,
            max_total_datasets: self.max_total_datasets,
            max_total_items: self.max_total_items,
        }
    }
}

/// Who may register with the service.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Registration {
    /// Anyone who reaches the service.
    Open,
    /// Only a client presenting an unused invite from the operator (`venn cloud invite`).
    Invite,
}

/// Registrations tried per peer in the current minute: a peer over the limit is refused
/// until the minute is over.
struct RegistrationRate {
    per_minute: u32,
    tried: Mutex<(tokio::time::Instant, HashMap<IpAddr, u32>)>,
}

impl RegistrationRate {
    fn new(per_minute: u32) -> RegistrationRate {
        RegistrationRate {
            per_minute,
            tried: Mutex::new((tokio::time::Instant::now(), HashMap::new())),
        }
    }

    /// Counts a registration tried from `address`, refusing one over the limit.
    fn admit(&self, address: IpAddr) -> Result<()> {
        let mut tried = self.tried.lock().unwrap_or_else(|e| e.into_inner());
        let (started, counts) = &mut *tried;
        if started.elapsed() >= Duration::from_secs(60) {
            (*started, *counts) = (tokio::time::Instant::now(), HashMap::new());
        }
        let count = counts.entry(admission::peer_of(address)).or_insert(0);
        *count += 1;
        match *count > self.per_minute {
            true => Err(Error::TooMany(format!(
                "at most {} registrations a minute from one address: try again later",
                self.per_minute
            ))),
            false => Ok(()),
        }
    }
}

/// The running service.
pub struct Service {
    store: Store,
    config: Config,
    /// Registrations tried per peer.
    registrations: RegistrationRate,
    /// Leases and a run's start are serialised: one service process hands out each task
    /// once and starts each run once (under PostgreSQL's READ COMMITTED, two owners' last
    /// tokens arriving together would each see the other's missing).
    transitions: tokio::sync::Mutex<()>,
    /// Runs being joined now.
    joining: Mutex<HashSet<String>>,
    /// Woken when tasks appear.
    work: tokio::sync::Notify,
}

impl Service {
    /// A service over `store`. Runs whose tasks all finished before a restart are joined
    /// now, and answers failed runs left behind (an answer racing its run's failure) are
    /// removed. Clients disabled for a key registered first under another name are logged.
    pub async fn start(store: Store, config: Config) -> Result<Arc<Self>> {
        let service = Arc::new(Service {
            store,
            registrations: RegistrationRate::new(config.registrations_per_minute),
            config,
            transitions: tokio::sync::Mutex::new(()),
            joining: Mutex::new(HashSet::new()),
            work: tokio::sync::Notify::new(),
        });
        for (name, kept_by) in service.store.disabled_clients().await? {
            eprintln!(
                "venn cloud: client {name} is disabled: its key was registered first as client \
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

    /// The API's routes (served by [`run`], which gives each request its deadline).
    fn router(self: &Arc<Self>) -> Router {
        Router::new()
            .route("/v1/health", get(|| async { "ok\n" }))
            .route("/v1/clients", post(register))
            .route("/v1/datasets", get(list_datasets).post(create_dataset))
            .route(
                "/v1/datasets/{id}",
                get(show_dataset).delete(delete_dataset),
            )
            .route("/v1/datasets/{id}/chunks/{chunk}", put(put_chunk))
            .route("/v1/datasets/{id}/seal", post(seal))
            .route("/v1/datasets/{id}/grants", post(grant))
            .route(
                "/v1/datasets/{id}/pretokens",
                get(list_pretokens).post(create_pretoken),
            )
            .route(
                "/v1/datasets/{id}/pretokens/{pretoken}",
                delete(withdraw_pretoken),
            )
            .route("/v1/runs", post(create_run))
            .route("/v1/runs/{id}", get(show_run))
            .route("/v1/runs/{id}/tokens", post(give_token))
            .route("/v1/runs/{id}/scalars", post(give_scalar))
            .route("/v1/runs/{id}/result", get(result))
            .route("/v1/tasks/lease", post(lease))
            .route("/v1/tasks/{run}/{side}/{chunk}/points", get(task_points))
            .route("/v1/tasks/{run}/{side}/{chunk}/answer", put(task_answer))
            .with_state(self.clone())
    }

    /// When runs made before now have waited past `--token-wait` for their tokens or
    /// scalars.
    fn expired(&self) -> i64 {
        api::now() - self.config.token_wait_seconds as i64
    }

    /// Fails the runs that waited too long for tokens or scalars.
    async fn expire_waiting(&self) -> Result<()> {
        self.store.expire_waiting(self.expired()).await
    }

    /// Leases the next task, if any, to external worker `worker` (`None`: the service's
    /// own pool).
    async fn lease(&self, worker: Option<&str>) -> Result<Option<store::Leased>> {
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
    async fn answer_from(
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
            eprintln!("venn cloud: worker {worker} quarantined: {reason}");
            return Err(Error::Forbidden(format!(
                "the answer to task {path} is refused (item {item} is wrong, by the \
                 service's spot check): worker {worker} is quarantined"
            )));
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
        tokio::spawn(async move {
            if let Err(e) = join::join(&self.store, &run).await {
                eprintln!("venn cloud: run {run} failed: {e}");
                let _ = self.store.fail(&run, &e.to_string()).await;
            }
            self.joining.lock().expect("not poisoned").remove(&run);
        });
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
        )));
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
            eprintln!("venn cloud: failing runs that waited too long: {e}");
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
            eprintln!("venn cloud: no pool of workers: {e}");
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
                eprintln!("venn cloud: leasing: {e}");
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
        };
        let path = leased.input.clone();
        let task = leased.task.clone();
        let pool = threads.clone();
        let answer = store::blocking(move || {
            let points = std::fs::read(&path)?;
            pool.install(|| worker::answer(&task, &points))
        })
        .await;
        let done = match answer {
            Ok(a) => service.answer(&leased, a).await,
            Err(e) => Err(e),
        };
        if let Err(e) = done {
            eprintln!("venn cloud: task {}: {e}", leased.task.path());
        }
    }
}

// --- authentication -------------------------------------------------------------------

/// A request signed by a registered client, with its body of at most `LIMIT` bytes (a
/// JSON body's, or a chunk's for uploads). The headers are checked (a well-formed claim, a
/// registered client, a time within the window) before the body is read.
pub struct Signed<const LIMIT: usize = { api::MAX_JSON_BYTES }> {
    /// The client's name (registered, or being registered by this request).
    pub client: String,
    /// The body, as sent (the signature covers it).
    pub body: Bytes,
}

impl<const LIMIT: usize> Signed<LIMIT> {
    /// The body as JSON of type `T`.
    fn json<T: serde::de::DeserializeOwned>(&self) -> Result<T> {
        serde_json::from_slice(&self.body).map_err(|e| Error::BadRequest(format!("JSON: {e}")))
    }
}

impl<const LIMIT: usize> FromRequest<Arc<Service>> for Signed<LIMIT> {
    type Rejection = Error;

    async fn from_request(req: Request, service: &Arc<Service>) -> Result<Self> {
        let (parts, body) = req.into_parts();
        let claim = claim(&parts)?;
        let time = claim.check_fresh(api::now())?;
        let registering = parts.uri.path() == "/v1/clients";
        let key = if registering {
            let peer = parts
                .extensions
                .get::<Peer>()
                .ok_or_else(|| Error::Internal("a request without a peer".into()))?;
            service.registrations.admit(peer.0)?;
            None
        } else {
            let key = service.store.public_key(claim.client).await?;
            Some(key.ok_or_else(|| Error::Unauthenticated("an unregistered client".into()))?)
        };
        let body = read_body(&parts, body, LIMIT).await?;
        let key = match key {
            Some(k) => k,
            None => {
                // Registration is signed with the key being registered.
                let r: Register = serde_json::from_slice(&body)
                    .map_err(|e| Error::BadRequest(format!("JSON: {e}")))?;
                if r.name != claim.client {
                    return Err(Error::Unauthenticated("signed under another name".into()));
                }
                auth::PublicKey::parse(&r.public_key)?.as_hex().to_owned()
            }
        };
        let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
        claim.verify(&key, parts.method.as_str(), path, &body)?;
        service
            .store
            .remember_nonce(claim.client, claim.nonce, time)
            .await?;
        Ok(Signed {
            client: claim.client.to_owned(),
            body,
        })
    }
}

/// The address a request came from.
#[derive(Clone, Copy, Debug)]
struct Peer(IpAddr);

/// When a request must have arrived whole (its connection's deadline, set as it was
/// accepted), and its connection's place, which stops waiting once it has.
#[derive(Clone)]
struct Arrival {
    deadline: tokio::time::Instant,
    permit: Arc<Permit>,
}

/// Reads a request's body of at most `limit` bytes by the request's deadline (a body that
/// trickles holds its connection no longer than its head could); once it is in, the
/// connection is being served and keeps its place ([`admission`]).
async fn read_body(parts: &Parts, body: axum::body::Body, limit: usize) -> Result<Bytes> {
    let arrival = parts
        .extensions
        .get::<Arrival>()
        .ok_or_else(|| Error::Internal("a request without a deadline".into()))?;
    match tokio::time::timeout_at(arrival.deadline, axum::body::to_bytes(body, limit)).await {
        Ok(Ok(body)) => {
            arrival.permit.served();
            Ok(body)
        }
        Ok(Err(_)) => Err(Error::TooLarge(format!("a body over {limit} bytes"))),
        Err(_) => Err(Error::Timeout(
            "the request's body did not arrive in time".into(),
        )),
    }
}

/// A request's authentication headers.
fn claim(parts: &Parts) -> Result<Claim<'_>> {
    let header = |name: &str| {
        parts
            .headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .ok_or_else(|| Error::Unauthenticated(format!("no {name} header")))
    };
    let client = header(auth::CLIENT)?;
    auth::check_name(client).map_err(|e| Error::Unauthenticated(e.to_string()))?;
    Ok(Claim {
        client,
        time: header(auth::TIME)?,
        nonce: header(auth::NONCE)?,
        signature: header(auth::SIGNATURE)?,
    })
}

/// A request from an enrolled external worker that is not quarantined, and its body.
pub struct FromWorker {
    /// The worker's enrolled name.
    pub worker: String,
    /// The body, as sent.
    pub body: Bytes,
}

impl FromRequest<Arc<Service>> for FromWorker {
    type Rejection = Error;

    async fn from_request(req: Request, service: &Arc<Service>) -> Result<Self> {
        let (parts, body) = req.into_parts();
        let shown = parts
            .headers
            .get(axum::http::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok());
        let (name, hash) = auth::worker_claim(shown)?;
        let worker = match service.store.worker(name).await? {
            Some((worker, kept)) if kept == hash => worker,
            _ => {
                return Err(Error::Unauthenticated(
                    "not a worker of this service".into(),
                ))
            }
        };
        if let Some(since) = worker.quarantined {
            return Err(Error::Forbidden(format!(
                "worker {name} is quarantined (since {since}: {}); the operator may enrol \
                 it again",
                worker.reason.as_deref().unwrap_or("no reason recorded")
            )));
        }
        Ok(FromWorker {
            worker: worker.name,
            body: read_body(&parts, body, api::MAX_TASK_BYTES).await?,
        })
    }
}

impl FromWorker {
    /// Refuses unless this worker holds `leased`'s lease (it leased the task last).
    fn holds(&self, leased: &store::Leased) -> Result<()> {
        match leased.holder.as_deref() == Some(self.worker.as_str()) {
            true => Ok(()),
            false => Err(Error::Forbidden(format!(
                "task {} is not leased to worker {}",
                leased.task.path(),
                self.worker
            ))),
        }
    }
}

// --- clients and datasets -------------------------------------------------------------

async fn register(
    State(s): State<Arc<Service>>,
    req: Signed<{ api::MAX_REGISTRATION_BYTES }>,
) -> Result<StatusCode> {
    let r: Register = req.json()?;
    auth::check_name(&r.name)?;
    let invite = match (s.config.registration, r.invite.as_deref()) {
        (Registration::Open, _) => None,
        (Registration::Invite, Some(invite)) => Some(check_invite(invite)?),
        (Registration::Invite, None) => {
            return Err(Error::Forbidden(
                "this service registers clients by invitation: ask its operator for an invite"
                    .into(),
            ))
        }
    };
    let key = auth::PublicKey::parse(&r.public_key)?;
    s.store
        .register(&r.name, &key, invite, s.config.max_clients)
        .await?;
    Ok(StatusCode::CREATED)
}

/// Refuses anything but an invite's hex form.
fn check_invite(invite: &str) -> Result<&str> {
    let hex = invite
        .bytes()
        .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    match hex && invite.len() == 2 * api::INVITE_BYTES {
        true => Ok(invite),
        false => Err(Error::BadRequest(format!(
            "an invite is {} bytes in hex",
            api::INVITE_BYTES
        ))),
    }
}

async fn list_datasets(State(s): State<Arc<Service>>, req: Signed) -> Result<Response> {
    Ok(Json(s.store.datasets_of(&req.client).await?).into_response())
}

async fn create_dataset(State(s): State<Arc<Service>>, req: Signed) -> Result<Response> {
    let d: NewDataset = req.json()?;
    auth::check_name(&d.name)?;
    let quotas = s.config.quotas();
    Ok(Json(s.store.create_dataset(&req.client, &d.name, quotas).await?).into_response())
}

async fn show_dataset(
    State(s): State<Arc<Service>>,
    Path(id): Path<String>,
    req: Signed,
) -> Result<Response> {
    Ok(Json(s.store.own_dataset(&req.client, &id).await?).into_response())
}

async fn delete_dataset(
    State(s): State<Arc<Service>>,
    Path(id): Path<String>,
    req: Signed,
) -> Result<Response> {
    s.store.own_dataset(&req.client, &id).await?;
    Ok(Json(s.store.delete_dataset(&id).await?).into_response())
}

async fn grant(
    State(s): State<Arc<Service>>,
    Path(id): Path<String>,
    req: Signed,
) -> Result<StatusCode> {
    let g: Grant = req.json()?;
    auth::check_name(&g.client)?;
    s.store.grant(&req.client, &id, &g.client).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// An open dataset of the caller's.
async fn open_dataset(s: &Service, client: &str, id: &str) -> Result<api::Dataset> {
    let d = s.store.own_dataset(client, id).await?;
    if d.state != DatasetState::Open {
        return Err(Error::Conflict(format!("dataset {id} is {}", d.state)));
    }
    Ok(d)
}

async fn put_chunk(
    State(s): State<Arc<Service>>,
    Path((id, chunk)): Path<(String, u64)>,
    req: Signed<MAX_BODY>,
) -> Result<Json<ChunkReceipt>> {
    open_dataset(&s, &req.client, &id).await?;
    let n = req.body.len() / ITEM_BYTES;
    if !req.body.len().is_multiple_of(ITEM_BYTES) || n == 0 {
        return Err(Error::BadRequest(format!(
            "a chunk of {} bytes: not a positive number of {ITEM_BYTES}-byte points",
            req.body.len()
        )));
    }
    if chunk >= s.config.max_items {
        return Err(Error::TooLarge(format!(
            "a dataset over this service's {} items",
            s.config.max_items
        )));
    }
    let body = req.body.clone();
    store::blocking(move || check_points(&body)).await?;
    let quotas = s.config.quotas();
    let sha256 = s.store.put_chunk(&id, chunk, req.body, quotas).await?;
    Ok(Json(ChunkReceipt {
        items: n as u64,
        sha256,
    }))
}

/// Checks every point of a chunk (on the curve, in the subgroup, not the identity).
fn check_points(body: &[u8]) -> Result<()> {
    let bad = body
        .as_chunks::<ITEM_BYTES>()
        .0
        .par_iter()
        .position_any(|p| crypto::decode_item(p).is_err());
    match bad {
        Some(i) => Err(Error::BadRequest(format!(
            "point {i} of the chunk is not a G1 point of the subgroup (or is the identity)"
        ))),
        None => Ok(()),
    }
}

async fn seal(
    State(s): State<Arc<Service>>,
    Path(id): Path<String>,
    req: Signed,
) -> Result<Response> {
    let claimed: Seal = req.json()?;
    open_dataset(&s, &req.client, &id).await?;
    let chunks = s.store.chunks(&id).await?;
    let items: u64 = chunks.iter().map(|c| c.items).sum();
    if chunks.len() as u64 != claimed.chunks || items != claimed.items {
        return Err(Error::Conflict(format!(
            "the service has {} chunks of {items} items, the client sent {} of {}",
            chunks.len(),
            claimed.chunks,
            claimed.items
        )));
    }
    let checked = chunks.clone();
    store::blocking(move || check_distinct(&checked, items)).await?;
    let quotas = s.config.quotas();
    Ok(Json(s.store.seal(&id, &chunks, quotas).await?).into_response())
}

/// Checks that the chunk files are the acknowledged ones and that no ciphertext repeats
/// (a repeat would show the server equal keys; clients deduplicate).
fn check_distinct(chunks: &[store::Chunk], items: u64) -> Result<()> {
    use sha2::Digest;
    let mut seen = hashbrown::HashSet::with_capacity(items as usize);
    for (k, chunk) in chunks.iter().enumerate() {
        let bytes = match std::fs::read(&chunk.file) {
            // Uploaded again meanwhile (the old file removed).
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(Error::Conflict(
                    "the dataset changed while it was being sealed: seal it again".into(),
                ))
            }
            read => read?,
        };
        if hex::encode(sha2::Sha256::digest(&bytes)) != chunk.sha256 {
            return Err(Error::Conflict(format!(
                "chunk {k} is not as uploaded: upload it again"
            )));
        }
        for p in bytes.chunks_exact(ITEM_BYTES) {
            // The x coordinate's low 128 bits: distinct points collide with probability
            // 2^-128 per pair.
            let key = u128::from_le_bytes(p[32..48].try_into().expect("16 bytes"));
            if !seen.insert(key) {
                return Err(Error::Conflict(
                    "the dataset holds a ciphertext twice: deduplicate the keys".into(),
                ));
            }
        }
    }
    Ok(())
}

// --- runs -----------------------------------------------------------------------------

async fn create_run(State(s): State<Arc<Service>>, req: Signed) -> Result<Response> {
    let r: NewRun = req.json()?;
    if !(2..=3).contains(&r.datasets.len()) {
        return Err(Error::BadRequest("a run has two or three datasets".into()));
    }
    if r.preprocessed && r.datasets.len() != 2 {
        return Err(Error::BadRequest(
            "a preprocessed run has two datasets".into(),
        ));
    }
    let (mut owners, mut items) = (Vec::new(), Vec::new());
    for (i, id) in r.datasets.iter().enumerate() {
        if r.datasets[..i].contains(id) {
            return Err(Error::BadRequest(format!("dataset {id} is named twice")));
        }
        // Another's dataset is seen (and its state, owner and size told) only once its
        // owner granted it to the caller: otherwise answered as a missing one.
        let d = s.store.visible_dataset(&req.client, id).await?;
        if d.state != DatasetState::Sealed {
            return Err(Error::Conflict(format!("dataset {id} is {}", d.state)));
        }
        owners.push(d.owner);
        items.push(d.items);
    }
    if !owners.contains(&req.client) {
        return Err(Error::Forbidden(
            "a run must include a dataset of yours".into(),
        ));
    }
    // A sealed dataset's items never change: the figure holds when the run is created.
    check_join_work(&items, s.config.max_join_work)?;
    let run = s
        .store
        .create_run(&req.client, &r.datasets, r.preprocessed)
        .await?;
    Ok(Json(run).into_response())
}

/// Refuses, before any work, a three-party run of datasets of `items` items whose join
/// would compare more than `max` pairs: n1·n2, its first two sides' sizes (two-party runs
/// join in time linear in their sizes).
fn check_join_work(items: &[u64], max: u64) -> Result<()> {
    let [n1, n2, _] = items else {
        return Ok(());
    };
    let work = u128::from(*n1) * u128::from(*n2);
    match work > u128::from(max) {
        true => Err(Error::TooLarge(format!(
            "this join would compare n1·n2 = {n1}·{n2} = {work} pairs, more than the \
             {max} this service allows (--max-join-work); a run whose first two datasets \
             are the smaller ones compares fewer"
        ))),
        false => Ok(()),
    }
}

/// A run that the caller may see: one of its datasets is the caller's.
async fn visible_run(s: &Service, client: &str, id: &str) -> Result<api::Run> {
    let run = s.store.run(id).await?;
    if !run.sides.iter().any(|side| side.owner == client) {
        // Not "forbidden": whether a run exists is none of the caller's business.
        return Err(Error::NotFound(format!("no run {id}")));
    }
    Ok(run)
}

async fn show_run(
    State(s): State<Arc<Service>>,
    Path(id): Path<String>,
    req: Signed,
) -> Result<Response> {
    Ok(Json(visible_run(&s, &req.client, &id).await?).into_response())
}

async fn give_token(
    State(s): State<Arc<Service>>,
    Path(id): Path<String>,
    req: Signed,
) -> Result<Response> {
    let t: Token = req.json()?;
    let side = own_side(&s, &req.client, &id, &t.dataset, RunKind::Pair).await?;
    let bytes = api::from_hex::<TOKEN_BYTES>(&t.token, "token")?;
    crypto::decode_token(&bytes)?;
    let started = {
        let _one = s.transitions.lock().await;
        s.store
            .give_token(&id, side, &hex::encode(bytes), s.expired())
            .await?
    };
    s.clone().started(&id, started).await?;
    Ok(Json(s.store.run(&id).await?).into_response())
}

/// The side of run `id` that is the caller's `dataset`, in a run of `kind` (pairing runs
/// take tokens, preprocessed ones pre-tokens and scalars).
async fn own_side(
    s: &Service,
    client: &str,
    id: &str,
    dataset: &str,
    kind: RunKind,
) -> Result<u64> {
    let run = visible_run(s, client, id).await?;
    let side = run
        .sides
        .iter()
        .position(|side| side.dataset == dataset)
        .ok_or_else(|| Error::BadRequest(format!("dataset {dataset} is not in run {id}")))?;
    if run.sides[side].owner != client {
        return Err(Error::Forbidden(format!(
            "dataset {dataset} is not yours: only its owner speaks for it in a run"
        )));
    }
    if run.kind != kind {
        return Err(Error::Conflict(format!(
            "run {id} takes {}",
            match run.kind {
                RunKind::Preprocessed => "pre-tokens and scalars",
                _ => "tokens",
            }
        )));
    }
    Ok(side as u64)
}

impl Service {
    /// Wakes the workers for a run that `started`, and joins it at once if it has no
    /// tasks (empty sides).
    async fn started(self: Arc<Self>, id: &str, started: bool) -> Result<()> {
        if started {
            self.work.notify_waiters();
            if self.store.all_done(id).await? {
                self.join_in_background(id.to_owned());
            }
        }
        Ok(())
    }
}

/// The online step (docs/cloud.md, Pre-tokens): an owner's pre-token and scalar `δ = K / R`.
async fn give_scalar(
    State(s): State<Arc<Service>>,
    Path(id): Path<String>,
    req: Signed,
) -> Result<Response> {
    let g: Scalar = req.json()?;
    let side = own_side(&s, &req.client, &id, &g.dataset, RunKind::Preprocessed).await?;
    let delta = crypto::Secret::from_bytes(&api::from_hex::<32>(&g.delta, "scalar")?)?;
    let started = {
        let _one = s.transitions.lock().await;
        s.store
            .give_scalar(
                &id,
                side,
                &g.pretoken,
                &hex::encode(delta.to_bytes()),
                s.expired(),
            )
            .await?
    };
    s.clone().started(&id, started).await?;
    Ok(Json(s.store.run(&id).await?).into_response())
}

/// Withdraws an unused pre-token of the caller's (its values are removed): e.g. one its
/// client gave up on after recording it as used.
async fn withdraw_pretoken(
    State(s): State<Arc<Service>>,
    Path((id, pretoken)): Path<(String, String)>,
    req: Signed,
) -> Result<StatusCode> {
    s.store.own_dataset(&req.client, &id).await?;
    let _one = s.transitions.lock().await;
    let (dataset, state) = s.store.pretoken(&pretoken).await?;
    if dataset != id {
        return Err(Error::NotFound(format!(
            "no pre-token {pretoken} of dataset {id}"
        )));
    }
    match state {
        PretokenState::Computing | PretokenState::Ready => {
            s.store.fail(&pretoken, "withdrawn by its owner").await?;
            Ok(StatusCode::NO_CONTENT)
        }
        PretokenState::Failed => Ok(StatusCode::NO_CONTENT),
        PretokenState::Used => Err(Error::Conflict(format!(
            "pre-token {pretoken} was used by a run"
        ))),
    }
}

async fn list_pretokens(
    State(s): State<Arc<Service>>,
    Path(id): Path<String>,
    req: Signed,
) -> Result<Response> {
    s.store.own_dataset(&req.client, &id).await?;
    Ok(Json(s.store.pretokens(&id).await?).into_response())
}

/// The offline step (docs/cloud.md, Pre-tokens): a pre-token for a sealed dataset of the
/// caller's, whose values the service's workers precompute.
async fn create_pretoken(
    State(s): State<Arc<Service>>,
    Path(id): Path<String>,
    req: Signed,
) -> Result<Response> {
    let p: NewPretoken = req.json()?;
    s.store.own_dataset(&req.client, &id).await?;
    let label = api::from_hex::<32>(&p.label, "label")?;
    let token = api::from_hex::<TOKEN_BYTES>(&p.token, "token")?;
    crypto::decode_token(&token)?;
    s.expire_waiting().await?;
    let pretoken = {
        let _one = s.transitions.lock().await;
        let (token, label) = (hex::encode(token), hex::encode(label));
        s.store
            .create_pretoken(&req.client, &id, &token, &label, s.config.max_pretokens)
            .await?
    };
    s.clone().started(&pretoken.id, true).await?;
    Ok(Json(pretoken).into_response())
}

/// `?dataset=ID`: which of the caller's sides (needed only when it owns several).
#[derive(serde::Deserialize)]
struct ResultQuery {
    dataset: Option<String>,
}

async fn result(
    State(s): State<Arc<Service>>,
    Path(id): Path<String>,
    Query(q): Query<ResultQuery>,
    req: Signed,
) -> Result<Response> {
    let run = visible_run(&s, &req.client, &id).await?;
    if run.kind == RunKind::Precompute {
        return Err(Error::NotFound(format!(
            "{id} is a pre-token: its run precomputes values and has no result"
        )));
    }
    let mine: Vec<usize> = (0..run.sides.len())
        .filter(|&i| run.sides[i].owner == req.client)
        .filter(|&i| {
            q.dataset
                .as_ref()
                .is_none_or(|d| *d == run.sides[i].dataset)
        })
        .collect();
    let side = match mine[..] {
        [side] => side,
        [] => {
            return Err(Error::BadRequest(
                "no dataset of yours by that id in the run".into(),
            ))
        }
        _ => {
            return Err(Error::BadRequest(
                "you own several sides: name one with ?dataset=".into(),
            ))
        }
    };
    if run.state != RunState::Done {
        return Err(Error::Conflict(format!("run {id} is {}", run.state)));
    }
    let bytes = tokio::fs::read(s.store.result_path(&id, side as u64)).await?;
    Ok(bytes.into_response())
}

// --- workers --------------------------------------------------------------------------

async fn lease(State(s): State<Arc<Service>>, w: FromWorker) -> Result<Response> {
    match s.lease(Some(&w.worker)).await? {
        Some(l) => Ok(Json(l.task).into_response()),
        None => Ok(StatusCode::NO_CONTENT.into_response()),
    }
}

async fn task_points(
    State(s): State<Arc<Service>>,
    Path((run, side, chunk)): Path<(String, u64, u64)>,
    w: FromWorker,
) -> Result<Response> {
    let (leased, _) = s.store.task(&run, side, chunk).await?;
    w.holds(&leased)?;
    let bytes = tokio::fs::read(&leased.input).await?;
    Ok(bytes.into_response())
}

async fn task_answer(
    State(s): State<Arc<Service>>,
    Path((run, side, chunk)): Path<(String, u64, u64)>,
    w: FromWorker,
) -> Result<StatusCode> {
    let (leased, done) = s.store.task(&run, side, chunk).await?;
    w.holds(&leased)?;
    // A task done already was done by this worker: its answer came twice.
    if !done {
        s.answer_from(&w.worker, &leased, w.body.to_vec()).await?;
    }
    Ok(StatusCode::NO_CONTENT)
}

/// Where the service keeps things and how it runs.
#[derive(Clone, Debug)]
pub struct Setup {
    /// The address to listen on.
    pub listen: String,
    /// The metadata store (`sqlite://FILE` or `postgres://…`).
    pub database: String,
    /// The data directory (chunk files, answers, results).
    pub dir: std::path::PathBuf,
    /// TLS for the API (`None`: plain HTTP).
    pub tls: Option<Arc<rustls::ServerConfig>>,
    /// How the service runs (leases, limits).
    pub config: Config,
}

/// How long requests under way may take to finish once the service is stopped.
const DRAIN: Duration = Duration::from_secs(30);

/// Runs the service until interrupted (Ctrl-C or SIGTERM); `on_bound` is told the bound
/// address once the API is up.
pub fn serve(setup: &Setup, on_bound: impl FnOnce(std::net::SocketAddr)) -> Result<()> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?
        .block_on(run(setup, on_bound, stopped()))
}

/// Runs the service on the current tokio runtime until `stop` resolves.
///
/// A connection serves one request, which must arrive whole (TLS handshake, head and
/// body) within `request_seconds` of the connection's acceptance; connections past
/// `max_connections`, in all or from one peer, are closed as soon as accepted.
pub async fn run(
    setup: &Setup,
    on_bound: impl FnOnce(std::net::SocketAddr),
    stop: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<()> {
    let store = Store::open(&setup.database, &setup.dir).await?;
    let service = Service::start(store, setup.config.clone()).await?;
    let listener = tokio::net::TcpListener::bind(&setup.listen)
        .await
        .map_err(|e| Error::BadRequest(format!("cannot listen on {}: {e}", setup.listen)))?;
    on_bound(listener.local_addr()?);
    let router = service.router();
    let acceptor = setup.tls.clone().map(tokio_rustls::TlsAcceptor::from);
    let admission = Admission::new(Caps {
        total: setup.config.max_connections,
        per_peer: setup.config.max_connections_per_peer,
        per_network: setup.config.max_connections_per_network,
    });
    let request_time = Duration::from_secs(setup.config.request_seconds);
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    tokio::pin!(stop);
    loop {
        let (tcp, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                // Out of descriptors and the like: pause rather than spin.
                Err(_) => {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
            _ = &mut stop => break,
        };
        // Over a cap, the connection is dropped (closed) here, before any work for it.
        let Some((permit, evicted)) = admission.admit(peer.ip()) else {
            continue;
        };
        let arrival = Arrival {
            deadline: tokio::time::Instant::now() + request_time,
            permit: Arc::new(permit),
        };
        let _ = tcp.set_nodelay(true);
        let (router, watcher, acceptor) = (router.clone(), graceful.watcher(), acceptor.clone());
        tokio::spawn(async move {
            let serve = async {
                match acceptor {
                    Some(acceptor) => {
                        let tls = tokio::time::timeout_at(arrival.deadline, acceptor.accept(tcp));
                        if let Ok(Ok(tls)) = tls.await {
                            connection(tls, router, watcher, peer.ip(), arrival).await;
                        }
                    }
                    None => connection(tcp, router, watcher, peer.ip(), arrival).await,
                }
            };
            // Closed (dropped) to make way for another while still waiting for its request.
            tokio::select! {
                _ = serve => {}
                Ok(()) = evicted => {}
            }
        });
    }
    let _ = tokio::time::timeout(DRAIN, graceful.shutdown()).await;
    Ok(())
}

/// Serves one HTTP/1.1 request from `peer` on a connection, whose head must arrive by its
/// `arrival`'s deadline (and its body too: [`read_body`] reads it by that deadline).
async fn connection<Io>(
    io: Io,
    router: Router,
    watcher: hyper_util::server::graceful::Watcher,
    peer: IpAddr,
    arrival: Arrival,
) where
    Io: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let router = hyper_util::service::TowerToHyperService::new(router);
    let header_time = arrival
        .deadline
        .saturating_duration_since(tokio::time::Instant::now());
    let service =
        hyper::service::service_fn(move |mut req: hyper::Request<hyper::body::Incoming>| {
            req.extensions_mut().insert(arrival.clone());
            req.extensions_mut().insert(Peer(peer));
            hyper::service::Service::call(&router, req)
        });
    let conn = hyper::server::conn::http1::Builder::new()
        .timer(hyper_util::rt::TokioTimer::new())
        .keep_alive(false)
        .header_read_timeout(header_time)
        .serve_connection(hyper_util::rt::TokioIo::new(io), service);
    let _ = watcher.watch(conn).await;
}

/// Resolves on Ctrl-C or SIGTERM.
async fn stopped() {
    let interrupt = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        _ = interrupt => {},
        _ = terminate => {},
    }
}
