//! The v0.3 and v1.0 codecs: the ONLY place that knows which A2A version is on the wire
//! (docs/wire.md, Versions). Everything else reads and writes the one model in [`crate::model`].
//!
//! Each version has private serde wire structs ([`v03`], [`v10`]) that hold nested objects as
//! raw JSON, so every level is decoded on its own and a [`DecodeError`] can name the exact JSON
//! path of a problem ("params.message.parts[0].kind: missing").

mod card;
mod push;
pub mod translate;
mod v03;
pub mod v03_only;
mod v10;

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{json, Value};

use crate::jsonrpc::{ErrorCode, ErrorObject, Response};
use crate::model::{
    ListTasksParams, ListTasksResult, Message, ProtocolVersion, SendMessageParams, StreamEvent,
    Task, TaskIdParams, TaskQueryParams, TaskState,
};

pub use push::{
    decode_push_query, decode_push_set, decode_task_push_config, encode_push_config_list,
    encode_push_notification, encode_task_push_config, PushMethod,
};

pub use card::{
    decode_agent_card, decode_card_extensions, decode_card_interfaces, encode_agent_card,
    offer_card_interface, CardFlavor,
};

/// A payload that does not match its version's schema; the Display names the JSON path.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {problem}")]
pub struct DecodeError {
    /// Where in the payload, e.g. `params.message.parts[0]`.
    pub path: String,
    pub problem: String,
}

impl DecodeError {
    pub(crate) fn new(path: &str, problem: impl Into<String>) -> Self {
        DecodeError {
            path: path.to_owned(),
            problem: problem.into(),
        }
    }
}

/// The A2A methods, whatever their name in a given version.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Method {
    SendMessage,
    SendStreamingMessage,
    GetTask,
    CancelTask,
    SubscribeToTask,
    /// v1.0 only: v0.3 has no method to list tasks.
    ListTasks,
}

impl Method {
    const ALL: [Method; 6] = [
        Method::SendMessage,
        Method::SendStreamingMessage,
        Method::GetTask,
        Method::CancelTask,
        Method::SubscribeToTask,
        Method::ListTasks,
    ];

    /// Reads a JSON-RPC method name in the request's version; `None` for a method that version
    /// does not have (including a v1.0 name sent as v0.3 and the reverse).
    pub fn from_name(version: ProtocolVersion, name: &str) -> Option<Method> {
        Method::ALL
            .into_iter()
            .filter(|method| method.exists_in(version))
            .find(|method| method.name(version) == name)
    }

    /// The method's name in a version. v0.3 has no list method; `ListTasks` keeps its v1.0
    /// name there, and [`Method::from_name`] never accepts it for v0.3.
    pub fn name(self, version: ProtocolVersion) -> &'static str {
        match (version, self) {
            (ProtocolVersion::V0_3, Method::SendMessage) => "message/send",
            (ProtocolVersion::V0_3, Method::SendStreamingMessage) => "message/stream",
            (ProtocolVersion::V0_3, Method::GetTask) => "tasks/get",
            (ProtocolVersion::V0_3, Method::CancelTask) => "tasks/cancel",
            (ProtocolVersion::V0_3, Method::SubscribeToTask) => "tasks/resubscribe",
            (ProtocolVersion::V1_0, Method::SendMessage) => "SendMessage",
            (ProtocolVersion::V1_0, Method::SendStreamingMessage) => "SendStreamingMessage",
            (ProtocolVersion::V1_0, Method::GetTask) => "GetTask",
            (ProtocolVersion::V1_0, Method::CancelTask) => "CancelTask",
            (ProtocolVersion::V1_0, Method::SubscribeToTask) => "SubscribeToTask",
            (ProtocolVersion::V0_3 | ProtocolVersion::V1_0, Method::ListTasks) => "ListTasks",
        }
    }

    /// Whether the method exists in that version of the protocol.
    pub fn exists_in(self, version: ProtocolVersion) -> bool {
        match self {
            Method::ListTasks => version == ProtocolVersion::V1_0,
            Method::SendMessage
            | Method::SendStreamingMessage
            | Method::GetTask
            | Method::CancelTask
            | Method::SubscribeToTask => true,
        }
    }

    /// Streaming methods answer with `text/event-stream`.
    pub fn is_streaming(self) -> bool {
        match self {
            Method::SendStreamingMessage | Method::SubscribeToTask => true,
            Method::SendMessage | Method::GetTask | Method::CancelTask | Method::ListTasks => false,
        }
    }
}

/// Decodes the params of `message/send` / `message/stream` (v1.0 `SendMessage`, `SendStreamingMessage`).
pub fn decode_send_params(
    v: ProtocolVersion,
    params: &Value,
) -> Result<SendMessageParams, DecodeError> {
    match v {
        ProtocolVersion::V0_3 => v03::decode_send_params(params, "params"),
        ProtocolVersion::V1_0 => v10::decode_send_params(params, "params"),
    }
}

pub fn encode_send_params(v: ProtocolVersion, params: &SendMessageParams) -> Value {
    match v {
        ProtocolVersion::V0_3 => v03::encode_send_params(params),
        ProtocolVersion::V1_0 => v10::encode_send_params(params),
    }
}

/// Decodes the params of `tasks/get` (v1.0 `GetTask`).
pub fn decode_task_query(
    v: ProtocolVersion,
    params: &Value,
) -> Result<TaskQueryParams, DecodeError> {
    match v {
        ProtocolVersion::V0_3 => v03::decode_task_query(params, "params"),
        ProtocolVersion::V1_0 => v10::decode_task_query(params, "params"),
    }
}

/// v1.0's `GetTask` has no `metadata`; it is dropped there.
pub fn encode_task_query(v: ProtocolVersion, params: &TaskQueryParams) -> Value {
    match v {
        ProtocolVersion::V0_3 => v03::encode_task_query(params),
        ProtocolVersion::V1_0 => v10::encode_task_query(params),
    }
}

/// Decodes the params of `tasks/cancel` and `tasks/resubscribe` (v1.0 `CancelTask`, `SubscribeToTask`).
pub fn decode_task_id_params(
    v: ProtocolVersion,
    params: &Value,
) -> Result<TaskIdParams, DecodeError> {
    match v {
        ProtocolVersion::V0_3 => v03::decode_task_id_params(params, "params"),
        ProtocolVersion::V1_0 => v10::decode_task_id_params(params, "params"),
    }
}

pub fn encode_task_id_params(v: ProtocolVersion, params: &TaskIdParams) -> Value {
    match v {
        ProtocolVersion::V0_3 => v03::encode_task_id_params(params),
        ProtocolVersion::V1_0 => v10::encode_task_id_params(params),
    }
}

/// Decodes the params of v1.0 `ListTasks` (v0.3 has no such method).
pub fn decode_list_tasks_params(params: &Value) -> Result<ListTasksParams, DecodeError> {
    v10::decode_list_tasks_params(params, "params")
}

pub fn encode_list_tasks_params(params: &ListTasksParams) -> Value {
    v10::encode_list_tasks_params(params)
}

pub fn encode_list_tasks_result(result: &ListTasksResult) -> Value {
    v10::encode_list_tasks_result(result)
}

pub fn decode_list_tasks_result(result: &Value) -> Result<ListTasksResult, DecodeError> {
    v10::decode_list_tasks_result(result, "result")
}

/// One streamed `result`: v0.3 an object with `kind`; v1.0 a wrapper with one key
/// (`task`, `message`, `statusUpdate`, `artifactUpdate`) and no `final`.
pub fn encode_event(v: ProtocolVersion, event: &StreamEvent) -> Value {
    match v {
        ProtocolVersion::V0_3 => v03::encode_event(event),
        ProtocolVersion::V1_0 => v10::encode_event(event),
    }
}

/// Reads one streamed `result`. v1.0 status updates get `is_final` from their state.
pub fn decode_event(v: ProtocolVersion, result: &Value) -> Result<StreamEvent, DecodeError> {
    match v {
        ProtocolVersion::V0_3 => v03::decode_event(result, "result"),
        ProtocolVersion::V1_0 => v10::decode_event(result, "result"),
    }
}

/// The result of `message/send`: a Task or a Message (v1.0: `{"task":…}` / `{"message":…}`).
/// Pass a [`StreamEvent::Task`] or [`StreamEvent::Message`]; an update event (which no send
/// result may be) is written as it would be streamed.
pub fn encode_send_result(v: ProtocolVersion, result: &StreamEvent) -> Value {
    encode_event(v, result)
}

/// Reads the result of `message/send`; only a task or a message is accepted.
pub fn decode_send_result(v: ProtocolVersion, result: &Value) -> Result<StreamEvent, DecodeError> {
    send_result_only(decode_event(v, result)?)
}

/// A send result's event, refused when it is an update (which no send result may be).
fn send_result_only(event: StreamEvent) -> Result<StreamEvent, DecodeError> {
    match event {
        StreamEvent::Task(_) | StreamEvent::Message(_) => Ok(event),
        StreamEvent::StatusUpdate(_) | StreamEvent::ArtifactUpdate(_) => Err(DecodeError::new(
            "result",
            "a send result must be a task or a message",
        )),
    }
}

/// A task as `tasks/get` returns it (v0.3 with `kind: "task"`).
/// A task state's name in a version: `input-required` in v0.3, `TASK_STATE_INPUT_REQUIRED` in
/// v1.0. Signoff's store and REST answers use the v0.3 names.
pub fn state_name(v: ProtocolVersion, state: TaskState) -> &'static str {
    match v {
        ProtocolVersion::V0_3 => v03::state_name(state),
        ProtocolVersion::V1_0 => v10::state_name(state),
    }
}

/// Reads a task state's name in a version; `None` for a name that version does not have.
pub fn parse_state(v: ProtocolVersion, name: &str) -> Option<TaskState> {
    match v {
        ProtocolVersion::V0_3 => v03::decode_state(name, "state").ok(),
        ProtocolVersion::V1_0 => v10::decode_state(name, "state").ok(),
    }
}

pub fn encode_task(v: ProtocolVersion, task: &Task) -> Value {
    match v {
        ProtocolVersion::V0_3 => v03::encode_task(task),
        ProtocolVersion::V1_0 => v10::encode_task(task),
    }
}

pub fn decode_task(v: ProtocolVersion, task: &Value) -> Result<Task, DecodeError> {
    match v {
        ProtocolVersion::V0_3 => v03::decode_task(task, "result"),
        ProtocolVersion::V1_0 => v10::decode_task(task, "result"),
    }
}

pub fn encode_message(v: ProtocolVersion, message: &Message) -> Value {
    match v {
        ProtocolVersion::V0_3 => v03::encode_message(message),
        ProtocolVersion::V1_0 => v10::encode_message(message),
    }
}

pub fn decode_message(v: ProtocolVersion, message: &Value) -> Result<Message, DecodeError> {
    match v {
        ProtocolVersion::V0_3 => v03::decode_message(message, "message"),
        ProtocolVersion::V1_0 => v10::decode_message(message, "message"),
    }
}

/// The `@type` of v1.0's error detail.
const ERROR_INFO_TYPE: &str = "type.googleapis.com/google.rpc.ErrorInfo";
const ERROR_INFO_DOMAIN: &str = "a2a-protocol.org";

/// A JSON-RPC error object in a version's shape: v1.0 adds `data: [ErrorInfo]` (docs/wire.md,
/// Error codes).
pub fn error_object(
    v: ProtocolVersion,
    code: ErrorCode,
    message: impl Into<String>,
) -> ErrorObject {
    let mut error = code.with_message(message);
    match v {
        ProtocolVersion::V0_3 => {}
        ProtocolVersion::V1_0 => {
            error.data = Some(json!([{
                "@type": ERROR_INFO_TYPE,
                "reason": code.reason(),
                "domain": ERROR_INFO_DOMAIN,
            }]));
        }
    }
    error
}

/// One SSE `data:` payload (a whole JSON-RPC response) -> the event, or the peer's error.
pub fn decode_stream_response(
    v: ProtocolVersion,
    data: &str,
) -> Result<Result<StreamEvent, ErrorObject>, DecodeError> {
    stream_response_with(data, |result| decode_event(v, result))
}

/// [`decode_stream_response`] with the result read by `decode`.
fn stream_response_with(
    data: &str,
    decode: impl FnOnce(&Value) -> Result<StreamEvent, DecodeError>,
) -> Result<Result<StreamEvent, ErrorObject>, DecodeError> {
    let value: Value = serde_json::from_str(data)
        .map_err(|err| DecodeError::new("data", format!("not JSON: {err}")))?;
    let response =
        Response::from_value(value).map_err(|err| DecodeError::new("response", err.to_string()))?;
    match response.outcome {
        Ok(result) => decode(&result).map(Ok),
        Err(error) => Ok(Err(error)),
    }
}

// ---- helpers shared by both versions ----

/// Deserializes one level of a payload, naming `path` in the error.
pub(crate) fn parse<T: DeserializeOwned>(value: &Value, path: &str) -> Result<T, DecodeError> {
    T::deserialize(value).map_err(|err| DecodeError::new(path, err.to_string()))
}

/// Serializes a wire struct. Cannot fail: every wire struct has string keys and no custom
/// serializer, so the fallback is never taken.
pub(crate) fn to_value<T: Serialize>(wire: T) -> Value {
    serde_json::to_value(wire).unwrap_or(Value::Null)
}

pub(crate) fn field(path: &str, name: &str) -> String {
    format!("{path}.{name}")
}

pub(crate) fn index(path: &str, i: usize) -> String {
    format!("{path}[{i}]")
}

/// A count on the wire is signed (ProtoJSON int32); negatives are invalid params.
/// An empty list is left out of the wire form (both versions treat absent and empty alike).
pub(crate) fn non_empty<T: Clone>(items: &[T]) -> Option<Vec<T>> {
    if items.is_empty() {
        None
    } else {
        Some(items.to_vec())
    }
}

pub(crate) fn non_negative(value: Option<i64>, path: &str) -> Result<Option<u32>, DecodeError> {
    match value {
        None => Ok(None),
        Some(n) if n < 0 => Err(DecodeError::new(
            path,
            format!("must not be negative, got {n}"),
        )),
        Some(n) => u32::try_from(n)
            .map(Some)
            .map_err(|_| DecodeError::new(path, format!("{n} is too large"))),
    }
}

/// Decodes each element of a list with its own path.
pub(crate) fn decode_list<T>(
    items: &[Value],
    path: &str,
    decode: impl Fn(&Value, &str) -> Result<T, DecodeError>,
) -> Result<Vec<T>, DecodeError> {
    // A loop rather than a `collect` into `Result`: each such `collect` is its own adapter in
    // the browser's download.
    let mut decoded = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        decoded.push(decode(item, &index(path, i))?);
    }
    Ok(decoded)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_names_per_version_read_back() {
        use ProtocolVersion::{V0_3, V1_0};
        assert_eq!(state_name(V0_3, TaskState::InputRequired), "input-required");
        assert_eq!(
            state_name(V1_0, TaskState::InputRequired),
            "TASK_STATE_INPUT_REQUIRED"
        );
        for state in TaskState::ALL {
            for version in [V0_3, V1_0] {
                assert_eq!(
                    parse_state(version, state_name(version, state)),
                    Some(state)
                );
            }
        }
        assert_eq!(parse_state(V0_3, "TASK_STATE_WORKING"), None);
        assert_eq!(parse_state(V1_0, "working"), None);
    }

    #[test]
    fn method_names_per_version() {
        use ProtocolVersion::{V0_3, V1_0};
        for (version, name, method) in [
            (V0_3, "message/stream", Some(Method::SendStreamingMessage)),
            (V0_3, "tasks/resubscribe", Some(Method::SubscribeToTask)),
            (V0_3, "ListTasks", None),
            (V0_3, "SendMessage", None),
            (
                V1_0,
                "SendStreamingMessage",
                Some(Method::SendStreamingMessage),
            ),
            (V1_0, "ListTasks", Some(Method::ListTasks)),
            (V1_0, "message/send", None),
        ] {
            assert_eq!(Method::from_name(version, name), method, "{name}");
        }
        for method in Method::ALL {
            if method.exists_in(V0_3) {
                assert_eq!(Method::from_name(V0_3, method.name(V0_3)), Some(method));
            }
            assert_eq!(Method::from_name(V1_0, method.name(V1_0)), Some(method));
        }
    }

    #[test]
    fn decode_errors_name_the_path() {
        use ProtocolVersion::{V0_3, V1_0};
        let message =
            json!({"kind":"message","messageId":"m","role":"user","parts":[{"text":"hi"}]});
        let check = |v, params: Value, expect: &str| {
            let error = decode_send_params(v, &params).map(|_| ()).unwrap_err();
            assert_eq!(error.to_string(), expect);
        };
        check(
            V0_3,
            json!({"message": message}),
            "params.message.parts[0].kind: missing (a v0.3 part says \"text\", \"data\" or \"file\")",
        );
        check(
            V0_3,
            json!({"message": {"messageId":"m","role":"user","parts":[]}}),
            "params.message.parts: must not be empty",
        );
        check(
            V0_3,
            json!({"message": {"messageId":"m","role":"user","parts":[{"kind":"text","text":"a"}]},
                   "configuration": {"historyLength": -1}}),
            "params.configuration.historyLength: must not be negative, got -1",
        );
        check(
            V1_0,
            json!({"message": message}),
            "params.message.role: unknown role \"user\" (expected \"ROLE_USER\" or \"ROLE_AGENT\") \
             (A2A v1.0 has no kind: is this a v0.3 payload?)",
        );
        check(
            V1_0,
            json!({"message": {"messageId":"m","role":"user","parts":[{"text":"a"}]}}),
            "params.message.role: unknown role \"user\" (expected \"ROLE_USER\" or \"ROLE_AGENT\")",
        );
        check(
            V1_0,
            json!({"message": {"messageId":"m","message_id":"n","role":"ROLE_USER","parts":[{"text":"a"}]}}),
            "params.message: duplicate field `messageId`",
        );
        for v in [V0_3, V1_0] {
            let error = decode_task_query(v, &json!({"id": "t-1", "historyLength": -2}));
            assert_eq!(
                error.map(|_| ()).unwrap_err().to_string(),
                "params.historyLength: must not be negative, got -2"
            );
        }
        let ok = decode_send_params(
            V1_0,
            &json!({"message": {"messageId":"m","role":"ROLE_USER","parts":[{"text":"a"}]}}),
        )
        .unwrap();
        assert_eq!(ok.message.text(), "a");
    }

    #[test]
    fn v1_requests_are_read_as_protojson_parsers_read_them() {
        // Unknown fields at every level are ignored, a v0.3 `kind` among them.
        let camel = decode_send_params(
            ProtocolVersion::V1_0,
            &json!({"message": {"messageId": "m", "role": "ROLE_USER", "contextId": "c",
                                "parts": [{"text": "a", "kind": "text", "tckPart": 1}],
                                "tckUnknownField": "ignored"},
                    "configuration": {"historyLength": 2, "returnImmediately": true, "x": {}},
                    "tckExtraParam": 42}),
        )
        .unwrap();
        // The proto field names read the same.
        let snake = decode_send_params(
            ProtocolVersion::V1_0,
            &json!({"message": {"message_id": "m", "role": "ROLE_USER", "context_id": "c",
                                "parts": [{"text": "a"}]},
                    "configuration": {"history_length": 2, "return_immediately": true}}),
        )
        .unwrap();
        assert_eq!(camel, snake);
        assert_eq!(snake.message.context_id.as_deref(), Some("c"));
        let configuration = snake.configuration.unwrap();
        assert_eq!(configuration.history_length, Some(2));
        assert_eq!(configuration.blocking, Some(false));
        let query = decode_task_query(
            ProtocolVersion::V1_0,
            &json!({"id": "t", "history_length": 3, "tenant": "x", "extra": true}),
        )
        .unwrap();
        assert_eq!(query.history_length, Some(3));
        let list = decode_list_tasks_params(
            &json!({"context_id": "c", "page_size": 5, "include_artifacts": true, "extra": 1}),
        )
        .unwrap();
        assert_eq!(
            (
                list.context_id.as_deref(),
                list.page_size,
                list.include_artifacts
            ),
            (Some("c"), Some(5), Some(true))
        );
    }

    #[test]
    fn v1_errors_carry_error_info() {
        let error = error_object(
            ProtocolVersion::V1_0,
            ErrorCode::TaskNotFound,
            "no such task",
        );
        assert_eq!(
            serde_json::to_value(&error).unwrap_or(Value::Null),
            json!({"code": -32001, "message": "no such task", "data": [{
                "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                "domain": "a2a-protocol.org", "reason": "TASK_NOT_FOUND"}]})
        );
        let error = error_object(
            ProtocolVersion::V0_3,
            ErrorCode::TaskNotFound,
            "no such task",
        );
        assert_eq!(error.data, None);
    }
}
