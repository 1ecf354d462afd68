//! Pure helpers over a task's transcript (the conversation as the model sees it).

use std::collections::HashSet;

use serde_json::Value;

use crate::agent::model::{ChatMessage, ModelToolCall};
use crate::agent::tools::error_result;
use crate::store::TaskRow;

use super::{AgentError, Result};

/// Reads a transcript back; a corrupt one is an internal error, not a panic.
pub(super) fn transcript_of(row: &TaskRow) -> Result<Vec<ChatMessage>> {
    serde_json::from_str(&row.transcript)
        .map_err(|err| AgentError::Internal(format!("transcript of {}: {err}", row.id)))
}

pub(super) fn transcript_value(transcript: &[ChatMessage]) -> Result<String> {
    serde_json::to_string(transcript).map_err(|err| AgentError::Internal(err.to_string()))
}

/// The calls of the last assistant turn that have no result yet.
pub(super) fn open_calls(transcript: &[ChatMessage]) -> Vec<ModelToolCall> {
    let Some(turn) = transcript
        .iter()
        .rposition(|message| matches!(message, ChatMessage::Assistant { .. }))
    else {
        return Vec::new();
    };
    let ChatMessage::Assistant { tool_calls, .. } = &transcript[turn] else {
        return Vec::new();
    };
    let answered: HashSet<&str> = transcript[turn + 1..]
        .iter()
        .filter_map(|message| match message {
            ChatMessage::Tool { call_id, .. } => Some(call_id.as_str()),
            ChatMessage::User { .. } | ChatMessage::Assistant { .. } => None,
        })
        .collect();
    tool_calls
        .iter()
        .filter(|call| !answered.contains(call.id.as_str()))
        .cloned()
        .collect()
}

/// How many tool calls the model made in `transcript`: the server's call ids number on from it.
pub(super) fn calls_in(transcript: &[ChatMessage]) -> usize {
    transcript
        .iter()
        .map(|message| match message {
            ChatMessage::Assistant { tool_calls, .. } => tool_calls.len(),
            ChatMessage::User { .. } | ChatMessage::Tool { .. } => 0,
        })
        .sum()
}

/// An earlier task's transcript, made safe to show a model: calls that never got a result
/// (a canceled task) get one saying so.
pub(super) fn closed(mut transcript: Vec<ChatMessage>) -> Vec<ChatMessage> {
    let open = open_calls(&transcript);
    for call in open {
        transcript.push(ChatMessage::Tool {
            call_id: call.id,
            name: call.name,
            response: error_result("not run: the task ended before this call ran"),
            edited_from: None,
            reply_message_id: None,
        });
    }
    transcript
}

/// Replaces the arguments of one call of the last assistant turn (edited arguments are what ran).
pub(super) fn set_call_args(transcript: &mut [ChatMessage], call_id: &str, args: &Value) {
    for message in transcript.iter_mut().rev() {
        if let ChatMessage::Assistant { tool_calls, .. } = message {
            if let Some(call) = tool_calls.iter_mut().find(|call| call.id == call_id) {
                call.args = args.clone();
            }
            return;
        }
    }
}

/// A new chat's title: the first line of its first message.
pub(super) fn chat_title(text: &str) -> String {
    let line = text.lines().next().unwrap_or("").trim();
    if line.is_empty() {
        "New chat".to_owned()
    } else {
        line.chars().take(80).collect()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn call(id: &str, name: &str, args: Value) -> ModelToolCall {
        ModelToolCall {
            id: id.into(),
            model_id: None,
            name: name.into(),
            args,
        }
    }

    fn result(id: &str) -> ChatMessage {
        ChatMessage::Tool {
            call_id: id.into(),
            name: "read_file".into(),
            response: json!({"content": []}),
            edited_from: None,
            reply_message_id: None,
        }
    }

    fn turn(calls: Vec<ModelToolCall>) -> ChatMessage {
        ChatMessage::Assistant {
            text: String::new(),
            tool_calls: calls,
        }
    }

    #[test]
    fn open_calls_are_the_last_turns_calls_without_a_result() {
        let transcript = vec![
            ChatMessage::User {
                text: "go".into(),
                message_id: None,
                asked: None,
            },
            turn(vec![call("a", "read_file", json!({}))]),
            result("a"),
            turn(vec![
                call("b", "read_file", json!({})),
                call("c", "write_file", json!({})),
            ]),
            result("b"),
        ];
        let open: Vec<String> = open_calls(&transcript).into_iter().map(|c| c.id).collect();
        assert_eq!(open, ["c"]);
        assert!(open_calls(&[ChatMessage::User {
            text: "hi".into(),
            message_id: None,
            asked: None,
        }])
        .is_empty());
        assert!(open_calls(&[]).is_empty());
    }

    #[test]
    fn a_closed_transcript_answers_every_open_call() {
        let transcript = vec![
            ChatMessage::User {
                text: "go".into(),
                message_id: None,
                asked: None,
            },
            turn(vec![call("a", "write_file", json!({}))]),
        ];
        let closed = closed(transcript);
        assert!(open_calls(&closed).is_empty());
        let ChatMessage::Tool { response, .. } = closed.last().unwrap() else {
            panic!("a result was added")
        };
        assert_eq!(response["isError"], true);
    }

    #[test]
    fn edited_arguments_replace_the_last_turns_call_only() {
        let mut transcript = vec![
            turn(vec![call("a", "write_file", json!({"path": "old"}))]),
            turn(vec![call("a", "write_file", json!({"path": "x"}))]),
        ];
        set_call_args(&mut transcript, "a", &json!({"path": "edited"}));
        let args: Vec<Value> = transcript
            .iter()
            .map(|message| match message {
                ChatMessage::Assistant { tool_calls, .. } => tool_calls[0].args.clone(),
                ChatMessage::User { .. } | ChatMessage::Tool { .. } => Value::Null,
            })
            .collect();
        assert_eq!(args, [json!({"path": "old"}), json!({"path": "edited"})]);
    }

    #[test]
    fn transcripts_round_trip_and_a_corrupt_one_is_an_error() {
        let transcript = vec![
            ChatMessage::User {
                text: "go".into(),
                message_id: None,
                asked: None,
            },
            turn(vec![call("a", "read_file", json!({"path": "a"}))]),
            result("a"),
        ];
        let value = transcript_value(&transcript).unwrap();
        let mut row = TaskRow::new(
            "t".into(),
            "c".into(),
            "u".into(),
            "a/b".into(),
            signoff_protocol::TaskState::Working,
            value,
        );
        assert_eq!(transcript_of(&row).unwrap(), transcript);
        row.transcript = json!([{"role": "nobody"}]).to_string();
        let err = transcript_of(&row).unwrap_err();
        assert!(err.to_string().contains("transcript of t"), "{err}");
    }
}
