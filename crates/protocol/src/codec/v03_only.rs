//! The v0.3 codec on its own, for a client that speaks only v0.3: the browser UI (docs/wire.md,
//! Versions; the server's relay translates for remote agents that offer only v1.0). These entry
//! points call the v0.3 wire code directly: a call through the version-taking functions of
//! [`super`] keeps both arms of their `match` linked when the version is a value, and the v1.0
//! codec is 12.7 KB of the UI's gzip download (docs/toolchain.md, UI size).

use serde_json::Value;

use super::{v03, DecodeError, Method};
use crate::jsonrpc::ErrorObject;
use crate::model::{
    ProtocolVersion, SendMessageParams, StreamEvent, Task, TaskIdParams, TaskQueryParams,
};

/// The version these functions speak: the `A2A-Version` header is `VERSION.as_str()`.
pub const VERSION: ProtocolVersion = ProtocolVersion::V0_3;

/// A method's v0.3 name (`message/stream`). `ListTasks`, which v0.3 lacks, keeps its v1.0
/// name, as [`Method::name`] does.
pub fn method_name(method: Method) -> &'static str {
    match method {
        Method::SendMessage => "message/send",
        Method::SendStreamingMessage => "message/stream",
        Method::GetTask => "tasks/get",
        Method::CancelTask => "tasks/cancel",
        Method::SubscribeToTask => "tasks/resubscribe",
        Method::ListTasks => "ListTasks",
    }
}

pub fn encode_send_params(params: &SendMessageParams) -> Value {
    v03::encode_send_params(params)
}

pub fn encode_task_id_params(params: &TaskIdParams) -> Value {
    v03::encode_task_id_params(params)
}

pub fn encode_task_query(params: &TaskQueryParams) -> Value {
    v03::encode_task_query(params)
}

pub fn decode_task(task: &Value) -> Result<Task, DecodeError> {
    v03::decode_task(task, "result")
}

/// Reads the result of `message/send`; only a task or a message is accepted.
pub fn decode_send_result(result: &Value) -> Result<StreamEvent, DecodeError> {
    super::send_result_only(v03::decode_event(result, "result")?)
}

/// One SSE `data:` payload (a whole JSON-RPC response) -> the event, or the peer's error.
pub fn decode_stream_response(data: &str) -> Result<Result<StreamEvent, ErrorObject>, DecodeError> {
    super::stream_response_with(data, |result| v03::decode_event(result, "result"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn method_names_are_the_version_tables() {
        for method in Method::ALL {
            assert_eq!(method_name(method), method.name(VERSION));
        }
    }
}
