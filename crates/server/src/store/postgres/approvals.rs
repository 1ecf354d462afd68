//! The approvals stream's events in PostgreSQL: written in the transaction that opens, decides
//! or deletes a batch, read back after an id.
//!
//! An identity column alone hands out numbers when rows are inserted, not when they commit: a
//! reader could see 11 before 10 commits, and a stream that resumed after 11 would miss 10. So
//! a writer takes [`EVENTS_LOCK`] right before its insert, as the last statement before its
//! commit (it then waits for nothing else, so no deadlock): the writers of events commit one
//! after the other, and the ids grow in commit order across every replica.
//!
//! Each writer also tells the other replicas whose approvals stream changed (NOTIFY on
//! [`APPROVALS_CHANNEL`], sent when it commits), so they wake that user's streams only.

use sqlx::PgConnection;

use super::tasks::map_rows;
use super::{Postgres, Result};
use crate::store::approvals::{
    approval_event_from_row, user_digest, ApprovalEventRow, APPROVAL_EVENT_SELECT, HANDED_OVER,
    OUTCOME_DELETED,
};

/// The channel replicas announce approval events on; the payload is `<replica> <digest>`, the
/// [`user_digest`] of the user whose event it is.
pub(super) const APPROVALS_CHANNEL: &str = "signoff_approvals";

/// The notice's prefix of `replica`, which the statements complete with the user's digest.
fn notice_prefix(replica: &str) -> String {
    format!("{replica} ")
}

/// Tells the other replicas, when the transaction commits, that `user_id` got an event.
async fn announce(connection: &mut PgConnection, replica: &str, user_id: &str) -> Result<()> {
    sqlx::query("SELECT pg_notify($1, $2)")
        .bind(APPROVALS_CHANNEL)
        .bind(format!(
            "{}{}",
            notice_prefix(replica),
            user_digest(user_id)
        ))
        .execute(&mut *connection)
        .await?;
    Ok(())
}

/// The advisory lock that orders the writers of approval events ("approval" in ASCII).
const EVENTS_LOCK: i64 = 0x6170_7072_6f76_616c;

async fn take_events_lock(connection: &mut PgConnection) -> Result<()> {
    sqlx::query("SELECT pg_advisory_xact_lock($1)")
        .bind(EVENTS_LOCK)
        .execute(&mut *connection)
        .await?;
    Ok(())
}

/// The batch `batch_id` of `task_id` started waiting; the user whose event it is, if one was
/// written. Call it last before the commit. A local subagent's batch is no event of its own:
/// its calls wait nested in its parent's batch, which has the event.
pub(super) async fn record_pending(
    connection: &mut PgConnection,
    replica: &str,
    task_id: &str,
    batch_id: i64,
    now: &str,
) -> Result<Option<String>> {
    take_events_lock(connection).await?;
    Ok(sqlx::query_scalar(
        "WITH event AS (
             INSERT INTO approval_events (user_id, task_id, context_id, batch_id, kind,
                                          created_at)
             SELECT user_id, id, context_id, $2, 'pending', $3 FROM tasks WHERE id = $1
               AND NOT EXISTS (SELECT 1 FROM subagent_tasks WHERE child_task_id = $1 AND remote = 0)
             RETURNING user_id
         )
         SELECT user_id,
                pg_notify($4, $5::text || encode(sha256(convert_to(user_id, 'UTF8')), 'hex'))
         FROM event",
    )
    .bind(task_id)
    .bind(batch_id)
    .bind(now)
    .bind(APPROVALS_CHANNEL)
    .bind(notice_prefix(replica))
    .fetch_optional(&mut *connection)
    .await?)
}

/// The batch `batch_id` of `task_id` was decided (or canceled, or expired) through `outcome`
/// (not for a local subagent's batch, which had no pending event either); the user whose event
/// it is, if one was written. Call it last before the commit.
pub(super) async fn record_decided(
    connection: &mut PgConnection,
    replica: &str,
    task_id: &str,
    batch_id: i64,
    outcome: &str,
    decided_by: &str,
    now: &str,
) -> Result<Option<String>> {
    take_events_lock(connection).await?;
    Ok(sqlx::query_scalar(
        "WITH event AS (
             INSERT INTO approval_events (user_id, task_id, context_id, batch_id, kind, outcome,
                                          decided_by, created_at)
             SELECT user_id, id, context_id, $2, 'decided', $3, $4, $5 FROM tasks WHERE id = $1
               AND NOT EXISTS (SELECT 1 FROM subagent_tasks WHERE child_task_id = $1 AND remote = 0)
             RETURNING user_id
         )
         SELECT user_id,
                pg_notify($6, $7::text || encode(sha256(convert_to(user_id, 'UTF8')), 'hex'))
         FROM event",
    )
    .bind(task_id)
    .bind(batch_id)
    .bind(outcome)
    .bind(decided_by)
    .bind(now)
    .bind(APPROVALS_CHANNEL)
    .bind(notice_prefix(replica))
    .fetch_optional(&mut *connection)
    .await?)
}

/// Votes on the batch `batch_id` of `task_id` by `voter` left it waiting, further along its
/// quorum; the user whose event it is, if one was written. Call it last before the commit.
pub(super) async fn record_progress(
    connection: &mut PgConnection,
    replica: &str,
    task_id: &str,
    batch_id: i64,
    voter: &str,
    now: &str,
) -> Result<Option<String>> {
    take_events_lock(connection).await?;
    Ok(sqlx::query_scalar(
        "WITH event AS (
             INSERT INTO approval_events (user_id, task_id, context_id, batch_id, kind,
                                          decided_by, created_at)
             SELECT user_id, id, context_id, $2, 'progress', $3, $4 FROM tasks WHERE id = $1
               AND NOT EXISTS (SELECT 1 FROM subagent_tasks WHERE child_task_id = $1 AND remote = 0)
             RETURNING user_id
         )
         SELECT user_id,
                pg_notify($5, $6::text || encode(sha256(convert_to(user_id, 'UTF8')), 'hex'))
         FROM event",
    )
    .bind(task_id)
    .bind(batch_id)
    .bind(voter)
    .bind(now)
    .bind(APPROVALS_CHANNEL)
    .bind(notice_prefix(replica))
    .fetch_optional(&mut *connection)
    .await?)
}

/// A batch that waited in a deleted session: its owner, task and id.
pub(super) struct DeletedBatch {
    pub user_id: String,
    pub task_id: String,
    pub batch_id: i64,
}

/// The pending batches of the session `context_id`, about to be deleted with it.
pub(super) async fn pending_in_session(
    connection: &mut PgConnection,
    context_id: &str,
) -> Result<Vec<DeletedBatch>> {
    let rows: Vec<(String, String, i64)> = sqlx::query_as(
        "SELECT t.user_id, t.id, b.id FROM batches b JOIN tasks t ON t.id = b.task_id
         WHERE t.context_id = $1 AND b.state = 'pending' ORDER BY b.id",
    )
    .bind(context_id)
    .fetch_all(&mut *connection)
    .await?;
    Ok(rows
        .into_iter()
        .map(|(user_id, task_id, batch_id)| DeletedBatch {
            user_id,
            task_id,
            batch_id,
        })
        .collect())
}

/// The batches of a deleted session stopped waiting; the session's user, if it had any
/// waiting (a session's tasks are all its user's). Call it last before the commit.
pub(super) async fn record_session_deleted(
    connection: &mut PgConnection,
    replica: &str,
    context_id: &str,
    batches: &[DeletedBatch],
    now: &str,
) -> Result<Option<String>> {
    let Some(first) = batches.first() else {
        return Ok(None);
    };
    take_events_lock(connection).await?;
    let users: Vec<&str> = batches.iter().map(|batch| &*batch.user_id).collect();
    let tasks: Vec<&str> = batches.iter().map(|batch| &*batch.task_id).collect();
    let ids: Vec<i64> = batches.iter().map(|batch| batch.batch_id).collect();
    sqlx::query(
        "INSERT INTO approval_events (user_id, task_id, context_id, batch_id, kind, outcome,
                                      created_at)
         SELECT item.user_id, item.task_id, $1, item.batch_id, 'decided', $2, $3
         FROM UNNEST($4::text[], $5::text[], $6::bigint[]) WITH ORDINALITY
              AS item (user_id, task_id, batch_id, ordinality)
         ORDER BY item.ordinality",
    )
    .bind(context_id)
    .bind(OUTCOME_DELETED)
    .bind(now)
    .bind(&users)
    .bind(&tasks)
    .bind(&ids)
    .execute(&mut *connection)
    .await?;
    announce(connection, replica, &first.user_id).await?;
    Ok(Some(first.user_id.clone()))
}

impl Postgres {
    pub async fn approval_events(
        &self,
        user_id: &str,
        agents: &[String],
        after: i64,
        limit: i64,
    ) -> Result<Vec<ApprovalEventRow>> {
        let rows = sqlx::query(&format!(
            "{APPROVAL_EVENT_SELECT}
             WHERE (e.user_id = $1 OR t.agent = ANY($4) OR {HANDED_OVER}) AND e.seq > $2
             ORDER BY e.seq LIMIT $3"
        ))
        .bind(user_id)
        .bind(after)
        .bind(limit)
        .bind(agents)
        .fetch_all(&self.pool)
        .await?;
        map_rows(rows, approval_event_from_row)
    }

    pub async fn waiting_approval_events(
        &self,
        user_id: &str,
        agents: &[String],
    ) -> Result<(i64, Vec<ApprovalEventRow>)> {
        // One snapshot for both reads (REPEATABLE READ), so the horizon and the list agree.
        let mut transaction = self.pool.begin().await?;
        sqlx::query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
            .execute(&mut *transaction)
            .await?;
        let horizon: i64 = sqlx::query_scalar("SELECT COALESCE(MAX(seq), 0) FROM approval_events")
            .fetch_one(&mut *transaction)
            .await?;
        let rows = sqlx::query(&format!(
            "{APPROVAL_EVENT_SELECT}
             WHERE (e.user_id = $1 OR t.agent = ANY($3) OR {HANDED_OVER})
               AND e.kind = 'pending' AND e.seq <= $2 AND b.state = 'pending'
             ORDER BY e.seq"
        ))
        .bind(user_id)
        .bind(horizon)
        .bind(agents)
        .fetch_all(&mut *transaction)
        .await?;
        transaction.commit().await?;
        Ok((horizon, map_rows(rows, approval_event_from_row)?))
    }
}
