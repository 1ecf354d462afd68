//! Sessions, tasks and their event logs in PostgreSQL, PostgreSQL's side of the shared task
//! writes (`store::write`), and its own fast path for a plain step (one statement, no
//! transaction).

use signoff_protocol::TaskState;
use sqlx::postgres::PgRow;
use sqlx::{PgConnection, Row};

use super::{
    now, task_state_text, Commit, EventRow, GrantScope, Guard, NewEvent, Postgres, PushConfigRow,
    QueuedMessage, Result, RunnerView, SessionRow, StoreError, TaskRow, Written,
};
use crate::store::columns::*;
use crate::store::receipts::Sealer;
use crate::store::write::{self, ApprovalEvent, Param, Transaction, TERMINAL};

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

/// PostgreSQL's side of the shared writes (`store::write`): a connection inside a transaction,
/// and this replica's name for the lease fence and the other replicas' notices.
pub(super) struct PgTransaction<'c> {
    pub(super) connection: &'c mut PgConnection,
    pub(super) replica: &'c str,
}

/// `sql` with `params` bound in order.
pub(super) fn bound<'q>(
    sql: &'q str,
    params: &[Param<'q>],
) -> sqlx::query::Query<'q, sqlx::Postgres, sqlx::postgres::PgArguments> {
    params
        .iter()
        .fold(sqlx::query(sql), |query, param| match *param {
            Param::Text(text) => query.bind(text),
            Param::OptionalText(text) => query.bind(text),
            Param::Int(int) => query.bind(int),
            Param::OptionalInt(int) => query.bind(int),
            Param::Bool(flag) => query.bind(flag),
        })
}

impl Transaction for PgTransaction<'_> {
    async fn execute(&mut self, sql: &str, params: &[Param<'_>]) -> Result<u64> {
        let done = bound(sql, params).execute(&mut *self.connection).await?;
        Ok(done.rows_affected())
    }

    async fn optional_int(&mut self, sql: &str, params: &[Param<'_>]) -> Result<Option<i64>> {
        let row = bound(sql, params)
            .fetch_optional(&mut *self.connection)
            .await?;
        Ok(row.map(|row| row.try_get(0)).transpose()?)
    }

    async fn texts(&mut self, sql: &str, params: &[Param<'_>]) -> Result<Vec<String>> {
        let rows = bound(sql, params).fetch_all(&mut *self.connection).await?;
        Ok(rows
            .iter()
            .map(|row| row.try_get(0))
            .collect::<std::result::Result<Vec<String>, sqlx::Error>>()?)
    }

    async fn optional_texts(
        &mut self,
        sql: &str,
        params: &[Param<'_>],
    ) -> Result<Option<(String, String)>> {
        let row = bound(sql, params)
            .fetch_optional(&mut *self.connection)
            .await?;
        Ok(row
            .map(|row| Ok::<_, sqlx::Error>((row.try_get(0)?, row.try_get(1)?)))
            .transpose()?)
    }

    async fn append_events(
        &mut self,
        task_id: &str,
        first_seq: i64,
        events: &[NewEvent],
        now: &str,
    ) -> Result<()> {
        append_events(self.connection, task_id, first_seq, events, now).await
    }

    async fn record_approval_event(
        &mut self,
        event: ApprovalEvent<'_>,
        task_id: &str,
        batch_id: i64,
        now: &str,
    ) -> Result<Option<String>> {
        use super::approvals::{record_decided, record_pending, record_progress};
        let (connection, replica) = (&mut *self.connection, self.replica);
        match event {
            ApprovalEvent::Pending => {
                record_pending(connection, replica, task_id, batch_id, now).await
            }
            ApprovalEvent::Progress { voter } => {
                record_progress(connection, replica, task_id, batch_id, voter, now).await
            }
            ApprovalEvent::Decided {
                outcome,
                decided_by,
            } => {
                record_decided(
                    connection, replica, task_id, batch_id, outcome, decided_by, now,
                )
                .await
            }
        }
    }

    fn lease_fence(&self) -> Option<(&'static str, &str)> {
        Some((
            "lease_owner = {owner} AND lease_until > clock_timestamp()",
            self.replica,
        ))
    }

    fn lease_claim(&self, lease: std::time::Duration) -> Option<(String, &str)> {
        let seconds = lease.as_secs_f64();
        Some((
            format!(
                "lease_owner = {{owner}}, \
                 lease_until = clock_timestamp() + make_interval(secs => {seconds})"
            ),
            self.replica,
        ))
    }

    fn sole_writer(&self) -> bool {
        false
    }
}

/// The replica whose lease a runner's step must still hold (see [`Commit::leased`]).
fn fence<'a>(commit: &Commit, replica: &'a str) -> Option<&'a str> {
    commit.leased.then_some(replica)
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
            "{SESSION_SELECT} WHERE user_id = $1 AND {NOT_A_SUBAGENT_SESSION} ORDER BY updated_at DESC, id"
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
            .bind(GrantScope::Chat.as_str())
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
        push: Option<PushConfigRow>,
    ) -> Result<bool> {
        self.insert_task(task, title, events, push, false).await
    }

    /// Creates a task with its first events, and its session if this is the session's first
    /// task; whether it created the session. `remote`: a task relayed to a remote agent.
    pub(super) async fn insert_task(
        &self,
        task: &TaskRow,
        title: &str,
        events: Vec<NewEvent>,
        push: Option<PushConfigRow>,
        remote: bool,
    ) -> Result<bool> {
        let mut transaction = self.pool.begin().await?;
        let mut shared = PgTransaction {
            connection: &mut transaction,
            replica: &self.replica,
        };
        let created =
            write::create_task(&mut shared, task, title, &events, push.as_ref(), remote).await?;
        super::leases::announce(&mut transaction, &self.replica, &task.id).await?;
        transaction.commit().await?;
        Ok(created)
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

    pub(in crate::store) async fn commit(
        &self,
        task_id: &str,
        commit: Commit,
        seal: Option<Sealer>,
    ) -> Result<Written> {
        if is_plain_step(&commit) {
            let last_seq = self.commit_plain_step(task_id, &commit).await?;
            return Ok(Written {
                last_seq,
                approvals_of: None,
            });
        }
        let mut transaction = self.pool.begin().await?;
        let mut shared = PgTransaction {
            connection: &mut transaction,
            replica: &self.replica,
        };
        let written = write::apply_commit(&mut shared, task_id, &commit, seal.as_ref()).await?;
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
        && commit.notifications.is_empty()
        && !commit.push
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
                let mut shared = PgTransaction {
                    connection: &mut connection,
                    replica: &self.replica,
                };
                Err(write::refused(&mut shared, task_id).await)
            }
        }
    }
}
