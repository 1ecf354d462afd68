//! Hand-overs of a pending batch (docs/rest.md, Hand-over): the requester or an eligible
//! approver names a person or group who may then read the batch, and decide it only as far as
//! its approvers allow (`CallApprovers::handover_widens`: a hand-over never widens who may
//! approve unless the agents file says `handover_may_widen`). The entry is stored as
//! a step of the batch (`store::steps`), read inside every decision's write, so each replica
//! counts it; the step is the audit (who, to whom, when, why).

use serde_json::Value;

use crate::agent::config::ApproverEntry;
use crate::agent::notify::payload::{self, About};
use crate::store::{
    handed_to, BatchRow, BatchStep, BatchStepKind, NewNotification, NotificationKind, TaskRow,
};

use super::log::Committed;
use super::subagent::batch_requests;
use super::{AgentError, Result, Runtime};
use crate::agent::approvals::Decider;

/// The most a hand-over's note may say.
const MAX_NOTE: usize = 2000;

/// The longest `to` a hand-over may name: a group's name or a person's subject or email.
const MAX_TARGET: usize = 256;

/// The most hand-overs one batch takes: each is a stored step, a notification and an event
/// on the approvals stream, so a batch passed around without end would flood all three.
pub(super) const MAX_HANDOVERS: usize = 20;

/// `to` read strictly: `user:ID` or `group:NAME` as the agents file spells entries, with no
/// white space or control character anywhere (a CR/LF would reach the notifications' headers
/// and lines) and at most [`MAX_TARGET`] bytes.
fn handover_target(to: &str) -> Result<ApproverEntry> {
    let refuse = |why: String| AgentError::InvalidParams(format!("to: {why}"));
    if to.len() > MAX_TARGET {
        return Err(refuse(format!("longer than {MAX_TARGET} bytes")));
    }
    if let Some(bad) = to.chars().find(|c| c.is_control() || c.is_whitespace()) {
        return Err(refuse(format!(
            "{to:?} holds {bad:?}; write group:NAME or user:ID without spaces or control \
             characters"
        )));
    }
    ApproverEntry::parse(to).map_err(refuse)
}

/// What a hand-over was, for whoever announces it. Its notification (`batch.escalated`, with
/// `handed_over_by`) is written with its step; it reaches people through the inbox
/// (`GET /api/approvals`) and the audit too.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LadderEvent {
    /// `by` handed the batch of `task_id` to `to`.
    HandedOver {
        task_id: String,
        by: String,
        to: String,
    },
}

impl Runtime {
    /// Hands the pending batch of `task_id` to `to` (`user:ID` or `group:NAME`): the requester
    /// or an eligible approver may; anyone else is refused.
    pub(super) async fn hand_over(
        &self,
        who: &Decider,
        task_id: &str,
        to: &str,
        note: Option<String>,
    ) -> Result<LadderEvent> {
        let entry = handover_target(to)?;
        if note.as_ref().is_some_and(|note| note.len() > MAX_NOTE) {
            return Err(AgentError::InvalidParams(format!(
                "note: longer than {MAX_NOTE} bytes"
            )));
        }
        let row = self
            .store
            .task(task_id)
            .await?
            .ok_or_else(|| AgentError::TaskNotFound(task_id.to_owned()))?;
        let batch = self.store.pending_batch(task_id).await?;
        let steps = self.store.batch_steps(task_id).await?;
        let may = who.subject == row.user_id
            || batch.as_ref().is_some_and(|batch| {
                self.approvals.approvers().eligible_for_batch(
                    &row,
                    &batch_requests(batch),
                    &handed_to(&steps, batch.id),
                    who,
                )
            });
        if !may {
            return Err(AgentError::Forbidden(task_id.to_owned()));
        }
        let Some(batch) = batch else {
            return Err(self.no_batch(task_id).await);
        };
        let handovers = steps
            .iter()
            .filter(|row| row.batch_id == batch.id && row.step.kind == BatchStepKind::Handover)
            .count();
        if handovers >= MAX_HANDOVERS {
            return Err(AgentError::InvalidParams(format!(
                "the batch of task {task_id} was handed over {handovers} times, the most one \
                 batch takes ({MAX_HANDOVERS})"
            )));
        }
        let notifications = self
            .handover_notifications(&row, &batch, &who.subject, &entry.label(), note.as_deref())
            .await;
        let notifies = !notifications.is_empty();
        let step = BatchStep {
            kind: BatchStepKind::Handover,
            by: Some(who.subject.clone()),
            to: vec![entry.label()],
            note,
            expires_at: None,
        };
        if !self
            .store
            .add_batch_step(task_id, batch.id, step, None, notifications)
            .await?
        {
            return Err(self.no_batch(task_id).await);
        }
        self.after_commit(Committed {
            task_id,
            logged: None,
            entered: None,
            outbox: notifies,
        });
        tracing::info!(task = %task_id, by = %who.subject, to = %entry.label(), "batch handed over");
        Ok(LadderEvent::HandedOver {
            task_id: task_id.to_owned(),
            by: who.subject.clone(),
            to: entry.label(),
        })
    }

    /// The `batch.escalated` rows of `by`'s hand-over of `row`'s `batch` to `to`, with who and
    /// their note, routed as an escalation's: its audience is the calls' approvers and `to`
    /// (with the members of their groups, for an email channel that writes to approvers).
    async fn handover_notifications(
        &self,
        row: &TaskRow,
        batch: &BatchRow,
        by: &str,
        to: &str,
        note: Option<&str>,
    ) -> Vec<NewNotification> {
        if !self.notifies() {
            return Vec::new();
        }
        let about = About::task(row);
        let requests: &[Value] = batch.requests.as_array().map_or(&[], Vec::as_slice);
        let to = [to.to_owned()];
        let audience = self.audience_of(&row.agent, requests, &to).await;
        let (expires_at, since) = (batch.expires_at.as_deref(), batch.created_at.as_str());
        self.notifications.for_event(
            NotificationKind::Escalated,
            &row.agent,
            &audience,
            |public_url| {
                payload::handed_over(
                    &about, public_url, requests, expires_at, since, &to, by, note,
                )
            },
        )
    }

    /// The 409 for a task whose batch was decided (or expired) before the step was written.
    pub(super) async fn no_batch(&self, task_id: &str) -> AgentError {
        let err = AgentError::NotPaused(format!(
            "task {task_id} waits for no decision: its batch was decided"
        ));
        match self.or_expired::<()>(task_id, None, Err(err)).await {
            Err(err) => err,
            Ok(()) => AgentError::Internal("a refusal that was not one".into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_target_is_one_exact_entry_without_spaces_or_control_characters() {
        assert_eq!(
            handover_target("group:sre").ok(),
            Some(ApproverEntry::Group("sre".into()))
        );
        assert_eq!(
            handover_target("user:alice@example.com").ok(),
            Some(ApproverEntry::User("alice@example.com".into()))
        );
        for bad in [
            "user:eve\r\nBcc: x@example.com",
            "group: sre",
            " group:sre",
            "group:sre\u{a0}",
            "user:\u{2003}alice",
            "user:",
            "sre",
            "team:sre",
        ] {
            assert!(
                matches!(handover_target(bad), Err(AgentError::InvalidParams(_))),
                "{bad:?}"
            );
        }
        let long = format!("user:{}", "a".repeat(MAX_TARGET));
        assert!(matches!(
            handover_target(&long),
            Err(AgentError::InvalidParams(message)) if message.contains("longer than 256")
        ));
    }
}
