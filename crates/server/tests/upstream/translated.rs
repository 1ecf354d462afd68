//! A remote agent that offers only A2A v1.0, reached in v0.3 through the relay, which translates
//! (docs/wire.md, Translation): the remote is a second `signoff` process behind a front that
//! serves its card with the v1.0 interface only and refuses every call that is not v1.0, as a
//! v1.0-only agent does. A whole chat (streamed text, a paused batch, the decision, the resumed
//! answer) reaches the client in v0.3 and is recorded here.

use std::sync::{Arc, Mutex};

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::HeaderMap;
use axum::response::Response;
use serde_json::{json, Value};
use signoff_protocol::codec::{self, v03_only};
use signoff_protocol::hitl::ApprovalInterrupt;
use signoff_protocol::{ProtocolVersion, StreamEvent, TaskState};

use crate::relayed::{pending, relay, session_in_state};
use crate::stub::json_response;
use crate::support::{spawn_with_agents, sse_payloads, start_binary};

const RELAY: &str = "/api/a2a/kagent/v10";

fn agents_toml(remote_url: &str) -> String {
    format!(
        "[[agents]]\nname = \"v10\"\nnamespace = \"kagent\"\nremote = {{ url = \"{remote_url}\" }}\n"
    )
}

/// What the front got: each call's `A2A-Version` and its body.
pub type Calls = Arc<Mutex<Vec<(Option<String>, Value)>>>;

#[derive(Clone)]
pub struct Front {
    /// The agent's endpoint on the `signoff` behind the front.
    agent: String,
    /// The front's own address.
    pub base: String,
    pub calls: Calls,
}

/// Serves `agent` (a `signoff` agent's endpoint) as an agent that offers only v1.0.
pub async fn v10_only_front(agent: String) -> Front {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let front = Front {
        agent,
        base: format!("http://{}", listener.local_addr().unwrap()),
        calls: Arc::default(),
    };
    let app = axum::Router::new()
        .fallback(serve)
        .with_state(front.clone());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    front
}

async fn serve(State(front): State<Front>, request: Request) -> Response {
    let client = reqwest::Client::new();
    let (parts, body) = request.into_parts();
    let body = axum::body::to_bytes(body, usize::MAX).await.unwrap();
    if parts.method == "GET" {
        let mut card: Value = client
            .get(format!("{}/.well-known/agent-card.json", front.agent))
            .header("a2a-version", "1.0")
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let interfaces = card["supportedInterfaces"].as_array_mut().unwrap();
        interfaces.retain(|interface| interface["protocolVersion"] == "1.0");
        for interface in interfaces.iter_mut() {
            interface["url"] = json!(format!("{}/", front.base));
        }
        return json_response(200, &card);
    }
    let version = header(&parts.headers, "a2a-version");
    let call: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    front
        .calls
        .lock()
        .unwrap()
        .push((version.clone(), call.clone()));
    if version.as_deref() != Some("1.0") {
        return json_response(
            200,
            &json!({"jsonrpc": "2.0", "id": call["id"], "error": {"code": -32009,
                    "message": "this agent speaks A2A 1.0 only"}}),
        );
    }
    let mut forwarded = client
        .post(&front.agent)
        .header("content-type", "application/json")
        .header("a2a-version", "1.0");
    for name in ["accept", "a2a-extensions"] {
        if let Some(value) = header(&parts.headers, name) {
            forwarded = forwarded.header(name, value);
        }
    }
    let answer = forwarded.body(body).send().await.unwrap();
    let content_type = answer.headers()["content-type"].clone();
    Response::builder()
        .status(answer.status().as_u16())
        .header("content-type", content_type)
        .body(Body::from_stream(answer.bytes_stream()))
        .unwrap()
}

fn header(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get(name)
        .map(|value| value.to_str().unwrap().to_owned())
}

/// A v0.3 `message/stream` of `message` (v0.3 JSON).
fn stream_call(id: &str, message: Value) -> Vec<u8> {
    json!({"jsonrpc": "2.0", "id": id, "method": "message/stream", "params": {"message": message}})
        .to_string()
        .into_bytes()
}

/// The events of a relayed answer, each read strictly as v0.3, with its JSON.
fn v03_events(bytes: &[u8]) -> Vec<(StreamEvent, Value)> {
    let text = String::from_utf8(bytes.to_vec()).unwrap();
    sse_payloads(bytes)
        .into_iter()
        .map(|payload| {
            let event = v03_only::decode_stream_response(&payload.to_string())
                .unwrap_or_else(|err| panic!("not v0.3 ({err}): {payload}\nin {text}"))
                .unwrap_or_else(|err| panic!("an error event: {err:?}\nin {text}"));
            (event, payload)
        })
        .collect()
}

/// The streamed text of a turn: its artifact updates' text, joined.
fn streamed_text(events: &[(StreamEvent, Value)]) -> String {
    events
        .iter()
        .filter_map(|(event, _)| match event {
            StreamEvent::ArtifactUpdate(update) => Some(
                update
                    .artifact
                    .parts
                    .iter()
                    .filter_map(|part| part.as_text())
                    .collect::<String>(),
            ),
            StreamEvent::Task(_) | StreamEvent::Message(_) | StreamEvent::StatusUpdate(_) => None,
        })
        .collect()
}

fn last_state(events: &[(StreamEvent, Value)]) -> (TaskState, Value) {
    let (event, payload) = events.last().unwrap();
    let StreamEvent::StatusUpdate(update) = event else {
        panic!("the last event is not a status update: {payload}");
    };
    assert!(update.is_final);
    (update.status.state, payload["result"].clone())
}

#[tokio::test]
async fn a_chat_with_a_v10_only_remote_is_spoken_in_v03_and_recorded() {
    let remote_dir = tempfile::tempdir().unwrap();
    let remote = start_binary(remote_dir.path(), &[], &[]).await;
    let front = v10_only_front(format!("{}/api/a2a/default/demo", remote.base)).await;
    let app = spawn_with_agents(&agents_toml(&format!("{}/", front.base)), |_| {}).await;

    // The relay's card offers v0.3 at the relay, beside the remote's v1.0.
    let (status, card) = app
        .get(&format!("{RELAY}/.well-known/agent-card.json"))
        .await;
    assert_eq!(status, 200, "{card}");
    let versions: Vec<(String, ProtocolVersion)> = codec::decode_card_interfaces(&card)
        .into_iter()
        .map(|interface| (interface.url, interface.version))
        .collect();
    assert!(
        versions
            .iter()
            .any(|(url, version)| url.ends_with(RELAY) && *version == ProtocolVersion::V0_3),
        "{card}"
    );

    // Streamed text, in v0.3.
    let message = json!({"kind": "message", "messageId": "m-v10-1", "role": "user",
                         "parts": [{"kind": "text", "text": "count to 3"}]});
    let counted = v03_events(&relay(&app, RELAY, stream_call("ui-1", message)).await);
    assert!(counted.len() > 3, "{counted:?}");
    assert!(counted.iter().all(|(_, payload)| payload["id"] == "ui-1"));
    assert_eq!(streamed_text(&counted).split_whitespace().count(), 3);
    assert_eq!(last_state(&counted).0, TaskState::Completed);
    let context = counted[0].0.context_id().unwrap().to_owned();

    // A paused batch, in v0.3.
    let message = json!({"kind": "message", "messageId": "m-v10-2", "role": "user",
                         "contextId": context,
                         "parts": [{"kind": "text", "text": "write relayed.txt: hi"}]});
    let paused = v03_events(&relay(&app, RELAY, stream_call("ui-2", message)).await);
    let (state, result) = last_state(&paused);
    assert_eq!(state, TaskState::InputRequired);
    assert_eq!(result["kind"], "status-update");
    assert_eq!(result["final"], true);
    let StreamEvent::StatusUpdate(update) = &paused.last().unwrap().0 else {
        unreachable!()
    };
    let interrupt = ApprovalInterrupt::from_status(&update.status).unwrap();
    assert_eq!(interrupt.action_requests[0].name, "write_file");
    let task = update.task_id.clone();
    let approvals = pending(&app, 1).await;
    assert_eq!(approvals[0]["taskId"], task.as_str());

    // The decision, in v0.3, and the resumed answer.
    let decision = json!({"kind": "message", "messageId": "m-v10-3", "role": "user",
                          "taskId": task, "contextId": context,
                          "parts": [{"kind": "data", "data": {"decision_type": "approve"}},
                                    {"kind": "text", "text": "Approved"}]});
    let resumed = v03_events(&relay(&app, RELAY, stream_call("ui-3", decision)).await);
    assert_eq!(last_state(&resumed).0, TaskState::Completed);
    assert!(
        streamed_text(&resumed).contains("relayed.txt"),
        "{resumed:?}"
    );
    assert_eq!(
        std::fs::read_to_string(remote_dir.path().join("sandbox/relayed.txt")).unwrap(),
        "hi"
    );

    // A unary call: the task as v0.3 reads it.
    let get = json!({"jsonrpc": "2.0", "id": "ui-4", "method": "tasks/get",
                     "params": {"id": task}});
    let answer: Value =
        serde_json::from_slice(&relay(&app, RELAY, get.to_string().into_bytes()).await).unwrap();
    assert_eq!(answer["id"], "ui-4");
    assert_eq!(answer["result"]["kind"], "task", "{answer}");
    let read = v03_only::decode_task(&answer["result"]).unwrap();
    assert_eq!(read.status.state, TaskState::Completed);

    // Everything reached the remote in v1.0.
    let calls = front.calls.lock().unwrap().clone();
    assert_eq!(calls.len(), 4, "{calls:?}");
    for (version, _) in &calls {
        assert_eq!(version.as_deref(), Some("1.0"));
    }
    for (_, call) in &calls[..3] {
        assert_eq!(call["method"], "SendStreamingMessage");
        assert_eq!(call["params"]["message"]["role"], "ROLE_USER");
    }
    assert_eq!(calls[3].1["method"], "GetTask");

    // The chat is recorded here: both turns, the batch decided in the chat.
    let session = session_in_state(&app, &context, "completed").await;
    assert_eq!(session["session"]["agent"], "kagent/v10");
    assert_eq!(session["session"]["title"], "count to 3");
    assert_eq!(session["tasks"].as_array().unwrap().len(), 2);
    pending(&app, 0).await;
    let (_, decided) = app.get("/api/approvals?state=decided").await;
    let entry = &decided["decisions"][0];
    assert_eq!(entry["taskId"], task.as_str());
    assert_eq!(entry["channel"], "a2a");
    assert_eq!(entry["calls"][0]["verdict"], "approve");
    app.stop().await;
}

#[tokio::test]
async fn errors_of_a_v10_only_remote_reach_a_v03_client_as_v03_errors() {
    let remote_dir = tempfile::tempdir().unwrap();
    let remote = start_binary(remote_dir.path(), &[], &[]).await;
    let front = v10_only_front(format!("{}/api/a2a/default/demo", remote.base)).await;
    let app = spawn_with_agents(&agents_toml(&format!("{}/", front.base)), |_| {}).await;

    // The remote's error, with its code and without v1.0's ErrorInfo.
    let get = json!({"jsonrpc": "2.0", "id": 5, "method": "tasks/get", "params": {"id": "nope"}});
    let answer: Value =
        serde_json::from_slice(&relay(&app, RELAY, get.to_string().into_bytes()).await).unwrap();
    assert_eq!(answer["id"], 5);
    assert_eq!(answer["error"]["code"], -32001, "{answer}");
    assert!(answer["error"].get("data").is_none(), "{answer}");

    // A resubscription to an unknown task: the remote's plain JSON error is the v0.3 stream's
    // one event.
    let resubscribe = json!({"jsonrpc": "2.0", "id": "r", "method": "tasks/resubscribe", "params": {"id": "nope"}});
    let events = sse_payloads(&relay(&app, RELAY, resubscribe.to_string().into_bytes()).await);
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0]["error"]["code"], -32001);

    // A request that is not v0.3 is refused by the relay; the remote never hears of it.
    let message = json!({"messageId": "m", "role": "user", "parts": [{"text": "hi"}]});
    let events = sse_payloads(&relay(&app, RELAY, stream_call("bad", message)).await);
    assert_eq!(events.len(), 1);
    assert_eq!(events[0]["id"], "bad");
    assert_eq!(events[0]["error"]["code"], -32602);
    assert_eq!(
        events[0]["error"]["message"],
        "params.message.parts[0].kind: missing (a v0.3 part says \"text\", \"data\" or \"file\")"
    );
    let calls = front.calls.lock().unwrap().clone();
    assert_eq!(calls.len(), 2, "{calls:?}");
    app.stop().await;
}
