//! A waiting batch's deadline ladder as its calls' settings make it (crates/server/README.md,
//! Approvers): when it is reminded, when and to whom it escalates, how far its deadline may
//! move, and what the inbox shows of the steps taken. The sweep that takes the steps is the
//! runtime's (`runtime::ladder`).

use std::time::Duration;

use signoff_protocol::hitl::ActionRequest;
use signoff_protocol::rest::{LadderMarks, PendingApproval};

use crate::agent::config::ApproverEntry;
use crate::store::{BatchStepKind, BatchStepRow};

use super::Approvers;

/// A batch's ladder: the earliest reminder and escalation among its calls, whom escalating
/// makes eligible (every call's `escalate_to` that escalates), and how far its deadline may
/// move (the smallest `max_extend`; none when some call sets none).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BatchLadder {
    pub remind_after: Option<Duration>,
    pub escalate_after: Option<Duration>,
    pub escalate_to: Vec<String>,
    pub max_extend: Option<(Duration, String)>,
}

/// The smaller of two durations, or the one that is set.
fn earliest(earlier: Option<Duration>, later: Option<Duration>) -> Option<Duration> {
    match (earlier, later) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// What the inbox and the approvals stream show of a batch's ladder: when it was reminded,
/// whom it escalated to, and (from `extend`: its `max_extend` as written, and its first
/// deadline) how far its deadline may move; `None` while there is none of these.
fn ladder_marks(
    steps: &[BatchStepRow],
    batch_id: i64,
    extend: Option<(String, String)>,
) -> Option<Box<LadderMarks>> {
    let mut reminded_at = None;
    let mut escalated_to = Vec::new();
    for row in steps.iter().filter(|row| row.batch_id == batch_id) {
        match row.step.kind {
            BatchStepKind::Remind => reminded_at = Some(row.created_at.clone()),
            BatchStepKind::Escalate => escalated_to.extend(row.step.to.iter().cloned()),
            BatchStepKind::Handover | BatchStepKind::Extend => {}
        }
    }
    let (max_extend, first_expires_at) = extend.unzip();
    (reminded_at.is_some() || !escalated_to.is_empty() || max_extend.is_some()).then(|| {
        Box::new(LadderMarks {
            reminded_at,
            escalated_to,
            max_extend,
            first_expires_at,
        })
    })
}

/// The deadline the batch `batch_id` had before any extension: the first extension's
/// previous one, else `current`.
pub fn first_deadline(steps: &[BatchStepRow], batch_id: i64, current: &str) -> String {
    steps
        .iter()
        .find(|step| step.batch_id == batch_id && step.step.kind == BatchStepKind::Extend)
        .and_then(|step| step.from_expires_at.clone())
        .unwrap_or_else(|| current.to_owned())
}

impl Approvers {
    /// The ladder of a batch of `agent` (`namespace/name`) with `requests`.
    pub fn batch_ladder(&self, agent: &str, requests: &[ActionRequest]) -> BatchLadder {
        let mut ladder = BatchLadder::default();
        let mut extend: Option<Option<(Duration, String)>> = None;
        for request in requests {
            let call = self.call_approvers_of(agent, request).ladder;
            ladder.remind_after = earliest(ladder.remind_after, call.remind_after);
            if call.escalate_after.is_some() {
                ladder.escalate_after = earliest(ladder.escalate_after, call.escalate_after);
                for entry in call.escalate_to.iter().map(ApproverEntry::label) {
                    if !ladder.escalate_to.contains(&entry) {
                        ladder.escalate_to.push(entry);
                    }
                }
            }
            extend = Some(match (extend, call.max_extend) {
                (None, this) => this,
                (Some(Some(so_far)), Some(this)) => {
                    Some(if this.0 < so_far.0 { this } else { so_far })
                }
                (Some(_), _) => None,
            });
        }
        ladder.max_extend = extend.flatten();
        ladder
    }

    /// The ladder of the pending batch `approval` (the stored batch `batch_id`, with `steps`):
    /// its marks, and its `max_extend` with its first deadline when it may be extended.
    pub fn batch_marks(
        &self,
        approval: &PendingApproval,
        steps: &[BatchStepRow],
        batch_id: i64,
    ) -> Option<Box<LadderMarks>> {
        let extend = approval.expires_at.as_deref().and_then(|current| {
            let requests: Vec<ActionRequest> = approval
                .calls
                .iter()
                .filter_map(ActionRequest::from_value)
                .collect();
            let (_, max_text) = self.batch_ladder(&approval.agent, &requests).max_extend?;
            Some((max_text, first_deadline(steps, batch_id, current)))
        });
        ladder_marks(steps, batch_id, extend)
    }
}
