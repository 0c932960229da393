//! A service in this process for tests, over SQLite or a real PostgreSQL started here.

mod postgres;

pub(crate) use postgres::Postgres;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;
use venn::Items;
use venn_cloud::auth::{Identity, WorkerIdentity};
use venn_cloud::client::{Client, DatasetKey};
use venn_cloud::http::Endpoint;
use venn_service::enrolment::Enrolment;
use venn_service::server::{self, Config, Registration, Setup};

/// Where a test's metadata lives.
#[derive(Clone, Debug)]
pub(crate) enum Db {
    Sqlite,
    /// A fresh database in the PostgreSQL cluster at this URL (without the database).
    Postgres(String),
}

/// A running service; stopped when dropped.
pub(crate) struct Running {
    pub url: String,
    pub dir: PathBuf,
    pub database: String,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Running {
    /// Starts a service on `dir` with `database`.
    pub(crate) fn start(dir: &Path, database: &str, listen: &str, config: Config) -> Running {
        let setup = Setup {
            listen: listen.to_owned(),
            database: database.to_owned(),
            dir: dir.to_owned(),
            tls: None,
            config,
        };
        let (bound_tx, bound_rx) = std::sync::mpsc::channel::<SocketAddr>();
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(server::run(&setup, |a| bound_tx.send(a).unwrap(), async {
                let _ = stop_rx.await;
            }))
            .unwrap();
        });
        let addr = bound_rx
            .recv_timeout(Duration::from_secs(60))
            .expect("the service starts");
        Running {
            url: format!("http://{addr}"),
            dir: dir.to_owned(),
            database: database.to_owned(),
            stop: Some(stop_tx),
            thread: Some(thread),
        }
    }

    /// A registered client named `name`.
    pub(crate) fn client(&self, name: &str) -> Client {
        let c = Client::new(
            &Endpoint::plain(&self.url),
            Identity::generate(name).unwrap(),
        )
        .unwrap();
        c.register(None).unwrap();
        c
    }

    /// The operator's access to the service's store.
    pub(crate) fn enrolment(&self) -> Enrolment {
        Enrolment::open(&self.database, &self.dir).unwrap()
    }

    /// Worker `name`, newly enrolled (its identity file in the data directory).
    pub(crate) fn enrol(&self, name: &str) -> WorkerIdentity {
        let out = self.dir.join(format!("{name}.worker"));
        self.enrolment().enrol(name, false, &out).unwrap()
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The default configuration of a test service: its own pool of two threads.
pub(crate) fn config() -> Config {
    Config {
        lease_seconds: 60,
        max_items: 1 << 20,
        max_datasets: 16,
        max_client_items: 1 << 20,
        max_pretokens: 2,
        token_wait_seconds: 3600,
        threads: 2,
        request_seconds: 60,
        max_connections: 256,
        max_connections_per_peer: 64,
        max_connections_per_network: 128,
        registration: Registration::Open,
        max_clients: 64,
        max_total_datasets: 256,
        max_total_items: 1 << 24,
        registrations_per_minute: 64,
        max_join_work: 1 << 20,
        spot_checks: Config::default().spot_checks,
    }
}

/// A test's world: a data directory and a database.
pub(crate) struct World {
    pub tmp: tempfile::TempDir,
    pub database: String,
}

impl World {
    pub(crate) fn new(db: &Db) -> World {
        let tmp = tempfile::tempdir().unwrap();
        let database = match db {
            Db::Sqlite => format!("sqlite://{}", tmp.path().join("store.db").display()),
            Db::Postgres(base) => {
                let name = format!("t{}", venn_cloud::api::new_id());
                run_sql(
                    &format!("{base}/postgres"),
                    &format!("CREATE DATABASE {name}"),
                );
                format!("{base}/{name}")
            }
        };
        World { tmp, database }
    }

    pub(crate) fn start(&self, config: Config) -> Running {
        Running::start(
            &self.tmp.path().join("data"),
            &self.database,
            "127.0.0.1:0",
            config,
        )
    }

    /// Starts the service again where it listened before.
    pub(crate) fn restart(&self, before: Running, config: Config) -> Running {
        let listen = before.url.trim_start_matches("http://").to_owned();
        drop(before);
        Running::start(
            &self.tmp.path().join("data"),
            &self.database,
            &listen,
            config,
        )
    }

    /// `count` invites to register, made in the world's store as `venn cloud invite` makes
    /// them.
    pub(crate) fn invites(&self, count: u64) -> Vec<String> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let store = venn_service::store::Store::open(&self.database, &self.path("data"))
                .await
                .unwrap();
            store.create_invites(count).await.unwrap()
        })
    }

    /// Makes the world's store as the version whose last migration was `version` left it.
    pub(crate) fn migrate_to(&self, version: i64) {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            sqlx::any::install_default_drivers();
            let url = match self.database.starts_with("sqlite:") {
                true => format!("{}?mode=rwc", self.database),
                false => self.database.clone(),
            };
            let pool = sqlx::AnyPool::connect(&url).await.unwrap();
            let mut migrator = venn_service::store::migrator();
            migrator.migrations = migrator
                .migrations
                .iter()
                .filter(|m| m.version <= version)
                .cloned()
                .collect();
            migrator.run(&pool).await.unwrap();
            pool.close().await;
        });
    }

    /// Runs `sql` on the world's database, behind its service's back.
    pub(crate) fn execute(&self, sql: &str) {
        run_sql(&self.database, sql);
    }

    pub(crate) fn path(&self, name: &str) -> PathBuf {
        self.tmp.path().join(name)
    }
}

/// Runs `sql` on the database at `url`.
fn run_sql(url: &str, sql: &str) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        sqlx::any::install_default_drivers();
        let pool = sqlx::AnyPool::connect(url).await.unwrap();
        sqlx::query(sql).execute(&pool).await.unwrap();
        pool.close().await;
    });
}

/// Keys from names.
pub(crate) fn keys<S: AsRef<[u8]>>(names: &[S]) -> Items {
    names.iter().collect()
}

/// `n` keys `prefix0`, `prefix1`, ….
pub(crate) fn numbered(prefix: &str, range: std::ops::Range<usize>) -> Vec<String> {
    range.map(|i| format!("{prefix}{i}")).collect()
}

/// Uploads `names` as dataset `name` of `client`, in chunks of `chunk` items.
pub(crate) fn upload(
    w: &World,
    client: &Client,
    name: &str,
    names: &[String],
    chunk: usize,
) -> DatasetKey {
    let path = w.path(&format!("{}-{name}.key", client.name()));
    client
        .upload(name, &keys(names), FORM, &path, chunk, &|_, _| {})
        .unwrap()
}

/// Pairs two (or three: the last leads, linked to both) clients' datasets over
/// in-memory links; returns the run's id.
pub(crate) fn pair(parties: &[(&Client, &DatasetKey)]) -> String {
    try_pair(parties, false).unwrap()
}

/// A run between `parties` (the last leads), with or without pre-tokens; the leader's
/// error, or else a follower's, if one fails.
pub(crate) fn try_pair(
    parties: &[(&Client, &DatasetKey)],
    preprocessed: bool,
) -> venn_cloud::Result<String> {
    let timeout = Duration::from_secs(60);
    std::thread::scope(|s| {
        let (leader, followers) = parties.split_last().unwrap();
        let mut leader_links = Vec::new();
        let mut handles = Vec::new();
        for &(c, k) in followers {
            let (a, mut b) = venn::net::mem_pair(timeout);
            leader_links.push(a);
            handles.push(s.spawn(move || c.pair(k, &mut [&mut b], false, preprocessed)));
        }
        let mut refs: Vec<&mut dyn venn::net::Channel> =
            leader_links.iter_mut().map(|l| l as _).collect();
        let run = leader.0.pair(leader.1, &mut refs, true, preprocessed);
        drop(leader_links);
        let run = run?;
        for h in handles {
            assert_eq!(h.join().unwrap()?.id, run.id);
        }
        Ok(run.id)
    })
}

/// How the tests' keys are taken (they are given as they are).
pub(crate) const FORM: &str = "no trim, no lowercase, 1 key column";

/// The keys of `names` that `client` learns matched in `run`.
pub(crate) fn matched(
    client: &Client,
    key: &DatasetKey,
    run: &str,
    names: &[String],
) -> Vec<String> {
    client.wait(run, Duration::from_secs(120)).unwrap();
    let ix = client.result(key, run, &keys(names), FORM).unwrap();
    let mut out: Vec<String> = ix.iter().map(|&i| names[i].clone()).collect();
    out.sort();
    out
}

/// The plaintext intersection, sorted.
pub(crate) fn truth(a: &[String], b: &[String]) -> Vec<String> {
    let mut out: Vec<String> = a.iter().filter(|x| b.contains(x)).cloned().collect();
    out.sort();
    out
}
