//! The A2A JSON-RPC endpoint in both versions: methods, streams, errors.

use serde_json::{json, Value};

use crate::support::*;

#[tokio::test]
async fn message_stream_v03_lists_files_with_tool_call_and_result() {
    let app = spawn_app().await;
    let results = say(&app, "list files").await;
    assert_eq!(
        states(&results),
        ["submitted", "working", "working", "working", "completed"]
    );
    assert_eq!(
        results[0]["status"]["message"]["parts"][0]["text"],
        "list files"
    );
    let calls = data_parts(&results, "function_call");
    assert_eq!(
        calls,
        [json!({"id": "call_1", "name": "list_directory", "args": {"path": "."}})]
    );
    let responses = data_parts(&results, "function_response");
    assert_eq!(responses[0]["id"], "call_1");
    assert_eq!(responses[0]["response"]["isError"], false);
    assert_eq!(
        answer_text(&results),
        "The folder . holds: old.txt, readme.txt."
    );
    let last = results.last().unwrap();
    assert_eq!(last["final"], true);
    assert!(
        last["metadata"]["kagent_usage_metadata"]["totalTokenCount"]
            .as_u64()
            .unwrap()
            > 0
    );
    // Chunks: the first does not append, the last says lastChunk.
    let chunks: Vec<&Value> = results
        .iter()
        .filter(|r| r["kind"] == "artifact-update")
        .collect();
    assert!(chunks.len() > 1, "the answer streams in several chunks");
    assert_eq!(chunks[0]["append"], false);
    assert_eq!(chunks.last().unwrap()["lastChunk"], true);
    assert!(chunks[1..].iter().all(|chunk| chunk["append"] == true));
}

#[tokio::test]
async fn plain_text_gets_a_friendly_answer() {
    let app = spawn_app().await;
    let results = say(&app, "hello there").await;
    assert_eq!(states(&results), ["submitted", "working", "completed"]);
    let text = answer_text(&results);
    assert!(
        text.contains("list files") && text.contains("count to N"),
        "{text}"
    );
}

#[tokio::test]
async fn message_send_v03_returns_the_completed_task_with_history_length() {
    let app = spawn_app().await;
    let mut params = json!({"message": message_v03("read readme.txt", None, None)});
    params["configuration"] = json!({"historyLength": 1, "blocking": true});
    let response = app.rpc(None, request("message/send", params)).await;
    let task = &response["result"];
    assert_eq!(task["kind"], "task");
    assert_eq!(task["status"]["state"], "completed");
    assert_eq!(task["history"].as_array().unwrap().len(), 1);
    let text = task["artifacts"][0]["parts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|part| part["text"].as_str().unwrap())
        .collect::<String>();
    assert!(
        text.starts_with("readme.txt says: Welcome to the Signoff sandbox."),
        "{text}"
    );

    let id = task["id"].as_str().unwrap();
    let got = app.rpc(None, request("tasks/get", json!({"id": id}))).await;
    assert_eq!(got["result"]["status"]["state"], "completed");
    let history = got["result"]["history"].as_array().unwrap();
    assert_eq!(history[0]["role"], "user");
    assert!(
        history.len() >= 3,
        "user message, call, result: {history:?}"
    );
    let short = app
        .rpc(
            None,
            request("tasks/get", json!({"id": id, "historyLength": 0})),
        )
        .await;
    let history = &short["result"]["history"];
    assert!(history.is_null() || *history == json!([]), "{short}");
}

#[tokio::test]
async fn v10_stream_opens_with_a_task_and_has_no_v03_fields() {
    let app = spawn_app().await;
    let events = app
        .stream(
            Some("1.0"),
            message_request(
                "SendStreamingMessage",
                message_v10("list files", None, None),
            ),
        )
        .await;
    let results = results(&events);
    assert_eq!(
        results[0]["task"]["status"]["state"],
        "TASK_STATE_SUBMITTED"
    );
    assert_eq!(results[0]["task"]["history"][0]["role"], "ROLE_USER");
    let last = results.last().unwrap();
    assert_eq!(
        last["statusUpdate"]["status"]["state"],
        "TASK_STATE_COMPLETED"
    );
    for result in &results {
        let text = result.to_string();
        assert!(!text.contains("\"kind\""), "v1.0 has no kind: {text}");
        assert!(!text.contains("\"final\""), "v1.0 has no final: {text}");
    }
    assert!(results
        .iter()
        .any(|result| result.get("artifactUpdate").is_some()));
    let id = results[0]["task"]["id"].as_str().unwrap();
    let got = app
        .rpc(
            Some("1.0"),
            request("GetTask", json!({"id": id, "historyLength": 1})),
        )
        .await;
    assert_eq!(got["result"]["status"]["state"], "TASK_STATE_COMPLETED");
    assert_eq!(got["result"]["history"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn v10_send_message_returns_a_task() {
    let app = spawn_app().await;
    let response = app
        .rpc(
            Some("1.0"),
            message_request("SendMessage", message_v10("hi", None, None)),
        )
        .await;
    assert_eq!(
        response["result"]["task"]["status"]["state"],
        "TASK_STATE_COMPLETED"
    );
}

#[tokio::test]
async fn cancel_stops_a_task_during_a_model_call_in_both_versions() {
    let app = spawn_app().await;
    for version in [None, Some("1.0")] {
        let body = match version {
            None => message_request("message/stream", message_v03("count to 10000", None, None)),
            Some(_) => message_request(
                "SendStreamingMessage",
                message_v10("count to 10000", None, None),
            ),
        };
        let mut stream = app.open_stream(version, None, body).await;
        let mut id = None;
        // Read until the answer streams: the model call is under way.
        loop {
            let event = stream.next().await.expect("the stream goes on");
            let result = &event["result"];
            id = id.or(result["taskId"]
                .as_str()
                .or(result["task"]["id"].as_str())
                .map(str::to_owned));
            if result["kind"] == "artifact-update" || result.get("artifactUpdate").is_some() {
                break;
            }
        }
        let id = id.unwrap();
        let method = if version.is_some() {
            "CancelTask"
        } else {
            "tasks/cancel"
        };
        let canceled = app.rpc(version, request(method, json!({"id": id}))).await;
        let state = canceled["result"]["status"]["state"].as_str().unwrap();
        assert!(
            state == "canceled" || state == "TASK_STATE_CANCELED",
            "{canceled}"
        );
        // The open stream ends with the cancellation, long before 10000 numbers.
        let mut last = None;
        while let Some(event) = stream.next().await {
            last = Some(event);
        }
        let last = last.unwrap();
        let text = last.to_string();
        assert!(
            text.contains("canceled") || text.contains("CANCELED"),
            "{text}"
        );
        // Canceling again: not cancelable.
        let again = app.rpc(version, request(method, json!({"id": id}))).await;
        assert_eq!(again["error"]["code"], -32002, "{again}");
    }
}

#[tokio::test]
async fn resubscribe_replays_nothing_twice_and_misses_nothing() {
    let app = spawn_app().await;
    let mut first = say_live(&app, "count to 40").await;
    let mut id = None;
    let mut chunks_seen = 0;
    while chunks_seen < 3 {
        let event = first.next().await.unwrap();
        id = id.or(event["result"]["taskId"].as_str().map(str::to_owned));
        if event["result"]["kind"] == "artifact-update" {
            chunks_seen += 1;
        }
    }
    let id = id.unwrap();
    let events = app
        .stream(None, request("tasks/resubscribe", json!({"id": id})))
        .await;
    let results = results(&events);
    assert_eq!(results[0]["kind"], "task", "a snapshot first");
    let mut text: String = results[0]["artifacts"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|artifact| artifact["parts"].as_array().unwrap().clone())
        .map(|part| part["text"].as_str().unwrap().to_owned())
        .collect();
    text.push_str(&answer_text(&results[1..]));
    let expected: Vec<String> = (1..=40).map(|n| n.to_string()).collect();
    assert_eq!(text, expected.join(", "));
    assert_eq!(states(&results).last().unwrap(), "completed");

    // On a finished task, v0.3's resubscribe yields the task and closes; v1.0 refuses with
    // -32004 (see conformance.rs).
    let events = app
        .stream(None, request("tasks/resubscribe", json!({"id": id})))
        .await;
    assert_eq!(events.len(), 1);
    assert_eq!(events[0]["result"]["status"]["state"], "completed");
}

#[tokio::test]
async fn list_tasks_pages_in_v10_and_is_unknown_in_v03() {
    let app = spawn_app().await;
    let first = app
        .rpc(
            None,
            message_request("message/send", message_v03("hi", None, None)),
        )
        .await;
    let context = first["result"]["contextId"].as_str().unwrap().to_owned();
    app.rpc(
        None,
        message_request("message/send", message_v03("hello", None, Some(&context))),
    )
    .await;
    app.rpc(
        None,
        message_request("message/send", message_v03("hey", None, None)),
    )
    .await;
    let all = app.rpc(Some("1.0"), request("ListTasks", json!({}))).await;
    assert_eq!(all["result"]["tasks"].as_array().unwrap().len(), 3, "{all}");
    let page = app
        .rpc(
            Some("1.0"),
            request("ListTasks", json!({"contextId": context, "pageSize": 1})),
        )
        .await;
    assert_eq!(page["result"]["tasks"].as_array().unwrap().len(), 1);
    assert_eq!(page["result"]["totalSize"], 2);
    let token = page["result"]["nextPageToken"].as_str().unwrap();
    assert!(!token.is_empty());
    let next = app
        .rpc(
            Some("1.0"),
            request(
                "ListTasks",
                json!({"contextId": context, "pageSize": 1, "pageToken": token}),
            ),
        )
        .await;
    assert_eq!(next["result"]["tasks"].as_array().unwrap().len(), 1);
    assert_eq!(next["result"]["nextPageToken"], "");
    let v03 = app.rpc(None, request("ListTasks", json!({}))).await;
    assert_eq!(v03["error"]["code"], -32601);
}

/// Sends a raw body and returns the JSON-RPC response.
async fn raw(app: &TestApp, version: Option<&str>, body: &str) -> Value {
    let answer = app.post_raw(body, version.map(str::as_bytes)).await;
    serde_json::from_str(&answer).unwrap()
}

#[tokio::test]
async fn every_error_code() {
    let app = spawn_app().await;
    let check = |response: &Value, code: i64, id: Value, contains: &str| {
        assert_eq!(response["error"]["code"], code, "{response}");
        assert_eq!(response["id"], id, "{response}");
        let message = response["error"]["message"].as_str().unwrap();
        assert!(
            message.contains(contains),
            "{message:?} should contain {contains:?}"
        );
    };
    let unparsed = [
        (None, "{not json", -32700, Value::Null, "invalid JSON"),
        (
            None,
            r#"{"jsonrpc":"1.0","id":4,"method":"tasks/get"}"#,
            -32600,
            json!(4),
            "2.0",
        ),
        (None, r#"[1,2]"#, -32600, Value::Null, "batch"),
        (
            None,
            r#"{"jsonrpc":"2.0","id":"x","method":"tasks/nope"}"#,
            -32601,
            json!("x"),
            "tasks/nope",
        ),
        (
            Some("1.0"),
            r#"{"jsonrpc":"2.0","id":1,"method":"message/send","params":{}}"#,
            -32601,
            json!(1),
            "message/send",
        ),
    ];
    for (version, body, code, id, contains) in unparsed {
        check(&raw(&app, version, body).await, code, id, contains);
    }
    let done = app
        .rpc(
            None,
            message_request("message/send", message_v03("hi", None, None)),
        )
        .await;
    let id = done["result"]["id"].as_str().unwrap();
    let empty_parts = json!({"kind": "message", "messageId": "m", "role": "user", "parts": []});
    let refused = [
        (
            message_request("message/send", empty_parts),
            -32602,
            "parts",
        ),
        (
            request("tasks/get", json!({"id": "t", "historyLength": -1})),
            -32602,
            "historyLength",
        ),
        (
            request("tasks/get", json!({"id": "nope"})),
            -32001,
            "not found",
        ),
        (
            request("tasks/cancel", json!({"id": "nope"})),
            -32001,
            "not found",
        ),
        (
            request("tasks/cancel", json!({"id": id})),
            -32002,
            "cannot be canceled",
        ),
        (
            message_request("message/send", message_v03("again", Some(id), None)),
            -32602,
            "completed",
        ),
        (
            message_request("message/send", message_v03("x", Some("nope"), None)),
            -32001,
            "not found",
        ),
        (
            request("tasks/pushNotificationConfig/set", json!({})),
            -32602,
            "taskId",
        ),
        (
            request("agent/getAuthenticatedExtendedCard", json!({})),
            -32004,
            "extended agent cards",
        ),
    ];
    for (body, code, contains) in refused {
        check(&app.rpc(None, body).await, code, json!(1), contains);
    }
    let version = raw(
        &app,
        Some("2.0"),
        r#"{"jsonrpc":"2.0","id":9,"method":"tasks/get","params":{"id":"t"}}"#,
    )
    .await;
    check(&version, -32009, json!(9), "2.0");
    assert_eq!(
        version["error"]["data"][0]["reason"],
        "VERSION_NOT_SUPPORTED"
    );
    // v1.0 errors carry google.rpc.ErrorInfo.
    let missing = app
        .rpc(Some("1.0"), request("GetTask", json!({"id": "nope"})))
        .await;
    assert_eq!(missing["error"]["code"], -32001);
    assert_eq!(missing["error"]["data"][0]["reason"], "TASK_NOT_FOUND");
    assert_eq!(
        missing["error"]["data"][0]["@type"],
        "type.googleapis.com/google.rpc.ErrorInfo"
    );
    // A streaming method's errors arrive as one SSE event.
    let events = app
        .stream(
            None,
            message_request("message/stream", message_v03("x", Some("nope"), None)),
        )
        .await;
    assert_eq!(events.len(), 1);
    assert_eq!(events[0]["error"]["code"], -32001);
}

#[tokio::test]
async fn oversized_bodies_get_413_and_change_nothing() {
    let app = spawn_with(|config| config.body_limit = 2048).await;
    let big = "x".repeat(4096);
    let response = app
        .post(DEMO)
        .json(&message_request(
            "message/send",
            message_v03(&big, None, None),
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 413);
    let (_, sessions) = app.get("/api/sessions").await;
    assert_eq!(sessions["sessions"], json!([]));
}

#[tokio::test]
async fn agent_cards_suit_both_versions() {
    let app = spawn_app().await;
    let lenient: Value = app
        .client
        .get(format!("{}/.well-known/agent-card.json", app.endpoint()))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(lenient["name"], "demo");
    assert_eq!(lenient["protocolVersion"], "0.3.0");
    assert_eq!(lenient["url"], app.endpoint());
    assert_eq!(lenient["capabilities"]["streaming"], true);
    assert!(lenient["supportedInterfaces"]
        .as_array()
        .unwrap()
        .iter()
        .any(|i| i["protocolVersion"] == "1.0"));
    let strict: Value = app
        .client
        .get(format!("{}/.well-known/agent-card.json", app.endpoint()))
        .header("A2A-Version", "1.0")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(
        strict.get("url").is_none() && strict.get("protocolVersion").is_none(),
        "{strict}"
    );
    assert_eq!(strict["supportedInterfaces"][0]["url"], app.endpoint());
    let origin: Value = app
        .client
        .get(format!(
            "{}/.well-known/agent-card.json?A2A-Version=1.0",
            app.base
        ))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(origin, strict);
}
