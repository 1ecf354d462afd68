//! Batches of held calls in SQLite: their reads, the audit trail of decisions, each call's
//! execution record, and the writer's side of a decision (`store::batch_write` writes it).

use rusqlite::{params, Connection};

use super::tasks::collect;
use super::{
    BatchRow, CallCounts, CallRow, CallVote, CountWindows, DecisionRow, DecisionWrite,
    PendingBatchRow, Result, Sqlite, TaskRow, Written,
};
use crate::store::columns::*;
use crate::store::receipts::Sealer;

/// The condition of the partial indexes on pending batches (`one_pending_batch_per_task`,
/// `batches_by_deadline`), spelt as a literal in every statement that looks for pending batches.
/// With `state = ?` SQLite can only tell whether such an index fits once the value is bound, so
/// it prepares the statement again at every run: most of a decision's time in the store.
pub(super) const PENDING: &str = "state = 'pending'";

/// A call of the tool was allowed to run: the gate or a person let it, whether or not it has
/// run yet (`calls` of any status a denial, a rejection, a cancel or an expiry never reaches).
const ALLOWED: &str = "calls.status IN ('auto', 'approved', 'started', 'finished') \
     AND (calls.verdict IS NULL OR calls.verdict = 'approve')";

/// The calls of a task, in the order the model asked for them.
pub(super) fn task_calls(connection: &Connection, task_id: &str) -> Result<Vec<CallRow>> {
    let mut statement = connection.prepare_cached(&format!(
        "{CALL_SELECT} WHERE task_id = ?1 ORDER BY position"
    ))?;
    let rows = statement.query([task_id])?;
    collect(rows, |row| call_from_row(row))
}

/// Applies `decision` on the writer's connection, in its transaction.
fn apply_decision(
    connection: &Connection,
    task_id: &str,
    decision: &DecisionWrite,
    seal: Option<&Sealer>,
) -> Result<Written> {
    super::tasks::run_now(crate::store::batch_write::apply_decision(
        &mut super::tasks::SqliteTransaction(connection),
        task_id,
        decision,
        seal,
    ))
}

/// The votes cast on batch `batch_id`, oldest first.
fn batch_votes(connection: &Connection, batch_id: i64) -> Result<Vec<CallVote>> {
    let mut statement =
        connection.prepare_cached(&format!("{VOTE_SELECT} WHERE batch_id = ?1 ORDER BY id"))?;
    let rows = statement.query([batch_id])?;
    collect(rows, |row| vote_from_row(row))
}

fn pending_batch_sql() -> String {
    format!("{BATCH_SELECT} WHERE task_id = ?1 AND {PENDING}")
}

/// The task's pending batch, if it has one.
fn pending_batch_of(connection: &Connection, task_id: &str) -> Result<Option<BatchRow>> {
    let mut statement = connection.prepare_cached(&pending_batch_sql())?;
    let rows = statement.query([task_id])?;
    Ok(collect(rows, |row| batch_from_row(row))?.pop())
}

impl Sqlite {
    /// The task's pending batch, if it has one.
    pub async fn pending_batch(&self, task_id: &str) -> Result<Option<BatchRow>> {
        self.read(|connection| pending_batch_of(connection, task_id))
    }

    /// A decision made inside the write that applies it: `plan` gets the task (if it exists)
    /// and its pending batch (if any) as the writer sees them, and returns what to write (or
    /// nothing) and what the caller wants back, or why the message is refused. What it returns
    /// is then applied as [`Store::decide`] does. So the checks and the compare-and-set see the
    /// same moment, and a decision pays for no read of its own (the writer's connection has
    /// these pages at hand; a reader's cache is emptied by every commit).
    ///
    /// `plan` may run twice (see `writer`): it must only compute. The outer result is the
    /// store's, the inner one `plan`'s refusal; the sequence number is the last event written.
    pub(in crate::store) async fn decide_planned<X, E, P>(
        &self,
        task_id: &str,
        mut plan: P,
        seal: Option<Sealer>,
    ) -> Result<std::result::Result<(Option<Written>, X), E>>
    where
        X: Send + 'static,
        E: Send + 'static,
        P: FnMut(
                Option<&TaskRow>,
                Option<&BatchRow>,
            ) -> std::result::Result<(Option<DecisionWrite>, X), E>
            + Send
            + 'static,
    {
        let task_id = task_id.to_owned();
        self.write(move |connection| {
            let task = super::tasks::task_row(connection, &task_id)?;
            let mut batch = match &task {
                Some(_) => pending_batch_of(connection, &task_id)?,
                None => None,
            };
            if let Some(batch) = batch.as_mut() {
                batch.votes = batch_votes(connection, batch.id)?;
                let steps = super::steps::batch_steps_of(connection, batch.id)?;
                batch.handed_to = crate::store::handed_to(&steps, batch.id);
            }
            match plan(task.as_ref(), batch.as_ref()) {
                Err(refused) => Ok(Err(refused)),
                Ok((None, back)) => Ok(Ok((None, back))),
                Ok((Some(write), back)) => {
                    let written = apply_decision(connection, &task_id, &write, seal.as_ref())?;
                    Ok(Ok((Some(written), back)))
                }
            }
        })
        .await
    }

    /// Every pending batch of a user's tasks, oldest first, in one query (a team may have
    /// thousands paused).
    pub async fn pending_batches(&self, user_id: &str) -> Result<Vec<PendingBatchRow>> {
        self.read(|connection| {
            let mut statement = connection.prepare_cached(
                "SELECT b.id, b.task_id, b.state, b.requests, b.created_at, b.decided_at,
                        b.expires_at, t.context_id, t.agent, s.title
                 FROM batches b JOIN tasks t ON t.id = b.task_id
                 LEFT JOIN sessions s ON s.id = t.context_id
                 WHERE b.state = 'pending' AND t.user_id = ?1
                   AND NOT EXISTS (SELECT 1 FROM subagent_tasks link
                                   WHERE link.child_task_id = b.task_id AND link.remote = 0)
                 ORDER BY b.id",
            )?;
            let rows = statement.query([user_id])?;
            collect(rows, |row| {
                Ok(PendingBatchRow {
                    batch: batch_from_row(row)?,
                    context_id: row.get(7)?,
                    agent: row.get(8)?,
                    title: row.get::<_, Option<String>>(9)?.unwrap_or_default(),
                })
            })
        })
    }

    /// How many batches wait for a decision, across all users (the metrics' gauge, read at
    /// every scrape). The state is spelled out, not bound, so SQLite counts the entries of the
    /// partial index `one_pending_batch_per_task` instead of scanning every batch ever made.
    pub async fn count_pending_batches(&self) -> Result<i64> {
        self.read(|connection| {
            let mut statement = connection
                .prepare_cached("SELECT COUNT(*) FROM batches WHERE state = 'pending'")?;
            Ok(statement.query_row([], |row| row.get(0))?)
        })
    }

    /// Decides (or cancels) a pending batch: ONE transaction that moves it from pending to
    /// `batch_state` only if it is still pending, records every call's verdict and the audit
    /// row, sets the task's state and appends the events. The loser of a race gets
    /// [`StoreError::Conflict`] and nothing changes.
    pub(in crate::store) async fn decide(
        &self,
        task_id: &str,
        decision: DecisionWrite,
        seal: Option<Sealer>,
    ) -> Result<Written> {
        let task_id = task_id.to_owned();
        self.write(move |connection| apply_decision(connection, &task_id, &decision, seal.as_ref()))
            .await
    }

    /// The calls of a task, in the order the model asked for them.
    pub async fn calls(&self, task_id: &str) -> Result<Vec<CallRow>> {
        self.read(|connection| task_calls(connection, task_id))
    }

    pub async fn call_counts(
        &self,
        task_id: &str,
        user_id: &str,
        tool: &str,
        windows: &CountWindows,
    ) -> Result<CallCounts> {
        self.read(|connection| {
            // One statement, so the answers come from one snapshot of the store.
            let mut statement = connection.prepare_cached(&format!(
                "SELECT \
                 (SELECT COUNT(*) FROM calls WHERE task_id = ?1 AND name = ?3 AND {ALLOWED}), \
                 (SELECT COUNT(*) FROM calls JOIN tasks ON tasks.id = calls.task_id \
                   WHERE tasks.user_id = ?2 AND calls.name = ?3 AND {ALLOWED} \
                   AND (calls.started_at IS NULL OR calls.started_at >= ?4)), \
                 (SELECT json_group_array(name) FROM (SELECT DISTINCT name FROM calls \
                   WHERE task_id = ?1 AND verdict = 'approve')), \
                 (SELECT json_group_object(key, json_array(in_task, last_hour, last_day)) FROM ( \
                   SELECT arg.key AS key, \
                   SUM(CASE WHEN calls.task_id = ?1 THEN arg.value ELSE 0 END) AS in_task, \
                   SUM(CASE WHEN calls.started_at IS NULL OR calls.started_at >= ?4 \
                     THEN arg.value ELSE 0 END) AS last_hour, \
                   SUM(CASE WHEN calls.started_at IS NULL OR calls.started_at >= ?5 \
                     THEN arg.value ELSE 0 END) AS last_day \
                   FROM calls JOIN tasks ON tasks.id = calls.task_id, \
                   json_each(COALESCE(calls.run_args, calls.args)) AS arg \
                   WHERE tasks.user_id = ?2 AND calls.name = ?3 AND {ALLOWED} \
                   AND (calls.task_id = ?1 OR calls.started_at IS NULL \
                     OR calls.started_at >= ?5) \
                   AND arg.type IN ('integer', 'real') GROUP BY arg.key))"
            ))?;
            let (in_task, last_hour, approved, sums): (i64, i64, String, String) = statement
                .query_row(
                    params![task_id, user_id, tool, windows.hour, windows.day],
                    |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?)),
                )?;
            let mut counts = CallCounts {
                tool_allowed_in_task: in_task,
                tool_allowed_by_user_last_hour: last_hour,
                approved_in_task: serde_json::from_str(&approved)?,
                ..CallCounts::default()
            };
            counts.read_sums(&sums)?;
            Ok(counts)
        })
    }

    pub async fn voted_on(&self, task_id: &str, user_id: &str) -> Result<bool> {
        self.read(|connection| {
            let mut statement = connection.prepare_cached(
                "SELECT 1 FROM call_votes WHERE task_id = ?1 AND user_id = ?2 LIMIT 1",
            )?;
            Ok(statement.exists(params![task_id, user_id])?)
        })
    }

    pub async fn task_votes(&self, task_id: &str) -> Result<Vec<(i64, CallVote)>> {
        self.read(|connection| {
            let mut statement = connection
                .prepare_cached(&format!("{VOTE_SELECT} WHERE task_id = ?1 ORDER BY id"))?;
            let rows = statement.query([task_id])?;
            collect(rows, |row| batch_vote_from_row(row))
        })
    }

    pub async fn pending_batches_of_agents(
        &self,
        agents: &[String],
    ) -> Result<Vec<(PendingBatchRow, String)>> {
        let agents = serde_json::to_string(agents)?;
        self.read(|connection| {
            let mut statement = connection.prepare_cached(
                "SELECT b.id, b.task_id, b.state, b.requests, b.created_at, b.decided_at,
                        b.expires_at, t.context_id, t.agent, s.title, t.user_id
                 FROM batches b JOIN tasks t ON t.id = b.task_id
                 LEFT JOIN sessions s ON s.id = t.context_id
                 WHERE b.state = 'pending'
                   AND t.agent IN (SELECT value FROM json_each(?1))
                   AND NOT EXISTS (SELECT 1 FROM subagent_tasks link
                                   WHERE link.child_task_id = b.task_id AND link.remote = 0)
                 ORDER BY b.id",
            )?;
            let rows = statement.query([agents])?;
            collect(rows, |row| {
                Ok((
                    PendingBatchRow {
                        batch: batch_from_row(row)?,
                        context_id: row.get(7)?,
                        agent: row.get(8)?,
                        title: row.get::<_, Option<String>>(9)?.unwrap_or_default(),
                    },
                    row.get(10)?,
                ))
            })
        })
    }

    /// The audit rows of one task, oldest first.
    pub async fn task_decisions(&self, task_id: &str) -> Result<Vec<DecisionRow>> {
        self.read(|connection| {
            let mut statement = connection
                .prepare_cached(&format!("{DECISION_SELECT} WHERE task_id = ?1 ORDER BY id"))?;
            let rows = statement.query([task_id])?;
            collect(rows, |row| decision_from_row(row))
        })
    }

    /// A user's most recent decisions, newest first.
    pub async fn recent_decisions(&self, user_id: &str, limit: i64) -> Result<Vec<DecisionRow>> {
        self.read(|connection| {
            let mut statement = connection.prepare_cached(&format!(
                "{DECISION_SELECT} WHERE user_id = ?1 ORDER BY id DESC LIMIT ?2"
            ))?;
            let rows = statement.query(params![user_id, limit])?;
            collect(rows, |row| decision_from_row(row))
        })
    }
}

#[cfg(test)]
mod tests {
    use rusqlite::StatementStatus;

    use super::*;
    use crate::store::BatchState;

    #[test]
    fn the_pending_literal_is_the_pending_state() {
        assert_eq!(
            PENDING,
            format!("state = '{}'", BatchState::Pending.as_str())
        );
    }

    #[test]
    fn finding_a_pending_batch_does_not_prepare_its_statement_again() {
        let dir = tempfile::tempdir().unwrap();
        // Connected and migrated as the server's writer is.
        let flags =
            rusqlite::OpenFlags::SQLITE_OPEN_READ_WRITE | rusqlite::OpenFlags::SQLITE_OPEN_CREATE;
        let connection = super::super::connect(&dir.path().join("b.db"), flags).unwrap();
        super::super::schema::migrate(&connection).unwrap();
        connection
            .execute(
                "INSERT INTO tasks (id, context_id, user_id, agent, state, transcript, created_at,
                                    updated_at)
                 VALUES ('t', 'c', 'u', 'a', 'input-required', '[]', 'now', 'now')",
                [],
            )
            .unwrap();
        let batch: i64 = connection
            .query_row(
                "INSERT INTO batches (task_id, state, requests, created_at)
                 VALUES ('t', 'pending', '[]', 'now') RETURNING id",
                [],
                |row| row.get(0),
            )
            .unwrap();
        for _ in 0..3 {
            let found = pending_batch_of(&connection, "t").unwrap();
            assert_eq!(found.map(|batch| batch.id), Some(batch));
        }
        let statement = connection.prepare_cached(&pending_batch_sql()).unwrap();
        assert_eq!(
            statement.get_status(StatementStatus::Run),
            3,
            "the cached one"
        );
        assert_eq!(statement.get_status(StatementStatus::RePrepare), 0);
    }
}
