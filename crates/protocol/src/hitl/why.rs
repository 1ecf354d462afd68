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
}
