//! Pre-tokens in the store (docs/cloud.md, Pre-tokens): a pre-token's run, which computes
//! its values, the pre-tokens of a dataset, and a preprocessed run's pre-tokens and
//! scalars; values on disk bounded and swept once used.

use super::runs::{raised_side, refuse_unless_waiting, refuse_used_token, start};
use super::{lock_dataset, run_state, Store};
use crate::error::Result;
use sqlx::Row;
use venn_cloud::api::{self, now, DatasetState, Pretoken, PretokenState, RunState};
use venn_cloud::Error;

impl Store {
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
        // The pre-tokens whose values are on disk: computing or computed, and not used by a
        // run that is over (whose end removed them).
        let kept: i64 = sqlx::query(
            "SELECT COUNT(*) FROM runs r JOIN run_sides s ON s.run = r.id \
             WHERE r.parties = 1 AND s.dataset = $1 AND r.state IN ($2, $3, $4) \
             AND NOT EXISTS (SELECT 1 FROM run_sides u JOIN runs v ON v.id = u.run \
             WHERE u.pretoken = r.id AND v.state IN ($4, $5))",
        )
        .bind(dataset)
        .bind(RunState::Tokens.as_str())
        .bind(RunState::Computing.as_str())
        .bind(RunState::Done.as_str())
        .bind(RunState::Failed.as_str())
        .fetch_one(&mut *tx)
        .await?
        .get(0);
        if kept as u64 >= max_pretokens {
            return Err(Error::TooLarge(format!(
                "a dataset keeps at most {max_pretokens} pre-tokens here: use or withdraw one \
                 first"
            ))
            .into());
        }
        refuse_used_token(&mut tx, token).await?;
        sqlx::query(
            "INSERT INTO runs (id, creator, parties, state, created, label) \
             VALUES ($1, $2, 1, $5, $3, $4)",
        )
        .bind(&id)
        .bind(creator)
        .bind(now())
        .bind(label)
        .bind(RunState::Tokens.as_str())
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

    /// Removes the values of pre-tokens used by runs that are over (left behind by a
    /// crash between a run's end and their removal).
    pub async fn sweep_used_pretokens(&self) -> Result<()> {
        let used: Vec<String> = sqlx::query(
            "SELECT s.pretoken FROM run_sides s JOIN runs r ON r.id = s.run \
             WHERE s.pretoken IS NOT NULL AND r.state IN ($1, $2)",
        )
        .bind(RunState::Done.as_str())
        .bind(RunState::Failed.as_str())
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
            ))
            .into());
        }
        let pretoken_state = run_state(&found, 0)?;
        if pretoken_state != RunState::Done {
            return Err(Error::Conflict(format!(
                "pre-token {pretoken} is not ready (its run is {pretoken_state})"
            ))
            .into());
        }
        let used = sqlx::query("SELECT run FROM run_sides WHERE pretoken = $1")
            .bind(pretoken)
            .fetch_optional(&mut *tx)
            .await?;
        if used.is_some() {
            return Err(Error::Conflict(format!(
                "pre-token {pretoken} was used before: a pre-token serves one run"
            ))
            .into());
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
            ))
            .into());
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
}
