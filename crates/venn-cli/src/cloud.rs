//! `venn cloud`: Thunder's service (see `venn-service`), its workers and its clients (see
//! `venn-cloud`).

use clap::{Args, Subcommand};
use std::cell::RefCell;
use std::path::PathBuf;
use std::sync::LazyLock;
use std::time::{Duration, Instant};
use venn::net::tls::{api_server_config, CertifiedKey};
use venn::protocols::Progress;
use venn::{Error, Result};
use venn_app::destination::check_output_path;
use venn_app::input::read_input;
use venn_app::input::source::Matching;
use venn_app::party::PeerAddr;
use venn_app::progress::Spinner;
use venn_app::run_options::cli::{Flags, ForKeys, ForTls};
use venn_app::run_options::MAX_SECONDS;
use venn_app::sink::write_rows;
use venn_app::thunder::{self, Partners};
use venn_cloud::api::{Run, RunState, DEFAULT_CHUNK_ITEMS, MAX_CHUNK_ITEMS};
use venn_cloud::auth::{Identity, WorkerIdentity};
use venn_cloud::client::{defaults, Client, DatasetKey};
use venn_cloud::http::Endpoint;
use venn_cloud::worker::{self, WorkerConfig};
use venn_service::enrolment::Enrolment;
use venn_service::server::{self, Config, Registration, Setup};

#[derive(Subcommand)]
pub(crate) enum CloudCommand {
    /// Run the service: the HTTP API, its store and its own pool of workers.
    Serve(ServeCli),
    /// Pair stored items with tokens for a service (any number, on any machine), as a
    /// worker enrolled with `venn cloud enrol-worker`.
    Worker(WorkerCli),
    /// Enrol an external worker under its own name: writes its identity (a new owner-only
    /// file for `venn cloud worker --worker-identity`); the store keeps only its secret's
    /// hash. A worker whose answer fails a spot check is quarantined alone; --replace
    /// gives a name a new secret and lifts its quarantine.
    EnrolWorker(EnrolWorkerCli),
    /// List the enrolled workers (JSON), quarantined ones with when and why.
    Workers(StoreCli),
    /// Make single-use invites to register with the service of a store (printed one a
    /// line; the store keeps only their hashes).
    Invite(InviteCli),
    /// Make an identity (a signing key, owner-only file) and register it with a service.
    Register(RegisterCli),
    /// Encrypt a file's keys under a new dataset key (kept in --key-file) and upload them.
    Upload(UploadCli),
    /// Agree on a run with a partner (or two) over a Venn link and give the service this
    /// dataset's token; prints the run's id.
    Pair(PairCli),
    /// Hand the service one-time pre-tokens of a dataset, whose values it precomputes
    /// while idle: a `pair --preprocessed` run then costs it one exponentiation per item
    /// of the smaller dataset instead of a pairing per item of both. Prints their ids;
    /// with --count 0 lists the dataset's pre-tokens.
    Pretoken(PretokenCli),
    /// Show a run.
    Status(StatusCli),
    /// Write the rows of your file that matched in a run.
    Result(ResultCli),
    /// List your datasets.
    Datasets(ClientCli),
    /// Delete a dataset of yours (its stored points are removed).
    Delete(DeleteCli),
}

/// The service's data directory and store.
#[derive(Args)]
pub(crate) struct StoreCli {
    /// The data directory (stored points, answers, results; and the SQLite store).
    #[arg(long, value_name = "DIR")]
    data: PathBuf,
    /// The metadata store: sqlite://FILE or postgres://USER@HOST:PORT/DB (default: SQLite
    /// in the data directory).
    #[arg(long, value_name = "URL")]
    database: Option<String>,
}

impl StoreCli {
    /// The store's URL.
    fn database(&self) -> String {
        self.database
            .clone()
            .unwrap_or_else(|| format!("sqlite://{}", self.data.join("venn-cloud.db").display()))
    }

    /// The store, opened for the operator's commands.
    fn enrolment(&self) -> Result<Enrolment> {
        Ok(Enrolment::open(&self.database(), &self.data)?)
    }
}

/// The service's defaults, venn-service's (what `serve`'s options default to).
static DEFAULTS: LazyLock<Config> = LazyLock::new(Config::default);

/// An external worker's defaults, venn-cloud's (what `worker`'s options default to).
static WORKER_DEFAULTS: LazyLock<WorkerConfig> = LazyLock::new(WorkerConfig::default);

/// A cap on connections: `min` to 2^20.
fn connections(min: u64) -> clap::builder::RangedU64ValueParser<usize> {
    clap::builder::RangedU64ValueParser::new().range(min..=1 << 20)
}

#[derive(Args)]
pub(crate) struct ServeCli {
    /// Where to listen (HTTP), e.g. 127.0.0.1:7780.
    #[arg(long, value_name = "ADDR")]
    listen: String,
    #[command(flatten)]
    store: StoreCli,
    /// Threads of the service's own workers (0: only external `venn cloud worker`s; at
    /// most the cores it may use).
    #[arg(long, default_value_t = DEFAULTS.threads)]
    threads: usize,
    /// Seconds a worker holds a task before another may take it.
    #[arg(long, default_value_t = DEFAULTS.lease_seconds, value_parser = clap::value_parser!(u64).range(1..=86400))]
    lease_seconds: u64,
    /// The most items of a dataset.
    #[arg(long, default_value_t = DEFAULTS.max_items)]
    max_items: u64,
    /// The most datasets a client keeps.
    #[arg(long, default_value_t = DEFAULTS.max_datasets)]
    max_datasets: u64,
    /// The most items a client keeps over all its datasets (48 bytes each on disk).
    #[arg(long, default_value_t = DEFAULTS.max_client_items)]
    max_client_items: u64,
    /// The most pre-tokens of a dataset whose values are on disk at once (592 bytes per
    /// item each, until the run that uses it ends).
    #[arg(long, default_value_t = DEFAULTS.max_pretokens)]
    max_pretokens: u64,
    /// Seconds a run waits for its tokens or scalars before it fails.
    #[arg(long, default_value_t = DEFAULTS.token_wait_seconds, value_parser = clap::value_parser!(u64).range(1..=30 * 86400))]
    token_wait: u64,
    /// Seconds a connection has for its request (TLS handshake, head and body) from the
    /// moment it is accepted.
    #[arg(long, default_value_t = DEFAULTS.request_seconds, value_parser = clap::value_parser!(u64).range(1..=3600))]
    request_timeout: u64,
    /// The most connections served at once. When all are taken, a newcomer within its
    /// caps closes the oldest connection still waiting for its request, of the network
    /// holding the most; with none waiting, it is closed as soon as accepted.
    #[arg(long, default_value_t = DEFAULTS.max_connections, value_parser = connections(2))]
    max_connections: usize,
    /// The most connections served at once from one peer (an IPv4 address or an IPv6 /64).
    #[arg(long, default_value_t = DEFAULTS.max_connections_per_peer, value_parser = connections(1))]
    max_connections_per_peer: usize,
    /// The most connections served at once from one network (an IPv4 /24 or an IPv6 /48):
    /// at least --max-connections-per-peer, below --max-connections.
    #[arg(long, default_value_t = DEFAULTS.max_connections_per_network, value_parser = connections(1))]
    max_connections_per_network: usize,
    /// Who may register: `open` (anyone who reaches the service) or `invite` (only with an
    /// unused `venn cloud invite`). Default: open on a loopback address, invite elsewhere.
    #[arg(long, value_enum)]
    registration: Option<RegistrationCli>,
    /// The most clients registered.
    #[arg(long, default_value_t = DEFAULTS.max_clients)]
    max_clients: u64,
    /// The most datasets kept (open or sealed) by all clients together.
    #[arg(long, default_value_t = DEFAULTS.max_total_datasets)]
    max_total_datasets: u64,
    /// The most items kept by all clients together (48 bytes each on disk).
    #[arg(long, default_value_t = DEFAULTS.max_total_items)]
    max_total_items: u64,
    /// The most registrations tried per minute from one peer (an IPv4 address or an IPv6
    /// /64); more are answered 429.
    #[arg(long, default_value_t = DEFAULTS.registrations_per_minute, value_parser = clap::value_parser!(u32).range(1..))]
    registrations_per_minute: u32,
    /// The most pairs a three-party run's join may compare, n1·n2 for its first two
    /// datasets' sizes (refused when the run is created; 2^28 take about 1.5 minutes on
    /// two cores).
    #[arg(long, default_value_t = DEFAULTS.max_join_work)]
    max_join_work: u64,
    /// Items of each external worker's answer that the service recomputes before taking
    /// it (capped at the chunk's; 0: trust external workers). A worker falsifying a
    /// fraction f of a chunk's items is caught with probability at least 1 − (1 − f)^k.
    #[arg(long, value_name = "K", default_value_t = DEFAULTS.spot_checks, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(0..=1 << 16))]
    spot_checks: usize,
    /// The service's certificate (PEM; e.g. from `venn keygen`): serve HTTPS (TLS 1.3).
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    tls_cert: Option<PathBuf>,
    /// The certificate's private key (PEM).
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    /// Serve plain HTTP on an address other machines can reach (clients' requests are
    /// signed, but anyone on the path sees points, tokens and results).
    #[arg(long, conflicts_with = "tls_cert")]
    plain_http: bool,
}

/// Where the service is and how its certificate is checked.
#[derive(Args)]
pub(crate) struct ServiceCli {
    /// The service: https://HOST:PORT, or http://HOST:PORT on this machine.
    #[arg(long, value_name = "URL")]
    server: String,
    /// Trust only the service certificate with this SHA-256 fingerprint (what `venn
    /// keygen` and `venn cloud serve` print).
    #[arg(long, value_name = "SHA256", conflicts_with = "server_ca")]
    server_fingerprint: Option<String>,
    /// Trust a service certificate that chains to a CA in this PEM file (and names the
    /// host).
    #[arg(long, value_name = "FILE")]
    server_ca: Option<PathBuf>,
    /// Talk plain HTTP to a service on another machine.
    #[arg(long)]
    plain_http: bool,
}

impl ServiceCli {
    /// The service's endpoint; plain HTTP only to this machine unless --plain-http.
    fn endpoint(&self) -> Result<Endpoint> {
        thunder::endpoint(
            &self.server,
            self.server_fingerprint.as_deref(),
            self.server_ca.as_deref(),
            self.plain_http,
        )
    }
}

#[derive(Args)]
pub(crate) struct WorkerCli {
    #[command(flatten)]
    service: ServiceCli,
    /// This worker's identity (from `venn cloud enrol-worker`).
    #[arg(long, value_name = "FILE")]
    worker_identity: PathBuf,
    /// Threads for pairing (at least 1, at most the cores it may use).
    #[arg(long, default_value_t = WORKER_DEFAULTS.threads)]
    threads: usize,
    /// Exit after this many seconds without work (default: run until stopped).
    #[arg(long, value_name = "SECONDS")]
    idle_exit: Option<u64>,
}

#[derive(Args)]
pub(crate) struct EnrolWorkerCli {
    #[command(flatten)]
    store: StoreCli,
    /// The worker's name (letters, digits, '-', '_', '.').
    #[arg(long)]
    name: String,
    /// Where to write its identity (a new file, owner-only).
    #[arg(long, value_name = "FILE")]
    out: PathBuf,
    /// Enrol a name enrolled before again: a new secret (the old one stops working), and
    /// its quarantine, if any, lifted.
    #[arg(long)]
    replace: bool,
}

/// How a client reaches the service.
#[derive(Args)]
pub(crate) struct ClientCli {
    #[command(flatten)]
    service: ServiceCli,
    /// Your identity file (made by `venn cloud register`).
    #[arg(long, value_name = "FILE")]
    identity: PathBuf,
}

/// Who may register with `venn cloud serve`.
#[derive(Clone, Copy, clap::ValueEnum)]
pub(crate) enum RegistrationCli {
    Open,
    Invite,
}

#[derive(Args)]
pub(crate) struct InviteCli {
    #[command(flatten)]
    store: StoreCli,
    /// How many invites to make.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=10_000))]
    count: u64,
}

#[derive(Args)]
pub(crate) struct RegisterCli {
    #[command(flatten)]
    client: ClientCli,
    /// Your name at the service (letters, digits, '-', '_', '.').
    #[arg(long)]
    name: String,
    /// An invite from the service's operator (`venn cloud invite`), where the service
    /// registers by invitation.
    #[arg(long, value_name = "HEX")]
    invite: Option<String>,
}

#[derive(Args)]
pub(crate) struct UploadCli {
    #[command(flatten)]
    client: ClientCli,
    /// The dataset's name (yours; unique among your datasets).
    #[arg(long)]
    dataset: String,
    #[command(flatten)]
    keys: Flags<ForKeys>,
    /// Where to keep the dataset's key (a new file, owner-only): without it no run and no
    /// result is possible.
    #[arg(long, value_name = "FILE")]
    key_file: PathBuf,
    /// Items per uploaded chunk (also the unit of the service's work).
    #[arg(long, default_value_t = DEFAULT_CHUNK_ITEMS, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=MAX_CHUNK_ITEMS as u64))]
    chunk_items: usize,
}

#[derive(Args)]
#[command(group = clap::ArgGroup::new("endpoint").required(true).args(["listen", "connect"]))]
pub(crate) struct PairCli {
    #[command(flatten)]
    client: ClientCli,
    /// The key file of your dataset (from `venn cloud upload`).
    #[arg(long, value_name = "FILE")]
    key_file: PathBuf,
    /// Wait for the partners on ADDR and create the run (with --partners 2, a three-party
    /// run: you are linked to both, they are not linked to each other).
    #[arg(long, value_name = "ADDR")]
    listen: Option<String>,
    /// Connect to the partner that listens at ADDR.
    #[arg(long, value_name = "ADDR")]
    connect: Option<String>,
    /// Partners to wait for with --listen: 1 or 2.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=2), requires = "listen")]
    partners: u64,
    /// Seconds to wait for the partners.
    #[arg(long, default_value_t = defaults::PAIR_TIMEOUT_SECONDS, value_parser = clap::value_parser!(u64).range(1..=MAX_SECONDS))]
    timeout: u64,
    /// Use a ready pre-token of your dataset (`venn cloud pretoken`) and give the service
    /// a scalar instead of a token (two parties; both pass it).
    #[arg(long)]
    preprocessed: bool,
    #[command(flatten)]
    tls: Flags<ForTls>,
}

#[derive(Args)]
pub(crate) struct PretokenCli {
    #[command(flatten)]
    client: ClientCli,
    /// The key file of your dataset (from `venn cloud upload`).
    #[arg(long, value_name = "FILE")]
    key_file: PathBuf,
    /// How many to make (each serves one run).
    #[arg(long, default_value_t = defaults::PRETOKEN_COUNT, value_parser = clap::value_parser!(u64).range(0..=64))]
    count: u64,
    /// Seconds to wait for the service to compute them (0: return at once).
    #[arg(long, default_value_t = defaults::PRETOKEN_WAIT_SECONDS, value_parser = clap::value_parser!(u64).range(0..=MAX_SECONDS))]
    wait: u64,
}

#[derive(Args)]
pub(crate) struct StatusCli {
    #[command(flatten)]
    client: ClientCli,
    /// The run's id.
    #[arg(long)]
    run: String,
}

#[derive(Args)]
pub(crate) struct ResultCli {
    #[command(flatten)]
    client: ClientCli,
    /// The run's id.
    #[arg(long)]
    run: String,
    /// The key file of your dataset in the run.
    #[arg(long, value_name = "FILE")]
    key_file: PathBuf,
    /// The file you uploaded (the same keys; its rows are what is written).
    #[command(flatten)]
    keys: Flags<ForKeys>,
    /// Where to write your matching rows.
    #[arg(long, value_name = "FILE")]
    output: PathBuf,
    /// Seconds to wait for the run to finish.
    #[arg(long, default_value_t = defaults::RESULT_WAIT_SECONDS, value_parser = clap::value_parser!(u64).range(0..=MAX_SECONDS))]
    wait: u64,
    /// Seconds to wait for the partners' tokens (or scalars), which `pair` gives at once:
    /// a run still waiting for one after this is given up on (the service keeps it open
    /// until its --token-wait, so the result may be read later).
    #[arg(long, value_name = "SECONDS", default_value_t = defaults::PARTNER_WAIT_SECONDS, value_parser = clap::value_parser!(u64).range(0..=MAX_SECONDS))]
    partner_wait: u64,
}

#[derive(Args)]
pub(crate) struct DeleteCli {
    #[command(flatten)]
    client: ClientCli,
    /// The dataset's id.
    #[arg(long)]
    dataset: String,
}

/// Runs a `venn cloud` command.
pub(crate) fn cloud(command: CloudCommand) -> Result<()> {
    match command {
        CloudCommand::Serve(s) => serve(s),
        CloudCommand::Worker(w) => {
            let threads = venn_app::threads::bounded(w.threads)?;
            let server = w.service.endpoint()?;
            let identity = WorkerIdentity::load(&w.worker_identity)?;
            let config = WorkerConfig {
                threads,
                idle_exit: w.idle_exit.map(Duration::from_secs),
                ..WORKER_DEFAULTS.clone()
            };
            let done = worker::run(&server, &identity, &config)?;
            eprintln!("venn cloud worker: {done} tasks done");
            Ok(())
        }
        CloudCommand::Invite(i) => {
            std::fs::create_dir_all(&i.store.data).map_err(Error::file("create", &i.store.data))?;
            for invite in i.store.enrolment()?.invites(i.count)? {
                out!("{invite}");
            }
            Ok(())
        }
        CloudCommand::EnrolWorker(e) => {
            let identity = e.store.enrolment()?.enrol(&e.name, e.replace, &e.out)?;
            eprintln!(
                "venn cloud: worker '{}' enrolled; its identity in '{}' (venn cloud worker \
                 --worker-identity)",
                identity.name(),
                e.out.display()
            );
            Ok(())
        }
        CloudCommand::Workers(s) => {
            let workers = s.enrolment()?.workers()?;
            out!(
                "{}",
                serde_json::to_string_pretty(&workers).expect("serialisable")
            );
            Ok(())
        }
        CloudCommand::Register(r) => {
            let server = r.client.service.endpoint()?;
            let client =
                thunder::register(&server, &r.name, &r.client.identity, r.invite.as_deref())?;
            eprintln!(
                "venn cloud: registered '{}' (public key {}); identity in '{}'",
                r.name,
                client.identity().public_key(),
                r.client.identity.display()
            );
            Ok(())
        }
        CloudCommand::Upload(u) => upload(u),
        CloudCommand::Pair(p) => pair(p),
        CloudCommand::Pretoken(p) => pretoken(p),
        CloudCommand::Status(s) => {
            let run = client(&s.client)?.run(&s.run)?;
            out!(
                "{}",
                serde_json::to_string_pretty(&run).expect("serialisable")
            );
            Ok(())
        }
        CloudCommand::Result(r) => result(r),
        CloudCommand::Datasets(c) => {
            let datasets = client(&c)?.datasets()?;
            out!(
                "{}",
                serde_json::to_string_pretty(&datasets).expect("serialisable")
            );
            Ok(())
        }
        CloudCommand::Delete(d) => {
            let gone = client(&d.client)?.delete(&d.dataset)?;
            eprintln!("venn cloud: dataset {} ({}) deleted", gone.id, gone.name);
            Ok(())
        }
    }
}

/// A client of the service from the command line's options.
fn client(c: &ClientCli) -> Result<Client> {
    Ok(Client::new(
        &c.service.endpoint()?,
        Identity::load(&c.identity)?,
    )?)
}

fn serve(s: ServeCli) -> Result<()> {
    check_connection_caps(&s)?;
    venn_service::logs::init()?;
    // 0: no pool of its own.
    let threads = match s.threads {
        0 => 0,
        asked => venn_app::threads::bounded(asked)?,
    };
    let tls = match (&s.tls_cert, &s.tls_key) {
        (Some(cert), Some(key)) => Some(CertifiedKey::load(cert, key)?),
        _ => {
            thunder::check_loopback(&s.listen, s.plain_http, "serve plain HTTP on")?;
            None
        }
    };
    let scheme = if tls.is_some() { "https" } else { "http" };
    let fingerprint = tls.as_ref().map(|t| t.fingerprint());
    let data = &s.store.data;
    std::fs::create_dir_all(data).map_err(Error::file("create", data))?;
    if data.join("worker-secret").exists() {
        tracing::warn!(
            "'{}' is no longer used: each external worker needs an identity of its own \
             (venn cloud enrol-worker)",
            data.join("worker-secret").display()
        );
    }
    let registration = match s.registration {
        Some(RegistrationCli::Open) => Registration::Open,
        Some(RegistrationCli::Invite) => Registration::Invite,
        // Open registration on an address others can reach would let anyone fill the
        // service's client limit and spend its quotas: invitations unless asked otherwise.
        None if thunder::on_loopback(&s.listen)? => Registration::Open,
        None => Registration::Invite,
    };
    let registering = match registration {
        Registration::Open => "open to anyone who reaches the service",
        Registration::Invite => {
            "by invitation: make invites with `venn cloud invite` and this --data \
             (and --database)"
        }
    };
    let setup = Setup {
        listen: s.listen,
        database: s.store.database(),
        dir: s.store.data,
        tls: tls.as_ref().map(api_server_config).transpose()?,
        config: Config {
            lease_seconds: s.lease_seconds,
            max_items: s.max_items,
            max_datasets: s.max_datasets,
            max_client_items: s.max_client_items,
            max_pretokens: s.max_pretokens,
            token_wait_seconds: s.token_wait,
            threads,
            request_seconds: s.request_timeout,
            max_connections: s.max_connections,
            max_connections_per_peer: s.max_connections_per_peer,
            max_connections_per_network: s.max_connections_per_network,
            registration,
            max_clients: s.max_clients,
            max_total_datasets: s.max_total_datasets,
            max_total_items: s.max_total_items,
            registrations_per_minute: s.registrations_per_minute,
            max_join_work: s.max_join_work,
            spot_checks: s.spot_checks,
        },
    };
    Ok(server::serve(&setup, |addr| {
        // Machine-readable first (tests and benchmarks read it), then for people.
        out!("listening {addr}");
        match &fingerprint {
            Some(fp) => tracing::info!(
                "serving on {scheme}://{addr} (certificate sha256:{fp}: clients and workers \
                 pass --server-fingerprint {fp})"
            ),
            None => tracing::info!("serving on {scheme}://{addr}"),
        }
        tracing::info!("registration {registering}");
    })?)
}

/// Refuses connection caps under which one peer could hold more than its network, or one
/// network every connection the service serves.
fn check_connection_caps(s: &ServeCli) -> Result<()> {
    let (peer, network, total) = (
        s.max_connections_per_peer,
        s.max_connections_per_network,
        s.max_connections,
    );
    if peer > network || network >= total {
        return Err(Error::Usage(format!(
            "connection caps must rise from peer to network to service: \
             --max-connections-per-peer {peer} ≤ --max-connections-per-network {network} < \
             --max-connections {total}"
        )));
    }
    Ok(())
}

fn upload(u: UploadCli) -> Result<()> {
    let opts = u.keys.settings.key_options()?;
    let client = client(&u.client)?;
    if u.key_file.exists() {
        return Err(Error::Usage(format!(
            "'{}' exists: a key file is never overwritten",
            u.key_file.display()
        )));
    }
    let start = Instant::now();
    let input = read_input(u.keys.settings.input()?, &opts)?;
    let spinner = Spinner::if_terminal("upload");
    let key = client.upload(
        &u.dataset,
        &input.keys,
        &input.form.to_string(),
        &u.key_file,
        u.chunk_items,
        &|sent, total| {
            if let Some(s) = &spinner {
                s.message(&format!("{sent} of {total} items"));
            }
        },
    )?;
    eprintln!(
        "venn cloud: uploaded {} items as dataset {} ('{}') in {:.1} s; key in '{}'",
        key.items,
        key.dataset,
        key.name,
        start.elapsed().as_secs_f64(),
        u.key_file.display()
    );
    out!("{}", key.dataset);
    Ok(())
}

fn pair(p: PairCli) -> Result<()> {
    let client = client(&p.client)?;
    let key = DatasetKey::load(&p.key_file)?;
    let transport = p.tls.settings.tls.clone().load()?;
    let peer = match (p.listen, p.connect) {
        (Some(addr), _) => PeerAddr::Listen(addr),
        (None, Some(addr)) => PeerAddr::Connect(addr),
        (None, None) => unreachable!("clap requires one of --listen/--connect"),
    };
    let partners = Partners::link(
        &transport,
        &peer,
        p.partners as usize,
        Duration::from_secs(p.timeout),
        |addr| eprintln!("venn cloud: listening on {addr}"),
    )?;
    let run = partners.pair(&client, &key, p.preprocessed)?;
    eprintln!(
        "venn cloud: run {} of {} datasets; {} given ({})",
        run.id,
        run.sides.len(),
        if p.preprocessed {
            "pre-token and scalar"
        } else {
            "token"
        },
        run.state
    );
    out!("{}", run.id);
    Ok(())
}

fn pretoken(p: PretokenCli) -> Result<()> {
    let client = client(&p.client)?;
    let key = DatasetKey::load(&p.key_file)?;
    if p.count == 0 {
        for t in client.pretokens(&key)? {
            out!("{} {}", t.id, t.state);
        }
        return Ok(());
    }
    let start = Instant::now();
    let made = client.make_pretokens(&key, p.count as usize)?;
    for t in &made {
        out!("{}", t.id);
    }
    if p.wait == 0 {
        eprintln!(
            "venn cloud: {} pre-token(s) of dataset {} handed over; the service computes them",
            made.len(),
            key.dataset
        );
        return Ok(());
    }
    client.wait_pretokens(&key, &made, Duration::from_secs(p.wait))?;
    eprintln!(
        "venn cloud: {} pre-token(s) of dataset {} ready in {:.1} s",
        made.len(),
        key.dataset,
        start.elapsed().as_secs_f64()
    );
    Ok(())
}

fn result(r: ResultCli) -> Result<()> {
    let opts = r.keys.settings.key_options()?;
    let client = client(&r.client)?;
    let key = DatasetKey::load(&r.key_file)?;
    check_output_path(&r.output, "--output", &[r.keys.settings.input()?])?;
    let input = read_input(r.keys.settings.input()?, &opts)?;
    let run = wait_for(&client, &r)?;
    let matched = client.result(&key, &r.run, &input.keys, &input.form.to_string())?;
    let rows = write_rows(
        &r.output,
        &Matching {
            source: &input,
            intersection: &matched,
        },
        1,
    )?;
    eprintln!(
        "venn cloud: run {}: {} of your {} keys matched ({} rows written to '{}'); \
         the service worked {} s",
        run.id,
        matched.len(),
        input.keys.len(),
        rows,
        r.output.display(),
        run.seconds.unwrap_or(0)
    );
    Ok(())
}

/// Waits for `r`'s run to be done: up to --wait, and up to --partner-wait while it waits
/// for tokens, saying once what it waits for (whose token), and on a terminal showing
/// what it waits for, since how long.
fn wait_for(client: &Client, r: &ResultCli) -> Result<Run> {
    let spinner = Spinner::if_terminal("result");
    let shown = RefCell::new(None::<RunState>);
    let progress = |run: &Run| {
        let what = match run.state {
            RunState::Tokens => {
                format!("run {}: waiting for {}", run.id, run.awaited(client.name()))
            }
            RunState::Computing => format!(
                "run {}: the service computes ({} of {} tasks done)",
                run.id, run.tasks_done, run.tasks
            ),
            RunState::Done | RunState::Failed => return,
        };
        let before = shown.replace(Some(run.state));
        if before.is_none() && run.state == RunState::Tokens {
            eprintln!(
                "venn cloud: {what}; giving up after {} s (--partner-wait)",
                r.partner_wait
            );
        }
        if let Some(s) = &spinner {
            match before == Some(run.state) {
                true => s.message(&what),
                false => s.phase(&what),
            }
        }
    };
    let (tokens, wait) = (
        Duration::from_secs(r.partner_wait),
        Duration::from_secs(r.wait),
    );
    Ok(client.wait_with(&r.run, tokens, wait, &progress)?)
}
