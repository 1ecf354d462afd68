//! The approval interrupt (docs/wire.md, Approval interrupt): the held calls, how they are
//! written in the native dialect, and how either dialect is read back.

use serde_json::{json, Value};

use super::keys::SUBAGENT;
use super::keys::{EXPIRES_AT, INTERRUPT_DATA, INTERRUPT_TYPE, KAGENT_TYPE, TOOL_APPROVAL};
use super::question::Question;
use super::subagent::Via;
use super::{extension, kagent};
use crate::model::{Message, Metadata, Part, TaskState, TaskStatus};

/// One held call in an approval interrupt.
#[derive(Debug, Clone, PartialEq)]
pub struct ActionRequest {
    /// The model's call id (kagent: the ORIGINAL function call's id).
    pub id: String,
    pub name: String,
    pub args: Value,
    /// The tool's description, for the card.
    pub description: Option<String>,
    /// The MCP server (tool source) the call goes to; for kagent's HITL extension, the subagent
    /// that paused.
    pub server: Option<String>,
    /// kagent's HITL extension only: the opaque approval id the answer must name, which is not
    /// the call id ([`super::extension`]).
    pub approval_id: Option<String>,
    /// A subagent's call nested under an agent-tool call (`metadata.subagent`; docs/wire.md,
    /// Subagents).
    pub via: Option<Via>,
    /// The request's `metadata`: the server's [`super::Preview`] of the call's effect, and what
    /// else a peer adds (kept as sent; empty when absent).
    pub metadata: Metadata,
}

/// Which approval dialect a peer speaks: how its interrupts look and how decisions must be written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Dialect {
    /// docs/wire.md, Approval interrupt and Decision message: one `interrupt_data` DataPart,
    /// `deny` understood.
    Native,
    /// kagent 0.10.x (docs/wire.md, kagent dialect): `adk_request_confirmation` calls, `reject`
    /// instead of `deny`.
    Kagent,
    /// kagent's HITL extension (docs/wire.md, kagent's HITL extension): requests and responses
    /// in message metadata under its URI, decisions by opaque approval id.
    KagentExtension,
}

/// A pending batch of calls that wait for a person's decision.
#[derive(Debug, Clone, PartialEq)]
pub struct ApprovalInterrupt {
    pub action_requests: Vec<ActionRequest>,
    pub dialect: Dialect,
    /// When the batch expires unanswered (RFC 3339), if its agent has an approval timeout
    /// (native `expires_at`; docs/wire.md, Expiry).
    pub expires_at: Option<String>,
}

/// The key of an `input-required` event's metadata that says how far each call's quorum has
/// come (docs/wire.md, Approvers): an array of [`crate::rest::CallQuorum`].
pub const QUORUM: &str = "quorum";

/// The metadata of the `input-required` event an approval short of a quorum writes: the
/// interrupt's, with each call's [`crate::rest::CallQuorum`].
pub fn quorum_event_metadata(calls: &[crate::rest::CallQuorum]) -> Metadata {
    let mut metadata = interrupt_event_metadata();
    metadata.insert(QUORUM.to_owned(), json!(calls));
    metadata
}

/// The calls' quorum progress an event's metadata carries, if any.
pub fn quorum_from_metadata(metadata: &Metadata) -> Option<Vec<crate::rest::CallQuorum>> {
    serde_json::from_value(metadata.get(QUORUM)?.clone()).ok()
}

/// The metadata of the final `input-required` event that carries an interrupt.
pub fn interrupt_event_metadata() -> Metadata {
    let mut metadata = Metadata::new();
    metadata.insert(INTERRUPT_TYPE.to_owned(), json!(TOOL_APPROVAL));
    metadata
}

/// Argument names that say what a call touches; the interrupt's text names them so a log or
/// a plain A2A client shows enough to decide (the DataPart carries every argument).
const IDENTIFYING_ARGS: [&str; 9] = [
    "path",
    "source",
    "destination",
    "file",
    "filename",
    "url",
    "uri",
    "command",
    "name",
];

/// The `kind` of a native action request that asks the person questions (docs/wire.md,
/// Questions); a request without `kind` is a tool call to approve.
pub const QUESTION_KIND: &str = "question";

impl ActionRequest {
    /// The questions this request asks, when it is an `ask_user` call (either dialect) or an
    /// MCP server's form (`elicitation`): answered rather than approved.
    pub fn questions(&self) -> Option<Vec<Question>> {
        if !super::question::asks_questions(&self.name) {
            return None;
        }
        Question::list_from_args(&self.args)
    }

    pub fn to_value(&self) -> Value {
        let mut value = json!({"id": self.id, "name": self.name, "args": self.args});
        if let Some(object) = value.as_object_mut() {
            if self.questions().is_some() {
                object.insert("kind".to_owned(), json!(QUESTION_KIND));
            }
            if let Some(description) = &self.description {
                object.insert("description".to_owned(), json!(description));
            }
            if let Some(server) = &self.server {
                object.insert("server".to_owned(), json!(server));
            }
            // A nested call's subagent travels in the request's metadata, beside a preview.
            let mut metadata = self.metadata.clone();
            if let Some(via) = &self.via {
                metadata.insert(SUBAGENT.to_owned(), via.to_value());
            }
            if !metadata.is_empty() {
                object.insert("metadata".to_owned(), Value::Object(metadata));
            }
        }
        value
    }

    /// Reads one native action request; `None` without a string `id` and `name`.
    pub fn from_value(value: &Value) -> Option<ActionRequest> {
        let text = |key: &str| value.get(key).and_then(Value::as_str).map(str::to_owned);
        let mut metadata = value
            .get("metadata")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        let via = metadata.remove(SUBAGENT).as_ref().and_then(Via::from_value);
        Some(ActionRequest {
            id: text("id")?,
            name: text("name")?,
            args: value.get("args").cloned().unwrap_or_else(|| json!({})),
            description: text("description"),
            server: text("server"),
            approval_id: None,
            via,
            metadata,
        })
    }

    /// One line of the interrupt's text: "- `write_file` (path: notes.txt)", or for a question
    /// call each question with its choices.
    fn summary_line(&self) -> String {
        if let Some(questions) = self.questions() {
            let lines: Vec<String> = questions
                .iter()
                .map(|question| {
                    if question.is_free_text() {
                        format!("- {}", question.question)
                    } else {
                        format!("- {} ({})", question.question, question.choices.join(" / "))
                    }
                })
                .collect();
            return lines.join("\n");
        }
        let shown: Vec<String> = IDENTIFYING_ARGS
            .iter()
            .filter_map(|key| {
                let value = self.args.get(*key)?;
                let value = match value {
                    Value::String(text) => text.clone(),
                    Value::Number(_) | Value::Bool(_) => value.to_string(),
                    Value::Null | Value::Array(_) | Value::Object(_) => return None,
                };
                Some(format!("{key}: {value}"))
            })
            .collect();
        let name = self.name.replace('`', "\\`");
        if shown.is_empty() {
            format!("- `{name}`")
        } else {
            format!("- `{name}` ({})", shown.join(", "))
        }
    }
}

impl ApprovalInterrupt {
    /// A native interrupt over these calls.
    pub fn new(action_requests: Vec<ActionRequest>) -> Self {
        ApprovalInterrupt {
            action_requests,
            dialect: Dialect::Native,
            expires_at: None,
        }
    }

    /// The same interrupt with a deadline.
    pub fn expiring_at(mut self, expires_at: Option<String>) -> Self {
        self.expires_at = expires_at;
        self
    }

    /// The native `interrupt_data` payload: `{"interrupt_type":"tool_approval","action_requests":[…]}`.
    pub fn to_data(&self) -> Value {
        let mut data = json!({
            INTERRUPT_TYPE: TOOL_APPROVAL,
            "action_requests": self.action_requests.iter().map(ActionRequest::to_value).collect::<Vec<_>>(),
        });
        if let (Some(expires_at), Some(object)) = (&self.expires_at, data.as_object_mut()) {
            object.insert(EXPIRES_AT.to_owned(), json!(expires_at));
        }
        data
    }

    /// The human-readable text of the interrupt message.
    pub fn text(&self) -> String {
        let lines: Vec<String> = self
            .action_requests
            .iter()
            .map(ActionRequest::summary_line)
            .collect();
        let title = if self
            .action_requests
            .iter()
            .all(|request| request.questions().is_some())
        {
            "**Question**"
        } else {
            "**Approval Required**"
        };
        format!("{title}\n\n{}", lines.join("\n"))
    }

    /// The parts of the interrupt message (docs/wire.md, Approval interrupt): the text, then the
    /// `interrupt_data` DataPart. Always the native dialect: Signoff's server never writes
    /// kagent's.
    pub fn to_parts(&self) -> Vec<Part> {
        vec![
            Part::text(self.text()),
            Part::data(self.to_data()).with_metadata(KAGENT_TYPE, json!(INTERRUPT_DATA)),
        ]
    }

    /// Reads an interrupt from a message in any dialect: kagent's HITL extension when the message
    /// uses it, else the native `interrupt_data` DataPart, else kagent's
    /// `adk_request_confirmation` calls (docs/wire.md, kagent dialect; ids are the ORIGINAL call
    /// ids). `None` if the message holds no interrupt.
    pub fn from_message(message: &Message) -> Option<ApprovalInterrupt> {
        if let Some(interrupt) = extension::interrupt_from_message(message) {
            return Some(interrupt);
        }
        let native = message.parts.iter().find_map(|part| {
            let data = part.as_data()?;
            (data.get(INTERRUPT_TYPE)?.as_str()? == TOOL_APPROVAL).then_some(data)
        });
        match native {
            Some(data) => {
                let requests = data.get("action_requests")?.as_array()?;
                let expires_at = data.get(EXPIRES_AT).and_then(Value::as_str);
                Some(
                    ApprovalInterrupt::new(
                        requests
                            .iter()
                            .filter_map(ActionRequest::from_value)
                            .collect(),
                    )
                    .expiring_at(expires_at.map(str::to_owned)),
                )
            }
            None => kagent::interrupt_from_message(message),
        }
    }

    /// The interrupt a task waits on: only an `input-required` status holds one.
    pub fn from_status(status: &TaskStatus) -> Option<ApprovalInterrupt> {
        match status.state {
            TaskState::InputRequired => ApprovalInterrupt::from_message(status.message.as_ref()?),
            TaskState::Submitted
            | TaskState::Working
            | TaskState::AuthRequired
            | TaskState::Completed
            | TaskState::Failed
            | TaskState::Canceled
            | TaskState::Rejected => None,
        }
    }

    pub fn ids(&self) -> impl Iterator<Item = &str> {
        self.action_requests
            .iter()
            .map(|request| request.id.as_str())
    }
}

impl Dialect {
    /// kagent 0.10.4 ignores `modified_args`, so it would run the ORIGINAL arguments: a client
    /// must not offer editing to a kagent peer.
    pub fn supports_modified_args(self) -> bool {
        match self {
            Dialect::Native => true,
            Dialect::Kagent | Dialect::KagentExtension => false,
        }
    }

    /// kagent's HITL extension answers a lone question with `ask_user_response`, which has no
    /// rejection: a client must not offer to reject such a question.
    pub fn can_reject_a_lone_question(self) -> bool {
        match self {
            Dialect::Native | Dialect::Kagent => true,
            Dialect::KagentExtension => false,
        }
    }

    /// kagent 0.10.4 resolves every pending call with the one message that carries answers:
    /// `ask_user_answers` approves every call of the task, even over a `batch` rejection in the
    /// same message, and it cannot answer a question and reject a call at once. A client must
    /// then offer only "answer and run everything" or "reject everything" (docs/wire.md,
    /// Questions), and say so.
    pub fn answers_approve_every_call(self) -> bool {
        match self {
            Dialect::Native | Dialect::KagentExtension => false,
            Dialect::Kagent => true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hitl::test_request as request;

    #[test]
    fn interrupt_text_names_each_call_by_what_it_touches() {
        let interrupt = ApprovalInterrupt::new(vec![
            request(
                "call_1",
                "write_file",
                json!({"path": "notes.txt", "content": "hi"}),
            ),
            request("call_2", "delete_file", json!({"path": "old.txt"})),
        ]);
        assert_eq!(
            interrupt.text(),
            "**Approval Required**\n\n- `write_file` (path: notes.txt)\n- `delete_file` (path: old.txt)"
        );
        let message = Message::new("m", crate::model::Role::Agent, interrupt.to_parts());
        assert_eq!(
            ApprovalInterrupt::from_message(&message),
            Some(interrupt.clone())
        );
        let expiring = interrupt.expiring_at(Some("2026-11-21T10:30:00.000Z".into()));
        assert_eq!(expiring.to_data()["expires_at"], "2026-11-21T10:30:00.000Z");
        let message = Message::new("m", crate::model::Role::Agent, expiring.to_parts());
        assert_eq!(ApprovalInterrupt::from_message(&message), Some(expiring));
    }
}
