//! What a coding agent did beside its answer without asking anyone (docs/wire.md, Calls an
//! agent ran itself): the tool calls it ran on its own, and its thoughts, in kagent's parts.
//!
//! A call is its `function_call` DataPart, sent again each time the agent reports more of it
//! (the latest arguments win), then its `function_response` once it ended; both carry the part
//! metadata `signoff_ran` with the status the agent reported (ACP's `pending`, `in_progress`,
//! `completed`, `failed`), and the call may carry a `preview` of the changes it made, as a held
//! call's action request does. A thought is a TextPart marked `kagent_thought: true`, as kagent
//! writes its models' thought parts.

use serde_json::{json, Value};

use super::call::{ToolCall, ToolResult};
use super::keys::{PREVIEW, SIGNOFF_RAN, THOUGHT};
use super::preview::Preview;
use crate::model::Part;

/// Where a call the agent ran stands, as it reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RanStatus {
    Pending,
    InProgress,
    Completed,
    Failed,
}

impl RanStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            RanStatus::Pending => "pending",
            RanStatus::InProgress => "in_progress",
            RanStatus::Completed => "completed",
            RanStatus::Failed => "failed",
        }
    }

    /// ACP's word for it; `None` for a word this version does not know.
    pub fn parse(word: &str) -> Option<RanStatus> {
        Some(match word {
            "pending" => RanStatus::Pending,
            "in_progress" => RanStatus::InProgress,
            "completed" => RanStatus::Completed,
            "failed" => RanStatus::Failed,
            _ => return None,
        })
    }

    /// The call is over: its result follows.
    pub fn ended(self) -> bool {
        matches!(self, RanStatus::Completed | RanStatus::Failed)
    }

    /// The status a call or result part is marked with, if it is one the agent ran itself.
    pub fn of_part(part: &Part) -> Option<RanStatus> {
        RanStatus::parse(part.metadata_str(SIGNOFF_RAN)?)
    }
}

/// One report of a call the agent ran itself.
#[derive(Debug, Clone, PartialEq)]
pub struct RanCall {
    /// The server's id for it (the agent's own is a label the server replaces).
    pub id: String,
    pub name: String,
    pub args: Value,
    pub status: RanStatus,
    /// What it reported as its output, shown as its result once it ended.
    pub output: Vec<String>,
    /// The changes it made.
    pub preview: Option<Preview>,
}

impl RanCall {
    /// Its `function_call` part, marked with its status (and its preview).
    pub fn call_part(&self) -> Part {
        let part = ToolCall {
            id: self.id.clone(),
            name: self.name.clone(),
            args: self.args.clone(),
        }
        .to_part()
        .with_metadata(SIGNOFF_RAN, json!(self.status.as_str()));
        match &self.preview {
            Some(preview) => part.with_metadata(PREVIEW, preview.to_value()),
            None => part,
        }
    }

    /// Its `function_response` part once it ended: its output in MCP's `CallToolResult` shape,
    /// `isError` when it failed.
    pub fn result_part(&self) -> Option<Part> {
        if !self.status.ended() {
            return None;
        }
        let content: Vec<Value> = self
            .output
            .iter()
            .map(|text| json!({"type": "text", "text": text}))
            .collect();
        let result = ToolResult {
            id: self.id.clone(),
            name: self.name.clone(),
            response: json!({"content": content, "isError": self.status == RanStatus::Failed}),
        };
        Some(
            result
                .to_part()
                .with_metadata(SIGNOFF_RAN, json!(self.status.as_str())),
        )
    }
}

/// The preview a call part carries, if any.
pub fn preview_of_part(part: &Part) -> Option<Preview> {
    Preview::from_value(part.metadata.as_ref()?.get(PREVIEW)?)
}

/// A thought of the agent's, as a TextPart marked `kagent_thought: true`.
pub fn thought_part(text: impl Into<String>) -> Part {
    Part::text(text).with_metadata(THOUGHT, json!(true))
}

/// Whether a part is a thought, not answer text.
pub fn is_thought(part: &Part) -> bool {
    part.metadata
        .as_ref()
        .and_then(|metadata| metadata.get(THOUGHT))
        .and_then(Value::as_bool)
        == Some(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(status: RanStatus) -> RanCall {
        RanCall {
            id: "ran_1".into(),
            name: "read".into(),
            args: json!({"title": "Read a.txt", "input": {"file_path": "/w/a.txt"}}),
            status,
            output: vec!["hello".into()],
            preview: None,
        }
    }

    #[test]
    fn a_call_is_its_parts_marked_with_its_status_and_a_result_only_once_it_ended() {
        let running = read(RanStatus::InProgress);
        let part = running.call_part();
        assert_eq!(ToolCall::from_part(&part).unwrap().args, running.args);
        assert_eq!(RanStatus::of_part(&part), Some(RanStatus::InProgress));
        assert!(running.result_part().is_none());
        let failed = read(RanStatus::Failed).result_part().unwrap();
        let result = ToolResult::from_part(&failed).unwrap();
        assert!(result.is_error() && !result.is_rejected());
        assert_eq!(result.response["content"][0]["text"], "hello");
        assert_eq!(RanStatus::of_part(&failed), Some(RanStatus::Failed));
        assert_eq!(RanStatus::of_part(&Part::text("x")), None);
    }

    #[test]
    fn a_calls_preview_and_a_thought_round_trip_through_part_metadata() {
        let write = RanCall {
            preview: Some(Preview::NewFile { size: 3 }),
            ..read(RanStatus::Completed)
        };
        assert_eq!(
            preview_of_part(&write.call_part()),
            Some(Preview::NewFile { size: 3 })
        );
        assert_eq!(
            preview_of_part(&read(RanStatus::Completed).call_part()),
            None
        );
        let thought = thought_part("look first");
        assert!(is_thought(&thought) && thought.as_text() == Some("look first"));
        assert!(!is_thought(&Part::text("answer")));
        for word in ["pending", "in_progress", "completed", "failed"] {
            assert_eq!(RanStatus::parse(word).map(RanStatus::as_str), Some(word));
        }
        assert_eq!(RanStatus::parse("done"), None);
    }
}
