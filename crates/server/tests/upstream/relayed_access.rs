//! Who reaches a relayed task (crates/server/README.md, Relayed chats): alice's chat with a
//! remote agent is hers, as a local chat is. Bob's `tasks/get`, resubscription, cancel, push
//! config and decision on it are answered as for a task that does not exist, and the remote
//! agent hears none of them; alice's own are forwarded. A relayed decision's audit row names
//! who decided and how they signed in, in the chat and over REST.

use serde_json::{json, Value};
use signoff_server::AuthMode;

use crate::relayed::{agents_toml, fake_kagent, kagent, CONTEXT, RELAY, TASK};
use crate::stub::Stub;
use crate::support::{eventually, spawn_with_agents, sse_payloads, within, TestApp};

async fn with_alice_and_bob(stub: &Stub) -> TestApp {
    let remote = format!("{}{}", stub.base, crate::relayed::REMOTE_PATH);
    spawn_with_agents(&agents_toml(&remote), |config| {
        config.auth = AuthMode::Tokens;
        config.tokens = vec!["alice-token=alice".into(), "bob-token=bob".into()];
    })
    .await
}

/// `body` through the relay to the remote agent as the holder of `token`: the answer's bytes.
async fn relay_as(app: &TestApp, token: &str, body: &[u8]) -> Vec<u8> {
    let response = app
        .post(RELAY)
        .bearer_auth(token)
        .header("content-type", "application/json")
        .body(body.to_vec())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    within("the relayed answer", response.bytes())
        .await
        .unwrap()
        .to_vec()
}

async fn rpc_as(app: &TestApp, path: &str, token: &str, body: &Value) -> Value {
    let response = app
        .post(path)
        .bearer_auth(token)
        .json(body)
        .send()
        .await
        .unwrap();
    response.json().await.unwrap()
}

/// Alice's kagent chat, paused on its batch.
async fn alices_paused_chat(app: &TestApp) {
    relay_as(app, "alice-token", &kagent("c1_interrupt.request.json")).await;
    eventually("alice's batch to wait", || async {
        let (_, body) = app.get_as("/api/approvals", Some("alice-token")).await;
        (body["approvals"].as_array()?.len() == 1).then_some(())
    })
    .await;
}

/// The number of JSON-RPC calls the remote agent received.
fn calls(stub: &Stub) -> usize {
    stub.requests()
        .iter()
        .filter(|request| request.method == "POST")
        .count()
}

#[tokio::test]
async fn another_users_relayed_task_is_not_found_and_nothing_of_it_reaches_the_remote() {
    let stub = fake_kagent().await;
    let app = with_alice_and_bob(&stub).await;
    alices_paused_chat(&app).await;
    let before = calls(&stub);
    let not_found = json!({"code": -32001, "message": format!("task {TASK} not found")});

    // The answers to bob are a local agent's to a task that does not exist.
    let get = json!({"jsonrpc": "2.0", "id": "g", "method": "tasks/get", "params": {"id": TASK}});
    let answer = rpc_as(&app, RELAY, "bob-token", &get).await;
    assert_eq!(answer["error"], not_found, "{answer}");
    let local = rpc_as(&app, "/api/a2a/default/demo", "bob-token", &get).await;
    assert_eq!(answer, local);
    let cancel =
        json!({"jsonrpc": "2.0", "id": "c", "method": "tasks/cancel", "params": {"id": TASK}});
    assert_eq!(
        rpc_as(&app, RELAY, "bob-token", &cancel).await["error"],
        not_found
    );
    let push = json!({"jsonrpc": "2.0", "id": "p", "method": "tasks/pushNotificationConfig/set",
                      "params": {"taskId": TASK, "pushNotificationConfig": {"url": "https://bob.example/hook"}}});
    assert_eq!(
        rpc_as(&app, RELAY, "bob-token", &push).await["error"],
        not_found
    );
    let resubscribe = json!({"jsonrpc": "2.0", "id": "r", "method": "tasks/resubscribe",
                             "params": {"id": TASK}});
    let events =
        sse_payloads(&relay_as(&app, "bob-token", resubscribe.to_string().as_bytes()).await);
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0]["error"], not_found);
    // Bob's approval of alice's batch, in kagent's words as alice's UI sends it.
    let approval = relay_as(&app, "bob-token", &kagent("c2_resume.request.json")).await;
    let events = sse_payloads(&approval);
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0]["error"], not_found);
    // Over REST too (refused there before the relay checked anything).
    let (status, _) = app
        .post_json_as(
            &format!("/api/approvals/{TASK}"),
            Some("bob-token"),
            &json!({"decision_type": "approve"}),
        )
        .await;
    assert_eq!(status, 403);

    assert_eq!(
        calls(&stub),
        before,
        "the remote agent heard nothing of bob's"
    );
    let (_, waiting) = app.get_as("/api/approvals", Some("alice-token")).await;
    assert_eq!(
        waiting["approvals"][0]["taskId"], TASK,
        "alice's batch still waits"
    );
    let (status, session) = app
        .get_as(&format!("/api/sessions/{CONTEXT}"), Some("alice-token"))
        .await;
    assert_eq!(status, 200);
    assert_eq!(session["tasks"][0]["status"]["state"], "input-required");

    // Alice's own requests reach the remote agent.
    let asked = calls(&stub);
    let answer = rpc_as(&app, RELAY, "alice-token", &get).await;
    assert_eq!(answer["result"]["id"], TASK, "{answer}");
    assert_eq!(calls(&stub), asked + 1);
    app.stop().await;
}

#[tokio::test]
async fn a_relayed_decisions_audit_row_names_who_decided_and_how_they_signed_in() {
    // In the chat: alice approves in kagent's words.
    let stub = fake_kagent().await;
    let app = with_alice_and_bob(&stub).await;
    alices_paused_chat(&app).await;
    let resumed = relay_as(&app, "alice-token", &kagent("c2_resume.request.json")).await;
    assert_eq!(resumed, kagent("c2_resume.sse"));
    let entry = eventually("the chat's decision to be audited", || async {
        let (_, body) = app
            .get_as("/api/approvals?state=decided", Some("alice-token"))
            .await;
        Some(body["decisions"].as_array()?.first()?.clone())
    })
    .await;
    assert_eq!(entry["taskId"], TASK);
    assert_eq!(entry["channel"], "a2a");
    assert_eq!(entry["decidedBy"], "alice", "{entry}");
    assert_eq!(entry["deciderAuth"], "tokens", "{entry}");
    app.stop().await;

    // Over REST: alice rejects.
    let stub = fake_kagent().await;
    let app = with_alice_and_bob(&stub).await;
    alices_paused_chat(&app).await;
    let (status, body) = app
        .post_json_as(
            &format!("/api/approvals/{TASK}"),
            Some("alice-token"),
            &json!({"decision_type": "deny", "reason": "not today"}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["decision"]["channel"], "rest");
    assert_eq!(body["decision"]["decidedBy"], "alice", "{body}");
    assert_eq!(body["decision"]["deciderAuth"], "tokens", "{body}");
    app.stop().await;
}
