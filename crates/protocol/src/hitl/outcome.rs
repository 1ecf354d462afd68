//! Calls no person was asked about (docs/wire.md, Rules and policies): who decided instead, as
//! the `signoff_decided_by` part metadata of the call and its result, and the results of calls
//! a rule denied or whose approval expired.

use serde_json::{json, Value};

use super::call::ToolResult;
use super::keys::SIGNOFF_DECIDED_BY;
use crate::model::Part;

/// Who let a call run, or refused it, without asking.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DecidedBy {
    /// One of the person's "always allow" policies approved it.
    Policy {
        id: String,
        /// How the person reads the policy: "write_file with any arguments, in this chat".
        summary: String,
    },
    /// An argument rule of the agents file allowed or denied it.
    Rule {
        /// Which rule: `#2 (write_file when path glob "notes/**")`.
        rule: String,
        allowed: bool,
    },
}

impl DecidedBy {
    /// `{"by":"policy","policyId":…,"summary":…}` or `{"by":"rule","rule":…,"action":"allow"|"deny"}`.
    pub fn to_value(&self) -> Value {
        match self {
            DecidedBy::Policy { id, summary } => {
                json!({"by": "policy", "policyId": id, "summary": summary})
            }
            DecidedBy::Rule { rule, allowed } => json!({
                "by": "rule",
                "rule": rule,
                "action": if *allowed { "allow" } else { "deny" },
            }),
        }
    }

    pub fn from_value(value: &Value) -> Option<DecidedBy> {
        let text = |key: &str| value.get(key).and_then(Value::as_str).map(str::to_owned);
        match value.get("by")?.as_str()? {
            "policy" => Some(DecidedBy::Policy {
                id: text("policyId")?,
                summary: text("summary").unwrap_or_default(),
            }),
            "rule" => Some(DecidedBy::Rule {
                rule: text("rule")?,
                allowed: text("action").as_deref() == Some("allow"),
            }),
            _ => None,
        }
    }

    /// The metadata of a call or result part, if it has one.
    pub fn from_part(part: &Part) -> Option<DecidedBy> {
        DecidedBy::from_value(part.metadata.as_ref()?.get(SIGNOFF_DECIDED_BY)?)
    }

    /// `part` marked with who decided.
    pub fn mark(&self, part: Part) -> Part {
        part.with_metadata(SIGNOFF_DECIDED_BY, self.to_value())
    }
}

const DENIED: &str = "denied";
const EXPIRED: &str = "expired";

impl ToolResult {
    /// A call an argument rule refused: `{"status":"denied","rule":…,"message":"Denied by rule …"}`.
    pub fn denied(id: impl Into<String>, name: impl Into<String>, rule: &str) -> ToolResult {
        ToolResult {
            id: id.into(),
            name: name.into(),
            response: json!({
                "status": DENIED,
                "rule": rule,
                "message": format!("Denied by rule {rule}; the call did not run."),
            }),
        }
    }

    /// A held call nobody decided in time: `{"status":"expired","message":…}`. Not a rejection:
    /// no person refused it and no reason is given.
    pub fn expired(id: impl Into<String>, name: impl Into<String>, after: &str) -> ToolResult {
        ToolResult {
            id: id.into(),
            name: name.into(),
            response: json!({
                "status": EXPIRED,
                "message": format!(
                    "The approval request expired unanswered after {after}; the call did not run."
                ),
            }),
        }
    }

    /// Refused by an argument rule.
    pub fn is_denied(&self) -> bool {
        self.response.get("status").and_then(Value::as_str) == Some(DENIED)
    }

    /// The rule that refused it.
    pub fn denied_rule(&self) -> Option<&str> {
        self.is_denied()
            .then(|| self.response.get("rule").and_then(Value::as_str))
            .flatten()
    }

    /// Held until its approval expired unanswered.
    pub fn is_expired(&self) -> bool {
        self.response.get("status").and_then(Value::as_str) == Some(EXPIRED)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decided_by_round_trips_through_part_metadata() {
        for decided in [
            DecidedBy::Policy {
                id: "p-1".into(),
                summary: "write_file with any arguments, in this chat".into(),
            },
            DecidedBy::Rule {
                rule: "#1 (write_file when path glob \".git/**\")".into(),
                allowed: false,
            },
        ] {
            let part = decided.mark(Part::data(json!({"id": "c"})));
            assert_eq!(DecidedBy::from_part(&part), Some(decided));
        }
        assert_eq!(DecidedBy::from_part(&Part::text("x")), None);
    }

    #[test]
    fn denied_and_expired_results_are_not_rejections() {
        let denied = ToolResult::denied("c", "write_file", "#1 (write_file)");
        assert!(denied.is_denied() && !denied.is_rejected() && !denied.is_expired());
        assert_eq!(denied.denied_rule(), Some("#1 (write_file)"));
        let expired = ToolResult::expired("c", "write_file", "30m");
        assert!(expired.is_expired() && !expired.is_rejected() && !expired.is_denied());
        assert_eq!(
            expired.response["message"],
            "The approval request expired unanswered after 30m; the call did not run."
        );
    }
}
