//! Relayed chats are recorded (crates/server/README.md, Relayed chats): a chat with a remote
//! agent shows in the sessions list, reloads while its batch waits, is listed in the approvals,
//! and is decided in the chat or over REST (forwarded to the remote in its dialect). The remote
//! is a loopback replay of kagent 0.10.4's recorded traffic, or a second `signoff` process.

use serde_json::{json, Value};

use crate::stub::{fixture, json_response, sse, Recorded, Stub};
use crate::support::{eventually, spawn_with_agents, start_binary, within, TestApp};

pub(crate) const REMOTE_PATH: &str = "/api/a2a/harness/hitl_harness/";
pub(crate) const RELAY: &str = "/api/a2a/kagent/hitl";
/// The session and task of kagent's recorded c1/c2 scenario.
pub(crate) const CONTEXT: &str = "90bd9757-4a37-4025-95ab-6ba1e0c52a1f";
pub(crate) const TASK: &str = "ebba61f6-5b09-4881-9e7b-d492c1a4cee0";

pub(crate) fn kagent(name: &str) -> Vec<u8> {
    fixture(&format!(
        "../../../protocol/tests/fixtures/kagent-0.10.4/{name}"
    ))
}

pub(crate) fn agents_toml(remote_url: &str) -> String {
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
remote = {{ url = "{remote_url}" }}
"#
    )
}

/// The recorded kagent runtime, by what it is asked: a decision resumes (c2), any other
/// message pauses (c1), and `tasks/get` reports the task paused (f1) until a decision came,
/// completed (f2) after.
fn kagent_runtime(request: &Recorded, decided: bool) -> axum::response::Response {
    if request.method == "GET" {
        let card: Value = serde_json::from_slice(&kagent("agent_card.json")).unwrap();
        return json_response(200, &card);
    }
    let body = request.json();
    match body["method"].as_str().unwrap() {
        "tasks/get" => {
            let name = if decided {
                "f2_tasks_get_completed.response.json"
            } else {
                "f1_tasks_get_paused.response.json"
            };
            json_response(200, &serde_json::from_slice(&kagent(name)).unwrap())
        }
        "message/stream" => {
            let parts = body["params"]["message"]["parts"].as_array().unwrap();
            if parts
                .iter()
                .any(|part| part["data"]["decision_type"].is_string())
            {
                sse(kagent("c2_resume.sse"))
            } else {
                sse(kagent("c1_interrupt.sse"))
            }
        }
        // kagent 0.10.4's answer to a cancel.
        "tasks/cancel" => json_response(
            200,
            &json!({"jsonrpc": "2.0", "id": body["id"],
                    "error": {"code": -32004, "message": "Cancellation is not supported"}}),
        ),
        other => json_response(
            200,
            &json!({"jsonrpc": "2.0", "id": body["id"],
                    "error": {"code": -32601, "message": format!("{other} is not recorded")}}),
        ),
    }
}

/// A stub kagent whose `tasks/get` tells whether a decision reached it.
pub(crate) async fn fake_kagent() -> Stub {
    let decided = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    Stub::start(move |request| {
        let is_decision = request.method == "POST"
            && request.json()["params"]["message"]["parts"]
                .as_array()
                .is_some_and(|parts| {
                    parts
                        .iter()
                        .any(|part| part["data"]["decision_type"].is_string())
                });
        if is_decision {
            decided.store(true, std::sync::atomic::Ordering::SeqCst);
        }
        kagent_runtime(request, decided.load(std::sync::atomic::Ordering::SeqCst))
    })
    .await
}

pub(crate) async fn relay(app: &TestApp, path: &str, body: Vec<u8>) -> Vec<u8> {
    let response = app
        .post(path)
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    within("the relayed stream", response.bytes())
        .await
        .unwrap()
        .to_vec()
}

/// The stored session as `GET /api/sessions/{id}` shows it, once its last task is in `state`.
pub(crate) async fn session_in_state(app: &TestApp, context: &str, state: &str) -> Value {
    eventually(&format!("session {context} to be {state}"), || async {
        let (status, body) = app.get(&format!("/api/sessions/{context}")).await;
        (status == 200 && body["tasks"].as_array()?.last()?["status"]["state"] == state)
            .then_some(body)
    })
    .await
}

/// The pending approvals, once there are `count`.
pub(crate) async fn pending(app: &TestApp, count: usize) -> Vec<Value> {
    eventually(&format!("{count} pending approvals"), || async {
        let (_, body) = app.get("/api/approvals").await;
        let approvals = body["approvals"].as_array()?.clone();
        (approvals.len() == count).then_some(approvals)
    })
    .await
}

fn ids(calls: &[Value]) -> Vec<&str> {
    calls
        .iter()
        .map(|call| call["id"].as_str().unwrap())
        .collect()
}

#[tokio::test]
async fn a_relayed_kagent_chat_is_listed_reloads_while_paused_and_is_approved_in_the_chat() {
    let stub = fake_kagent().await;
    let app = spawn_with_agents(&agents_toml(&format!("{}{REMOTE_PATH}", stub.base)), |_| {}).await;
    let relayed = relay(&app, RELAY, kagent("c1_interrupt.request.json")).await;
    assert_eq!(
        relayed,
        kagent("c1_interrupt.sse"),
        "the UI gets the remote's bytes"
    );

    // Reload while the batch waits: the stored chat, its pause and the batch.
    let session = session_in_state(&app, CONTEXT, "input-required").await;
    assert_eq!(session["session"]["agent"], "kagent/hitl");
    assert_eq!(
        session["session"]["title"],
        "[scenario:hitl_approve] Write notes_a.txt, delete old_a.txt and read readme.txt."
    );
    let task = &session["tasks"][0];
    assert_eq!(task["id"], TASK);
    let history_text = task["history"].to_string();
    assert!(
        history_text.contains("msg-c1-17f6a5"),
        "the first message: {history_text}"
    );
    let confirmations = task["status"]["message"]["parts"].to_string();
    assert!(
        confirmations.contains("adk_request_confirmation"),
        "{confirmations}"
    );
    let (_, sessions) = app.get("/api/sessions").await;
    assert_eq!(sessions["sessions"][0]["id"], CONTEXT);

    let approvals = pending(&app, 1).await;
    assert_eq!(approvals[0]["taskId"], TASK);
    assert_eq!(approvals[0]["agent"], "kagent/hitl");
    let calls = approvals[0]["calls"].as_array().unwrap();
    assert_eq!(
        calls
            .iter()
            .map(|call| call["name"].as_str().unwrap())
            .collect::<Vec<_>>(),
        ["write_file", "delete_file"]
    );

    // Approved in the chat: the decision goes to kagent as sent, and is audited here.
    let resumed = relay(&app, RELAY, kagent("c2_resume.request.json")).await;
    assert_eq!(resumed, kagent("c2_resume.sse"));
    let done = session_in_state(&app, CONTEXT, "completed").await;
    assert!(done["tasks"][0]["history"]
        .to_string()
        .contains("msg-c2-17f6a5"));
    pending(&app, 0).await;
    let (_, decided) = app.get("/api/approvals?state=decided").await;
    let entry = &decided["decisions"][0];
    assert_eq!(entry["taskId"], TASK);
    assert_eq!(entry["channel"], "a2a");
    assert_eq!(entry["summary"], "Approved");
    assert_eq!(ids(entry["calls"].as_array().unwrap()).len(), 2);
    for call in entry["calls"].as_array().unwrap() {
        assert_eq!(call["verdict"], "approve");
        assert!(
            call["result"].is_object(),
            "kagent streamed its result: {call}"
        );
    }
    app.stop().await;
}

#[tokio::test]
async fn a_rest_decision_on_a_relayed_kagent_task_is_forwarded_in_kagents_dialect() {
    let stub = fake_kagent().await;
    let app = spawn_with_agents(&agents_toml(&format!("{}{REMOTE_PATH}", stub.base)), |_| {}).await;
    relay(&app, RELAY, kagent("c1_interrupt.request.json")).await;
    let approvals = pending(&app, 1).await;
    let delete_id = approvals[0]["calls"][1]["id"].as_str().unwrap().to_owned();

    // A decision that names no pending call is refused here, and kagent never hears of it.
    let (status, body) = app
        .post_json_as(
            &format!("/api/approvals/{TASK}"),
            None,
            &json!({"decision_type": "batch", "decisions": {"nope": "approve"}}),
        )
        .await;
    assert_eq!(status, 400, "{body}");
    // Nor does a reason over the size limit, which a local task refuses too.
    let (status, body) = app
        .post_json_as(
            &format!("/api/approvals/{TASK}"),
            None,
            &json!({"decision_type": "deny", "reason": "x".repeat(5000)}),
        )
        .await;
    assert_eq!(status, 400, "{body}");
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .contains("the limit is 4096 bytes"),
        "{body}"
    );
    let forwarded_decisions = stub
        .requests()
        .iter()
        .filter(|request| request.method == "POST")
        .filter(|request| request.json()["method"] == "message/stream")
        .count();
    assert_eq!(
        forwarded_decisions, 1,
        "only the first message reached kagent"
    );

    let (status, body) = app
        .post_json_as(
            &format!("/api/approvals/{TASK}"),
            None,
            &json!({"decision_type": "deny", "reason": "not today"}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["decision"]["channel"], "rest");
    assert_eq!(body["follow"]["url"], RELAY);
    let forwarded: Vec<Value> = stub
        .requests()
        .iter()
        .filter(|request| request.method == "POST")
        .map(Recorded::json)
        .filter(|body| body["method"] == "message/stream")
        .collect();
    let message = &forwarded.last().unwrap()["params"]["message"];
    assert_eq!(message["taskId"], TASK);
    assert_eq!(message["contextId"], CONTEXT);
    assert_eq!(
        message["parts"][0]["data"],
        json!({"decision_type": "reject", "rejection_reason": "not today"}),
        "kagent's words: reject, rejection_reason"
    );
    let calls = body["decision"]["calls"].as_array().unwrap();
    assert!(ids(calls).contains(&delete_id.as_str()));
    assert!(calls.iter().all(|call| call["verdict"] == "deny"));
    pending(&app, 0).await;

    // Deciding again: nothing waits any more.
    let (status, _) = app
        .post_json_as(
            &format!("/api/approvals/{TASK}"),
            None,
            &json!({"decision_type": "approve"}),
        )
        .await;
    assert_eq!(status, 409);
    app.stop().await;
}

#[tokio::test]
async fn deleting_a_relayed_chat_deletes_our_record_only() {
    let stub = fake_kagent().await;
    let app = spawn_with_agents(&agents_toml(&format!("{}{REMOTE_PATH}", stub.base)), |_| {}).await;
    relay(&app, RELAY, kagent("c1_interrupt.request.json")).await;
    pending(&app, 1).await;
    let asked_before = stub.requests().len();
    assert_eq!(app.delete(&format!("/api/sessions/{CONTEXT}")).await, 204);
    let (status, _) = app.get(&format!("/api/sessions/{CONTEXT}")).await;
    assert_eq!(status, 404);
    let (_, sessions) = app.get("/api/sessions").await;
    assert_eq!(sessions["sessions"], json!([]));
    pending(&app, 0).await;
    assert_eq!(
        stub.requests().len(),
        asked_before,
        "the remote agent is not asked to delete or cancel anything"
    );
    app.stop().await;
}

#[tokio::test]
async fn a_reload_asks_the_remote_where_a_paused_task_stands() {
    let stub = fake_kagent().await;
    let app = spawn_with_agents(&agents_toml(&format!("{}{REMOTE_PATH}", stub.base)), |_| {}).await;
    relay(&app, RELAY, kagent("c1_interrupt.request.json")).await;
    pending(&app, 1).await;
    // Decided elsewhere (kagent's own UI): the remote has completed the task.
    let decision = serde_json::from_slice::<Value>(&kagent("c2_resume.request.json")).unwrap();
    reqwest::Client::new()
        .post(format!("{}{REMOTE_PATH}", stub.base))
        .json(&decision)
        .send()
        .await
        .unwrap();
    let (status, session) = app.get(&format!("/api/sessions/{CONTEXT}")).await;
    assert_eq!(status, 200);
    assert_eq!(session["tasks"][0]["status"]["state"], "completed");
    assert!(stub
        .requests()
        .iter()
        .any(|request| request.method == "POST" && request.json()["method"] == "tasks/get"));
    pending(&app, 0).await;
    app.stop().await;
}

/// A second `signoff` process is the remote agent: its demo agent pauses on `write_file`; the
/// chat is recorded here, and a REST approval here is forwarded in our own dialect.
#[tokio::test]
async fn a_relayed_chat_with_another_signoff_is_recorded_and_approved_over_rest() {
    let remote_dir = tempfile::tempdir().unwrap();
    let remote = start_binary(remote_dir.path(), &[], &[]).await;
    let app = spawn_with_agents(
        &agents_toml(&format!("{}/api/a2a/default/demo", remote.base)),
        |_| {},
    )
    .await;
    let message = json!({"kind": "message", "messageId": "m-remote-1", "role": "user",
                         "parts": [{"kind": "text", "text": "write relayed.txt: hi"}]});
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "message/stream",
                      "params": {"message": message}});
    relay(&app, RELAY, body.to_string().into_bytes()).await;
    let approvals = pending(&app, 1).await;
    let task = approvals[0]["taskId"].as_str().unwrap().to_owned();
    let context = approvals[0]["contextId"].as_str().unwrap().to_owned();
    assert_eq!(approvals[0]["calls"][0]["name"], "write_file");
    let session = session_in_state(&app, &context, "input-required").await;
    assert_eq!(session["session"]["title"], "write relayed.txt: hi");

    let (status, decided) = app
        .post_json_as(
            &format!("/api/approvals/{task}"),
            None,
            &json!({"decision_type": "approve"}),
        )
        .await;
    assert_eq!(status, 200, "{decided}");
    assert_eq!(decided["decision"]["channel"], "rest");
    assert_eq!(decided["state"], "completed");
    let done = session_in_state(&app, &context, "completed").await;
    let text = done["tasks"][0].to_string();
    assert!(text.contains("relayed.txt"), "{text}");
    pending(&app, 0).await;
    // The remote ran the call in its own sandbox.
    assert_eq!(
        std::fs::read_to_string(remote_dir.path().join("sandbox/relayed.txt")).unwrap(),
        "hi"
    );
    // Its own record of the chat stays when ours is deleted.
    assert_eq!(app.delete(&format!("/api/sessions/{context}")).await, 204);
    let (status, _) = reqwest::Client::new()
        .get(format!("{}/api/sessions/{context}", remote.base))
        .send()
        .await
        .map(|response| (response.status().as_u16(), ()))
        .unwrap();
    assert_eq!(status, 200);
    app.stop().await;
}

/// A question of the remote agent, answered in the relayed chat: the answers reach the remote
/// agent (its model reads them), and our record of the call agrees with the remote's own: it
/// ran with the answers added to its arguments, which is no edit.
#[tokio::test]
async fn a_relayed_questions_answers_reach_the_remote_and_are_recorded_as_it_ran_them() {
    let remote_dir = tempfile::tempdir().unwrap();
    let remote = start_binary(remote_dir.path(), &[], &[]).await;
    let app = spawn_with_agents(
        &agents_toml(&format!("{}/api/a2a/default/demo", remote.base)),
        |_| {},
    )
    .await;
    let message = json!({"kind": "message", "messageId": "m-ask-1", "role": "user",
        "parts": [{"kind": "text", "text": "ask Which database? PostgreSQL / SQLite / other"}]});
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "message/stream",
                      "params": {"message": message}});
    relay(&app, RELAY, body.to_string().into_bytes()).await;
    let approvals = pending(&app, 1).await;
    assert_eq!(approvals[0]["calls"][0]["name"], "ask_user");
    let task = approvals[0]["taskId"].as_str().unwrap().to_owned();
    let context = approvals[0]["contextId"].as_str().unwrap().to_owned();

    let answer = json!({"kind": "message", "messageId": "m-ask-2", "role": "user",
        "taskId": task, "contextId": context,
        "parts": [{"kind": "data", "data": {"decision_type": "approve",
                                            "ask_user_answers": [{"answer": ["SQLite"]}]}}]});
    let body = json!({"jsonrpc": "2.0", "id": 2, "method": "message/stream",
                      "params": {"message": answer}});
    relay(&app, RELAY, body.to_string().into_bytes()).await;
    let done = session_in_state(&app, &context, "completed").await;
    // The remote's ask_user call returned the answers, so its model read them.
    let history = done["tasks"][0]["history"].as_array().unwrap();
    let returned = history
        .iter()
        .flat_map(|message| message["parts"].as_array().unwrap())
        .find(|part| part["metadata"]["kagent_type"] == "function_response")
        .unwrap_or_else(|| panic!("no ask_user result: {history:?}"));
    let pairs: Value =
        serde_json::from_str(returned["data"]["response"]["result"].as_str().unwrap()).unwrap();
    assert_eq!(
        pairs,
        json!([{"question": "Which database?", "answer": ["SQLite"]}])
    );

    let decided_call = |body: Value| body["decisions"][0]["calls"][0].clone();
    let (_, here) = app.get("/api/approvals?state=decided").await;
    let here = decided_call(here);
    let there: Value = reqwest::get(format!("{}/api/approvals?state=decided", remote.base))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let there = decided_call(there);
    assert_eq!(here["verdict"], "approve", "{here}");
    assert_eq!(here["argsSha256"], there["argsSha256"], "{here} {there}");
    assert_eq!(
        here["runArgsSha256"], there["runArgsSha256"],
        "{here} {there}"
    );
    assert_ne!(here["runArgsSha256"], here["argsSha256"], "{here}");
    assert_eq!(here["edited"], false, "{here}");
    app.stop().await;
}

#[tokio::test]
async fn a_remote_that_refuses_to_cancel_is_listed_as_not_cancelable() {
    let stub = fake_kagent().await;
    let app = spawn_with_agents(&agents_toml(&format!("{}{REMOTE_PATH}", stub.base)), |_| {}).await;
    let (_, before) = app.get("/api/agents").await;
    assert_eq!(
        before["agents"][1]["cancelable"],
        Value::Null,
        "not known yet"
    );
    let cancel = json!({"jsonrpc": "2.0", "id": "x", "method": "tasks/cancel",
                        "params": {"id": TASK}});
    let answer = relay(&app, RELAY, cancel.to_string().into_bytes()).await;
    let answer: Value = serde_json::from_slice(&answer).unwrap();
    assert_eq!(answer["error"]["message"], "Cancellation is not supported");
    eventually("the agents list says it cannot cancel", || async {
        let (_, body) = app.get("/api/agents").await;
        (body["agents"][1]["cancelable"] == false).then_some(())
    })
    .await;
    app.stop().await;
}

#[tokio::test]
async fn a_remote_agents_file_entry_can_say_it_cannot_cancel_and_its_card_skills_are_listed() {
    let toml = r#"
[[agents]]
name = "hitl"
namespace = "kagent"
remote = { url = "URL", cancel = false }
"#;
    let card = json!({"name": "k8s-agent", "description": "k8s", "version": "1",
                      "url": "http://x/", "protocolVersion": "0.3.0",
                      "capabilities": {}, "defaultInputModes": ["text"],
                      "defaultOutputModes": ["text"],
                      "skills": [{"id": "pods", "name": "Pods", "description": "Lists pods",
                                  "tags": ["k8s", "read"]}]});
    let stub = Stub::start(move |_| json_response(200, &card)).await;
    let app = spawn_with_agents(&toml.replace("URL", &format!("{}/", stub.base)), |_| {}).await;
    let (_, listed) = app.get("/api/agents").await;
    let entry = &listed["agents"][0];
    assert_eq!(entry["cancelable"], false);
    assert_eq!(
        entry["skills"],
        json!([{"name": "Pods", "description": "Lists pods", "tags": ["k8s", "read"]}])
    );
    app.stop().await;
}

fn hitl_fixture(name: &str) -> Vec<u8> {
    fixture(&format!(
        "../../../protocol/tests/fixtures/kagent-hitl-v1/{name}"
    ))
}

/// A kagent agent that speaks its HITL extension (v1.0): an extension response resumes (p2),
/// any other message pauses (p1).
fn kagent_hitl(request: &Recorded) -> axum::response::Response {
    if request.method == "GET" {
        let card: Value = serde_json::from_slice(&hitl_fixture("agent_card.json")).unwrap();
        return json_response(200, &card);
    }
    let body = request.json();
    let response = &body["params"]["message"]["metadata"]["https://kagent.dev/extensions/hitl/v1"];
    if response["type"] == "tool_approval_response" {
        sse(hitl_fixture("p2_tool_approval_resume.sse"))
    } else {
        sse(hitl_fixture("p1_tool_approval_request.sse"))
    }
}

#[tokio::test]
async fn a_rest_decision_on_a_kagent_hitl_extension_pause_is_forwarded_by_approval_id() {
    let stub = Stub::start(kagent_hitl).await;
    let app = spawn_with_agents(&agents_toml(&format!("{}/", stub.base)), |_| {}).await;
    let message = json!({"messageId": "m-ext-1", "role": "ROLE_USER",
                         "parts": [{"text": "Clean up and restart the api"}]});
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage",
                      "params": {"message": message}});
    let response = app
        .post(RELAY)
        .header("content-type", "application/json")
        .header("A2A-Version", "1.0")
        .header("A2A-Extensions", "https://kagent.dev/extensions/hitl/v1")
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    within("the relayed stream", response.bytes())
        .await
        .unwrap();
    let approvals = pending(&app, 1).await;
    assert_eq!(approvals[0]["taskId"], "task-123");
    // The first message is kept although kagent's stream starts with a bare task snapshot.
    let session = session_in_state(&app, "conversation-456", "input-required").await;
    assert!(session["tasks"][0]["history"]
        .to_string()
        .contains("m-ext-1"));
    assert_eq!(session["session"]["title"], "Clean up and restart the api");

    let (status, decided) = app
        .post_json_as(
            "/api/approvals/task-123",
            None,
            &json!({"decision_type": "batch",
                    "decisions": {"call-delete": "deny", "call-restart": "approve"},
                    "rejection_reasons": {"call-delete": "still used"}}),
        )
        .await;
    assert_eq!(status, 200, "{decided}");
    assert_eq!(decided["state"], "completed");
    let forwarded = stub
        .requests()
        .into_iter()
        .filter(|request| request.method == "POST")
        .last()
        .unwrap();
    assert_eq!(forwarded.header("a2a-version"), Some("1.0"));
    assert_eq!(
        forwarded.header("a2a-extensions"),
        Some("https://kagent.dev/extensions/hitl/v1")
    );
    let sent = forwarded.json();
    assert_eq!(sent["method"], "SendStreamingMessage");
    let payload = &sent["params"]["message"]["metadata"]["https://kagent.dev/extensions/hitl/v1"];
    assert_eq!(payload["type"], "tool_approval_response");
    let approvals = payload["approvals"].as_array().unwrap();
    let by_id = |id: &str| {
        approvals
            .iter()
            .find(|approval| approval["id"] == id)
            .cloned()
            .unwrap()
    };
    assert_eq!(by_id("approval-21")["approved"], false);
    assert_eq!(by_id("approval-21")["rejection_reason"], "still used");
    assert_eq!(by_id("approval-22")["approved"], true);
    let verdicts: Vec<(String, String)> = decided["decision"]["calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|call| {
            (
                call["id"].as_str().unwrap().to_owned(),
                call["verdict"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        verdicts,
        [
            ("call-delete".to_owned(), "deny".to_owned()),
            ("call-restart".to_owned(), "approve".to_owned())
        ]
    );
    pending(&app, 0).await;
    app.stop().await;
}
