//! The A2A messages the tests send and what they read of the answers (v0.3 unless named), and
//! the conversations they have with the demo agent.

use serde_json::{json, Value};

use super::app::{TestApp, DEMO};
use super::sse::SseStream;

pub fn request(method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
}

/// A `method` request (`message/send`, `SendStreamingMessage`, ...) carrying `message`.
pub fn message_request(method: &str, message: Value) -> Value {
    request(method, json!({"message": message}))
}

/// A v0.3 user message.
pub fn message_v03(text: &str, task_id: Option<&str>, context_id: Option<&str>) -> Value {
    let message = json!({
        "kind": "message",
        "messageId": uuid::Uuid::new_v4().to_string(),
        "role": "user",
        "parts": [{"kind": "text", "text": text}],
    });
    on_task(message, task_id, context_id)
}

/// A v1.0 user message.
pub fn message_v10(text: &str, task_id: Option<&str>, context_id: Option<&str>) -> Value {
    let message = json!({
        "messageId": uuid::Uuid::new_v4().to_string(),
        "role": "ROLE_USER",
        "parts": [{"text": text}],
    });
    on_task(message, task_id, context_id)
}

fn on_task(mut message: Value, task_id: Option<&str>, context_id: Option<&str>) -> Value {
    if let Some(task_id) = task_id {
        message["taskId"] = json!(task_id);
    }
    if let Some(context_id) = context_id {
        message["contextId"] = json!(context_id);
    }
    message
}

/// A v0.3 decision message (a DataPart, docs/wire.md) on a paused task.
pub fn decision(task: &str, context: &str, data: Value) -> Value {
    json!({
        "kind": "message", "messageId": uuid::Uuid::new_v4().to_string(), "role": "user",
        "taskId": task, "contextId": context,
        "parts": [{"kind": "data", "data": data}, {"kind": "text", "text": "decision"}],
    })
}

/// Sends `message` to the agent at `path` with `message/stream` and returns the results of the
/// whole stream, asserting none is an error.
pub async fn send_stream(app: &TestApp, path: &str, message: Value) -> Vec<Value> {
    let body = message_request("message/stream", message);
    results(&app.stream_at(path, &body).await)
}

/// A new chat turn with the demo agent: `text` sent, the whole stream's results.
pub async fn say(app: &TestApp, text: &str) -> Vec<Value> {
    send_stream(app, DEMO, message_v03(text, None, None)).await
}

/// A new chat turn with the demo agent whose stream is read as it comes.
pub async fn say_live(app: &TestApp, text: &str) -> SseStream {
    let body = message_request("message/stream", message_v03(text, None, None));
    app.open_stream(None, None, body).await
}

/// Decides the demo agent's paused `task`; the results of the stream that resumes it.
pub async fn decide(app: &TestApp, task: &str, context: &str, data: Value) -> Vec<Value> {
    send_stream(app, DEMO, decision(task, context, data)).await
}

/// The events of a decision's stream as they come, errors included (for refused decisions).
pub async fn decision_events(app: &TestApp, task: &str, context: &str, data: Value) -> Vec<Value> {
    let body = message_request("message/stream", decision(task, context, data));
    app.stream(None, body).await
}

/// Decides `task` over REST (`POST /api/approvals/{task}`) as the user of `token`; the status
/// and body of the answer.
pub async fn decide_rest(
    app: &TestApp,
    token: Option<&str>,
    task: &str,
    data: Value,
) -> (u16, Value) {
    app.post_json_as(&format!("/api/approvals/{task}"), token, &data)
        .await
}

/// The state of `task` as `tasks/get` shows it.
pub async fn task_state(app: &TestApp, task: &str) -> Value {
    let got = app
        .rpc(None, request("tasks/get", json!({"id": task})))
        .await;
    got["result"]["status"]["state"].clone()
}

/// The v0.3 `result` of each event, asserting none is an error.
pub fn results(events: &[Value]) -> Vec<Value> {
    events
        .iter()
        .map(|event| {
            assert!(
                event.get("error").is_none(),
                "unexpected error event {event}"
            );
            event["result"].clone()
        })
        .collect()
}

/// The states of the v0.3 status updates, in order.
pub fn states(results: &[Value]) -> Vec<String> {
    results
        .iter()
        .filter(|result| result["kind"] == "status-update")
        .map(|result| result["status"]["state"].as_str().unwrap().to_owned())
        .collect()
}

/// All streamed answer text, joined.
pub fn answer_text(results: &[Value]) -> String {
    results
        .iter()
        .filter(|result| result["kind"] == "artifact-update")
        .flat_map(|result| result["artifact"]["parts"].as_array().unwrap().clone())
        .filter_map(|part| part["text"].as_str().map(str::to_owned))
        .collect()
}

/// The DataParts of status-update messages with the given `kagent_type`.
pub fn data_parts(results: &[Value], kind: &str) -> Vec<Value> {
    results
        .iter()
        .filter(|result| result["kind"] == "status-update")
        .filter_map(|result| result["status"]["message"]["parts"].as_array().cloned())
        .flatten()
        .filter(|part| part["metadata"]["kagent_type"] == kind)
        .map(|part| part["data"].clone())
        .collect()
}

/// The task id of a v0.3 stream.
pub fn task_id(results: &[Value]) -> String {
    results[0]["taskId"]
        .as_str()
        .or_else(|| results[0]["id"].as_str())
        .unwrap()
        .to_owned()
}

/// The context id of a v0.3 stream.
pub fn context_id(results: &[Value]) -> String {
    results[0]["contextId"].as_str().unwrap().to_owned()
}
