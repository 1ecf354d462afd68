//! Batches of held calls in PostgreSQL: their reads, the audit trail of decisions, each call's
//! execution record, and the row lock a decision takes (`store::batch_write` writes it).

use sqlx::{PgConnection, Row};

use super::tasks::{map_rows, task_row};
use super::{
    BatchRow, BatchState, CallCounts, CallRow, CallVote, CountWindows, DecisionRow, DecisionWrite,
    PendingBatchRow, Postgres, Result, StoreError, TaskRow, Written,
};
use crate::store::columns::*;
use crate::store::receipts::Sealer;

/// A call of the tool was allowed to run: the gate or a person let it, whether or not it has
/// run yet (`calls` of any status a denial, a rejection, a cancel or an expiry never reaches).
const ALLOWED: &str = "calls.status IN ('auto', 'approved', 'started', 'finished') \
     AND (calls.verdict IS NULL OR calls.verdict = 'approve')";

/// The calls of a task, in the order the model asked for them.
pub(super) async fn task_calls(
    connection: &mut PgConnection,
    task_id: &str,
) -> Result<Vec<CallRow>> {
    let rows = sqlx::query(&format!(
        "{CALL_SELECT} WHERE task_id = $1 ORDER BY position"
    ))
    .bind(task_id)
    .fetch_all(&mut *connection)
    .await?;
    map_rows(rows, call_from_row)
}

/// Applies `decision` inside `connection`'s transaction.
async fn apply_decision(
    connection: &mut PgConnection,
    replica: &str,
    task_id: &str,
    decision: &DecisionWrite,
    seal: Option<&Sealer>,
) -> Result<Written> {
    let mut tx = super::tasks::PgTransaction {
        connection,
        replica,
    };
    crate::store::batch_write::apply_decision(&mut tx, task_id, decision, seal).await
}

/// The votes cast on batch `batch_id`, oldest first.
async fn batch_votes(connection: &mut PgConnection, batch_id: i64) -> Result<Vec<CallVote>> {
    let rows = sqlx::query(&format!("{VOTE_SELECT} WHERE batch_id = $1 ORDER BY id"))
        .bind(batch_id)
        .fetch_all(&mut *connection)
        .await?;
    map_rows(rows, vote_from_row)
}

/// The task's pending batch, if it has one.
async fn pending_batch_of(
    connection: &mut PgConnection,
    task_id: &str,
) -> Result<Option<BatchRow>> {
    let row = sqlx::query(&format!("{BATCH_SELECT} WHERE task_id = $1 AND state = $2"))
        .bind(task_id)
        .bind(BatchState::Pending.as_str())
        .fetch_optional(&mut *connection)
        .await?;
    row.as_ref().map(batch_from_row).transpose()
}

impl Postgres {
    pub async fn pending_batch(&self, task_id: &str) -> Result<Option<BatchRow>> {
        let mut connection = self.pool.acquire().await?;
        pending_batch_of(&mut connection, task_id).await
    }

    pub(in crate::store) async fn decide_planned<X, E, P>(
        &self,
        task_id: &str,
        mut plan: P,
        seal: Option<Sealer>,
    ) -> Result<std::result::Result<(Option<Written>, X), E>>
    where
        P: FnMut(
            Option<&TaskRow>,
            Option<&BatchRow>,
        ) -> std::result::Result<(Option<DecisionWrite>, X), E>,
    {
        let mut transaction = self.pool.begin().await?;
        // The task's row lock: the plan sees the task and its batch as no other replica can
        // change them until this transaction ends.
        let task = task_row(&mut transaction, task_id, true).await?;
        let mut batch = match &task {
            Some(_) => pending_batch_of(&mut transaction, task_id).await?,
            None => None,
        };
        if let Some(batch) = batch.as_mut() {
            batch.votes = batch_votes(&mut transaction, batch.id).await?;
            let steps = super::steps::batch_steps_of(&mut transaction, batch.id).await?;
            batch.handed_to = crate::store::handed_to(&steps, batch.id);
        }
        let outcome = match plan(task.as_ref(), batch.as_ref()) {
            Err(refused) => Err(refused),
            Ok((None, back)) => Ok((None, back)),
            Ok((Some(write), back)) => {
                let written = apply_decision(
                    &mut transaction,
                    &self.replica,
                    task_id,
                    &write,
                    seal.as_ref(),
                )
                .await?;
                super::leases::announce(&mut transaction, &self.replica, task_id).await?;
                Ok((Some(written), back))
            }
        };
        transaction.commit().await?;
        Ok(outcome)
    }

    pub async fn count_pending_batches(&self) -> Result<i64> {
        Ok(
            sqlx::query_scalar("SELECT COUNT(*) FROM batches WHERE state = $1")
                .bind(BatchState::Pending.as_str())
                .fetch_one(&self.pool)
                .await?,
        )
    }

    pub async fn pending_batches(&self, user_id: &str) -> Result<Vec<PendingBatchRow>> {
        let rows = sqlx::query(
            "SELECT b.id, b.task_id, b.state, b.requests, b.created_at, b.decided_at,
                    b.expires_at, t.context_id, t.agent, s.title
             FROM batches b JOIN tasks t ON t.id = b.task_id
             LEFT JOIN sessions s ON s.id = t.context_id
             WHERE b.state = $1 AND t.user_id = $2
                   AND NOT EXISTS (SELECT 1 FROM subagent_tasks link
                                   WHERE link.child_task_id = b.task_id AND link.remote = 0)
                 ORDER BY b.id",
        )
        .bind(BatchState::Pending.as_str())
        .bind(user_id)
        .fetch_all(&self.pool)
        .await?;
        map_rows(rows, |row| {
            Ok(PendingBatchRow {
                batch: batch_from_row(row)?,
                context_id: row.try_get(7)?,
                agent: row.try_get(8)?,
                title: row.try_get::<Option<String>, _>(9)?.unwrap_or_default(),
            })
        })
    }

    pub(in crate::store) async fn decide(
        &self,
        task_id: &str,
        decision: DecisionWrite,
        seal: Option<Sealer>,
    ) -> Result<Written> {
        let mut transaction = self.pool.begin().await?;
        // The task's row first, as `decide_planned` takes it: the same lock order, so a cancel
        // or an expiry racing a decision waits instead of deadlocking.
        task_row(&mut transaction, task_id, true)
            .await?
            .ok_or(StoreError::NotFound)?;
        let written = apply_decision(
            &mut transaction,
            &self.replica,
            task_id,
            &decision,
            seal.as_ref(),
        )
        .await?;
        super::leases::announce(&mut transaction, &self.replica, task_id).await?;
        transaction.commit().await?;
        Ok(written)
    }

    pub async fn calls(&self, task_id: &str) -> Result<Vec<CallRow>> {
        let mut connection = self.pool.acquire().await?;
        task_calls(&mut connection, task_id).await
    }

    pub async fn call_counts(
        &self,
        task_id: &str,
        user_id: &str,
        tool: &str,
        windows: &CountWindows,
    ) -> Result<CallCounts> {
        // One statement, so the answers come from one snapshot of the store.
        let row = sqlx::query(&format!(
            "SELECT \
             (SELECT COUNT(*) FROM calls WHERE task_id = $1 AND name = $3 AND {ALLOWED}), \
             (SELECT COUNT(*) FROM calls JOIN tasks ON tasks.id = calls.task_id \
               WHERE tasks.user_id = $2 AND calls.name = $3 AND {ALLOWED} \
               AND (calls.started_at IS NULL OR calls.started_at >= $4)), \
             ARRAY(SELECT DISTINCT name FROM calls WHERE task_id = $1 AND verdict = 'approve' \
               ORDER BY name), \
             (SELECT COALESCE(jsonb_object_agg(key, jsonb_build_array(in_task, last_hour, \
               last_day)), '{{}}'::jsonb)::text FROM ( \
               SELECT arg.key AS key, \
               SUM(CASE WHEN calls.task_id = $1 THEN (arg.value)::numeric ELSE 0 END) AS in_task, \
               SUM(CASE WHEN calls.started_at IS NULL OR calls.started_at >= $4 \
                 THEN (arg.value)::numeric ELSE 0 END) AS last_hour, \
               SUM(CASE WHEN calls.started_at IS NULL OR calls.started_at >= $5 \
                 THEN (arg.value)::numeric ELSE 0 END) AS last_day \
               FROM calls JOIN tasks ON tasks.id = calls.task_id, \
               jsonb_each(COALESCE(calls.run_args, calls.args)::jsonb) AS arg \
               WHERE tasks.user_id = $2 AND calls.name = $3 AND {ALLOWED} \
               AND (calls.task_id = $1 OR calls.started_at IS NULL OR calls.started_at >= $5) \
               AND jsonb_typeof(arg.value) = 'number' GROUP BY arg.key) AS sums)"
        ))
        .bind(task_id)
        .bind(user_id)
        .bind(tool)
        .bind(&windows.hour)
        .bind(&windows.day)
        .fetch_one(&self.pool)
        .await?;
        let mut counts = CallCounts {
            tool_allowed_in_task: row.try_get(0)?,
            tool_allowed_by_user_last_hour: row.try_get(1)?,
            approved_in_task: row.try_get(2)?,
            ..CallCounts::default()
        };
        let sums: String = row.try_get(3)?;
        counts.read_sums(&sums)?;
        Ok(counts)
    }

    pub async fn voted_on(&self, task_id: &str, user_id: &str) -> Result<bool> {
        let found: Option<i32> = sqlx::query_scalar(
            "SELECT 1 FROM call_votes WHERE task_id = $1 AND user_id = $2 LIMIT 1",
        )
        .bind(task_id)
        .bind(user_id)
        .fetch_optional(&self.pool)
        .await?;
        Ok(found.is_some())
    }

    pub async fn task_votes(&self, task_id: &str) -> Result<Vec<(i64, CallVote)>> {
        let rows = sqlx::query(&format!("{VOTE_SELECT} WHERE task_id = $1 ORDER BY id"))
            .bind(task_id)
            .fetch_all(&self.pool)
            .await?;
        map_rows(rows, batch_vote_from_row)
    }

    pub async fn pending_batches_of_agents(
        &self,
        agents: &[String],
    ) -> Result<Vec<(PendingBatchRow, String)>> {
        let rows = sqlx::query(
            "SELECT b.id, b.task_id, b.state, b.requests, b.created_at, b.decided_at,
                    b.expires_at, t.context_id, t.agent, s.title, t.user_id
             FROM batches b JOIN tasks t ON t.id = b.task_id
             LEFT JOIN sessions s ON s.id = t.context_id
             WHERE b.state = $1 AND t.agent = ANY($2)
                   AND NOT EXISTS (SELECT 1 FROM subagent_tasks link
                                   WHERE link.child_task_id = b.task_id AND link.remote = 0)
             ORDER BY b.id",
        )
        .bind(BatchState::Pending.as_str())
        .bind(agents)
        .fetch_all(&self.pool)
        .await?;
        map_rows(rows, |row| {
            Ok((
                PendingBatchRow {
                    batch: batch_from_row(row)?,
                    context_id: row.try_get(7)?,
                    agent: row.try_get(8)?,
                    title: row.try_get::<Option<String>, _>(9)?.unwrap_or_default(),
                },
                row.try_get(10)?,
            ))
        })
    }

    pub async fn task_decisions(&self, task_id: &str) -> Result<Vec<DecisionRow>> {
        let rows = sqlx::query(&format!("{DECISION_SELECT} WHERE task_id = $1 ORDER BY id"))
            .bind(task_id)
            .fetch_all(&self.pool)
            .await?;
        map_rows(rows, decision_from_row)
    }

    pub async fn recent_decisions(&self, user_id: &str, limit: i64) -> Result<Vec<DecisionRow>> {
        let rows = sqlx::query(&format!(
            "{DECISION_SELECT} WHERE user_id = $1 ORDER BY id DESC LIMIT $2"
        ))
        .bind(user_id)
        .bind(limit)
        .fetch_all(&self.pool)
        .await?;
        map_rows(rows, decision_from_row)
    }
}
