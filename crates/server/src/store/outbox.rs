//! The notifications outbox: what reaches people outside the browser (a webhook, Slack) about a
//! batch, one row per notification to one channel. A row is written in the SAME commit as the
//! event it reports ([`super::Commit::notifications`] for a pause,
//! [`super::DecisionWrite::notifications`] for a decision, a cancel or an expiry), so there is
//! never an event without its notifications nor a notification of an event that did not commit.
//!
//! The sender (`agent::notify`) claims due rows with a lease (one replica sends a given row at a
//! time; a dead replica's lease lapses and another takes the row), deletes a row once delivered,
//! and after a failed attempt either sets its next attempt or, past its last retry, marks it
//! `failed`, where it stays for an operator ([`super::Store::failed_notifications`]). The row's
//! id is the delivery id (a webhook's `webhook-id`): the same on every retry.

use serde_json::Value;

use super::rows::json_text;
use super::write::{Param, Transaction};
use super::{Result, StoreError};

/// What a notification reports. A new kind is a variant here (its name in
/// [`NotificationKind::as_str`] and [`NotificationKind::parse`]); the column is text, so no
/// migration is needed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NotificationKind {
    /// A batch waits for a decision.
    Pending,
    /// A person (or a policy, or a rule) decided the batch.
    Decided,
    /// The task was canceled while its batch waited.
    Canceled,
    /// The batch expired unanswered.
    Expired,
    /// The batch still waits after its `remind_after` (the deadline ladder).
    Reminded,
    /// The batch escalated after its `escalate_after`: its `escalate_to` may decide it too.
    Escalated,
    /// An approver extended the batch's deadline (`POST /api/approvals/{task}/extend`).
    Extended,
    /// An approval was counted and the batch still waits for more (quorum): Slack app copies
    /// say who approved so far.
    Counted,
    /// An A2A push notification: the task, as of the commit that moved it into a state its
    /// push receivers hear of, to one of its push configs ([`PUSH_CHANNEL`]).
    Push,
}

impl NotificationKind {
    /// The kinds an operator's channel may take (a push goes to the task's own receivers only).
    pub const ALL: [NotificationKind; 8] = [
        NotificationKind::Pending,
        NotificationKind::Decided,
        NotificationKind::Canceled,
        NotificationKind::Expired,
        NotificationKind::Reminded,
        NotificationKind::Escalated,
        NotificationKind::Extended,
        NotificationKind::Counted,
    ];

    /// The event type as receivers read it (a webhook body's `type`).
    pub fn as_str(self) -> &'static str {
        match self {
            NotificationKind::Pending => "batch.pending",
            NotificationKind::Decided => "batch.decided",
            NotificationKind::Canceled => "batch.canceled",
            NotificationKind::Expired => "batch.expired",
            NotificationKind::Reminded => "batch.reminded",
            NotificationKind::Escalated => "batch.escalated",
            NotificationKind::Extended => "batch.extended",
            NotificationKind::Counted => "batch.counted",
            NotificationKind::Push => "task.push",
        }
    }

    pub fn parse(text: &str) -> Result<NotificationKind> {
        NotificationKind::ALL
            .into_iter()
            .chain([NotificationKind::Push])
            .find(|kind| kind.as_str() == text)
            .ok_or_else(|| StoreError::Corrupt(format!("unknown notification kind {text:?}")))
    }
}

/// A notification to write with an event: to `channel`, with the event's `payload` (the batch's
/// id is added by the write, which may be the one that opens the batch).
#[derive(Debug, Clone, PartialEq)]
pub struct NewNotification {
    /// The delivery id, unique (`msg_` and a UUID): the same on every retry.
    pub id: String,
    pub channel: String,
    pub kind: NotificationKind,
    pub payload: Value,
}

impl NewNotification {
    /// The push of a task as of its event `seq` to its push config `config_id`.
    pub fn push(config_id: &str, seq: i64) -> NewNotification {
        NewNotification {
            id: format!("push_{}", uuid::Uuid::new_v4().simple()),
            channel: PUSH_CHANNEL.to_owned(),
            kind: NotificationKind::Push,
            payload: serde_json::json!({"config_id": config_id, "seq": seq}),
        }
    }
}

/// The channel of A2A push notifications in the outbox, in `/metrics`, the logs and the failed
/// list. It is no operator's channel: none may take its name.
pub const PUSH_CHANNEL: &str = "a2a-push";

/// A stored notification: claimed to be sent, or failed for good.
#[derive(Debug, Clone, PartialEq)]
pub struct NotificationRow {
    pub id: String,
    pub channel: String,
    pub kind: NotificationKind,
    pub task_id: String,
    pub batch_id: Option<i64>,
    pub payload: Value,
    /// Attempts made before this one (0 on the first claim).
    pub attempts: i64,
    /// RFC 3339, the event's commit.
    pub created_at: String,
    pub last_error: Option<String>,
    pub failed_at: Option<String>,
}

/// The outbox's size for `/metrics`: rows waiting to be sent, and when the oldest was written.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct OutboxDepth {
    pub queued: i64,
    pub oldest_created_at: Option<String>,
}

/// What became of an attempt that did not deliver.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AttemptFailed {
    /// Try again at this time (Unix milliseconds).
    RetryAt(i64),
    /// No retry is left: the row is kept as `failed`.
    GiveUp,
}

pub(super) const PENDING: &str = "pending";
pub(super) const FAILED: &str = "failed";

/// The columns a [`NotificationRow`] is read from, in its order.
pub(super) const NOTIFICATION_COLUMNS: &str = "id, channel, kind, task_id, batch_id, payload, \
     attempts, created_at, last_error, failed_at";

/// A row read back through the backends' shared column reader.
pub(super) fn notification_from_row(row: &impl super::columns::Columns) -> Result<NotificationRow> {
    Ok(NotificationRow {
        id: row.text(0)?,
        channel: row.text(1)?,
        kind: NotificationKind::parse(&row.text(2)?)?,
        task_id: row.text(3)?,
        batch_id: row.optional_int(4)?,
        payload: super::rows::json_value(&row.text(5)?)?,
        attempts: row.int(6)?,
        created_at: row.text(7)?,
        last_error: row.optional_text(8)?,
        failed_at: row.optional_text(9)?,
    })
}

/// Unix milliseconds now.
pub fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

/// Writes `notifications` about `task_id`'s batch `batch_id` inside the caller's transaction,
/// each due at once; no channel's when `task_id` is a local subagent's task (its calls wait, and
/// are notified, in its parent's batch). That check is part of the insert, so a pause or a decision
/// makes no read of its own for it.
pub(super) async fn insert_notifications(
    tx: &mut impl Transaction,
    task_id: &str,
    batch_id: Option<i64>,
    notifications: &[NewNotification],
    now: &str,
) -> Result<()> {
    use Param::*;
    let due = now_ms();
    for note in notifications {
        let payload = json_text(&note.payload)?;
        // A push goes to receivers the task's owner set on that very task, a subagent's too.
        let sql = match note.kind {
            NotificationKind::Push => {
                "INSERT INTO notifications (id, channel, kind, task_id, batch_id, payload, state,
                                            next_attempt_ms, created_at)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)"
            }
            NotificationKind::Pending
            | NotificationKind::Decided
            | NotificationKind::Canceled
            | NotificationKind::Expired
            | NotificationKind::Reminded
            | NotificationKind::Escalated
            | NotificationKind::Extended
            | NotificationKind::Counted => {
                "INSERT INTO notifications (id, channel, kind, task_id, batch_id, payload, state,
                                            next_attempt_ms, created_at)
                 SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9
                 WHERE NOT EXISTS (SELECT 1 FROM subagent_tasks
                                   WHERE child_task_id = $4 AND remote = 0)"
            }
        };
        tx.execute(
            sql,
            &[
                Text(&note.id),
                Text(&note.channel),
                Text(note.kind.as_str()),
                Text(task_id),
                OptionalInt(batch_id),
                Text(&payload),
                Text(PENDING),
                Int(due),
                Text(now),
            ],
        )
        .await?;
    }
    Ok(())
}

/// Writes, inside the caller's transaction, one push notification per push config `task_id`
/// has now: the task as of `seq`, the commit's last event. Read in the transaction, so a config
/// set before the commit is never missed.
pub(super) async fn insert_pushes(
    tx: &mut impl Transaction,
    task_id: &str,
    seq: i64,
    now: &str,
) -> Result<()> {
    let configs = tx
        .texts(
            "SELECT id FROM push_configs WHERE task_id = $1 ORDER BY created_at, id",
            &[Param::Text(task_id)],
        )
        .await?;
    if configs.is_empty() {
        return Ok(());
    }
    let pushes: Vec<NewNotification> = configs
        .iter()
        .map(|config_id| NewNotification::push(config_id, seq))
        .collect();
    insert_notifications(tx, task_id, None, &pushes, now).await
}
