//! `--stream-idle-timeout`: a stream that sends no event for that long ends with a JSON-RPC
//! error event that says so, and the task goes on; a stream that keeps sending is never cut.

use std::time::Duration;

use serde_json::json;

use crate::support::*;

#[tokio::test]
async fn a_silent_stream_ends_with_an_error_event_and_the_task_goes_on() {
    let app = spawn_with(|config| config.stream_idle_timeout_secs = 1).await;
    let paused = say(&app, "write notes.txt: hi").await;
    let task = task_id(&paused);
    assert_eq!(task_state(&app, &task).await, "input-required");

    // v1.0 follows a paused task until it ends: nothing comes while nobody decides.
    // Bounded, so a stream that never ends fails the test instead of hanging it.
    let events = tokio::time::timeout(
        Duration::from_secs(60),
        app.stream(Some("1.0"), request("SubscribeToTask", json!({"id": task}))),
    )
    .await
    .expect("the silent stream was never ended");
    assert_eq!(events.len(), 2, "{events:?}");
    assert!(events[0].get("result").is_some(), "{}", events[0]);
    let error = &events[1]["error"];
    assert_eq!(error["code"], -32603, "{}", events[1]);
    let message = error["message"].as_str().unwrap();
    assert!(
        message.contains("sent nothing for 1 second, so the stream was closed")
            && message.contains("the task goes on"),
        "{message}"
    );
    assert_eq!(events[1]["id"], events[0]["id"]);

    // The task is still waiting, and a decision still completes it.
    assert_eq!(task_state(&app, &task).await, "input-required");
    let context = context_id(&paused);
    let decided = decide(&app, &task, &context, json!({"decision_type": "approve"})).await;
    assert_eq!(
        states(&decided).last().map(String::as_str),
        Some("completed")
    );
}

#[tokio::test]
async fn a_stream_that_keeps_sending_is_not_cut() {
    // Numbers come every 50 ms for about 4 s: longer than the limit, but never silent for it.
    let app = spawn_with(|config| config.stream_idle_timeout_secs = 2).await;
    let results = say(&app, "count to 80").await;
    assert_eq!(
        states(&results).last().map(String::as_str),
        Some("completed")
    );
    assert!(answer_text(&results).ends_with("80"));
}

#[test]
fn the_default_is_kagents_thirty_minutes() {
    assert_eq!(signoff_server::DEFAULT_STREAM_IDLE_TIMEOUT_SECS, 30 * 60);
    let config = signoff_server::Config::new("data");
    assert_eq!(config.stream_idle_timeout_secs, 30 * 60);
}
