//! A dataset's authoritative data: its settings, the items in its set and every change to
//! the set in order (`migrations/`), in SQLite (a file in the dataset's directory, the
//! default) or PostgreSQL, through sqlx's `Any` driver as the Thunder service's store.
//! The calls block: each runs on the store's own single-threaded runtime.
//!
//! An update is durable when its transaction commits: its items' rows and its operations'
//! rows commit together, so what is published later ([`crate::publish`]) can always be
//! made from here, whatever was interrupted.

use sqlx::any::AnyPoolOptions;
use sqlx::{AnyPool, Executor, Row};
use std::collections::HashSet;
use venn::session::run_plan::KeyForm;
use venn::{Error, Items, Result};

/// The schema's migrations, compiled in (as the Thunder service's store has them).
const MIGRATIONS: [(i64, &str, &str); 2] = [
    (1, "schema", include_str!("../migrations/0001_schema.sql")),
    (
        2,
        "item count",
        include_str!("../migrations/0002_item_count.sql"),
    ),
];

/// Rows an import or an update writes in one statement.
const IMPORT_ROWS: usize = 500;

/// A dataset's settings, fixed when it is made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Settings {
    /// The most items its set may hold (τ is chosen for it).
    pub max_items: u64,
    /// The most items a query may hold, padding included (a padded size).
    pub max_query: u32,
    /// How its keys were taken from their rows, which clients' keys must match.
    pub form: KeyForm,
}

/// A change to the set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// An item the set lacked was added.
    Insert,
    /// An item the set held was removed.
    Delete,
}

/// What an update did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Applied {
    /// Items added.
    pub inserted: u64,
    /// Items removed.
    pub deleted: u64,
    /// Items to add that the set held already.
    pub present: u64,
    /// Items to remove that the set did not hold.
    pub absent: u64,
}

/// The store of one dataset.
pub struct Store {
    runtime: tokio::runtime::Runtime,
    pool: AnyPool,
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

    /// Makes the dataset: its settings and its first `items` (distinct), in one
    /// transaction. Refused if it is made already, or the items are more than
    /// `settings.max_items`.
    pub fn create(&self, settings: &Settings, items: &[&[u8]]) -> Result<()> {
        if items.len() as u64 > settings.max_items {
            return Err(Error::Usage(format!(
                "{} items, more than the dataset's {} (--max-items)",
                items.len(),
                settings.max_items
            )));
        }
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
                 key_columns, key_any, created, items) VALUES (1, $1, $2, $3, $4, $5, $6, $7, \
                 $8)",
            )
            .bind(settings.max_items as i64)
            .bind(i64::from(settings.max_query))
            .bind(i64::from(form.trim))
            .bind(i64::from(form.lowercase))
            .bind(i64::from(form.columns))
            .bind(i64::from(form.any))
            .bind(now())
            .bind(items.len() as i64)
            .execute(&mut *tx)
            .await
            .map_err(failed("write its settings"))?;
            for rows in items.chunks(IMPORT_ROWS) {
                let places: Vec<String> = (1..=rows.len()).map(|i| format!("(${i})")).collect();
                let sql = format!("INSERT INTO ub_items (item) VALUES {}", places.join(", "));
                let mut query = sqlx::query(&sql);
                for item in rows {
                    query = query.bind(*item);
                }
                query
                    .execute(&mut *tx)
                    .await
                    .map_err(failed("import the items"))?;
            }
            tx.commit().await.map_err(failed("commit"))
        })
    }

    /// The dataset's settings; refused if it is not made.
    pub fn settings(&self) -> Result<Settings> {
        self.runtime.block_on(async {
            let row = sqlx::query(
                "SELECT max_items, max_query, key_trim, key_lowercase, key_columns, key_any \
                 FROM ub_settings WHERE id = 1",
            )
            .fetch_optional(&self.pool)
            .await
            .map_err(failed("read its settings"))?
            .ok_or_else(|| Error::Usage("no dataset here: make one with `venn ub init`".into()))?;
            let number = |i: usize| row.get::<i64, _>(i);
            let bad = || Error::State("the dataset's store: settings out of range".into());
            Ok(Settings {
                max_items: u64::try_from(number(0)).map_err(|_| bad())?,
                max_query: u32::try_from(number(1)).map_err(|_| bad())?,
                form: KeyForm {
                    trim: number(2) != 0,
                    lowercase: number(3) != 0,
                    columns: u16::try_from(number(4)).map_err(|_| bad())?,
                    any: number(5) != 0,
                },
            })
        })
    }

    /// Adds `upserts` and removes `deletes` (each distinct; no item in both) in one
    /// transaction, each change an operation: an item the set holds already, or lacks,
    /// changes nothing. Refused, changing nothing, if the set would exceed its
    /// `max_items`.
    pub fn apply(&self, upserts: &[&[u8]], deletes: &[&[u8]]) -> Result<Applied> {
        let removing: HashSet<&[u8]> = deletes.iter().copied().collect();
        if let Some(both) = upserts.iter().find(|i| removing.contains(*i)) {
            return Err(Error::Usage(format!(
                "the item {:?} is both to add and to remove",
                String::from_utf8_lossy(both)
            )));
        }
        let max_items = self.settings()?.max_items;
        self.runtime.block_on(async {
            let mut tx = self.pool.begin().await.map_err(failed("begin"))?;
            let mut seq = last_seq(&mut tx).await?;
            let mut applied = Applied::default();
            let created = now();
            // A statement per IMPORT_ROWS items (a statement per item costs a round trip
            // to the store's thread each: most of an update's time), each returning the
            // items it changed: those are the operations.
            let changes = (deletes.chunks(IMPORT_ROWS).map(|c| (Op::Delete, c)))
                .chain(upserts.chunks(IMPORT_ROWS).map(|c| (Op::Insert, c)));
            for (op, items) in changes {
                let places = (1..=items.len()).map(|i| format!("${i}"));
                let sql = match op {
                    Op::Insert => format!(
                        "INSERT INTO ub_items (item) VALUES {} ON CONFLICT DO NOTHING \
                         RETURNING item",
                        places
                            .map(|p| format!("({p})"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                    Op::Delete => format!(
                        "DELETE FROM ub_items WHERE item IN ({}) RETURNING item",
                        places.collect::<Vec<_>>().join(", ")
                    ),
                };
                let mut query = sqlx::query(&sql);
                for item in items {
                    query = query.bind(*item);
                }
                let changed = query
                    .fetch_all(&mut *tx)
                    .await
                    .map_err(failed("change its items"))?;
                let (done, not) = match op {
                    Op::Insert => (&mut applied.inserted, &mut applied.present),
                    Op::Delete => (&mut applied.deleted, &mut applied.absent),
                };
                *done += changed.len() as u64;
                *not += (items.len() - changed.len()) as u64;
                if changed.is_empty() {
                    continue;
                }
                let places: Vec<String> = (0..changed.len())
                    .map(|i| {
                        format!(
                            "(${}, ${}, ${}, ${})",
                            4 * i + 1,
                            4 * i + 2,
                            4 * i + 3,
                            4 * i + 4
                        )
                    })
                    .collect();
                let sql = format!(
                    "INSERT INTO ub_ops (seq, op, item, created) VALUES {}",
                    places.join(", ")
                );
                let mut record = sqlx::query(&sql);
                for row in &changed {
                    seq += 1;
                    record = (record.bind(seq).bind(op.name()))
                        .bind(row.get::<Vec<u8>, _>(0))
                        .bind(created);
                }
                record
                    .execute(&mut *tx)
                    .await
                    .map_err(failed("record an operation"))?;
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
    pub fn ops_after(&self, seq: u64) -> Result<Vec<(u64, Op, Vec<u8>)>> {
        self.runtime.block_on(async {
            let rows = sqlx::query("SELECT seq, op, item FROM ub_ops WHERE seq > $1 ORDER BY seq")
                .bind(seq as i64)
                .fetch_all(&self.pool)
                .await
                .map_err(failed("read its operations"))?;
            rows.iter()
                .map(|row| {
                    let op = match row.get::<String, _>(1).as_str() {
                        "insert" => Op::Insert,
                        "delete" => Op::Delete,
                        other => return Err(Error::State(format!("a stored operation '{other}'"))),
                    };
                    Ok((row.get::<i64, _>(0) as u64, op, row.get::<Vec<u8>, _>(2)))
                })
                .collect()
        })
    }

    /// Every item in the set, with the sequence number of the last operation they
    /// reflect: read in one transaction, streamed into one buffer.
    pub fn items(&self) -> Result<(u64, Items)> {
        use futures_util::TryStreamExt;
        self.runtime.block_on(async {
            let mut tx = self.pool.begin().await.map_err(failed("begin"))?;
            let last = last_seq(&mut tx).await?;
            let mut items = Items::new();
            {
                let mut rows = sqlx::query("SELECT item FROM ub_items").fetch(&mut *tx);
                while let Some(row) = rows.try_next().await.map_err(failed("read its items"))? {
                    items.push(row.get::<&[u8], _>(0));
                }
            }
            tx.commit().await.map_err(failed("commit"))?;
            Ok((last as u64, items))
        })
    }
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
