//! Tasks and their event logs in SQLite, and its side of the shared task writes
//! (`store::write`: a task's creation and [`Store::commit`], driven on the write connection).

use futures_util::FutureExt;
use rusqlite::{params, Connection, OptionalExtension, Row};
use signoff_protocol::TaskState;

use super::{
    now, parse_task_state, task_state_text, Commit, EventRow, NewEvent, PushConfigRow,
    QueuedMessage, Result, RunnerView, Sqlite, StoreError, TaskRow, Written,
};
use crate::store::columns::*;
use crate::store::receipts::Sealer;
use crate::store::write::{self, sqlite_dialect, ApprovalEvent, Param, Transaction};

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

/// SQLite's side of the shared writes (`store::write`): the write connection, inside the
/// writer's transaction.
pub(super) struct SqliteTransaction<'c>(pub(super) &'c Connection);

impl SqliteTransaction<'_> {
    fn prepare(&self, sql: &str) -> Result<rusqlite::CachedStatement<'_>> {
        Ok(self.0.prepare_cached(&sqlite_dialect(sql))?)
    }
}

impl rusqlite::ToSql for Param<'_> {
    fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
        match self {
            Param::Text(text) => text.to_sql(),
            Param::OptionalText(text) => text.to_sql(),
            Param::Int(int) => int.to_sql(),
            Param::OptionalInt(int) => int.to_sql(),
            Param::Bool(flag) => flag.to_sql(),
        }
    }
}

impl Transaction for SqliteTransaction<'_> {
    async fn execute(&mut self, sql: &str, params: &[Param<'_>]) -> Result<u64> {
        let changed = self
            .prepare(sql)?
            .execute(rusqlite::params_from_iter(params))?;
        Ok(changed as u64)
    }

    async fn optional_int(&mut self, sql: &str, params: &[Param<'_>]) -> Result<Option<i64>> {
        Ok(self
            .prepare(sql)?
            .query_row(rusqlite::params_from_iter(params), |row| row.get(0))
            .optional()?)
    }

    async fn texts(&mut self, sql: &str, params: &[Param<'_>]) -> Result<Vec<String>> {
        let mut statement = self.prepare(sql)?;
        let rows = statement.query_map(rusqlite::params_from_iter(params), |row| row.get(0))?;
        Ok(rows.collect::<rusqlite::Result<Vec<String>>>()?)
    }

    async fn optional_texts(
        &mut self,
        sql: &str,
        params: &[Param<'_>],
    ) -> Result<Option<(String, String)>> {
        Ok(self
            .prepare(sql)?
            .query_row(rusqlite::params_from_iter(params), |row| {
                Ok((row.get(0)?, row.get(1)?))
            })
            .optional()?)
    }

    async fn append_events(
        &mut self,
        task_id: &str,
        first_seq: i64,
        events: &[NewEvent],
        now: &str,
    ) -> Result<()> {
        append_events(self.0, task_id, first_seq - 1, events, now)?;
        Ok(())
    }

    async fn record_approval_event(
        &mut self,
        event: ApprovalEvent<'_>,
        task_id: &str,
        batch_id: i64,
        now: &str,
    ) -> Result<Option<String>> {
        use super::approvals::{record_decided, record_pending, record_progress};
        match event {
            ApprovalEvent::Pending => record_pending(self.0, task_id, batch_id, now),
            ApprovalEvent::Progress { voter } => {
                record_progress(self.0, task_id, batch_id, voter, now)
            }
            ApprovalEvent::Decided {
                outcome,
                decided_by,
            } => record_decided(self.0, task_id, batch_id, outcome, decided_by, now),
        }
    }

    fn lease_fence(&self) -> Option<(&'static str, &str)> {
        // One process owns the file and drives every task: it holds every lease.
        None
    }

    fn lease_claim(&self, _lease: std::time::Duration) -> Option<(String, &str)> {
        None
    }

    fn sole_writer(&self) -> bool {
        true
    }
}

/// Runs a shared write (`store::write`) on the write connection. Every statement of
/// [`SqliteTransaction`] answers at once, so the future ends at its first poll; one that did not
/// would be a bug, refused rather than blocking the writer.
pub(super) fn run_now<T>(write: impl std::future::Future<Output = Result<T>>) -> Result<T> {
    write
        .now_or_never()
        .unwrap_or_else(|| Err(StoreError::Commit("an SQLite write waited".into())))
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
        push: Option<PushConfigRow>,
    ) -> Result<bool> {
        self.insert_task(task, title, events, push, false).await
    }

    /// Creates a task (see `store::write::create_task`); `remote`: relayed to a remote agent.
    pub(super) async fn insert_task(
        &self,
        task: &TaskRow,
        title: &str,
        events: Vec<NewEvent>,
        push: Option<PushConfigRow>,
        remote: bool,
    ) -> Result<bool> {
        let task = task.clone();
        let title = title.to_owned();
        self.write(move |connection| {
            let mut transaction = SqliteTransaction(connection);
            run_now(write::create_task(
                &mut transaction,
                &task,
                &title,
                &events,
                push.as_ref(),
                remote,
            ))
        })
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
    pub(in crate::store) async fn commit(
        &self,
        task_id: &str,
        commit: Commit,
        seal: Option<Sealer>,
    ) -> Result<Written> {
        let task_id = task_id.to_owned();
        self.write(move |connection| {
            run_now(write::apply_commit(
                &mut SqliteTransaction(connection),
                &task_id,
                &commit,
                seal.as_ref(),
            ))
        })
        .await
    }
}
