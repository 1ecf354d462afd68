//! Hand-overs and the deadline ladder's steps on pending batches (crates/server/README.md,
//! Approvers): who handed a batch to whom, when it was reminded, escalated or given a later
//! deadline. Each step is written only while its batch is pending; a reminder and an escalation
//! at most once per batch (a unique index), so the replica whose watch fires first takes it and
//! the others write nothing. Both backends share the statements here (written with `$1`; SQLite
//! spells them through `write::sqlite_dialect`).

use super::columns::Columns;
use super::rows::json_value;
use super::{PendingBatchRow, Result, StoreError};

/// What a step did to its batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BatchStepKind {
    /// A person handed the batch to a person or group, who may then read it, and decide it
    /// as far as the call's approvers allow.
    Handover,
    /// The ladder's `remind_after` passed.
    Remind,
    /// The ladder's `escalate_after` passed: its `escalate_to` may then decide it.
    Escalate,
    /// A person gave the batch a later deadline.
    Extend,
}

impl BatchStepKind {
    pub fn as_str(self) -> &'static str {
        match self {
            BatchStepKind::Handover => "handover",
            BatchStepKind::Remind => "remind",
            BatchStepKind::Escalate => "escalate",
            BatchStepKind::Extend => "extend",
        }
    }

    fn parse(text: &str) -> Result<Self> {
        match text {
            "handover" => Ok(BatchStepKind::Handover),
            "remind" => Ok(BatchStepKind::Remind),
            "escalate" => Ok(BatchStepKind::Escalate),
            "extend" => Ok(BatchStepKind::Extend),
            other => Err(StoreError::Corrupt(format!(
                "unknown batch step kind {other:?}"
            ))),
        }
    }
}

/// One step to write.
#[derive(Debug, Clone, PartialEq)]
pub struct BatchStep {
    pub kind: BatchStepKind,
    /// Who took it; `None`: the deadline ladder.
    pub by: Option<String>,
    /// `group:NAME` and `user:ID` entries it made eligible (hand-over, escalation).
    pub to: Vec<String>,
    pub note: Option<String>,
    /// An extension: the batch's new deadline.
    pub expires_at: Option<String>,
}

impl BatchStep {
    /// A step the deadline ladder takes: a reminder (nobody made eligible) or an escalation.
    pub fn ladder(kind: BatchStepKind, to: Vec<String>) -> BatchStep {
        BatchStep {
            kind,
            by: None,
            to,
            note: None,
            expires_at: None,
        }
    }
}

/// A stored step of batch `batch_id`, taken at `created_at`.
#[derive(Debug, Clone, PartialEq)]
pub struct BatchStepRow {
    pub batch_id: i64,
    pub step: BatchStep,
    pub created_at: String,
    /// An extension: the deadline it moved.
    pub from_expires_at: Option<String>,
}

/// Who a step the deadline ladder took is by, in its approval event.
pub(super) const LADDER: &str = "signoff";

/// Writes a step if batch `$1` of task `$2` is pending (and, for a reminder or an escalation,
/// has none yet): one row changed, or none. `$9`: an extension's earlier deadline.
pub(super) const STEP_INSERT: &str =
    "INSERT INTO batch_steps (batch_id, task_id, kind, by_user, to_entries, note, expires_at,
                              created_at, from_expires_at)
     SELECT id, task_id, $3, $4, $5, $6, $7, $8, $9 FROM batches
     WHERE id = $1 AND task_id = $2 AND state = 'pending'
     ON CONFLICT DO NOTHING";

/// Moves the deadline of pending batch `$1` of task `$2` from `$4` to `$3`, unless another
/// extension (or the expiry) came first.
pub(super) const DEADLINE_UPDATE: &str = "UPDATE batches SET expires_at = $3
     WHERE id = $1 AND task_id = $2 AND state = 'pending' AND expires_at = $4";

pub(super) const STEP_SELECT: &str = "SELECT batch_id, kind, by_user, to_entries, note, \
     expires_at, created_at, from_expires_at FROM batch_steps";

/// The pending batches that were handed over or escalated, with what the approvals list shows
/// of their tasks and each task's owner (as `Store::pending_batches_of_agents`).
pub(super) const HANDED_OVER_SELECT: &str =
    "SELECT b.id, b.task_id, b.state, b.requests, b.created_at, b.decided_at,
            b.expires_at, t.context_id, t.agent, s.title, t.user_id
     FROM batches b JOIN tasks t ON t.id = b.task_id
     LEFT JOIN sessions s ON s.id = t.context_id
     WHERE b.state = 'pending'
       AND EXISTS (SELECT 1 FROM batch_steps st
                   WHERE st.batch_id = b.id AND st.kind IN ('handover', 'escalate'))
       AND NOT EXISTS (SELECT 1 FROM subagent_tasks link
                       WHERE link.child_task_id = b.task_id AND link.remote = 0)
     ORDER BY b.id";

pub(super) fn step_from_row(row: &impl Columns) -> Result<BatchStepRow> {
    let to: Vec<String> = serde_json::from_value(json_value(&row.text(3)?)?).map_err(|err| {
        StoreError::Corrupt(format!("batch step entries that are not a list: {err}"))
    })?;
    Ok(BatchStepRow {
        batch_id: row.int(0)?,
        step: BatchStep {
            kind: BatchStepKind::parse(&row.text(1)?)?,
            by: row.optional_text(2)?,
            to,
            note: row.optional_text(4)?,
            expires_at: row.optional_text(5)?,
        },
        created_at: row.text(6)?,
        from_expires_at: row.optional_text(7)?,
    })
}

/// The entries the steps of one batch named, apart by who named them: the agents file's
/// escalations (an operator's word, so they may decide the batch) and people's hand-overs
/// (who may decide it only as the call's approvers allow: crates/server/README.md, Approvers).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Handed {
    /// `escalate_to` entries of the ladder's escalations, each once.
    pub escalated: Vec<String>,
    /// `to` entries of hand-overs, each once.
    pub handed_over: Vec<String>,
}

impl Handed {
    /// Whether no step named anyone.
    pub fn is_empty(&self) -> bool {
        self.escalated.is_empty() && self.handed_over.is_empty()
    }
}

/// The entries the steps of batch `batch_id` among `steps` named, each once.
pub fn handed_to(steps: &[BatchStepRow], batch_id: i64) -> Handed {
    let mut handed = Handed::default();
    for row in steps.iter().filter(|row| row.batch_id == batch_id) {
        let list = match row.step.kind {
            BatchStepKind::Escalate => &mut handed.escalated,
            BatchStepKind::Handover => &mut handed.handed_over,
            BatchStepKind::Remind | BatchStepKind::Extend => continue,
        };
        for entry in &row.step.to {
            if !list.contains(entry) {
                list.push(entry.clone());
            }
        }
    }
    handed
}

/// A pending batch row of [`HANDED_OVER_SELECT`] (columns 7 on).
pub(super) fn handed_over_from_row(
    row: &impl Columns,
    batch: super::BatchRow,
) -> Result<(PendingBatchRow, String)> {
    Ok((
        PendingBatchRow {
            batch,
            context_id: row.text(7)?,
            agent: row.text(8)?,
            title: row.optional_text(9)?.unwrap_or_default(),
        },
        row.text(10)?,
    ))
}
