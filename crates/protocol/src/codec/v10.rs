//! A2A v1.0 wire shapes (ProtoJSON of `lf.a2a.v1`): no `kind`, a part holds one of `text`,
//! `raw`, `url`, `data`; enums are `ROLE_*` / `TASK_STATE_*`; stream events are one-key wrappers
//! and status updates have no `final`. Read as ProtoJSON parsers read (docs/wire.md, Versions):
//! unknown fields are ignored and proto (snake_case) field names are accepted; what is written
//! holds JSON names and no v0.3 field.

use serde_json::Value;

use super::{decode_list, field, non_empty, non_negative, parse, to_value, DecodeError};
use crate::model::{
    Artifact, FileBody, FileContent, ListTasksParams, ListTasksResult, Message, Part, PartContent,
    Role, SendConfiguration, SendMessageParams, StreamEvent, Task, TaskArtifactUpdateEvent,
    TaskIdParams, TaskQueryParams, TaskState, TaskStatus, TaskStatusUpdateEvent,
};

mod wire;

use wire::*;

/// Deserializes one level of a v1.0 payload; unknown fields (a v0.3 `kind` among them) are
/// ignored, but a level that fails to decode and has a `kind` says it looks like v0.3.
fn parse_v1<T: serde::de::DeserializeOwned>(value: &Value, path: &str) -> Result<T, DecodeError> {
    parse(value, path).map_err(|err| v03_hint(value, err))
}

/// Adds "is this a v0.3 payload?" to the error of an object with a `kind`: the sign of a v0.3
/// payload sent with the wrong version, which would otherwise fail with a puzzling message.
fn v03_hint(value: &Value, mut err: DecodeError) -> DecodeError {
    if value.get("kind").is_some() {
        err.problem
            .push_str(" (A2A v1.0 has no kind: is this a v0.3 payload?)");
    }
    err
}

// ---- enums (ProtoJSON names) ----

fn role_name(role: Role) -> &'static str {
    match role {
        Role::User => "ROLE_USER",
        Role::Agent => "ROLE_AGENT",
    }
}

fn decode_role(name: &str, path: &str) -> Result<Role, DecodeError> {
    match name {
        "ROLE_USER" => Ok(Role::User),
        "ROLE_AGENT" => Ok(Role::Agent),
        other => Err(DecodeError::new(
            path,
            format!("unknown role \"{other}\" (expected \"ROLE_USER\" or \"ROLE_AGENT\")"),
        )),
    }
}

pub(super) fn state_name(state: TaskState) -> &'static str {
    match state {
        TaskState::Submitted => "TASK_STATE_SUBMITTED",
        TaskState::Working => "TASK_STATE_WORKING",
        TaskState::InputRequired => "TASK_STATE_INPUT_REQUIRED",
        TaskState::AuthRequired => "TASK_STATE_AUTH_REQUIRED",
        TaskState::Completed => "TASK_STATE_COMPLETED",
        TaskState::Failed => "TASK_STATE_FAILED",
        TaskState::Canceled => "TASK_STATE_CANCELED",
        TaskState::Rejected => "TASK_STATE_REJECTED",
    }
}

pub(super) fn decode_state(name: &str, path: &str) -> Result<TaskState, DecodeError> {
    TaskState::ALL
        .into_iter()
        .find(|state| state_name(*state) == name)
        .ok_or_else(|| DecodeError::new(path, format!("unknown task state \"{name}\"")))
}

// ---- parts and messages ----

fn decode_part(value: &Value, path: &str) -> Result<Part, DecodeError> {
    let wire: WirePart = parse_v1(value, path)?;
    let file = |body| {
        PartContent::File(FileContent {
            name: wire.filename.clone(),
            media_type: wire.media_type.clone(),
            body,
        })
    };
    let content = match (wire.text, wire.raw, wire.url, wire.data) {
        (Some(text), None, None, None) => PartContent::Text(text),
        (None, Some(raw), None, None) => file(FileBody::Bytes(raw)),
        (None, None, Some(url), None) => file(FileBody::Uri(url)),
        (None, None, None, Some(data)) => PartContent::Data(data),
        (text, raw, url, data) => {
            let present: Vec<&str> = [
                ("text", text.is_some()),
                ("raw", raw.is_some()),
                ("url", url.is_some()),
                ("data", data.is_some()),
            ]
            .into_iter()
            .filter_map(|(name, present)| present.then_some(name))
            .collect();
            let found = if present.is_empty() {
                "none".to_owned()
            } else {
                present.join(", ")
            };
            return Err(v03_hint(
                value,
                DecodeError::new(
                    path,
                    format!("a part holds exactly one of text, raw, url and data (found: {found})"),
                ),
            ));
        }
    };
    Ok(Part {
        content,
        metadata: wire.metadata,
    })
}

fn encode_part(part: &Part) -> Value {
    let mut wire = WirePart {
        text: None,
        raw: None,
        url: None,
        data: None,
        metadata: part.metadata.clone(),
        filename: None,
        media_type: None,
    };
    match &part.content {
        PartContent::Text(text) => wire.text = Some(text.clone()),
        PartContent::Data(data) => wire.data = Some(data.clone()),
        PartContent::File(file) => {
            match &file.body {
                FileBody::Bytes(bytes) => wire.raw = Some(bytes.clone()),
                FileBody::Uri(uri) => wire.url = Some(uri.clone()),
            }
            wire.filename = file.name.clone();
            wire.media_type = file.media_type.clone();
        }
    }
    to_value(wire)
}

fn decode_parts(parts: &[Value], path: &str) -> Result<Vec<Part>, DecodeError> {
    decode_list(parts, path, decode_part)
}

pub(super) fn decode_message(value: &Value, path: &str) -> Result<Message, DecodeError> {
    let wire: WireMessage = parse_v1(value, path)?;
    let role = decode_role(&wire.role, &field(path, "role")).map_err(|err| v03_hint(value, err))?;
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
        message_id: message.message_id.clone(),
        context_id: message.context_id.clone(),
        task_id: message.task_id.clone(),
        role: role_name(message.role).to_owned(),
        parts: message.parts.iter().map(encode_part).collect(),
        metadata: message.metadata.clone(),
        extensions: non_empty(&message.extensions),
        reference_task_ids: non_empty(&message.reference_task_ids),
    })
}

// ---- tasks ----

fn decode_status(value: &Value, path: &str) -> Result<TaskStatus, DecodeError> {
    let wire: WireStatus = parse_v1(value, path)?;
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
    let wire: WireArtifact = parse_v1(value, path)?;
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
        extensions: None,
    })
}

pub(super) fn decode_task(value: &Value, path: &str) -> Result<Task, DecodeError> {
    let wire: WireTask = parse_v1(value, path)?;
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
        id: task.id.clone(),
        context_id: task.context_id.clone(),
        status: encode_status(&task.status),
        artifacts: non_empty(&task.artifacts)
            .map(|artifacts| artifacts.iter().map(encode_artifact).collect()),
        history: non_empty(&task.history)
            .map(|history| history.iter().map(encode_message).collect()),
        metadata: task.metadata.clone(),
    })
}

// ---- stream events ----

pub(super) fn decode_event(value: &Value, path: &str) -> Result<StreamEvent, DecodeError> {
    let wire: WireStreamResponse = parse_v1(value, path)?;
    match (
        wire.task,
        wire.message,
        wire.status_update,
        wire.artifact_update,
    ) {
        (Some(task), None, None, None) => {
            decode_task(&task, &field(path, "task")).map(StreamEvent::Task)
        }
        (None, Some(message), None, None) => {
            decode_message(&message, &field(path, "message")).map(StreamEvent::Message)
        }
        (None, None, Some(update), None) => {
            let path = field(path, "statusUpdate");
            let wire: WireStatusUpdate = parse_v1(&update, &path)?;
            let status = decode_status(&wire.status, &field(&path, "status"))?;
            Ok(StreamEvent::StatusUpdate(TaskStatusUpdateEvent {
                task_id: wire.task_id,
                context_id: wire.context_id,
                // v1.0 has no `final`: the stream ends after a terminal or interrupted state.
                is_final: status.state.ends_stream(),
                status,
                metadata: wire.metadata,
            }))
        }
        (None, None, None, Some(update)) => {
            let path = field(path, "artifactUpdate");
            let wire: WireArtifactUpdate = parse_v1(&update, &path)?;
            Ok(StreamEvent::ArtifactUpdate(TaskArtifactUpdateEvent {
                artifact: decode_artifact(&wire.artifact, &field(&path, "artifact"))?,
                task_id: wire.task_id,
                context_id: wire.context_id,
                append: wire.append.unwrap_or(false),
                last_chunk: wire.last_chunk.unwrap_or(false),
                metadata: wire.metadata,
            }))
        }
        (_, _, _, _) => Err(v03_hint(
            value,
            DecodeError::new(
                path,
                "needs exactly one of task, message, statusUpdate and artifactUpdate",
            ),
        )),
    }
}

pub(super) fn encode_event(event: &StreamEvent) -> Value {
    let mut wire = WireStreamResponse::default();
    match event {
        StreamEvent::Task(task) => wire.task = Some(encode_task(task)),
        StreamEvent::Message(message) => wire.message = Some(encode_message(message)),
        StreamEvent::StatusUpdate(update) => {
            wire.status_update = Some(to_value(WireStatusUpdate {
                task_id: update.task_id.clone(),
                context_id: update.context_id.clone(),
                status: encode_status(&update.status),
                metadata: update.metadata.clone(),
            }))
        }
        StreamEvent::ArtifactUpdate(update) => {
            wire.artifact_update = Some(to_value(WireArtifactUpdate {
                task_id: update.task_id.clone(),
                context_id: update.context_id.clone(),
                artifact: encode_artifact(&update.artifact),
                append: Some(update.append),
                last_chunk: Some(update.last_chunk),
                metadata: update.metadata.clone(),
            }))
        }
    }
    to_value(wire)
}

// ---- request params and results ----

pub(super) fn decode_send_params(
    value: &Value,
    path: &str,
) -> Result<SendMessageParams, DecodeError> {
    let wire: WireSendParams = parse_v1(value, path)?;
    let configuration = match &wire.configuration {
        Some(configuration) => {
            let config_path = field(path, "configuration");
            let config: WireConfiguration = parse_v1(configuration, &config_path)?;
            Some(SendConfiguration {
                accepted_output_modes: config.accepted_output_modes.unwrap_or_default(),
                history_length: non_negative(
                    config.history_length,
                    &field(&config_path, "historyLength"),
                )?,
                blocking: config.return_immediately.map(|immediately| !immediately),
                push: match &config.task_push_notification_config {
                    Some(push) => Some(super::push::decode_send_push(
                        crate::ProtocolVersion::V1_0,
                        push,
                        &field(&config_path, "taskPushNotificationConfig"),
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
        tenant: None,
        message: encode_message(&params.message),
        configuration: params.configuration.as_ref().map(|config| {
            to_value(WireConfiguration {
                accepted_output_modes: non_empty(&config.accepted_output_modes),
                task_push_notification_config: config
                    .push
                    .as_ref()
                    .map(|push| super::push::encode_send_push(crate::ProtocolVersion::V1_0, push)),
                history_length: config.history_length.map(i64::from),
                return_immediately: config.blocking.map(|blocking| !blocking),
            })
        }),
        metadata: params.metadata.clone(),
    })
}

pub(super) fn decode_task_query(value: &Value, path: &str) -> Result<TaskQueryParams, DecodeError> {
    let wire: WireTaskQuery = parse_v1(value, path)?;
    Ok(TaskQueryParams {
        id: wire.id,
        history_length: non_negative(wire.history_length, &field(path, "historyLength"))?,
        metadata: None,
    })
}

pub(super) fn encode_task_query(params: &TaskQueryParams) -> Value {
    to_value(WireTaskQuery {
        tenant: None,
        id: params.id.clone(),
        history_length: params.history_length.map(i64::from),
    })
}

pub(super) fn decode_task_id_params(
    value: &Value,
    path: &str,
) -> Result<TaskIdParams, DecodeError> {
    let wire: WireTaskIdParams = parse_v1(value, path)?;
    Ok(TaskIdParams {
        id: wire.id,
        metadata: wire.metadata,
    })
}

pub(super) fn encode_task_id_params(params: &TaskIdParams) -> Value {
    to_value(WireTaskIdParams {
        tenant: None,
        id: params.id.clone(),
        metadata: params.metadata.clone(),
    })
}

pub(super) fn decode_list_tasks_params(
    value: &Value,
    path: &str,
) -> Result<ListTasksParams, DecodeError> {
    let wire: WireListTasksParams = parse_v1(value, path)?;
    if wire.status_timestamp_after.is_some() {
        return Err(DecodeError::new(
            &field(path, "statusTimestampAfter"),
            "not supported",
        ));
    }
    let status = match wire.status.as_deref() {
        // The proto default means "no filter".
        None | Some("TASK_STATE_UNSPECIFIED") => None,
        Some(name) => Some(decode_state(name, &field(path, "status"))?),
    };
    Ok(ListTasksParams {
        context_id: wire.context_id,
        status,
        page_size: non_negative(wire.page_size, &field(path, "pageSize"))?,
        page_token: wire.page_token,
        history_length: non_negative(wire.history_length, &field(path, "historyLength"))?,
        include_artifacts: wire.include_artifacts,
    })
}

pub(super) fn encode_list_tasks_params(params: &ListTasksParams) -> Value {
    to_value(WireListTasksParams {
        tenant: None,
        context_id: params.context_id.clone(),
        status: params.status.map(|state| state_name(state).to_owned()),
        page_size: params.page_size.map(i64::from),
        page_token: params.page_token.clone(),
        history_length: params.history_length.map(i64::from),
        status_timestamp_after: None,
        include_artifacts: params.include_artifacts,
    })
}

pub(super) fn encode_list_tasks_result(result: &ListTasksResult) -> Value {
    to_value(WireListTasksResult {
        tasks: result.tasks.iter().map(encode_task).collect(),
        next_page_token: result.next_page_token.clone(),
        page_size: i64::from(result.page_size),
        total_size: i64::from(result.total_size),
    })
}

pub(super) fn decode_list_tasks_result(
    value: &Value,
    path: &str,
) -> Result<ListTasksResult, DecodeError> {
    let wire: WireListTasksResult = parse_v1(value, path)?;
    Ok(ListTasksResult {
        tasks: decode_list(&wire.tasks, &field(path, "tasks"), decode_task)?,
        next_page_token: wire.next_page_token,
        page_size: non_negative(Some(wire.page_size), &field(path, "pageSize"))?.unwrap_or(0),
        total_size: non_negative(Some(wire.total_size), &field(path, "totalSize"))?.unwrap_or(0),
    })
}
