//! The SQLite store: sessions, tasks, each task's event log, pending batches, decisions (the
//! audit trail) and tool-call execution records.
//!
//! It knows rows and JSON values, nothing of HTTP and nothing of A2A versions: the agent layer
//! hands it events already encoded. Queries are checked at run time (`sqlx::query`), not with
//! the compile-time macros: those need a live database or a committed `.sqlx/` cache at build
//! time, and keeping that cache in sync with every schema change is a step a contributor would
//! forget; the integration tests run every query against a real SQLite file instead.
//!
//! Writes go through a pool of ONE connection so that they are serialized in-process: SQLite
//! allows one writer at a time anyway, and a single writer never hits `SQLITE_BUSY` when a read
//! transaction upgrades. Reads use their own pool (WAL lets them run beside the writer).

use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use serde_json::Value;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sqlx::{Row, SqlitePool};

/// What can go wrong in the store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("database error: {0}")]
    Db(#[from] sqlx::Error),
    #[error("migration failed: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    #[error("stored JSON is corrupt: {0}")]
    Json(#[from] serde_json::Error),
    /// A compare-and-set lost: the row was not in the expected state any more.
    #[error("conflict: {0}")]
    Conflict(&'static str),
    #[error("not found")]
    NotFound,
}

pub type Result<T, E = StoreError> = std::result::Result<T, E>;

/// The current time as RFC 3339 with milliseconds, UTC (`2026-11-21T10:00:00.000Z`).
pub fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

#[derive(Debug, Clone, PartialEq)]
pub struct SessionRow {
    pub id: String,
    pub user_id: String,
    pub agent: String,
    pub title: String,
    pub created_at: String,
    pub updated_at: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct TaskRow {
    pub id: String,
    pub context_id: String,
    pub user_id: String,
    pub agent: String,
    pub state: String,
    pub transcript: Value,
    pub last_seq: i64,
    pub created_at: String,
    pub updated_at: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct EventRow {
    pub seq: i64,
    pub event: Value,
    pub is_final: bool,
}

/// An event to append to a task's log.
#[derive(Debug, Clone, PartialEq)]
pub struct NewEvent {
    pub event: Value,
    pub is_final: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct BatchRow {
    pub id: i64,
    pub task_id: String,
    pub state: String,
    pub requests: Value,
    pub created_at: String,
    pub decided_at: Option<String>,
}

/// A pending batch with what the approvals list shows of its task.
#[derive(Debug, Clone, PartialEq)]
pub struct PendingBatchRow {
    pub batch: BatchRow,
    pub context_id: String,
    pub agent: String,
}

/// Where a tool call stands; stored as text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallStatus {
    /// Needs no approval; runs at once.
    Auto,
    /// Waits in a pending batch.
    Held,
    Approved,
    Rejected,
    /// Dropped because its paused task was canceled.
    Canceled,
    /// Began to run; if no `Finished` follows, a crash interrupted it.
    Started,
    Finished,
}

impl CallStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            CallStatus::Auto => "auto",
            CallStatus::Held => "held",
            CallStatus::Approved => "approved",
            CallStatus::Rejected => "rejected",
            CallStatus::Canceled => "canceled",
            CallStatus::Started => "started",
            CallStatus::Finished => "finished",
        }
    }

    fn parse(text: &str) -> Result<Self> {
        Ok(match text {
            "auto" => CallStatus::Auto,
            "held" => CallStatus::Held,
            "approved" => CallStatus::Approved,
            "rejected" => CallStatus::Rejected,
            "canceled" => CallStatus::Canceled,
            "started" => CallStatus::Started,
            "finished" => CallStatus::Finished,
            _ => return Err(StoreError::Conflict("unknown call status in the database")),
        })
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct CallRow {
    pub task_id: String,
    pub call_id: String,
    pub position: i64,
    pub name: String,
    pub source: String,
    pub args: Value,
    pub args_sha256: String,
    pub batch_id: Option<i64>,
    pub status: CallStatus,
    pub verdict: Option<String>,
    pub reason: Option<String>,
    pub run_args: Option<Value>,
    pub run_args_sha256: Option<String>,
    pub result: Option<Value>,
    pub started_at: Option<String>,
    pub finished_at: Option<String>,
}

/// A tool call the model asked for, recorded with the turn that asked.
#[derive(Debug, Clone, PartialEq)]
pub struct NewCall {
    pub call_id: String,
    pub name: String,
    pub source: String,
    pub args: Value,
    pub args_sha256: String,
    pub held: bool,
}

/// A change to a call's execution record.
#[derive(Debug, Clone, PartialEq)]
pub enum CallUpdate {
    Started {
        call_id: String,
        run_args: Value,
        run_args_sha256: String,
    },
    Finished {
        call_id: String,
        result: Value,
    },
}

/// Which state the task must be in for a commit to apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Guard {
    /// Refuse once the task is terminal (so a canceled task's runner cannot write after cancel).
    NotTerminal,
}

/// One atomic change to a task: new events, a new state, the model's transcript, call records,
/// a new pending batch. All or nothing.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Commit {
    pub events: Vec<NewEvent>,
    pub state: Option<String>,
    pub transcript: Option<Value>,
    pub new_calls: Vec<NewCall>,
    pub call_updates: Vec<CallUpdate>,
    /// Opens a pending batch with these action requests; every held call without a batch joins it.
    pub new_batch: Option<Value>,
    pub guard: Option<Guard>,
}

/// A verdict on one call of a batch, as written by a decision.
#[derive(Debug, Clone, PartialEq)]
pub struct CallVerdict {
    pub call_id: String,
    pub status: CallStatus,
    /// `approve`, `deny` or `cancel`: kept for the audit after the call has run.
    pub verdict: String,
    pub reason: Option<String>,
    pub run_args: Option<Value>,
    pub run_args_sha256: Option<String>,
}

/// A decision (or a cancel) on a pending batch: the compare-and-set plus the audit record.
#[derive(Debug, Clone, PartialEq)]
pub struct DecisionWrite {
    pub batch_id: i64,
    pub user_id: String,
    pub channel: String,
    pub decision: Value,
    pub summary: String,
    pub verdicts: Vec<CallVerdict>,
    /// `decided` or `canceled`.
    pub batch_state: String,
    pub task_state: String,
    pub events: Vec<NewEvent>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct DecisionRow {
    pub id: i64,
    pub batch_id: i64,
    pub task_id: String,
    pub user_id: String,
    pub channel: String,
    pub decision: Value,
    pub summary: String,
    pub decided_at: String,
}

#[derive(Debug, Clone)]
pub struct Store {
    /// One connection: serializes writers (see the module doc).
    write: SqlitePool,
    read: SqlitePool,
}

impl Store {
    /// Opens (creating if needed) `signoff.db` in `data_dir` and runs the migrations, so a new
    /// binary upgrades an old database at start and nobody runs a separate migration step.
    pub async fn open(data_dir: &Path) -> Result<Store> {
        let path = data_dir.join("signoff.db");
        let options = SqliteConnectOptions::from_str("sqlite:")?
            .filename(&path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            // With WAL, NORMAL survives a process crash (SIGKILL); only a power loss may drop
            // the last commits.
            .synchronous(SqliteSynchronous::Normal)
            .foreign_keys(true)
            .busy_timeout(Duration::from_secs(10));
        let write = SqlitePoolOptions::new()
            .max_connections(1)
            .connect_with(options.clone())
            .await?;
        sqlx::migrate!("./migrations").run(&write).await?;
        let read = SqlitePoolOptions::new()
            .max_connections(4)
            .connect_with(options.read_only(true))
            .await?;
        Ok(Store { write, read })
    }

    /// Closes both pools, waiting for open transactions to finish.
    pub async fn close(&self) {
        self.write.close().await;
        self.read.close().await;
    }

    // ---- sessions -------------------------------------------------------------------------

    /// Returns the session `id`, creating it for `user_id` and `agent` if it does not exist.
    pub async fn ensure_session(
        &self,
        id: &str,
        user_id: &str,
        agent: &str,
        title: &str,
    ) -> Result<SessionRow> {
        let now = now();
        sqlx::query(
            "INSERT INTO sessions (id, user_id, agent, title, created_at, updated_at)
             VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING",
        )
        .bind(id)
        .bind(user_id)
        .bind(agent)
        .bind(title)
        .bind(&now)
        .bind(&now)
        .execute(&self.write)
        .await?;
        self.session_on(&self.write, id)
            .await?
            .ok_or(StoreError::NotFound)
    }

    pub async fn session(&self, id: &str) -> Result<Option<SessionRow>> {
        self.session_on(&self.read, id).await
    }

    async fn session_on(&self, pool: &SqlitePool, id: &str) -> Result<Option<SessionRow>> {
        let row = sqlx::query(
            "SELECT id, user_id, agent, title, created_at, updated_at FROM sessions WHERE id = ?",
        )
        .bind(id)
        .fetch_optional(pool)
        .await?;
        row.map(|row| session_from_row(&row)).transpose()
    }

    /// The user's sessions, most recently active first.
    pub async fn sessions(&self, user_id: &str) -> Result<Vec<SessionRow>> {
        let rows = sqlx::query(
            "SELECT id, user_id, agent, title, created_at, updated_at FROM sessions
             WHERE user_id = ? ORDER BY updated_at DESC, id",
        )
        .bind(user_id)
        .fetch_all(&self.read)
        .await?;
        rows.iter().map(session_from_row).collect()
    }

    /// Deletes a session with its tasks, events, batches and records.
    pub async fn delete_session(&self, id: &str) -> Result<bool> {
        let done = sqlx::query("DELETE FROM sessions WHERE id = ?")
            .bind(id)
            .execute(&self.write)
            .await?;
        Ok(done.rows_affected() > 0)
    }

    // ---- tasks ----------------------------------------------------------------------------

    /// Creates a task in an existing session and writes its first events.
    pub async fn create_task(&self, task: &TaskRow, events: Vec<NewEvent>) -> Result<i64> {
        let mut tx = self.write.begin().await?;
        sqlx::query(
            "INSERT INTO tasks (id, context_id, user_id, agent, state, transcript, last_seq,
                                created_at, updated_at)
             VALUES (?, ?, ?, ?, ?, ?, 0, ?, ?)",
        )
        .bind(&task.id)
        .bind(&task.context_id)
        .bind(&task.user_id)
        .bind(&task.agent)
        .bind(&task.state)
        .bind(serde_json::to_string(&task.transcript)?)
        .bind(&task.created_at)
        .bind(&task.updated_at)
        .execute(&mut *tx)
        .await?;
        sqlx::query("UPDATE sessions SET updated_at = ? WHERE id = ?")
            .bind(&task.updated_at)
            .bind(&task.context_id)
            .execute(&mut *tx)
            .await?;
        let last = append_events(&mut tx, &task.id, 0, &events).await?;
        sqlx::query("UPDATE tasks SET last_seq = ? WHERE id = ?")
            .bind(last)
            .bind(&task.id)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(last)
    }

    pub async fn task(&self, id: &str) -> Result<Option<TaskRow>> {
        let row = sqlx::query(&format!("{TASK_SELECT} WHERE id = ?"))
            .bind(id)
            .fetch_optional(&self.read)
            .await?;
        row.map(|row| task_from_row(&row)).transpose()
    }

    /// The tasks of a session, in the order they were created.
    pub async fn session_tasks(&self, context_id: &str) -> Result<Vec<TaskRow>> {
        let rows = sqlx::query(&format!(
            "{TASK_SELECT} WHERE context_id = ? ORDER BY seq_no"
        ))
        .bind(context_id)
        .fetch_all(&self.read)
        .await?;
        rows.iter().map(task_from_row).collect()
    }

    /// A page of a user's tasks, newest first, optionally one session's or one state's.
    pub async fn list_tasks(
        &self,
        user_id: &str,
        context_id: Option<&str>,
        state: Option<&str>,
        offset: i64,
        limit: i64,
    ) -> Result<(Vec<TaskRow>, i64)> {
        let filter =
            "WHERE user_id = ?1 AND (?2 IS NULL OR context_id = ?2) AND (?3 IS NULL OR state = ?3)";
        let total: i64 = sqlx::query(&format!("SELECT COUNT(*) FROM tasks {filter}"))
            .bind(user_id)
            .bind(context_id)
            .bind(state)
            .fetch_one(&self.read)
            .await?
            .try_get(0)?;
        let rows = sqlx::query(&format!(
            "{TASK_SELECT} {filter} ORDER BY seq_no DESC LIMIT ?4 OFFSET ?5"
        ))
        .bind(user_id)
        .bind(context_id)
        .bind(state)
        .bind(limit)
        .bind(offset)
        .fetch_all(&self.read)
        .await?;
        let tasks = rows.iter().map(task_from_row).collect::<Result<Vec<_>>>()?;
        Ok((tasks, total))
    }

    /// Tasks left running or submitted by a previous process (to resume at start).
    pub async fn unfinished_tasks(&self) -> Result<Vec<TaskRow>> {
        let rows = sqlx::query(&format!(
            "{TASK_SELECT} WHERE state IN ('submitted','working') ORDER BY seq_no"
        ))
        .fetch_all(&self.read)
        .await?;
        rows.iter().map(task_from_row).collect()
    }

    /// The events of a task with `after < seq <= upto`, in order, at most `limit`.
    pub async fn events(
        &self,
        task_id: &str,
        after: i64,
        upto: Option<i64>,
        limit: i64,
    ) -> Result<Vec<EventRow>> {
        let rows = sqlx::query(
            "SELECT seq, event, is_final FROM task_events
             WHERE task_id = ?1 AND seq > ?2 AND (?3 IS NULL OR seq <= ?3)
             ORDER BY seq LIMIT ?4",
        )
        .bind(task_id)
        .bind(after)
        .bind(upto)
        .bind(limit)
        .fetch_all(&self.read)
        .await?;
        rows.iter()
            .map(|row| {
                let event: String = row.try_get("event")?;
                Ok(EventRow {
                    seq: row.try_get("seq")?,
                    event: serde_json::from_str(&event)?,
                    is_final: row.try_get::<i64, _>("is_final")? != 0,
                })
            })
            .collect()
    }

    /// Applies one [`Commit`] atomically; returns the task's last event sequence number.
    pub async fn commit(&self, task_id: &str, commit: Commit) -> Result<i64> {
        let mut tx = self.write.begin().await?;
        let row = sqlx::query("SELECT state, last_seq FROM tasks WHERE id = ?")
            .bind(task_id)
            .fetch_optional(&mut *tx)
            .await?
            .ok_or(StoreError::NotFound)?;
        let state: String = row.try_get("state")?;
        let last_seq: i64 = row.try_get("last_seq")?;
        match commit.guard {
            Some(Guard::NotTerminal) if is_terminal(&state) => {
                return Err(StoreError::Conflict("the task has ended"));
            }
            Some(Guard::NotTerminal) | None => {}
        }
        let now = now();
        let last = append_events(&mut tx, task_id, last_seq, &commit.events).await?;
        let transcript = commit
            .transcript
            .as_ref()
            .map(serde_json::to_string)
            .transpose()?;
        sqlx::query(
            "UPDATE tasks SET last_seq = ?, state = COALESCE(?, state),
                              transcript = COALESCE(?, transcript), updated_at = ?
             WHERE id = ?",
        )
        .bind(last)
        .bind(&commit.state)
        .bind(transcript)
        .bind(&now)
        .bind(task_id)
        .execute(&mut *tx)
        .await?;
        if !commit.new_calls.is_empty() {
            let position: i64 =
                sqlx::query("SELECT COALESCE(MAX(position), 0) FROM calls WHERE task_id = ?")
                    .bind(task_id)
                    .fetch_one(&mut *tx)
                    .await?
                    .try_get(0)?;
            for (index, call) in commit.new_calls.iter().enumerate() {
                let status = if call.held {
                    CallStatus::Held
                } else {
                    CallStatus::Auto
                };
                sqlx::query(
                    "INSERT INTO calls (task_id, call_id, position, name, source, args,
                                        args_sha256, status)
                     VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                )
                .bind(task_id)
                .bind(&call.call_id)
                .bind(position + 1 + index as i64)
                .bind(&call.name)
                .bind(&call.source)
                .bind(serde_json::to_string(&call.args)?)
                .bind(&call.args_sha256)
                .bind(status.as_str())
                .execute(&mut *tx)
                .await?;
            }
        }
        for update in &commit.call_updates {
            match update {
                CallUpdate::Started {
                    call_id,
                    run_args,
                    run_args_sha256,
                } => {
                    sqlx::query(
                        "UPDATE calls SET status = 'started', started_at = ?, run_args = ?,
                                          run_args_sha256 = ?
                         WHERE task_id = ? AND call_id = ?",
                    )
                    .bind(&now)
                    .bind(serde_json::to_string(run_args)?)
                    .bind(run_args_sha256)
                    .bind(task_id)
                    .bind(call_id)
                    .execute(&mut *tx)
                    .await?;
                }
                CallUpdate::Finished { call_id, result } => {
                    sqlx::query(
                        "UPDATE calls SET status = 'finished', finished_at = ?, result = ?
                         WHERE task_id = ? AND call_id = ?",
                    )
                    .bind(&now)
                    .bind(serde_json::to_string(result)?)
                    .bind(task_id)
                    .bind(call_id)
                    .execute(&mut *tx)
                    .await?;
                }
            }
        }
        if let Some(requests) = &commit.new_batch {
            let batch_id: i64 = sqlx::query(
                "INSERT INTO batches (task_id, state, requests, created_at)
                 VALUES (?, 'pending', ?, ?) RETURNING id",
            )
            .bind(task_id)
            .bind(serde_json::to_string(requests)?)
            .bind(&now)
            .fetch_one(&mut *tx)
            .await?
            .try_get(0)?;
            sqlx::query(
                "UPDATE calls SET batch_id = ? WHERE task_id = ? AND status = 'held'
                                                   AND batch_id IS NULL",
            )
            .bind(batch_id)
            .bind(task_id)
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
        Ok(last)
    }

    // ---- batches, decisions, calls ---------------------------------------------------------

    /// The task's pending batch, if it has one.
    pub async fn pending_batch(&self, task_id: &str) -> Result<Option<BatchRow>> {
        let row = sqlx::query(&format!(
            "{BATCH_SELECT} WHERE task_id = ? AND state = 'pending'"
        ))
        .bind(task_id)
        .fetch_optional(&self.read)
        .await?;
        row.map(|row| batch_from_row(&row)).transpose()
    }

    /// Every pending batch of a user's tasks, oldest first, in one query (a team may have
    /// thousands paused).
    pub async fn pending_batches(&self, user_id: &str) -> Result<Vec<PendingBatchRow>> {
        let rows = sqlx::query(
            "SELECT b.id, b.task_id, b.state, b.requests, b.created_at, b.decided_at,
                    t.context_id, t.agent
             FROM batches b JOIN tasks t ON t.id = b.task_id
             WHERE b.state = 'pending' AND t.user_id = ? ORDER BY b.id",
        )
        .bind(user_id)
        .fetch_all(&self.read)
        .await?;
        rows.iter()
            .map(|row| {
                Ok(PendingBatchRow {
                    batch: batch_from_row(row)?,
                    context_id: row.try_get("context_id")?,
                    agent: row.try_get("agent")?,
                })
            })
            .collect()
    }

    /// Decides (or cancels) a pending batch: ONE transaction that moves it from `pending` to
    /// `batch_state` only if it is still pending, records every call's verdict and the audit
    /// row, sets the task's state and appends the events. The loser of a race gets
    /// [`StoreError::Conflict`] and nothing changes.
    pub async fn decide(&self, task_id: &str, decision: DecisionWrite) -> Result<i64> {
        let mut tx = self.write.begin().await?;
        let now = now();
        let won = sqlx::query(
            "UPDATE batches SET state = ?, decided_at = ?
             WHERE id = ? AND task_id = ? AND state = 'pending'",
        )
        .bind(&decision.batch_state)
        .bind(&now)
        .bind(decision.batch_id)
        .bind(task_id)
        .execute(&mut *tx)
        .await?;
        if won.rows_affected() != 1 {
            return Err(StoreError::Conflict("the batch was already decided"));
        }
        for verdict in &decision.verdicts {
            let done = sqlx::query(
                "UPDATE calls SET status = ?, verdict = ?, reason = ?, run_args = ?,
                                  run_args_sha256 = ?
                 WHERE task_id = ? AND call_id = ? AND batch_id = ? AND status = 'held'",
            )
            .bind(verdict.status.as_str())
            .bind(&verdict.verdict)
            .bind(&verdict.reason)
            .bind(
                verdict
                    .run_args
                    .as_ref()
                    .map(serde_json::to_string)
                    .transpose()?,
            )
            .bind(&verdict.run_args_sha256)
            .bind(task_id)
            .bind(&verdict.call_id)
            .bind(decision.batch_id)
            .execute(&mut *tx)
            .await?;
            if done.rows_affected() != 1 {
                return Err(StoreError::Conflict("a call of the batch is not held"));
            }
        }
        sqlx::query(
            "INSERT INTO decisions (batch_id, task_id, user_id, channel, decision, summary,
                                    decided_at)
             VALUES (?, ?, ?, ?, ?, ?, ?)",
        )
        .bind(decision.batch_id)
        .bind(task_id)
        .bind(&decision.user_id)
        .bind(&decision.channel)
        .bind(serde_json::to_string(&decision.decision)?)
        .bind(&decision.summary)
        .bind(&now)
        .execute(&mut *tx)
        .await?;
        let last_seq: i64 = sqlx::query("SELECT last_seq FROM tasks WHERE id = ?")
            .bind(task_id)
            .fetch_one(&mut *tx)
            .await?
            .try_get(0)?;
        let last = append_events(&mut tx, task_id, last_seq, &decision.events).await?;
        sqlx::query("UPDATE tasks SET state = ?, last_seq = ?, updated_at = ? WHERE id = ?")
            .bind(&decision.task_state)
            .bind(last)
            .bind(&now)
            .bind(task_id)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(last)
    }

    /// The calls of a task, in the order the model asked for them.
    pub async fn calls(&self, task_id: &str) -> Result<Vec<CallRow>> {
        let rows = sqlx::query(
            "SELECT task_id, call_id, position, name, source, args, args_sha256, batch_id, status,
                    verdict, reason, run_args, run_args_sha256, result, started_at, finished_at
             FROM calls WHERE task_id = ? ORDER BY position",
        )
        .bind(task_id)
        .fetch_all(&self.read)
        .await?;
        rows.iter().map(call_from_row).collect()
    }

    /// The audit rows of one task, oldest first.
    pub async fn task_decisions(&self, task_id: &str) -> Result<Vec<DecisionRow>> {
        let rows = sqlx::query(&format!("{DECISION_SELECT} WHERE task_id = ? ORDER BY id"))
            .bind(task_id)
            .fetch_all(&self.read)
            .await?;
        rows.iter().map(decision_from_row).collect()
    }

    /// A user's most recent decisions, newest first.
    pub async fn recent_decisions(&self, user_id: &str, limit: i64) -> Result<Vec<DecisionRow>> {
        let rows = sqlx::query(&format!(
            "{DECISION_SELECT} WHERE user_id = ? ORDER BY id DESC LIMIT ?"
        ))
        .bind(user_id)
        .bind(limit)
        .fetch_all(&self.read)
        .await?;
        rows.iter().map(decision_from_row).collect()
    }
}

fn is_terminal(state: &str) -> bool {
    matches!(state, "completed" | "failed" | "canceled" | "rejected")
}

async fn append_events(
    tx: &mut sqlx::Transaction<'_, sqlx::Sqlite>,
    task_id: &str,
    last_seq: i64,
    events: &[NewEvent],
) -> Result<i64> {
    let now = now();
    let mut seq = last_seq;
    for event in events {
        seq += 1;
        sqlx::query(
            "INSERT INTO task_events (task_id, seq, event, is_final, created_at)
             VALUES (?, ?, ?, ?, ?)",
        )
        .bind(task_id)
        .bind(seq)
        .bind(serde_json::to_string(&event.event)?)
        .bind(i64::from(event.is_final))
        .bind(&now)
        .execute(&mut **tx)
        .await?;
    }
    Ok(seq)
}

const TASK_SELECT: &str = "SELECT id, context_id, user_id, agent, state, transcript, last_seq,
                                  created_at, updated_at FROM tasks";
const BATCH_SELECT: &str =
    "SELECT id, task_id, state, requests, created_at, decided_at FROM batches";
const DECISION_SELECT: &str = "SELECT id, batch_id, task_id, user_id, channel, decision, summary,
                                      decided_at FROM decisions";

fn session_from_row(row: &sqlx::sqlite::SqliteRow) -> Result<SessionRow> {
    Ok(SessionRow {
        id: row.try_get("id")?,
        user_id: row.try_get("user_id")?,
        agent: row.try_get("agent")?,
        title: row.try_get("title")?,
        created_at: row.try_get("created_at")?,
        updated_at: row.try_get("updated_at")?,
    })
}

fn task_from_row(row: &sqlx::sqlite::SqliteRow) -> Result<TaskRow> {
    let transcript: String = row.try_get("transcript")?;
    Ok(TaskRow {
        id: row.try_get("id")?,
        context_id: row.try_get("context_id")?,
        user_id: row.try_get("user_id")?,
        agent: row.try_get("agent")?,
        state: row.try_get("state")?,
        transcript: serde_json::from_str(&transcript)?,
        last_seq: row.try_get("last_seq")?,
        created_at: row.try_get("created_at")?,
        updated_at: row.try_get("updated_at")?,
    })
}

fn batch_from_row(row: &sqlx::sqlite::SqliteRow) -> Result<BatchRow> {
    let requests: String = row.try_get("requests")?;
    Ok(BatchRow {
        id: row.try_get("id")?,
        task_id: row.try_get("task_id")?,
        state: row.try_get("state")?,
        requests: serde_json::from_str(&requests)?,
        created_at: row.try_get("created_at")?,
        decided_at: row.try_get("decided_at")?,
    })
}

fn json_column(row: &sqlx::sqlite::SqliteRow, name: &str) -> Result<Option<Value>> {
    let text: Option<String> = row.try_get(name)?;
    Ok(text.map(|text| serde_json::from_str(&text)).transpose()?)
}

fn call_from_row(row: &sqlx::sqlite::SqliteRow) -> Result<CallRow> {
    let status: String = row.try_get("status")?;
    Ok(CallRow {
        task_id: row.try_get("task_id")?,
        call_id: row.try_get("call_id")?,
        position: row.try_get("position")?,
        name: row.try_get("name")?,
        source: row.try_get("source")?,
        args: json_column(row, "args")?.unwrap_or(Value::Null),
        args_sha256: row.try_get("args_sha256")?,
        batch_id: row.try_get("batch_id")?,
        status: CallStatus::parse(&status)?,
        verdict: row.try_get("verdict")?,
        reason: row.try_get("reason")?,
        run_args: json_column(row, "run_args")?,
        run_args_sha256: row.try_get("run_args_sha256")?,
        result: json_column(row, "result")?,
        started_at: row.try_get("started_at")?,
        finished_at: row.try_get("finished_at")?,
    })
}

fn decision_from_row(row: &sqlx::sqlite::SqliteRow) -> Result<DecisionRow> {
    Ok(DecisionRow {
        id: row.try_get("id")?,
        batch_id: row.try_get("batch_id")?,
        task_id: row.try_get("task_id")?,
        user_id: row.try_get("user_id")?,
        channel: row.try_get("channel")?,
        decision: json_column(row, "decision")?.unwrap_or(Value::Null),
        summary: row.try_get("summary")?,
        decided_at: row.try_get("decided_at")?,
    })
}
