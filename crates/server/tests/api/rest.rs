//! The REST surfaces: agents, cards, sessions, the static UI.

use serde_json::json;

use crate::support::*;

#[tokio::test]
async fn lists_the_demo_agent_with_its_approval_rules() {
    let app = spawn_app().await;
    let (status, body) = app.get("/api/agents").await;
    assert_eq!(status, 200);
    let agent = &body["agents"][0];
    assert_eq!(agent["namespace"], "default");
    assert_eq!(agent["name"], "demo");
    assert_eq!(agent["url"], "/api/a2a/default/demo");
    assert_eq!(
        agent["requireApproval"],
        json!(["write_file", "delete_file", "ask_user"])
    );
    let tools: Vec<&str> = agent["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        tools,
        [
            "list_directory",
            "read_file",
            "write_file",
            "delete_file",
            "ask_user"
        ]
    );
}

#[tokio::test]
async fn serves_the_ui_with_spa_fallback_but_not_for_api_paths() {
    let ui = tempfile::tempdir().unwrap();
    std::fs::write(ui.path().join("index.html"), "<html>signoff ui</html>").unwrap();
    std::fs::write(ui.path().join("app.js"), "console.log(1)").unwrap();
    let dir = ui.path().to_owned();
    let app = spawn_with(move |config| config.ui_dir = Some(dir)).await;
    for (path, expect) in [
        ("/", "signoff ui"),
        ("/app.js", "console.log(1)"),
        ("/chat/some/deep/link", "signoff ui"),
    ] {
        let response = app.client.get(app.url(path)).send().await.unwrap();
        assert_eq!(response.status(), 200, "{path}");
        assert_eq!(
            response.text().await.unwrap(),
            expect.replace("signoff ui", "<html>signoff ui</html>"),
            "{path}"
        );
    }
    let (status, _) = app.get("/api/nope").await;
    assert_eq!(status, 404);
}

#[tokio::test]
async fn sessions_list_show_in_order_and_delete() {
    let app = spawn_app().await;
    let first = app
        .rpc(
            None,
            message_request("message/send", message_v03("list files", None, None)),
        )
        .await;
    let context = first["result"]["contextId"].as_str().unwrap().to_owned();
    let second = app
        .rpc(
            None,
            message_request(
                "message/send",
                message_v03("read readme.txt", None, Some(&context)),
            ),
        )
        .await;
    assert_eq!(second["result"]["contextId"], context.as_str());
    let (status, body) = app.get("/api/sessions").await;
    assert_eq!(status, 200);
    assert_eq!(body["sessions"][0]["id"], context.as_str());
    assert_eq!(body["sessions"][0]["title"], "list files");
    assert_eq!(body["sessions"][0]["agent"], "default/demo");
    let (status, body) = app.get(&format!("/api/sessions/{context}")).await;
    assert_eq!(status, 200);
    let tasks = body["tasks"].as_array().unwrap();
    assert_eq!(tasks.len(), 2);
    assert_eq!(tasks[0]["id"], first["result"]["id"]);
    assert_eq!(tasks[1]["id"], second["result"]["id"]);
    assert_eq!(tasks[0]["kind"], "task");
    assert_eq!(app.delete(&format!("/api/sessions/{context}")).await, 204);
    let (status, _) = app.get(&format!("/api/sessions/{context}")).await;
    assert_eq!(status, 404);
    let gone = app
        .rpc(
            None,
            request("tasks/get", json!({"id": first["result"]["id"]})),
        )
        .await;
    assert_eq!(gone["error"]["code"], -32001);
}

#[tokio::test]
async fn a_stored_chat_is_gzipped_for_a_client_that_asks_and_streams_are_not() {
    let app = spawn_app().await;
    let mut context: Option<String> = None;
    for turn in 0..6 {
        let text = if turn % 2 == 0 {
            "list files"
        } else {
            "read readme.txt"
        };
        let sent = app
            .rpc(
                None,
                message_request("message/send", message_v03(text, None, context.as_deref())),
            )
            .await;
        context = Some(sent["result"]["contextId"].as_str().unwrap().to_owned());
    }
    let path = format!("/api/sessions/{}", context.unwrap());
    let (status, plain) = app.get(&path).await;
    assert_eq!(status, 200);
    let asked = |path: &str| {
        app.client
            .get(app.url(path))
            .header("accept-encoding", "gzip")
            .send()
    };
    let response = asked(&path).await.unwrap();
    assert_eq!(response.headers()["content-encoding"], "gzip");
    let gzipped = response.bytes().await.unwrap();
    let mut json = String::new();
    std::io::Read::read_to_string(&mut flate2::read::GzDecoder::new(&gzipped[..]), &mut json)
        .unwrap();
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&json).unwrap(),
        plain
    );
    assert!(
        gzipped.len() * 3 < json.len(),
        "{} bytes gzipped of {}",
        gzipped.len(),
        json.len()
    );
    // Nobody asked: as it is.
    let response = app.client.get(app.url(&path)).send().await.unwrap();
    assert!(response.headers().get("content-encoding").is_none());
    // A stream goes out as its events come, never held back by an encoder.
    let stream = asked("/api/approvals/stream").await.unwrap();
    assert_eq!(stream.status(), 200);
    assert!(stream.headers().get("content-encoding").is_none());
}

#[tokio::test]
async fn deleting_a_session_leaves_no_row_of_it_behind() {
    let app = spawn_app().await;
    // One chat with every kind of row: events, calls, a decided batch and its audit entry.
    let paused = say(&app, "write notes.txt: hi and read readme.txt").await;
    let (task, context) = (task_id(&paused), context_id(&paused));
    decide(&app, &task, &context, json!({"decision_type": "approve"})).await;
    // And a second chat that must survive.
    let other = say(&app, "list files").await;
    let other_context = context_id(&other);

    assert_eq!(app.delete(&format!("/api/sessions/{context}")).await, 204);

    let count = |sql: String, id: String| {
        let dir = app.data_dir.path().to_owned();
        async move { sql_count(&dir, &sql, &id).await }
    };
    for table in ["task_events", "calls", "batches", "decisions"] {
        let sql = format!("SELECT COUNT(*) FROM {table} WHERE task_id = ?1");
        assert_eq!(
            count(sql, task.clone()).await,
            0,
            "{table} keeps rows of the deleted chat"
        );
    }
    assert_eq!(
        count(
            "SELECT COUNT(*) FROM tasks WHERE context_id = ?1".into(),
            context.clone()
        )
        .await,
        0
    );
    assert_eq!(
        count(
            "SELECT COUNT(*) FROM sessions WHERE id = ?1".into(),
            context.clone()
        )
        .await,
        0
    );
    assert_eq!(
        count(
            "SELECT COUNT(*) FROM tasks WHERE context_id = ?1".into(),
            other_context.clone()
        )
        .await,
        1
    );
    let (status, _) = app.get(&format!("/api/sessions/{other_context}")).await;
    assert_eq!(status, 200);
}

#[tokio::test]
async fn graceful_shutdown_ends_open_streams() {
    let app = spawn_app().await;
    let mut stream = say_live(&app, "count to 10000").await;
    assert!(stream.next().await.is_some(), "the stream starts");
    let stop = tokio::spawn(app.stop());
    // Counting to 10000 takes minutes: only the shutdown can end the stream this soon.
    within("the shutdown to end the open stream", async {
        while stream.next().await.is_some() {}
    })
    .await;
    within("the server to stop", stop)
        .await
        .expect("the server stops cleanly");
}

#[tokio::test]
async fn loads_kagents_agent_config_json() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("k8s-agent.json");
    std::fs::write(
        &path,
        r#"{"description": "kagent's agent", "instruction": "Be brief.",
            "model": {"type": "ollama", "model": "llama3.2"}, "stream": true}"#,
    )
    .unwrap();
    let app = spawn_with(move |config| config.agents_file = Some(path)).await;
    let (status, body) = app.get("/api/agents").await;
    assert_eq!(status, 200);
    let agents = body["agents"].as_array().unwrap();
    assert_eq!(agents.len(), 1, "{body}");
    assert_eq!(agents[0]["namespace"], "kagent");
    assert_eq!(agents[0]["name"], "k8s-agent");
    assert_eq!(agents[0]["description"], "kagent's agent");
    drop(dir);
}

#[tokio::test]
async fn deleting_a_session_with_a_paused_task_drops_its_batch() {
    let app = spawn_app().await;
    let (task, context) = crate::hitl::pause(&app, None).await;
    assert_eq!(app.delete(&format!("/api/sessions/{context}")).await, 204);
    let (_, body) = app.get("/api/approvals").await;
    assert_eq!(body["approvals"], json!([]));
    let (status, _) = decide_rest(&app, None, &task, json!({"decision_type": "approve"})).await;
    assert_eq!(status, 404);
    assert!(!app.sandbox().join("notes.txt").exists());
}

/// `GET /api/approvals`'s query values are checked: a `state` or `limit` out of its range is a
/// 400 that says what it takes (a `limit` that was not a number silently became 50, and 0 or
/// 9999 silently became 1 or 500).
#[tokio::test]
async fn the_audit_trails_query_values_are_checked() {
    let app = spawn_app().await;
    for file in ["a.txt", "b.txt"] {
        let paused = say(&app, &format!("write {file}: x")).await;
        let (status, body) = decide_rest(
            &app,
            None,
            &task_id(&paused),
            json!({"decision_type": "approve"}),
        )
        .await;
        assert_eq!(status, 200, "{body}");
    }
    let (status, body) = app.get("/api/approvals?state=decided&limit=1").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["decisions"].as_array().unwrap().len(), 1, "{body}");
    let (status, body) = app.get("/api/approvals?state=bogus").await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(
        body["error"],
        "state must be pending, decided or settled, not \"bogus\""
    );
    for limit in ["abc", "0", "501", "-1", "1.5", ""] {
        let (status, body) = app
            .get(&format!("/api/approvals?state=decided&limit={limit}"))
            .await;
        assert_eq!(status, 400, "{limit}: {body}");
        assert_eq!(
            body["error"],
            format!("limit must be a whole number from 1 to 500, not {limit:?}"),
        );
    }
}

/// What axum refuses before a handler runs is JSON like every other error under `/api/` (it was
/// plain text, or nothing at all): a path that is not UTF-8, a method a route does not take, a
/// body without a declared length that turns out over the limit.
#[tokio::test]
async fn refusals_before_a_handler_are_json_too() {
    let app = spawn_app().await;
    let (status, body) = app.get("/api/sessions/%FF%FE").await;
    assert_eq!(status, 400, "{body}");
    assert!(body["error"].as_str().unwrap().contains("UTF-8"), "{body}");

    let (status, body) = app.get("/api/approvals/t-1").await;
    assert_eq!(status, 405, "{body}");
    assert_eq!(
        body["error"],
        "method GET is not allowed at this path (see the Allow header)"
    );

    let chunks =
        futures_util::stream::iter((0..40).map(|_| Ok::<_, std::io::Error>(vec![b' '; 64 * 1024])));
    let response = app
        .post("/api/approvals/t-1")
        .header("content-type", "application/json")
        .body(reqwest::Body::wrap_stream(chunks))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 413);
    let body: serde_json::Value = response.json().await.unwrap();
    assert!(
        body["error"].as_str().unwrap().contains("length limit"),
        "{body}"
    );
}

#[tokio::test]
async fn me_names_the_user_of_the_callers_token() {
    let app = spawn_with(|config| {
        config.auth = signoff_server::AuthMode::Tokens;
        config.tokens = vec![
            "alice-token=alice:sre+oncall".into(),
            "bob-token=bob".into(),
        ];
    })
    .await;
    for (token, user, answer) in [
        (
            "alice-token",
            "alice",
            json!({"user": "alice", "groups": ["oncall", "sre"], "auth": "tokens"}),
        ),
        ("bob-token", "bob", json!({"user": "bob", "auth": "tokens"})),
    ] {
        let (status, body) = app.get_as("/api/me", Some(token)).await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(body, answer);
        let me: signoff_protocol::rest::Me = serde_json::from_value(body).unwrap();
        assert_eq!(me.user, user);
    }
    for token in [Some("mallory-token"), None] {
        let (status, body) = app.get_as("/api/me", token).await;
        assert_eq!(status, 401, "{token:?}");
        assert_eq!(body, json!({"error": "missing or unknown bearer token"}));
    }

    let anyone = spawn_app().await;
    let (status, body) = anyone.get("/api/me").await;
    assert_eq!(status, 200);
    assert_eq!(body, json!({"user": "local", "auth": "none"}));
}
