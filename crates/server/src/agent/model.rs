//! The model seam: one trait for every language model (the offline scripted one, and later an
//! OpenAI-compatible one), and the transcript type that is the model's memory of a task.

use futures_util::stream::BoxStream;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::tools::ToolSpec;

/// A tool call as the model proposed it (the model's own id).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelToolCall {
    pub id: String,
    pub name: String,
    pub args: Value,
}

/// One entry of the conversation the model sees. Stored per task as JSON, so a restarted server
/// resumes with exactly what the model saw.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum ChatMessage {
    User {
        text: String,
        /// The A2A `messageId` the person's client gave the message (absent in transcripts
        /// stored before it was kept). Models other than the conformance agent ignore it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message_id: Option<String>,
    },
    Assistant {
        text: String,
        #[serde(default)]
        tool_calls: Vec<ModelToolCall>,
    },
    /// The result of one tool call; a rejection is `{"status":"rejected","reason":…}`.
    Tool {
        call_id: String,
        name: String,
        response: Value,
        /// The arguments the model proposed, when the person edited them before the call ran
        /// (the assistant entry then holds the edited ones, which are what ran).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        edited_from: Option<Value>,
        /// For a call rejected by the person's text reply (the text is the rejection's reason):
        /// that reply's A2A `messageId`. Models other than the conformance agent ignore it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reply_message_id: Option<String>,
    },
}

/// What a model turn gets: the agent's instruction, the conversation, the tools it may call.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelRequest {
    pub instruction: String,
    pub messages: Vec<ChatMessage>,
    pub tools: Vec<ToolSpec>,
}

/// Token counts of one turn, reported under `signoff_protocol::hitl::keys::USAGE_METADATA`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
}

/// An artifact a model produces whole: its name and parts.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelArtifact {
    pub name: String,
    pub parts: Vec<signoff_protocol::Part>,
}

/// One piece of a streamed model turn.
#[derive(Debug, Clone, PartialEq)]
pub enum ModelEvent {
    /// A chunk of answer text, shown as it arrives.
    Text(String),
    /// A complete tool call; all calls of one turn form one batch.
    ToolCall(ModelToolCall),
    /// The turn's whole answer as one agent message, instead of streamed text: the task
    /// completes with it as its status message, and a blocking `message/send` / `SendMessage`
    /// is answered with that Message rather than the task (docs/wire.md, Methods). A turn that
    /// sends this sends no `Text`.
    Message(String),
    /// A whole artifact of its own (a file, structured data), sent as one artifact update
    /// beside the answer text. It is not kept in the transcript: the model does not read its
    /// own artifacts back.
    Artifact(ModelArtifact),
    Usage(Usage),
}

/// Why a model turn failed. The text is shown to a person as the task's failure, so it says
/// what happened without internals (details go to the log where the model is implemented).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ModelError {
    #[error("the model could not be reached")]
    Unreachable,
    #[error("the model refused the request: {0}")]
    Refused(String),
    #[error("the model sent an answer that could not be read")]
    BadAnswer,
    /// Anything else, in words a person understands (no keys, no raw bodies).
    #[error("{0}")]
    Failed(String),
}

/// The stream of one model turn. Dropping it cancels the turn (the runtime drops it on cancel
/// and on timeout), so implementations must not need an explicit stop call.
pub type ModelStream = BoxStream<'static, Result<ModelEvent, ModelError>>;

/// A language model: one turn at a time, history and tool specs in, text chunks and tool calls
/// out.
pub trait Model: Send + Sync + 'static {
    fn turn(&self, request: ModelRequest) -> ModelStream;
}
