//! Talking to a task that has not finished (docs/wire.md, Methods): a message to a working task
//! joins the conversation before the agent's next model turn; free text to a paused task
//! rejects its pending calls with the text as the reason; cancel still stops either; a decision
//! whose client leaves after the first event still runs.

use serde_json::{json, Value};

use crate::hitl::{pause, say_on};
use crate::support::*;

/// The user messages of a task's history, as text, in order.
async fn user_texts(app: &TestApp, task: &str) -> Vec<String> {
    let got = app
        .rpc(None, request("tasks/get", json!({"id": task})))
        .await;
    got["result"]["history"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|message| message["role"] == "user")
        .map(|message| message["parts"][0]["text"].as_str().unwrap().to_owned())
        .collect()
}

/// Starts a long count and reads its stream until the answer has begun; the live stream and
/// the task's ids.
async fn counting(app: &TestApp) -> (SseStream, String, String) {
    let mut stream = say_live(app, "count to 200").await;
    let (mut task, mut context) = (None, None);
    loop {
        let event = stream.next().await.expect("the count streams");
        let result = &event["result"];
        task = task.or(result["taskId"].as_str().map(str::to_owned));
        context = context.or(result["contextId"].as_str().map(str::to_owned));
        if result["kind"] == "artifact-update" {
            break;
        }
    }
    (stream, task.unwrap(), context.unwrap())
}

#[tokio::test]
async fn a_message_to_a_working_task_is_queued_and_answered_before_it_completes() {
    let app = spawn_app().await;
    let (first, task, context) = counting(&app).await;
    // Accepted while the count runs; its own stream follows the task to the end of the turn.
    let follow_up = message_v03("hello there", Some(&task), Some(&context));
    let follow_up_id = follow_up["messageId"].clone();
    let events = app
        .stream(None, message_request("message/stream", follow_up))
        .await;
    let results = results(&events);
    assert_eq!(states(&results).last().unwrap(), "completed");
    // The message shows in the log where the model read it: after the whole count, before the
    // answer to it.
    let delivered = results
        .iter()
        .position(|result| result["status"]["message"]["messageId"] == follow_up_id)
        .expect("the queued message is delivered in the stream");
    assert_eq!(results[delivered]["status"]["state"], "working");
    assert_eq!(results[delivered]["status"]["message"]["role"], "user");
    let before = answer_text(&results[..delivered]);
    assert!(
        before.ends_with(", 200"),
        "the count ends first: {before:?}"
    );
    let after = answer_text(&results[delivered..]);
    assert!(
        after.contains("count to N"),
        "the greeting is answered: {after:?}"
    );
    // The first stream sees the same, and ends once, at the task's completion.
    let first = first.collect().await;
    let first = results_of(&first);
    assert_eq!(states(&first).last().unwrap(), "completed");
    assert_eq!(
        states(&first)
            .iter()
            .filter(|state| *state == "completed")
            .count(),
        1
    );
    assert_eq!(
        user_texts(&app, &task).await,
        ["count to 200", "hello there"]
    );
    // Once completed, the task takes no more.
    let late = app
        .rpc(
            None,
            message_request("message/send", message_v03("more", Some(&task), None)),
        )
        .await;
    assert_eq!(late["error"]["code"], -32602, "{late}");
}

fn results_of(events: &[Value]) -> Vec<Value> {
    results(events)
}

#[tokio::test]
async fn v10_send_message_to_a_working_task_returns_the_task_after_its_answer() {
    let app = spawn_app().await;
    let (_first, task, context) = counting(&app).await;
    let sent = app
        .rpc(
            Some("1.0"),
            message_request(
                "SendMessage",
                message_v10("hello", Some(&task), Some(&context)),
            ),
        )
        .await;
    let got = &sent["result"]["task"];
    assert_eq!(got["status"]["state"], "TASK_STATE_COMPLETED", "{sent}");
    let history = got["history"].as_array().unwrap();
    let last_user = history
        .iter()
        .rev()
        .find(|message| message["role"] == "ROLE_USER")
        .unwrap();
    assert_eq!(last_user["parts"][0]["text"], "hello");
    // A streaming send opens with the task as it is now (still working), then follows it.
    let (_second, task, context) = counting(&app).await;
    let events = app
        .stream(
            Some("1.0"),
            message_request(
                "SendStreamingMessage",
                message_v10("hello", Some(&task), Some(&context)),
            ),
        )
        .await;
    assert_eq!(
        events[0]["result"]["task"]["id"],
        task.as_str(),
        "{:?}",
        events[0]
    );
    assert_eq!(
        events.last().unwrap()["result"]["statusUpdate"]["status"]["state"],
        "TASK_STATE_COMPLETED"
    );
}

#[tokio::test]
async fn cancel_drops_a_queued_message_and_a_stopped_task_takes_no_more() {
    let app = spawn_app().await;
    let (_first, task, context) = counting(&app).await;
    let queued = app
        .rpc(
            None,
            request(
                "message/send",
                json!({"message": message_v03("hello", Some(&task), Some(&context)),
                       "configuration": {"blocking": false}}),
            ),
        )
        .await;
    assert!(queued.get("error").is_none(), "{queued}");
    let canceled = app
        .rpc(None, request("tasks/cancel", json!({"id": task})))
        .await;
    assert_eq!(
        canceled["result"]["status"]["state"], "canceled",
        "{canceled}"
    );
    let late = app
        .rpc(
            Some("1.0"),
            message_request("SendMessage", message_v10("again", Some(&task), None)),
        )
        .await;
    assert_eq!(late["error"]["code"], -32004, "{late}");
    assert_eq!(user_texts(&app, &task).await, ["count to 200"]);
    // Dropped from the store too: a canceled task's queue is never delivered, and it kept
    // every undelivered message until the chat was deleted.
    let waiting = sql_count(
        app.data_dir.path(),
        "SELECT COUNT(*) FROM queued_messages WHERE task_id = ?1",
        &task,
    )
    .await;
    assert_eq!(waiting, 0);
}

#[tokio::test]
async fn free_text_to_a_paused_task_rejects_its_calls_with_the_text_as_reason() {
    let app = spawn_app().await;
    let (task, context) = pause(&app, None).await;
    let reason = "write it to drafts/notes.txt instead";
    let events = results(&say_on(&app, &task, &context, reason).await);
    assert_eq!(states(&events)[0], "working");
    assert_eq!(states(&events).last().unwrap(), "completed");
    let responses = data_parts(&events, "function_response");
    let rejected: Vec<(&str, &str)> = responses
        .iter()
        .map(|response| {
            (
                response["id"].as_str().unwrap(),
                response["response"]["reason"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(rejected, [("call_1", reason), ("call_2", reason)]);
    assert!(
        answer_text(&events).contains(reason),
        "the model read the reason"
    );
    // Nothing ran; the decision is audited as a text decision.
    assert!(!app.sandbox().join("notes.txt").exists());
    assert!(app.sandbox().join("old.txt").exists());
    let (_, body) = app.get("/api/approvals?state=decided").await;
    assert_eq!(body["decisions"][0]["channel"], "text");
    assert_eq!(
        body["decisions"][0]["summary"],
        format!("Rejected: {reason}")
    );
}

/// A streamed decision's runner starts once its stream is set up (`PendingRunner`), and starts
/// all the same when the client leaves after the first event.
#[tokio::test]
async fn a_decision_whose_stream_is_dropped_after_its_first_event_still_runs() {
    let app = spawn_app().await;
    let (task, context) = pause(&app, None).await;
    let body = message_request(
        "message/stream",
        decision(&task, &context, json!({"decision_type": "approve"})),
    );
    let mut stream = app.open_stream(None, None, body).await;
    let first = stream.next().await.expect("the decision's first event");
    assert_eq!(first["result"]["status"]["state"], "working");
    drop(stream);
    wait_for_state(&app, &task, "completed").await;
    assert_eq!(
        std::fs::read_to_string(app.sandbox().join("notes.txt")).unwrap(),
        "hi"
    );
    assert!(!app.sandbox().join("old.txt").exists());
}
