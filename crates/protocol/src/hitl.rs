//! Human-in-the-loop payloads: tool calls and results as DataParts, the approval interrupt, the
//! decision and its validation rules (docs/wire.md: Tool calls and results, Approval interrupt,
//! Decision message, Decision rules).
//!
//! kagent's `adk_request_confirmation` dialect (docs/wire.md, kagent dialect) is read into the
//! same types by [`crate::kagent`]; nothing here depends on which dialect the peer speaks.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use crate::kagent;
use crate::model::{Message, Metadata, Part, TaskState, TaskStatus};

/// Part metadata key naming what a DataPart holds (kagent's convention, which we speak too).
pub const KAGENT_TYPE: &str = "kagent_type";
pub const FUNCTION_CALL: &str = "function_call";
pub const FUNCTION_RESPONSE: &str = "function_response";
pub const INTERRUPT_DATA: &str = "interrupt_data";
/// Event metadata key and value marking a tool-approval interrupt.
pub const INTERRUPT_TYPE: &str = "interrupt_type";
pub const TOOL_APPROVAL: &str = "tool_approval";

/// A tool call the model asked for: a `function_call` DataPart.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    /// The model's own call id.
    pub id: String,
    pub name: String,
    pub args: Value,
}

/// The result of a tool call: a `function_response` DataPart.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolResult {
    pub id: String,
    pub name: String,
    /// `{"isError": true, …}` marks a failed call; `{"status":"rejected","reason":…}` a rejected one.
    pub response: Value,
}

/// One held call in an approval interrupt.
#[derive(Debug, Clone, PartialEq)]
pub struct ActionRequest {
    /// The model's call id (kagent: the ORIGINAL function call's id).
    pub id: String,
    pub name: String,
    pub args: Value,
    /// The tool's description, for the card.
    pub description: Option<String>,
    /// The MCP server (tool source) the call goes to.
    pub server: Option<String>,
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
}

/// A pending batch of calls that wait for a person's decision.
#[derive(Debug, Clone, PartialEq)]
pub struct ApprovalInterrupt {
    pub action_requests: Vec<ActionRequest>,
    pub dialect: Dialect,
}

/// A verdict on one call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Verdict {
    Approve,
    Deny,
}

/// What the person decided, as the decision DataPart says it (before validation).
#[derive(Debug, Clone, PartialEq)]
pub enum DecisionKind {
    ApproveAll,
    DenyAll {
        reason: Option<String>,
    },
    Batch {
        decisions: BTreeMap<String, Verdict>,
        rejection_reasons: BTreeMap<String, String>,
    },
}

/// A decision message's DataPart, parsed.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    pub kind: DecisionKind,
    /// Edited arguments by call id; each must belong to an approved call.
    pub modified_args: BTreeMap<String, Value>,
}

/// A validated decision: one resolved verdict per pending call, in the batch's order.
#[derive(Debug, Clone, PartialEq)]
pub struct ResolvedCall {
    pub request: ActionRequest,
    pub verdict: Verdict,
    /// For a rejected call: the reason the model will read, if any.
    pub reason: Option<String>,
    /// For an approved call with edited arguments: what will run instead of `request.args`.
    pub modified_args: Option<Value>,
}

// ---- tool calls and results as DataParts (docs/wire.md, Tool calls and results) ----

impl ToolCall {
    /// A `function_call` DataPart: `{"id","name","args"}` with `kagent_type: function_call`.
    pub fn to_part(&self) -> Part {
        Part::data(json!({"id": self.id, "name": self.name, "args": self.args}))
            .with_metadata(KAGENT_TYPE, json!(FUNCTION_CALL))
    }

    /// Reads a `function_call` DataPart. kagent's `adk_request_confirmation` calls are not tool
    /// calls (they are its approval requests, read by [`ApprovalInterrupt::from_message`]).
    pub fn from_part(part: &Part) -> Option<ToolCall> {
        if part.metadata_str(KAGENT_TYPE) != Some(FUNCTION_CALL) {
            return None;
        }
        let data = part.as_data()?.as_object()?;
        let name = data.get("name")?.as_str()?;
        if name == kagent::REQUEST_CONFIRMATION {
            return None;
        }
        Some(ToolCall {
            id: data.get("id")?.as_str()?.to_owned(),
            name: name.to_owned(),
            args: data.get("args").cloned().unwrap_or_else(|| json!({})),
        })
    }
}

impl ToolResult {
    /// A `function_response` DataPart: `{"id","name","response"}` with `kagent_type: function_response`.
    pub fn to_part(&self) -> Part {
        Part::data(json!({"id": self.id, "name": self.name, "response": self.response}))
            .with_metadata(KAGENT_TYPE, json!(FUNCTION_RESPONSE))
    }

    pub fn from_part(part: &Part) -> Option<ToolResult> {
        if part.metadata_str(KAGENT_TYPE) != Some(FUNCTION_RESPONSE) {
            return None;
        }
        let data = part.as_data()?.as_object()?;
        let name = data.get("name")?.as_str()?;
        if name == kagent::REQUEST_CONFIRMATION {
            return None;
        }
        Some(ToolResult {
            id: data.get("id")?.as_str()?.to_owned(),
            name: name.to_owned(),
            response: data.get("response").cloned().unwrap_or(Value::Null),
        })
    }

    /// The result of a call the person rejected: `{"status":"rejected","reason":…}`
    /// (docs/wire.md, Resume).
    pub fn rejected(
        id: impl Into<String>,
        name: impl Into<String>,
        reason: Option<&str>,
    ) -> ToolResult {
        let mut response = json!({"status": REJECTED});
        if let (Some(reason), Some(object)) = (reason, response.as_object_mut()) {
            object.insert("reason".to_owned(), json!(reason));
        }
        ToolResult {
            id: id.into(),
            name: name.into(),
            response,
        }
    }

    /// `response.isError: true` marks a failed call (MCP's convention, which kagent keeps).
    pub fn is_error(&self) -> bool {
        self.response.get("isError").and_then(Value::as_bool) == Some(true)
    }

    /// A rejected call, in either dialect (kagent writes the rejection as a sentence).
    pub fn is_rejected(&self) -> bool {
        self.response.get("status").and_then(Value::as_str) == Some(REJECTED)
            || kagent::is_rejection(&self.response)
    }

    /// Why the person rejected the call, if the result says.
    pub fn rejection_reason(&self) -> Option<&str> {
        if self.response.get("status").and_then(Value::as_str) == Some(REJECTED) {
            return self.response.get("reason").and_then(Value::as_str);
        }
        kagent::rejection_reason(&self.response)
    }
}

const REJECTED: &str = "rejected";

// ---- the approval interrupt (docs/wire.md, Approval interrupt) ----

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

impl ActionRequest {
    pub fn to_value(&self) -> Value {
        let mut value = json!({"id": self.id, "name": self.name, "args": self.args});
        if let Some(object) = value.as_object_mut() {
            if let Some(description) = &self.description {
                object.insert("description".to_owned(), json!(description));
            }
            if let Some(server) = &self.server {
                object.insert("server".to_owned(), json!(server));
            }
        }
        value
    }

    /// Reads one native action request; `None` without a string `id` and `name`.
    pub fn from_value(value: &Value) -> Option<ActionRequest> {
        let text = |key: &str| value.get(key).and_then(Value::as_str).map(str::to_owned);
        Some(ActionRequest {
            id: text("id")?,
            name: text("name")?,
            args: value.get("args").cloned().unwrap_or_else(|| json!({})),
            description: text("description"),
            server: text("server"),
        })
    }

    /// One line of the interrupt's text: "- `write_file` (path: notes.txt)".
    fn summary_line(&self) -> String {
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
        }
    }

    /// The native `interrupt_data` payload: `{"interrupt_type":"tool_approval","action_requests":[…]}`.
    pub fn to_data(&self) -> Value {
        json!({
            INTERRUPT_TYPE: TOOL_APPROVAL,
            "action_requests": self.action_requests.iter().map(ActionRequest::to_value).collect::<Vec<_>>(),
        })
    }

    /// The human-readable text of the interrupt message.
    pub fn text(&self) -> String {
        let lines: Vec<String> = self
            .action_requests
            .iter()
            .map(ActionRequest::summary_line)
            .collect();
        format!("**Approval Required**\n\n{}", lines.join("\n"))
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

    /// Reads an interrupt from a message in either dialect: the native `interrupt_data`
    /// DataPart, else kagent's `adk_request_confirmation` calls (docs/wire.md, kagent dialect;
    /// ids are the ORIGINAL call ids). `None` if the message holds no interrupt.
    pub fn from_message(message: &Message) -> Option<ApprovalInterrupt> {
        let native = message.parts.iter().find_map(|part| {
            let data = part.as_data()?;
            (data.get(INTERRUPT_TYPE)?.as_str()? == TOOL_APPROVAL).then_some(data)
        });
        match native {
            Some(data) => {
                let requests = data.get("action_requests")?.as_array()?;
                Some(ApprovalInterrupt::new(
                    requests
                        .iter()
                        .filter_map(ActionRequest::from_value)
                        .collect(),
                ))
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
            Dialect::Kagent => false,
        }
    }
}

// ---- the decision (docs/wire.md, Decision message and Decision rules) ----

/// Why a decision was refused. Each message names the problem; the server sends it as the
/// `-32602` error message, so it must make sense to the person who clicked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecisionError {
    #[error("a decision must be a JSON object")]
    NotAnObject,
    #[error("decision_type must be a string")]
    TypeNotAString,
    #[error(
        "unknown decision_type \"{0}\" (expected \"approve\", \"deny\", \"reject\" or \"batch\")"
    )]
    UnknownType(String),
    #[error("{0} must be a string")]
    NotAString(&'static str),
    #[error("a batch decision needs a decisions object keyed by call id")]
    MissingDecisions,
    #[error("decision for {id} must be \"approve\" or \"deny\", not {value}")]
    BadVerdict { id: String, value: String },
    #[error("rejection_reasons must be an object of strings keyed by call id")]
    BadRejectionReasons,
    #[error("modified_args must be an object keyed by call id")]
    BadModifiedArgs,
    #[error("batch misses pending call {0}")]
    BatchMissesCall(String),
    #[error("batch names {0}, which is not pending")]
    BatchNamesUnknownCall(String),
    #[error("rejection reason for {0}, which is not pending")]
    ReasonForUnknownCall(String),
    #[error("rejection reason for {0}, which is not rejected")]
    ReasonForApprovedCall(String),
    #[error("modified_args for {0}, which is not pending")]
    ModifiedArgsForUnknownCall(String),
    #[error("modified_args for {0}, which is not approved")]
    ModifiedArgsForUnapprovedCall(String),
    #[error("modified_args for {0} must be an object")]
    ModifiedArgsNotAnObject(String),
    #[error("no decision: say approve or reject")]
    NoDecision,
}

const DECISION_TYPE: &str = "decision_type";

/// Words that approve when a paused task gets plain text (docs/wire.md, Text decisions).
/// Approval must be clear, so the text may hold only these and a few polite words.
const APPROVE_WORDS: [&str; 5] = ["approve", "approved", "yes", "proceed", "continue"];
const POLITE_WORDS: [&str; 8] = [
    "please", "ok", "okay", "go", "ahead", "sure", "thanks", "all",
];
/// Words that reject; any of them (without an approve word) rejects, with the text as reason.
const REJECT_WORDS: [&str; 5] = ["deny", "reject", "no", "cancel", "stop"];

impl Verdict {
    fn from_value(id: &str, value: &Value) -> Result<Verdict, DecisionError> {
        match value.as_str() {
            Some("approve") => Ok(Verdict::Approve),
            Some("deny" | "reject") => Ok(Verdict::Deny),
            Some(_) | None => Err(DecisionError::BadVerdict {
                id: id.to_owned(),
                value: value.to_string(),
            }),
        }
    }
}

fn optional_string(
    object: &serde_json::Map<String, Value>,
    key: &'static str,
) -> Result<Option<String>, DecisionError> {
    match object.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) if text.trim().is_empty() => Ok(None),
        Some(Value::String(text)) => Ok(Some(text.clone())),
        Some(_) => Err(DecisionError::NotAString(key)),
    }
}

impl Decision {
    pub fn approve_all() -> Decision {
        Decision {
            kind: DecisionKind::ApproveAll,
            modified_args: BTreeMap::new(),
        }
    }

    pub fn deny_all(reason: Option<String>) -> Decision {
        Decision {
            kind: DecisionKind::DenyAll { reason },
            modified_args: BTreeMap::new(),
        }
    }

    /// Parses a decision DataPart's `data`, every variant and synonym of docs/wire.md (Decision
    /// message): `reject` = `deny`, top-level `rejection_reason` = `reason`.
    pub fn from_data(data: &Value) -> Result<Decision, DecisionError> {
        let object = data.as_object().ok_or(DecisionError::NotAnObject)?;
        let decision_type = match object.get(DECISION_TYPE) {
            Some(Value::String(name)) => name.as_str(),
            Some(_) => return Err(DecisionError::TypeNotAString),
            None => return Err(DecisionError::NoDecision),
        };
        let kind = match decision_type {
            "approve" => DecisionKind::ApproveAll,
            "deny" | "reject" => {
                let reason = match optional_string(object, "reason")? {
                    Some(reason) => Some(reason),
                    None => optional_string(object, "rejection_reason")?,
                };
                DecisionKind::DenyAll { reason }
            }
            "batch" => {
                let decisions = object
                    .get("decisions")
                    .and_then(Value::as_object)
                    .ok_or(DecisionError::MissingDecisions)?
                    .iter()
                    .map(|(id, verdict)| Ok((id.clone(), Verdict::from_value(id, verdict)?)))
                    .collect::<Result<BTreeMap<_, _>, DecisionError>>()?;
                let rejection_reasons = match object.get("rejection_reasons") {
                    None | Some(Value::Null) => BTreeMap::new(),
                    Some(Value::Object(reasons)) => reasons
                        .iter()
                        .map(|(id, reason)| {
                            let reason =
                                reason.as_str().ok_or(DecisionError::BadRejectionReasons)?;
                            Ok((id.clone(), reason.to_owned()))
                        })
                        .collect::<Result<BTreeMap<_, _>, DecisionError>>()?,
                    Some(_) => return Err(DecisionError::BadRejectionReasons),
                };
                DecisionKind::Batch {
                    decisions,
                    rejection_reasons,
                }
            }
            other => return Err(DecisionError::UnknownType(other.to_owned())),
        };
        let modified_args = match object.get("modified_args") {
            None | Some(Value::Null) => BTreeMap::new(),
            Some(Value::Object(args)) => args.clone().into_iter().collect(),
            Some(_) => return Err(DecisionError::BadModifiedArgs),
        };
        Ok(Decision {
            kind,
            modified_args,
        })
    }

    /// The decision in a message: its first DataPart with a `decision_type`; `None` if it has none.
    pub fn from_message(message: &Message) -> Result<Option<Decision>, DecisionError> {
        let data = message
            .parts
            .iter()
            .filter_map(Part::as_data)
            .find(|data| data.get(DECISION_TYPE).is_some());
        data.map(Decision::from_data).transpose()
    }

    /// The text fallback (docs/wire.md, Text decisions): approve only when the text says nothing
    /// but approval ("yes", "Approved.", "yes, please proceed"); reject when it holds a reject
    /// word and no approve word, with the whole text as the reason the model reads. Anything
    /// else is no decision.
    pub fn from_text(text: &str) -> Option<Decision> {
        let words: Vec<String> = text
            .split(|c: char| !c.is_alphanumeric())
            .filter(|word| !word.is_empty())
            .map(str::to_lowercase)
            .collect();
        let approves = words
            .iter()
            .any(|word| APPROVE_WORDS.contains(&word.as_str()));
        let rejects = words
            .iter()
            .any(|word| REJECT_WORDS.contains(&word.as_str()));
        let only_approval = words.iter().all(|word| {
            APPROVE_WORDS.contains(&word.as_str()) || POLITE_WORDS.contains(&word.as_str())
        });
        match (approves, rejects) {
            (true, false) if only_approval => Some(Decision::approve_all()),
            (false, true) => Some(Decision::deny_all(Some(text.trim().to_owned()))),
            (true, false) | (true, true) | (false, false) => None,
        }
    }

    /// The message's decision: its DataPart, else its text; an error when neither decides.
    pub fn from_message_or_text(message: &Message) -> Result<Decision, DecisionError> {
        match Decision::from_message(message)? {
            Some(decision) => Ok(decision),
            None => Decision::from_text(&message.text()).ok_or(DecisionError::NoDecision),
        }
    }

    /// The decision DataPart's `data` in a dialect. kagent's terms: `reject` (it does not know
    /// `deny`), `rejection_reason`, and batch keys that are the ORIGINAL call ids (the ids of
    /// [`ActionRequest`] already are).
    pub fn to_data(&self, dialect: Dialect) -> Value {
        let (deny, reason_key) = match dialect {
            Dialect::Native => ("deny", "reason"),
            Dialect::Kagent => ("reject", "rejection_reason"),
        };
        let verdict_name = |verdict: &Verdict| match verdict {
            Verdict::Approve => "approve",
            Verdict::Deny => deny,
        };
        let mut data = serde_json::Map::new();
        match &self.kind {
            DecisionKind::ApproveAll => {
                data.insert(DECISION_TYPE.to_owned(), json!("approve"));
            }
            DecisionKind::DenyAll { reason } => {
                data.insert(DECISION_TYPE.to_owned(), json!(deny));
                if let Some(reason) = reason {
                    data.insert(reason_key.to_owned(), json!(reason));
                }
            }
            DecisionKind::Batch {
                decisions,
                rejection_reasons,
            } => {
                data.insert(DECISION_TYPE.to_owned(), json!("batch"));
                let decisions: serde_json::Map<String, Value> = decisions
                    .iter()
                    .map(|(id, verdict)| (id.clone(), json!(verdict_name(verdict))))
                    .collect();
                data.insert("decisions".to_owned(), Value::Object(decisions));
                if !rejection_reasons.is_empty() {
                    data.insert("rejection_reasons".to_owned(), json!(rejection_reasons));
                }
            }
        }
        if !self.modified_args.is_empty() {
            data.insert("modified_args".to_owned(), json!(self.modified_args));
        }
        Value::Object(data)
    }

    /// The decision in words, for the TextPart beside the DataPart, and for logs.
    pub fn summary(&self) -> String {
        let verdict = match &self.kind {
            DecisionKind::ApproveAll => "Approved".to_owned(),
            DecisionKind::DenyAll {
                reason: Some(reason),
            } => format!("Rejected: {reason}"),
            DecisionKind::DenyAll { reason: None } => "Rejected".to_owned(),
            DecisionKind::Batch { decisions, .. } => {
                let approved = decisions
                    .values()
                    .filter(|verdict| **verdict == Verdict::Approve)
                    .count();
                let rejected = decisions.len() - approved;
                format!("Batch decision: {approved} approved, {rejected} rejected")
            }
        };
        if self.modified_args.is_empty() {
            verdict
        } else {
            let ids: Vec<&str> = self.modified_args.keys().map(String::as_str).collect();
            format!("{verdict} (edited arguments: {})", ids.join(", "))
        }
    }

    /// The parts of a decision message: the decision DataPart, then its summary as text.
    pub fn to_parts(&self, dialect: Dialect) -> Vec<Part> {
        vec![
            Part::data(self.to_data(dialect)),
            Part::text(self.summary()),
        ]
    }
}

/// The decision rules (docs/wire.md, Decision rules) as a pure function: one [`ResolvedCall`]
/// per pending request, in order, or the first rule the decision breaks. Nothing may execute
/// unless this returns `Ok`.
pub fn resolve(
    pending: &[ActionRequest],
    decision: &Decision,
) -> Result<Vec<ResolvedCall>, DecisionError> {
    let is_pending = |id: &str| pending.iter().any(|request| request.id == id);
    let verdicts: Vec<(Verdict, Option<String>)> = match &decision.kind {
        DecisionKind::ApproveAll => pending.iter().map(|_| (Verdict::Approve, None)).collect(),
        DecisionKind::DenyAll { reason } => pending
            .iter()
            .map(|_| (Verdict::Deny, reason.clone()))
            .collect(),
        DecisionKind::Batch {
            decisions,
            rejection_reasons,
        } => {
            if let Some(id) = decisions.keys().find(|id| !is_pending(id)) {
                return Err(DecisionError::BatchNamesUnknownCall(id.clone()));
            }
            let verdicts = pending
                .iter()
                .map(|request| {
                    let verdict = *decisions
                        .get(&request.id)
                        .ok_or_else(|| DecisionError::BatchMissesCall(request.id.clone()))?;
                    Ok((verdict, rejection_reasons.get(&request.id).cloned()))
                })
                .collect::<Result<Vec<_>, DecisionError>>()?;
            for id in rejection_reasons.keys() {
                match decisions.get(id) {
                    None => return Err(DecisionError::ReasonForUnknownCall(id.clone())),
                    Some(Verdict::Approve) => {
                        return Err(DecisionError::ReasonForApprovedCall(id.clone()))
                    }
                    Some(Verdict::Deny) => {}
                }
            }
            verdicts
        }
    };
    for (id, args) in &decision.modified_args {
        let index = pending
            .iter()
            .position(|request| &request.id == id)
            .ok_or_else(|| DecisionError::ModifiedArgsForUnknownCall(id.clone()))?;
        match verdicts.get(index) {
            Some((Verdict::Approve, _)) => {}
            Some((Verdict::Deny, _)) | None => {
                return Err(DecisionError::ModifiedArgsForUnapprovedCall(id.clone()))
            }
        }
        if !args.is_object() {
            return Err(DecisionError::ModifiedArgsNotAnObject(id.clone()));
        }
    }
    Ok(pending
        .iter()
        .zip(verdicts)
        .map(|(request, (verdict, reason))| ResolvedCall {
            request: request.clone(),
            verdict,
            reason: match verdict {
                Verdict::Approve => None,
                Verdict::Deny => reason,
            },
            modified_args: match verdict {
                Verdict::Approve => decision.modified_args.get(&request.id).cloned(),
                Verdict::Deny => None,
            },
        })
        .collect())
}

impl ResolvedCall {
    /// The arguments the call runs with: the edited ones where given.
    pub fn effective_args(&self) -> &Value {
        self.modified_args.as_ref().unwrap_or(&self.request.args)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(id: &str, name: &str, args: Value) -> ActionRequest {
        ActionRequest {
            id: id.to_owned(),
            name: name.to_owned(),
            args,
            description: None,
            server: None,
        }
    }

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
        assert_eq!(ApprovalInterrupt::from_message(&message), Some(interrupt));
    }

    #[test]
    fn resolve_applies_a_batch_in_pending_order() {
        let pending = [
            request("call_1", "write_file", json!({"path": "a"})),
            request("call_2", "delete_file", json!({"path": "b"})),
        ];
        let decision = Decision::from_data(&json!({
            "decision_type": "batch",
            "decisions": {"call_2": "reject", "call_1": "approve"},
            "rejection_reasons": {"call_2": "keep it"},
            "modified_args": {"call_1": {"path": "safe"}},
        }))
        .unwrap();
        let resolved = resolve(&pending, &decision).unwrap();
        assert_eq!(resolved[0].verdict, Verdict::Approve);
        assert_eq!(resolved[0].effective_args(), &json!({"path": "safe"}));
        assert_eq!(resolved[1].verdict, Verdict::Deny);
        assert_eq!(resolved[1].reason.as_deref(), Some("keep it"));
    }
}
