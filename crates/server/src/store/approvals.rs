//! The approvals stream's rows (docs/rest.md, Approvals stream): one each time a batch starts
//! waiting or stops waiting, numbered by the store in commit order, so a reader that resumes
//! after a number misses nothing and sees nothing twice. Both backends select them with
//! [`APPROVAL_EVENT_SELECT`]; the wake signal tells open streams to read again.

use serde_json::Value;

use super::columns::Columns;
use super::rows::json_value;
use super::{Result, StoreError};

/// Whether the batch started or stopped waiting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApprovalEventKind {
    Pending,
    Decided,
}

impl ApprovalEventKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ApprovalEventKind::Pending => "pending",
            ApprovalEventKind::Decided => "decided",
        }
    }

    fn parse(text: &str) -> Result<Self> {
        match text {
            "pending" => Ok(ApprovalEventKind::Pending),
            "decided" => Ok(ApprovalEventKind::Decided),
            other => Err(StoreError::Corrupt(format!(
                "unknown approval event kind {other:?}"
            ))),
        }
    }
}

/// The outcome of a batch whose session was deleted while it waited.
pub const OUTCOME_DELETED: &str = "deleted";

/// One event of a user's approvals stream.
#[derive(Debug, Clone, PartialEq)]
pub struct ApprovalEventRow {
    /// The event's id on the stream.
    pub seq: i64,
    pub task_id: String,
    pub context_id: String,
    pub batch_id: i64,
    pub kind: ApprovalEventKind,
    /// A `decided` event: the decision's channel (`a2a`, `text`, `rest`, `cancel`, `expiry`),
    /// or [`OUTCOME_DELETED`].
    pub outcome: Option<String>,
    /// A `decided` event: who decided (none for a deleted session).
    pub decided_by: Option<String>,
    pub created_at: String,
    /// A `pending` event: its batch, while it is stored (a deleted session takes it along).
    pub waiting: Option<WaitingBatch>,
}

/// What the inbox shows of a pending event's batch.
#[derive(Debug, Clone, PartialEq)]
pub struct WaitingBatch {
    pub agent: String,
    /// The chat's title.
    pub title: String,
    pub requests: Value,
    pub since: String,
    pub expires_at: Option<String>,
}

/// The events with their batches and chats; a backend adds its WHERE and ORDER BY.
pub(super) const APPROVAL_EVENT_SELECT: &str =
    "SELECT e.seq, e.task_id, e.context_id, e.batch_id, e.kind, e.outcome, e.decided_by,
            e.created_at, b.requests, b.created_at, b.expires_at, t.agent, s.title
     FROM approval_events e
     LEFT JOIN batches b ON b.id = e.batch_id AND e.kind = 'pending'
     LEFT JOIN tasks t ON t.id = e.task_id
     LEFT JOIN sessions s ON s.id = e.context_id";

pub(super) fn approval_event_from_row(row: &impl Columns) -> Result<ApprovalEventRow> {
    let waiting = match (
        row.optional_text(8)?,
        row.optional_text(9)?,
        row.optional_text(11)?,
    ) {
        (Some(requests), Some(since), Some(agent)) => Some(WaitingBatch {
            agent,
            title: row.optional_text(12)?.unwrap_or_default(),
            requests: json_value(&requests)?,
            since,
            expires_at: row.optional_text(10)?,
        }),
        _ => None,
    };
    Ok(ApprovalEventRow {
        seq: row.int(0)?,
        task_id: row.text(1)?,
        context_id: row.text(2)?,
        batch_id: row.int(3)?,
        kind: ApprovalEventKind::parse(&row.text(4)?)?,
        outcome: row.optional_text(5)?,
        decided_by: row.optional_text(6)?,
        created_at: row.text(7)?,
        waiting,
    })
}
