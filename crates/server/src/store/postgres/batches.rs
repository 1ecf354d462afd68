//! Batches of held calls, the compare-and-set that decides them, the audit trail of decisions,
//! and each call's execution record.

use sqlx::{PgConnection, Row};

use super::rows::json_text;
use super::tasks::{append_events, map_rows, task_row};
use super::{
    now, task_state_text, BatchRow, BatchState, CallRow, CallStatus, CallVote, DecisionRow,
    DecisionWrite, PendingBatchRow, Postgres, Result, StoreError, TaskRow, Written,
};
use crate::store::columns::*;

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

async fn apply_decision(
    connection: &mut PgConnection,
    replica: &str,
    task_id: &str,
    decision: &DecisionWrite,
) -> Result<Written> {
    let now = now();
    // The compare-and-set: of two replicas deciding at once, the second waits for the first's
    // row lock, then finds the batch no longer pending.
    // Approvals short of a quorum leave the batch pending: the same statement checks that it
    // still is (its `decided_at` stays empty).
    let partial = decision.batch_state == BatchState::Pending;
    let won = sqlx::query(
        "UPDATE batches SET state = $1, decided_at = CASE WHEN $6 THEN NULL ELSE $2 END
         WHERE id = $3 AND task_id = $4 AND state = $5",
    )
    .bind(decision.batch_state.as_str())
    .bind(&now)
    .bind(decision.batch_id)
    .bind(task_id)
    .bind(BatchState::Pending.as_str())
    .bind(partial)
    .execute(&mut *connection)
    .await?
    .rows_affected();
    if won != 1 {
        return Err(StoreError::Conflict("the batch was already decided"));
    }
    if let Some(link) = &decision.uses_link {
        super::links::use_link(&mut *connection, link, decision.batch_id, &now).await?;
    }
    insert_votes(connection, task_id, decision, &now).await?;
    if partial {
        return write_partial_approval(connection, replica, task_id, decision, &now).await;
    }
    settle_calls(connection, task_id, decision).await?;
    sqlx::query(
        "INSERT INTO decisions (batch_id, task_id, user_id, channel, decision, summary,
                                decided_at, decider_auth)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
    )
    .bind(decision.batch_id)
    .bind(task_id)
    .bind(&decision.user_id)
    .bind(decision.channel.as_str())
    .bind(json_text(&decision.decision)?)
    .bind(&decision.summary)
    .bind(&now)
    .bind(decision.decider_auth.as_deref())
    .execute(&mut *connection)
    .await?;
    let events = decision.events.len() as i64;
    let last: i64 = sqlx::query_scalar(
        // A task that goes on working is leased to this replica, whose runner takes it next:
        // another replica's sweep must not take it up meanwhile.
        "UPDATE tasks SET state = $1, last_seq = last_seq + $2, updated_at = $3,
                          lease_owner = CASE WHEN $1 = $6 THEN $5 ELSE lease_owner END,
                          lease_until = CASE WHEN $1 = $6
                                             THEN clock_timestamp() + make_interval(secs => $7)
                                             ELSE lease_until END
         WHERE id = $4
         RETURNING last_seq",
    )
    .bind(task_state_text(decision.task_state))
    .bind(events)
    .bind(&now)
    .bind(task_id)
    .bind(replica)
    .bind(task_state_text(signoff_protocol::TaskState::Working))
    .bind(crate::store::LEASE.as_secs_f64())
    .fetch_optional(&mut *connection)
    .await?
    .ok_or(StoreError::NotFound)?;
    append_events(
        connection,
        task_id,
        last - events + 1,
        &decision.events,
        &now,
    )
    .await?;
    let approvals_of = super::approvals::record_decided(
        connection,
        replica,
        task_id,
        decision.batch_id,
        decision.channel.as_str(),
        &decision.user_id,
        &now,
    )
    .await?;
    write_outbox(connection, replica, task_id, decision, last, &now).await?;
    Ok(Written {
        last_seq: last,
        approvals_of,
    })
}

/// An approval short of its quorum: the batch stays pending, its events are appended, and
/// the batch's approvers' streams hear how far it has come.
async fn write_partial_approval(
    connection: &mut PgConnection,
    replica: &str,
    task_id: &str,
    decision: &DecisionWrite,
    now: &str,
) -> Result<Written> {
    let events = decision.events.len() as i64;
    let last: i64 = sqlx::query_scalar(
        "UPDATE tasks SET last_seq = last_seq + $1, updated_at = $2 WHERE id = $3
         RETURNING last_seq",
    )
    .bind(events)
    .bind(now)
    .bind(task_id)
    .fetch_optional(&mut *connection)
    .await?
    .ok_or(StoreError::NotFound)?;
    append_events(
        connection,
        task_id,
        last - events + 1,
        &decision.events,
        now,
    )
    .await?;
    // The batch's approvers' streams hear how far it has come.
    let approvals_of = super::approvals::record_progress(
        connection,
        replica,
        task_id,
        decision.batch_id,
        &decision.user_id,
        now,
    )
    .await?;
    write_outbox(connection, replica, task_id, decision, last, now).await?;
    Ok(Written {
        last_seq: last,
        approvals_of,
    })
}

/// Sets each held call of the batch to its verdict; a call no longer held is a conflict.
async fn settle_calls(
    connection: &mut PgConnection,
    task_id: &str,
    decision: &DecisionWrite,
) -> Result<()> {
    for verdict in &decision.verdicts {
        let done = sqlx::query(
            "UPDATE calls SET status = $1, verdict = $2, reason = $3, run_args = $4,
                              run_args_sha256 = $5
             WHERE task_id = $6 AND call_id = $7 AND batch_id = $8 AND status = $9",
        )
        .bind(verdict.status.as_str())
        .bind(verdict.verdict.as_str())
        .bind(verdict.reason.as_deref())
        .bind(verdict.run_args.as_ref().map(json_text).transpose()?)
        .bind(verdict.run_args_sha256.as_deref())
        .bind(task_id)
        .bind(&verdict.call_id)
        .bind(decision.batch_id)
        .bind(CallStatus::Held.as_str())
        .execute(&mut *connection)
        .await?
        .rows_affected();
        if done != 1 {
            return Err(StoreError::Conflict("a call of the batch is not held"));
        }
    }
    Ok(())
}

/// Writes the decision's notifications and pushes (the outbox) in its transaction.
async fn write_outbox(
    connection: &mut PgConnection,
    replica: &str,
    task_id: &str,
    decision: &DecisionWrite,
    last_seq: i64,
    now: &str,
) -> Result<()> {
    if !decision.notifications.is_empty() {
        let mut shared = super::tasks::PgTransaction {
            connection: &mut *connection,
            replica,
        };
        crate::store::outbox::insert_notifications(
            &mut shared,
            task_id,
            Some(decision.batch_id),
            &decision.notifications,
            now,
        )
        .await?;
    }
    if decision.push {
        let mut shared = super::tasks::PgTransaction {
            connection: &mut *connection,
            replica,
        };
        crate::store::outbox::insert_pushes(&mut shared, task_id, last_seq, now).await?;
    }
    Ok(())
}

/// Records the decision's votes (`call_votes`).
async fn insert_votes(
    connection: &mut PgConnection,
    task_id: &str,
    decision: &DecisionWrite,
    now: &str,
) -> Result<()> {
    for vote in &decision.votes {
        sqlx::query(VOTE_INSERT)
            .bind(decision.batch_id)
            .bind(task_id)
            .bind(&vote.call_id)
            .bind(&vote.user_id)
            .bind(vote.email.as_deref())
            .bind(vote.verdict.as_str())
            .bind(vote.reason.as_deref())
            .bind(vote.run_args.as_ref().map(json_text).transpose()?)
            .bind(&vote.args_sha256)
            .bind(json_text(&serde_json::json!(vote.eligible_by))?)
            .bind(vote.channel.as_str())
            .bind(now)
            .execute(&mut *connection)
            .await?;
    }
    Ok(())
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
                let written =
                    apply_decision(&mut transaction, &self.replica, task_id, &write).await?;
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
    ) -> Result<Written> {
        let mut transaction = self.pool.begin().await?;
        // The task's row first, as `decide_planned` takes it: the same lock order, so a cancel
        // or an expiry racing a decision waits instead of deadlocking.
        task_row(&mut transaction, task_id, true)
            .await?
            .ok_or(StoreError::NotFound)?;
        let written = apply_decision(&mut transaction, &self.replica, task_id, &decision).await?;
        super::leases::announce(&mut transaction, &self.replica, task_id).await?;
        transaction.commit().await?;
        Ok(written)
    }

    pub async fn calls(&self, task_id: &str) -> Result<Vec<CallRow>> {
        let mut connection = self.pool.acquire().await?;
        task_calls(&mut connection, task_id).await
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
