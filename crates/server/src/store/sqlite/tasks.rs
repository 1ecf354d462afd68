//! Tasks and their event logs, and [`Store::commit`]: one task's step (events, state,
//! transcript, call records, a new batch) written all or nothing.

use rusqlite::{params, Connection, OptionalExtension, Row, ToSql};
use signoff_protocol::TaskState;

use super::rows::json_text;
use super::{
    now, parse_task_state, task_state_text, CallStatus, CallUpdate, Commit, EventRow, Guard,
    NewEvent, QueuedMessage, Result, RunnerView, Sqlite, StoreError, TaskRow, Written,
};
use crate::store::columns::*;

/// Every row of a statement, mapped with a mapping that may find a corrupt row.
pub(super) fn collect<T>(
    mut rows: rusqlite::Rows<'_>,
    map: impl Fn(&Row<'_>) -> Result<T>,
) -> Result<Vec<T>> {
    let mut out = Vec::new();
    while let Some(row) = rows.next()? {
        out.push(map(row)?);
    }
    Ok(out)
}

/// The task `id`, if it exists.
pub(super) fn task_row(connection: &Connection, id: &str) -> Result<Option<TaskRow>> {
    let mut statement = connection.prepare_cached(&format!("{TASK_SELECT} WHERE id = ?1"))?;
    let rows = statement.query([id])?;
    Ok(collect(rows, |row| task_from_row(row))?.pop())
}

/// Appends `events` after `last_seq`; returns the new last sequence number.
pub(super) fn append_events(
    connection: &Connection,
    task_id: &str,
    last_seq: i64,
    events: &[NewEvent],
    now: &str,
) -> Result<i64> {
    let mut insert = connection.prepare_cached(
        "INSERT INTO task_events (task_id, seq, event, is_final, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5)",
    )?;
    let mut seq = last_seq;
    for event in events {
        seq += 1;
        insert.execute(params![task_id, seq, event.event, event.is_final, now])?;
    }
    Ok(seq)
}

/// The task's state and last event number, read inside a write.
pub(super) fn task_head(connection: &Connection, task_id: &str) -> Result<(TaskState, i64)> {
    let (state, last_seq): (String, i64) = connection
        .prepare_cached("SELECT state, last_seq FROM tasks WHERE id = ?1")?
        .query_row([task_id], |row| Ok((row.get(0)?, row.get(1)?)))
        .optional()?
        .ok_or(StoreError::NotFound)?;
    Ok((parse_task_state(&state)?, last_seq))
}

/// The stored text of the states a `NotTerminal` guard refuses.
const TERMINAL: [TaskState; 4] = [
    TaskState::Completed,
    TaskState::Failed,
    TaskState::Canceled,
    TaskState::Rejected,
];

fn apply_commit(connection: &Connection, task_id: &str, commit: &Commit) -> Result<Written> {
    let now = now();
    let guarded = match commit.guard {
        Some(Guard::NotTerminal) => true,
        None => false,
    };
    // One statement moves the task on and says where its log ends, or refuses (guarded and
    // ended, or gone). Most commits keep the state: their statement does not assign it, so the
    // state index is left alone.
    let [ended_1, ended_2, ended_3, ended_4] = TERMINAL.map(task_state_text);
    let events = commit.events.len() as i64;
    let state = commit.state.map(task_state_text);
    let mut values: Vec<(&str, &dyn ToSql)> = vec![
        (":events", &events),
        (":transcript", &commit.transcript),
        (":now", &now),
        (":id", &task_id),
        (":guarded", &guarded),
        (":ended_1", &ended_1),
        (":ended_2", &ended_2),
        (":ended_3", &ended_3),
        (":ended_4", &ended_4),
    ];
    let set_state = match &state {
        Some(state) => {
            values.push((":state", state));
            "state = :state,"
        }
        None => "",
    };
    let last: Option<i64> = connection
        .prepare_cached(&format!(
            "UPDATE tasks SET last_seq = last_seq + :events, {set_state}
                              transcript = COALESCE(:transcript, transcript), updated_at = :now
             WHERE id = :id AND NOT (:guarded AND state IN (:ended_1, :ended_2, :ended_3, :ended_4))
             RETURNING last_seq"
        ))?
        .query_row(values.as_slice(), |row| row.get(0))
        .optional()?;
    let Some(last) = last else {
        return Err(match task_head(connection, task_id) {
            Ok(_) => StoreError::Conflict("the task has ended"),
            Err(err) => err,
        });
    };
    // The writer runs one write at a time, so no message can join the queue between this
    // check and the commit.
    if commit.unless_queued && has_queued(connection, task_id)? {
        return Err(StoreError::MessagesWaiting);
    }
    let mut take = connection.prepare_cached("DELETE FROM queued_messages WHERE id = ?1")?;
    for id in &commit.delivered {
        take.execute([id])?;
    }
    // A task that ends takes no more messages: what still waits would never be delivered.
    if commit.state.is_some_and(|state| state.is_terminal()) {
        connection
            .prepare_cached("DELETE FROM queued_messages WHERE task_id = ?1")?
            .execute([task_id])?;
    }
    append_events(
        connection,
        task_id,
        last - commit.events.len() as i64,
        &commit.events,
        &now,
    )?;
    if !commit.new_calls.is_empty() {
        let position: i64 = connection
            .prepare_cached("SELECT COALESCE(MAX(position), 0) FROM calls WHERE task_id = ?1")?
            .query_row([task_id], |row| row.get(0))?;
        let mut insert = connection.prepare_cached(
            "INSERT INTO calls (task_id, call_id, position, name, source, args, args_sha256,
                                status)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        )?;
        for (index, call) in commit.new_calls.iter().enumerate() {
            insert.execute(params![
                task_id,
                call.call_id,
                position + 1 + index as i64,
                call.name,
                call.source,
                json_text(&call.args)?,
                call.args_sha256,
                call.status().as_str()
            ])?;
        }
        super::policies::record_auto_decisions(connection, task_id, &commit.new_calls, &now)?;
    }
    for update in &commit.call_updates {
        match update {
            CallUpdate::Started {
                call_id,
                run_args,
                run_args_sha256,
            } => {
                // Only a call free to run starts, once: a runner that lost its task to
                // another (a lapsed lease) cannot start a call the other has started.
                let started = connection
                    .prepare_cached(
                        "UPDATE calls SET status = ?1, started_at = ?2, run_args = ?3,
                                          run_args_sha256 = ?4
                         WHERE task_id = ?5 AND call_id = ?6 AND status IN (?7, ?8)",
                    )?
                    .execute(params![
                        CallStatus::Started.as_str(),
                        now,
                        json_text(run_args)?,
                        run_args_sha256,
                        task_id,
                        call_id,
                        CallStatus::Auto.as_str(),
                        CallStatus::Approved.as_str()
                    ])?;
                if started != 1 {
                    return Err(StoreError::Conflict("the call was already started"));
                }
            }
            CallUpdate::Finished { call_id, result } => {
                connection
                    .prepare_cached(
                        "UPDATE calls SET status = ?1, finished_at = ?2, result = ?3
                         WHERE task_id = ?4 AND call_id = ?5 AND result IS NULL",
                    )?
                    .execute(params![
                        CallStatus::Finished.as_str(),
                        now,
                        json_text(result)?,
                        task_id,
                        call_id
                    ])?;
            }
        }
    }
    let mut approvals_of = None;
    if let Some(requests) = &commit.new_batch {
        let batch_id = super::batches::open_batch(connection, task_id, requests, &now)?;
        super::deadlines::set_deadline(connection, batch_id, commit.batch_deadline.as_deref())?;
        approvals_of = super::approvals::record_pending(connection, task_id, batch_id, &now)?;
    }
    Ok(Written {
        last_seq: last,
        approvals_of,
    })
}

/// Creates a task with its first events, and its session if this is the session's first task;
/// whether it created the session. `remote`: a task relayed to a remote agent (`relayed`).
pub(super) fn insert_task(
    connection: &Connection,
    task: &TaskRow,
    title: &str,
    events: &[NewEvent],
    remote: bool,
) -> Result<bool> {
    let created = connection
        .prepare_cached(
            "INSERT INTO sessions (id, user_id, agent, title, created_at, updated_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?5) ON CONFLICT (id) DO NOTHING",
        )?
        .execute(params![
            task.context_id,
            task.user_id,
            task.agent,
            title,
            task.created_at
        ])?;
    if created == 0 {
        let (owner, agent): (String, String) = connection
            .prepare_cached("SELECT user_id, agent FROM sessions WHERE id = ?1")?
            .query_row([&task.context_id], |row| Ok((row.get(0)?, row.get(1)?)))?;
        if owner != task.user_id || agent != task.agent {
            return Err(StoreError::Conflict(
                "the session belongs to another user or agent",
            ));
        }
        connection
            .prepare_cached("UPDATE sessions SET updated_at = ?1 WHERE id = ?2")?
            .execute(params![task.updated_at, task.context_id])?;
    }
    let last = events.len() as i64;
    connection
        .prepare_cached(
            "INSERT INTO tasks (id, context_id, user_id, agent, state, transcript,
                                last_seq, created_at, updated_at, remote)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
        )?
        .execute(params![
            task.id,
            task.context_id,
            task.user_id,
            task.agent,
            task_state_text(task.state),
            task.transcript,
            last,
            task.created_at,
            task.updated_at,
            remote
        ])?;
    append_events(connection, &task.id, 0, events, &task.updated_at)?;
    Ok(created == 1)
}

fn has_queued(connection: &Connection, task_id: &str) -> Result<bool> {
    Ok(connection
        .prepare_cached("SELECT 1 FROM queued_messages WHERE task_id = ?1 LIMIT 1")?
        .query_row([task_id], |_| Ok(()))
        .optional()?
        .is_some())
}

impl Sqlite {
    /// Creates a task and writes its first events, creating its session (titled `title`) if
    /// this is the session's first task; says whether it did. A session that exists must be
    /// the same user's and agent's, else [`StoreError::Conflict`].
    pub async fn create_task(
        &self,
        task: &TaskRow,
        title: &str,
        events: Vec<NewEvent>,
    ) -> Result<bool> {
        let task = task.clone();
        let title = title.to_owned();
        self.write(move |connection| insert_task(connection, &task, &title, &events, false))
            .await
    }

    pub async fn task(&self, id: &str) -> Result<Option<TaskRow>> {
        self.read(|connection| task_row(connection, id))
    }

    /// A stored task as its runner takes it up (see [`RunnerView`]), or `None` if it is gone.
    pub async fn runner_view(&self, id: &str) -> Result<Option<RunnerView>> {
        self.read_together(|connection| {
            let Some(task) = task_row(connection, id)? else {
                return Ok(None);
            };
            let mut statement = connection.prepare_cached(&format!(
                "{TASK_SELECT} WHERE context_id = ?1 AND seq_no < (SELECT seq_no FROM tasks WHERE id = ?2)
                 ORDER BY seq_no"
            ))?;
            let earlier = collect(statement.query([&task.context_id, &task.id])?, |row| task_from_row(row))?;
            let calls = super::batches::task_calls(connection, id)?;
            Ok(Some(RunnerView {
                task,
                earlier,
                calls,
            }))
        })
    }

    /// The tasks of a session, in the order they were created.
    pub async fn session_tasks(&self, context_id: &str) -> Result<Vec<TaskRow>> {
        self.read(|connection| {
            let mut statement = connection.prepare_cached(&format!(
                "{TASK_SELECT} WHERE context_id = ?1 ORDER BY seq_no"
            ))?;
            let rows = statement.query([context_id])?;
            collect(rows, |row| task_from_row(row))
        })
    }

    /// A page of a user's tasks, newest first, optionally one session's or one state's.
    pub async fn list_tasks(
        &self,
        user_id: &str,
        context_id: Option<&str>,
        state: Option<TaskState>,
        offset: i64,
        limit: i64,
    ) -> Result<(Vec<TaskRow>, i64)> {
        let filter =
            "WHERE user_id = ?1 AND (?2 IS NULL OR context_id = ?2) AND (?3 IS NULL OR state = ?3)";
        let state = state.map(task_state_text);
        self.read(|connection| {
            let total: i64 = connection
                .prepare_cached(&format!("SELECT COUNT(*) FROM tasks {filter}"))?
                .query_row(params![user_id, context_id, state], |row| row.get(0))?;
            let mut statement = connection.prepare_cached(&format!(
                "{TASK_SELECT} {filter} ORDER BY seq_no DESC LIMIT ?4 OFFSET ?5"
            ))?;
            let rows = statement.query(params![user_id, context_id, state, limit, offset])?;
            Ok((collect(rows, |row| task_from_row(row))?, total))
        })
    }

    /// Tasks left running or submitted by a previous process (to resume at start).
    pub async fn unfinished_tasks(&self) -> Result<Vec<TaskRow>> {
        self.read(|connection| {
            let mut statement = connection.prepare_cached(&format!(
                "{TASK_SELECT} WHERE state IN (?1, ?2) AND remote = 0 ORDER BY seq_no"
            ))?;
            let rows = statement.query([
                task_state_text(TaskState::Submitted),
                task_state_text(TaskState::Working),
            ])?;
            collect(rows, |row| task_from_row(row))
        })
    }

    /// The events of a task with `after < seq <= upto`, in order, at most `limit`.
    pub async fn events(
        &self,
        task_id: &str,
        after: i64,
        upto: Option<i64>,
        limit: i64,
    ) -> Result<Vec<EventRow>> {
        self.read(|connection| {
            let mut statement = connection.prepare_cached(
                "SELECT seq, event, is_final FROM task_events
                 WHERE task_id = ?1 AND seq > ?2 AND (?3 IS NULL OR seq <= ?3)
                 ORDER BY seq LIMIT ?4",
            )?;
            let rows = statement.query(params![task_id, after, upto, limit])?;
            collect(rows, |row| {
                Ok(EventRow {
                    seq: row.get(0)?,
                    event: row.get(1)?,
                    is_final: row.get(2)?,
                })
            })
        })
    }

    pub async fn queue_message(&self, task_id: &str, message: String) -> Result<bool> {
        let task_id = task_id.to_owned();
        self.write(move |connection| {
            let (state, _) = task_head(connection, &task_id)?;
            if !matches!(state, TaskState::Submitted | TaskState::Working) {
                return Ok(false);
            }
            connection
                .prepare_cached(
                    "INSERT INTO queued_messages (task_id, message, created_at) VALUES (?1, ?2, ?3)",
                )?
                .execute(params![task_id, message, now()])?;
            Ok(true)
        })
        .await
    }

    pub async fn queued_messages(&self, task_id: &str) -> Result<Vec<QueuedMessage>> {
        self.read(|connection| {
            let mut statement = connection.prepare_cached(
                "SELECT id, message FROM queued_messages WHERE task_id = ?1 ORDER BY id",
            )?;
            let rows = statement.query([task_id])?;
            collect(rows, |row| {
                Ok(QueuedMessage {
                    id: row.get(0)?,
                    message: row.get(1)?,
                })
            })
        })
    }

    /// Applies one [`Commit`] atomically; returns the task's last event sequence number.
    pub(in crate::store) async fn commit(&self, task_id: &str, commit: Commit) -> Result<Written> {
        let task_id = task_id.to_owned();
        self.write(move |connection| apply_commit(connection, &task_id, &commit))
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_guard_refuses_exactly_the_terminal_states() {
        for state in TaskState::ALL {
            assert_eq!(TERMINAL.contains(&state), state.is_terminal(), "{state:?}");
        }
    }
}
