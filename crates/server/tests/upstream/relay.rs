//! Remote agents: a loopback server replays kagent 0.10.4's recorded traffic as the remote; the
//! relay must pass streams and decisions through unchanged, list the agent, rewrite its card,
//! and say clearly when the remote is down.

use std::sync::Mutex;

use futures_util::StreamExt;
use serde_json::{json, Value};
use signoff_server::AuthMode;
use tokio::sync::oneshot;

use crate::stub::{fixture, gated_sse, held_sse, json_response, sse, Recorded, Stub};
use crate::support::{spawn_with_agents, sse_payloads, within, TestApp};

const REMOTE_PATH: &str = "/api/a2a/harness/hitl_harness/";
const RELAY: &str = "/api/a2a/kagent/hitl";

/// kagent 0.10.4's recorded traffic, kept once in the protocol crate.
fn kagent(name: &str) -> Vec<u8> {
    fixture(&format!(
        "../../../protocol/tests/fixtures/kagent-0.10.4/{name}"
    ))
}

/// A local demo agent and the remote kagent agent `kagent/hitl`.
fn agents_toml(remote_base: &str, extra: &str) -> String {
    format!(
        r#"
[[agents]]
name = "demo"
[[agents.tools]]
kind = "builtin_files"
require_approval = ["write_file"]

[[agents]]
name = "hitl"
namespace = "kagent"
remote = {{ url = "{remote_base}{REMOTE_PATH}"{extra} }}
"#
    )
}

/// kagent's recorded card (v0.3). The relay reads a remote's card before it relays the first
/// call, to know whether the remote offers v0.3 (docs/wire.md, Translation).
fn kagent_card() -> axum::response::Response {
    let card: Value = serde_json::from_slice(&kagent("agent_card.json")).unwrap();
    json_response(200, &card)
}

/// The calls the remote got (its card's reads left out).
fn posts(stub: &Stub) -> Vec<Recorded> {
    stub.requests()
        .into_iter()
        .filter(|request| request.method == "POST")
        .collect()
}

/// The recorded kagent runtime: its card, and the streams of the scenarios a, c1 and c2. The
/// decision of c2 is answered only if it arrives exactly as recorded.
fn kagent_runtime(request: &Recorded) -> axum::response::Response {
    if request.method == "GET" {
        assert_eq!(
            request.uri,
            format!("{REMOTE_PATH}.well-known/agent-card.json")
        );
        return kagent_card();
    }
    assert_eq!(request.uri, REMOTE_PATH);
    let scenario = match request.json()["id"].as_str().unwrap() {
        "a-1" => "a_plain_text",
        "c1" => "c1_interrupt",
        "c2" => "c2_resume",
        other => panic!("no recorded scenario for request id {other}"),
    };
    if request.body != kagent(&format!("{scenario}.request.json")) {
        return json_response(
            200,
            &json!({"jsonrpc": "2.0", "id": request.json()["id"],
                    "error": {"code": -32602, "message": "the request was changed on its way"}}),
        );
    }
    sse(kagent(&format!("{scenario}.sse")))
}

async fn with_tokens(remote_base: &str) -> TestApp {
    spawn_with_agents(&agents_toml(remote_base, ""), |config| {
        config.auth = AuthMode::Tokens;
        config.tokens = vec!["tok-alice=alice".into()];
    })
    .await
}

/// Sends kagent's recorded request of `scenario` through the relay, as it is (JSON, as kagent's
/// UI declares it).
async fn relay(app: &TestApp, scenario: &str) -> reqwest::Response {
    app.post(RELAY)
        .header("content-type", "application/json")
        .body(kagent(&format!("{scenario}.request.json")))
        .send()
        .await
        .unwrap()
}

/// Sends `body` through the relay as alice.
async fn post_raw(app: &TestApp, body: Vec<u8>) -> reqwest::Response {
    app.post(RELAY)
        .bearer_auth("tok-alice")
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn relays_a_kagent_stream_byte_for_byte_with_the_user_id() {
    let stub = Stub::start(kagent_runtime).await;
    let app = with_tokens(&stub.base).await;
    let response = post_raw(&app, kagent("a_plain_text.request.json")).await;
    assert_eq!(response.status(), 200);
    assert!(response.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/event-stream"));
    let body = within("the relayed stream", response.bytes())
        .await
        .unwrap();
    assert_eq!(body.as_ref(), kagent("a_plain_text.sse").as_slice());

    let requests = posts(&stub);
    assert_eq!(requests.len(), 1);
    let forwarded = &requests[0];
    assert_eq!(
        forwarded.body.as_ref(),
        kagent("a_plain_text.request.json").as_slice()
    );
    assert_eq!(forwarded.header("x-user-id"), Some("alice"));
    assert_eq!(forwarded.header("content-type"), Some("application/json"));
    assert_eq!(
        forwarded.header("authorization"),
        None,
        "our token stays with us"
    );
    app.stop().await;
}

#[tokio::test]
async fn forwards_a_decision_unchanged_and_relays_the_resumed_stream() {
    let stub = Stub::start(kagent_runtime).await;
    let app = with_tokens(&stub.base).await;
    for scenario in ["c1_interrupt", "c2_resume"] {
        let response = post_raw(&app, kagent(&format!("{scenario}.request.json"))).await;
        let body = within("the relayed stream", response.bytes())
            .await
            .unwrap();
        assert_eq!(
            body.as_ref(),
            kagent(&format!("{scenario}.sse")).as_slice(),
            "{scenario}"
        );
    }
    let paused = sse_payloads(&kagent("c1_interrupt.sse"));
    assert_eq!(
        paused.last().unwrap()["result"]["status"]["state"],
        "input-required"
    );
    let requests = posts(&stub);
    assert_eq!(requests.len(), 2);
    assert_eq!(
        requests[1].body.as_ref(),
        kagent("c2_resume.request.json").as_slice()
    );
    app.stop().await;
}

#[tokio::test]
async fn streams_as_the_remote_sends_without_buffering() {
    let recorded = kagent("c1_interrupt.sse");
    let text = String::from_utf8(recorded.clone()).unwrap();
    let first: String = text.split_inclusive("\r\n\r\n").take(1).collect();
    let rest = recorded[first.len()..].to_vec();
    let (open_gate, gate) = oneshot::channel::<()>();
    let gate = Mutex::new(Some((first.clone().into_bytes(), rest, gate)));
    let stub = Stub::start(move |request| {
        if request.method == "GET" {
            return kagent_card();
        }
        let (first, rest, gate) = gate.lock().unwrap().take().unwrap();
        gated_sse(first, rest, gate)
    })
    .await;
    let app = spawn_with_agents(&agents_toml(&stub.base, ""), |_| {}).await;
    let response = relay(&app, "c1_interrupt").await;
    let mut body = response.bytes_stream();
    let mut received = Vec::new();
    // The remote holds the rest back until we have seen its first event through the relay.
    while received.len() < first.len() {
        let chunk = within("the first event", body.next())
            .await
            .unwrap()
            .unwrap();
        received.extend_from_slice(&chunk);
    }
    assert_eq!(received, first.as_bytes());
    open_gate.send(()).unwrap();
    while let Some(chunk) = within("the rest", body.next()).await {
        received.extend_from_slice(&chunk.unwrap());
    }
    assert_eq!(received, recorded);
    app.stop().await;
}

#[tokio::test]
async fn lists_the_remote_agent_and_relays_its_card_pointing_at_us() {
    let stub = Stub::start(kagent_runtime).await;
    let app = spawn_with_agents(&agents_toml(&stub.base, ""), |_| {}).await;

    let (status, card) = app
        .get(&format!("{RELAY}/.well-known/agent-card.json"))
        .await;
    assert_eq!(status, 200);
    let mut expected: Value = serde_json::from_slice(&kagent("agent_card.json")).unwrap();
    expected["url"] = json!(format!("{}{RELAY}", app.base));
    assert_eq!(card, expected);

    let (status, listed) = app.get("/api/agents").await;
    assert_eq!(status, 200);
    let agents = listed["agents"].as_array().unwrap();
    assert_eq!(agents.len(), 2);
    assert_eq!(agents[0]["name"], "demo");
    assert_eq!(agents[0]["remote"], false);
    assert_eq!(
        agents[1],
        json!({
            "namespace": "kagent",
            "name": "hitl",
            "description": "HITL reference harness agent (scripted LLM, filesystem MCP tools)",
            "url": RELAY,
            "cardUrl": format!("{RELAY}/.well-known/agent-card.json"),
            "tools": [],
            "requireApproval": [],
            "remote": true,
            "reachable": true,
            "skills": [],
        })
    );
    // The local agent is still served here, not relayed.
    let (status, local) = app
        .get("/api/a2a/default/demo/.well-known/agent-card.json")
        .await;
    assert_eq!(status, 200);
    assert_eq!(local["name"], "demo");
    assert!(stub
        .requests()
        .iter()
        .all(|request| request.method == "GET"));
    app.stop().await;
}

#[tokio::test]
async fn a_remote_that_is_down_gets_a_clear_error() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let app = spawn_with_agents(&agents_toml(&format!("http://{addr}"), ""), |_| {}).await;
    let expected = format!("the remote agent at {addr} is unreachable");

    // A streaming call gets the error as its stream's one event.
    let response = relay(&app, "a_plain_text").await;
    assert_eq!(response.status(), 200);
    assert!(response.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/event-stream"));
    let events = sse_payloads(&response.bytes().await.unwrap());
    assert_eq!(
        events,
        [json!({"jsonrpc": "2.0", "id": "a-1", "error": {"code": -32603, "message": expected}})]
    );

    // A unary call gets it as JSON.
    let response = app
        .post(RELAY)
        .json(&json!({"jsonrpc": "2.0", "id": 7, "method": "tasks/get", "params": {"id": "t-1"}}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(
        response.json::<Value>().await.unwrap(),
        json!({"jsonrpc": "2.0", "id": 7, "error": {"code": -32603, "message": expected}})
    );

    let (status, card) = app
        .get(&format!("{RELAY}/.well-known/agent-card.json"))
        .await;
    assert_eq!(status, 502);
    assert_eq!(
        card,
        json!({"error": format!("the remote agent at {addr} did not give its agent card")})
    );
    let (_, listed) = app.get("/api/agents").await;
    assert_eq!(listed["agents"][1]["name"], "hitl");
    assert_eq!(listed["agents"][1]["reachable"], false);
    app.stop().await;
}

#[tokio::test]
async fn a_remote_error_status_becomes_a_json_rpc_error() {
    let stub =
        Stub::start(|_| json_response(503, &json!({"detail": "upstream exploded at line 42"})))
            .await;
    let app = spawn_with_agents(&agents_toml(&stub.base, ""), |_| {}).await;
    let response = app
        .post(RELAY)
        .json(&json!({"jsonrpc": "2.0", "id": "x", "method": "tasks/get", "params": {"id": "t"}}))
        .send()
        .await
        .unwrap();
    let host = stub.base.trim_start_matches("http://");
    assert_eq!(
        response.json::<Value>().await.unwrap(),
        json!({"jsonrpc": "2.0", "id": "x",
               "error": {"code": -32603, "message": format!("the remote agent at {host} answered HTTP 503")}})
    );
    app.stop().await;
}

/// A remote that sends the first event of c1 and then nothing, ever; our server relaying to it
/// (`extra` goes into its `remote` table) has sent it c1's request. Also returns that first
/// event and what fires when the remote's connection closes.
async fn silent_remote(
    extra: &str,
) -> (
    Stub,
    TestApp,
    String,
    reqwest::Response,
    oneshot::Receiver<()>,
) {
    let recorded = String::from_utf8(kagent("c1_interrupt.sse")).unwrap();
    let first: String = recorded.split_inclusive("\r\n\r\n").take(1).collect();
    let (dropped, was_dropped) = oneshot::channel();
    let dropped = Mutex::new(Some(dropped));
    let reply = first.clone();
    let stub = Stub::start(move |request| {
        if request.method == "GET" {
            return kagent_card();
        }
        held_sse(
            reply.clone().into_bytes(),
            dropped.lock().unwrap().take().unwrap(),
        )
    })
    .await;
    let app = spawn_with_agents(&agents_toml(&stub.base, extra), |_| {}).await;
    let response = relay(&app, "c1_interrupt").await;
    (stub, app, first, response, was_dropped)
}

#[tokio::test]
async fn a_silent_remote_stream_ends_with_an_error_event_and_is_closed() {
    let (stub, app, first, response, was_dropped) = silent_remote(", idle_timeout_secs = 1").await;
    let body = within("the relayed stream", response.bytes())
        .await
        .unwrap();
    let host = stub.base.trim_start_matches("http://");
    let error = json!({"jsonrpc": "2.0", "id": "c1",
                       "error": {"code": -32603, "message": format!("the remote agent at {host} sent nothing for 1 s")}});
    let expected = format!("{first}data: {error}\n\n");
    assert_eq!(String::from_utf8(body.to_vec()).unwrap(), expected);
    within("the remote connection to close", was_dropped)
        .await
        .unwrap();
    app.stop().await;
}

#[tokio::test]
async fn a_client_that_goes_away_closes_the_remote_stream() {
    let (_stub, app, first, response, was_dropped) = silent_remote("").await;
    let mut body = response.bytes_stream();
    let chunk = within("the first event", body.next())
        .await
        .unwrap()
        .unwrap();
    assert!(first.as_bytes().starts_with(&chunk));
    drop(body);
    within("the remote connection to close", was_dropped)
        .await
        .unwrap();
    app.stop().await;
}
