//! A decision as the audit records it (docs/rest.md, Approvals: `decision`): a person's
//! decision in native terms, or what decided in their stead (one of their policies, an argument
//! rule, a cancel, an expiry). The server writes every decision it stores through this type and
//! the REST contract reads it back, so no decision object is spelled by hand elsewhere.

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{json, Map, Value};

use super::{Decision, Dialect};

const DECISION_TYPE: &str = "decision_type";
const POLICY_ID: &str = "policy_id";
const RULE: &str = "rule";
const AFTER: &str = "after";
const SUBAGENT: &str = "subagent";
const REVIEWER: &str = "reviewer";

/// What decided a batch (or one call of a turn), as stored with its audit row.
#[derive(Debug, Clone, PartialEq)]
pub enum RecordedDecision {
    /// A person's decision (a decision DataPart, text, kagent's HITL extension, REST), in
    /// native terms whatever synonyms came in.
    Person(Decision),
    /// One of the person's "always allow" policies approved the call:
    /// `{"decision_type":"approve","policy_id":…}`.
    Policy { policy_id: String },
    /// An argument rule of the agents file denied the call: `{"decision_type":"deny","rule":…}`.
    Rule { rule: String },
    /// The agent's first reviewer approved the call:
    /// `{"decision_type":"approve","reviewer":{"risk":…,"reason":…}}`.
    Reviewer { risk: String, reason: String },
    /// The task was canceled while its batch waited, here or at a remote agent:
    /// `{"decision_type":"cancel"}`.
    Cancel,
    /// Nobody decided before the deadline: `{"decision_type":"expire","after":…}`, with
    /// `"subagent"` when it expired with a subagent's batch nested in it.
    Expire {
        /// The timeout as the agents file says it ("30m").
        after: String,
        with: Option<ExpiredWith>,
    },
}

/// The subagent's task whose expired batch took its parent's batch with it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ExpiredWith {
    pub task_id: String,
    /// The parent's agent-tool call that started the subagent's task.
    pub call_id: String,
}

impl RecordedDecision {
    /// The decision object as stored and as the audit shows it.
    pub fn to_value(&self) -> Value {
        match self {
            RecordedDecision::Person(decision) => decision.to_data(Dialect::Native),
            RecordedDecision::Policy { policy_id } => {
                json!({DECISION_TYPE: "approve", POLICY_ID: policy_id})
            }
            RecordedDecision::Rule { rule } => json!({DECISION_TYPE: "deny", RULE: rule}),
            RecordedDecision::Reviewer { risk, reason } => {
                json!({DECISION_TYPE: "approve", REVIEWER: {"risk": risk, "reason": reason}})
            }
            RecordedDecision::Cancel => json!({DECISION_TYPE: "cancel"}),
            RecordedDecision::Expire { after, with } => {
                let mut data = Map::new();
                data.insert(DECISION_TYPE.to_owned(), json!("expire"));
                data.insert(AFTER.to_owned(), json!(after));
                if let Some(with) = with {
                    data.insert(SUBAGENT.to_owned(), json!(with));
                }
                Value::Object(data)
            }
        }
    }

    /// A stored decision object read back; an error says what does not fit.
    pub fn from_value(data: &Value) -> Result<RecordedDecision, String> {
        let text = |key: &str| data.get(key).and_then(Value::as_str).map(str::to_owned);
        match (data.get(DECISION_TYPE).and_then(Value::as_str), data) {
            (Some("cancel"), _) => Ok(RecordedDecision::Cancel),
            (Some("expire"), _) => Ok(RecordedDecision::Expire {
                after: text(AFTER).ok_or("an expiry without its timeout (after)")?,
                with: match data.get(SUBAGENT) {
                    None | Some(Value::Null) => None,
                    Some(with) => Some(
                        serde_json::from_value(with.clone())
                            .map_err(|err| format!("an expiry's subagent: {err}"))?,
                    ),
                },
            }),
            // A policy's and a rule's decisions are told from a person's by their key.
            (Some("approve"), _) if data.get(POLICY_ID).is_some() => Ok(RecordedDecision::Policy {
                policy_id: text(POLICY_ID).ok_or("policy_id must be a string")?,
            }),
            (Some("deny"), _) if data.get(RULE).is_some() => Ok(RecordedDecision::Rule {
                rule: text(RULE).ok_or("rule must be a string")?,
            }),
            (Some("approve"), _) if data.get(REVIEWER).is_some() => {
                let field = |key: &str| {
                    data[REVIEWER]
                        .get(key)
                        .and_then(Value::as_str)
                        .map(str::to_owned)
                        .ok_or_else(|| format!("the reviewer's {key} must be a string"))
                };
                Ok(RecordedDecision::Reviewer {
                    risk: field("risk")?,
                    reason: field("reason")?,
                })
            }
            _ => Decision::from_data(data)
                .map(RecordedDecision::Person)
                .map_err(|err| err.to_string()),
        }
    }

    /// The policy that approved the call, for a policy's decision.
    pub fn policy_id(&self) -> Option<&str> {
        match self {
            RecordedDecision::Policy { policy_id } => Some(policy_id),
            RecordedDecision::Person(_)
            | RecordedDecision::Rule { .. }
            | RecordedDecision::Reviewer { .. }
            | RecordedDecision::Cancel
            | RecordedDecision::Expire { .. } => None,
        }
    }
}

impl Serialize for RecordedDecision {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.to_value().serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for RecordedDecision {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let data = Value::deserialize(deserializer)?;
        RecordedDecision::from_value(&data).map_err(D::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(data: Value) -> RecordedDecision {
        let decision = RecordedDecision::from_value(&data).unwrap();
        assert_eq!(decision.to_value(), data);
        let text = serde_json::to_string(&decision).unwrap();
        assert_eq!(
            serde_json::from_str::<RecordedDecision>(&text).unwrap(),
            decision
        );
        decision
    }

    #[test]
    fn every_kind_of_decision_keeps_its_stored_shape() {
        let person = round_trip(json!({"decision_type": "deny", "reason": "not today"}));
        assert_eq!(
            person,
            RecordedDecision::Person(Decision::deny_all(Some("not today".to_owned())))
        );
        round_trip(
            json!({"decision_type": "approve", "ask_user_answers": [{"answer": ["SQLite"]}]}),
        );
        let policy = round_trip(json!({"decision_type": "approve", "policy_id": "p-1"}));
        assert_eq!(policy.policy_id(), Some("p-1"));
        assert_eq!(
            round_trip(json!({"decision_type": "deny", "rule": "#1 (rm)"})),
            RecordedDecision::Rule {
                rule: "#1 (rm)".to_owned()
            }
        );
        assert_eq!(
            round_trip(json!({"decision_type": "cancel"})),
            RecordedDecision::Cancel
        );
        assert_eq!(
            round_trip(json!({"decision_type": "approve",
                "reviewer": {"risk": "low", "reason": "reads only"}})),
            RecordedDecision::Reviewer {
                risk: "low".to_owned(),
                reason: "reads only".to_owned()
            }
        );
        round_trip(json!({"decision_type": "expire", "after": "30m"}));
        let nested = round_trip(json!({"decision_type": "expire", "after": "30m",
            "subagent": {"taskId": "t-2", "callId": "call_1"}}));
        assert_eq!(nested.policy_id(), None);
    }

    #[test]
    fn a_stored_decision_that_fits_no_kind_is_an_error() {
        for (data, says) in [
            (json!({"decision_type": "expire"}), "after"),
            (
                json!({"decision_type": "approve", "policy_id": 7}),
                "policy_id",
            ),
            (json!({"decision_type": "maybe"}), "unknown decision_type"),
            (
                json!({"decision_type": "approve", "reviewer": {"risk": "low"}}),
                "reason",
            ),
            (json!("approve"), "JSON object"),
        ] {
            let err = RecordedDecision::from_value(&data).unwrap_err();
            assert!(err.contains(says), "{data}: {err}");
        }
    }
}
