//! kagent 0.10.x's approval dialect (docs/wire.md, kagent dialect), read into the same HITL model.
//!
//! kagent pauses with one `adk_request_confirmation` call per held tool call, wrapping the
//! ORIGINAL call (`args.originalFunctionCall`); decisions name those original ids. Its rejected
//! calls come back as a sentence ("Tool call was rejected by user. Reason: …").
//! Writing decisions in kagent's terms is [`super::Decision::to_data`] with
//! [`Dialect::Kagent`]. kagent's token counts and partial chunks are read here too.

use serde_json::{json, Value};

use super::keys::{FUNCTION_CALL, KAGENT_TYPE, PARTIAL, USAGE_METADATA};
use super::{ActionRequest, ApprovalInterrupt, Dialect};
use crate::model::{Message, Metadata, Part};

/// The name of ADK's confirmation call.
pub const REQUEST_CONFIRMATION: &str = "adk_request_confirmation";

/// The keys of the token counts inside [`USAGE_METADATA`].
const PROMPT_TOKENS: &str = "promptTokenCount";
const COMPLETION_TOKENS: &str = "candidatesTokenCount";
const TOTAL_TOKENS: &str = "totalTokenCount";

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
        approval_id: None,
        via: None,
        metadata: Default::default(),
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
        expires_at: None,
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

/// A turn's token counts, as kagent reports them under [`USAGE_METADATA`] on the final event of
/// a turn (docs/wire.md, A turn on the wire). Signoff's server writes the same.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TokenUsage {
    pub prompt: u64,
    pub completion: u64,
    pub total: u64,
}

impl TokenUsage {
    /// Counts whose total is their sum.
    pub fn new(prompt: u64, completion: u64) -> Self {
        TokenUsage {
            prompt,
            completion,
            total: prompt + completion,
        }
    }

    /// Event metadata holding only these counts.
    pub fn to_metadata(&self) -> Metadata {
        let mut metadata = Metadata::new();
        metadata.insert(
            USAGE_METADATA.to_owned(),
            json!({
                PROMPT_TOKENS: self.prompt,
                COMPLETION_TOKENS: self.completion,
                TOTAL_TOKENS: self.total,
            }),
        );
        metadata
    }

    /// The counts in event metadata, if it has a usage entry; a count it lacks reads as 0.
    pub fn from_metadata(metadata: Option<&Metadata>) -> Option<TokenUsage> {
        let usage = metadata?.get(USAGE_METADATA)?;
        let count = |key: &str| usage.get(key).and_then(Value::as_u64).unwrap_or(0);
        Some(TokenUsage {
            prompt: count(PROMPT_TOKENS),
            completion: count(COMPLETION_TOKENS),
            total: count(TOTAL_TOKENS),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn token_usage_round_trips_through_metadata() {
        let usage = TokenUsage::new(12, 30);
        let metadata = usage.to_metadata();
        assert_eq!(
            metadata.get(USAGE_METADATA),
            Some(
                &json!({"promptTokenCount": 12, "candidatesTokenCount": 30, "totalTokenCount": 42})
            )
        );
        assert_eq!(TokenUsage::from_metadata(Some(&metadata)), Some(usage));
        assert_eq!(TokenUsage::from_metadata(Some(&Metadata::new())), None);
    }
}
