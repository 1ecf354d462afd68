//! The approvals stream's rows (docs/rest.md, Approvals stream): one each time a batch starts
//! waiting or stops waiting, numbered by the store in commit order, so a reader that resumes
//! after a number misses nothing and sees nothing twice. Both backends select them with
//! [`APPROVAL_EVENT_SELECT`]; the wake signal tells a user's open streams to read again.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use serde_json::Value;
use sha2::{Digest, Sha256};
use tokio::sync::watch;

use super::columns::Columns;
use super::rows::json_value;
use super::{Result, StoreError};

/// Whether the batch started or stopped waiting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApprovalEventKind {
    Pending,
    Decided,
    /// Approvals short of a quorum were counted: the batch still waits, further along.
    Progress,
}

impl ApprovalEventKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ApprovalEventKind::Pending => "pending",
            ApprovalEventKind::Decided => "decided",
            ApprovalEventKind::Progress => "progress",
        }
    }

    fn parse(text: &str) -> Result<Self> {
        match text {
            "pending" => Ok(ApprovalEventKind::Pending),
            "decided" => Ok(ApprovalEventKind::Decided),
            "progress" => Ok(ApprovalEventKind::Progress),
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
    /// A `decided` event: who decided (none for a deleted session); a `progress` event: who
    /// voted.
    pub decided_by: Option<String>,
    pub created_at: String,
    /// The event's batch, while it is stored (a deleted session takes it along).
    pub waiting: Option<WaitingBatch>,
    /// Who started the batch's chat: whose stream the event is on, and, for a batch routed to
    /// approvers, the requester.
    pub owner: String,
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

/// Whether the event's batch was handed over or escalated: then it is on the streams of others
/// than its requester, whatever its agent's approvers (a condition of the backends' WHERE).
pub(super) const HANDED_OVER: &str = "EXISTS (SELECT 1 FROM batch_steps st
     WHERE st.batch_id = e.batch_id AND st.kind IN ('handover', 'escalate'))";

/// The events with their batches and chats; a backend adds its WHERE and ORDER BY.
pub(super) const APPROVAL_EVENT_SELECT: &str =
    "SELECT e.seq, e.task_id, e.context_id, e.batch_id, e.kind, e.outcome, e.decided_by,
            e.created_at, b.requests, b.created_at, b.expires_at, t.agent, s.title, e.user_id
     FROM approval_events e
     LEFT JOIN batches b ON b.id = e.batch_id
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
        owner: row.text(13)?,
    })
}

/// The SHA-256 of a user id in lowercase hex: how a change notification names the user whose
/// approval event another replica wrote (a user id can be longer than a notification's payload
/// may be). PostgreSQL computes the same with `encode(sha256(convert_to(user_id, 'UTF8')),
/// 'hex')`.
pub(super) fn user_digest(user_id: &str) -> String {
    Sha256::digest(user_id.as_bytes())
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

/// The wake signals of open approvals streams, one per user (keyed by [`user_digest`]): an
/// approval event wakes only the streams of its own user, so a stream reads the store for its
/// user's events, never for everyone's. Each open stream holds one receiver, so a signal's
/// receivers are the user's open streams.
///
/// A batch routed to approvers is on other people's streams too, and who they are depends on
/// their groups, which the store does not know: every approval event also changes the one
/// `routed` signal, which only the streams of people some agent routes batches to follow.
#[derive(Debug)]
pub(super) struct ApprovalWakes {
    users: Mutex<HashMap<String, watch::Sender<u64>>>,
    routed: watch::Sender<u64>,
}

impl Default for ApprovalWakes {
    fn default() -> Self {
        ApprovalWakes {
            users: Mutex::default(),
            routed: watch::Sender::new(0),
        }
    }
}

impl ApprovalWakes {
    /// A wake signal for one more stream of `user_id`; `None` when the user already has
    /// `at_most` open.
    pub(super) fn subscribe(&self, user_id: &str, at_most: usize) -> Option<watch::Receiver<u64>> {
        // Only inserts and sends happen under the lock: a panic cannot leave the map half-changed.
        let mut users = self.users.lock().unwrap_or_else(PoisonError::into_inner);
        // The signals of users whose streams have all closed.
        users.retain(|_, sender| sender.receiver_count() > 0);
        let sender = users
            .entry(user_digest(user_id))
            .or_insert_with(|| watch::Sender::new(0));
        (sender.receiver_count() < at_most).then(|| sender.subscribe())
    }

    /// Wakes the open streams of `user_id`.
    pub(super) fn wake(&self, user_id: &str) {
        self.wake_digest(&user_digest(user_id));
    }

    /// The signal that changes after every approval event, whoever's it is.
    pub(super) fn routed(&self) -> watch::Receiver<u64> {
        self.routed.subscribe()
    }

    /// Wakes the open streams of the user whose [`user_digest`] is `digest`, and those that
    /// follow routed batches.
    pub(super) fn wake_digest(&self, digest: &str) {
        self.routed
            .send_modify(|count| *count = count.wrapping_add(1));
        let users = self.users.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(sender) = users.get(digest) {
            sender.send_modify(|count| *count = count.wrapping_add(1));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wake_reaches_its_own_users_streams_only_and_streams_are_capped_per_user() {
        let wakes = ApprovalWakes::default();
        let alice = wakes.subscribe("alice", 2).unwrap();
        let second = wakes.subscribe("alice", 2).unwrap();
        assert!(wakes.subscribe("alice", 2).is_none(), "a third stream");
        let mut bob = wakes.subscribe("bob", 2).unwrap();
        wakes.wake("bob");
        assert!(!alice.has_changed().unwrap());
        assert!(bob.has_changed().unwrap());
        bob.borrow_and_update();
        wakes.wake_digest(&user_digest("alice"));
        assert!(alice.has_changed().unwrap());
        assert!(!bob.has_changed().unwrap());
        let routed = wakes.routed();
        wakes.wake("carol");
        assert!(
            routed.has_changed().unwrap(),
            "any event wakes the routed streams"
        );
        // A closed stream frees its place.
        drop(second);
        assert!(wakes.subscribe("alice", 2).is_some());
    }
}
