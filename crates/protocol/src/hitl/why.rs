//! Why a tool call ran, waited or was refused: the one rule, grant or policy that decided it
//! (docs/policies.md), carried as the `signoff_why` part metadata of the call and in the audit.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::keys::SIGNOFF_WHY;
use crate::model::Part;

/// What the gate decided about a call before anyone was asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GateOutcome {
    /// Runs without asking.
    Allow,
    /// Waits for a person's decision.
    Ask,
    /// Refused; the model reads the reason.
    Deny,
}

/// What decided: the order in which they are consulted is in docs/policies.md.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WhyKind {
    /// A Cedar policy of the deployment (`--policies`).
    Policy,
    /// A policy could not be evaluated (an error or a missing attribute): the call asks.
    PolicyError,
    /// An argument rule of the agents file.
    Rule,
    /// A person's "always allow" grant.
    Grant,
    /// Nothing matched: the tool's `require_approval` setting.
    Default,
    /// The agent's first reviewer (a model, an HTTP endpoint or a command), asked about a call
    /// that would otherwise wait for a person.
    Reviewer,
}

/// What a first reviewer answered about one call (docs/wire.md, The reviewer).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReviewOutcome {
    /// The call runs without a person.
    Approve,
    /// The reviewer refuses it: a person sees the denial and may override it for this call.
    Deny,
    /// The reviewer leaves it to a person.
    Ask,
    /// The reviewer failed (an error, a timeout, an unreadable answer): a person decides.
    Failed,
    /// The task's circuit breaker is open (too many denials): the reviewer was not asked.
    Paused,
}

impl ReviewOutcome {
    pub fn as_str(self) -> &'static str {
        match self {
            ReviewOutcome::Approve => "approve",
            ReviewOutcome::Deny => "deny",
            ReviewOutcome::Ask => "ask",
            ReviewOutcome::Failed => "failed",
            ReviewOutcome::Paused => "paused",
        }
    }
}

/// A reviewer's verdict on one call, with its risk level and its reason (for a failure, what
/// went wrong).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Review {
    pub outcome: ReviewOutcome,
    /// `low`, `medium` or `high`; none for a failure or a pause.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub risk: Option<String>,
    pub reason: String,
    /// Shadow mode: the verdict is only recorded, and a person decides.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub shadow: bool,
}

/// The rule, grant or policy that decided one call, and what an ask needs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Why {
    pub by: WhyKind,
    /// The policy's id, the rule's label, the grant's id, or `require_approval`.
    pub id: String,
    pub outcome: GateOutcome,
    /// How a person reads it: "policy etc-is-off-limits: …".
    pub summary: String,
    /// An ask's approvers (`group:sre`, `user:alice`); empty: the task's owner.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub approvers: Vec<String>,
    /// How many approvers must approve; none: one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quorum: Option<u32>,
    /// `low`, `medium` or `high`, shown on the card.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub risk: Option<String>,
    /// A deny's or an ask's reason, as the policy gives it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The file of the Cedar policy that decided (`examples.cedar`), for a person to find it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// An ask's `@requester_may_approve`: `false` is the two-person rule (the requester may
    /// reject but not approve); none: the agents file's setting for the tool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requester_may_approve: Option<bool>,
    /// The reviewer's verdict, when one was asked (in shadow mode too).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review: Option<Review>,
}

impl Why {
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }

    pub fn from_value(value: &Value) -> Option<Why> {
        serde_json::from_value(value.clone()).ok()
    }

    /// The `signoff_why` metadata of a call part, if it has one.
    pub fn from_part(part: &Part) -> Option<Why> {
        Why::from_value(part.metadata.as_ref()?.get(SIGNOFF_WHY)?)
    }

    /// The `signoff_why` of an action request's metadata: set by the server that paused the
    /// call, it says which policy asked and who approves.
    pub fn from_metadata(metadata: &crate::model::Metadata) -> Option<Why> {
        Why::from_value(metadata.get(SIGNOFF_WHY)?)
    }

    /// Whether a Cedar policy asked (its approvers and quorum, if any, route the call).
    pub fn is_policy_ask(&self) -> bool {
        self.by == WhyKind::Policy && self.outcome == GateOutcome::Ask
    }

    /// Whether a live reviewer denied the call: only a decision that names the call
    /// approves it (the Override), never an approval of the whole batch.
    pub fn reviewer_denied(&self) -> bool {
        self.review
            .as_ref()
            .is_some_and(|review| review.outcome == ReviewOutcome::Deny && !review.shadow)
    }

    /// `part` marked with why.
    pub fn mark(&self, part: Part) -> Part {
        part.with_metadata(SIGNOFF_WHY, self.to_value())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_ask_carries_its_approvers_and_reads_back_from_a_part() {
        let why = Why {
            by: WhyKind::Policy,
            id: "oncall".into(),
            outcome: GateOutcome::Ask,
            summary: "policy oncall".into(),
            approvers: vec!["group:sre".into()],
            quorum: Some(2),
            risk: Some("high".into()),
            reason: None,
            file: Some("ops.cedar".into()),
            requester_may_approve: Some(false),
            review: None,
        };
        assert_eq!(
            why.to_value(),
            json!({"by": "policy", "id": "oncall", "outcome": "ask", "summary": "policy oncall",
                   "approvers": ["group:sre"], "quorum": 2, "risk": "high",
                   "file": "ops.cedar", "requesterMayApprove": false})
        );
        let part = why.mark(Part::text("x"));
        assert_eq!(Why::from_part(&part), Some(why));
        assert_eq!(Why::from_part(&Part::text("x")), None);
    }

    #[test]
    fn a_reviewers_verdict_reads_back() {
        let why = json!({"by": "reviewer", "id": "reviewer", "outcome": "ask", "summary": "s",
            "risk": "high", "reason": "rm -rf",
            "review": {"outcome": "deny", "risk": "high", "reason": "rm -rf"}});
        let read = Why::from_value(&why).unwrap();
        assert_eq!(read.by, WhyKind::Reviewer);
        assert!(read.reviewer_denied());
        assert_eq!(read.to_value(), why);
        let shadow = json!({"by": "default", "id": "require_approval", "outcome": "ask",
            "summary": "s", "review": {"outcome": "deny", "reason": "r", "shadow": true}});
        let read = Why::from_value(&shadow).unwrap();
        assert!(!read.reviewer_denied(), "a shadow verdict decides nothing");
        assert_eq!(read.to_value(), shadow);
        let bad = json!({"by": "reviewer", "id": "r", "outcome": "ask", "summary": "s",
            "review": {"outcome": "maybe", "reason": "r"}});
        assert_eq!(Why::from_value(&bad), None);
    }
}
