//! Tasks in the store: leased to a worker (or the service's own pool) for a while, their
//! input (a chunk's points, or a preprocessed run's raised values), and their answers.

use super::files::write_in_background;
use super::{run_state, Store};
use crate::error::Result;
use sqlx::Row;
use std::path::PathBuf;
use venn_cloud::api::{self, now, RunState, Work};
use venn_cloud::crypto::{self, Secret};
use venn_cloud::Error;

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

/// Where a task is in its life: the word in its row's `state` column, bound as a query
/// parameter wherever SQL names one (so a misspelt state cannot compile).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum TaskState {
    /// Waiting for a worker: never leased, or put back (its worker quarantined).
    Pending,
    /// Held by a worker until `lease_until` (then another may take it).
    Leased,
    /// Answered.
    Done,
}

impl TaskState {
    /// The state's word.
    pub(super) fn as_str(self) -> &'static str {
        match self {
            TaskState::Pending => "pending",
            TaskState::Leased => "leased",
            TaskState::Done => "done",
        }
    }
}

impl Store {
    /// Leases the next task that is pending or whose lease has expired, for
    /// `lease_seconds`, to external worker `worker` (`None`: the service's own pool):
    /// runs' tasks before pre-tokens' (precomputation is what the service does while
    /// idle), older runs first. The caller serialises leasing (one service process).
    pub async fn lease(&self, lease_seconds: u64, worker: Option<&str>) -> Result<Option<Leased>> {
        let at = now();
        let row = sqlx::query(
            "SELECT t.run, t.side, t.chunk FROM tasks t JOIN runs r ON r.id = t.run \
             WHERE r.state = $2 \
             AND (t.state = $3 OR (t.state = $4 AND t.lease_until < $1)) \
             ORDER BY CASE WHEN r.parties = 1 THEN 1 ELSE 0 END, r.started, t.run, t.side, \
             t.chunk LIMIT 1",
        )
        .bind(at)
        .bind(RunState::Computing.as_str())
        .bind(TaskState::Pending.as_str())
        .bind(TaskState::Leased.as_str())
        .fetch_optional(&self.pool)
        .await?;
        let Some(row) = row else { return Ok(None) };
        let (run, side, chunk): (String, i64, i64) = (row.get(0), row.get(1), row.get(2));
        let updated = sqlx::query(
            "UPDATE tasks SET state = $7, lease_until = $1, leases = leases + 1, \
             worker = $6 WHERE run = $2 AND side = $3 AND chunk = $4 \
             AND (state = $8 OR (state = $7 AND lease_until < $5))",
        )
        .bind(at + lease_seconds as i64)
        .bind(&run)
        .bind(side)
        .bind(chunk)
        .bind(at)
        .bind(worker)
        .bind(TaskState::Leased.as_str())
        .bind(TaskState::Pending.as_str())
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
            return Err(Error::Conflict(format!("run {run} is {state}")).into());
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
            row.get::<String, _>(4) == TaskState::Done.as_str(),
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
        sqlx::query("UPDATE tasks SET state = $4 WHERE run = $1 AND side = $2 AND chunk = $3")
            .bind(run)
            .bind(side as i64)
            .bind(chunk as i64)
            .bind(TaskState::Done.as_str())
            .execute(&self.pool)
            .await?;
        self.all_done(run).await
    }

    /// Whether every task of a computing run is done.
    pub async fn all_done(&self, run: &str) -> Result<bool> {
        let left: i64 = sqlx::query("SELECT COUNT(*) FROM tasks WHERE run = $1 AND state <> $2")
            .bind(run)
            .bind(TaskState::Done.as_str())
            .fetch_one(&self.pool)
            .await?
            .get(0);
        Ok(left == 0)
    }
}
