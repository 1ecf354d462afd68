//! The conformance model: the behaviours the A2A conformance suite (the A2A TCK) asks of the
//! system under test, keyed on the `messageId` prefixes the suite documents, run through the
//! real runtime and store like any model (crates/server/README.md, The conformance agent).
//!
//! It answers in text (which the runtime streams as a text artifact), with a file or data
//! artifact, or with one plain message; leaves a task open with an `ask_user` question
//! (input-required); or keeps a task working for a while (for the suite's resubscribe tests).
//! Everything else about the protocol is the server's own.

use std::time::Duration;

use base64::Engine as _;
use futures_util::stream::{self, StreamExt};
use serde_json::json;
use signoff_protocol::hitl::ASK_USER;
use signoff_protocol::{FileBody, FileContent, Part, PartContent};

use super::model::{
    ChatMessage, Model, ModelArtifact, ModelEvent, ModelRequest, ModelStream, ModelToolCall,
};

/// How long a long-running task works: the suite asks for at least twice its streaming timeout
/// (2 s by default), with room for a slow machine.
pub const LONG_RUN: Duration = Duration::from_secs(6);

/// The pause between the chunks of a long-running task's text.
const LONG_RUN_TICK: Duration = Duration::from_millis(500);

/// The conformance agent's model.
#[derive(Debug, Clone)]
pub struct ConformanceModel {
    /// How long a `test-resubscribe-message-id` task keeps working.
    pub long_run: Duration,
}

impl Default for ConformanceModel {
    fn default() -> Self {
        ConformanceModel { long_run: LONG_RUN }
    }
}

/// What one turn does.
#[derive(Debug, Clone, PartialEq)]
enum Behaviour {
    /// Answers with these text chunks (none: the task completes without an artifact).
    Answer(Vec<String>),
    /// Asks the person a free-text question: the task waits, input-required.
    AskForInput,
    /// Works for `long_run`, streaming a chunk now and then, then completes.
    LongRun,
    /// Completes with one whole artifact of these parts (a file, data).
    Artifact(Vec<Part>),
    /// Answers with one message instead of a task.
    Reply(String),
}

/// The suite's messageId prefixes with a fixed text answer, longest first where one prefix
/// starts another. Chunked answers are listed as their chunks.
const ANSWERS: &[(&str, &[&str])] = &[
    ("tck-complete-task", &["Hello from TCK"]),
    ("tck-artifact-text", &["Generated text content"]),
    ("tck-stream-artifact-chunked", &["chunk-1 ", "chunk-2"]),
    ("tck-stream-artifact-text", &["Streamed text content"]),
    ("tck-stream-ordering-001", &["Ordered output"]),
    ("tck-stream-001", &["Stream hello from TCK"]),
    ("tck-stream-002", &[]),
    ("tck-stream-003", &["Stream task lifecycle"]),
];

/// The file the suite's file artifacts carry: its name, media type and text.
const FILE_NAME: &str = "output.txt";
const FILE_MEDIA_TYPE: &str = "text/plain";
const FILE_TEXT: &str = "Generated file content";
/// The link of the suite's file-by-URL artifact.
const FILE_URL: &str = "https://example.com/output.txt";

/// The suite's messageId prefixes answered with an artifact that is not text.
fn artifact_for(id: &str) -> Option<Vec<Part>> {
    let file = |body| FileContent {
        name: Some(FILE_NAME.to_owned()),
        media_type: Some(FILE_MEDIA_TYPE.to_owned()),
        body,
    };
    let part = |content| Part {
        content,
        metadata: None,
    };
    if id.starts_with("tck-artifact-file-url") {
        return Some(vec![part(PartContent::File(file(FileBody::Uri(
            FILE_URL.to_owned(),
        ))))]);
    }
    if id.starts_with("tck-artifact-file") || id.starts_with("tck-stream-artifact-file") {
        let bytes = base64::engine::general_purpose::STANDARD.encode(FILE_TEXT);
        return Some(vec![part(PartContent::File(file(FileBody::Bytes(bytes))))]);
    }
    if id.starts_with("tck-artifact-data") {
        return Some(vec![Part::data(json!({"key": "value", "count": 42}))]);
    }
    None
}

/// The prefix of a message that asks for a task left open, waiting for input.
const INPUT_REQUIRED: &str = "tck-input-required";

/// The prefix of a message that asks for a plain message answer.
const MESSAGE_RESPONSE: &str = "tck-message-response";

/// The prefix of a message that asks for a long-running task.
const LONG_RUNNING: &str = "test-resubscribe-message-id";

/// The question of an input-required task.
pub const QUESTION: &str = "What should I do next?";

/// The answer once the person has replied to the question (or rejected it with a text).
pub const THANKS: &str = "Thank you, that is all I needed.";

/// The prefix every messageId of the v1.0 suite has; a message with another id (the v0.3
/// suite's) asks for an open conversation.
const SUITE_V10: &str = "tck-";

fn behaviour(messages: &[ChatMessage], can_ask: bool) -> Behaviour {
    let Some(user) = messages
        .iter()
        .rposition(|message| matches!(message, ChatMessage::User { .. }))
    else {
        return Behaviour::Answer(vec!["Hello! Send me a message.".to_owned()]);
    };
    let (text, message_id) = match &messages[user] {
        ChatMessage::User {
            text, message_id, ..
        } => (text.as_str(), message_id.as_deref()),
        ChatMessage::Assistant { .. } | ChatMessage::Tool { .. } => ("", None),
    };
    let id = message_id.unwrap_or("");
    let ask = || {
        if can_ask {
            Behaviour::AskForInput
        } else {
            Behaviour::Answer(vec![format!(
                "I cannot ask for input: this agent has no {ASK_USER} tool."
            )])
        }
    };
    // A reply to the question (an answer, or a rejection with the person's text): the v1.0
    // suite's task completes, unless the reply's own id asks for input again; an open
    // conversation asks again.
    let mut replies = messages[user + 1..]
        .iter()
        .filter_map(|message| match message {
            ChatMessage::Tool {
                reply_message_id, ..
            } => Some(reply_message_id.as_deref().unwrap_or("")),
            ChatMessage::User { .. } | ChatMessage::Assistant { .. } => None,
        });
    if let Some(reply) = replies.next_back() {
        return if id.starts_with(SUITE_V10) && !reply.starts_with(INPUT_REQUIRED) {
            Behaviour::Answer(vec![THANKS.to_owned()])
        } else {
            ask()
        };
    }
    if id.starts_with(LONG_RUNNING) {
        return Behaviour::LongRun;
    }
    if id.starts_with(INPUT_REQUIRED) {
        return ask();
    }
    if id.starts_with(MESSAGE_RESPONSE) {
        return Behaviour::Reply("Direct message response".to_owned());
    }
    if let Some(parts) = artifact_for(id) {
        return Behaviour::Artifact(parts);
    }
    if let Some((_, chunks)) = ANSWERS.iter().find(|(prefix, _)| id.starts_with(prefix)) {
        return Behaviour::Answer(chunks.iter().map(|chunk| (*chunk).to_owned()).collect());
    }
    if id.starts_with(SUITE_V10) {
        return Behaviour::Answer(vec![format!("You said: {}", text.trim())]);
    }
    ask()
}

impl Model for ConformanceModel {
    fn turn(&self, request: ModelRequest) -> ModelStream {
        let can_ask = request.tools.iter().any(|tool| tool.name == ASK_USER);
        match behaviour(&request.messages, can_ask) {
            Behaviour::Answer(chunks) => {
                stream::iter(chunks.into_iter().map(|chunk| Ok(ModelEvent::Text(chunk)))).boxed()
            }
            Behaviour::Reply(text) => stream::iter([Ok(ModelEvent::Message(text))]).boxed(),
            Behaviour::Artifact(parts) => {
                let artifact = ModelArtifact {
                    name: FILE_NAME.to_owned(),
                    parts,
                };
                stream::iter([Ok(ModelEvent::Artifact(artifact))]).boxed()
            }
            Behaviour::AskForInput => {
                // Ids unique within the conversation: count the calls made so far.
                let earlier: usize = request
                    .messages
                    .iter()
                    .map(|message| match message {
                        ChatMessage::Assistant { tool_calls, .. } => tool_calls.len(),
                        ChatMessage::User { .. } | ChatMessage::Tool { .. } => 0,
                    })
                    .sum();
                let call = ModelToolCall {
                    id: format!("call_{}", earlier + 1),
                    model_id: None,
                    name: ASK_USER.to_owned(),
                    args: json!({"questions": [{"question": QUESTION}]}),
                };
                stream::iter([Ok(ModelEvent::ToolCall(call))]).boxed()
            }
            Behaviour::LongRun => {
                let ticks = (self.long_run.as_millis() / LONG_RUN_TICK.as_millis()).max(1);
                stream::iter(0..ticks)
                    .then(|tick| async move {
                        if tick > 0 {
                            tokio::time::sleep(LONG_RUN_TICK).await;
                        }
                        Ok(ModelEvent::Text(format!("working {}… ", tick + 1)))
                    })
                    .chain(stream::once(async {
                        tokio::time::sleep(LONG_RUN_TICK).await;
                        Ok(ModelEvent::Text("done.".to_owned()))
                    }))
                    .boxed()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(id: &str, text: &str) -> ChatMessage {
        ChatMessage::User {
            text: text.into(),
            message_id: Some(id.into()),
            asked: None,
        }
    }

    #[test]
    fn prefixes_pick_their_behaviour() {
        let answer = |id: &str| behaviour(&[user(id, "hi")], true);
        assert_eq!(
            answer("tck-complete-task-1"),
            Behaviour::Answer(vec!["Hello from TCK".into()])
        );
        assert_eq!(
            answer("tck-stream-artifact-chunked-7"),
            Behaviour::Answer(vec!["chunk-1 ".into(), "chunk-2".into()])
        );
        assert_eq!(answer("tck-stream-002-x"), Behaviour::Answer(Vec::new()));
        assert_eq!(answer("tck-input-required-3"), Behaviour::AskForInput);
        assert_eq!(
            answer("tck-message-response-4"),
            Behaviour::Reply("Direct message response".into())
        );
        let Behaviour::Artifact(parts) = answer("tck-artifact-file-url-2") else {
            panic!("expected an artifact");
        };
        assert!(
            matches!(&parts[0].content, PartContent::File(file) if file.body == FileBody::Uri(FILE_URL.into()))
        );
        let Behaviour::Artifact(parts) = answer("tck-artifact-file-2") else {
            panic!("expected an artifact");
        };
        assert!(
            matches!(&parts[0].content, PartContent::File(file) if file.body == FileBody::Bytes("R2VuZXJhdGVkIGZpbGUgY29udGVudA==".into()))
        );
        assert_eq!(
            answer("tck-artifact-data-2"),
            Behaviour::Artifact(vec![Part::data(json!({"key": "value", "count": 42}))])
        );
        assert_eq!(answer("test-resubscribe-message-id-9"), Behaviour::LongRun);
        assert_eq!(
            answer("tck-send-003-1"),
            Behaviour::Answer(vec!["You said: hi".into()])
        );
        // Any other id (the v0.3 suite's) leaves the task open.
        assert_eq!(answer("test-message-id-1"), Behaviour::AskForInput);
    }

    fn replied(first_id: &str) -> Vec<ChatMessage> {
        replied_by(first_id, None)
    }

    fn replied_by(first_id: &str, reply_id: Option<&str>) -> Vec<ChatMessage> {
        vec![
            user(first_id, "go"),
            ChatMessage::Assistant {
                text: String::new(),
                tool_calls: vec![ModelToolCall {
                    id: "call_1".into(),
                    model_id: None,
                    name: ASK_USER.into(),
                    args: json!({}),
                }],
            },
            ChatMessage::Tool {
                call_id: "call_1".into(),
                name: ASK_USER.into(),
                response: json!({"status": "rejected", "reason": "done"}),
                edited_from: None,
                reply_message_id: reply_id.map(str::to_owned),
            },
        ]
    }

    #[test]
    fn a_reply_ends_the_v10_suites_task_and_continues_an_open_conversation() {
        assert_eq!(
            behaviour(&replied("tck-input-required-1"), true),
            Behaviour::Answer(vec![THANKS.into()])
        );
        assert_eq!(
            behaviour(&replied("test-state-message-id-1"), true),
            Behaviour::AskForInput
        );
        // A reply whose own id asks for input keeps the task open; another completes it.
        assert_eq!(
            behaviour(
                &replied_by("tck-input-required-1", Some("tck-input-required-2")),
                true
            ),
            Behaviour::AskForInput
        );
        assert_eq!(
            behaviour(
                &replied_by("tck-input-required-1", Some("tck-complete-task-3")),
                true
            ),
            Behaviour::Answer(vec![THANKS.into()])
        );
    }

    #[test]
    fn without_the_question_tool_it_says_so() {
        let Behaviour::Answer(chunks) = behaviour(&[user("tck-input-required-1", "go")], false)
        else {
            panic!("expected an answer");
        };
        assert!(chunks[0].contains(ASK_USER));
    }
}
