//! kagent 0.10.x's approval dialect (docs/wire.md, kagent dialect), read into the same HITL model.
//!
//! kagent pauses with one `adk_request_confirmation` call per held tool call, wrapping the
//! ORIGINAL call (`args.originalFunctionCall`); decisions name those original ids. Its rejected
//! calls come back as a sentence ("Tool call was rejected by user. Reason: …").
//! Writing decisions in kagent's terms is [`crate::hitl::Decision::to_data`] with
//! [`Dialect::Kagent`].

use serde_json::Value;

use crate::hitl::{ActionRequest, ApprovalInterrupt, Dialect, FUNCTION_CALL, KAGENT_TYPE};
use crate::model::{Message, Metadata, Part};

/// The name of ADK's confirmation call.
pub const REQUEST_CONFIRMATION: &str = "adk_request_confirmation";
/// Part metadata kagent sets on calls that wait for something outside the model.
pub const IS_LONG_RUNNING: &str = "kagent_is_long_running";
/// Event and message metadata marking a partial (token-streamed) chunk; the full text follows.
pub const PARTIAL: &str = "kagent_adk_partial";
/// Event metadata with token counts (`promptTokenCount`, `candidatesTokenCount`, `totalTokenCount`).
pub const USAGE_METADATA: &str = "kagent_usage_metadata";

/// How kagent 0.10.4 words a rejected call's result, and where its reason starts.
const REJECTION_PREFIX: &str = "Tool call was rejected by user.";
const REASON_MARKER: &str = "Reason: ";

/// Whether a part is one of kagent's confirmation requests (not a tool call to show as such).
pub fn is_confirmation_part(part: &Part) -> bool {
    part.metadata_str(KAGENT_TYPE) == Some(FUNCTION_CALL)
        && part
            .as_data()
            .and_then(|data| data.get("name"))
            .and_then(Value::as_str)
            == Some(REQUEST_CONFIRMATION)
}

/// Reads one `adk_request_confirmation` part as the held call it wraps: the ORIGINAL call's
/// id, name and args. The confirmation's hint becomes the description.
pub fn action_request_from_part(part: &Part) -> Option<ActionRequest> {
    if !is_confirmation_part(part) {
        return None;
    }
    let args = part.as_data()?.get("args")?;
    let original = args.get("originalFunctionCall")?;
    let text = |value: &Value, key: &str| value.get(key).and_then(Value::as_str).map(str::to_owned);
    Some(ActionRequest {
        id: text(original, "id")?,
        name: text(original, "name")?,
        args: original
            .get("args")
            .cloned()
            .unwrap_or_else(|| Value::Object(Default::default())),
        description: args
            .get("toolConfirmation")
            .and_then(|confirmation| text(confirmation, "hint")),
        server: None,
    })
}

/// kagent's interrupt: every confirmation request in the message, in order; `None` if none.
pub fn interrupt_from_message(message: &Message) -> Option<ApprovalInterrupt> {
    let action_requests: Vec<ActionRequest> = message
        .parts
        .iter()
        .filter_map(action_request_from_part)
        .collect();
    if action_requests.is_empty() {
        return None;
    }
    Some(ApprovalInterrupt {
        action_requests,
        dialect: Dialect::Kagent,
    })
}

/// kagent's result sentence for a rejected call, if `response` is one.
fn rejection_sentence(response: &Value) -> Option<&str> {
    let result = response.get("result")?.as_str()?;
    result.starts_with(REJECTION_PREFIX).then_some(result)
}

/// Whether a `function_response`'s `response` is kagent's "rejected by user" result.
pub fn is_rejection(response: &Value) -> bool {
    rejection_sentence(response).is_some()
}

/// The person's reason inside kagent's rejection sentence, if it gave one.
pub fn rejection_reason(response: &Value) -> Option<&str> {
    let sentence = rejection_sentence(response)?;
    let reason = sentence[REJECTION_PREFIX.len()..]
        .trim_start()
        .strip_prefix(REASON_MARKER)?
        .trim();
    (!reason.is_empty()).then_some(reason)
}

/// Whether event or message metadata marks a partial, token-streamed chunk.
pub fn is_partial(metadata: Option<&Metadata>) -> bool {
    metadata
        .and_then(|metadata| metadata.get(PARTIAL))
        .and_then(Value::as_bool)
        == Some(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn rejection_reason_is_read_from_the_sentence() {
        let check = |response: Value, rejected: bool, reason: Option<&str>| {
            assert_eq!(is_rejection(&response), rejected, "{response}");
            assert_eq!(rejection_reason(&response), reason, "{response}");
        };
        check(
            json!({"result": "Tool call was rejected by user. Reason: keep it"}),
            true,
            Some("keep it"),
        );
        check(
            json!({"result": "Tool call was rejected by user."}),
            true,
            None,
        );
        check(json!({"result": "wrote 3 bytes"}), false, None);
        check(json!({"isError": false}), false, None);
    }
}
