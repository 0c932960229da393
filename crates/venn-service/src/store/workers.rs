//! External workers in the store: enrolled by the operator, each under its own name with
//! the SHA-256 of its secret, and quarantined once an answer of theirs fails a spot check.

use super::tasks::TaskState;
use super::{now, Store};
use crate::error::Result;
use serde::Serialize;
use sqlx::Row;
use venn_cloud::api::RunState;
use venn_cloud::Error;

/// An enrolled worker.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Worker {
    /// The name it was enrolled under.
    pub name: String,
    /// When it was enrolled (Unix seconds).
    pub created: i64,
    /// When it was quarantined (`None`: trusted).
    pub quarantined: Option<i64>,
    /// Why.
    pub reason: Option<String>,
}

impl Store {
    /// Enrols worker `name` with `secret_hash` (hex SHA-256). A name already enrolled is
    /// refused unless `replace`, which gives it the new secret (the old one no longer
    /// admits it) and lifts its quarantine.
    pub async fn enrol_worker(&self, name: &str, secret_hash: &str, replace: bool) -> Result<()> {
        let on_conflict = match replace {
            true => {
                "DO UPDATE SET secret_sha256 = excluded.secret_sha256, \
                 created = excluded.created, quarantined = NULL, reason = NULL"
            }
            false => "DO NOTHING",
        };
        let inserted = sqlx::query(&format!(
            "INSERT INTO workers (name, secret_sha256, created) VALUES ($1, $2, $3) \
             ON CONFLICT (name) {on_conflict}"
        ))
        .bind(name)
        .bind(secret_hash)
        .bind(now())
        .execute(&self.pool)
        .await?;
        match inserted.rows_affected() {
            1 => Ok(()),
            _ => Err(Error::Conflict(format!(
                "a worker named '{name}' is enrolled already (--replace gives it a new secret)"
            ))
            .into()),
        }
    }

    /// An enrolled worker and its secret's hash.
    pub async fn worker(&self, name: &str) -> Result<Option<(Worker, String)>> {
        let row = sqlx::query(
            "SELECT name, created, quarantined, reason, secret_sha256 FROM workers \
             WHERE name = $1",
        )
        .bind(name)
        .fetch_optional(&self.pool)
        .await?;
        Ok(row.map(|r| (worker_of(&r), r.get(4))))
    }

    /// The enrolled workers, by name.
    pub async fn workers(&self) -> Result<Vec<Worker>> {
        let rows =
            sqlx::query("SELECT name, created, quarantined, reason FROM workers ORDER BY name")
                .fetch_all(&self.pool)
                .await?;
        Ok(rows.iter().map(worker_of).collect())
    }

    /// Quarantines worker `name` for `reason`, in one transaction: the tasks it holds go
    /// back to the queue at once, and so do those it answered of runs that still have work
    /// left (not being joined yet), since its other answers are in doubt too.
    pub async fn quarantine_worker(&self, name: &str, reason: &str) -> Result<()> {
        let mut tx = self.pool.begin().await?;
        sqlx::query(
            "UPDATE workers SET quarantined = $1, reason = $2 \
             WHERE name = $3 AND quarantined IS NULL",
        )
        .bind(now())
        .bind(reason)
        .bind(name)
        .execute(&mut *tx)
        .await?;
        sqlx::query(
            "UPDATE tasks SET state = $2, lease_until = 0, worker = NULL \
             WHERE worker = $1 AND (state = $3 OR (state = $4 AND run IN \
             (SELECT r.id FROM runs r JOIN tasks t ON t.run = r.id \
             WHERE r.state = $5 AND t.state <> $4)))",
        )
        .bind(name)
        .bind(TaskState::Pending.as_str())
        .bind(TaskState::Leased.as_str())
        .bind(TaskState::Done.as_str())
        .bind(RunState::Computing.as_str())
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(())
    }
}

fn worker_of(row: &sqlx::any::AnyRow) -> Worker {
    Worker {
        name: row.get(0),
        created: row.get(1),
        quarantined: row.try_get(2).ok().flatten(),
        reason: row.try_get(3).ok().flatten(),
    }
}
