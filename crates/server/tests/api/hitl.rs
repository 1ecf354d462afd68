//! Human-in-the-loop approvals (issue 4): the gate, decisions in every shape, resume,
//! exactly-once, cancel, REST approvals, users and the audit trail.

use serde_json::{json, Value};

use crate::helpers::*;

pub const PROMPT: &str = "write notes.txt: hi and delete old.txt and read readme.txt";

/// Sends the README prompt and checks the pause: the read streams, then ONE batch of two.
pub async fn pause(app: &TestApp, token: Option<&str>) -> (String, String) {
    let events = app
        .stream_as(
            None,
            token,
            request(
                "message/stream",
                json!({"message": message_v03(PROMPT, None, None)}),
            ),
        )
        .await;
    let results = results(&events);
    let calls = data_parts(&results, "function_call");
    assert_eq!(calls.len(), 3, "all three calls are announced");
    let responses = data_parts(&results, "function_response");
    assert_eq!(responses.len(), 1, "only the read ran: {responses:?}");
    assert_eq!(responses[0]["name"], "read_file");
    let last = results.last().unwrap();
    assert_eq!(last["status"]["state"], "input-required");
    assert_eq!(last["final"], true);
    assert_eq!(last["metadata"]["interrupt_type"], "tool_approval");
    let parts = last["status"]["message"]["parts"].as_array().unwrap();
    assert!(parts[0]["text"]
        .as_str()
        .unwrap()
        .starts_with("**Approval Required**"));
    assert_eq!(parts[1]["metadata"]["kagent_type"], "interrupt_data");
    let requests = parts[1]["data"]["action_requests"].as_array().unwrap();
    let ids: Vec<&str> = requests.iter().map(|r| r["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["call_1", "call_2"]);
    assert_eq!(requests[0]["name"], "write_file");
    assert_eq!(
        requests[0]["args"],
        json!({"path": "notes.txt", "content": "hi"})
    );
    assert_eq!(requests[0]["server"], "files");
    assert!(requests[0]["description"]
        .as_str()
        .unwrap()
        .contains("file"));
    assert_eq!(requests[1]["name"], "delete_file");
    // Nothing held has run.
    assert!(!app.sandbox().join("notes.txt").exists());
    assert!(app.sandbox().join("old.txt").exists());
    (
        task_id(&results),
        last["contextId"].as_str().unwrap().to_owned(),
    )
}

/// A v0.3 decision message with a DataPart.
pub fn decision(task: &str, context: &str, data: Value) -> Value {
    json!({"message": {
        "kind": "message", "messageId": uuid::Uuid::new_v4().to_string(), "role": "user",
        "taskId": task, "contextId": context,
        "parts": [{"kind": "data", "data": data}, {"kind": "text", "text": "decision"}],
    }})
}

#[tokio::test]
async fn approve_all_runs_both_calls_and_completes() {
    let app = spawn_app().await;
    let (task, context) = pause(&app, None).await;
    let events = app
        .stream(
            None,
            request(
                "message/stream",
                decision(&task, &context, json!({"decision_type": "approve"})),
            ),
        )
        .await;
    let results = results(&events);
    assert_eq!(states(&results)[0], "working");
    let responses = data_parts(&results, "function_response");
    let names: Vec<&str> = responses
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["write_file", "delete_file"]);
    assert_eq!(states(&results).last().unwrap(), "completed");
    let answer = answer_text(&results);
    assert!(answer.starts_with("readme.txt says: Welcome"), "{answer}");
    assert!(
        answer.ends_with("\nI wrote notes.txt.\nI deleted old.txt."),
        "{answer}"
    );
    assert_eq!(
        std::fs::read_to_string(app.sandbox().join("notes.txt")).unwrap(),
        "hi"
    );
    assert!(!app.sandbox().join("old.txt").exists());
    let (status, body) = app.get_as("/api/approvals?state=decided", None).await;
    assert_eq!(status, 200);
    assert_eq!(body["decisions"][0]["channel"], "a2a");
    let _ = app
        .post_json_as("/api/approvals/nope", None, &json!({}))
        .await;
}
