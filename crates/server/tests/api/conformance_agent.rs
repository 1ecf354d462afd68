//! The conformance agent (`--conformance-agent`, docs/conformance.md): where it is served, and
//! the behaviours the A2A conformance suite asks of a system under test, through the real
//! runtime and store.

use serde_json::{json, Value};
use signoff_server::agent::conformance::{QUESTION, THANKS};

use crate::support::*;

const AGENT: &str = "/api/a2a/default/conformance";

async fn spawn_conformance() -> TestApp {
    spawn_with(|config| config.conformance_agent = true).await
}

/// A v1.0 user message whose messageId starts with `prefix` (how the suite picks a behaviour).
fn suite_message(prefix: &str, task_id: Option<&str>) -> Value {
    let mut message = json!({
        "messageId": format!("{prefix}-{}", uuid::Uuid::new_v4()),
        "role": "ROLE_USER",
        "parts": [{"text": "TCK prerequisite task creation"}],
    });
    if let Some(task_id) = task_id {
        message["taskId"] = json!(task_id);
    }
    message
}

async fn send(app: &TestApp, prefix: &str, task_id: Option<&str>) -> Value {
    let got = app
        .rpc_at(
            AGENT,
            Some("1.0"),
            message_request("SendMessage", suite_message(prefix, task_id)),
        )
        .await;
    assert!(got.get("error").is_none(), "{got}");
    got["result"]["task"].clone()
}

/// The text of a v1.0 task's artifacts, joined.
fn artifact_text(task: &Value) -> String {
    task["artifacts"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|artifact| artifact["parts"].as_array().cloned().unwrap_or_default())
        .filter_map(|part| part["text"].as_str().map(str::to_owned))
        .collect()
}

#[tokio::test]
async fn the_conformance_agent_is_served_and_at_the_origin_only_with_the_flag() {
    let plain = spawn_app().await;
    let (_, agents) = plain.get("/api/agents").await;
    let names: Vec<&str> = agents["agents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|agent| agent["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["demo", "boss"], "{agents}");
    let (status, _) = plain
        .get(&format!("{AGENT}/.well-known/agent-card.json"))
        .await;
    assert_eq!(status, 404);
    let (_, card) = plain.get("/.well-known/agent-card.json").await;
    assert!(
        card["url"].as_str().unwrap().ends_with("/default/demo"),
        "{card}"
    );

    let app = spawn_conformance().await;
    let (_, agents) = app.get("/api/agents").await;
    let names: Vec<&str> = agents["agents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|agent| agent["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["demo", "boss", "conformance"], "{agents}");
    let (_, card) = app.get("/.well-known/agent-card.json").await;
    assert!(
        card["url"].as_str().unwrap().ends_with(AGENT),
        "the origin's card is the conformance agent's: {card}"
    );
    let (_, own) = app
        .get(&format!("{AGENT}/.well-known/agent-card.json"))
        .await;
    assert_eq!(own, card);
}

#[tokio::test]
async fn an_input_required_task_stays_open_until_a_reply_or_a_cancel() {
    let app = spawn_conformance().await;
    let open = send(&app, "tck-input-required", None).await;
    assert_eq!(
        open["status"]["state"], "TASK_STATE_INPUT_REQUIRED",
        "{open}"
    );
    let id = open["id"].as_str().unwrap();
    let got = app
        .rpc_at(AGENT, Some("1.0"), request("GetTask", json!({"id": id})))
        .await;
    assert_eq!(
        got["result"]["status"]["state"],
        "TASK_STATE_INPUT_REQUIRED"
    );
    assert!(got.to_string().contains(QUESTION), "{got}");

    // A follow-up message on the task is the reply: the task completes.
    let events = app
        .open_stream_at(
            AGENT,
            Some("1.0"),
            message_request(
                "SendStreamingMessage",
                suite_message("tck-followup", Some(id)),
            ),
        )
        .await
        .collect()
        .await;
    let last = events.last().unwrap();
    assert_eq!(
        last["result"]["statusUpdate"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{events:?}"
    );
    let done = app
        .rpc_at(AGENT, Some("1.0"), request("GetTask", json!({"id": id})))
        .await;
    assert!(artifact_text(&done["result"]).contains(THANKS), "{done}");

    // Another open task is canceled.
    let open = send(&app, "tck-input-required", None).await;
    let canceled = app
        .rpc_at(
            AGENT,
            Some("1.0"),
            request("CancelTask", json!({"id": open["id"]})),
        )
        .await;
    assert_eq!(
        canceled["result"]["status"]["state"], "TASK_STATE_CANCELED",
        "{canceled}"
    );
}

#[tokio::test]
async fn the_suites_prefixes_answer_with_their_text_artifacts() {
    let app = spawn_conformance().await;
    for (prefix, text) in [
        ("tck-complete-task", "Hello from TCK"),
        ("tck-artifact-text", "Generated text content"),
        ("tck-stream-001", "Stream hello from TCK"),
        ("tck-send-003", "You said: TCK prerequisite task creation"),
    ] {
        let task = send(&app, prefix, None).await;
        assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{task}");
        assert_eq!(artifact_text(&task), text, "{prefix}: {task}");
    }
    // A chunked artifact streams as two chunks of one artifact, the second appended and last.
    let events = app
        .open_stream_at(
            AGENT,
            Some("1.0"),
            message_request(
                "SendStreamingMessage",
                suite_message("tck-stream-artifact-chunked", None),
            ),
        )
        .await
        .collect()
        .await;
    let chunks: Vec<&Value> = events
        .iter()
        .filter_map(|event| event["result"].get("artifactUpdate"))
        .collect();
    assert_eq!(chunks.len(), 2, "{events:?}");
    assert_eq!(chunks[0]["artifact"]["parts"][0]["text"], "chunk-1 ");
    assert_eq!(chunks[1]["artifact"]["parts"][0]["text"], "chunk-2");
    assert_eq!(chunks[1]["append"], true);
    assert_eq!(chunks[1]["lastChunk"], true);
    assert_eq!(
        chunks[0]["artifact"]["artifactId"],
        chunks[1]["artifact"]["artifactId"]
    );
}

#[tokio::test]
async fn a_long_running_task_can_be_resubscribed_while_it_works() {
    let app = spawn_conformance().await;
    let message = json!({
        "kind": "message",
        "messageId": format!("test-resubscribe-message-id-{}", uuid::Uuid::new_v4()),
        "role": "user",
        "parts": [{"kind": "text", "text": "a long task"}],
    });
    let mut first = app
        .open_stream_at(AGENT, None, message_request("message/stream", message))
        .await;
    let opening = first.next().await.unwrap();
    let id = opening["result"]["id"]
        .as_str()
        .or(opening["result"]["taskId"].as_str())
        .unwrap()
        .to_owned();
    // The task works on (it streams a chunk now and then); a second stream follows it to its end.
    let working = first.next().await.unwrap();
    assert!(working.get("error").is_none(), "{working}");
    let resubscribed = app
        .open_stream_at(AGENT, None, request("tasks/resubscribe", json!({"id": id})))
        .await
        .collect()
        .await;
    let results = results(&resubscribed);
    assert_eq!(
        states(&results).last().map(String::as_str),
        Some("completed"),
        "{results:?}"
    );
    assert!(answer_text(&results).ends_with("done."), "{results:?}");
}

#[tokio::test]
async fn a_v10_subscription_follows_a_paused_task_until_it_ends() {
    let app = spawn_conformance().await;
    let open = send(&app, "tck-input-required", None).await;
    let id = open["id"].as_str().unwrap().to_owned();
    let mut subscription = app
        .open_stream_at(
            AGENT,
            Some("1.0"),
            request("SubscribeToTask", json!({"id": id})),
        )
        .await;
    let snapshot = subscription.next().await.unwrap();
    assert_eq!(
        snapshot["result"]["task"]["status"]["state"], "TASK_STATE_INPUT_REQUIRED",
        "{snapshot}"
    );
    // The stream stays open through the pause; the reply ends the task, and the stream.
    send(&app, "tck-complete-task", Some(&id)).await;
    let rest = subscription.collect().await;
    let last = rest.last().unwrap();
    assert_eq!(
        last["result"]["statusUpdate"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{rest:?}"
    );
    // v0.3's resubscribe to a paused task still sends the task and closes.
    let paused = send(&app, "tck-input-required", None).await;
    let v03 = app
        .open_stream_at(
            AGENT,
            None,
            request("tasks/resubscribe", json!({"id": paused["id"]})),
        )
        .await
        .collect()
        .await;
    assert_eq!(v03.len(), 1, "{v03:?}");
    assert_eq!(v03[0]["result"]["status"]["state"], "input-required");
}

#[tokio::test]
async fn file_and_data_artifacts_and_a_plain_message_answer() {
    let app = spawn_conformance().await;
    let part_of = |task: &Value| task["artifacts"][0]["parts"][0].clone();
    let file = send(&app, "tck-artifact-file", None).await;
    assert_eq!(file["status"]["state"], "TASK_STATE_COMPLETED", "{file}");
    let part = part_of(&file);
    assert_eq!(part["filename"], "output.txt", "{file}");
    assert_eq!(part["mediaType"], "text/plain", "{file}");
    assert_eq!(part["raw"], "R2VuZXJhdGVkIGZpbGUgY29udGVudA==", "{file}");
    let url = send(&app, "tck-artifact-file-url", None).await;
    assert_eq!(
        part_of(&url)["url"],
        "https://example.com/output.txt",
        "{url}"
    );
    let data = send(&app, "tck-artifact-data", None).await;
    assert_eq!(
        part_of(&data)["data"],
        json!({"key": "value", "count": 42}),
        "{data}"
    );
    // The same file in v0.3's shape.
    let v03 = app
        .rpc_at(
            AGENT,
            None,
            message_request(
                "message/send",
                json!({"kind": "message", "role": "user", "messageId": "tck-artifact-file-9",
                       "parts": [{"kind": "text", "text": "a file"}]}),
            ),
        )
        .await;
    let part = &v03["result"]["artifacts"][0]["parts"][0];
    assert_eq!(part["kind"], "file", "{v03}");
    assert_eq!(part["file"]["name"], "output.txt", "{v03}");

    // A plain message answer: the result is the agent's Message, not the task.
    let got = app
        .rpc_at(
            AGENT,
            Some("1.0"),
            message_request("SendMessage", suite_message("tck-message-response", None)),
        )
        .await;
    let message = &got["result"]["message"];
    assert_eq!(message["role"], "ROLE_AGENT", "{got}");
    assert_eq!(
        message["parts"][0]["text"], "Direct message response",
        "{got}"
    );
    assert!(got["result"].get("task").is_none(), "{got}");
}

#[tokio::test]
async fn each_reply_says_by_its_own_id_whether_the_task_stays_open() {
    let app = spawn_conformance().await;
    let open = send(&app, "tck-input-required", None).await;
    let id = open["id"].as_str().unwrap().to_owned();
    // A reply whose id asks for input: answered by another question.
    let again = send(&app, "tck-input-required", Some(&id)).await;
    assert_eq!(
        again["status"]["state"], "TASK_STATE_INPUT_REQUIRED",
        "{again}"
    );
    // A reply that asks to complete: the task completes, and its history holds both replies.
    let done = send(&app, "tck-complete-task", Some(&id)).await;
    assert_eq!(done["status"]["state"], "TASK_STATE_COMPLETED", "{done}");
    let users = done["history"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|message| message["role"] == "ROLE_USER")
        .count();
    assert_eq!(users, 3, "{done}");
}
