//! The approvals stream's events in SQLite: written in the transaction that opens, decides or
//! deletes a batch, read back after an id. One writer commits at a time and events are never
//! deleted, so rowids (the highest plus one) are handed out in commit order.

use rusqlite::{params, Connection, OptionalExtension};

use super::tasks::collect;
use super::{Result, Sqlite};
use crate::store::approvals::{
    approval_event_from_row, ApprovalEventRow, APPROVAL_EVENT_SELECT, HANDED_OVER, OUTCOME_DELETED,
};

/// The batch `batch_id` of `task_id` started waiting; the user whose event it is, if one was
/// written. A local subagent's batch is no event of its own: its calls wait nested in its
/// parent's batch, which has the event.
pub(super) fn record_pending(
    connection: &Connection,
    task_id: &str,
    batch_id: i64,
    now: &str,
) -> Result<Option<String>> {
    Ok(connection
        .prepare_cached(
            "INSERT INTO approval_events (user_id, task_id, context_id, batch_id, kind, created_at)
             SELECT user_id, id, context_id, ?2, 'pending', ?3 FROM tasks WHERE id = ?1
               AND NOT EXISTS (SELECT 1 FROM subagent_tasks WHERE child_task_id = ?1 AND remote = 0)
             RETURNING user_id",
        )?
        .query_row(params![task_id, batch_id, now], |row| row.get(0))
        .optional()?)
}

/// The batch `batch_id` of `task_id` was decided (or canceled, or expired) through `outcome`
/// (not for a local subagent's batch, which had no pending event either); the user whose
/// event it is, if one was written.
pub(super) fn record_decided(
    connection: &Connection,
    task_id: &str,
    batch_id: i64,
    outcome: &str,
    decided_by: &str,
    now: &str,
) -> Result<Option<String>> {
    Ok(connection
        .prepare_cached(
            "INSERT INTO approval_events (user_id, task_id, context_id, batch_id, kind, outcome,
                                          decided_by, created_at)
             SELECT user_id, id, context_id, ?2, 'decided', ?3, ?4, ?5 FROM tasks WHERE id = ?1
               AND NOT EXISTS (SELECT 1 FROM subagent_tasks WHERE child_task_id = ?1 AND remote = 0)
             RETURNING user_id",
        )?
        .query_row(
            params![task_id, batch_id, outcome, decided_by, now],
            |row| row.get(0),
        )
        .optional()?)
}

/// Votes on the batch `batch_id` of `task_id` by `voter` left it waiting, further along its
/// quorum; the user whose event it is, if one was written.
pub(super) fn record_progress(
    connection: &Connection,
    task_id: &str,
    batch_id: i64,
    voter: &str,
    now: &str,
) -> Result<Option<String>> {
    Ok(connection
        .prepare_cached(
            "INSERT INTO approval_events (user_id, task_id, context_id, batch_id, kind,
                                          decided_by, created_at)
             SELECT user_id, id, context_id, ?2, 'progress', ?3, ?4 FROM tasks WHERE id = ?1
               AND NOT EXISTS (SELECT 1 FROM subagent_tasks WHERE child_task_id = ?1 AND remote = 0)
             RETURNING user_id",
        )?
        .query_row(params![task_id, batch_id, voter, now], |row| row.get(0))
        .optional()?)
}

/// The pending batches of session `context_id` stop waiting: the session is being deleted.
/// The session's user, if it had any waiting (a session's tasks are all its user's).
pub(super) fn record_session_deleted(
    connection: &Connection,
    context_id: &str,
    now: &str,
) -> Result<Option<String>> {
    let mut statement = connection.prepare_cached(
        "INSERT INTO approval_events (user_id, task_id, context_id, batch_id, kind, outcome,
                                      created_at)
         SELECT t.user_id, t.id, t.context_id, b.id, 'decided', ?2, ?3
         FROM batches b JOIN tasks t ON t.id = b.task_id
         WHERE t.context_id = ?1 AND b.state = 'pending' ORDER BY b.id
         RETURNING user_id",
    )?;
    let users = statement
        .query_map(params![context_id, OUTCOME_DELETED, now], |row| {
            row.get::<_, String>(0)
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(users.into_iter().next())
}

impl Sqlite {
    pub async fn approval_events(
        &self,
        user_id: &str,
        agents: &[String],
        after: i64,
        limit: i64,
    ) -> Result<Vec<ApprovalEventRow>> {
        let agents = serde_json::to_string(agents)?;
        self.read(|connection| {
            let mut statement = connection.prepare_cached(&format!(
                "{APPROVAL_EVENT_SELECT}
                 WHERE (e.user_id = ?1 OR t.agent IN (SELECT value FROM json_each(?4)) OR {HANDED_OVER})
                   AND e.seq > ?2
                 ORDER BY e.seq LIMIT ?3"
            ))?;
            let rows = statement.query(params![user_id, after, limit, agents])?;
            collect(rows, |row| approval_event_from_row(row))
        })
    }

    pub async fn waiting_approval_events(
        &self,
        user_id: &str,
        agents: &[String],
    ) -> Result<(i64, Vec<ApprovalEventRow>)> {
        let agents = serde_json::to_string(agents)?;
        self.read_together(|connection| {
            let horizon: i64 = connection
                .prepare_cached("SELECT COALESCE(MAX(seq), 0) FROM approval_events")?
                .query_row([], |row| row.get(0))?;
            let mut statement = connection.prepare_cached(&format!(
                "{APPROVAL_EVENT_SELECT}
                 WHERE (e.user_id = ?1 OR t.agent IN (SELECT value FROM json_each(?3)) OR {HANDED_OVER})
                   AND e.kind = 'pending' AND e.seq <= ?2 AND b.state = 'pending'
                 ORDER BY e.seq"
            ))?;
            let rows = statement.query(params![user_id, horizon, agents])?;
            Ok((horizon, collect(rows, |row| approval_event_from_row(row))?))
        })
    }
}
