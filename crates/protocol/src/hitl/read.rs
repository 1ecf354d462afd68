//! A person's decision read from a message to a paused task, whichever way it is said: a
//! decision DataPart, kagent's HITL extension response, or text (docs/wire.md, Decision
//! message, Text decisions, kagent's HITL extension). Every channel that carries a message reads
//! it here, so a local chat, a relayed one and the UI agree on what a message decides.

use super::{extension, ActionRequest, Decision, DecisionError};
use crate::model::Message;

/// Where in a message its decision was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DecisionSource {
    /// A decision DataPart (`decision_type`), in either dialect.
    DataPart,
    /// A response of kagent's HITL extension in the message's metadata, by approval id.
    Extension,
    /// Approve or reject words, or any other text as a rejection with itself as the reason.
    Text,
}

impl Decision {
    /// The decision a message makes on the pause of `requests` without reading its text: its
    /// decision DataPart (an error if that part is malformed), else a response of kagent's
    /// HITL extension naming the pause's approval ids. `None` when neither is there.
    pub fn from_message_parts(
        message: &Message,
        requests: &[ActionRequest],
    ) -> Result<Option<(Decision, DecisionSource)>, DecisionError> {
        if let Some(decision) = Decision::from_message(message)? {
            return Ok(Some((decision, DecisionSource::DataPart)));
        }
        Ok(extension::decision_from_message(message, requests)
            .map(|decision| (decision, DecisionSource::Extension)))
    }

    /// The decision a message makes on the pause of `requests`: as
    /// [`Decision::from_message_parts`], else its text read as a reply
    /// ([`Decision::from_reply`]); [`DecisionError::NoDecision`] when nothing decides.
    pub fn from_message_on(
        message: &Message,
        requests: &[ActionRequest],
    ) -> Result<(Decision, DecisionSource), DecisionError> {
        if let Some(found) = Decision::from_message_parts(message, requests)? {
            return Ok(found);
        }
        Decision::from_reply(&message.text())
            .map(|decision| (decision, DecisionSource::Text))
            .ok_or(DecisionError::NoDecision)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::hitl::extension::URI;
    use crate::model::{Metadata, Part, Role};

    fn user(parts: Vec<Part>) -> Message {
        Message::new("m", Role::User, parts)
    }

    /// A pending call of kagent's HITL extension, known by its approval id.
    fn extension_request() -> ActionRequest {
        ActionRequest {
            approval_id: Some("approval-1".to_owned()),
            ..crate::hitl::test_request("call-1", "delete_file", json!({}))
        }
    }

    #[test]
    fn a_data_part_wins_over_the_text_beside_it() {
        let message = user(vec![
            Part::data(json!({"decision_type": "approve"})),
            Part::text("no, stop"),
        ]);
        assert_eq!(
            Decision::from_message_on(&message, &[]),
            Ok((Decision::approve_all(), DecisionSource::DataPart))
        );
        let malformed = user(vec![Part::data(json!({"decision_type": 5}))]);
        assert_eq!(
            Decision::from_message_on(&malformed, &[]),
            Err(DecisionError::TypeNotAString)
        );
    }

    #[test]
    fn an_extension_response_decides_only_the_pause_it_names() {
        let mut message = user(vec![Part::text("Rejected")]);
        message.extensions = vec![URI.to_owned()];
        let mut metadata = Metadata::new();
        metadata.insert(
            URI.to_owned(),
            json!({"type": "tool_approval_response",
                   "approvals": [{"id": "approval-1", "approved": false}]}),
        );
        message.metadata = Some(metadata);
        let (decision, source) =
            Decision::from_message_on(&message, &[extension_request()]).unwrap();
        assert_eq!(source, DecisionSource::Extension);
        assert_eq!(decision.summary(), "Batch decision: 0 approved, 1 rejected");
        // Without the pause's approval ids the response is not read; its text still is.
        assert_eq!(Decision::from_message_parts(&message, &[]), Ok(None));
        assert_eq!(
            Decision::from_message_on(&message, &[]).map(|(_, source)| source),
            Ok(DecisionSource::Text)
        );
    }

    #[test]
    fn text_is_read_last_and_polite_words_alone_decide_nothing() {
        let (decision, source) =
            Decision::from_message_on(&user(vec![Part::text("yes")]), &[]).unwrap();
        assert_eq!(
            (decision, source),
            (Decision::approve_all(), DecisionSource::Text)
        );
        assert_eq!(
            Decision::from_message_on(&user(vec![Part::text("ok")]), &[]),
            Err(DecisionError::NoDecision)
        );
    }
}
