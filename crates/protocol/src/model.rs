//! The one A2A model: what a message, task or stream event means, whatever version carried it.
//!
//! Nothing here knows whether it came from A2A v0.3 or v1.0; the codecs in [`crate::codec`]
//! translate. Metadata maps and DataPart payloads stay `serde_json` values because peers put
//! arbitrary JSON there (kagent adds `kagent_*` keys we must carry through unchanged).

use serde_json::{Map, Value};

/// Free-form metadata attached to messages, parts, tasks and events.
pub type Metadata = Map<String, Value>;

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Role {
    User,
    Agent,
}

/// The lifecycle state of a task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TaskState {
    Submitted,
    Working,
    InputRequired,
    AuthRequired,
    Completed,
    Failed,
    Canceled,
    Rejected,
}

impl TaskState {
    /// Every state, in lifecycle order.
    pub const ALL: [TaskState; 8] = [
        TaskState::Submitted,
        TaskState::Working,
        TaskState::InputRequired,
        TaskState::AuthRequired,
        TaskState::Completed,
        TaskState::Failed,
        TaskState::Canceled,
        TaskState::Rejected,
    ];

    /// A terminal state never changes again.
    pub fn is_terminal(self) -> bool {
        match self {
            TaskState::Completed
            | TaskState::Failed
            | TaskState::Canceled
            | TaskState::Rejected => true,
            TaskState::Submitted
            | TaskState::Working
            | TaskState::InputRequired
            | TaskState::AuthRequired => false,
        }
    }

    /// An interrupted task waits for its caller; the turn's stream ends there.
    pub fn is_interrupted(self) -> bool {
        matches!(self, TaskState::InputRequired | TaskState::AuthRequired)
    }

    /// Whether a status update in this state ends the stream (v0.3's `final`).
    pub fn ends_stream(self) -> bool {
        self.is_terminal() || self.is_interrupted()
    }
}

/// A file carried inline (base64) or by reference.
#[derive(Debug, Clone, PartialEq)]
pub enum FileBody {
    /// Base64-encoded bytes.
    Bytes(String),
    Uri(String),
}

#[derive(Debug, Clone, PartialEq)]
pub struct FileContent {
    pub name: Option<String>,
    pub media_type: Option<String>,
    pub body: FileBody,
}

/// What one part of a message holds.
#[derive(Debug, Clone, PartialEq)]
pub enum PartContent {
    Text(String),
    /// Structured JSON: tool calls, tool results, interrupts and decisions travel this way.
    Data(Value),
    File(FileContent),
}

/// One part of a message or artifact.
#[derive(Debug, Clone, PartialEq)]
pub struct Part {
    pub content: PartContent,
    pub metadata: Option<Metadata>,
}

impl Part {
    pub fn text(text: impl Into<String>) -> Self {
        Part {
            content: PartContent::Text(text.into()),
            metadata: None,
        }
    }

    pub fn data(data: Value) -> Self {
        Part {
            content: PartContent::Data(data),
            metadata: None,
        }
    }

    pub fn with_metadata(mut self, key: &str, value: Value) -> Self {
        self.metadata
            .get_or_insert_with(Metadata::new)
            .insert(key.to_owned(), value);
        self
    }

    pub fn as_text(&self) -> Option<&str> {
        match &self.content {
            PartContent::Text(text) => Some(text),
            PartContent::Data(_) | PartContent::File(_) => None,
        }
    }

    pub fn as_data(&self) -> Option<&Value> {
        match &self.content {
            PartContent::Data(data) => Some(data),
            PartContent::Text(_) | PartContent::File(_) => None,
        }
    }

    /// A string-valued metadata entry, such as `kagent_type`.
    pub fn metadata_str(&self, key: &str) -> Option<&str> {
        self.metadata.as_ref()?.get(key)?.as_str()
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    pub message_id: String,
    pub role: Role,
    pub parts: Vec<Part>,
    pub task_id: Option<String>,
    pub context_id: Option<String>,
    pub reference_task_ids: Vec<String>,
    pub metadata: Option<Metadata>,
    /// The URIs of the A2A extensions whose data the message carries (kagent's HITL extension
    /// puts its requests and responses in `metadata` under its URI and names it here).
    pub extensions: Vec<String>,
}

impl Message {
    pub fn new(message_id: impl Into<String>, role: Role, parts: Vec<Part>) -> Self {
        Message {
            message_id: message_id.into(),
            role,
            parts,
            task_id: None,
            context_id: None,
            reference_task_ids: Vec::new(),
            metadata: None,
            extensions: Vec::new(),
        }
    }

    /// All text parts joined, for logs, titles and text decisions.
    pub fn text(&self) -> String {
        self.parts
            .iter()
            .filter_map(Part::as_text)
            .collect::<Vec<_>>()
            .join("")
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct TaskStatus {
    pub state: TaskState,
    pub message: Option<Message>,
    /// RFC 3339, as the peer wrote it.
    pub timestamp: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Artifact {
    pub artifact_id: String,
    pub name: Option<String>,
    pub description: Option<String>,
    pub parts: Vec<Part>,
    pub metadata: Option<Metadata>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Task {
    pub id: String,
    pub context_id: String,
    pub status: TaskStatus,
    pub history: Vec<Message>,
    pub artifacts: Vec<Artifact>,
    pub metadata: Option<Metadata>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct TaskStatusUpdateEvent {
    pub task_id: String,
    pub context_id: String,
    pub status: TaskStatus,
    /// Whether this event ends the stream. v1.0 has no such field: its codec derives it from
    /// the state ([`TaskState::ends_stream`]).
    pub is_final: bool,
    pub metadata: Option<Metadata>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct TaskArtifactUpdateEvent {
    pub task_id: String,
    pub context_id: String,
    pub artifact: Artifact,
    /// Append these parts to the artifact already seen under the same id.
    pub append: bool,
    pub last_chunk: bool,
    pub metadata: Option<Metadata>,
}

/// One event of a stream, or the result of a non-streaming send.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamEvent {
    Task(Task),
    Message(Message),
    StatusUpdate(TaskStatusUpdateEvent),
    ArtifactUpdate(TaskArtifactUpdateEvent),
}

impl StreamEvent {
    pub fn task_id(&self) -> Option<&str> {
        match self {
            StreamEvent::Task(task) => Some(&task.id),
            StreamEvent::Message(message) => message.task_id.as_deref(),
            StreamEvent::StatusUpdate(update) => Some(&update.task_id),
            StreamEvent::ArtifactUpdate(update) => Some(&update.task_id),
        }
    }

    pub fn context_id(&self) -> Option<&str> {
        match self {
            StreamEvent::Task(task) => Some(&task.context_id),
            StreamEvent::Message(message) => message.context_id.as_deref(),
            StreamEvent::StatusUpdate(update) => Some(&update.context_id),
            StreamEvent::ArtifactUpdate(update) => Some(&update.context_id),
        }
    }
}

/// How the sender wants `message/send` answered.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SendConfiguration {
    pub accepted_output_modes: Vec<String>,
    pub history_length: Option<u32>,
    /// v0.3 `blocking`; v1.0 `returnImmediately` is its negation.
    pub blocking: Option<bool>,
    /// Where to post the task's updates (v0.3 `pushNotificationConfig`, v1.0
    /// `taskPushNotificationConfig`), set for the task the message starts or continues.
    pub push: Option<PushConfig>,
}

/// How the server authenticates to a push receiver: an HTTP authentication scheme (`Bearer`)
/// and its credentials. v0.3 lists schemes; the first is the one used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PushAuthentication {
    pub scheme: String,
    pub credentials: Option<String>,
}

/// Where and how to post a task's updates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PushConfig {
    /// The config's id; absent, the server gives one.
    pub id: Option<String>,
    pub url: String,
    /// Sent back in `X-A2A-Notification-Token`, so the receiver knows the post is for it.
    pub token: Option<String>,
    pub authentication: Option<PushAuthentication>,
}

/// A push config of one task (`tasks/pushNotificationConfig/set`, v1.0
/// `CreateTaskPushNotificationConfig`, and what the get and list methods answer).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskPushConfig {
    pub task_id: String,
    pub config: PushConfig,
}

/// Which push config(s) of a task: the params of get, list and delete. `config_id` is required
/// to delete; to get, its absence means the task's only (or first) config.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PushConfigQuery {
    pub task_id: String,
    pub config_id: Option<String>,
}

/// The params of `message/send` and `message/stream` (v1.0 `SendMessage`, `SendStreamingMessage`).
#[derive(Debug, Clone, PartialEq)]
pub struct SendMessageParams {
    pub message: Message,
    pub configuration: Option<SendConfiguration>,
    pub metadata: Option<Metadata>,
}

/// The params of `tasks/get` (v1.0 `GetTask`).
#[derive(Debug, Clone, PartialEq)]
pub struct TaskQueryParams {
    pub id: String,
    pub history_length: Option<u32>,
    pub metadata: Option<Metadata>,
}

/// The params of `tasks/cancel` and `tasks/resubscribe` (v1.0 `CancelTask`, `SubscribeToTask`).
#[derive(Debug, Clone, PartialEq)]
pub struct TaskIdParams {
    pub id: String,
    pub metadata: Option<Metadata>,
}

/// The params of v1.0 `ListTasks`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ListTasksParams {
    pub context_id: Option<String>,
    pub status: Option<TaskState>,
    pub page_size: Option<u32>,
    pub page_token: Option<String>,
    pub history_length: Option<u32>,
    pub include_artifacts: Option<bool>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ListTasksResult {
    pub tasks: Vec<Task>,
    pub next_page_token: String,
    pub page_size: u32,
    pub total_size: u32,
}

/// What an agent can do, as its card says.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AgentCapabilities {
    pub streaming: bool,
    pub push_notifications: bool,
    pub state_transition_history: bool,
    /// The URIs of the A2A extensions the agent declares (`capabilities.extensions[].uri`).
    pub extensions: Vec<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct AgentSkill {
    pub id: String,
    pub name: String,
    pub description: String,
    pub tags: Vec<String>,
}

/// Which protocol version an agent speaks at which URL.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ProtocolVersion {
    V0_3,
    V1_0,
}

impl ProtocolVersion {
    /// The value of the `A2A-Version` header and of the card's version fields.
    pub fn as_str(self) -> &'static str {
        match self {
            ProtocolVersion::V0_3 => "0.3",
            ProtocolVersion::V1_0 => "1.0",
        }
    }

    /// Reads an `A2A-Version` header value; `None` for a version we do not speak.
    pub fn from_header(value: &str) -> Option<Self> {
        match value.trim() {
            "0.3" | "0.3.0" => Some(ProtocolVersion::V0_3),
            "1.0" | "1.0.0" => Some(ProtocolVersion::V1_0),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct AgentInterface {
    pub url: String,
    pub version: ProtocolVersion,
}

#[derive(Debug, Clone, PartialEq)]
pub struct AgentCard {
    pub name: String,
    pub description: String,
    pub version: String,
    /// Every URL and version the agent serves JSON-RPC at, preferred first.
    pub interfaces: Vec<AgentInterface>,
    pub capabilities: AgentCapabilities,
    pub default_input_modes: Vec<String>,
    pub default_output_modes: Vec<String>,
    pub skills: Vec<AgentSkill>,
}

impl AgentCard {
    /// The newest version the agent offers, and where.
    pub fn best_interface(&self) -> Option<&AgentInterface> {
        self.interfaces
            .iter()
            .max_by_key(|interface| interface.version)
    }
}
