//! Sessions, tasks and their event logs, and the task commit: one task's step (events, state,
//! transcript, call records, a new batch) written all or nothing.

use signoff_protocol::TaskState;
use sqlx::postgres::PgRow;
use sqlx::{PgConnection, Row};

use super::rows::json_text;
use super::{
    now, task_state_text, CallStatus, CallUpdate, Commit, EventRow, Guard, NewEvent, PolicyScope,
    Postgres, QueuedMessage, Result, RunnerView, SessionRow, StoreError, TaskRow, Written,
};
use crate::store::columns::*;

/// Every row mapped with a mapping that may find a corrupt row.
pub(super) fn map_rows<T>(rows: Vec<PgRow>, map: impl Fn(&PgRow) -> Result<T>) -> Result<Vec<T>> {
    rows.iter().map(map).collect()
}

/// The task `id`, if it exists; `lock` holds its row until the transaction ends, so a
/// decision and a step of the same task on two replicas take turns.
pub(super) async fn task_row(
    connection: &mut PgConnection,
    id: &str,
    lock: bool,
) -> Result<Option<TaskRow>> {
    let sql = if lock {
        format!("{TASK_SELECT} WHERE id = $1 FOR UPDATE")
    } else {
        format!("{TASK_SELECT} WHERE id = $1")
    };
    let row = sqlx::query(&sql)
        .bind(id)
        .fetch_optional(&mut *connection)
        .await?;
    row.as_ref().map(task_from_row).transpose()
}

/// Appends `events` as numbers `first_seq`, `first_seq + 1`, … in one statement.
pub(super) async fn append_events(
    connection: &mut PgConnection,
    task_id: &str,
    first_seq: i64,
    events: &[NewEvent],
    now: &str,
) -> Result<()> {
    if events.is_empty() {
        return Ok(());
    }
    let texts: Vec<&str> = events.iter().map(|event| &*event.event).collect();
    let finals: Vec<bool> = events.iter().map(|event| event.is_final).collect();
    sqlx::query(
        "INSERT INTO task_events (task_id, seq, event, is_final, created_at)
         SELECT $1, $2 + item.ordinality - 1, item.event, item.is_final, $5
         FROM UNNEST($3::text[], $4::boolean[]) WITH ORDINALITY AS item (event, is_final, ordinality)",
    )
    .bind(task_id)
    .bind(first_seq)
    .bind(&texts)
    .bind(&finals)
    .bind(now)
    .execute(&mut *connection)
    .await?;
    Ok(())
}

/// The states a `NotTerminal` guard refuses.
const TERMINAL: [TaskState; 4] = [
    TaskState::Completed,
    TaskState::Failed,
    TaskState::Canceled,
    TaskState::Rejected,
];

/// Why a task's step wrote nothing: the task is gone, it has ended, or (a runner's step) this
/// replica no longer holds its lease.
async fn refused(connection: &mut PgConnection, task_id: &str) -> StoreError {
    match task_row(connection, task_id, false).await {
        Ok(Some(task)) if task.state.is_terminal() => StoreError::Conflict("the task has ended"),
        Ok(Some(_)) => StoreError::Conflict("this replica no longer holds the task's lease"),
        Ok(None) => StoreError::NotFound,
        Err(err) => err,
    }
}

/// The replica whose lease a runner's step must still hold (see [`Commit::leased`]).
fn fence<'a>(commit: &Commit, replica: &'a str) -> Option<&'a str> {
    commit.leased.then_some(replica)
}

async fn apply_commit(
    connection: &mut PgConnection,
    replica: &str,
    task_id: &str,
    commit: &Commit,
) -> Result<Written> {
    let now = now();
    let guarded = commit.guard == Some(Guard::NotTerminal);
    let terminal: Vec<&str> = TERMINAL.map(task_state_text).to_vec();
    let events = commit.events.len() as i64;
    let last: Option<i64> = sqlx::query_scalar(
        "UPDATE tasks SET last_seq = last_seq + $1, state = COALESCE($2, state),
                          transcript = COALESCE($3, transcript), updated_at = $4
         WHERE id = $5 AND NOT ($6 AND state = ANY($7))
           AND ($8::text IS NULL OR (lease_owner = $8 AND lease_until > clock_timestamp()))
         RETURNING last_seq",
    )
    .bind(events)
    .bind(commit.state.map(task_state_text))
    .bind(commit.transcript.as_deref())
    .bind(&now)
    .bind(task_id)
    .bind(guarded)
    .bind(&terminal)
    .bind(fence(commit, replica))
    .fetch_optional(&mut *connection)
    .await?;
    let Some(last) = last else {
        return Err(refused(connection, task_id).await);
    };
    // The UPDATE above holds the task's row lock, and queueing a message takes it first, so
    // no message can join the queue between this check and the commit.
    if commit.unless_queued {
        let waiting: Option<i64> =
            sqlx::query_scalar("SELECT id FROM queued_messages WHERE task_id = $1 LIMIT 1")
                .bind(task_id)
                .fetch_optional(&mut *connection)
                .await?;
        if waiting.is_some() {
            return Err(StoreError::MessagesWaiting);
        }
    }
    if !commit.delivered.is_empty() {
        sqlx::query("DELETE FROM queued_messages WHERE id = ANY($1)")
            .bind(&commit.delivered)
            .execute(&mut *connection)
            .await?;
    }
    // A task that ends takes no more messages: what still waits would never be delivered.
    if commit.state.is_some_and(|state| state.is_terminal()) {
        sqlx::query("DELETE FROM queued_messages WHERE task_id = $1")
            .bind(task_id)
            .execute(&mut *connection)
            .await?;
    }
    append_events(connection, task_id, last - events + 1, &commit.events, &now).await?;
    if !commit.new_calls.is_empty() {
        let position: i64 =
            sqlx::query_scalar("SELECT COALESCE(MAX(position), 0) FROM calls WHERE task_id = $1")
                .bind(task_id)
                .fetch_one(&mut *connection)
                .await?;
        for (index, call) in commit.new_calls.iter().enumerate() {
            sqlx::query(
                "INSERT INTO calls (task_id, call_id, position, name, source, args, args_sha256,
                                    status)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
            )
            .bind(task_id)
            .bind(&call.call_id)
            .bind(position + 1 + index as i64)
            .bind(&call.name)
            .bind(&call.source)
            .bind(json_text(&call.args)?)
            .bind(&call.args_sha256)
            .bind(call.status().as_str())
            .execute(&mut *connection)
            .await?;
        }
        super::records::record_auto_decisions(connection, task_id, &commit.new_calls, &now).await?;
    }
    for update in &commit.call_updates {
        match update {
            CallUpdate::Started {
                call_id,
                run_args,
                run_args_sha256,
            } => {
                // Only a call free to run starts, once: a replica that lost the task's lease
                // cannot start a call the replica that took it over has started.
                let started = sqlx::query(
                    "UPDATE calls SET status = $1, started_at = $2, run_args = $3,
                                      run_args_sha256 = $4
                     WHERE task_id = $5 AND call_id = $6 AND status IN ($7, $8)",
                )
                .bind(CallStatus::Started.as_str())
                .bind(&now)
                .bind(json_text(run_args)?)
                .bind(run_args_sha256)
                .bind(task_id)
                .bind(call_id)
                .bind(CallStatus::Auto.as_str())
                .bind(CallStatus::Approved.as_str())
                .execute(&mut *connection)
                .await?
                .rows_affected();
                if started != 1 {
                    return Err(StoreError::Conflict("the call was already started"));
                }
            }
            CallUpdate::Finished { call_id, result } => {
                sqlx::query(
                    "UPDATE calls SET status = $1, finished_at = $2, result = $3
                     WHERE task_id = $4 AND call_id = $5 AND result IS NULL",
                )
                .bind(CallStatus::Finished.as_str())
                .bind(&now)
                .bind(json_text(result)?)
                .bind(task_id)
                .bind(call_id)
                .execute(&mut *connection)
                .await?;
            }
        }
    }
    let mut approvals_of = None;
    if let Some(requests) = &commit.new_batch {
        let batch_id = super::batches::open_batch(connection, task_id, requests, &now).await?;
        if let Some(expires_at) = &commit.batch_deadline {
            sqlx::query("UPDATE batches SET expires_at = $1 WHERE id = $2")
                .bind(expires_at)
                .bind(batch_id)
                .execute(&mut *connection)
                .await?;
        }
        approvals_of =
            super::approvals::record_pending(connection, replica, task_id, batch_id, &now).await?;
    }
    Ok(Written {
        last_seq: last,
        approvals_of,
    })
}

impl Postgres {
    pub async fn session(&self, id: &str) -> Result<Option<SessionRow>> {
        let row = sqlx::query(&format!("{SESSION_SELECT} WHERE id = $1"))
            .bind(id)
            .fetch_optional(&self.pool)
            .await?;
        row.as_ref().map(session_from_row).transpose()
    }

    pub async fn sessions(&self, user_id: &str) -> Result<Vec<SessionRow>> {
        let rows = sqlx::query(&format!(
            "{SESSION_SELECT} WHERE user_id = $1 ORDER BY updated_at DESC, id"
        ))
        .bind(user_id)
        .fetch_all(&self.pool)
        .await?;
        map_rows(rows, session_from_row)
    }

    /// Deletes a session with everything of it; whether it was there, and the user it wrote
    /// approval events for.
    pub(in crate::store) async fn delete_session(
        &self,
        id: &str,
    ) -> Result<(bool, Option<String>)> {
        let mut transaction = self.pool.begin().await?;
        let waiting = super::approvals::pending_in_session(&mut transaction, id).await?;
        // The foreign keys cascade from the session to its tasks and from them to the rest.
        let deleted = sqlx::query("DELETE FROM sessions WHERE id = $1")
            .bind(id)
            .execute(&mut *transaction)
            .await?;
        // A chat policy goes with its chat (an agent policy stays); no foreign key ties them.
        sqlx::query("DELETE FROM policies WHERE scope = $1 AND context_id = $2")
            .bind(PolicyScope::Chat.as_str())
            .bind(id)
            .execute(&mut *transaction)
            .await?;
        // The inbox hears that the session's pending batches stop waiting.
        let approvals_of = super::approvals::record_session_deleted(
            &mut transaction,
            &self.replica,
            id,
            &waiting,
            &now(),
        )
        .await?;
        transaction.commit().await?;
        Ok((deleted.rows_affected() > 0, approvals_of))
    }

    pub async fn create_task(
        &self,
        task: &TaskRow,
        title: &str,
        events: Vec<NewEvent>,
    ) -> Result<bool> {
        self.insert_task(task, title, events, false).await
    }

    /// Creates a task with its first events, and its session if this is the session's first
    /// task; whether it created the session. `remote`: a task relayed to a remote agent.
    pub(super) async fn insert_task(
        &self,
        task: &TaskRow,
        title: &str,
        events: Vec<NewEvent>,
        remote: bool,
    ) -> Result<bool> {
        let mut transaction = self.pool.begin().await?;
        let created = sqlx::query(
            "INSERT INTO sessions (id, user_id, agent, title, created_at, updated_at)
             VALUES ($1, $2, $3, $4, $5, $5) ON CONFLICT (id) DO NOTHING",
        )
        .bind(&task.context_id)
        .bind(&task.user_id)
        .bind(&task.agent)
        .bind(title)
        .bind(&task.created_at)
        .execute(&mut *transaction)
        .await?
        .rows_affected();
        if created == 0 {
            // Locks the session row: a concurrent delete waits for this task, or wins first.
            let owner = sqlx::query(
                "UPDATE sessions SET updated_at = $1 WHERE id = $2 RETURNING user_id, agent",
            )
            .bind(&task.updated_at)
            .bind(&task.context_id)
            .fetch_optional(&mut *transaction)
            .await?;
            let Some(owner) = owner else {
                return Err(StoreError::Conflict("the session was deleted"));
            };
            let (user_id, agent): (String, String) = (owner.try_get(0)?, owner.try_get(1)?);
            if user_id != task.user_id || agent != task.agent {
                return Err(StoreError::Conflict(
                    "the session belongs to another user or agent",
                ));
            }
        }
        sqlx::query(
            "INSERT INTO tasks (id, context_id, user_id, agent, state, transcript, last_seq,
                                created_at, updated_at, remote)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
        )
        .bind(&task.id)
        .bind(&task.context_id)
        .bind(&task.user_id)
        .bind(&task.agent)
        .bind(task_state_text(task.state))
        .bind(&task.transcript)
        .bind(events.len() as i64)
        .bind(&task.created_at)
        .bind(&task.updated_at)
        .bind(remote)
        .execute(&mut *transaction)
        .await?;
        append_events(&mut transaction, &task.id, 1, &events, &task.updated_at).await?;
        super::leases::announce(&mut transaction, &self.replica, &task.id).await?;
        transaction.commit().await?;
        Ok(created == 1)
    }

    pub async fn task(&self, id: &str) -> Result<Option<TaskRow>> {
        let mut connection = self.pool.acquire().await?;
        task_row(&mut connection, id, false).await
    }

    pub async fn runner_view(&self, id: &str) -> Result<Option<RunnerView>> {
        // One snapshot for the three reads.
        let mut transaction = self.pool.begin().await?;
        sqlx::query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            .execute(&mut *transaction)
            .await?;
        let Some(task) = task_row(&mut transaction, id, false).await? else {
            return Ok(None);
        };
        let rows = sqlx::query(&format!(
            "{TASK_SELECT} WHERE context_id = $1
               AND seq_no < (SELECT seq_no FROM tasks WHERE id = $2) ORDER BY seq_no"
        ))
        .bind(&task.context_id)
        .bind(&task.id)
        .fetch_all(&mut *transaction)
        .await?;
        let earlier = map_rows(rows, task_from_row)?;
        let calls = super::batches::task_calls(&mut transaction, id).await?;
        transaction.commit().await?;
        Ok(Some(RunnerView {
            task,
            earlier,
            calls,
        }))
    }

    pub async fn session_tasks(&self, context_id: &str) -> Result<Vec<TaskRow>> {
        let rows = sqlx::query(&format!(
            "{TASK_SELECT} WHERE context_id = $1 ORDER BY seq_no"
        ))
        .bind(context_id)
        .fetch_all(&self.pool)
        .await?;
        map_rows(rows, task_from_row)
    }

    pub async fn list_tasks(
        &self,
        user_id: &str,
        context_id: Option<&str>,
        state: Option<TaskState>,
        offset: i64,
        limit: i64,
    ) -> Result<(Vec<TaskRow>, i64)> {
        let filter = "WHERE user_id = $1 AND ($2::text IS NULL OR context_id = $2)
                        AND ($3::text IS NULL OR state = $3)";
        let state = state.map(task_state_text);
        let total: i64 = sqlx::query_scalar(&format!("SELECT COUNT(*) FROM tasks {filter}"))
            .bind(user_id)
            .bind(context_id)
            .bind(state)
            .fetch_one(&self.pool)
            .await?;
        let rows = sqlx::query(&format!(
            "{TASK_SELECT} {filter} ORDER BY seq_no DESC LIMIT $4 OFFSET $5"
        ))
        .bind(user_id)
        .bind(context_id)
        .bind(state)
        .bind(limit)
        .bind(offset)
        .fetch_all(&self.pool)
        .await?;
        Ok((map_rows(rows, task_from_row)?, total))
    }

    pub async fn unfinished_tasks(&self) -> Result<Vec<TaskRow>> {
        let rows = sqlx::query(&format!(
            "{TASK_SELECT} WHERE state IN ($1, $2) AND NOT remote ORDER BY seq_no"
        ))
        .bind(task_state_text(TaskState::Submitted))
        .bind(task_state_text(TaskState::Working))
        .fetch_all(&self.pool)
        .await?;
        map_rows(rows, task_from_row)
    }

    pub async fn events(
        &self,
        task_id: &str,
        after: i64,
        upto: Option<i64>,
        limit: i64,
    ) -> Result<Vec<EventRow>> {
        let rows = sqlx::query(
            "SELECT seq, event, is_final FROM task_events
             WHERE task_id = $1 AND seq > $2 AND ($3::bigint IS NULL OR seq <= $3)
             ORDER BY seq LIMIT $4",
        )
        .bind(task_id)
        .bind(after)
        .bind(upto)
        .bind(limit)
        .fetch_all(&self.pool)
        .await?;
        map_rows(rows, |row| {
            Ok(EventRow {
                seq: row.try_get(0)?,
                event: row.try_get(1)?,
                is_final: row.try_get(2)?,
            })
        })
    }

    pub async fn queue_message(&self, task_id: &str, message: String) -> Result<bool> {
        let mut transaction = self.pool.begin().await?;
        // The task's row lock orders this against a step that completes the task.
        let Some(task) = task_row(&mut transaction, task_id, true).await? else {
            return Err(StoreError::NotFound);
        };
        if !matches!(task.state, TaskState::Submitted | TaskState::Working) {
            return Ok(false);
        }
        sqlx::query(
            "INSERT INTO queued_messages (task_id, message, created_at) VALUES ($1, $2, $3)",
        )
        .bind(task_id)
        .bind(&message)
        .bind(now())
        .execute(&mut *transaction)
        .await?;
        super::leases::announce(&mut transaction, &self.replica, task_id).await?;
        transaction.commit().await?;
        Ok(true)
    }

    pub async fn queued_messages(&self, task_id: &str) -> Result<Vec<QueuedMessage>> {
        let rows =
            sqlx::query("SELECT id, message FROM queued_messages WHERE task_id = $1 ORDER BY id")
                .bind(task_id)
                .fetch_all(&self.pool)
                .await?;
        map_rows(rows, |row| {
            Ok(QueuedMessage {
                id: row.try_get(0)?,
                message: row.try_get(1)?,
            })
        })
    }

    pub(in crate::store) async fn commit(&self, task_id: &str, commit: Commit) -> Result<Written> {
        if is_plain_step(&commit) {
            let last_seq = self.commit_plain_step(task_id, &commit).await?;
            return Ok(Written {
                last_seq,
                approvals_of: None,
            });
        }
        let mut transaction = self.pool.begin().await?;
        let written = apply_commit(&mut transaction, &self.replica, task_id, &commit).await?;
        super::leases::announce(&mut transaction, &self.replica, task_id).await?;
        transaction.commit().await?;
        Ok(written)
    }
}

/// A step that only appends events and moves the task's state or transcript on (most steps:
/// streamed text, status changes): it is written by one statement, atomic on its own, instead
/// of a transaction of several (one round trip instead of five). A step that ends the task is
/// not one: it also empties the task's queue.
fn is_plain_step(commit: &Commit) -> bool {
    commit.new_calls.is_empty()
        && commit.call_updates.is_empty()
        && commit.new_batch.is_none()
        && commit.delivered.is_empty()
        && !commit.unless_queued
        && !commit.state.is_some_and(|state| state.is_terminal())
}

impl Postgres {
    /// [`Postgres::commit`] of a plain step (see [`is_plain_step`]): the task's row, its events
    /// and the other replicas' notice in one statement.
    async fn commit_plain_step(&self, task_id: &str, commit: &Commit) -> Result<i64> {
        let now = now();
        let guarded = commit.guard == Some(Guard::NotTerminal);
        let terminal: Vec<&str> = TERMINAL.map(task_state_text).to_vec();
        let texts: Vec<&str> = commit.events.iter().map(|event| &*event.event).collect();
        let finals: Vec<bool> = commit.events.iter().map(|event| event.is_final).collect();
        let last: Option<i64> = sqlx::query_scalar(
            "WITH moved AS (
                 UPDATE tasks SET last_seq = last_seq + $1, state = COALESCE($2, state),
                                  transcript = COALESCE($3, transcript), updated_at = $4
                 WHERE id = $5 AND NOT ($6 AND state = ANY($7))
                   AND ($12::text IS NULL
                        OR (lease_owner = $12 AND lease_until > clock_timestamp()))
                 RETURNING last_seq
             ), appended AS (
                 INSERT INTO task_events (task_id, seq, event, is_final, created_at)
                 SELECT $5, moved.last_seq - $1 + item.ordinality, item.event, item.is_final, $4
                 FROM moved,
                      UNNEST($8::text[], $9::boolean[]) WITH ORDINALITY
                          AS item (event, is_final, ordinality)
             )
             -- The notice is sent only if a row moved, and only when the statement commits.
             SELECT last_seq, pg_notify($10, $11) FROM moved",
        )
        .bind(commit.events.len() as i64)
        .bind(commit.state.map(task_state_text))
        .bind(commit.transcript.as_deref())
        .bind(&now)
        .bind(task_id)
        .bind(guarded)
        .bind(&terminal)
        .bind(&texts)
        .bind(&finals)
        .bind(super::leases::CHANNEL)
        .bind(super::leases::notice(&self.replica, task_id))
        .bind(fence(commit, &self.replica))
        .fetch_optional(&self.pool)
        .await?;
        match last {
            Some(last) => Ok(last),
            None => {
                let mut connection = self.pool.acquire().await?;
                Err(refused(&mut connection, task_id).await)
            }
        }
    }
}
