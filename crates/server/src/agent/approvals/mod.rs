//! The approval workflow's own vocabulary and rules, below the runtime (which holds one
//! [`Approvals`] and drives the store writes): who acts ([`Actor`]: the person, how they signed
//! in, through which [`Channel`]), what they do ([`Command`], a closed set), who may approve a
//! call (`eligibility`, the one answer), and how a person's decision counts against a batch's
//! votes (`plan`, pure: it runs inside the decision's store write). Nothing here imports the
//! runtime, so the runtime may use all of it without a cycle.

mod audit;
mod deadline;
mod eligibility;
mod ladder;
mod plan;
mod refusal;

use serde_json::Value;
use signoff_protocol::hitl::{ActionRequest, Decision};
use signoff_protocol::rest::DeciderAuth;
use signoff_protocol::Message;

use crate::agent::error::Result;
use crate::agent::policy::AgentApprovals;
use crate::store::{handed_to, BatchRow, Store, TaskRow};

pub use crate::store::Channel;
pub use audit::{wire_verdict, AuditCall, AuditEntry, AuditParent, PendingApproval};
pub use deadline::{deadline_for, expired_after, SOME_TIMEOUT};
pub use eligibility::{approvers_by, handed_over_to, no_stricter, Approvers, Decider, REQUESTER};
pub use ladder::{first_deadline, BatchLadder};
pub use plan::{
    call_verdicts, person_decision, plan, working_event, Count, PlannedDecision, Tally,
};
pub use refusal::decision_of;

/// Who acts on a batch, and through which channel: the explicit input every write of the
/// workflow carries. A rule of who may act looks at this, never at ambient state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Actor {
    pub channel: Channel,
    /// The person on whose authority the batch is acted on: the person who acts (with the
    /// email and groups the agents file's `approvers` may name), or the task's owner for whom a
    /// cancel or an expiry decided.
    pub decider: Decider,
    /// How the person who acts was authenticated (the request's [`Decider::auth`], or a
    /// decision link); `None` when no request acts.
    pub auth: Option<DeciderAuth>,
}

impl Actor {
    /// The server's own deadline ladder (its reminders, escalations and expiries): no person,
    /// no sign-in. Only it takes those steps; no request can act as it.
    pub fn deadline() -> Actor {
        Actor {
            channel: Channel::Expiry,
            decider: Decider::subject(""),
            auth: None,
        }
    }

    /// Whether this is [`Actor::deadline`].
    pub fn is_deadline(&self) -> bool {
        self.channel == Channel::Expiry && self.auth.is_none() && self.decider.subject.is_empty()
    }

    /// `who` acting through `channel`, audited with how they signed in.
    pub fn of(who: &Decider, channel: Channel) -> Actor {
        Actor {
            channel,
            decider: who.clone(),
            auth: who.auth,
        }
    }
}

/// What an [`Actor`] does to a task's pending batch: the closed set of the workflow's writes.
/// Every channel reads its input into one of these (a decision into the protocol's
/// [`Decision`]) before anything is checked.
#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    /// A person's decision on the batch's calls.
    Decide(Box<Decide>),
    /// The batch handed over to `to` (an approver entry), with a note for them.
    HandOver { to: String, note: Option<String> },
    /// The batch's deadline pushed back `by` (a duration such as `15m`).
    Extend { by: String, note: Option<String> },
    /// The ladder's reminder of a waiting batch.
    Remind,
    /// The ladder's escalation of a waiting batch.
    Escalate,
    /// The batch's deadline, due at `expires_at`, passed unanswered.
    Expire { expires_at: String },
    /// The task's owner canceled the task while its batch waited.
    Cancel,
}

/// A decision as its channel read it, with what only some channels know.
#[derive(Debug, Clone, PartialEq)]
pub struct Decide {
    pub decision: Decision,
    /// The one batch it decides (a decision link's, or the batch a message was read against):
    /// when another batch waits by the time of the write, this one was decided meanwhile and
    /// the decision is refused rather than applied to calls its sender never saw.
    pub batch_id: Option<i64>,
    /// The message it came in (over A2A), logged as the decision on the task; other channels'
    /// decisions are logged as a message made of the decision.
    pub message: Option<Message>,
    /// The hash of the decision link it came by: the link is used in the decision's write.
    pub link: Option<String>,
}

impl Command {
    /// A decision on whatever batch waits ([`Decide::of`]).
    pub fn decide(decision: Decision) -> Command {
        Command::Decide(Box::new(Decide::of(decision)))
    }
}

impl Decide {
    /// `decision` on whatever batch waits, logged as a message made of it.
    pub fn of(decision: Decision) -> Decide {
        Decide {
            decision,
            batch_id: None,
            message: None,
            link: None,
        }
    }
}

/// The approval workflow, held by the runtime: who may approve each agent's calls
/// ([`Approvers`]), and the store the audit reads.
pub struct Approvals {
    store: Store,
    approvers: Approvers,
}

impl Approvals {
    /// Whether `who` may approve a call of the task's waiting batch (as the agents file says,
    /// or as an escalation or a hand-over the approvers allow does), a hand-over of it named
    /// them, or they voted on one of its batches.
    pub async fn approves_in(&self, row: &TaskRow, who: &Decider) -> Result<bool> {
        if let Some(batch) = self.store.pending_batch(&row.id).await? {
            let steps = self.store.batch_steps(&row.id).await?;
            let handed = handed_to(&steps, batch.id);
            // A hand-over lets the people it names read the batch, approvers or not.
            if handed_over_to(&handed, who)
                || self
                    .approvers
                    .eligible_for_batch(row, &batch_requests(&batch), &handed, who)
            {
                return Ok(true);
            }
        }
        Ok(self.store.voted_on(&row.id, &who.subject).await?)
    }

    /// The workflow of these agents (`namespace/name` and its approval settings) on `store`.
    pub fn new(
        store: Store,
        agents: impl IntoIterator<Item = (String, AgentApprovals)>,
    ) -> Approvals {
        Approvals {
            store,
            approvers: Approvers::new(agents),
        }
    }

    /// Who may approve each call: the one answer (`eligibility`).
    pub fn approvers(&self) -> &Approvers {
        &self.approvers
    }
}

/// The sha256 of a JSON value's RFC 8785 text (keys sorted, so equal arguments in another key
/// order hash equally): what a vote approved, so an edit voids the approvals of other
/// arguments. serde_json keeps keys in insertion order in this build, so its own text would
/// not do.
pub fn args_sha256(args: &Value) -> String {
    crate::agent::pins::digest(args)
}

/// The action requests of a stored batch.
pub fn batch_requests(batch: &BatchRow) -> Vec<ActionRequest> {
    batch
        .requests
        .as_array()
        .map(|items| items.iter().filter_map(ActionRequest::from_value).collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_arguments_in_another_key_order_hash_equally() {
        let one: Value = serde_json::from_str(r#"{"path": "a.txt", "content": "x"}"#).unwrap();
        let two: Value = serde_json::from_str(r#"{"content": "x", "path": "a.txt"}"#).unwrap();
        assert_ne!(
            one.to_string(),
            two.to_string(),
            "serde_json keeps key order"
        );
        assert_eq!(args_sha256(&one), args_sha256(&two));
        let other: Value = serde_json::from_str(r#"{"content": "y", "path": "a.txt"}"#).unwrap();
        assert_ne!(args_sha256(&one), args_sha256(&other));
    }
}
