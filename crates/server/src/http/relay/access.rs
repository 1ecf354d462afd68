//! The tasks a relayed request names, read from it before it is forwarded, and the answer to a
//! request the runtime refuses (crates/server/README.md, Relayed chats). The runtime judges
//! each task (`Relay::check`); the request is read leniently, so a task id in any field a
//! remote agent might take one from is judged, whatever the method: only a message whose
//! `taskId` the protocol reads, and a method that reads a task, ask less than its owner's
//! rights.

use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::Value;
use signoff_protocol::codec::{self, Method};
use signoff_protocol::jsonrpc::Response as RpcResponse;
use signoff_protocol::sse::encode_data;
use signoff_protocol::ProtocolVersion;

use super::super::a2a::rpc_error;
use super::RpcCall;
use crate::agent::runtime::RelayedAsk;
use crate::agent::AgentError;

/// The fields of a request's params (and of its message) that may hold a task id.
const TASK_ID_FIELDS: [&str; 3] = ["id", "taskId", "task_id"];
/// Fields that may hold a resource name, `tasks/{id}/…` (v1.0 drafts).
const NAME_FIELDS: [&str; 2] = ["name", "parent"];
/// A message's references to other tasks, which a remote agent may read.
const REFERENCE_FIELDS: [&str; 2] = ["referenceTaskIds", "reference_task_ids"];

/// What the relayed JSON-RPC request `body` (in `version`) asks of the tasks it names.
pub(super) fn asks(body: &[u8], version: ProtocolVersion) -> Vec<RelayedAsk> {
    let Ok(request) = serde_json::from_slice::<Value>(body) else {
        return Vec::new();
    };
    let params = request.get("params").unwrap_or(&Value::Null);
    let method = request
        .get("method")
        .and_then(Value::as_str)
        .and_then(|name| Method::from_name(version, name));
    let mut named = named_ids(params);
    let mut asks: Vec<RelayedAsk> = references(params).map(RelayedAsk::Read).collect();
    match method {
        Some(Method::SendMessage | Method::SendStreamingMessage) => {
            let message = codec::decode_send_params(version, params)
                .ok()
                .map(|sent| sent.message)
                .filter(|message| message.task_id.is_some());
            if let Some(message) = message {
                named.retain(|id| Some(id) != message.task_id.as_ref());
                asks.push(RelayedAsk::Message(Box::new(message)));
            }
            asks.extend(named.into_iter().map(RelayedAsk::Own));
        }
        Some(Method::GetTask | Method::SubscribeToTask) => {
            asks.extend(named.into_iter().map(RelayedAsk::Read));
        }
        // A cancel, the push config methods, and any method not known here.
        Some(Method::CancelTask | Method::ListTasks) | None => {
            asks.extend(named.into_iter().map(RelayedAsk::Own));
        }
    }
    asks
}

/// Every string in `params` (or its message) where a task id may stand, once each.
fn named_ids(params: &Value) -> Vec<String> {
    let message = params.get("message").unwrap_or(&Value::Null);
    let ids = [params, message].into_iter().flat_map(|object| {
        TASK_ID_FIELDS
            .iter()
            .filter_map(|field| object.get(field)?.as_str().map(str::to_owned))
            .collect::<Vec<_>>()
    });
    let names = NAME_FIELDS
        .iter()
        .filter_map(|field| params.get(field)?.as_str())
        .filter_map(|name| name.strip_prefix("tasks/"))
        .map(|rest| rest.split('/').next().unwrap_or(rest).to_owned());
    let mut named: Vec<String> = Vec::new();
    for id in ids.chain(names) {
        if !named.contains(&id) {
            named.push(id);
        }
    }
    named
}

/// The tasks a request's message refers to.
fn references(params: &Value) -> impl Iterator<Item = String> + '_ {
    let message = params.get("message").unwrap_or(&Value::Null);
    REFERENCE_FIELDS
        .iter()
        .filter_map(|field| message.get(field)?.as_array())
        .flatten()
        .filter_map(|id| id.as_str().map(str::to_owned))
}

impl RpcCall {
    /// The runtime's refusal, as a local agent answers it: a task the caller may not reach is
    /// not found. A v0.3 stream gets it as its one event; v1.0 answers it as JSON, as before
    /// any stream opens.
    pub(super) fn refusal(&self, err: &AgentError) -> Response {
        let (code, message) = rpc_error(self.version, err);
        let error = RpcResponse::error(
            self.id.clone(),
            codec::error_object(self.version, code, &message),
        );
        if self.streaming && self.version == ProtocolVersion::V0_3 {
            (
                [(header::CONTENT_TYPE, "text/event-stream")],
                encode_data(&error.to_json()),
            )
                .into_response()
        } else {
            Json(error.to_value()).into_response()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ids(asks: &[RelayedAsk]) -> Vec<String> {
        asks.iter()
            .map(|ask| match ask {
                RelayedAsk::Read(id) => format!("read {id}"),
                RelayedAsk::Own(id) => format!("own {id}"),
                RelayedAsk::Message(message) => {
                    format!("message {}", message.task_id.clone().unwrap_or_default())
                }
            })
            .collect()
    }

    fn asked(version: ProtocolVersion, request: Value) -> Vec<String> {
        ids(&asks(request.to_string().as_bytes(), version))
    }

    #[test]
    fn each_method_asks_what_a_local_task_would_need() {
        let v03 = ProtocolVersion::V0_3;
        assert_eq!(
            asked(v03, json!({"method": "tasks/get", "params": {"id": "t"}})),
            ["read t"]
        );
        assert_eq!(
            asked(
                v03,
                json!({"method": "tasks/resubscribe", "params": {"id": "t"}})
            ),
            ["read t"]
        );
        assert_eq!(
            asked(
                v03,
                json!({"method": "tasks/cancel", "params": {"id": "t"}})
            ),
            ["own t"]
        );
        assert_eq!(
            asked(
                v03,
                json!({"method": "tasks/pushNotificationConfig/set",
                       "params": {"taskId": "t", "pushNotificationConfig": {"url": "http://x"}}})
            ),
            ["own t"]
        );
        assert_eq!(
            asked(
                ProtocolVersion::V1_0,
                json!({"method": "GetTaskPushNotificationConfig",
                       "params": {"name": "tasks/t/pushNotificationConfigs/c"}})
            ),
            ["own t"]
        );
        let message = json!({"kind": "message", "messageId": "m", "role": "user", "taskId": "t",
                             "referenceTaskIds": ["r"], "parts": [{"kind": "text", "text": "hi"}]});
        assert_eq!(
            asked(
                v03,
                json!({"method": "message/stream", "params": {"message": message}})
            ),
            ["read r", "message t"]
        );
    }

    #[test]
    fn a_request_the_protocol_does_not_read_asks_for_the_owner() {
        // A message we cannot decode, a method of another version, an unknown method: whatever
        // names a task is the owner's to ask.
        let broken = json!({"method": "message/send",
                            "params": {"message": {"taskId": "t", "parts": "nope"}}});
        assert_eq!(asked(ProtocolVersion::V0_3, broken), ["own t"]);
        let v10_name = json!({"method": "GetTask", "params": {"id": "t"}});
        assert_eq!(asked(ProtocolVersion::V0_3, v10_name), ["own t"]);
        let unknown = json!({"method": "tasks/peek", "params": {"task_id": "t", "id": "u"}});
        assert_eq!(asked(ProtocolVersion::V0_3, unknown), ["own u", "own t"]);
        assert!(asks(b"not json", ProtocolVersion::V0_3).is_empty());
    }
}
