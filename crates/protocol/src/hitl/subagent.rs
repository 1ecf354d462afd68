//! Subagents' calls in a parent's batch (docs/wire.md, Subagents): an agent that uses another
//! agent as a tool pauses with the subagent's held calls nested under its agent-tool call. Each
//! nested action request, and each nested call and result part, says through which call and for
//! which subagent task it asks, under [`super::keys::SUBAGENT`].

use serde_json::{json, Value};

use super::keys::SUBAGENT;
use crate::model::Part;

/// Where a nested call comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Via {
    /// The subagent the parent's agent-tool call runs (`namespace/name`): decisions go to its
    /// task.
    pub agent: String,
    /// The agent whose tool the call is: `agent` itself, or an agent further down that asks
    /// through it.
    pub asker: String,
    /// The parent's agent-tool call it is nested under.
    pub call_id: String,
    /// The subagent's task.
    pub task_id: String,
    /// The call's id in the subagent's task (its action request's id there).
    pub subagent_call_id: String,
}

impl Via {
    /// The id of a nested call in the parent's batch: unique there, and saying which call it
    /// is nested under. Unique because `call_id` is the server's own id, which holds no `/`
    /// (never a model's: docs/wire.md, Call ids).
    pub fn nested_id(call_id: &str, subagent_call_id: &str) -> String {
        format!("{call_id}/{subagent_call_id}")
    }

    pub fn to_value(&self) -> Value {
        json!({
            "agent": self.agent,
            "asker": self.asker,
            "call_id": self.call_id,
            "task_id": self.task_id,
            "subagent_call_id": self.subagent_call_id,
        })
    }

    /// Reads one; `None` unless every field is a string.
    pub fn from_value(value: &Value) -> Option<Via> {
        let text = |key: &str| value.get(key).and_then(Value::as_str).map(str::to_owned);
        Some(Via {
            agent: text("agent")?,
            asker: text("asker")?,
            call_id: text("call_id")?,
            task_id: text("task_id")?,
            subagent_call_id: text("subagent_call_id")?,
        })
    }

    /// The `subagent` metadata of a nested call or result part.
    pub fn from_part(part: &Part) -> Option<Via> {
        Via::from_value(part.metadata.as_ref()?.get(SUBAGENT)?)
    }

    /// "default/demo asks through default/boss": who asks, through which agent.
    pub fn label(&self, parent_agent: &str) -> String {
        if self.asker == self.agent {
            format!("{} asks through {parent_agent}", self.agent)
        } else {
            format!(
                "{} asks through {} and {parent_agent}",
                self.asker, self.agent
            )
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_via_reads_back_what_it_writes_and_names_who_asks_through_whom() {
        let via = Via {
            agent: "default/demo".into(),
            asker: "default/demo".into(),
            call_id: "call_1".into(),
            task_id: "t-2".into(),
            subagent_call_id: "call_1".into(),
        };
        assert_eq!(Via::from_value(&via.to_value()), Some(via.clone()));
        assert_eq!(
            via.label("default/boss"),
            "default/demo asks through default/boss"
        );
        assert_eq!(Via::nested_id("call_1", "call_2"), "call_1/call_2");
        assert_eq!(Via::from_value(&json!({"agent": "a"})), None);
    }

    #[test]
    fn a_nested_action_request_carries_its_via_in_metadata_beside_other_keys() {
        let via = Via {
            agent: "default/demo".into(),
            asker: "default/demo".into(),
            call_id: "call_1".into(),
            task_id: "t-2".into(),
            subagent_call_id: "call_2".into(),
        };
        let mut metadata = crate::Metadata::new();
        metadata.insert("preview".into(), json!({"new_file": true, "bytes": 2}));
        let request = super::super::ActionRequest {
            id: "call_1/call_2".into(),
            name: "write_file".into(),
            args: json!({"path": "a.txt", "content": "hi"}),
            description: None,
            server: None,
            approval_id: None,
            via: Some(via.clone()),
            metadata,
        };
        let value = request.to_value();
        assert_eq!(value["metadata"][SUBAGENT], via.to_value());
        assert_eq!(value["metadata"]["preview"]["new_file"], true);
        assert!(value.get(SUBAGENT).is_none(), "{value}");
        let back = super::super::ActionRequest::from_value(&value).unwrap();
        assert_eq!(back.via, Some(via));
        assert!(!back.metadata.contains_key(SUBAGENT), "read once, as `via`");
        assert_eq!(back.metadata["preview"]["bytes"], 2);
    }
}
