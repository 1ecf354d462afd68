//! Read-only share links (`/api/sessions/{id}/shares`, `?share=TOKEN`): the token reads its own
//! chat and gets 403 everywhere else, decisions, sends and cancels included; a revoked token
//! reads nothing; only the chat's owner makes, lists and revokes links.

use serde_json::{json, Value};

use crate::support::*;

/// Says `text` as the user of `token` in a new chat; the stream's results.
async fn say_as(app: &TestApp, token: Option<&str>, text: &str) -> Vec<Value> {
    let body = message_request("message/stream", message_v03(text, None, None));
    results(&app.stream_as(None, token, body).await)
}

/// A JSON-RPC request to the demo agent with `?share=TOKEN` and no bearer: its HTTP status and
/// body.
async fn rpc_shared(app: &TestApp, share: &str, body: &Value) -> (u16, Value) {
    let response = app
        .post(&format!("{DEMO}?share={share}"))
        .json(body)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

fn two_users() -> impl FnOnce(&mut signoff_server::Config) {
    |config| {
        config.auth = signoff_server::AuthMode::Tokens;
        config.tokens = vec!["alice-token=alice".into(), "bob-token=bob".into()];
    }
}

#[tokio::test]
async fn a_share_token_reads_its_own_chat_and_gets_403_on_everything_else() {
    let app = spawn_with(two_users()).await;
    let alice = Some("alice-token");
    let paused = say_as(&app, alice, "write a.txt: 1").await;
    let (task, chat) = (task_id(&paused), context_id(&paused));
    assert_eq!(task_state_as(&app, alice, &task).await, "input-required");
    let other = say_as(&app, alice, "list files").await;
    let (other_task, other_chat) = (task_id(&other), context_id(&other));

    let (status, share) = app
        .post_json_as(&format!("/api/sessions/{chat}/shares"), alice, &json!({}))
        .await;
    assert_eq!(status, 201, "{share}");
    let token = share["token"].as_str().unwrap().to_owned();
    let id = share["id"].as_str().unwrap().to_owned();
    assert_eq!(share.as_object().unwrap().len(), 3, "{share}");
    assert!(token.len() >= 40, "{token}");
    assert!(
        share["url"]
            .as_str()
            .unwrap()
            .ends_with(&format!("/agents/default/demo/chat/{chat}?share={token}")),
        "{share}"
    );
    // The store keeps a hash of the token, never the token.
    let stored = sql_count(
        app.data_dir.path(),
        "SELECT COUNT(*) FROM shares WHERE token_sha256 = ?1",
        &token,
    )
    .await;
    assert_eq!(stored, 0);

    // It reads its chat, without a bearer token (and whoever's token comes with it).
    let (status, read) = app
        .get_as(&format!("/api/sessions/{chat}?share={token}"), None)
        .await;
    assert_eq!(status, 200, "{read}");
    assert_eq!(read["session"]["id"], chat.as_str());
    assert_eq!(read["tasks"][0]["id"], task.as_str());
    let (status, _) = app
        .get_as(
            &format!("/api/sessions/{chat}?share={token}"),
            Some("bob-token"),
        )
        .await;
    assert_eq!(status, 200);

    // Every other read is 403: another chat, the lists, its own chat's links.
    for path in [
        format!("/api/sessions/{other_chat}"),
        "/api/sessions".to_owned(),
        "/api/approvals".to_owned(),
        "/api/approvals?state=decided".to_owned(),
        "/api/policies".to_owned(),
        "/api/feedback".to_owned(),
        "/api/agents".to_owned(),
        format!("/api/sessions/{chat}/shares"),
        "/api/a2a/default/demo/.well-known/agent-card.json".to_owned(),
    ] {
        let separator = if path.contains('?') { '&' } else { '?' };
        let (status, body) = app
            .get_as(&format!("{path}{separator}share={token}"), None)
            .await;
        assert_eq!(status, 403, "{path}: {body}");
    }

    // No decision, send, cancel or delete, over REST or A2A.
    let (status, _) = app
        .post_json_as(
            &format!("/api/approvals/{task}?share={token}"),
            None,
            &json!({"decision_type": "approve"}),
        )
        .await;
    assert_eq!(status, 403);
    let approve = decision(&task, &chat, json!({"decision_type": "approve"}));
    let sends = [
        message_request("message/send", approve.clone()),
        message_request("message/stream", approve),
        message_request("message/send", message_v03("hi", None, Some(&chat))),
        message_request("message/stream", message_v03("hi", None, Some(&chat))),
        request("tasks/cancel", json!({"id": task})),
        request("tasks/resubscribe", json!({"id": other_task})),
        request("tasks/get", json!({"id": other_task})),
    ];
    for body in &sends {
        let (status, answer) = rpc_shared(&app, &token, body).await;
        assert_eq!(status, 403, "{}: {answer}", body["method"]);
    }
    let response = app
        .client
        .delete(app.url(&format!("/api/sessions/{chat}?share={token}")))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 403);
    assert_eq!(task_state_as(&app, alice, &task).await, "input-required");
    assert!(!app.sandbox().join("a.txt").exists());
    let (_, tasks) = app.get_as(&format!("/api/sessions/{chat}"), alice).await;
    assert_eq!(tasks["tasks"].as_array().unwrap().len(), 1);

    // Revoked: 404 everywhere, its own chat included.
    let (_, list) = app
        .get_as(&format!("/api/sessions/{chat}/shares"), alice)
        .await;
    assert_eq!(list["shares"][0]["id"], id.as_str());
    assert!(list["shares"][0]["created_at"].is_string());
    assert_eq!(list["shares"][0].as_object().unwrap().len(), 2);
    assert_eq!(
        app.delete_as(&format!("/api/sessions/{chat}/shares/{id}"), alice)
            .await,
        204
    );
    for path in [format!("/api/sessions/{chat}"), "/api/sessions".to_owned()] {
        let (status, body) = app.get_as(&format!("{path}?share={token}"), None).await;
        assert_eq!(status, 404, "{path}: {body}");
    }
    let (_, list) = app
        .get_as(&format!("/api/sessions/{chat}/shares"), alice)
        .await;
    assert_eq!(list, json!({"shares": []}));
    assert_eq!(
        app.delete_as(&format!("/api/sessions/{chat}/shares/{id}"), alice)
            .await,
        404
    );
    let (status, _) = app
        .get_as(&format!("/api/sessions/{chat}?share=not-a-token"), None)
        .await;
    assert_eq!(status, 404);
}

#[tokio::test]
async fn only_the_owner_makes_lists_and_revokes_a_chats_links() {
    let app = spawn_with(two_users()).await;
    let (alice, bob) = (Some("alice-token"), Some("bob-token"));
    let chat = context_id(&say_as(&app, alice, "list files").await);
    let shares = format!("/api/sessions/{chat}/shares");
    let (status, share) = app.post_json_as(&shares, alice, &json!({})).await;
    assert_eq!(status, 201);
    let id = share["id"].as_str().unwrap();

    let (status, _) = app.post_json_as(&shares, bob, &json!({})).await;
    assert_eq!(status, 404);
    let (status, _) = app.get_as(&shares, bob).await;
    assert_eq!(status, 404);
    assert_eq!(app.delete_as(&format!("{shares}/{id}"), bob).await, 404);
    let (status, _) = app.get_as(&shares, None).await;
    assert_eq!(status, 401);
    let (status, _) = app
        .post_json_as("/api/sessions/nope/shares", alice, &json!({}))
        .await;
    assert_eq!(status, 404);

    // Still live after Bob's tries; deleting the chat ends it.
    let token = share["token"].as_str().unwrap();
    let (status, _) = app
        .get_as(&format!("/api/sessions/{chat}?share={token}"), None)
        .await;
    assert_eq!(status, 200);
    assert_eq!(
        app.delete_as(&format!("/api/sessions/{chat}"), alice).await,
        204
    );
    let (status, _) = app
        .get_as(&format!("/api/sessions/{chat}?share={token}"), None)
        .await;
    assert_eq!(status, 404);
}

/// The state of `task` as its owner's `tasks/get` shows it.
async fn task_state_as(app: &TestApp, token: Option<&str>, task: &str) -> String {
    let got = app
        .rpc_as(None, token, request("tasks/get", json!({"id": task})))
        .await;
    got["result"]["status"]["state"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test]
async fn the_pages_the_share_page_and_its_read_tell_the_browser_to_send_no_referrer() {
    let ui = tempfile::tempdir().unwrap();
    std::fs::write(ui.path().join("index.html"), "<html>signoff ui</html>").unwrap();
    let dir = ui.path().to_owned();
    let app = spawn_with(move |config| {
        two_users()(config);
        config.ui_dir = Some(dir);
    })
    .await;
    let alice = Some("alice-token");
    let chat = context_id(&say_as(&app, alice, "list files").await);
    let (status, share) = app
        .post_json_as(&format!("/api/sessions/{chat}/shares"), alice, &json!({}))
        .await;
    assert_eq!(status, 201, "{share}");
    let token = share["token"].as_str().unwrap();
    let page = share["url"].as_str().unwrap();
    let read = app.url(&format!("/api/sessions/{chat}?share={token}"));
    let elsewhere = app.url(&format!("/api/sessions?share={token}"));
    for (url, status) in [
        (app.url("/"), 200),
        (page.to_owned(), 200),
        (read, 200),
        // Refusals too: whatever answers, the address stays here.
        (elsewhere, 403),
        (app.url("/api/sessions"), 401),
    ] {
        let response = app.client.get(&url).send().await.unwrap();
        assert_eq!(response.status(), status, "{url}");
        assert_eq!(
            response
                .headers()
                .get("referrer-policy")
                .and_then(|value| value.to_str().ok()),
            Some("no-referrer"),
            "{url}"
        );
    }
}
