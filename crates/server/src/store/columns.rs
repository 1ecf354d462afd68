//! Each table's columns as both backends select them, and the mapping of such a row to its
//! typed struct, written once: a backend only says how to read one column of its rows
//! ([`Columns`]). The SELECT and its mapping stand together because the mapping reads the
//! columns by position; so do the task's INSERT and its values.

use serde_json::Value;

use super::rows::json_value;
use super::write::Param;
use super::{
    parse_task_state, task_state_text, BatchRow, BatchState, CallRow, CallStatus, CallVote,
    Channel, Deadline, DecisionRow, GrantRow, GrantScope, ReplayCall, Result, SessionRow,
    StoreError, TaskRow, Verdict,
};

/// One row of a backend's answer, read by column position.
pub(super) trait Columns {
    fn text(&self, index: usize) -> Result<String>;
    fn optional_text(&self, index: usize) -> Result<Option<String>>;
    fn int(&self, index: usize) -> Result<i64>;
    fn optional_int(&self, index: usize) -> Result<Option<i64>>;
}

/// A JSON column; text that is not JSON is a corrupt row.
fn optional_json(row: &impl Columns, index: usize) -> Result<Option<Value>> {
    row.optional_text(index)?
        .as_deref()
        .map(json_value)
        .transpose()
}

pub(super) const SESSION_SELECT: &str =
    "SELECT id, user_id, agent, title, created_at, updated_at FROM sessions";

/// A session that is not a subagent's own (its parent's chat shows it inside a card): the
/// condition the list of a person's chats adds.
pub(super) const NOT_A_SUBAGENT_SESSION: &str =
    "NOT EXISTS (SELECT 1 FROM subagent_tasks WHERE child_context_id = sessions.id)";

pub(super) fn session_from_row(row: &impl Columns) -> Result<SessionRow> {
    Ok(SessionRow {
        id: row.text(0)?,
        user_id: row.text(1)?,
        agent: row.text(2)?,
        title: row.text(3)?,
        created_at: row.text(4)?,
        updated_at: row.text(5)?,
    })
}

pub(super) const TASK_SELECT: &str =
    "SELECT id, context_id, user_id, agent, state, transcript, last_seq, created_at, updated_at,
            requester_groups
     FROM tasks";

pub(super) fn task_from_row(row: &impl Columns) -> Result<TaskRow> {
    Ok(TaskRow {
        id: row.text(0)?,
        context_id: row.text(1)?,
        user_id: row.text(2)?,
        agent: row.text(3)?,
        state: parse_task_state(&row.text(4)?)?,
        transcript: row.text(5)?,
        last_seq: row.int(6)?,
        created_at: row.text(7)?,
        updated_at: row.text(8)?,
        requester_groups: groups_from_text(&row.text(9)?)?,
    })
}

/// A JSON array of group names; anything else is a corrupt row.
fn groups_from_text(text: &str) -> Result<Vec<String>> {
    serde_json::from_str(text)
        .map_err(|err| super::StoreError::Corrupt(format!("requester_groups: {err}")))
}

/// Writes a new task's row: the columns of [`task_params`], in its order.
pub(super) const TASK_INSERT: &str =
    "INSERT INTO tasks (id, context_id, user_id, agent, state, transcript, last_seq, created_at,
                        updated_at, remote, requester_groups)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)";

/// The values of [`TASK_INSERT`]: `task` with its log ending at `last_seq`, relayed to a remote
/// agent if `remote`.
pub(super) fn task_params<'a>(
    task: &'a TaskRow,
    last_seq: i64,
    remote: bool,
    groups: &'a str,
) -> Vec<Param<'a>> {
    vec![
        Param::Text(&task.id),
        Param::Text(&task.context_id),
        Param::Text(&task.user_id),
        Param::Text(&task.agent),
        Param::Text(task_state_text(task.state)),
        Param::Text(&task.transcript),
        Param::Int(last_seq),
        Param::Text(&task.created_at),
        Param::Text(&task.updated_at),
        Param::Bool(remote),
        Param::Text(groups),
    ]
}

pub(super) const BATCH_SELECT: &str =
    "SELECT id, task_id, state, requests, created_at, decided_at, expires_at FROM batches";

pub(super) fn batch_from_row(row: &impl Columns) -> Result<BatchRow> {
    Ok(BatchRow {
        id: row.int(0)?,
        task_id: row.text(1)?,
        state: BatchState::parse(&row.text(2)?)?,
        requests: optional_json(row, 3)?.unwrap_or(Value::Null),
        created_at: row.text(4)?,
        decided_at: row.optional_text(5)?,
        expires_at: row.optional_text(6)?,
        votes: Vec::new(),
        handed_to: super::Handed::default(),
    })
}

pub(super) const VOTE_SELECT: &str =
    "SELECT call_id, user_id, email, verdict, reason, run_args, args_sha256, eligible_by,
            channel, voted_at, batch_id
     FROM call_votes";

pub(super) fn vote_from_row(row: &impl Columns) -> Result<CallVote> {
    let eligible_by = optional_json(row, 7)?.unwrap_or(Value::Null);
    Ok(CallVote {
        call_id: row.text(0)?,
        user_id: row.text(1)?,
        email: row.optional_text(2)?,
        verdict: Verdict::parse(&row.text(3)?)?,
        reason: row.optional_text(4)?,
        run_args: optional_json(row, 5)?,
        args_sha256: row.text(6)?,
        eligible_by: serde_json::from_value(eligible_by)
            .map_err(|err| StoreError::Corrupt(format!("call_votes.eligible_by: {err}")))?,
        channel: Channel::parse(&row.text(8)?)?,
        voted_at: row.text(9)?,
    })
}

/// A vote with its batch's id.
pub(super) fn batch_vote_from_row(row: &impl Columns) -> Result<(i64, CallVote)> {
    Ok((row.int(10)?, vote_from_row(row)?))
}

/// The statement that records a vote, and its parameters (PostgreSQL's `$1` spelling).
pub(super) const VOTE_INSERT: &str =
    "INSERT INTO call_votes (batch_id, task_id, call_id, user_id, email, verdict, reason,
                             run_args, args_sha256, eligible_by, channel, voted_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)";

pub(super) const CALL_SELECT: &str =
    "SELECT task_id, call_id, position, name, source, args, args_sha256, batch_id, status,
            verdict, reason, run_args, run_args_sha256, result, started_at, finished_at, why
     FROM calls";

pub(super) fn call_from_row(row: &impl Columns) -> Result<CallRow> {
    Ok(CallRow {
        task_id: row.text(0)?,
        call_id: row.text(1)?,
        position: row.int(2)?,
        name: row.text(3)?,
        source: row.text(4)?,
        args: optional_json(row, 5)?.unwrap_or(Value::Null),
        args_sha256: row.text(6)?,
        batch_id: row.optional_int(7)?,
        status: CallStatus::parse(&row.text(8)?)?,
        verdict: row
            .optional_text(9)?
            .as_deref()
            .map(Verdict::parse)
            .transpose()?,
        reason: row.optional_text(10)?,
        run_args: optional_json(row, 11)?,
        run_args_sha256: row.optional_text(12)?,
        result: optional_json(row, 13)?,
        started_at: row.optional_text(14)?,
        finished_at: row.optional_text(15)?,
        why: optional_json(row, 16)?,
    })
}

/// Every call decided from `$1` (RFC 3339) on, with its task's owner, agent and groups,
/// oldest first: [`CALL_SELECT`]'s columns, then those of [`ReplayCall`].
pub(super) const REPLAY_SELECT: &str =
    "SELECT c.task_id, c.call_id, c.position, c.name, c.source, c.args, c.args_sha256,
            c.batch_id, c.status, c.verdict, c.reason, c.run_args, c.run_args_sha256, c.result,
            c.started_at, c.finished_at, c.why,
            t.user_id, t.agent, t.requester_groups,
            CAST(CASE WHEN EXISTS (SELECT 1 FROM subagent_tasks s
                                   WHERE s.child_task_id = t.id AND s.remote = 0)
                      THEN 1 ELSE 0 END AS BIGINT),
            COALESCE(b.created_at, c.started_at, t.created_at) AS at
     FROM calls c
     JOIN tasks t ON t.id = c.task_id
     LEFT JOIN batches b ON b.id = c.batch_id
     WHERE COALESCE(b.created_at, c.started_at, t.created_at) >= $1
     ORDER BY at, c.task_id, c.position";

pub(super) fn replay_from_row(row: &impl Columns) -> Result<ReplayCall> {
    Ok(ReplayCall {
        call: call_from_row(row)?,
        user_id: row.text(17)?,
        agent: row.text(18)?,
        requester_groups: groups_from_text(&row.text(19)?)?,
        subagent: row.int(20)? == 1,
        at: row.text(21)?,
    })
}

pub(super) const DECISION_SELECT: &str =
    "SELECT id, batch_id, task_id, user_id, channel, decision, summary, decided_at, decider_auth
     FROM decisions";

pub(super) fn decision_from_row(row: &impl Columns) -> Result<DecisionRow> {
    Ok(DecisionRow {
        id: row.int(0)?,
        batch_id: row.int(1)?,
        task_id: row.text(2)?,
        user_id: row.text(3)?,
        channel: Channel::parse(&row.text(4)?)?,
        decision: optional_json(row, 5)?.unwrap_or(Value::Null),
        summary: row.text(6)?,
        decided_at: row.text(7)?,
        decider_auth: row.optional_text(8)?,
    })
}

pub(super) const POLICY_SELECT: &str =
    "SELECT id, user_id, agent, tool, scope, context_id, args, created_by, created_at, revoked_at,
            expires_at, uses_left
     FROM policies";

pub(super) fn grant_from_row(row: &impl Columns) -> Result<GrantRow> {
    Ok(GrantRow {
        id: row.text(0)?,
        user_id: row.text(1)?,
        agent: row.text(2)?,
        tool: row.text(3)?,
        scope: GrantScope::parse(&row.text(4)?)?,
        context_id: row.optional_text(5)?,
        args: optional_json(row, 6)?,
        created_by: row.text(7)?,
        created_at: row.text(8)?,
        revoked_at: row.optional_text(9)?,
        expires_at: row.optional_text(10)?,
        uses_left: row.optional_int(11)?,
    })
}

/// A pending deadline, as `SELECT task_id, id, expires_at FROM batches` reads it.
pub(super) fn deadline_from_row(row: &impl Columns) -> Result<Deadline> {
    Ok(Deadline {
        task_id: row.text(0)?,
        batch_id: row.int(1)?,
        expires_at: row.text(2)?,
    })
}

pub(super) const SUBAGENT_SELECT: &str =
    "SELECT parent_task_id, parent_call_id, agent, child_task_id, child_context_id, remote, depth,
            created_at FROM subagent_tasks";

pub(super) fn subagent_from_row(row: &impl Columns) -> Result<super::SubagentLink> {
    Ok(super::SubagentLink {
        parent_task_id: row.text(0)?,
        parent_call_id: row.text(1)?,
        agent: row.text(2)?,
        child_task_id: row.text(3)?,
        child_context_id: row.text(4)?,
        remote: row.int(5)? != 0,
        depth: row.int(6)?,
        created_at: row.text(7)?,
    })
}
