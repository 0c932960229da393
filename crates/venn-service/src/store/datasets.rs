//! Datasets in the store: opened within the owner's quotas, their chunks uploaded (each a
//! new file, named in the chunk's row), sealed, granted to partners and deleted (the runs
//! that still need them failed).

use super::files::blocking;
use super::{lock_client, lock_owned_dataset, lock_service, no_dataset, Quotas, Store};
use crate::error::Result;
use axum::body::Bytes;
use sqlx::any::AnyRow;
use sqlx::Row;
use std::path::{Path, PathBuf};
use venn_cloud::api::{self, now, Dataset, DatasetState, RunState};
use venn_cloud::Error;

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

/// The datasets `owner` keeps (open or sealed) and their items in all.
async fn usage(tx: &mut sqlx::Transaction<'_, sqlx::Any>, owner: &str) -> Result<(u64, u64)> {
    kept(tx, "AND d.owner = $2", Some(owner)).await
}

/// The datasets all clients keep (open or sealed) and their items in all.
async fn total_usage(tx: &mut sqlx::Transaction<'_, sqlx::Any>) -> Result<(u64, u64)> {
    kept(tx, "", None).await
}

/// The datasets kept (open or sealed) and their items, of those meeting `condition`
/// (after AND; `$2` is `owner`).
async fn kept(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    condition: &str,
    owner: Option<&str>,
) -> Result<(u64, u64)> {
    let sql = format!(
        "SELECT COUNT(DISTINCT d.id), CAST(SUM(c.items) AS BIGINT) FROM datasets d \
         LEFT JOIN chunks c ON c.dataset = d.id WHERE d.state <> $1 {condition}"
    );
    let mut query = sqlx::query(&sql).bind(DatasetState::Deleted.as_str());
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

impl Store {
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
            ))
            .into());
        }
        let inserted = sqlx::query(
            "INSERT INTO datasets (id, owner, name, live_name, state, items, chunks, created) \
             VALUES ($1, $2, $3, $3, $5, 0, 0, $4) ON CONFLICT DO NOTHING",
        )
        .bind(&id)
        .bind(owner)
        .bind(name)
        .bind(now())
        .bind(DatasetState::Open.as_str())
        .execute(&mut *tx)
        .await?;
        if inserted.rows_affected() != 1 {
            return Err(
                Error::Conflict(format!("you have a dataset named '{name}' already")).into(),
            );
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

    pub(super) fn dataset_dir(&self, id: &str) -> PathBuf {
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
        let items = (points.len() / venn_cloud::crypto::ITEM_BYTES) as u64;
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
    async fn refused_upload(
        &self,
        dataset: &str,
        path: &Path,
        error: crate::Error,
    ) -> crate::Error {
        let _ = std::fs::remove_file(path);
        match self.dataset(dataset).await {
            Ok(d) if d.state == DatasetState::Open => error,
            Ok(d) => {
                if d.state == DatasetState::Deleted {
                    let _ = std::fs::remove_dir(self.dataset_dir(dataset));
                }
                Error::Conflict(format!("dataset {dataset} is {}", d.state)).into()
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
                return Err(Error::Conflict(format!("chunk {expected} is missing")).into());
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
            ))
            .into());
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
        sqlx::query("UPDATE datasets SET state = $4, items = $1, chunks = $2 WHERE id = $3")
            .bind(first as i64)
            .bind(checked.len() as i64)
            .bind(dataset)
            .bind(DatasetState::Sealed.as_str())
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        self.dataset(dataset).await
    }

    /// Deletes a dataset's files and marks it deleted; runs that still need it fail.
    pub async fn delete_dataset(&self, dataset: &str) -> Result<Dataset> {
        let mut tx = self.pool.begin().await?;
        sqlx::query("UPDATE datasets SET state = $2, live_name = '/' || id WHERE id = $1")
            .bind(dataset)
            .bind(DatasetState::Deleted.as_str())
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
        // The runs still waiting or computing that need the dataset.
        let open = "state IN ($2, $3) AND id IN (SELECT run FROM run_sides WHERE dataset = $1)";
        let (tokens, computing) = (RunState::Tokens.as_str(), RunState::Computing.as_str());
        let failed: Vec<String> = sqlx::query(&format!("SELECT id FROM runs WHERE {open}"))
            .bind(dataset)
            .bind(tokens)
            .bind(computing)
            .fetch_all(&mut *tx)
            .await?
            .iter()
            .map(|r| r.get(0))
            .collect();
        sqlx::query(&format!(
            "UPDATE runs SET state = $4, error = 'a dataset was deleted' WHERE {open}"
        ))
        .bind(dataset)
        .bind(tokens)
        .bind(computing)
        .bind(RunState::Failed.as_str())
        .execute(&mut *tx)
        .await?;
        sqlx::query(
            "UPDATE runs SET state = $2, error = 'its dataset was deleted' \
             WHERE parties = 1 AND state = $3 \
             AND id IN (SELECT run FROM run_sides WHERE dataset = $1)",
        )
        .bind(dataset)
        .bind(RunState::Failed.as_str())
        .bind(RunState::Done.as_str())
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
