//! A dataset's authoritative data: its settings, the items in its set (each with its
//! label, in a dataset made with labels) and every change to the set in order
//! (`migrations/`), in SQLite (a file in the dataset's directory, the default) or
//! PostgreSQL, through sqlx's `Any` driver as the Thunder service's store.
//! The calls block: each runs on the store's own single-threaded runtime.
//!
//! An update is durable when its transaction commits: its items' rows and its operations'
//! rows commit together, so what is published later ([`crate::publish`]) can always be
//! made from here, whatever was interrupted.

use sqlx::any::AnyPoolOptions;
use sqlx::{AnyPool, Executor, Row};
use std::collections::{HashMap, HashSet};
use venn::session::run_plan::KeyForm;
use venn::{Error, Items, Result};

/// The schema's migrations, compiled in (as the Thunder service's store has them).
const MIGRATIONS: [(i64, &str, &str); 4] = [
    (1, "schema", include_str!("../migrations/0001_schema.sql")),
    (
        2,
        "item count",
        include_str!("../migrations/0002_item_count.sql"),
    ),
    (3, "labels", include_str!("../migrations/0003_labels.sql")),
    (4, "modes", include_str!("../migrations/0004_modes.sql")),
];

/// Rows an import or an update writes in one statement.
const IMPORT_ROWS: usize = 500;

/// The most bytes a dataset's labels may be made to take.
pub const MAX_LABEL_LEN: u8 = 64;

/// A dataset's settings, fixed when it is made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Settings {
    /// The most items its set may hold (τ is chosen for it).
    pub max_items: u64,
    /// The most items a query may hold, padding included (a padded size).
    pub max_query: u32,
    /// How its keys were taken from their rows, which clients' keys must match.
    pub form: KeyForm,
    /// The most bytes an item's label takes (1..=64), if the dataset's items carry labels.
    pub label_len: Option<u8>,
    /// The query modes it serves.
    pub modes: Modes,
}

/// The query modes a dataset serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Modes {
    /// `ub-cache`: its tags published, downloaded by clients.
    Cache,
    /// `ub-fhe`: a BFV database its clients query without downloading anything.
    Fhe,
    /// Both: each client chooses.
    Both,
}

impl Modes {
    /// Whether its tags are published.
    pub fn cache(self) -> bool {
        self != Modes::Fhe
    }

    /// Whether it keeps a `ub-fhe` database.
    pub fn fhe(self) -> bool {
        self != Modes::Cache
    }

    /// Its stored form: a bit a mode.
    fn bits(self) -> i64 {
        i64::from(self.cache()) | i64::from(self.fhe()) << 1
    }

    /// The modes of a stored form.
    fn of_bits(bits: i64) -> Option<Modes> {
        match bits {
            1 => Some(Modes::Cache),
            2 => Some(Modes::Fhe),
            3 => Some(Modes::Both),
            _ => None,
        }
    }
}

/// A change to the set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// An item the set lacked was added.
    Insert,
    /// An item the set held was removed.
    Delete,
    /// An item the set holds was given another label.
    Relabel,
}

/// What an update did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Applied {
    /// Items added.
    pub inserted: u64,
    /// Items removed.
    pub deleted: u64,
    /// Items the set held that were given another label.
    pub relabeled: u64,
    /// Items to add that the set held already (with the label given, if labeled).
    pub present: u64,
    /// Items to remove that the set did not hold.
    pub absent: u64,
}

/// One stored operation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredOp {
    /// Its place in the order of the store's operations, from 1.
    pub seq: u64,
    /// The change.
    pub op: Op,
    /// The item changed.
    pub item: Vec<u8>,
    /// The label an insert or a relabel set, in a labeled dataset.
    pub label: Option<Vec<u8>>,
}

/// An operation to record: the change, its item and the label it set.
type NewOp<'a> = (Op, &'a [u8], Option<&'a [u8]>);

/// The store of one dataset.
pub struct Store {
    runtime: tokio::runtime::Runtime,
    pool: AnyPool,
}

/// A store closes its connection when dropped, a transaction it abandoned rolled back:
/// left to the pool's drop, the connection (and an abandoned transaction's write lock)
/// outlives the store by however long its thread waits to run, and the next command's
/// write finds the database locked.
impl Drop for Store {
    fn drop(&mut self) {
        self.runtime.block_on(self.pool.close());
    }
}

/// A store's failure, for the operator.
fn failed(what: &str) -> impl Fn(sqlx::Error) -> Error + '_ {
    move |e| Error::State(format!("the dataset's store: {what}: {e}"))
}

/// Now, in Unix seconds.
fn now() -> i64 {
    let since = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
    since.map_or(0, |d| d.as_secs() as i64)
}

impl Store {
    /// Opens (creating if need be) the store at `url`: `sqlite://FILE` or `postgres://…`.
    pub fn open(url: &str) -> Result<Store> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        sqlx::any::install_default_drivers();
        let url = match url.starts_with("sqlite:") && !url.contains('?') {
            true => format!("{url}?mode=rwc"),
            false => url.to_owned(),
        };
        let sqlite = url.starts_with("sqlite:");
        let pool = runtime.block_on(async {
            let pool = AnyPoolOptions::new()
                .max_connections(1)
                .after_connect(move |conn, _| {
                    Box::pin(async move {
                        if sqlite {
                            // Durable on commit: an acknowledged update survives a crash
                            // of the process or the machine.
                            conn.execute("PRAGMA journal_mode = WAL").await?;
                            conn.execute("PRAGMA synchronous = FULL").await?;
                        }
                        Ok(())
                    })
                })
                .connect(&url)
                .await
                .map_err(failed("cannot open it"))?;
            migrator()
                .run(&pool)
                .await
                .map_err(|e| Error::State(format!("the dataset's store: its schema: {e}")))?;
            Ok::<_, Error>(pool)
        })?;
        Ok(Store { runtime, pool })
    }

    /// Makes the dataset: its settings and its first `items` (distinct), with their
    /// `labels` (one each, in the same order) if `settings.label_len` says its items carry
    /// labels, in one transaction. Refused if it is made already, the items are more than
    /// `settings.max_items`, or the labels are not what the settings take.
    pub fn create(
        &self,
        settings: &Settings,
        items: &[&[u8]],
        labels: Option<&[&[u8]]>,
    ) -> Result<()> {
        if items.len() as u64 > settings.max_items {
            return Err(Error::Usage(format!(
                "{} items, more than the dataset's {} (--max-items)",
                items.len(),
                settings.max_items
            )));
        }
        let out_of_range = (settings.label_len).filter(|l| !(1..=MAX_LABEL_LEN).contains(l));
        if let Some(len) = out_of_range {
            return Err(Error::Usage(format!(
                "labels of {len} bytes: a dataset's labels take from 1 to {MAX_LABEL_LEN}"
            )));
        }
        check_labels(settings.label_len, items, labels)?;
        self.runtime.block_on(async {
            let mut tx = self.pool.begin().await.map_err(failed("begin"))?;
            let made = sqlx::query("SELECT COUNT(*) FROM ub_settings")
                .fetch_one(&mut *tx)
                .await
                .map_err(failed("read its settings"))?;
            if made.get::<i64, _>(0) != 0 {
                return Err(Error::Usage("the dataset is made already".into()));
            }
            let form = settings.form;
            sqlx::query(
                "INSERT INTO ub_settings (id, max_items, max_query, key_trim, key_lowercase, \
                 key_columns, key_any, created, items, label_len, modes) VALUES (1, $1, $2, \
                 $3, $4, $5, $6, $7, $8, $9, $10)",
            )
            .bind(settings.max_items as i64)
            .bind(i64::from(settings.max_query))
            .bind(i64::from(form.trim))
            .bind(i64::from(form.lowercase))
            .bind(i64::from(form.columns))
            .bind(i64::from(form.any))
            .bind(now())
            .bind(items.len() as i64)
            .bind(settings.label_len.map(i64::from))
            .bind(settings.modes.bits())
            .execute(&mut *tx)
            .await
            .map_err(failed("write its settings"))?;
            match labels {
                None => {
                    for rows in items.chunks(IMPORT_ROWS) {
                        insert_items(&mut tx, rows, None).await?;
                    }
                }
                Some(labels) => {
                    let chunks = items.chunks(IMPORT_ROWS).zip(labels.chunks(IMPORT_ROWS));
                    for (rows, labels) in chunks {
                        insert_items(&mut tx, rows, Some(labels)).await?;
                    }
                }
            }
            tx.commit().await.map_err(failed("commit"))
        })
    }

    /// The dataset's settings; refused if it is not made.
    pub fn settings(&self) -> Result<Settings> {
        self.runtime.block_on(async {
            let row = sqlx::query(
                "SELECT max_items, max_query, key_trim, key_lowercase, key_columns, key_any, \
                 label_len, modes FROM ub_settings WHERE id = 1",
            )
            .fetch_optional(&self.pool)
            .await
            .map_err(failed("read its settings"))?
            .ok_or_else(|| Error::Usage("no dataset here: make one with `venn ub init`".into()))?;
            let number = |i: usize| row.get::<i64, _>(i);
            let bad = || Error::State("the dataset's store: settings out of range".into());
            let label_len = (row.get::<Option<i64>, _>(6))
                .map(|n| {
                    let len = u8::try_from(n).ok();
                    len.filter(|l| (1..=MAX_LABEL_LEN).contains(l))
                        .ok_or_else(bad)
                })
                .transpose()?;
            Ok(Settings {
                max_items: u64::try_from(number(0)).map_err(|_| bad())?,
                max_query: u32::try_from(number(1)).map_err(|_| bad())?,
                form: KeyForm {
                    trim: number(2) != 0,
                    lowercase: number(3) != 0,
                    columns: u16::try_from(number(4)).map_err(|_| bad())?,
                    any: number(5) != 0,
                },
                label_len,
                modes: Modes::of_bits(number(7)).ok_or_else(bad)?,
            })
        })
    }

    /// Adds `upserts` and removes `deletes` (each distinct; no item in both) in one
    /// transaction, each change an operation: an item the set lacks, or holds, changes
    /// nothing. In a labeled dataset each upsert has its label in `labels` (in the same
    /// order): an item the set holds with another label is given this one (a relabel).
    /// Refused, changing nothing, if the labels are not what the dataset takes (or, in a
    /// labeled dataset, an item is to add twice) or the set would exceed its `max_items`.
    pub fn apply(
        &self,
        upserts: &[&[u8]],
        labels: Option<&[&[u8]]>,
        deletes: &[&[u8]],
    ) -> Result<Applied> {
        let removing: HashSet<&[u8]> = deletes.iter().copied().collect();
        if let Some(both) = upserts.iter().find(|i| removing.contains(*i)) {
            return Err(Error::Usage(format!(
                "the item {:?} is both to add and to remove",
                String::from_utf8_lossy(both)
            )));
        }
        let settings = self.settings()?;
        check_labels(settings.label_len, upserts, labels)?;
        if labels.is_some() {
            // Two labels for one item would leave which it holds to the chunking.
            let mut adding = HashSet::with_capacity(upserts.len());
            if let Some(twice) = upserts.iter().find(|i| !adding.insert(**i)) {
                return Err(Error::Usage(format!(
                    "the item {:?} is to add twice",
                    String::from_utf8_lossy(twice)
                )));
            }
        }
        let max_items = settings.max_items;
        self.runtime.block_on(async {
            let mut tx = self.pool.begin().await.map_err(failed("begin"))?;
            let mut seq = last_seq(&mut tx).await?;
            let mut applied = Applied::default();
            let created = now();
            // A statement per IMPORT_ROWS items (a statement per item costs a round trip
            // to the store's thread each: most of an update's time), each returning the
            // items it changed: those are the operations.
            for items in deletes.chunks(IMPORT_ROWS) {
                let sql = format!(
                    "DELETE FROM ub_items WHERE item IN {} RETURNING item",
                    places(1, items.len())
                );
                let changed = changed_rows(&mut tx, &sql, items).await?;
                applied.deleted += changed.len() as u64;
                applied.absent += (items.len() - changed.len()) as u64;
                let ops: Vec<_> = (changed.iter())
                    .map(|row| (Op::Delete, row.get::<&[u8], _>(0), None))
                    .collect();
                record(&mut tx, &mut seq, created, &ops).await?;
            }
            match labels {
                None => {
                    for items in upserts.chunks(IMPORT_ROWS) {
                        let sql = format!(
                            "INSERT INTO ub_items (item) VALUES {} ON CONFLICT DO NOTHING \
                             RETURNING item",
                            places(items.len(), 1)
                        );
                        let changed = changed_rows(&mut tx, &sql, items).await?;
                        applied.inserted += changed.len() as u64;
                        applied.present += (items.len() - changed.len()) as u64;
                        let ops: Vec<_> = (changed.iter())
                            .map(|row| (Op::Insert, row.get::<&[u8], _>(0), None))
                            .collect();
                        record(&mut tx, &mut seq, created, &ops).await?;
                    }
                }
                Some(labels) => {
                    let chunks = upserts.chunks(IMPORT_ROWS).zip(labels.chunks(IMPORT_ROWS));
                    for (items, labels) in chunks {
                        let ops = upsert_labeled(&mut tx, items, labels, &mut applied).await?;
                        record(&mut tx, &mut seq, created, &ops).await?;
                    }
                }
            }
            let count = sqlx::query(
                "UPDATE ub_settings SET items = items + $1 - $2 WHERE id = 1 RETURNING items",
            )
            .bind(applied.inserted as i64)
            .bind(applied.deleted as i64)
            .fetch_one(&mut *tx)
            .await
            .map_err(failed("count its items"))?
            .get::<i64, _>(0);
            if count as u64 > max_items {
                tx.rollback().await.map_err(failed("roll back"))?;
                return Err(Error::Usage(format!(
                    "the set would hold {count} items, more than the dataset's {max_items} \
                     (--max-items when it was made): nothing changed"
                )));
            }
            tx.commit().await.map_err(failed("commit"))?;
            Ok(applied)
        })
    }

    /// The operations after `seq`, in order.
    pub fn ops_after(&self, seq: u64) -> Result<Vec<StoredOp>> {
        self.runtime.block_on(async {
            let rows =
                sqlx::query("SELECT seq, op, item, label FROM ub_ops WHERE seq > $1 ORDER BY seq")
                    .bind(seq as i64)
                    .fetch_all(&self.pool)
                    .await
                    .map_err(failed("read its operations"))?;
            rows.iter()
                .map(|row| {
                    let op = match row.get::<String, _>(1).as_str() {
                        "insert" => Op::Insert,
                        "delete" => Op::Delete,
                        "relabel" => Op::Relabel,
                        other => return Err(Error::State(format!("a stored operation '{other}'"))),
                    };
                    Ok(StoredOp {
                        seq: row.get::<i64, _>(0) as u64,
                        op,
                        item: row.get::<Vec<u8>, _>(2),
                        label: row.get::<Option<Vec<u8>>, _>(3),
                    })
                })
                .collect()
        })
    }

    /// Every item in the set, with the sequence number of the last operation they
    /// reflect and, in a labeled dataset, their labels (in the same order): read in one
    /// transaction, streamed into one buffer each.
    pub fn items(&self) -> Result<(u64, Items, Option<Items>)> {
        use futures_util::TryStreamExt;
        self.runtime.block_on(async {
            let mut tx = self.pool.begin().await.map_err(failed("begin"))?;
            let last = last_seq(&mut tx).await?;
            let labeled = sqlx::query("SELECT label_len FROM ub_settings WHERE id = 1")
                .fetch_optional(&mut *tx)
                .await
                .map_err(failed("read its settings"))?
                .is_some_and(|row| row.get::<Option<i64>, _>(0).is_some());
            let mut items = Items::new();
            let mut labels = labeled.then(Items::new);
            {
                let sql = match labeled {
                    true => "SELECT item, label FROM ub_items",
                    false => "SELECT item FROM ub_items",
                };
                let mut rows = sqlx::query(sql).fetch(&mut *tx);
                while let Some(row) = rows.try_next().await.map_err(failed("read its items"))? {
                    items.push(row.get::<&[u8], _>(0));
                    if let Some(labels) = &mut labels {
                        let label = row.get::<Option<&[u8]>, _>(1).ok_or_else(|| {
                            Error::State("the dataset's store: an item without its label".into())
                        })?;
                        labels.push(label);
                    }
                }
            }
            tx.commit().await.map_err(failed("commit"))?;
            Ok((last as u64, items, labels))
        })
    }
}

/// Refuses `labels` unless they are what a dataset whose labels take `label_len` bytes
/// takes for `items`: none in a dataset without labels, else one each of at most
/// `label_len` bytes.
fn check_labels(label_len: Option<u8>, items: &[&[u8]], labels: Option<&[&[u8]]>) -> Result<()> {
    let (len, labels) = match (label_len, labels) {
        (None, None) => return Ok(()),
        (None, Some(_)) => {
            return Err(Error::Usage(
                "the dataset's items carry no labels: none may be given".into(),
            ))
        }
        (Some(_), None) => {
            return Err(Error::Usage(
                "the dataset's items carry labels: each item needs one".into(),
            ))
        }
        (Some(len), Some(labels)) => (len, labels),
    };
    if labels.len() != items.len() {
        return Err(Error::Usage(format!(
            "{} labels for {} items: each item needs one",
            labels.len(),
            items.len()
        )));
    }
    match labels.iter().position(|l| l.len() > usize::from(len)) {
        Some(i) => Err(Error::Usage(format!(
            "the label of the item {:?} is of {} bytes, more than the dataset's {len}",
            String::from_utf8_lossy(items[i]),
            labels[i].len()
        ))),
        None => Ok(()),
    }
}

/// Inserts `items` (which the set lacks), with their `labels` in a labeled dataset, in
/// one statement.
async fn insert_items(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    items: &[&[u8]],
    labels: Option<&[&[u8]]>,
) -> Result<()> {
    let (columns, width) = match labels {
        None => ("item", 1),
        Some(_) => ("item, label", 2),
    };
    let sql = format!(
        "INSERT INTO ub_items ({columns}) VALUES {}",
        places(items.len(), width)
    );
    let mut query = sqlx::query(&sql);
    for (i, item) in items.iter().enumerate() {
        query = query.bind(*item);
        if let Some(labels) = labels {
            query = query.bind(labels[i]);
        }
    }
    query
        .execute(&mut **tx)
        .await
        .map_err(failed("import the items"))?;
    Ok(())
}

/// The places of `rows` rows of `width` values each: `($1, $2), ($3, $4), …` for pairs,
/// `($1, $2, …)` for a list.
fn places(rows: usize, width: usize) -> String {
    let row = |r: usize| {
        let values: Vec<String> = (1..=width).map(|v| format!("${}", r * width + v)).collect();
        format!("({})", values.join(", "))
    };
    (0..rows).map(row).collect::<Vec<_>>().join(", ")
}

/// Upserts `items` with their `labels` into a labeled dataset, counting in `applied`:
/// returns the operations, in the items' order. At most three statements whatever the
/// chunk's length: the held items' labels read (an upsert's operation depends on the
/// label held), the new items inserted and the changed labels set.
async fn upsert_labeled<'a>(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    items: &[&'a [u8]],
    labels: &[&'a [u8]],
    applied: &mut Applied,
) -> Result<Vec<NewOp<'a>>> {
    let sql = format!(
        "SELECT item, label FROM ub_items WHERE item IN {}",
        places(1, items.len())
    );
    let mut query = sqlx::query(&sql);
    for item in items {
        query = query.bind(*item);
    }
    let rows = (query.fetch_all(&mut **tx).await).map_err(failed("read its items"))?;
    let held: HashMap<&[u8], Option<&[u8]>> = (rows.iter())
        .map(|row| (row.get::<&[u8], _>(0), row.get::<Option<&[u8]>, _>(1)))
        .collect();
    let mut ops = Vec::new();
    for (&item, &label) in items.iter().zip(labels) {
        match held.get(item) {
            None => ops.push((Op::Insert, item, Some(label))),
            Some(&now) if now == Some(label) => applied.present += 1,
            Some(_) => ops.push((Op::Relabel, item, Some(label))),
        }
    }
    let (new, changed): (Vec<_>, Vec<_>) = ops.iter().partition(|(op, ..)| *op == Op::Insert);
    applied.inserted += new.len() as u64;
    applied.relabeled += changed.len() as u64;
    if !new.is_empty() {
        let items: Vec<&[u8]> = new.iter().map(|(_, item, _)| *item).collect();
        let labels: Vec<&[u8]> = new.iter().filter_map(|(_, _, label)| *label).collect();
        insert_items(tx, &items, Some(&labels)).await?;
    }
    if !changed.is_empty() {
        let sql = format!(
            "WITH v (item, label) AS (VALUES {}) UPDATE ub_items SET label = v.label FROM v \
             WHERE ub_items.item = v.item",
            places(changed.len(), 2)
        );
        let mut query = sqlx::query(&sql);
        for (_, item, label) in &changed {
            query = query.bind(*item).bind(*label);
        }
        (query.execute(&mut **tx).await).map_err(failed("relabel its items"))?;
    }
    Ok(ops)
}

/// The rows `sql` returns with `items` bound in order, in `tx`: the items a statement
/// changed.
async fn changed_rows(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    sql: &str,
    items: &[&[u8]],
) -> Result<Vec<sqlx::any::AnyRow>> {
    let mut query = sqlx::query(sql);
    for item in items {
        query = query.bind(*item);
    }
    (query.fetch_all(&mut **tx).await).map_err(failed("change its items"))
}

/// Records `ops` (each a change, its item and the label it set) as the operations after
/// `seq`, moving `seq` on, in one statement.
async fn record(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    seq: &mut i64,
    created: i64,
    ops: &[NewOp<'_>],
) -> Result<()> {
    if ops.is_empty() {
        return Ok(());
    }
    let sql = format!(
        "INSERT INTO ub_ops (seq, op, item, label, created) VALUES {}",
        places(ops.len(), 5)
    );
    let mut query = sqlx::query(&sql);
    for &(op, item, label) in ops {
        *seq += 1;
        query = (query.bind(*seq).bind(op.name()))
            .bind(item)
            .bind(label)
            .bind(created);
    }
    query
        .execute(&mut **tx)
        .await
        .map_err(failed("record an operation"))?;
    Ok(())
}

/// The sequence number of the store's last operation (0 before any), in `tx`.
async fn last_seq(tx: &mut sqlx::Transaction<'_, sqlx::Any>) -> Result<i64> {
    let row = sqlx::query("SELECT COALESCE(MAX(seq), 0) FROM ub_ops")
        .fetch_one(&mut **tx)
        .await
        .map_err(failed("read its operations"))?;
    Ok(row.get::<i64, _>(0))
}

impl Op {
    /// Its name in the store.
    fn name(self) -> &'static str {
        match self {
            Op::Insert => "insert",
            Op::Delete => "delete",
            Op::Relabel => "relabel",
        }
    }
}

/// The migrator of the store's schema.
fn migrator() -> sqlx::migrate::Migrator {
    use sqlx::migrate::{Migration, MigrationType, Migrator};
    let migrations = MIGRATIONS.map(|(version, description, sql)| {
        Migration::new(
            version,
            description.into(),
            MigrationType::Simple,
            sql.into(),
            false,
        )
    });
    Migrator {
        migrations: migrations.to_vec().into(),
        ..Migrator::DEFAULT
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;
    use venn::crypto::{Block, Prg};

    /// Where a test makes its stores: SQLite files in a temporary directory, or databases
    /// of a PostgreSQL cluster.
    struct Place {
        dir: tempfile::TempDir,
        pg: Option<crate::postgres::Postgres>,
        made: std::cell::Cell<u32>,
    }

    impl Place {
        fn sqlite() -> Place {
            Place {
                dir: tempfile::tempdir().unwrap(),
                pg: None,
                made: Default::default(),
            }
        }

        /// A cluster's place, or None where PostgreSQL cannot start (unless CI sets
        /// VENN_REQUIRE_POSTGRES).
        fn postgres() -> Option<Place> {
            match crate::postgres::Postgres::start() {
                Ok(pg) => Some(Place {
                    pg: Some(pg),
                    ..Place::sqlite()
                }),
                Err(why) if std::env::var_os("VENN_REQUIRE_POSTGRES").is_some() => {
                    panic!("the PostgreSQL store's labels cannot be tried: {why}")
                }
                Err(why) => {
                    eprintln!("SKIPPED: the PostgreSQL store's labels: {why}");
                    None
                }
            }
        }

        /// A new, empty store.
        fn fresh(&self) -> Store {
            let n = self.made.get();
            self.made.set(n + 1);
            match &self.pg {
                None => {
                    let file = self.dir.path().join(format!("store-{n}.sqlite"));
                    Store::open(&format!("sqlite://{}", file.display())).unwrap()
                }
                Some(pg) => {
                    let admin = Store::open(&format!("{}/postgres", pg.url)).unwrap();
                    let make = format!("CREATE DATABASE store_{n}");
                    (admin.runtime.block_on(admin.pool.execute(make.as_str()))).unwrap();
                    Store::open(&format!("{}/store_{n}", pg.url)).unwrap()
                }
            }
        }
    }

    fn settings(max_items: u64, label_len: Option<u8>) -> Settings {
        Settings {
            max_items,
            max_query: 16,
            form: KeyForm {
                trim: false,
                lowercase: false,
                columns: 1,
                any: false,
            },
            label_len,
            modes: Modes::Cache,
        }
    }

    fn name(i: u64) -> Vec<u8> {
        format!("item {i}").into_bytes()
    }

    fn refs(v: &[Vec<u8>]) -> Vec<&[u8]> {
        v.iter().map(Vec::as_slice).collect()
    }

    /// What `store` holds: the last operation it reflects and each item with its label.
    fn held(store: &Store) -> (u64, BTreeMap<Vec<u8>, Option<Vec<u8>>>) {
        let (last, items, labels) = store.items().unwrap();
        let labels: Vec<Option<Vec<u8>>> = match labels {
            Some(labels) => {
                assert_eq!(labels.len(), items.len());
                labels.iter().map(|l| Some(l.to_vec())).collect()
            }
            None => vec![None; items.len()],
        };
        (last, items.iter().map(<[u8]>::to_vec).zip(labels).collect())
    }

    /// Rounds of upserts (of items new, held with the same label and held with another,
    /// more than a statement's worth) and deletes (of items held or not) keep a labeled
    /// store equal to a model map: the counts each update reports, its items and labels,
    /// and its operations (one per change, numbered on, with the labels they set; replayed
    /// from the start they make the set again).
    #[test]
    fn a_labeled_store_follows_a_model() {
        follow_a_model(&Place::sqlite());
    }

    /// The same, and the refusals, in a PostgreSQL store (skipped where PostgreSQL cannot
    /// start, unless CI sets VENN_REQUIRE_POSTGRES).
    #[test]
    fn a_postgres_store_keeps_labels_too() {
        if let Some(place) = Place::postgres() {
            follow_a_model(&place);
            refuse_what_does_not_fit(&place);
        }
    }

    fn follow_a_model(place: &Place) {
        const LABEL_LEN: u8 = 6;
        let store = place.fresh();
        let mut prg = Prg::from_seed(Block::from(7));
        let label = |prg: &mut Prg| {
            let mut l = vec![0; prg.below(u64::from(LABEL_LEN) + 1) as usize];
            prg.fill_bytes(&mut l);
            l
        };
        let first: Vec<Vec<u8>> = (0..1000).map(name).collect();
        let labels: Vec<Vec<u8>> = first.iter().map(|_| label(&mut prg)).collect();
        let settings = settings(1 << 12, Some(LABEL_LEN));
        (store.create(&settings, &refs(&first), Some(&refs(&labels)))).unwrap();
        assert_eq!(store.settings().unwrap(), settings);
        let start: BTreeMap<Vec<u8>, Vec<u8>> = first.into_iter().zip(labels).collect();
        let mut model = start.clone();
        let mut last = 0;
        for round in 0..6 {
            let mut universe: Vec<u64> = (0..3000).collect();
            prg.shuffle(&mut universe);
            let upserts: Vec<Vec<u8>> = universe[..800].iter().map(|&i| name(i)).collect();
            let deletes: Vec<Vec<u8>> = universe[800..1100].iter().map(|&i| name(i)).collect();
            // Half the held items upserted keep their label.
            let labels: Vec<Vec<u8>> = (upserts.iter())
                .map(|item| match model.get(item) {
                    Some(held) if prg.below(2) == 0 => held.clone(),
                    _ => label(&mut prg),
                })
                .collect();
            let mut want = Applied::default();
            let mut ops = Vec::new();
            for item in &deletes {
                match model.remove(item) {
                    Some(_) => {
                        want.deleted += 1;
                        ops.push((Op::Delete, item.clone(), None));
                    }
                    None => want.absent += 1,
                }
            }
            for (item, label) in upserts.iter().zip(&labels) {
                match model.insert(item.clone(), label.clone()) {
                    None => {
                        want.inserted += 1;
                        ops.push((Op::Insert, item.clone(), Some(label.clone())));
                    }
                    Some(was) if was == *label => want.present += 1,
                    Some(_) => {
                        want.relabeled += 1;
                        ops.push((Op::Relabel, item.clone(), Some(label.clone())));
                    }
                }
            }
            assert!(want.present > 0 && want.relabeled > 0 && want.absent > 0);
            let applied = store.apply(&refs(&upserts), Some(&refs(&labels)), &refs(&deletes));
            assert_eq!(applied.unwrap(), want, "round {round}");
            let stored = store.ops_after(last).unwrap();
            let seqs: Vec<u64> = stored.iter().map(|o| o.seq).collect();
            let next = last + ops.len() as u64;
            assert_eq!(seqs, (last + 1..=next).collect::<Vec<_>>(), "round {round}");
            let mut stored: Vec<_> = (stored.into_iter())
                .map(|o| (o.op, o.item, o.label))
                .collect();
            let order = |(op, item, _): &(Op, Vec<u8>, _)| (op.name(), item.clone());
            stored.sort_by_key(order);
            ops.sort_by_key(order);
            assert_eq!(stored, ops, "round {round}");
            last = next;
            let (covered, items) = held(&store);
            assert_eq!(covered, last);
            let now: BTreeMap<_, _> = (model.iter())
                .map(|(item, label)| (item.clone(), Some(label.clone())))
                .collect();
            assert_eq!(items, now, "round {round}");
        }
        let mut replayed = start;
        for op in store.ops_after(0).unwrap() {
            match op.op {
                Op::Insert => assert!(replayed.insert(op.item, op.label.unwrap()).is_none()),
                Op::Relabel => assert!(replayed.insert(op.item, op.label.unwrap()).is_some()),
                Op::Delete => assert!(replayed.remove(&op.item).is_some() && op.label.is_none()),
            }
        }
        assert_eq!(replayed, model);
    }

    /// Labels a dataset does not take (any for one without labels, none, too few, too
    /// long, two for one item) and label lengths out of range are refused, changing
    /// nothing; a dataset without labels behaves as before labels were kept; a stored
    /// label length out of range is refused when read.
    #[test]
    fn labels_that_do_not_fit_are_refused() {
        refuse_what_does_not_fit(&Place::sqlite());
    }

    /// Items, or their labels.
    type Keys<'a> = &'a [&'a [u8]];
    /// Labels given, or none.
    type Labels<'a> = Option<Keys<'a>>;

    /// Why `r` was refused as the caller's error.
    fn usage<T: std::fmt::Debug>(r: Result<T>) -> String {
        match r {
            Err(Error::Usage(why)) => why,
            other => panic!("not refused: {other:?}"),
        }
    }

    fn refuse_what_does_not_fit(place: &Place) {
        let items = [name(0), name(1)];
        let items = refs(&items);
        let long = [0; 65];
        let unmade = place.fresh();
        let refused: [(Option<u8>, Labels); 7] = [
            (Some(0), Some(&[b"", b""])),
            (Some(65), Some(&[b"", b""])),
            (Some(4), None),
            (None, Some(&[b"", b""])),
            (Some(4), Some(&[b""])),
            (Some(4), Some(&[b"", b"12345"])),
            (Some(64), Some(&[b"", &long])),
        ];
        for (label_len, labels) in refused {
            let why = usage(unmade.create(&settings(10, label_len), &items, labels));
            assert!(unmade.settings().is_err(), "{why}: not made");
            assert_eq!(held(&unmade), (0, BTreeMap::new()), "{why}");
        }
        let why = usage(unmade.create(&settings(10, Some(4)), &items, Some(&[b"", b"12345"])));
        assert!(why.contains("item 1") && why.contains("4"), "{why}");
        let longest = settings(10, Some(64));
        unmade
            .create(&longest, &items, Some(&[b"", &long[..64]]))
            .unwrap();
        assert_eq!(unmade.settings().unwrap(), longest);

        let labeled = place.fresh();
        let pair: [&[u8]; 2] = [b"ab", b""];
        labeled
            .create(&settings(10, Some(4)), &items, Some(&pair))
            .unwrap();
        let before = held(&labeled);
        let (two, three) = (name(2), name(3));
        let refused: [(Keys, Labels, Keys); 5] = [
            (&[&two], None, &[]),
            (&[&two, &three], Some(&[b"1"]), &[]),
            (&[&two, &three], Some(&[b"1", b"12345"]), &[items[0]]),
            (&[&two, &two], Some(&[b"1", b"2"]), &[]),
            (&[&two], Some(&[b"1"]), &[&two]),
        ];
        for (upserts, labels, deletes) in refused {
            let why = usage(labeled.apply(upserts, labels, deletes));
            assert_eq!(held(&labeled), before, "{why}: nothing changed");
            assert!(labeled.ops_after(0).unwrap().is_empty(), "{why}");
        }
        let applied = labeled.apply(&[items[0], &two], Some(&[b"", b"2"]), &[items[1]]);
        let want = Applied {
            inserted: 1,
            deleted: 1,
            relabeled: 1,
            ..Applied::default()
        };
        assert_eq!(applied.unwrap(), want);

        let plain = place.fresh();
        plain.create(&settings(10, None), &items, None).unwrap();
        let before = held(&plain);
        assert!(before.1.values().all(Option::is_none));
        let why = usage(plain.apply(&[&two], Some(&[b"1"]), &[]));
        assert_eq!(held(&plain), before, "{why}");
        let applied = plain.apply(&[&two, items[0]], None, &[items[1], &three]);
        let want = Applied {
            inserted: 1,
            deleted: 1,
            present: 1,
            absent: 1,
            ..Applied::default()
        };
        assert_eq!(applied.unwrap(), want);
        let ops = plain.ops_after(0).unwrap();
        let ops: Vec<_> = ops
            .into_iter()
            .map(|o| (o.seq, o.op, o.item, o.label))
            .collect();
        let (one, two) = (items[1].to_vec(), two);
        assert_eq!(
            ops,
            [(1, Op::Delete, one, None), (2, Op::Insert, two, None)]
        );
        let (_, _, labels) = plain.items().unwrap();
        assert!(labels.is_none());

        for stored in [0, 65, -1] {
            let set = format!("UPDATE ub_settings SET label_len = {stored}");
            (plain.runtime.block_on(plain.pool.execute(set.as_str()))).unwrap();
            let read = plain.settings();
            assert!(matches!(read, Err(Error::State(_))), "{stored}: {read:?}");
        }
    }
}
