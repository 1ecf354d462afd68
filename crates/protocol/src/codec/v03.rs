//! A2A v0.3 wire shapes: objects say their `kind`, roles and states are lower-case words,
//! status updates carry `final`. Lenient about unknown fields (deployed peers add their own),
//! strict where docs/wire.md (Versions) says: a part must say its `kind`, `parts` must not be
//! empty, `historyLength` must not be negative.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{decode_list, field, non_empty, non_negative, parse, to_value, DecodeError};
use crate::model::{
    Artifact, FileBody, FileContent, Message, Metadata, Part, PartContent, Role, SendConfiguration,
    SendMessageParams, StreamEvent, Task, TaskArtifactUpdateEvent, TaskIdParams, TaskQueryParams,
    TaskState, TaskStatus, TaskStatusUpdateEvent,
};

const KIND_TASK: &str = "task";
const KIND_MESSAGE: &str = "message";
const KIND_STATUS_UPDATE: &str = "status-update";
const KIND_ARTIFACT_UPDATE: &str = "artifact-update";

// ---- wire structs: one level each; nested objects stay JSON so each gets its own path ----

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireMessage {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    kind: Option<String>,
    message_id: String,
    role: String,
    parts: Vec<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    task_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    context_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    reference_task_ids: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    metadata: Option<Metadata>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    extensions: Option<Vec<String>>,
}

#[derive(Serialize, Deserialize)]
struct WirePart {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    kind: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    text: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    data: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    file: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    metadata: Option<Metadata>,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireFile {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    mime_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    bytes: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    uri: Option<String>,
}

#[derive(Serialize, Deserialize)]
struct WireStatus {
    state: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    message: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    timestamp: Option<String>,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireArtifact {
    artifact_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    description: Option<String>,
    parts: Vec<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    metadata: Option<Metadata>,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireTask {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    kind: Option<String>,
    id: String,
    context_id: String,
    status: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    history: Option<Vec<Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    artifacts: Option<Vec<Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    metadata: Option<Metadata>,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireStatusUpdate {
    kind: String,
    task_id: String,
    context_id: String,
    status: Value,
    /// Required by the v0.3 schema; when a peer leaves it out we derive it from the state.
    #[serde(rename = "final", default, skip_serializing_if = "Option::is_none")]
    is_final: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    metadata: Option<Metadata>,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireArtifactUpdate {
    kind: String,
    task_id: String,
    context_id: String,
    artifact: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    append: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    last_chunk: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    metadata: Option<Metadata>,
}

#[derive(Serialize, Deserialize)]
struct WireSendParams {
    message: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    configuration: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    metadata: Option<Metadata>,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireConfiguration {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    accepted_output_modes: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    history_length: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    blocking: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    push_notification_config: Option<Value>,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireTaskQuery {
    id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    history_length: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    metadata: Option<Metadata>,
}

#[derive(Serialize, Deserialize)]
struct WireTaskIdParams {
    id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    metadata: Option<Metadata>,
}

// ---- enums ----

fn role_name(role: Role) -> &'static str {
    match role {
        Role::User => "user",
        Role::Agent => "agent",
    }
}

fn decode_role(name: &str, path: &str) -> Result<Role, DecodeError> {
    match name {
        "user" => Ok(Role::User),
        "agent" => Ok(Role::Agent),
        other => Err(DecodeError::new(
            path,
            format!("unknown role \"{other}\" (expected \"user\" or \"agent\")"),
        )),
    }
}

pub(super) fn state_name(state: TaskState) -> &'static str {
    match state {
        TaskState::Submitted => "submitted",
        TaskState::Working => "working",
        TaskState::InputRequired => "input-required",
        TaskState::AuthRequired => "auth-required",
        TaskState::Completed => "completed",
        TaskState::Failed => "failed",
        TaskState::Canceled => "canceled",
        TaskState::Rejected => "rejected",
    }
}

pub(super) fn decode_state(name: &str, path: &str) -> Result<TaskState, DecodeError> {
    TaskState::ALL
        .into_iter()
        .find(|state| state_name(*state) == name)
        .ok_or_else(|| DecodeError::new(path, format!("unknown task state \"{name}\"")))
}

/// A nested object may leave out its `kind`, but if it says one it must be the right one.
fn check_kind(kind: Option<&str>, expected: &str, path: &str) -> Result<(), DecodeError> {
    match kind {
        None => Ok(()),
        Some(kind) if kind == expected => Ok(()),
        Some(kind) => Err(DecodeError::new(
            &field(path, "kind"),
            format!("expected \"{expected}\", got \"{kind}\""),
        )),
    }
}

// ---- parts and messages ----

fn decode_part(value: &Value, path: &str) -> Result<Part, DecodeError> {
    let wire: WirePart = parse(value, path)?;
    let kind = wire.kind.ok_or_else(|| {
        DecodeError::new(
            &field(path, "kind"),
            "missing (a v0.3 part says \"text\", \"data\" or \"file\")",
        )
    })?;
    let content = match kind.as_str() {
        "text" => PartContent::Text(
            wire.text
                .ok_or_else(|| DecodeError::new(&field(path, "text"), "missing"))?,
        ),
        "data" => match wire.data {
            Some(data) if !data.is_null() => PartContent::Data(data),
            Some(_) | None => return Err(DecodeError::new(&field(path, "data"), "missing")),
        },
        "file" => {
            let file_path = field(path, "file");
            let file = wire
                .file
                .ok_or_else(|| DecodeError::new(&file_path, "missing"))?;
            PartContent::File(decode_file(&file, &file_path)?)
        }
        other => {
            return Err(DecodeError::new(
                &field(path, "kind"),
                format!("unknown part kind \"{other}\" (expected \"text\", \"data\" or \"file\")"),
            ))
        }
    };
    Ok(Part {
        content,
        metadata: wire.metadata,
    })
}

fn decode_file(value: &Value, path: &str) -> Result<FileContent, DecodeError> {
    let wire: WireFile = parse(value, path)?;
    let body = match (wire.bytes, wire.uri) {
        (Some(bytes), None) => FileBody::Bytes(bytes),
        (None, Some(uri)) => FileBody::Uri(uri),
        (Some(_), Some(_)) | (None, None) => {
            return Err(DecodeError::new(path, "needs exactly one of bytes and uri"))
        }
    };
    Ok(FileContent {
        name: wire.name,
        media_type: wire.mime_type,
        body,
    })
}

fn encode_part(part: &Part) -> Value {
    let mut wire = WirePart {
        kind: None,
        text: None,
        data: None,
        file: None,
        metadata: part.metadata.clone(),
    };
    match &part.content {
        PartContent::Text(text) => {
            wire.kind = Some("text".to_owned());
            wire.text = Some(text.clone());
        }
        PartContent::Data(data) => {
            wire.kind = Some("data".to_owned());
            wire.data = Some(data.clone());
        }
        PartContent::File(file) => {
            let (bytes, uri) = match &file.body {
                FileBody::Bytes(bytes) => (Some(bytes.clone()), None),
                FileBody::Uri(uri) => (None, Some(uri.clone())),
            };
            wire.kind = Some("file".to_owned());
            wire.file = Some(to_value(WireFile {
                name: file.name.clone(),
                mime_type: file.media_type.clone(),
                bytes,
                uri,
            }));
        }
    }
    to_value(wire)
}

fn decode_parts(parts: &[Value], path: &str) -> Result<Vec<Part>, DecodeError> {
    decode_list(parts, path, decode_part)
}

pub(super) fn decode_message(value: &Value, path: &str) -> Result<Message, DecodeError> {
    let wire: WireMessage = parse(value, path)?;
    check_kind(wire.kind.as_deref(), KIND_MESSAGE, path)?;
    let role = decode_role(&wire.role, &field(path, "role"))?;
    let parts_path = field(path, "parts");
    if wire.parts.is_empty() {
        return Err(DecodeError::new(&parts_path, "must not be empty"));
    }
    Ok(Message {
        message_id: wire.message_id,
        role,
        parts: decode_parts(&wire.parts, &parts_path)?,
        task_id: wire.task_id,
        context_id: wire.context_id,
        reference_task_ids: wire.reference_task_ids.unwrap_or_default(),
        metadata: wire.metadata,
        extensions: wire.extensions.unwrap_or_default(),
    })
}

pub(super) fn encode_message(message: &Message) -> Value {
    to_value(WireMessage {
        kind: Some(KIND_MESSAGE.to_owned()),
        message_id: message.message_id.clone(),
        role: role_name(message.role).to_owned(),
        parts: message.parts.iter().map(encode_part).collect(),
        task_id: message.task_id.clone(),
        context_id: message.context_id.clone(),
        reference_task_ids: non_empty(&message.reference_task_ids),
        metadata: message.metadata.clone(),
        extensions: non_empty(&message.extensions),
    })
}

// ---- tasks ----

fn decode_status(value: &Value, path: &str) -> Result<TaskStatus, DecodeError> {
    let wire: WireStatus = parse(value, path)?;
    let message = match &wire.message {
        Some(message) => Some(decode_message(message, &field(path, "message"))?),
        None => None,
    };
    Ok(TaskStatus {
        state: decode_state(&wire.state, &field(path, "state"))?,
        message,
        timestamp: wire.timestamp,
    })
}

fn encode_status(status: &TaskStatus) -> Value {
    to_value(WireStatus {
        state: state_name(status.state).to_owned(),
        message: status.message.as_ref().map(encode_message),
        timestamp: status.timestamp.clone(),
    })
}

fn decode_artifact(value: &Value, path: &str) -> Result<Artifact, DecodeError> {
    let wire: WireArtifact = parse(value, path)?;
    Ok(Artifact {
        artifact_id: wire.artifact_id,
        name: wire.name,
        description: wire.description,
        parts: decode_parts(&wire.parts, &field(path, "parts"))?,
        metadata: wire.metadata,
    })
}

fn encode_artifact(artifact: &Artifact) -> Value {
    to_value(WireArtifact {
        artifact_id: artifact.artifact_id.clone(),
        name: artifact.name.clone(),
        description: artifact.description.clone(),
        parts: artifact.parts.iter().map(encode_part).collect(),
        metadata: artifact.metadata.clone(),
    })
}

pub(super) fn decode_task(value: &Value, path: &str) -> Result<Task, DecodeError> {
    let wire: WireTask = parse(value, path)?;
    check_kind(wire.kind.as_deref(), KIND_TASK, path)?;
    Ok(Task {
        status: decode_status(&wire.status, &field(path, "status"))?,
        history: decode_list(
            wire.history.as_deref().unwrap_or_default(),
            &field(path, "history"),
            decode_message,
        )?,
        artifacts: decode_list(
            wire.artifacts.as_deref().unwrap_or_default(),
            &field(path, "artifacts"),
            decode_artifact,
        )?,
        id: wire.id,
        context_id: wire.context_id,
        metadata: wire.metadata,
    })
}

pub(super) fn encode_task(task: &Task) -> Value {
    to_value(WireTask {
        kind: Some(KIND_TASK.to_owned()),
        id: task.id.clone(),
        context_id: task.context_id.clone(),
        status: encode_status(&task.status),
        history: non_empty(&task.history)
            .map(|history| history.iter().map(encode_message).collect()),
        artifacts: non_empty(&task.artifacts)
            .map(|artifacts| artifacts.iter().map(encode_artifact).collect()),
        metadata: task.metadata.clone(),
    })
}

// ---- stream events ----

pub(super) fn decode_event(value: &Value, path: &str) -> Result<StreamEvent, DecodeError> {
    let kind = match value.get("kind") {
        Some(Value::String(kind)) => kind.as_str(),
        Some(_) => return Err(DecodeError::new(&field(path, "kind"), "must be a string")),
        None if value.is_object() => {
            return Err(DecodeError::new(
                &field(path, "kind"),
                "missing (a v0.3 event says \"task\", \"message\", \"status-update\" or \"artifact-update\")",
            ))
        }
        None => return Err(DecodeError::new(path, "must be an object")),
    };
    match kind {
        KIND_TASK => decode_task(value, path).map(StreamEvent::Task),
        KIND_MESSAGE => decode_message(value, path).map(StreamEvent::Message),
        KIND_STATUS_UPDATE => {
            let wire: WireStatusUpdate = parse(value, path)?;
            let status = decode_status(&wire.status, &field(path, "status"))?;
            Ok(StreamEvent::StatusUpdate(TaskStatusUpdateEvent {
                task_id: wire.task_id,
                context_id: wire.context_id,
                is_final: wire.is_final.unwrap_or(status.state.ends_stream()),
                status,
                metadata: wire.metadata,
            }))
        }
        KIND_ARTIFACT_UPDATE => {
            let wire: WireArtifactUpdate = parse(value, path)?;
            Ok(StreamEvent::ArtifactUpdate(TaskArtifactUpdateEvent {
                artifact: decode_artifact(&wire.artifact, &field(path, "artifact"))?,
                task_id: wire.task_id,
                context_id: wire.context_id,
                append: wire.append.unwrap_or(false),
                last_chunk: wire.last_chunk.unwrap_or(false),
                metadata: wire.metadata,
            }))
        }
        other => Err(DecodeError::new(
            &field(path, "kind"),
            format!("unknown event kind \"{other}\""),
        )),
    }
}

pub(super) fn encode_event(event: &StreamEvent) -> Value {
    match event {
        StreamEvent::Task(task) => encode_task(task),
        StreamEvent::Message(message) => encode_message(message),
        StreamEvent::StatusUpdate(update) => to_value(WireStatusUpdate {
            kind: KIND_STATUS_UPDATE.to_owned(),
            task_id: update.task_id.clone(),
            context_id: update.context_id.clone(),
            status: encode_status(&update.status),
            is_final: Some(update.is_final),
            metadata: update.metadata.clone(),
        }),
        StreamEvent::ArtifactUpdate(update) => to_value(WireArtifactUpdate {
            kind: KIND_ARTIFACT_UPDATE.to_owned(),
            task_id: update.task_id.clone(),
            context_id: update.context_id.clone(),
            artifact: encode_artifact(&update.artifact),
            append: Some(update.append),
            last_chunk: Some(update.last_chunk),
            metadata: update.metadata.clone(),
        }),
    }
}

// ---- request params ----

pub(super) fn decode_send_params(
    value: &Value,
    path: &str,
) -> Result<SendMessageParams, DecodeError> {
    let wire: WireSendParams = parse(value, path)?;
    let configuration = match &wire.configuration {
        Some(configuration) => {
            let config_path = field(path, "configuration");
            let config: WireConfiguration = parse(configuration, &config_path)?;
            Some(SendConfiguration {
                accepted_output_modes: config.accepted_output_modes.unwrap_or_default(),
                history_length: non_negative(
                    config.history_length,
                    &field(&config_path, "historyLength"),
                )?,
                blocking: config.blocking,
                push: match &config.push_notification_config {
                    Some(push) => Some(super::push::decode_send_push(
                        crate::ProtocolVersion::V0_3,
                        push,
                        &field(&config_path, "pushNotificationConfig"),
                    )?),
                    None => None,
                },
            })
        }
        None => None,
    };
    Ok(SendMessageParams {
        message: decode_message(&wire.message, &field(path, "message"))?,
        configuration,
        metadata: wire.metadata,
    })
}

pub(super) fn encode_send_params(params: &SendMessageParams) -> Value {
    to_value(WireSendParams {
        message: encode_message(&params.message),
        configuration: params.configuration.as_ref().map(|config| {
            to_value(WireConfiguration {
                accepted_output_modes: non_empty(&config.accepted_output_modes),
                history_length: config.history_length.map(i64::from),
                blocking: config.blocking,
                push_notification_config: config
                    .push
                    .as_ref()
                    .map(|push| super::push::encode_send_push(crate::ProtocolVersion::V0_3, push)),
            })
        }),
        metadata: params.metadata.clone(),
    })
}

pub(super) fn decode_task_query(value: &Value, path: &str) -> Result<TaskQueryParams, DecodeError> {
    let wire: WireTaskQuery = parse(value, path)?;
    Ok(TaskQueryParams {
        id: wire.id,
        history_length: non_negative(wire.history_length, &field(path, "historyLength"))?,
        metadata: wire.metadata,
    })
}

pub(super) fn encode_task_query(params: &TaskQueryParams) -> Value {
    to_value(WireTaskQuery {
        id: params.id.clone(),
        history_length: params.history_length.map(i64::from),
        metadata: params.metadata.clone(),
    })
}

pub(super) fn decode_task_id_params(
    value: &Value,
    path: &str,
) -> Result<TaskIdParams, DecodeError> {
    let wire: WireTaskIdParams = parse(value, path)?;
    Ok(TaskIdParams {
        id: wire.id,
        metadata: wire.metadata,
    })
}

pub(super) fn encode_task_id_params(params: &TaskIdParams) -> Value {
    to_value(WireTaskIdParams {
        id: params.id.clone(),
        metadata: params.metadata.clone(),
    })
}
