//! Where the service keeps things: metadata in SQLite (the embedded default) or PostgreSQL
//! through one sqlx `Any` code path (runtime queries with `$n` placeholders, which both
//! accept; the schema in `migrations/`, applied at start), and bytes in files under the
//! data directory (docs/cloud.md, Storage):
//!
//! - `datasets/<id>/<chunk>-<random>`: a chunk's points as uploaded and checked, in a new
//!   file for every upload (named in the chunk's row), so a sealed chunk's file is never
//!   written over;
//! - `runs/<id>/<side>-<chunk>`: a task's answer (a pre-token's run keeps its answers as
//!   the pre-token's values until a run uses them);
//! - `runs/<id>/result-<side>`: a side's matched positions.
//!
//! Every file is written to a temporary name, synced and renamed before the row that
//! acknowledges it is committed, so a crash leaves at worst an unreferenced file: nothing
//! acknowledged is lost and nothing half-written is read.
//!
//! Every check of a state or a quota is made in the transaction that acts on it, holding
//! the rows it depends on: a transaction that changes what a client keeps first takes the
//! client's row, then the dataset's (`lock_client`, `lock_dataset`); on PostgreSQL an
//! updated row stays locked until its transaction ends, and SQLite runs one transaction
//! at a time.
//!
//! Its parts: this file (the schema's migrations, opening, quotas, the row locks every
//! transaction takes first, a run's state read from its row), `clients` (registration,
//! invites, nonces), `datasets` (datasets and their chunks), `runs` (a run's life: tokens,
//! start, expiry, end), `pretokens` (pre-tokens and preprocessed runs' scalars), `tasks`
//! (leases and answers), `workers` (external workers' enrolment and quarantine) and
//! `files` (the data directory's paths, atomic writes).

use crate::error::Result;
use sqlx::any::{AnyPoolOptions, AnyRow};
use sqlx::{AnyPool, Executor, Row};
use std::path::{Path, PathBuf};
use venn_cloud::api::{now, DatasetState, RunState};
use venn_cloud::Error;

mod clients;
mod datasets;
mod files;
mod pretokens;
mod runs;
mod tasks;
mod workers;

pub use datasets::Chunk;
pub use files::{blocking, write_atomically};
pub use runs::raised_side;
pub use tasks::Leased;
pub use workers::Worker;

/// The schema's migrations (`migrations/NNNN_description.sql`), compiled in — what
/// `sqlx::migrate!` would make of the directory (the same versions, descriptions and SQL,
/// so the same checksums), without sqlx's macros and the second build of its drivers they
/// cost.
const MIGRATIONS: [(i64, &str, &str); 8] = [
    (
        1,
        "schema",
        include_str!("../../migrations/0001_schema.sql"),
    ),
    (
        2,
        "preprocessing",
        include_str!("../../migrations/0002_preprocessing.sql"),
    ),
    (
        3,
        "chunk files",
        include_str!("../../migrations/0003_chunk_files.sql"),
    ),
    (
        4,
        "free deleted names",
        include_str!("../../migrations/0004_free_deleted_names.sql"),
    ),
    (
        5,
        "registration",
        include_str!("../../migrations/0005_registration.sql"),
    ),
    (
        6,
        "dataset grants",
        include_str!("../../migrations/0006_dataset_grants.sql"),
    ),
    (
        7,
        "worker identities",
        include_str!("../../migrations/0007_worker_identities.sql"),
    ),
    (
        8,
        "canonical keys",
        include_str!("../../migrations/0008_canonical_keys.sql"),
    ),
];

/// The migrator of the store's schema, which [`Store::open`] runs: public so that a test
/// can make a store as an earlier version left it (its first migrations only).
pub fn migrator() -> sqlx::migrate::Migrator {
    use sqlx::migrate::{Migration, MigrationType, Migrator};
    let migrations = MIGRATIONS.map(|(version, description, sql)| {
        let no_tx = sql.starts_with("-- no-transaction");
        Migration::new(
            version,
            description.into(),
            MigrationType::Simple,
            sql.into(),
            no_tx,
        )
    });
    Migrator {
        migrations: migrations.to_vec().into(),
        ..Migrator::DEFAULT
    }
}

/// The service's store.
pub struct Store {
    pool: AnyPool,
    dir: PathBuf,
}

/// A client's limits, checked in the transactions that change what it keeps.
#[derive(Clone, Copy, Debug)]
pub struct Quotas {
    /// The most items of a dataset.
    pub max_items: u64,
    /// The most datasets a client keeps (open or sealed).
    pub max_datasets: u64,
    /// The most items a client keeps over all its datasets.
    pub max_client_items: u64,
    /// The most datasets kept (open or sealed) by all clients together.
    pub max_total_datasets: u64,
    /// The most items kept by all clients together.
    pub max_total_items: u64,
}

impl Quotas {
    /// Refuses a dataset of `items` items.
    fn check_dataset(&self, items: u64) -> Result<()> {
        at_most(items, self.max_items, || {
            format!("a dataset over this service's {} items", self.max_items)
        })
    }

    /// Refuses a service that would keep `datasets` datasets.
    fn check_total_datasets(&self, datasets: u64) -> Result<()> {
        at_most(datasets, self.max_total_datasets, || {
            format!(
                "this service keeps at most {} datasets in all, and has them",
                self.max_total_datasets
            )
        })
    }

    /// Refuses a service that would keep `items` items.
    fn check_total_items(&self, items: u64) -> Result<()> {
        at_most(items, self.max_total_items, || {
            format!(
                "this service keeps at most {} items in all",
                self.max_total_items
            )
        })
    }

    /// Refuses a client that would keep `items` items, having kept `kept`.
    fn check_client(&self, items: u64, kept: u64) -> Result<()> {
        at_most(items, self.max_client_items, || {
            format!(
                "a client keeps at most {} items here (you keep {kept})",
                self.max_client_items
            )
        })
    }
}

/// Refuses `value` over `max` as too large, saying why.
fn at_most(value: u64, max: u64, why: impl FnOnce() -> String) -> Result<()> {
    match value > max {
        true => Err(Error::TooLarge(why()).into()),
        false => Ok(()),
    }
}

/// Takes `client`'s row until the transaction ends: the transactions that check and change
/// what a client keeps run one at a time.
async fn lock_client(tx: &mut sqlx::Transaction<'_, sqlx::Any>, client: &str) -> Result<()> {
    sqlx::query("UPDATE clients SET created = created WHERE name = $1")
        .bind(client)
        .execute(&mut **tx)
        .await?;
    Ok(())
}

/// Takes a dataset's row until the transaction ends, refusing unless the dataset is in
/// `state`: its state cannot change before the transaction ends.
async fn lock_dataset(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    dataset: &str,
    state: DatasetState,
) -> Result<()> {
    let locked = sqlx::query("UPDATE datasets SET state = state WHERE id = $1 AND state = $2")
        .bind(dataset)
        .bind(state.as_str())
        .execute(&mut **tx)
        .await?;
    if locked.rows_affected() == 1 {
        return Ok(());
    }
    let found = sqlx::query("SELECT state FROM datasets WHERE id = $1")
        .bind(dataset)
        .fetch_optional(&mut **tx)
        .await?;
    Err(match found {
        Some(row) => {
            Error::Conflict(format!("dataset {dataset} is {}", row.get::<String, _>(0))).into()
        }
        None => no_dataset(dataset),
    })
}

/// What a caller is told of a dataset that is missing, or not theirs to see.
fn no_dataset(id: &str) -> crate::Error {
    Error::NotFound(format!("no dataset {id}")).into()
}

/// Takes the row of a dataset's owner, then the dataset's, refusing unless it is in
/// `state`; returns the owner.
async fn lock_owned_dataset(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    dataset: &str,
    state: DatasetState,
) -> Result<String> {
    let owner: String = sqlx::query("SELECT owner FROM datasets WHERE id = $1")
        .bind(dataset)
        .fetch_optional(&mut **tx)
        .await?
        .ok_or_else(|| no_dataset(dataset))?
        .get(0);
    lock_client(tx, &owner).await?;
    lock_dataset(tx, dataset, state).await?;
    Ok(owner)
}

/// The run state in column `column` of `row`. Here rather than in `runs`: `tasks` reads
/// it too, and `runs` imports from `tasks`, so the two would import each other.
fn run_state(row: &AnyRow, column: usize) -> Result<RunState> {
    let state: String = row.get(column);
    RunState::parse(&state)
        .ok_or_else(|| Error::Internal(format!("a run in the unknown state '{state}'")).into())
}

/// Takes the service's row until the transaction ends: the transactions that check a
/// service-wide limit run one at a time. Taken before any client's or dataset's row.
async fn lock_service(tx: &mut sqlx::Transaction<'_, sqlx::Any>) -> Result<()> {
    sqlx::query("UPDATE service SET id = id")
        .execute(&mut **tx)
        .await?;
    Ok(())
}

impl Store {
    /// Opens (creating if need be) the store: `url` is `sqlite://FILE` or
    /// `postgres://…`; `dir` holds the files.
    pub async fn open(url: &str, dir: &Path) -> Result<Store> {
        sqlx::any::install_default_drivers();
        for sub in ["datasets", "runs"] {
            std::fs::create_dir_all(dir.join(sub))?;
        }
        let url = if url.starts_with("sqlite:") && !url.contains('?') {
            format!("{url}?mode=rwc")
        } else {
            url.to_owned()
        };
        let sqlite = url.starts_with("sqlite:");
        let pool = AnyPoolOptions::new()
            // SQLite takes one writer at a time: one connection avoids "database is locked".
            .max_connections(if sqlite { 1 } else { 8 })
            .after_connect(move |conn, _| {
                Box::pin(async move {
                    if sqlite {
                        // Durable on commit (WAL with full sync): an acknowledged request
                        // survives a crash of the service or the machine.
                        conn.execute("PRAGMA journal_mode = WAL").await?;
                        conn.execute("PRAGMA synchronous = FULL").await?;
                        conn.execute("PRAGMA foreign_keys = ON").await?;
                    }
                    Ok(())
                })
            })
            .connect(&url)
            .await
            .map_err(|e| Error::Internal(format!("cannot open the store '{url}': {e}")))?;
        migrator().run(&pool).await?;
        Ok(Store {
            pool,
            dir: dir.to_owned(),
        })
    }

    /// Closes the store's connections.
    pub async fn close(&self) {
        self.pool.close().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use venn_cloud::auth::PublicKey;

    /// [`MIGRATIONS`] is the directory, file for file, as `sqlx::migrate!` would read it.
    #[test]
    fn every_migration_file_is_compiled_in() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("migrations");
        let mut files: Vec<(i64, String, String)> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| {
                let path = e.unwrap().path();
                let name = path.file_name().unwrap().to_str().unwrap().to_owned();
                let (version, rest) = name.split_once('_').unwrap();
                let description = rest.strip_suffix(".sql").unwrap().replace('_', " ");
                let sql = std::fs::read_to_string(&path).unwrap();
                (version.parse().unwrap(), description, sql)
            })
            .collect();
        files.sort();
        let compiled: Vec<(i64, String, String)> = (MIGRATIONS.iter())
            .map(|&(v, d, s)| (v, d.to_owned(), s.to_owned()))
            .collect();
        assert_eq!(compiled, files);
    }

    /// A token for a run past its wait is refused, also before a sweep has failed the run.
    #[test]
    fn a_token_for_a_run_past_its_wait_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("store.db").display());
        let quotas = Quotas {
            max_items: 1,
            max_datasets: 2,
            max_client_items: 1,
            max_total_datasets: 2,
            max_total_items: 1,
        };
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let store = Store::open(&url, dir.path()).await.unwrap();
            let key = venn_cloud::auth::Identity::generate("a")
                .unwrap()
                .public_key();
            let key = PublicKey::parse(&key).unwrap();
            store.register("a", &key, None, 1).await.unwrap();
            let mut sealed = Vec::new();
            for name in ["x", "y"] {
                let d = store.create_dataset("a", name, quotas).await.unwrap();
                sealed.push(store.seal(&d.id, &[], quotas).await.unwrap().id);
            }
            let run = store.create_run("a", &sealed, false).await.unwrap().id;
            let err = store
                .give_token(&run, 0, "t", now() + 1)
                .await
                .unwrap_err()
                .0;
            assert!(
                matches!(err, Error::Conflict(ref m) if m.contains("too long")),
                "{err}"
            );
            assert!(!store.give_token(&run, 0, "t", now() - 60).await.unwrap());
        });
    }
}
