//! What the A2A specification asks of a server beyond the happy path (docs/wire.md, Error codes
//! and Versions): the errors of unsupported features and of ended tasks in each version, agent
//! card caching with conditional GETs, and v1.0 requests read as ProtoJSON parsers read them.

use serde_json::{json, Value};

use crate::support::*;

/// A finished task of the demo agent; its id.
async fn finished_task(app: &TestApp) -> String {
    let done = app
        .rpc(
            None,
            message_request("message/send", message_v03("hi", None, None)),
        )
        .await;
    assert_eq!(done["result"]["status"]["state"], "completed", "{done}");
    done["result"]["id"].as_str().unwrap().to_owned()
}

fn assert_error(response: &Value, code: i64, reason: Option<&str>) {
    assert_eq!(response["error"]["code"], code, "{response}");
    match reason {
        Some(reason) => assert_eq!(response["error"]["data"][0]["reason"], reason, "{response}"),
        None => assert!(response["error"].get("data").is_none(), "{response}"),
    }
}

#[tokio::test]
async fn the_extended_card_is_not_supported_and_push_notifications_are() {
    let app = spawn_app().await;
    // The extended card is an unsupported feature: -32004.
    let got = app
        .rpc(Some("1.0"), request("GetExtendedAgentCard", json!({})))
        .await;
    assert_error(&got, -32004, Some("UNSUPPORTED_OPERATION"));
    let (_, card) = app.get("/.well-known/agent-card.json").await;
    assert_eq!(card["capabilities"]["pushNotifications"], true);
}

#[tokio::test]
async fn a_message_to_an_ended_task_is_an_unsupported_operation_in_v10_only() {
    let app = spawn_app().await;
    let id = finished_task(&app).await;
    let v10 = app
        .rpc(
            Some("1.0"),
            message_request("SendMessage", message_v10("again", Some(&id), None)),
        )
        .await;
    assert_error(&v10, -32004, Some("UNSUPPORTED_OPERATION"));
    assert!(
        v10["error"]["message"]
            .as_str()
            .unwrap()
            .contains("is completed and takes no more messages"),
        "{v10}"
    );
    // The streaming method answers the same error as plain JSON, before any stream opens.
    let streamed = app
        .rpc(
            Some("1.0"),
            message_request(
                "SendStreamingMessage",
                message_v10("again", Some(&id), None),
            ),
        )
        .await;
    assert_error(&streamed, -32004, Some("UNSUPPORTED_OPERATION"));
    // v0.3 keeps invalid params, as its SDKs answer.
    let v03 = app
        .rpc(
            None,
            message_request("message/send", message_v03("again", Some(&id), None)),
        )
        .await;
    assert_error(&v03, -32602, None);
    // Nothing was added to the task.
    let got = app.rpc(None, request("tasks/get", json!({"id": id}))).await;
    let texts: Vec<&str> = got["result"]["history"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|message| message["role"] == "user")
        .map(|message| message["parts"][0]["text"].as_str().unwrap())
        .collect();
    assert_eq!(texts, ["hi"]);
}

#[tokio::test]
async fn subscribing_to_an_ended_task_is_an_unsupported_operation_in_v10_only() {
    let app = spawn_app().await;
    let id = finished_task(&app).await;
    // v1.0 answers plain JSON: no stream opens.
    let v10 = app
        .rpc(Some("1.0"), request("SubscribeToTask", json!({"id": id})))
        .await;
    assert_error(&v10, -32004, Some("UNSUPPORTED_OPERATION"));
    // v0.3 sends the task and closes.
    let v03 = app
        .stream(None, request("tasks/resubscribe", json!({"id": id})))
        .await;
    assert_eq!(v03.len(), 1, "{v03:?}");
    assert_eq!(v03[0]["result"]["status"]["state"], "completed");
    // An unknown task is still not found.
    let missing = app
        .rpc(
            Some("1.0"),
            request("SubscribeToTask", json!({"id": "nope"})),
        )
        .await;
    assert_error(&missing, -32001, Some("TASK_NOT_FOUND"));
}

/// A GET of `path` with extra `headers`: the status, the response headers and the body.
async fn get_with(
    app: &TestApp,
    path: &str,
    headers: &[(&str, &str)],
) -> (u16, reqwest::header::HeaderMap, String) {
    let mut request = app.client.get(app.url(path));
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    (status, headers, response.text().await.unwrap())
}

fn header<'a>(headers: &'a reqwest::header::HeaderMap, name: &str) -> &'a str {
    headers
        .get(name)
        .unwrap_or_else(|| panic!("no {name} header"))
        .to_str()
        .unwrap()
}

#[tokio::test]
async fn agent_cards_carry_caching_headers_and_answer_conditional_gets() {
    let app = spawn_app().await;
    let origin_card = "/.well-known/agent-card.json";
    let agent_card = "/api/a2a/default/demo/.well-known/agent-card.json";
    for path in [origin_card, agent_card] {
        let (status, headers, body) = get_with(&app, path, &[]).await;
        assert_eq!(status, 200);
        let card: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(card["name"], "demo");
        assert!(
            header(&headers, "cache-control").contains("max-age="),
            "{headers:?}"
        );
        let etag = header(&headers, "etag").to_owned();
        assert!(etag.starts_with('"') && etag.ends_with('"'), "{etag}");
        let last_modified = header(&headers, "last-modified").to_owned();
        assert!(last_modified.ends_with(" GMT"), "{last_modified}");

        // The same card again: the tag matches, so 304 with no body.
        let (status, again, body) = get_with(&app, path, &[("If-None-Match", &etag)]).await;
        assert_eq!(status, 304);
        assert_eq!(body, "");
        assert_eq!(header(&again, "etag"), etag);
        let (status, _, _) = get_with(&app, path, &[("If-Modified-Since", &last_modified)]).await;
        assert_eq!(status, 304);

        // A stale tag gets the card, even with a current date.
        let (status, _, body) = get_with(
            &app,
            path,
            &[
                ("If-None-Match", "\"stale\""),
                ("If-Modified-Since", &last_modified),
            ],
        )
        .await;
        assert_eq!(status, 200);
        assert_eq!(
            serde_json::from_str::<Value>(&body).unwrap()["name"],
            "demo"
        );
        let (status, _, _) = get_with(
            &app,
            path,
            &[("If-Modified-Since", "Thu, 01 Jan 1970 00:00:00 GMT")],
        )
        .await;
        assert_eq!(status, 200);

        // The v1.0 card is another representation: another tag, so the v0.3 tag is stale.
        let (status, v10, _) = get_with(
            &app,
            path,
            &[("A2A-Version", "1.0"), ("If-None-Match", &etag)],
        )
        .await;
        assert_eq!(status, 200);
        assert_ne!(header(&v10, "etag"), etag);
        assert!(header(&v10, "vary").contains("A2A-Version"));
    }
}

#[tokio::test]
async fn v10_requests_ignore_unknown_fields_and_accept_proto_field_names() {
    let app = spawn_app().await;
    let mut message = message_v10("hello", None, None);
    message["tckUnknownField"] = json!("should-be-ignored");
    let sent = app
        .rpc(
            Some("1.0"),
            request(
                "SendMessage",
                json!({"message": message, "tckExtraParam": 42,
                       "configuration": {"historyLength": 1, "unknown": {}}}),
            ),
        )
        .await;
    let task = &sent["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{sent}");
    assert_eq!(task["history"].as_array().unwrap().len(), 1);
    let id = task["id"].as_str().unwrap();
    let context = task["contextId"].as_str().unwrap();

    // The proto (snake_case) names: a message in the same context, and a query.
    let snake = json!({
        "message": {"message_id": "m-snake", "role": "ROLE_USER", "context_id": context,
                    "parts": [{"text": "hello again"}]},
        "configuration": {"history_length": 1, "return_immediately": false},
    });
    let sent = app.rpc(Some("1.0"), request("SendMessage", snake)).await;
    let again = &sent["result"]["task"];
    assert_eq!(again["contextId"], context, "{sent}");
    assert_eq!(again["status"]["state"], "TASK_STATE_COMPLETED");
    let got = app
        .rpc(
            Some("1.0"),
            request(
                "GetTask",
                json!({"id": id, "history_length": 0, "tenant": "", "x": 1}),
            ),
        )
        .await;
    assert_eq!(got["result"]["id"], id, "{got}");
    assert!(got["result"].get("history").is_none(), "{got}");
    let listed = app
        .rpc(
            Some("1.0"),
            request("ListTasks", json!({"context_id": context, "page_size": 1})),
        )
        .await;
    assert_eq!(
        listed["result"]["tasks"].as_array().unwrap().len(),
        1,
        "{listed}"
    );
    assert_eq!(listed["result"]["totalSize"], 2);

    // What the server writes keeps the JSON names.
    let text = got.to_string();
    assert!(!text.contains("context_id"), "{text}");

    // A field given under both names is a duplicate: refused, nothing stored.
    let both = json!({"message": {"messageId": "a", "message_id": "b", "role": "ROLE_USER",
                                  "parts": [{"text": "twice"}]}});
    let refused = app.rpc(Some("1.0"), request("SendMessage", both)).await;
    assert_error(&refused, -32602, Some("INVALID_PARAMS"));
    let listed = app.rpc(Some("1.0"), request("ListTasks", json!({}))).await;
    assert_eq!(listed["result"]["totalSize"], 2);
}
