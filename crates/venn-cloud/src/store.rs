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

use crate::api::now;
use crate::api::{
    self, Dataset, DatasetState, Pretoken, PretokenState, Run, RunKind, RunSide, RunState, Work,
};
use crate::auth::PublicKey;
use crate::crypto::{self, Secret};
use crate::error::{Error, Result};
use axum::body::Bytes;
use sqlx::any::{AnyPoolOptions, AnyRow};
use sqlx::{AnyPool, Executor, Row};
use std::path::{Path, PathBuf};

mod workers;
pub use workers::Worker;

/// The schema's migrations (`migrations/NNNN_description.sql`), compiled in — what
/// `sqlx::migrate!` would make of the directory (the same versions, descriptions and SQL,
/// so the same checksums), without sqlx's macros and the second build of its drivers they
/// cost.
const MIGRATIONS: [(i64, &str, &str); 8] = [
    (1, "schema", include_str!("../migrations/0001_schema.sql")),
    (
        2,
        "preprocessing",
        include_str!("../migrations/0002_preprocessing.sql"),
    ),
    (
        3,
        "chunk files",
        include_str!("../migrations/0003_chunk_files.sql"),
    ),
    (
        4,
        "free deleted names",
        include_str!("../migrations/0004_free_deleted_names.sql"),
    ),
    (
        5,
        "registration",
        include_str!("../migrations/0005_registration.sql"),
    ),
    (
        6,
        "dataset grants",
        include_str!("../migrations/0006_dataset_grants.sql"),
    ),
    (
        7,
        "worker identities",
        include_str!("../migrations/0007_worker_identities.sql"),
    ),
    (
        8,
        "canonical keys",
        include_str!("../migrations/0008_canonical_keys.sql"),
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

impl From<sqlx::Error> for Error {
    fn from(e: sqlx::Error) -> Self {
        Error::Internal(format!("store: {e}"))
    }
}

impl From<sqlx::migrate::MigrateError> for Error {
    fn from(e: sqlx::migrate::MigrateError) -> Self {
        Error::Internal(format!("store migration: {e}"))
    }
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
        true => Err(Error::TooLarge(why())),
        false => Ok(()),
    }
}

/// A chunk of a dataset as stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Chunk {
    /// Its items.
    pub items: u64,
    /// The position of its first item in the dataset (0 until sealed).
    pub first_item: u64,
    /// Hex SHA-256 of its points.
    pub sha256: String,
    /// Its file.
    pub file: PathBuf,
}

/// A task handed to a worker, the file it works on (a chunk's points, or a pre-token's
/// values for the chunk) and the external worker that leased it last (`None`: the
/// service's own pool, or nobody yet).
#[derive(Clone, Debug)]
pub struct Leased {
    /// The task, as the worker is told it.
    pub task: api::Task,
    /// The file its input is read from.
    pub input: PathBuf,
    /// The external worker that leased it last.
    pub holder: Option<String>,
}

/// The side of a preprocessed run whose values are raised: the smaller (side 0 on a tie).
pub fn raised_side(items: [u64; 2]) -> u64 {
    u64::from(items[1] < items[0])
}

/// A run's kind from its row.
fn kind(parties: i64, preprocessed: i64) -> RunKind {
    match (parties, preprocessed) {
        (1, _) => RunKind::Precompute,
        (_, 0) => RunKind::Pair,
        _ => RunKind::Preprocessed,
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
        Some(row) => Error::Conflict(format!("dataset {dataset} is {}", row.get::<String, _>(0))),
        None => no_dataset(dataset),
    })
}

/// What a caller is told of a dataset that is missing, or not theirs to see.
fn no_dataset(id: &str) -> Error {
    Error::NotFound(format!("no dataset {id}"))
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

/// Takes the service's row until the transaction ends: the transactions that check a
/// service-wide limit run one at a time. Taken before any client's or dataset's row.
async fn lock_service(tx: &mut sqlx::Transaction<'_, sqlx::Any>) -> Result<()> {
    sqlx::query("UPDATE service SET id = id")
        .execute(&mut **tx)
        .await?;
    Ok(())
}

/// The datasets `owner` keeps (open or sealed) and their items in all.
async fn usage(tx: &mut sqlx::Transaction<'_, sqlx::Any>, owner: &str) -> Result<(u64, u64)> {
    kept(tx, "d.owner = $1 AND", Some(owner)).await
}

/// The datasets all clients keep (open or sealed) and their items in all.
async fn total_usage(tx: &mut sqlx::Transaction<'_, sqlx::Any>) -> Result<(u64, u64)> {
    kept(tx, "", None).await
}

/// The datasets kept (open or sealed) and their items, of those meeting `condition`
/// (followed by AND; `$1` is `owner`).
async fn kept(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    condition: &str,
    owner: Option<&str>,
) -> Result<(u64, u64)> {
    let sql = format!(
        "SELECT COUNT(DISTINCT d.id), CAST(SUM(c.items) AS BIGINT) FROM datasets d \
         LEFT JOIN chunks c ON c.dataset = d.id WHERE {condition} d.state <> 'deleted'"
    );
    let mut query = sqlx::query(&sql);
    if let Some(owner) = owner {
        query = query.bind(owner);
    }
    let row = query.fetch_one(&mut **tx).await?;
    let datasets: i64 = row.get(0);
    let items: Option<i64> = row.try_get(1).ok().flatten();
    Ok((datasets as u64, items.unwrap_or(0) as u64))
}

/// Chunks and items uploaded to a dataset so far.
async fn uploaded<'e>(
    db: impl sqlx::Executor<'e, Database = sqlx::Any>,
    dataset: &str,
) -> Result<(u64, u64)> {
    let row =
        sqlx::query("SELECT COUNT(*), CAST(SUM(items) AS BIGINT) FROM chunks WHERE dataset = $1")
            .bind(dataset)
            .fetch_one(db)
            .await?;
    let chunks: i64 = row.get(0);
    let items: Option<i64> = row.try_get(1).ok().flatten();
    Ok((chunks as u64, items.unwrap_or(0) as u64))
}

/// The hash under which an invite is kept (hex SHA-256).
fn invite_hash(invite: &str) -> String {
    hex::encode(<sha2::Sha256 as sha2::Digest>::digest(invite.as_bytes()))
}

/// Refuses an invite that is unknown or used.
async fn check_invite_unused(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    invite: &str,
) -> Result<()> {
    let unused = sqlx::query("SELECT 1 FROM invites WHERE hash = $1 AND used_by IS NULL")
        .bind(invite_hash(invite))
        .fetch_optional(&mut **tx)
        .await?;
    unused.map(|_| ()).ok_or_else(invite_refused)
}

fn invite_refused() -> Error {
    Error::Forbidden("this invite is not one of this service's, or was used".into())
}

/// Marks `invite` used by `client`, refusing one that is unknown or used.
async fn use_invite(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    invite: &str,
    client: &str,
) -> Result<()> {
    let used = sqlx::query("UPDATE invites SET used_by = $1 WHERE hash = $2 AND used_by IS NULL")
        .bind(client)
        .bind(invite_hash(invite))
        .execute(&mut **tx)
        .await?;
    match used.rows_affected() {
        1 => Ok(()),
        _ => Err(invite_refused()),
    }
}

/// Refuses a run that no longer waits for tokens or scalars, or that was created before
/// `expired` (it waited past the token wait: a late token must not start it).
async fn refuse_unless_waiting(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    run: &str,
    expired: i64,
) -> Result<()> {
    let row = sqlx::query("SELECT state, created FROM runs WHERE id = $1")
        .bind(run)
        .fetch_one(&mut **tx)
        .await?;
    match run_state(&row, 0)? {
        RunState::Tokens if row.get::<i64, _>(1) < expired => Err(Error::Conflict(format!(
            "run {run} waited too long for its tokens or scalars"
        ))),
        RunState::Tokens => Ok(()),
        state => Err(Error::Conflict(format!("run {run} is {state}"))),
    }
}

/// Refuses a token given before (to a run or as a pre-token): a token serves one run.
async fn refuse_used_token(tx: &mut sqlx::Transaction<'_, sqlx::Any>, token: &str) -> Result<()> {
    let used = sqlx::query("SELECT run FROM run_sides WHERE token = $1")
        .bind(token)
        .fetch_optional(&mut **tx)
        .await?;
    match used {
        Some(_) => Err(Error::Conflict(
            "this token was given before: a token serves one run".into(),
        )),
        None => Ok(()),
    }
}

/// The condition on a pre-token's run `r` that its values are on disk: computing or
/// computed, and not used by a run that is over (whose end removed them).
const VALUES_KEPT: &str = "r.state IN ('tokens', 'computing', 'done') AND NOT EXISTS \
    (SELECT 1 FROM run_sides u JOIN runs v ON v.id = u.run \
    WHERE u.pretoken = r.id AND v.state IN ('done', 'failed'))";

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

    // --- clients and request nonces ---------------------------------------------------

    /// Registers `name` with `public_key` (kept in its canonical form, so that the unique
    /// check compares keys), one of at most `max_clients`, using `invite` if given
    /// (refused unless it is an invite not used before); a name or a key is registered
    /// once. All in one transaction: an invite registers one client.
    pub async fn register(
        &self,
        name: &str,
        public_key: &PublicKey,
        invite: Option<&str>,
        max_clients: u64,
    ) -> Result<()> {
        let mut tx = self.pool.begin().await?;
        lock_service(&mut tx).await?;
        // The invite first: without one, nothing (not even whether a name is taken) is told.
        if let Some(invite) = invite {
            check_invite_unused(&mut tx, invite).await?;
        }
        let clients: i64 = sqlx::query("SELECT COUNT(*) FROM clients")
            .fetch_one(&mut *tx)
            .await?
            .get(0);
        at_most(clients as u64 + 1, max_clients, || {
            format!("this service registers at most {max_clients} clients, and has them")
        })?;
        let inserted = sqlx::query(
            "INSERT INTO clients (name, public_key, created) VALUES ($1, $2, $3) \
             ON CONFLICT DO NOTHING",
        )
        .bind(name)
        .bind(public_key.as_hex())
        .bind(now())
        .execute(&mut *tx)
        .await?;
        if inserted.rows_affected() != 1 {
            return Err(Error::Conflict(format!(
                "the client name '{name}' or its key is registered already"
            )));
        }
        if let Some(invite) = invite {
            use_invite(&mut tx, invite, name).await?;
        }
        tx.commit().await?;
        Ok(())
    }

    /// Makes `count` single-use invites to register, keeping only their hashes.
    pub async fn create_invites(&self, count: u64) -> Result<Vec<String>> {
        let mut tx = self.pool.begin().await?;
        let mut invites = Vec::new();
        for _ in 0..count {
            let mut token = [0u8; api::INVITE_BYTES];
            api::getrandom(&mut token);
            let token = hex::encode(token);
            sqlx::query("INSERT INTO invites (hash, created) VALUES ($1, $2)")
                .bind(invite_hash(&token))
                .bind(now())
                .execute(&mut *tx)
                .await?;
            invites.push(token);
        }
        tx.commit().await?;
        Ok(invites)
    }

    /// A registered client's public key (hex); refused for a client disabled because its
    /// key was registered first under another name (see [`Store::disabled_clients`]).
    pub async fn public_key(&self, name: &str) -> Result<Option<String>> {
        let row = sqlx::query("SELECT public_key, duplicate_of FROM clients WHERE name = $1")
            .bind(name)
            .fetch_optional(&self.pool)
            .await?;
        match row {
            Some(r) if r.get::<Option<String>, _>(1).is_some() => {
                Err(Error::Unauthenticated(format!(
                    "client {name} is disabled: its key was registered first under another \
                     name, which keeps it (ask the service's operator)"
                )))
            }
            row => Ok(row.map(|r| r.get(0))),
        }
    }

    /// The clients disabled, by name, with the client that kept their key: in a store of
    /// a version that compared keys as sent, one key could be registered under several
    /// names (in different cases); the migration to canonical keys kept the oldest
    /// registration and disabled the others, moving nothing between them.
    pub async fn disabled_clients(&self) -> Result<Vec<(String, String)>> {
        let rows = sqlx::query(
            "SELECT name, duplicate_of FROM clients WHERE duplicate_of IS NOT NULL ORDER BY name",
        )
        .fetch_all(&self.pool)
        .await?;
        Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
    }

    /// Records a signed request's nonce; refuses one seen before (a replay). Nonces older
    /// than the signature window are forgotten: their requests are refused by time.
    pub async fn remember_nonce(&self, client: &str, nonce: &str, at: i64) -> Result<()> {
        sqlx::query("DELETE FROM nonces WHERE seen < $1")
            .bind(at - 2 * api::SIGNATURE_WINDOW)
            .execute(&self.pool)
            .await?;
        let inserted = sqlx::query(
            "INSERT INTO nonces (client, nonce, seen) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING",
        )
        .bind(client)
        .bind(nonce)
        .bind(at)
        .execute(&self.pool)
        .await?;
        match inserted.rows_affected() {
            1 => Ok(()),
            _ => Err(Error::Unauthenticated("a replayed request".into())),
        }
    }

    // --- datasets -----------------------------------------------------------------------

    /// Opens a dataset named `name` for `owner`'s upload, within `owner`'s quota of
    /// datasets; a name is used by one dataset at a time (a deleted one's is free again).
    pub async fn create_dataset(&self, owner: &str, name: &str, quotas: Quotas) -> Result<Dataset> {
        let id = api::new_id();
        let mut tx = self.pool.begin().await?;
        lock_service(&mut tx).await?;
        lock_client(&mut tx, owner).await?;
        quotas.check_total_datasets(total_usage(&mut tx).await?.0 + 1)?;
        if usage(&mut tx, owner).await?.0 >= quotas.max_datasets {
            return Err(Error::TooLarge(format!(
                "a client keeps at most {} datasets here: delete one first",
                quotas.max_datasets
            )));
        }
        let inserted = sqlx::query(
            "INSERT INTO datasets (id, owner, name, live_name, state, items, chunks, created) \
             VALUES ($1, $2, $3, $3, 'open', 0, 0, $4) ON CONFLICT DO NOTHING",
        )
        .bind(&id)
        .bind(owner)
        .bind(name)
        .bind(now())
        .execute(&mut *tx)
        .await?;
        if inserted.rows_affected() != 1 {
            return Err(Error::Conflict(format!(
                "you have a dataset named '{name}' already"
            )));
        }
        tx.commit().await?;
        self.dataset(&id).await
    }

    /// A dataset by id.
    pub async fn dataset(&self, id: &str) -> Result<Dataset> {
        api::check_id(id)?;
        let row =
            sqlx::query("SELECT id, name, owner, state, items, chunks FROM datasets WHERE id = $1")
                .bind(id)
                .fetch_optional(&self.pool)
                .await?
                .ok_or_else(|| no_dataset(id))?;
        let mut d = dataset_of(&row)?;
        if d.state == DatasetState::Open {
            let (chunks, items) = uploaded(&self.pool, id).await?;
            d.chunks = chunks;
            d.items = items;
        }
        Ok(d)
    }

    /// A dataset that `owner` owns. Another's is answered as a missing one is: whether
    /// an id names a dataset is none of the caller's business.
    pub async fn own_dataset(&self, owner: &str, id: &str) -> Result<Dataset> {
        match self.dataset(id).await? {
            d if d.owner == owner => Ok(d),
            _ => Err(no_dataset(id)),
        }
    }

    /// A dataset that `client` may see and name in a run: its own, or one whose owner
    /// granted it to `client` ([`Store::grant`]). Any other is answered as a missing one.
    pub async fn visible_dataset(&self, client: &str, id: &str) -> Result<Dataset> {
        let d = self.dataset(id).await?;
        if d.owner == client {
            return Ok(d);
        }
        let granted = sqlx::query("SELECT 1 FROM grants WHERE dataset = $1 AND client = $2")
            .bind(id)
            .bind(client)
            .fetch_optional(&self.pool)
            .await?;
        granted.map(|_| d).ok_or_else(|| no_dataset(id))
    }

    /// Lets `client` see `owner`'s dataset `id` (its owner and size) and name it in a
    /// run: what an owner does for the partner it paired with, before that partner
    /// creates their run. Granting again changes nothing. A name that is not registered
    /// is granted nothing, and the caller is not told: whether a name is registered is
    /// none of its business (nor does whoever registers the name later see the dataset).
    pub async fn grant(&self, owner: &str, id: &str, client: &str) -> Result<()> {
        self.own_dataset(owner, id).await?;
        sqlx::query(
            "INSERT INTO grants (dataset, client, created) \
             SELECT $1, name, $2 FROM clients WHERE name = $3 ON CONFLICT DO NOTHING",
        )
        .bind(id)
        .bind(now())
        .bind(client)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// `owner`'s datasets.
    pub async fn datasets_of(&self, owner: &str) -> Result<Vec<Dataset>> {
        let rows = sqlx::query("SELECT id FROM datasets WHERE owner = $1 ORDER BY created, id")
            .bind(owner)
            .fetch_all(&self.pool)
            .await?;
        let mut out = Vec::with_capacity(rows.len());
        for r in rows {
            out.push(self.dataset(&r.get::<String, _>(0)).await?);
        }
        Ok(out)
    }

    fn dataset_dir(&self, id: &str) -> PathBuf {
        self.dir.join("datasets").join(id)
    }

    /// Stores chunk `idx` of an open dataset: `points` were checked by the caller. The
    /// chunk goes to a new file, in place and synced before its row is committed in the
    /// transaction that checks that the dataset is still open and within `quotas`. A
    /// chunk may be uploaded again until the dataset is sealed (the last upload counts);
    /// a refused upload's file is removed.
    pub async fn put_chunk(
        &self,
        dataset: &str,
        idx: u64,
        points: Bytes,
        quotas: Quotas,
    ) -> Result<String> {
        let sha = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(&points));
        let items = (points.len() / crate::crypto::ITEM_BYTES) as u64;
        let file = format!("{idx:08}-{}", api::new_id());
        let (dir, path) = (
            self.dataset_dir(dataset),
            self.dataset_dir(dataset).join(&file),
        );
        let target = path.clone();
        let written = blocking(move || {
            std::fs::create_dir_all(&dir)?;
            Ok(venn::util::files::write_new(&target, &points, 0o600)?)
        })
        .await;
        let recorded = match written {
            Ok(()) => {
                self.record_chunk(dataset, idx, items, &sha, &file, quotas)
                    .await
            }
            Err(e) => Err(e),
        };
        match recorded {
            Ok(replaced) => {
                if let Some(old) = replaced {
                    let _ = std::fs::remove_file(self.dataset_dir(dataset).join(old));
                }
                Ok(sha)
            }
            Err(e) => Err(self.refused_upload(dataset, &path, e).await),
        }
    }

    /// Records an uploaded chunk's row (replacing an earlier upload's, whose file it
    /// returns), refused unless the dataset is open and stays within `quotas`.
    async fn record_chunk(
        &self,
        dataset: &str,
        idx: u64,
        items: u64,
        sha: &str,
        file: &str,
        quotas: Quotas,
    ) -> Result<Option<String>> {
        let mut tx = self.pool.begin().await?;
        lock_service(&mut tx).await?;
        let owner = lock_owned_dataset(&mut tx, dataset, DatasetState::Open).await?;
        let replaced =
            sqlx::query("SELECT items, file FROM chunks WHERE dataset = $1 AND idx = $2")
                .bind(dataset)
                .bind(idx as i64)
                .fetch_optional(&mut *tx)
                .await?;
        let replaced_items = replaced.as_ref().map_or(0, |r| r.get::<i64, _>(0) as u64);
        let (_, so_far) = uploaded(&mut *tx, dataset).await?;
        quotas.check_dataset(so_far - replaced_items + items)?;
        let (_, kept) = usage(&mut tx, &owner).await?;
        quotas.check_client(kept - replaced_items + items, kept)?;
        let (_, total) = total_usage(&mut tx).await?;
        quotas.check_total_items(total - replaced_items + items)?;
        sqlx::query("DELETE FROM chunks WHERE dataset = $1 AND idx = $2")
            .bind(dataset)
            .bind(idx as i64)
            .execute(&mut *tx)
            .await?;
        sqlx::query(
            "INSERT INTO chunks (dataset, idx, items, first_item, sha256, file) \
             VALUES ($1, $2, $3, 0, $4, $5)",
        )
        .bind(dataset)
        .bind(idx as i64)
        .bind(items as i64)
        .bind(sha)
        .bind(file)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(replaced.map(|r| r.get(1)))
    }

    /// Removes a refused upload's file at `path` and says why it was refused: `error`, or
    /// that the dataset is no longer open (a deletion may have removed the directory under
    /// the upload). A deletion leaves its dataset's directory to the last upload out.
    async fn refused_upload(&self, dataset: &str, path: &Path, error: Error) -> Error {
        let _ = std::fs::remove_file(path);
        match self.dataset(dataset).await {
            Ok(d) if d.state == DatasetState::Open => error,
            Ok(d) => {
                if d.state == DatasetState::Deleted {
                    let _ = std::fs::remove_dir(self.dataset_dir(dataset));
                }
                Error::Conflict(format!("dataset {dataset} is {}", d.state))
            }
            Err(e) => e,
        }
    }

    /// The chunks of a dataset, in order.
    pub async fn chunks(&self, dataset: &str) -> Result<Vec<Chunk>> {
        self.chunks_in(&self.pool, dataset).await
    }

    /// The chunks of a dataset, in order, as `db` sees them; refused if one is missing.
    async fn chunks_in<'e>(
        &self,
        db: impl sqlx::Executor<'e, Database = sqlx::Any>,
        dataset: &str,
    ) -> Result<Vec<Chunk>> {
        let rows = sqlx::query(
            "SELECT idx, items, first_item, sha256, file FROM chunks WHERE dataset = $1 \
             ORDER BY idx",
        )
        .bind(dataset)
        .fetch_all(db)
        .await?;
        let mut out = Vec::with_capacity(rows.len());
        for (expected, r) in rows.iter().enumerate() {
            let idx: i64 = r.get(0);
            if idx as usize != expected {
                return Err(Error::Conflict(format!("chunk {expected} is missing")));
            }
            out.push(Chunk {
                items: r.get::<i64, _>(1) as u64,
                first_item: r.get::<i64, _>(2) as u64,
                sha256: r.get(3),
                file: self.dataset_dir(dataset).join(r.get::<String, _>(4)),
            });
        }
        Ok(out)
    }

    /// Seals an open dataset whose chunks are still the ones `checked` by the caller (their
    /// files read, no ciphertext twice) and within `quotas`: records each chunk's first
    /// item and the totals, in one transaction.
    pub async fn seal(&self, dataset: &str, checked: &[Chunk], quotas: Quotas) -> Result<Dataset> {
        let mut tx = self.pool.begin().await?;
        let owner = lock_owned_dataset(&mut tx, dataset, DatasetState::Open).await?;
        if self.chunks_in(&mut *tx, dataset).await? != checked {
            return Err(Error::Conflict(format!(
                "dataset {dataset} changed while it was being sealed: seal it again"
            )));
        }
        let items: u64 = checked.iter().map(|c| c.items).sum();
        quotas.check_dataset(items)?;
        let (_, kept) = usage(&mut tx, &owner).await?;
        quotas.check_client(kept, kept)?;
        let mut first = 0u64;
        for (idx, c) in checked.iter().enumerate() {
            sqlx::query("UPDATE chunks SET first_item = $1 WHERE dataset = $2 AND idx = $3")
                .bind(first as i64)
                .bind(dataset)
                .bind(idx as i64)
                .execute(&mut *tx)
                .await?;
            first += c.items;
        }
        sqlx::query("UPDATE datasets SET state = 'sealed', items = $1, chunks = $2 WHERE id = $3")
            .bind(first as i64)
            .bind(checked.len() as i64)
            .bind(dataset)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        self.dataset(dataset).await
    }

    /// Deletes a dataset's files and marks it deleted; runs that still need it fail.
    pub async fn delete_dataset(&self, dataset: &str) -> Result<Dataset> {
        let mut tx = self.pool.begin().await?;
        sqlx::query("UPDATE datasets SET state = 'deleted', live_name = '/' || id WHERE id = $1")
            .bind(dataset)
            .execute(&mut *tx)
            .await?;
        let files: Vec<String> = sqlx::query("SELECT file FROM chunks WHERE dataset = $1")
            .bind(dataset)
            .fetch_all(&mut *tx)
            .await?
            .iter()
            .map(|r| r.get(0))
            .collect();
        sqlx::query("DELETE FROM chunks WHERE dataset = $1")
            .bind(dataset)
            .execute(&mut *tx)
            .await?;
        let open = "state IN ('tokens', 'computing') \
                    AND id IN (SELECT run FROM run_sides WHERE dataset = $1)";
        let failed: Vec<String> = sqlx::query(&format!("SELECT id FROM runs WHERE {open}"))
            .bind(dataset)
            .fetch_all(&mut *tx)
            .await?
            .iter()
            .map(|r| r.get(0))
            .collect();
        sqlx::query(&format!(
            "UPDATE runs SET state = 'failed', error = 'a dataset was deleted' WHERE {open}"
        ))
        .bind(dataset)
        .execute(&mut *tx)
        .await?;
        sqlx::query(
            "UPDATE runs SET state = 'failed', error = 'its dataset was deleted' \
             WHERE parties = 1 AND state = 'done' \
             AND id IN (SELECT run FROM run_sides WHERE dataset = $1)",
        )
        .bind(dataset)
        .execute(&mut *tx)
        .await?;
        let pretokens: Vec<String> = sqlx::query(
            "SELECT r.id FROM runs r JOIN run_sides s ON s.run = r.id \
             WHERE r.parties = 1 AND s.dataset = $1",
        )
        .bind(dataset)
        .fetch_all(&mut *tx)
        .await?
        .iter()
        .map(|r| r.get(0))
        .collect();
        tx.commit().await?;
        self.remove_dataset_files(dataset, &files)?;
        for run in &failed {
            self.discard(run).await?;
        }
        for pretoken in &pretokens {
            self.remove_files(pretoken)?;
        }
        self.dataset(dataset).await
    }

    /// Removes a deleted dataset's chunk `files` and its directory. An upload refused
    /// meanwhile may still have its file there: it removes the directory when it goes
    /// (see [`refused_upload`](Self::refused_upload)).
    fn remove_dataset_files(&self, dataset: &str, files: &[String]) -> Result<()> {
        let dir = self.dataset_dir(dataset);
        for f in files {
            match std::fs::remove_file(dir.join(f)) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e.into()),
                _ => {}
            }
        }
        match std::fs::remove_dir_all(&dir) {
            Err(e)
                if !matches!(
                    e.kind(),
                    std::io::ErrorKind::NotFound | std::io::ErrorKind::DirectoryNotEmpty
                ) =>
            {
                Err(e.into())
            }
            _ => Ok(()),
        }
    }

    // --- runs -----------------------------------------------------------------------------

    /// Creates a run over `datasets` (sides in this order), which are sealed (and stay so
    /// until it is in: a deletion then fails it).
    pub async fn create_run(
        &self,
        creator: &str,
        datasets: &[String],
        preprocessed: bool,
    ) -> Result<Run> {
        let id = api::new_id();
        let mut tx = self.pool.begin().await?;
        // In one order, so that two runs over the same datasets do not wait on each other.
        let mut sorted: Vec<&String> = datasets.iter().collect();
        sorted.sort();
        for d in sorted {
            lock_dataset(&mut tx, d, DatasetState::Sealed).await?;
        }
        sqlx::query(
            "INSERT INTO runs (id, creator, parties, state, created, preprocessed) \
             VALUES ($1, $2, $3, 'tokens', $4, $5)",
        )
        .bind(&id)
        .bind(creator)
        .bind(datasets.len() as i64)
        .bind(now())
        .bind(i64::from(preprocessed))
        .execute(&mut *tx)
        .await?;
        for (side, d) in datasets.iter().enumerate() {
            sqlx::query("INSERT INTO run_sides (run, side, dataset) VALUES ($1, $2, $3)")
                .bind(&id)
                .bind(side as i64)
                .bind(d)
                .execute(&mut *tx)
                .await?;
        }
        tx.commit().await?;
        std::fs::create_dir_all(self.run_dir(&id))?;
        self.run(&id).await
    }

    /// A run by id.
    pub async fn run(&self, id: &str) -> Result<Run> {
        api::check_id(id)?;
        let row = sqlx::query(
            "SELECT state, started, finished, matches, error, parties, preprocessed \
             FROM runs WHERE id = $1",
        )
        .bind(id)
        .fetch_optional(&self.pool)
        .await?
        .ok_or_else(|| Error::NotFound(format!("no run {id}")))?;
        let started: Option<i64> = row.try_get(1).ok().flatten();
        let finished: Option<i64> = row.try_get(2).ok().flatten();
        let matches: Option<i64> = row.try_get(3).ok().flatten();
        let sides = sqlx::query(
            "SELECT s.dataset, d.owner, d.items, COALESCE(s.token, s.delta) FROM run_sides s \
             JOIN datasets d ON d.id = s.dataset WHERE s.run = $1 ORDER BY s.side",
        )
        .bind(id)
        .fetch_all(&self.pool)
        .await?
        .iter()
        .map(|r| RunSide {
            dataset: r.get(0),
            owner: r.get(1),
            items: r.get::<i64, _>(2) as u64,
            token_given: r.try_get::<Option<String>, _>(3).ok().flatten().is_some(),
        })
        .collect();
        let tasks = sqlx::query(
            "SELECT COUNT(*), CAST(SUM(CASE WHEN state = 'done' THEN 1 ELSE 0 END) AS BIGINT) \
             FROM tasks WHERE run = $1",
        )
        .bind(id)
        .fetch_one(&self.pool)
        .await?;
        Ok(Run {
            id: id.to_owned(),
            kind: kind(row.get(5), row.get(6)),
            state: run_state(&row, 0)?,
            sides,
            tasks: tasks.get::<i64, _>(0) as u64,
            tasks_done: tasks
                .try_get::<Option<i64>, _>(1)
                .ok()
                .flatten()
                .unwrap_or(0) as u64,
            matches: matches.map(|m| m as u64),
            seconds: started.zip(finished).map(|(s, f)| (f - s).max(0) as u64),
            error: row.try_get(4).ok().flatten(),
        })
    }

    /// The runs in a state.
    pub async fn runs_in(&self, state: RunState) -> Result<Vec<String>> {
        Ok(sqlx::query("SELECT id FROM runs WHERE state = $1")
            .bind(state.as_str())
            .fetch_all(&self.pool)
            .await?
            .iter()
            .map(|r| r.get(0))
            .collect())
    }

    /// Records the token of side `side` (checked by the caller) of a run created at
    /// `expired` or later. A side's token is given once, and a token once in the life of
    /// the service. When the last side's token arrives, the run's tasks are created and it
    /// starts computing; returns whether it did.
    pub async fn give_token(
        &self,
        run: &str,
        side: u64,
        token: &str,
        expired: i64,
    ) -> Result<bool> {
        let mut tx = self.pool.begin().await?;
        refuse_unless_waiting(&mut tx, run, expired).await?;
        refuse_used_token(&mut tx, token).await?;
        let updated = sqlx::query(
            "UPDATE run_sides SET token = $1 WHERE run = $2 AND side = $3 AND token IS NULL",
        )
        .bind(token)
        .bind(run)
        .bind(side as i64)
        .execute(&mut *tx)
        .await?;
        if updated.rows_affected() != 1 {
            return Err(Error::Conflict(format!(
                "side {side} of run {run} has its token already"
            )));
        }
        let missing: i64 =
            sqlx::query("SELECT COUNT(*) FROM run_sides WHERE run = $1 AND token IS NULL")
                .bind(run)
                .fetch_one(&mut *tx)
                .await?
                .get(0);
        if missing > 0 {
            tx.commit().await?;
            return Ok(false);
        }
        start(&mut tx, run, None).await?;
        tx.commit().await?;
        Ok(true)
    }

    /// Opens a pre-token's run (docs/cloud.md, Pre-tokens): one side, `dataset` (sealed,
    /// and kept so until the run is in; keeping fewer than `max_pretokens` pre-tokens'
    /// values), paired with `token` (checked; used once in the life of the service, as
    /// a run's token is), computing at once.
    pub async fn create_pretoken(
        &self,
        creator: &str,
        dataset: &str,
        token: &str,
        label: &str,
        max_pretokens: u64,
    ) -> Result<Pretoken> {
        let id = api::new_id();
        let mut tx = self.pool.begin().await?;
        lock_dataset(&mut tx, dataset, DatasetState::Sealed).await?;
        let kept: i64 = sqlx::query(&format!(
            "SELECT COUNT(*) FROM runs r JOIN run_sides s ON s.run = r.id \
             WHERE r.parties = 1 AND s.dataset = $1 AND {VALUES_KEPT}"
        ))
        .bind(dataset)
        .fetch_one(&mut *tx)
        .await?
        .get(0);
        if kept as u64 >= max_pretokens {
            return Err(Error::TooLarge(format!(
                "a dataset keeps at most {max_pretokens} pre-tokens here: use or withdraw one \
                 first"
            )));
        }
        refuse_used_token(&mut tx, token).await?;
        sqlx::query(
            "INSERT INTO runs (id, creator, parties, state, created, label) \
             VALUES ($1, $2, 1, 'tokens', $3, $4)",
        )
        .bind(&id)
        .bind(creator)
        .bind(now())
        .bind(label)
        .execute(&mut *tx)
        .await?;
        sqlx::query("INSERT INTO run_sides (run, side, dataset, token) VALUES ($1, 0, $2, $3)")
            .bind(&id)
            .bind(dataset)
            .bind(token)
            .execute(&mut *tx)
            .await?;
        start(&mut tx, &id, None).await?;
        tx.commit().await?;
        std::fs::create_dir_all(self.run_dir(&id))?;
        Ok(Pretoken {
            id,
            dataset: dataset.to_owned(),
            label: label.to_owned(),
            state: PretokenState::Computing,
        })
    }

    /// A pre-token by id: its dataset and state.
    pub async fn pretoken(&self, id: &str) -> Result<(String, PretokenState)> {
        api::check_id(id)?;
        let row = sqlx::query(
            "SELECT s.dataset FROM runs r JOIN run_sides s ON s.run = r.id \
             WHERE r.id = $1 AND r.parties = 1",
        )
        .bind(id)
        .fetch_optional(&self.pool)
        .await?
        .ok_or_else(|| Error::NotFound(format!("no pre-token {id}")))?;
        let dataset: String = row.get(0);
        let state = self
            .pretokens(&dataset)
            .await?
            .into_iter()
            .find(|p| p.id == id)
            .map_or(PretokenState::Failed, |p| p.state);
        Ok((dataset, state))
    }

    /// Fails the runs that have waited for tokens or scalars since before `expired` (a
    /// pre-token given to one would otherwise keep its values on disk for good); each only
    /// if it still waits (its last token may have come meanwhile).
    pub async fn expire_waiting(&self, expired: i64) -> Result<()> {
        let stale: Vec<String> = sqlx::query(
            "SELECT id FROM runs WHERE state = 'tokens' AND parties > 1 AND created < $1",
        )
        .bind(expired)
        .fetch_all(&self.pool)
        .await?
        .iter()
        .map(|r| r.get(0))
        .collect();
        for run in stale {
            let failed = sqlx::query(
                "UPDATE runs SET state = 'failed', error = $1, finished = $2 \
                 WHERE id = $3 AND state = 'tokens'",
            )
            .bind("not every token or scalar came in time")
            .bind(now())
            .bind(&run)
            .execute(&self.pool)
            .await?;
            if failed.rows_affected() == 1 {
                self.discard(&run).await?;
            }
        }
        Ok(())
    }

    /// Removes the values of pre-tokens used by runs that are over (left behind by a
    /// crash between a run's end and their removal).
    pub async fn sweep_used_pretokens(&self) -> Result<()> {
        let used: Vec<String> = sqlx::query(
            "SELECT s.pretoken FROM run_sides s JOIN runs r ON r.id = s.run \
             WHERE s.pretoken IS NOT NULL AND r.state IN ('done', 'failed')",
        )
        .fetch_all(&self.pool)
        .await?
        .iter()
        .map(|r| r.get(0))
        .collect();
        for pretoken in used {
            self.remove_files(&pretoken)?;
        }
        Ok(())
    }

    /// A dataset's pre-tokens, oldest first.
    pub async fn pretokens(&self, dataset: &str) -> Result<Vec<Pretoken>> {
        let rows = sqlx::query(
            "SELECT r.id, r.label, r.state, \
             (SELECT COUNT(*) FROM run_sides u WHERE u.pretoken = r.id) \
             FROM runs r JOIN run_sides s ON s.run = r.id \
             WHERE r.parties = 1 AND s.dataset = $1 ORDER BY r.created, r.id",
        )
        .bind(dataset)
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|r| {
                let state = match (run_state(r, 2)?, r.get::<i64, _>(3)) {
                    (_, 1..) => PretokenState::Used,
                    (RunState::Done, _) => PretokenState::Ready,
                    (RunState::Failed, _) => PretokenState::Failed,
                    (RunState::Tokens | RunState::Computing, _) => PretokenState::Computing,
                };
                Ok(Pretoken {
                    id: r.get(0),
                    dataset: dataset.to_owned(),
                    label: r.get(1),
                    state,
                })
            })
            .collect()
    }

    /// Records side `side`'s part of a preprocessed run created at `expired` or later: a
    /// ready pre-token of the side's dataset, never used before (marked used in the same
    /// transaction), and its scalar (checked by the caller). When both sides' parts are
    /// in, the smaller side's tasks are created and the run starts computing; returns
    /// whether it did.
    pub async fn give_scalar(
        &self,
        run: &str,
        side: u64,
        pretoken: &str,
        delta: &str,
        expired: i64,
    ) -> Result<bool> {
        api::check_id(pretoken)?;
        let mut tx = self.pool.begin().await?;
        refuse_unless_waiting(&mut tx, run, expired).await?;
        let dataset: String =
            sqlx::query("SELECT dataset FROM run_sides WHERE run = $1 AND side = $2")
                .bind(run)
                .bind(side as i64)
                .fetch_one(&mut *tx)
                .await?
                .get(0);
        let found = sqlx::query(
            "SELECT r.state, s.dataset FROM runs r JOIN run_sides s ON s.run = r.id \
             WHERE r.id = $1 AND r.parties = 1",
        )
        .bind(pretoken)
        .fetch_optional(&mut *tx)
        .await?
        .ok_or_else(|| Error::NotFound(format!("no pre-token {pretoken}")))?;
        if found.get::<String, _>(1) != dataset {
            return Err(Error::Forbidden(format!(
                "pre-token {pretoken} is not of dataset {dataset}"
            )));
        }
        let pretoken_state = run_state(&found, 0)?;
        if pretoken_state != RunState::Done {
            return Err(Error::Conflict(format!(
                "pre-token {pretoken} is not ready (its run is {pretoken_state})"
            )));
        }
        let used = sqlx::query("SELECT run FROM run_sides WHERE pretoken = $1")
            .bind(pretoken)
            .fetch_optional(&mut *tx)
            .await?;
        if used.is_some() {
            return Err(Error::Conflict(format!(
                "pre-token {pretoken} was used before: a pre-token serves one run"
            )));
        }
        let updated = sqlx::query(
            "UPDATE run_sides SET pretoken = $1, delta = $2 \
             WHERE run = $3 AND side = $4 AND token IS NULL AND delta IS NULL",
        )
        .bind(pretoken)
        .bind(delta)
        .bind(run)
        .bind(side as i64)
        .execute(&mut *tx)
        .await?;
        if updated.rows_affected() != 1 {
            return Err(Error::Conflict(format!(
                "side {side} of run {run} has its scalar already"
            )));
        }
        let sides = sqlx::query(
            "SELECT d.items, s.delta FROM run_sides s JOIN datasets d ON d.id = s.dataset \
             WHERE s.run = $1 ORDER BY s.side",
        )
        .bind(run)
        .fetch_all(&mut *tx)
        .await?;
        if sides
            .iter()
            .any(|r| r.try_get::<Option<String>, _>(1).ok().flatten().is_none())
        {
            tx.commit().await?;
            return Ok(false);
        }
        let items: [u64; 2] = [0, 1].map(|i| sides[i].get::<i64, _>(0) as u64);
        start(&mut tx, run, Some(raised_side(items))).await?;
        tx.commit().await?;
        Ok(true)
    }

    /// The datasets of a run by side.
    pub async fn run_datasets(&self, run: &str) -> Result<Vec<String>> {
        Ok(
            sqlx::query("SELECT dataset FROM run_sides WHERE run = $1 ORDER BY side")
                .bind(run)
                .fetch_all(&self.pool)
                .await?
                .iter()
                .map(|r| r.get(0))
                .collect(),
        )
    }

    /// The pre-tokens a preprocessed run used, by side.
    pub async fn run_pretokens(&self, run: &str) -> Result<Vec<String>> {
        Ok(sqlx::query(
            "SELECT pretoken FROM run_sides WHERE run = $1 AND pretoken IS NOT NULL \
             ORDER BY side",
        )
        .bind(run)
        .fetch_all(&self.pool)
        .await?
        .iter()
        .map(|r| r.get(0))
        .collect())
    }

    // --- tasks ----------------------------------------------------------------------------

    /// Leases the next task that is pending or whose lease has expired, for
    /// `lease_seconds`, to external worker `worker` (`None`: the service's own pool):
    /// runs' tasks before pre-tokens' (precomputation is what the service does while
    /// idle), older runs first. The caller serialises leasing (one service process).
    pub async fn lease(&self, lease_seconds: u64, worker: Option<&str>) -> Result<Option<Leased>> {
        let at = now();
        let row = sqlx::query(
            "SELECT t.run, t.side, t.chunk FROM tasks t JOIN runs r ON r.id = t.run \
             WHERE r.state = 'computing' \
             AND (t.state = 'pending' OR (t.state = 'leased' AND t.lease_until < $1)) \
             ORDER BY CASE WHEN r.parties = 1 THEN 1 ELSE 0 END, r.started, t.run, t.side, \
             t.chunk LIMIT 1",
        )
        .bind(at)
        .fetch_optional(&self.pool)
        .await?;
        let Some(row) = row else { return Ok(None) };
        let (run, side, chunk): (String, i64, i64) = (row.get(0), row.get(1), row.get(2));
        let updated = sqlx::query(
            "UPDATE tasks SET state = 'leased', lease_until = $1, leases = leases + 1, \
             worker = $6 WHERE run = $2 AND side = $3 AND chunk = $4 \
             AND (state = 'pending' OR (state = 'leased' AND lease_until < $5))",
        )
        .bind(at + lease_seconds as i64)
        .bind(&run)
        .bind(side)
        .bind(chunk)
        .bind(at)
        .bind(worker)
        .execute(&self.pool)
        .await?;
        if updated.rows_affected() != 1 {
            return Ok(None);
        }
        let (mut leased, _) = self.task(&run, side as u64, chunk as u64).await?;
        leased.task.lease_seconds = lease_seconds;
        Ok(Some(leased))
    }

    /// A task of a computing run, as leased (with who holds it), and whether it is done.
    pub async fn task(&self, run: &str, side: u64, chunk: u64) -> Result<(Leased, bool)> {
        api::check_id(run)?;
        let row = sqlx::query(
            "SELECT s.dataset, s.token, r.parties, c.items, t.state, r.state, \
             r.preprocessed, s.pretoken, s.delta, c.file, t.worker \
             FROM tasks t \
             JOIN runs r ON r.id = t.run \
             JOIN run_sides s ON s.run = t.run AND s.side = t.side \
             JOIN chunks c ON c.dataset = s.dataset AND c.idx = t.chunk \
             WHERE t.run = $1 AND t.side = $2 AND t.chunk = $3",
        )
        .bind(run)
        .bind(side as i64)
        .bind(chunk as i64)
        .fetch_optional(&self.pool)
        .await?
        .ok_or_else(|| Error::NotFound(format!("no task {run}/{side}/{chunk}")))?;
        let state = run_state(&row, 5)?;
        if state != RunState::Computing {
            return Err(Error::Conflict(format!("run {run} is {state}")));
        }
        let (work, input) = if row.get::<i64, _>(6) == 0 {
            let work = Work::Pair {
                token: row.get(1),
                parties: row.get::<i64, _>(2) as u64,
            };
            let dataset: String = row.get(0);
            (
                work,
                self.dataset_dir(&dataset).join(row.get::<String, _>(9)),
            )
        } else {
            let pretoken: String = row.get(7);
            let work = self.raise(run, side, &row.get::<String, _>(8)).await?;
            (work, self.answer_path(&pretoken, 0, chunk))
        };
        let task = api::Task {
            run: run.to_owned(),
            side,
            chunk,
            items: row.get::<i64, _>(3) as u64,
            work,
            lease_seconds: 0,
        };
        let holder = row.try_get(10).ok().flatten();
        Ok((
            Leased {
                task,
                input,
                holder,
            },
            row.get::<String, _>(4) == "done",
        ))
    }

    /// The work of side `side` of a preprocessed run, whose scalar is `delta`: its
    /// pre-token's values raised to `δ_side / δ_other` (docs/cloud.md, Pre-tokens), digested
    /// under the other side's pre-token.
    async fn raise(&self, run: &str, side: u64, delta: &str) -> Result<Work> {
        let other =
            sqlx::query("SELECT pretoken, delta FROM run_sides WHERE run = $1 AND side <> $2")
                .bind(run)
                .bind(side as i64)
                .fetch_one(&self.pool)
                .await?;
        let scalar = |hex: &str| {
            Secret::from_bytes(&api::from_hex::<32>(hex, "scalar")?)
                .map_err(|e| Error::Internal(format!("a stored scalar: {e}")))
        };
        let exponent = crypto::ratio(&scalar(delta)?, &scalar(&other.get::<String, _>(1))?);
        Ok(Work::Raise {
            exponent: hex::encode(exponent.to_bytes()),
            target: other.get(0),
        })
    }

    /// The file of a task's answer.
    pub fn answer_path(&self, run: &str, side: u64, chunk: u64) -> PathBuf {
        self.run_dir(run).join(format!("{side}-{chunk:08}"))
    }

    /// The file of a side's result.
    pub fn result_path(&self, run: &str, side: u64) -> PathBuf {
        self.run_dir(run).join(format!("result-{side}"))
    }

    fn run_dir(&self, run: &str) -> PathBuf {
        self.dir.join("runs").join(run)
    }

    /// Stores a task's answer (checked by the caller) and marks the task done; returns
    /// whether every task of the run is now done. An answer to a task done already is
    /// dropped (answers are deterministic: any worker's is the same).
    pub async fn complete(
        &self,
        run: &str,
        side: u64,
        chunk: u64,
        answer: Vec<u8>,
    ) -> Result<bool> {
        write_in_background(self.answer_path(run, side, chunk), answer).await?;
        sqlx::query("UPDATE tasks SET state = 'done' WHERE run = $1 AND side = $2 AND chunk = $3")
            .bind(run)
            .bind(side as i64)
            .bind(chunk as i64)
            .execute(&self.pool)
            .await?;
        self.all_done(run).await
    }

    /// Whether every task of a computing run is done.
    pub async fn all_done(&self, run: &str) -> Result<bool> {
        let left: i64 =
            sqlx::query("SELECT COUNT(*) FROM tasks WHERE run = $1 AND state <> 'done'")
                .bind(run)
                .fetch_one(&self.pool)
                .await?
                .get(0);
        Ok(left == 0)
    }

    /// Marks a run done with `matches` (its result files are in place; `None` for a
    /// pre-token's run, which has none).
    pub async fn finish(&self, run: &str, matches: Option<u64>) -> Result<()> {
        sqlx::query(
            "UPDATE runs SET state = 'done', matches = $1, finished = $2 \
             WHERE id = $3 AND state = 'computing'",
        )
        .bind(matches.map(|m| m as i64))
        .bind(now())
        .bind(run)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// Marks a run failed and [`discard`](Self::discard)s what it left.
    pub async fn fail(&self, run: &str, error: &str) -> Result<()> {
        sqlx::query("UPDATE runs SET state = 'failed', error = $1, finished = $2 WHERE id = $3")
            .bind(error)
            .bind(now())
            .bind(run)
            .execute(&self.pool)
            .await?;
        self.discard(run).await
    }

    /// Removes what a failed run left on disk: its answers, and the values of the
    /// pre-tokens it used (they serve no other run).
    pub async fn discard(&self, run: &str) -> Result<()> {
        for pretoken in self.run_pretokens(run).await? {
            self.remove_files(&pretoken)?;
        }
        self.remove_files(run)
    }

    /// Removes a run's files (answers, results; a pre-token's values).
    pub fn remove_files(&self, run: &str) -> Result<()> {
        match std::fs::remove_dir_all(self.run_dir(run)) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e.into()),
            _ => Ok(()),
        }
    }
}

/// Starts a run whose tokens (or scalars) are all in: the state `computing` (refused if
/// it is no longer waiting: a deletion may have failed it meanwhile) and a task per chunk
/// of its sides (of side `only`, if given).
async fn start(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    run: &str,
    only: Option<u64>,
) -> Result<()> {
    let chunks = sqlx::query(
        "SELECT s.side, c.idx FROM run_sides s JOIN chunks c ON c.dataset = s.dataset \
         WHERE s.run = $1 AND ($2 < 0 OR s.side = $2) ORDER BY s.side, c.idx",
    )
    .bind(run)
    .bind(only.map_or(-1, |s| s as i64))
    .fetch_all(&mut **tx)
    .await?;
    let started = sqlx::query(
        "UPDATE runs SET state = 'computing', started = $1 WHERE id = $2 AND state = 'tokens'",
    )
    .bind(now())
    .bind(run)
    .execute(&mut **tx)
    .await?;
    if started.rows_affected() != 1 {
        return Err(Error::Conflict(format!("run {run} is no longer waiting")));
    }
    for r in &chunks {
        sqlx::query(
            "INSERT INTO tasks (run, side, chunk, state, lease_until, leases) \
             VALUES ($1, $2, $3, 'pending', 0, 0)",
        )
        .bind(run)
        .bind(r.get::<i64, _>(0))
        .bind(r.get::<i64, _>(1))
        .execute(&mut **tx)
        .await?;
    }
    Ok(())
}

fn dataset_of(row: &AnyRow) -> Result<Dataset> {
    let state: String = row.get(3);
    Ok(Dataset {
        id: row.get(0),
        name: row.get(1),
        owner: row.get(2),
        state: (DatasetState::parse(&state))
            .ok_or_else(|| Error::Internal(format!("a dataset in the unknown state '{state}'")))?,
        items: row.get::<i64, _>(4) as u64,
        chunks: row.get::<i64, _>(5) as u64,
    })
}

/// The run state in column `column` of `row`.
fn run_state(row: &AnyRow, column: usize) -> Result<RunState> {
    let state: String = row.get(column);
    RunState::parse(&state)
        .ok_or_else(|| Error::Internal(format!("a run in the unknown state '{state}'")))
}

/// Runs `work` (file i/o, hashing, pairing) on tokio's blocking threads.
pub async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T> + Send + 'static,
) -> Result<T> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| Error::Internal(e.to_string()))?
}

/// [`write_atomically`] on a blocking thread.
async fn write_in_background(
    path: PathBuf,
    bytes: impl AsRef<[u8]> + Send + 'static,
) -> Result<()> {
    blocking(move || write_atomically(&path, bytes.as_ref())).await
}

/// Writes `bytes` to `path`, whole or not at all.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    Ok(venn::util::files::write_atomically(path, |w| {
        w.write_all(bytes)
    })?)
}

#[cfg(test)]
mod tests {
    use super::*;

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
            let key = crate::auth::Identity::generate("a").unwrap().public_key();
            let key = PublicKey::parse(&key).unwrap();
            store.register("a", &key, None, 1).await.unwrap();
            let mut sealed = Vec::new();
            for name in ["x", "y"] {
                let d = store.create_dataset("a", name, quotas).await.unwrap();
                sealed.push(store.seal(&d.id, &[], quotas).await.unwrap().id);
            }
            let run = store.create_run("a", &sealed, false).await.unwrap().id;
            let err = store.give_token(&run, 0, "t", now() + 1).await.unwrap_err();
            assert!(
                matches!(err, Error::Conflict(ref m) if m.contains("too long")),
                "{err}"
            );
            assert!(!store.give_token(&run, 0, "t", now() - 60).await.unwrap());
        });
    }
}
