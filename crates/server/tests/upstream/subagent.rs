//! A remote kagent agent as a subagent: a loopback server replays kagent 0.10.4's recorded
//! mixed-decision scenario (e1 pause, e2 resume); the parent pauses with kagent's confirmation
//! calls nested, and its decision reaches kagent in kagent's dialect, as kagent's UI sends it.
//! A remote that offers only A2A v1.0 is asked in v1.0, and a remote's card is fetched once
//! while its `Cache-Control` keeps it fresh, by the relay and subagent calls alike.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use serde_json::{json, Value};

use crate::stub::{fixture, json_response, sse, Stub};
use crate::support::*;
use crate::translated::v10_only_front;

const REMOTE_PATH: &str = "/api/a2a/harness/hitl_harness/";
const BOSS: &str = "/api/a2a/default/boss";
const TASK: &str = "c9bbd7ef-ae9a-4ac1-aae3-12befe78d36c";
const CONTEXT: &str = "2061a334-e1d7-45d5-959b-b99dfc4ec650";

fn kagent(name: &str) -> Vec<u8> {
    fixture(&format!(
        "../../../protocol/tests/fixtures/kagent-0.10.4/{name}"
    ))
}

/// The recorded runtime: its card, the e1 pause for a new message, the e2 resume for a
/// message on the task, and `tasks/get` with the state it is in.
async fn kagent_runtime() -> Stub {
    let decided = Arc::new(AtomicBool::new(false));
    Stub::start(move |request| {
        if request.method == "GET" {
            let card: Value = serde_json::from_slice(&kagent("agent_card.json")).unwrap();
            return json_response(200, &card);
        }
        let body = request.json();
        match body["method"].as_str().unwrap() {
            "message/stream" if body["params"]["message"]["taskId"].is_string() => {
                decided.store(true, Ordering::SeqCst);
                sse(kagent("e2_resume.sse"))
            }
            "message/stream" => sse(kagent("e1_interrupt.sse")),
            "tasks/get" => {
                // The status of the last event streamed: paused with its confirmations (as
                // kagent's `tasks/get` shows them, f1), or completed.
                let scenario = if decided.load(Ordering::SeqCst) {
                    "e2_resume.sse"
                } else {
                    "e1_interrupt.sse"
                };
                let events = sse_payloads(&kagent(scenario));
                let status = events.last().unwrap()["result"]["status"].clone();
                json_response(
                    200,
                    &json!({"jsonrpc": "2.0", "id": body["id"], "result": {
                        "kind": "task", "id": TASK, "contextId": CONTEXT, "status": status}}),
                )
            }
            other => panic!("unexpected {other}"),
        }
    })
    .await
}

#[tokio::test]
async fn a_kagent_subagents_confirmations_nest_and_a_mixed_decision_goes_back_in_its_dialect() {
    let remote = kagent_runtime().await;
    let agents = format!(
        "[[agents]]\nname = \"hitl\"\nnamespace = \"kagent\"\n\
         remote = {{ url = \"{}{REMOTE_PATH}\" }}\n\
         [[agents]]\nname = \"boss\"\nagents = [\"kagent/hitl\"]\n",
        remote.base
    );
    let app = spawn_with_agents(&agents, |_| {}).await;
    let paused = send_stream(
        &app,
        BOSS,
        message_v03("delegate kagent/hitl: write and delete", None, None),
    )
    .await;
    assert_eq!(states(&paused).last().unwrap(), "input-required");
    let interrupt = data_parts(&paused, "interrupt_data");
    let requests = interrupt.last().unwrap()["action_requests"]
        .as_array()
        .unwrap()
        .clone();
    let ids: Vec<&str> = requests.iter().map(|r| r["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["call_1/call_write_b", "call_1/call_delete_b"]);
    assert_eq!(requests[0]["metadata"]["subagent"]["agent"], "kagent/hitl");
    assert_eq!(requests[0]["metadata"]["subagent"]["task_id"], TASK);

    let reason = "Keep old_b.txt, it is still needed.";
    let (task, context) = (task_id(&paused), context_id(&paused));
    let done = send_stream(
        &app,
        BOSS,
        decision(
            &task,
            &context,
            json!({"decision_type": "batch",
                   "decisions": {"call_1/call_write_b": "approve", "call_1/call_delete_b": "deny"},
                   "rejection_reasons": {"call_1/call_delete_b": reason}}),
        ),
    )
    .await;
    assert_eq!(states(&done).last().unwrap(), "completed");
    assert!(
        answer_text(&done).contains("Mixed decision handled."),
        "{}",
        answer_text(&done)
    );
    // The decision kagent got: its own dialect, as its UI sends it (the recorded e2 request).
    let sent: Vec<Value> = remote
        .requests()
        .iter()
        .filter(|request| request.method == "POST")
        .map(|request| request.json())
        .filter(|body| body["params"]["message"]["taskId"] == TASK)
        .collect();
    assert_eq!(sent.len(), 1, "one decision forwarded");
    let recorded: Value = serde_json::from_slice(&kagent("e2_resume.request.json")).unwrap();
    assert_eq!(
        sent[0]["params"]["message"]["parts"][0]["data"],
        recorded["params"]["message"]["parts"][0]["data"]
    );
    assert_eq!(sent[0]["params"]["message"]["contextId"], CONTEXT);
    // kagent's result for the approved write is mirrored onto its nested card.
    let results = data_parts(&done, "function_response");
    assert!(
        results
            .iter()
            .any(|result| result["id"] == "call_1/call_write_b"),
        "{results:?}"
    );
}

#[tokio::test]
async fn a_subagent_that_offers_only_v10_is_asked_in_v10() {
    let remote_dir = tempfile::tempdir().unwrap();
    let remote = start_binary(remote_dir.path(), &[], &[]).await;
    let front = v10_only_front(format!("{}/api/a2a/default/demo", remote.base)).await;
    let agents = format!(
        "[[agents]]\nname = \"v10\"\nnamespace = \"kagent\"\n\
         remote = {{ url = \"{}/\" }}\n\
         [[agents]]\nname = \"boss\"\nagents = [\"kagent/v10\"]\n",
        front.base
    );
    let app = spawn_with_agents(&agents, |_| {}).await;
    let paused = send_stream(
        &app,
        BOSS,
        message_v03("delegate kagent/v10: write v10.txt: hi", None, None),
    )
    .await;
    assert_eq!(
        states(&paused).last().unwrap(),
        "input-required",
        "{paused:?}"
    );
    let interrupt = data_parts(&paused, "interrupt_data");
    let requests = interrupt.last().unwrap()["action_requests"].clone();
    assert_eq!(requests[0]["id"], "call_1/call_1", "{requests}");
    assert_eq!(requests[0]["name"], "write_file");
    assert_eq!(requests[0]["metadata"]["subagent"]["agent"], "kagent/v10");

    let (task, context) = (task_id(&paused), context_id(&paused));
    let done = send_stream(
        &app,
        BOSS,
        decision(&task, &context, json!({"decision_type": "approve"})),
    )
    .await;
    assert_eq!(states(&done).last().unwrap(), "completed", "{done:?}");
    assert_eq!(
        std::fs::read_to_string(remote_dir.path().join("sandbox/v10.txt")).unwrap(),
        "hi"
    );
    // Every call reached the remote in v1.0 (it refuses any other).
    let calls = front.calls.lock().unwrap().clone();
    assert!(calls.len() >= 3, "{calls:?}");
    for (version, call) in &calls {
        assert_eq!(version.as_deref(), Some("1.0"), "{call}");
    }
}

/// A remote agent that answers every message at once ("done"), each in a task of its own, and
/// serves its card (kagent's) with `Cache-Control: max-age=MAX_AGE`.
async fn quick_remote(max_age: u64) -> Stub {
    let tasks = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    Stub::start(move |request| {
        if request.method == "GET" {
            let card: Value = serde_json::from_slice(&kagent("agent_card.json")).unwrap();
            let mut response = json_response(200, &card);
            response.headers_mut().insert(
                "cache-control",
                format!("public, max-age={max_age}").parse().unwrap(),
            );
            return response;
        }
        let body = request.json();
        let done = json!({"state": "completed", "message": {"kind": "message",
            "messageId": "m-done", "role": "agent", "parts": [{"kind": "text", "text": "done"}]}});
        match body["method"].as_str().unwrap() {
            "message/stream" => {
                let task = format!("quick-{}", tasks.fetch_add(1, Ordering::SeqCst));
                let context = body["params"]["message"]["contextId"].clone();
                let event = json!({"jsonrpc": "2.0", "id": body["id"], "result": {
                    "kind": "status-update", "taskId": task, "contextId": context,
                    "status": done, "final": true}});
                sse(format!("data: {event}\n\n").into_bytes())
            }
            "tasks/get" => json_response(
                200,
                &json!({"jsonrpc": "2.0", "id": body["id"], "result": {
                    "kind": "task", "id": body["params"]["id"], "contextId": "c",
                    "status": done}}),
            ),
            other => panic!("unexpected {other}"),
        }
    })
    .await
}

fn card_fetches(remote: &Stub) -> usize {
    remote
        .requests()
        .iter()
        .filter(|request| request.method == "GET")
        .count()
}

#[tokio::test]
async fn a_remote_card_is_fetched_once_while_fresh_and_again_after_its_max_age() {
    let (kept, brief) = (quick_remote(600).await, quick_remote(2).await);
    let agents = format!(
        "[[agents]]\nname = \"kept\"\nnamespace = \"remote\"\nremote = {{ url = \"{}/a2a\" }}\n\
         [[agents]]\nname = \"brief\"\nnamespace = \"remote\"\nremote = {{ url = \"{}/a2a\" }}\n\
         [[agents]]\nname = \"boss\"\nagents = [\"remote/kept\", \"remote/brief\"]\n",
        kept.base, brief.base
    );
    let app = spawn_with_agents(&agents, |_| {}).await;
    let ask = |text: &'static str| {
        let app = &app;
        async move {
            let done = send_stream(app, BOSS, message_v03(text, None, None)).await;
            assert_eq!(states(&done).last().unwrap(), "completed", "{done:?}");
            assert!(answer_text(&done).contains("done"), "{done:?}");
        }
    };
    // The agents list (the relay) and three subagent calls share one fetch of the card.
    let (status, listed) = app.get("/api/agents").await;
    assert_eq!(status, 200, "{listed}");
    for _ in 0..3 {
        ask("delegate remote/kept: hello").await;
    }
    assert_eq!(card_fetches(&kept), 1);
    assert!(kept.requests().len() >= 7, "3 streams and their tasks/get");

    // A card kept for 2 s is fetched again once they have passed.
    ask("delegate remote/brief: hello").await;
    let before = card_fetches(&brief);
    assert!(before >= 1);
    tokio::time::sleep(std::time::Duration::from_millis(2500)).await;
    ask("delegate remote/brief: hello").await;
    assert!(card_fetches(&brief) > before, "fetched again after max-age");
}
