//! Runs in the store: created over sealed datasets, their owners' tokens taken, started
//! (a task a chunk) once all are in, failed when they wait too long or a dataset goes,
//! finished once joined.

use super::tasks::TaskState;
use super::{lock_dataset, run_state, Store};
use crate::error::Result;
use sqlx::Row;
use venn_cloud::api::{self, now, DatasetState, Run, RunKind, RunSide, RunState};
use venn_cloud::Error;

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

/// Refuses a run that no longer waits for tokens or scalars, or that was created before
/// `expired` (it waited past the token wait: a late token must not start it).
pub(super) async fn refuse_unless_waiting(
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
        ))
        .into()),
        RunState::Tokens => Ok(()),
        state => Err(Error::Conflict(format!("run {run} is {state}")).into()),
    }
}

/// Refuses a token given before (to a run or as a pre-token): a token serves one run.
pub(super) async fn refuse_used_token(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    token: &str,
) -> Result<()> {
    let used = sqlx::query("SELECT run FROM run_sides WHERE token = $1")
        .bind(token)
        .fetch_optional(&mut **tx)
        .await?;
    match used {
        Some(_) => Err(Error::Conflict(
            "this token was given before: a token serves one run".into(),
        )
        .into()),
        None => Ok(()),
    }
}

impl Store {
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
             VALUES ($1, $2, $3, $6, $4, $5)",
        )
        .bind(&id)
        .bind(creator)
        .bind(datasets.len() as i64)
        .bind(now())
        .bind(i64::from(preprocessed))
        .bind(RunState::Tokens.as_str())
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
            "SELECT COUNT(*), CAST(SUM(CASE WHEN state = $2 THEN 1 ELSE 0 END) AS BIGINT) \
             FROM tasks WHERE run = $1",
        )
        .bind(id)
        .bind(TaskState::Done.as_str())
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
            return Err(
                Error::Conflict(format!("side {side} of run {run} has its token already")).into(),
            );
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

    /// Fails the runs that have waited for tokens or scalars since before `expired` (a
    /// pre-token given to one would otherwise keep its values on disk for good); each only
    /// if it still waits (its last token may have come meanwhile).
    pub async fn expire_waiting(&self, expired: i64) -> Result<()> {
        let stale: Vec<String> =
            sqlx::query("SELECT id FROM runs WHERE state = $2 AND parties > 1 AND created < $1")
                .bind(expired)
                .bind(RunState::Tokens.as_str())
                .fetch_all(&self.pool)
                .await?
                .iter()
                .map(|r| r.get(0))
                .collect();
        for run in stale {
            let failed = sqlx::query(
                "UPDATE runs SET state = $4, error = $1, finished = $2 \
                 WHERE id = $3 AND state = $5",
            )
            .bind("not every token or scalar came in time")
            .bind(now())
            .bind(&run)
            .bind(RunState::Failed.as_str())
            .bind(RunState::Tokens.as_str())
            .execute(&self.pool)
            .await?;
            if failed.rows_affected() == 1 {
                self.discard(&run).await?;
            }
        }
        Ok(())
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

    /// Marks a run done with `matches` (its result files are in place; `None` for a
    /// pre-token's run, which has none).
    pub async fn finish(&self, run: &str, matches: Option<u64>) -> Result<()> {
        sqlx::query(
            "UPDATE runs SET state = $4, matches = $1, finished = $2 \
             WHERE id = $3 AND state = $5",
        )
        .bind(matches.map(|m| m as i64))
        .bind(now())
        .bind(run)
        .bind(RunState::Done.as_str())
        .bind(RunState::Computing.as_str())
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// Marks a run failed and [`discard`](Self::discard)s what it left.
    pub async fn fail(&self, run: &str, error: &str) -> Result<()> {
        sqlx::query("UPDATE runs SET state = $4, error = $1, finished = $2 WHERE id = $3")
            .bind(error)
            .bind(now())
            .bind(run)
            .bind(RunState::Failed.as_str())
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
}

/// Starts a run whose tokens (or scalars) are all in: the state `computing` (refused if
/// it is no longer waiting: a deletion may have failed it meanwhile) and a task per chunk
/// of its sides (of side `only`, if given).
pub(super) async fn start(
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
    let started =
        sqlx::query("UPDATE runs SET state = $3, started = $1 WHERE id = $2 AND state = $4")
            .bind(now())
            .bind(run)
            .bind(RunState::Computing.as_str())
            .bind(RunState::Tokens.as_str())
            .execute(&mut **tx)
            .await?;
    if started.rows_affected() != 1 {
        return Err(Error::Conflict(format!("run {run} is no longer waiting")).into());
    }
    for r in &chunks {
        sqlx::query(
            "INSERT INTO tasks (run, side, chunk, state, lease_until, leases) \
             VALUES ($1, $2, $3, $4, 0, 0)",
        )
        .bind(run)
        .bind(r.get::<i64, _>(0))
        .bind(r.get::<i64, _>(1))
        .bind(TaskState::Pending.as_str())
        .execute(&mut **tx)
        .await?;
    }
    Ok(())
}
