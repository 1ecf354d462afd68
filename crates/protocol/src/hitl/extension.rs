//! kagent's HITL extension, `https://kagent.dev/extensions/hitl/v1` (docs/wire.md, kagent's HITL
//! extension): its requests read into the same HITL model, and decisions written in its shape.
//!
//! A message uses the extension when it names the URI in `extensions` AND holds a payload under
//! the URI in its `metadata`; both are required, and text is never parsed. A pause is either a
//! `tool_approval_request` (a flat list of tools, each with an opaque approval `id` separate from
//! its tool `call_id`) or an `ask_user_request` (questions, one opaque `id`). The answer is a
//! `tool_approval_response` (one `{id, approved, rejection_reason?}` per approval id) or an
//! `ask_user_response` (`{id, answers}`). A remote subagent's pause comes as `nested`: its tools
//! are the ones decided. [`ActionRequest::approval_id`] keeps each opaque id; cards stay keyed by
//! call id, so they meet the calls' `function_call` parts.

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};

use super::question::{self, Question, ASK_USER};
use super::{resolve, ActionRequest, ApprovalInterrupt, Decision, DecisionError, DecisionKind};
use super::{Dialect, Verdict};
use crate::model::{Message, Metadata, Part, ProtocolVersion, Role};

/// The extension's URI: in a card's `capabilities.extensions`, a message's `extensions`, the
/// metadata key of its payload, and the activation header.
pub const URI: &str = "https://kagent.dev/extensions/hitl/v1";

/// The payload types.
pub const TOOL_APPROVAL_REQUEST: &str = "tool_approval_request";
pub const ASK_USER_REQUEST: &str = "ask_user_request";
pub const TOOL_APPROVAL_RESPONSE: &str = "tool_approval_response";
pub const ASK_USER_RESPONSE: &str = "ask_user_response";

/// The request header that activates extensions: A2A v1.0 names it `A2A-Extensions`, v0.3
/// `X-A2A-Extensions`. Without it, kagent pauses with text only, which no client can answer.
pub fn activation_header(version: ProtocolVersion) -> &'static str {
    match version {
        ProtocolVersion::V0_3 => "X-A2A-Extensions",
        ProtocolVersion::V1_0 => "A2A-Extensions",
    }
}

/// Whether a card's extension URIs declare this extension.
pub fn is_declared(extensions: &[String]) -> bool {
    extensions.iter().any(|uri| uri == URI)
}

/// The extension's payload in a message: only when the message names the URI and its metadata
/// holds an object with a string `type` under it.
fn payload(message: &Message) -> Option<(&str, &Value)> {
    if !is_declared(&message.extensions) {
        return None;
    }
    let payload = message.metadata.as_ref()?.get(URI)?;
    Some((payload.get("type")?.as_str()?, payload))
}

fn text<'a>(value: &'a Value, key: &str) -> Option<&'a str> {
    value.get(key).and_then(Value::as_str)
}

/// One `{id, call_id, name, args}` tool as the held call it stands for: keyed by its call id,
/// with the opaque approval id kept for the answer. `args: null` reads as `{}`.
fn tool_request(tool: &Value, hint: Option<&str>, source: Option<&str>) -> Option<ActionRequest> {
    let args = match tool.get("args") {
        None | Some(Value::Null) => json!({}),
        Some(args @ Value::Object(_)) => args.clone(),
        Some(_) => return None,
    };
    let approval_id = text(tool, "id").filter(|id| !id.is_empty())?;
    Some(ActionRequest {
        id: text(tool, "call_id")
            .filter(|id| !id.is_empty())?
            .to_owned(),
        name: text(tool, "name")
            .filter(|name| !name.is_empty())?
            .to_owned(),
        args,
        description: hint.map(str::to_owned),
        server: source.map(str::to_owned),
        approval_id: Some(approval_id.to_owned()),
        via: None,
        metadata: Default::default(),
    })
}

/// The tools a person decides: `nested.tools` when a subagent paused, else `tools`; `None` if
/// the list is empty or a tool is malformed.
fn visible_tools(payload: &Value, hint: Option<&str>) -> Option<Vec<ActionRequest>> {
    let nested = payload.get("nested").filter(|nested| !nested.is_null());
    let (tools, source) = match nested {
        Some(nested) => (nested.get("tools")?, text(nested, "subagent_name")),
        None => (payload.get("tools")?, None),
    };
    let tools = tools.as_array().filter(|tools| !tools.is_empty())?;
    // A loop rather than a collect into `Option`: smaller in the browser's wasm.
    let mut requests = Vec::with_capacity(tools.len());
    for tool in tools {
        requests.push(tool_request(tool, hint, source)?);
    }
    Some(requests)
}

/// An `ask_user_request` as one question call. Its answer names `id`, or for a subagent's
/// question the child's id in `nested.tools` (its `ask_user` tool, else the first).
fn question_request(payload: &Value) -> Option<ActionRequest> {
    let args = json!({ "questions": payload.get("questions")? });
    Question::list_from_args(&args)?;
    let id = text(payload, "id").filter(|id| !id.is_empty())?;
    let nested = payload.get("nested").filter(|nested| !nested.is_null());
    let (call_id, approval_id, source) = match nested {
        Some(nested) => {
            let tools = nested.get("tools")?.as_array()?;
            let child = tools
                .iter()
                .find(|tool| text(tool, "name") == Some(ASK_USER))
                .or_else(|| tools.first())?;
            (
                text(child, "call_id")?,
                text(child, "id")?,
                text(nested, "subagent_name"),
            )
        }
        None => (id, id, None),
    };
    Some(ActionRequest {
        id: call_id.to_owned(),
        name: ASK_USER.to_owned(),
        args,
        description: None,
        server: source.map(str::to_owned),
        approval_id: Some(approval_id.to_owned()),
        via: None,
        metadata: Default::default(),
    })
}

/// The extension's pause in a message, read as an interrupt in [`Dialect::KagentExtension`];
/// `None` if the message holds no request of the extension, or a malformed one.
pub fn interrupt_from_message(message: &Message) -> Option<ApprovalInterrupt> {
    let (kind, payload) = payload(message)?;
    let action_requests = match kind {
        TOOL_APPROVAL_REQUEST => visible_tools(payload, text(payload, "hint"))?,
        ASK_USER_REQUEST => vec![question_request(payload)?],
        _ => return None,
    };
    Some(ApprovalInterrupt {
        action_requests,
        dialect: Dialect::KagentExtension,
        expires_at: None,
    })
}

/// A pause of one question call is answered with `ask_user_response` (kagent sends a lone
/// `ask_user` as an `ask_user_request`); every other pause with `tool_approval_response`.
fn is_question_pause(requests: &[ActionRequest]) -> bool {
    matches!(requests, [only] if only.questions().is_some())
}

fn approval_id(request: &ActionRequest) -> Result<&str, DecisionError> {
    request
        .approval_id
        .as_deref()
        .ok_or_else(|| DecisionError::NoApprovalId(request.id.clone()))
}

/// The extension's response to `requests` (the pause's calls, as read by
/// [`interrupt_from_message`]) for `decision`, checked by the decision rules first. The
/// extension carries no edited arguments, cannot reject a question, and has no place for
/// answers beside calls to approve: such decisions are refused.
pub fn response_payload(
    requests: &[ActionRequest],
    decision: &Decision,
) -> Result<Value, DecisionError> {
    if let Some(id) = decision.modified_args.keys().next() {
        return Err(DecisionError::EditsNotCarried(id.clone()));
    }
    let resolved = resolve(requests, decision)?;
    if is_question_pause(requests) {
        let [call] = resolved.as_slice() else {
            return Err(DecisionError::NoDecision);
        };
        let answers = match (&call.verdict, &call.answers) {
            (Verdict::Approve, Some(answers)) => answers,
            (Verdict::Approve, None) | (Verdict::Deny, _) => {
                return Err(DecisionError::QuestionNotAnswered(call.request.id.clone()))
            }
        };
        return Ok(json!({
            "type": ASK_USER_RESPONSE,
            "id": approval_id(&call.request)?,
            "answers": question::answers_to_value(answers),
        }));
    }
    let mut approvals = Vec::with_capacity(resolved.len());
    for call in &resolved {
        if call.answers.is_some() {
            return Err(DecisionError::AnswersBesideCalls(call.request.id.clone()));
        }
        let mut approval = Map::new();
        approval.insert("id".to_owned(), json!(approval_id(&call.request)?));
        approval.insert(
            "approved".to_owned(),
            json!(call.verdict == Verdict::Approve),
        );
        if let Some(reason) = &call.reason {
            approval.insert("rejection_reason".to_owned(), json!(reason));
        }
        approvals.push(Value::Object(approval));
    }
    Ok(json!({"type": TOOL_APPROVAL_RESPONSE, "approvals": approvals}))
}

/// The decision message in the extension's shape: the summary as text (for display only), the
/// URI in `extensions` and the response under it in `metadata`.
pub fn decision_message(
    requests: &[ActionRequest],
    decision: &Decision,
    message_id: String,
) -> Result<Message, DecisionError> {
    let payload = response_payload(requests, decision)?;
    let mut message = Message::new(message_id, Role::User, vec![Part::text(decision.summary())]);
    let mut metadata = Metadata::new();
    metadata.insert(URI.to_owned(), payload);
    message.metadata = Some(metadata);
    message.extensions = vec![URI.to_owned()];
    Ok(message)
}

/// The decision an extension response in `message` made on `requests` (the pause it answered),
/// in call ids: `None` if the message holds no response, or one that names an approval id the
/// pause does not have.
pub fn decision_from_message(message: &Message, requests: &[ActionRequest]) -> Option<Decision> {
    let (kind, payload) = payload(message)?;
    let call_of = |approval: &str| {
        requests
            .iter()
            .find(|request| request.approval_id.as_deref() == Some(approval))
            .map(|request| request.id.clone())
    };
    match kind {
        ASK_USER_RESPONSE => {
            call_of(text(payload, "id")?)?;
            let answers = question::answers_from_value(payload.get("answers")?).ok()?;
            Some(Decision::answer(answers))
        }
        TOOL_APPROVAL_RESPONSE => {
            let mut decisions = BTreeMap::new();
            let mut rejection_reasons = BTreeMap::new();
            for approval in payload.get("approvals")?.as_array()? {
                let id = call_of(text(approval, "id")?)?;
                let approved = approval.get("approved")?.as_bool()?;
                let verdict = if approved {
                    Verdict::Approve
                } else {
                    Verdict::Deny
                };
                if let (false, Some(reason)) = (approved, text(approval, "rejection_reason")) {
                    rejection_reasons.insert(id.clone(), reason.to_owned());
                }
                decisions.insert(id, verdict);
            }
            Some(Decision {
                kind: DecisionKind::Batch {
                    decisions,
                    rejection_reasons,
                },
                modified_args: BTreeMap::new(),
                answers: Vec::new(),
            })
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn agent_message(payload: Value) -> Message {
        let mut message = Message::new("m", Role::Agent, vec![Part::text("Approval required")]);
        message.extensions = vec![URI.to_owned()];
        let mut metadata = Metadata::new();
        metadata.insert(URI.to_owned(), payload);
        message.metadata = Some(metadata);
        message
    }

    #[test]
    fn a_request_needs_both_the_extension_and_its_payload() {
        let request = json!({"type": "tool_approval_request",
            "tools": [{"id": "approval-1", "call_id": "call-1", "name": "delete_file", "args": null}]});
        let message = agent_message(request);
        let interrupt = interrupt_from_message(&message).unwrap();
        assert_eq!(interrupt.dialect, Dialect::KagentExtension);
        assert_eq!(interrupt.action_requests[0].id, "call-1");
        assert_eq!(
            interrupt.action_requests[0].approval_id.as_deref(),
            Some("approval-1")
        );
        assert_eq!(interrupt.action_requests[0].args, json!({}));
        let mut undeclared = message.clone();
        undeclared.extensions.clear();
        assert_eq!(interrupt_from_message(&undeclared), None);
        let empty = agent_message(json!({"type": "tool_approval_request", "tools": []}));
        assert_eq!(interrupt_from_message(&empty), None);
        let unknown = agent_message(json!({"type": "tool_approval", "tools": []}));
        assert_eq!(interrupt_from_message(&unknown), None);
    }

    #[test]
    fn a_question_pause_is_answered_and_cannot_be_rejected() {
        let message = agent_message(json!({"type": "ask_user_request", "id": "q-1",
            "questions": [{"question": "Which database?", "choices": ["PostgreSQL", "SQLite"]}]}));
        let requests = interrupt_from_message(&message).unwrap().action_requests;
        let answer = Decision::answer(vec![vec!["SQLite".to_owned()]]);
        assert_eq!(
            response_payload(&requests, &answer),
            Ok(
                json!({"type": "ask_user_response", "id": "q-1", "answers": [{"answer": ["SQLite"]}]})
            )
        );
        assert_eq!(
            response_payload(&requests, &Decision::deny_all(None)),
            Err(DecisionError::QuestionNotAnswered("q-1".to_owned()))
        );
    }
}
