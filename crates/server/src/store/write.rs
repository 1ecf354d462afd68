//! The task writes both backends share, written once: a task's creation ([`create_task`]) and
//! its commit ([`apply_commit`]), over [`Transaction`], the little a backend must supply: run a
//! statement written with `$1` parameters, read one value back, and the three places where the
//! dialects really differ (appending events, recording a pending approval event, the lease
//! fence). SQLite's transaction answers at once, so it drives these async functions to their end
//! in a single poll (see `sqlite::tasks`); PostgreSQL awaits them.

use signoff_protocol::TaskState;

use super::columns::{task_params, TASK_INSERT};
use super::outbox::{insert_notifications, insert_pushes};
use super::receipts::{self, ReceiptFacts, Sealer};
use super::rows::json_text;
use super::{
    now, task_state_text, BatchState, CallStatus, CallUpdate, Commit, Guard, NewCall, NewEvent,
    PushConfigRow, Result, StoreError, TaskRow, Written,
};

/// A value bound to a statement's parameter.
#[derive(Debug, Clone, Copy)]
pub(super) enum Param<'a> {
    Text(&'a str),
    OptionalText(Option<&'a str>),
    Int(i64),
    OptionalInt(Option<i64>),
    Bool(bool),
}

/// One backend's open write transaction, as the shared writes use it. Statements are written
/// with PostgreSQL's `$1` parameters; SQLite's side spells them `?1` (see [`sqlite_dialect`]).
pub(super) trait Transaction {
    /// Runs a statement; how many rows it changed.
    async fn execute(&mut self, sql: &str, params: &[Param<'_>]) -> Result<u64>;
    /// The first column (an integer) of the first row of a query, if it returned one.
    async fn optional_int(&mut self, sql: &str, params: &[Param<'_>]) -> Result<Option<i64>>;
    /// The first column (text) of every row of a query.
    async fn texts(&mut self, sql: &str, params: &[Param<'_>]) -> Result<Vec<String>>;
    /// The first two columns (text) of the first row of a query, if it returned one.
    async fn optional_texts(
        &mut self,
        sql: &str,
        params: &[Param<'_>],
    ) -> Result<Option<(String, String)>>;
    /// Appends `events` as numbers `first_seq`, `first_seq + 1`, …
    async fn append_events(
        &mut self,
        task_id: &str,
        first_seq: i64,
        events: &[NewEvent],
        now: &str,
    ) -> Result<()>;
    /// Records `event` of the batch `batch_id` of `task_id` for the approvals stream (see
    /// `store::approvals`); the user whose approval event it wrote, if it wrote one. Called last
    /// before the outbox's rows: PostgreSQL orders the writers of these events by a lock.
    async fn record_approval_event(
        &mut self,
        event: ApprovalEvent<'_>,
        task_id: &str,
        batch_id: i64,
        now: &str,
    ) -> Result<Option<String>>;
    /// The condition that this replica still holds a task's lease, on the parameter `{owner}`,
    /// and the replica's name to bind there; `None` where one process drives every task
    /// (SQLite), so a runner's step needs no fence.
    fn lease_fence(&self) -> Option<(&'static str, &str)>;
    /// The assignments that lease a task to this replica for `lease`, on the parameter
    /// `{owner}`, and the replica's name to bind there; `None` where there are no leases.
    fn lease_claim(&self, lease: std::time::Duration) -> Option<(String, &str)>;
    /// Whether this process is the database's only writer (SQLite): no one writes between two
    /// of its statements, and a statement costs no round trip. Elsewhere (PostgreSQL, shared
    /// by replicas) writers are ordered by locking a row, and a statement may write in a
    /// `WITH` clause besides its own, which saves a round trip.
    fn sole_writer(&self) -> bool;
}

/// What the approvals stream hears of a batch.
#[derive(Debug, Clone, Copy)]
pub(super) enum ApprovalEvent<'a> {
    /// The batch started waiting.
    Pending,
    /// Votes by `voter` left it waiting, further along its quorum.
    Progress { voter: &'a str },
    /// It was decided (or canceled, or expired) through `outcome`.
    Decided {
        outcome: &'a str,
        decided_by: &'a str,
    },
}

/// `sql` with PostgreSQL's `$1` parameters spelt as SQLite's `?1`. Every statement SQLite runs
/// comes through here (before its prepared-statement cache is looked up), so it copies the
/// text once and swaps the one-byte marks in place rather than rebuilding it a char at a time.
pub(super) fn sqlite_dialect(sql: &str) -> String {
    let mut out = sql.to_owned();
    let bytes = sql.as_bytes();
    for (at, _) in sql.match_indices('$') {
        if bytes.get(at + 1).is_some_and(u8::is_ascii_digit) {
            out.replace_range(at..=at, "?");
        }
    }
    out
}

/// The states a `NotTerminal` guard refuses.
pub(super) const TERMINAL: [TaskState; 4] = [
    TaskState::Completed,
    TaskState::Failed,
    TaskState::Canceled,
    TaskState::Rejected,
];

/// Creates a task with its first events, and its session (titled `title`) if this is the
/// session's first task; whether it created the session. A session that exists must be the same
/// user's and agent's, else [`StoreError::Conflict`]. `remote`: a task relayed to a remote agent.
pub(super) async fn create_task(
    tx: &mut impl Transaction,
    task: &TaskRow,
    title: &str,
    events: &[NewEvent],
    push: Option<&PushConfigRow>,
    remote: bool,
) -> Result<bool> {
    use Param::*;
    let created = tx
        .execute(
            "INSERT INTO sessions (id, user_id, agent, title, created_at, updated_at)
             VALUES ($1, $2, $3, $4, $5, $5) ON CONFLICT (id) DO NOTHING",
            &[
                Text(&task.context_id),
                Text(&task.user_id),
                Text(&task.agent),
                Text(title),
                Text(&task.created_at),
            ],
        )
        .await?;
    if created == 0 {
        // On PostgreSQL this locks the session's row: a concurrent delete waits for this task,
        // or wins first.
        let owner = tx
            .optional_texts(
                "UPDATE sessions SET updated_at = $1 WHERE id = $2 RETURNING user_id, agent",
                &[Text(&task.updated_at), Text(&task.context_id)],
            )
            .await?;
        let Some((user_id, agent)) = owner else {
            return Err(StoreError::Conflict("the session was deleted"));
        };
        if user_id != task.user_id || agent != task.agent {
            return Err(StoreError::Conflict(
                "the session belongs to another user or agent",
            ));
        }
    }
    let last_seq = events.len() as i64;
    let groups = serde_json::to_string(&task.requester_groups)
        .map_err(|err| super::StoreError::Corrupt(err.to_string()))?;
    tx.execute(TASK_INSERT, &task_params(task, last_seq, remote, &groups))
        .await?;
    tx.append_events(&task.id, 1, events, &task.updated_at)
        .await?;
    if let Some(config) = push {
        insert_push_config(tx, config).await?;
    }
    Ok(created == 1)
}

/// Writes a new task's first push config (a new task has no other to count or replace).
async fn insert_push_config(tx: &mut impl Transaction, config: &PushConfigRow) -> Result<()> {
    use Param::*;
    tx.execute(
        "INSERT INTO push_configs (task_id, id, user_id, version, url, token, auth_scheme,
             auth_credentials, created_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
        &[
            Text(&config.task_id),
            Text(&config.id),
            Text(&config.user_id),
            Text(&config.version),
            Text(&config.url),
            OptionalText(config.token.as_deref()),
            OptionalText(config.auth_scheme.as_deref()),
            OptionalText(config.auth_credentials.as_deref()),
            Text(&config.created_at),
        ],
    )
    .await?;
    Ok(())
}

/// Applies one [`Commit`] inside the caller's transaction: the compare-and-set on the task's row
/// first (nothing else is written if it refuses), then the queue, the events, the call records
/// (with the receipts, signed by `seal`, of those decided without asking) and the new batch.
pub(super) async fn apply_commit(
    tx: &mut impl Transaction,
    task_id: &str,
    commit: &Commit,
    seal: Option<&Sealer>,
) -> Result<Written> {
    let now = now();
    let last = move_task(tx, task_id, commit, &now).await?;
    // Nothing can join the queue between this check and the commit: SQLite runs one write at a
    // time, and on PostgreSQL the UPDATE above holds the task's row lock, which queueing a
    // message takes first.
    if commit.unless_queued {
        let waiting = tx
            .optional_int(
                "SELECT id FROM queued_messages WHERE task_id = $1 LIMIT 1",
                &[Param::Text(task_id)],
            )
            .await?;
        if waiting.is_some() {
            return Err(StoreError::MessagesWaiting);
        }
    }
    for id in &commit.delivered {
        tx.execute(
            "DELETE FROM queued_messages WHERE id = $1",
            &[Param::Int(*id)],
        )
        .await?;
    }
    // A task that ends takes no more messages: what still waits would never be delivered.
    if commit.state.is_some_and(|state| state.is_terminal()) {
        tx.execute(
            "DELETE FROM queued_messages WHERE task_id = $1",
            &[Param::Text(task_id)],
        )
        .await?;
    }
    let first_seq = last - commit.events.len() as i64 + 1;
    tx.append_events(task_id, first_seq, &commit.events, &now)
        .await?;
    let mut facts = Vec::new();
    if !commit.new_calls.is_empty() {
        facts = record_calls(tx, task_id, &commit.new_calls, &now).await?;
    }
    for update in &commit.call_updates {
        update_call(tx, task_id, update, &now).await?;
    }
    // The chain's head late, before only the approvals stream's lock (see `receipts`).
    receipts::append(tx, seal, facts, &now).await?;
    let mut approvals_of = None;
    let mut opened = None;
    if let Some(requests) = &commit.new_batch {
        let batch_id = open_batch(tx, task_id, &json_text(requests)?, &now).await?;
        if let Some(expires_at) = &commit.batch_deadline {
            tx.execute(
                "UPDATE batches SET expires_at = $1 WHERE id = $2",
                &[Param::Text(expires_at), Param::Int(batch_id)],
            )
            .await?;
        }
        approvals_of = tx
            .record_approval_event(ApprovalEvent::Pending, task_id, batch_id, &now)
            .await?;
        opened = Some(batch_id);
    }
    if !commit.notifications.is_empty() {
        insert_notifications(tx, task_id, opened, &commit.notifications, &now).await?;
    }
    if commit.push {
        insert_pushes(tx, task_id, last, &now).await?;
    }
    Ok(Written {
        last_seq: last,
        approvals_of,
    })
}

/// The compare-and-set on the task's row: one statement moves the task on and says where its log
/// now ends, or refuses (guarded and ended, a runner's step without the lease, or gone). Most
/// commits keep the state: their statement does not assign it, so the state index is left alone.
async fn move_task(
    tx: &mut impl Transaction,
    task_id: &str,
    commit: &Commit,
    now: &str,
) -> Result<i64> {
    use Param::*;
    let [ended_1, ended_2, ended_3, ended_4] = TERMINAL.map(task_state_text);
    let fence = (tx.lease_fence())
        .filter(|_| commit.leased)
        .map(|(held, replica)| (held, replica.to_owned()));
    let mut params = vec![
        Int(commit.events.len() as i64),
        OptionalText(commit.transcript.as_deref()),
        Text(now),
        Text(task_id),
        Bool(commit.guard == Some(Guard::NotTerminal)),
        Text(ended_1),
        Text(ended_2),
        Text(ended_3),
        Text(ended_4),
    ];
    let mut sql = String::from("UPDATE tasks SET last_seq = last_seq + $1, ");
    if let Some(state) = commit.state {
        params.push(Text(task_state_text(state)));
        sql.push_str(&format!("state = ${}, ", params.len()));
    }
    sql.push_str(
        "transcript = COALESCE($2, transcript), updated_at = $3
         WHERE id = $4 AND NOT ($5 AND state IN ($6, $7, $8, $9))",
    );
    if let Some((held, replica)) = &fence {
        params.push(Text(replica));
        sql.push_str(" AND ");
        sql.push_str(&held.replace("{owner}", &format!("${}", params.len())));
    }
    sql.push_str(" RETURNING last_seq");
    match tx.optional_int(&sql, &params).await? {
        Some(last) => Ok(last),
        None => Err(refused(tx, task_id).await),
    }
}

/// Why a task's step wrote nothing: the task is gone, it has ended, or (a runner's step) this
/// replica no longer holds its lease.
pub(super) async fn refused(tx: &mut impl Transaction, task_id: &str) -> StoreError {
    let state = tx
        .optional_texts(
            "SELECT state, id FROM tasks WHERE id = $1",
            &[Param::Text(task_id)],
        )
        .await;
    match state.map(|row| row.map(|(state, _)| super::parse_task_state(&state))) {
        Ok(Some(Ok(state))) if state.is_terminal() => StoreError::Conflict("the task has ended"),
        Ok(Some(Ok(_))) => StoreError::Conflict("this replica no longer holds the task's lease"),
        Ok(Some(Err(err))) | Err(err) => err,
        Ok(None) => StoreError::NotFound,
    }
}

/// Records the calls a step asked for, after the task's earlier ones, with the decided batch and
/// audit row of each that was decided without asking; what the receipt of each of those says.
async fn record_calls(
    tx: &mut impl Transaction,
    task_id: &str,
    calls: &[NewCall],
    now: &str,
) -> Result<Vec<ReceiptFacts>> {
    use Param::*;
    let position = tx
        .optional_int(
            "SELECT COALESCE(MAX(position), 0) FROM calls WHERE task_id = $1",
            &[Text(task_id)],
        )
        .await?
        .unwrap_or(0);
    for (index, call) in calls.iter().enumerate() {
        tx.execute(
            "INSERT INTO calls (task_id, call_id, position, name, source, args, args_sha256,
                                status, why)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
            &[
                Text(task_id),
                Text(&call.call_id),
                Int(position + 1 + index as i64),
                Text(&call.name),
                Text(&call.source),
                Text(&json_text(&call.args)?),
                Text(&call.args_sha256),
                Text(call.status().as_str()),
                OptionalText(call.why.as_ref().map(json_text).transpose()?.as_deref()),
            ],
        )
        .await?;
    }
    let mut facts = Vec::new();
    for call in calls {
        let Some(auto) = &call.auto else { continue };
        let request =
            serde_json::json!([{"id": call.call_id, "name": call.name, "args": call.args}]);
        let batch_id = tx
            .optional_int(
                "INSERT INTO batches (task_id, state, requests, created_at, decided_at)
                 VALUES ($1, $2, $3, $4, $4) RETURNING id",
                &[
                    Text(task_id),
                    Text(BatchState::Decided.as_str()),
                    Text(&json_text(&request)?),
                    Text(now),
                ],
            )
            .await?
            .ok_or(StoreError::Commit("a batch insert returned no id".into()))?;
        tx.execute(
            "UPDATE calls SET batch_id = $1, verdict = $2, reason = $3
             WHERE task_id = $4 AND call_id = $5",
            &[
                Int(batch_id),
                Text(auto.verdict.as_str()),
                OptionalText(auto.reason.as_deref()),
                Text(task_id),
                Text(&call.call_id),
            ],
        )
        .await?;
        tx.execute(
            "INSERT INTO decisions (batch_id, task_id, user_id, channel, decision, summary,
                                    decided_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7)",
            &[
                Int(batch_id),
                Text(task_id),
                Text(&auto.user_id),
                Text(auto.channel.as_str()),
                Text(&json_text(&auto.decision)?),
                Text(&auto.summary),
                Text(now),
            ],
        )
        .await?;
        facts.push(ReceiptFacts {
            task_id: Some(task_id.to_owned()),
            call_id: call.call_id.clone(),
            tool: call.name.clone(),
            args_sha256: call.args_sha256.clone(),
            verdict: auto.verdict,
            decided_by: auto.user_id.clone(),
            auth: None,
            channel: auto.channel,
            why: receipts::why(
                &auto.summary,
                &auto.decision,
                auto.reason.as_deref(),
                call.why.as_ref(),
            ),
        });
    }
    Ok(facts)
}

/// A call starts or finishes.
async fn update_call(
    tx: &mut impl Transaction,
    task_id: &str,
    update: &CallUpdate,
    now: &str,
) -> Result<()> {
    use Param::*;
    match update {
        CallUpdate::Started {
            call_id,
            run_args,
            run_args_sha256,
        } => {
            // Only a call free to run starts, once: a runner that lost its task to another (a
            // lapsed lease) cannot start a call the other has started.
            let started = tx
                .execute(
                    "UPDATE calls SET status = $1, started_at = $2, run_args = $3,
                                      run_args_sha256 = $4
                     WHERE task_id = $5 AND call_id = $6 AND status IN ($7, $8)",
                    &[
                        Text(CallStatus::Started.as_str()),
                        Text(now),
                        Text(&json_text(run_args)?),
                        Text(run_args_sha256),
                        Text(task_id),
                        Text(call_id),
                        Text(CallStatus::Auto.as_str()),
                        Text(CallStatus::Approved.as_str()),
                    ],
                )
                .await?;
            if started != 1 {
                return Err(StoreError::Conflict("the call was already started"));
            }
        }
        CallUpdate::Finished { call_id, result } => {
            tx.execute(
                "UPDATE calls SET status = $1, finished_at = $2, result = $3
                 WHERE task_id = $4 AND call_id = $5 AND result IS NULL",
                &[
                    Text(CallStatus::Finished.as_str()),
                    Text(now),
                    Text(&json_text(result)?),
                    Text(task_id),
                    Text(call_id),
                ],
            )
            .await?;
        }
    }
    Ok(())
}

/// Opens a pending batch of `requests` (JSON text); every held call of the task without a batch
/// joins it.
async fn open_batch(
    tx: &mut impl Transaction,
    task_id: &str,
    requests: &str,
    now: &str,
) -> Result<i64> {
    use Param::*;
    let batch_id = tx
        .optional_int(
            "INSERT INTO batches (task_id, state, requests, created_at)
             VALUES ($1, $2, $3, $4) RETURNING id",
            &[
                Text(task_id),
                Text(BatchState::Pending.as_str()),
                Text(requests),
                Text(now),
            ],
        )
        .await?
        .ok_or(StoreError::Commit("a batch insert returned no id".into()))?;
    tx.execute(
        "UPDATE calls SET batch_id = $1 WHERE task_id = $2 AND status = $3 AND batch_id IS NULL",
        &[
            Int(batch_id),
            Text(task_id),
            Text(CallStatus::Held.as_str()),
        ],
    )
    .await?;
    Ok(batch_id)
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

    #[test]
    fn sqlite_spells_the_parameters_with_a_question_mark() {
        assert_eq!(
            sqlite_dialect("SELECT '$' || $1, $12 WHERE x = $2"),
            "SELECT '$' || ?1, ?12 WHERE x = ?2"
        );
        assert_eq!(sqlite_dialect("SELECT 'é$', $3$"), "SELECT 'é$', ?3$");
    }
}
