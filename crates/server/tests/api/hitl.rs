//! Human-in-the-loop approvals: the gate, decisions in every shape, resume,
//! exactly-once, cancel, REST approvals, users and the audit trail.

use serde_json::{json, Value};

use crate::support::*;

pub const PROMPT: &str = "write notes.txt: hi and delete old.txt and read readme.txt";

/// Sends the README prompt and checks the pause: the read streams, then ONE batch of two.
pub async fn pause(app: &TestApp, token: Option<&str>) -> (String, String) {
    let events = app
        .stream_as(
            None,
            token,
            message_request("message/stream", message_v03(PROMPT, None, None)),
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
    assert!(
        last["metadata"]["kagent_usage_metadata"]["totalTokenCount"]
            .as_u64()
            .unwrap()
            > 0
    );
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

/// Sends a plain-text message on the paused task; the raw events (it may be refused).
pub async fn say_on(app: &TestApp, task: &str, context: &str, text: &str) -> Vec<Value> {
    app.stream(
        None,
        message_request(
            "message/stream",
            message_v03(text, Some(task), Some(context)),
        ),
    )
    .await
}

/// The function_response parts of a task's whole history, by call id.
async fn responses_in_history(app: &TestApp, task: &str) -> Vec<Value> {
    let got = app
        .rpc(None, request("tasks/get", json!({"id": task})))
        .await;
    let mut out = Vec::new();
    let mut messages = got["result"]["history"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    messages.push(got["result"]["status"]["message"].clone());
    for message in messages {
        for part in message["parts"].as_array().cloned().unwrap_or_default() {
            if part["metadata"]["kagent_type"] == "function_response" {
                out.push(part["data"].clone());
            }
        }
    }
    out
}

fn assert_completed(results: &[Value]) {
    assert_eq!(
        states(results)[0],
        "working",
        "the decision resumes the task"
    );
    assert_eq!(states(results).last().unwrap(), "completed");
}

#[tokio::test]
async fn approve_all_runs_both_calls_and_completes() {
    let app = spawn_app().await;
    let (task, context) = pause(&app, None).await;
    let results = decide(&app, &task, &context, json!({"decision_type": "approve"})).await;
    assert_completed(&results);
    let responses = data_parts(&results, "function_response");
    let names: Vec<&str> = responses
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["write_file", "delete_file"]);
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
    // Audit: in the task's metadata and in the decided list.
    let got = app
        .rpc(None, request("tasks/get", json!({"id": task})))
        .await;
    let audit = &got["result"]["metadata"]["signoff_audit"][0];
    assert_eq!(audit["decidedBy"], "local");
    assert_eq!(audit["deciderAuth"], "none");
    assert_eq!(audit["channel"], "a2a");
    assert_eq!(audit["summary"], "Approved");
    assert_eq!(audit["calls"][0]["verdict"], "approve");
    assert_eq!(
        audit["calls"][0]["argsSha256"],
        audit["calls"][0]["runArgsSha256"]
    );
    assert_eq!(audit["calls"][0]["argsSha256"].as_str().unwrap().len(), 64);
    let (status, body) = app.get("/api/approvals?state=decided").await;
    assert_eq!(status, 200);
    assert_eq!(body["decisions"][0]["taskId"], task.as_str());
    assert_eq!(body["decisions"][0]["calls"].as_array().unwrap().len(), 2);
}

#[tokio::test]
async fn reject_all_with_a_reason_runs_nothing_and_the_answer_quotes_it() {
    let app = spawn_app().await;
    let (task, context) = pause(&app, None).await;
    let results = decide(
        &app,
        &task,
        &context,
        json!({"decision_type": "deny", "reason": "too risky"}),
    )
    .await;
    assert_completed(&results);
    let responses = data_parts(&results, "function_response");
    assert_eq!(responses.len(), 2);
    for response in &responses {
        assert_eq!(
            response["response"],
            json!({"status": "rejected", "reason": "too risky"})
        );
    }
    let answer = answer_text(&results);
    assert!(
        answer.contains("You rejected writing notes.txt: \"too risky\"."),
        "{answer}"
    );
    assert!(
        answer.contains("You rejected deleting old.txt: \"too risky\"."),
        "{answer}"
    );
    assert!(!app.sandbox().join("notes.txt").exists());
    assert!(app.sandbox().join("old.txt").exists());
    let (_, body) = app.get("/api/approvals?state=decided").await;
    assert_eq!(body["decisions"][0]["calls"][1]["verdict"], "deny");
    assert_eq!(body["decisions"][0]["calls"][1]["reason"], "too risky");
    assert_eq!(
        body["decisions"][0]["calls"][1]["runArgsSha256"],
        Value::Null
    );
}

#[tokio::test]
async fn a_mixed_batch_runs_the_approved_call_only() {
    let app = spawn_app().await;
    let (task, context) = pause(&app, None).await;
    let data = json!({"decision_type": "batch",
                      "decisions": {"call_1": "approve", "call_2": "deny"},
                      "rejection_reasons": {"call_2": "keep it"}});
    let results = decide(&app, &task, &context, data).await;
    assert_completed(&results);
    let answer = answer_text(&results);
    assert!(
        answer.contains("I wrote notes.txt.")
            && answer.contains("You rejected deleting old.txt: \"keep it\"."),
        "{answer}"
    );
    assert!(app.sandbox().join("notes.txt").exists());
    assert!(app.sandbox().join("old.txt").exists());
}

#[tokio::test]
async fn approve_with_edited_arguments_runs_the_edit_and_says_so() {
    let app = spawn_app().await;
    let (task, context) = pause(&app, None).await;
    let data = json!({"decision_type": "approve",
                      "modified_args": {"call_1": {"path": "safe.txt", "content": "hi"}}});
    let results = decide(&app, &task, &context, data).await;
    assert_completed(&results);
    assert_eq!(
        std::fs::read_to_string(app.sandbox().join("safe.txt")).unwrap(),
        "hi"
    );
    assert!(!app.sandbox().join("notes.txt").exists());
    let answer = answer_text(&results);
    assert!(
        answer.contains("I wrote safe.txt. (You edited the arguments before it ran.)"),
        "{answer}"
    );
    let (_, body) = app.get("/api/approvals?state=decided").await;
    let call = &body["decisions"][0]["calls"][0];
    assert_eq!(call["edited"], true);
    assert_ne!(call["argsSha256"], call["runArgsSha256"]);
}

#[tokio::test]
async fn text_decisions_approve_reject_or_ask_again() {
    let app = spawn_app().await;
    let (task, context) = pause(&app, None).await;
    // Only polite words: neither approve nor reject (any other text rejects, see live.rs), so
    // refused; the task stays paused, nothing runs.
    let events = say_on(&app, &task, &context, "ok").await;
    assert_eq!(events.len(), 1);
    assert_eq!(events[0]["error"]["code"], -32602);
    assert!(events[0]["error"]["message"]
        .as_str()
        .unwrap()
        .contains("approve or reject"));
    assert_eq!(task_state(&app, &task).await, "input-required");
    // "yes" approves all.
    let approved = results(&say_on(&app, &task, &context, "yes").await);
    assert_completed(&approved);
    assert!(app.sandbox().join("notes.txt").exists());
    let (_, body) = app.get("/api/approvals?state=decided").await;
    assert_eq!(body["decisions"][0]["channel"], "text");

    // "no, keep it" rejects all with the text as the reason.
    let (task, context) = {
        std::fs::write(app.sandbox().join("old.txt"), "again").unwrap();
        std::fs::remove_file(app.sandbox().join("notes.txt")).unwrap();
        pause(&app, None).await
    };
    let rejected = results(&say_on(&app, &task, &context, "no, keep it").await);
    assert_completed(&rejected);
    assert!(answer_text(&rejected).contains("You rejected deleting old.txt: \"no, keep it\"."));
    assert!(app.sandbox().join("old.txt").exists());
}

#[tokio::test]
async fn refused_decisions_change_nothing() {
    let app = spawn_app().await;
    let (task, context) = pause(&app, None).await;
    let cases = [
        (
            json!({"decision_type": "batch", "decisions": {"call_1": "approve"}}),
            "batch misses pending call call_2",
        ),
        (
            json!({"decision_type": "batch", "decisions": {"call_1": "approve", "call_2": "deny", "call_9": "approve"}}),
            "call_9",
        ),
        (
            json!({"decision_type": "approve", "modified_args": {"call_1": "safe.txt"}}),
            "modified_args for call_1 must be an object",
        ),
        (
            json!({"decision_type": "batch", "decisions": {"call_1": "deny", "call_2": "approve"}, "modified_args": {"call_1": {"path": "x"}}}),
            "modified_args for call_1, which is not approved",
        ),
        (
            json!({"decision_type": "maybe"}),
            "unknown decision_type \"maybe\"",
        ),
    ];
    for (data, expect) in cases {
        let events = decision_events(&app, &task, &context, data).await;
        assert_eq!(events.len(), 1, "{events:?}");
        assert_eq!(events[0]["error"]["code"], -32602);
        let message = events[0]["error"]["message"].as_str().unwrap();
        assert!(
            message.contains(expect),
            "{message:?} should name {expect:?}"
        );
        assert_eq!(task_state(&app, &task).await, "input-required");
    }
    assert!(!app.sandbox().join("notes.txt").exists());
    assert!(app.sandbox().join("old.txt").exists());
    let (_, body) = app.get("/api/approvals").await;
    assert_eq!(
        body["approvals"].as_array().unwrap().len(),
        1,
        "still pending"
    );
    // A decision on a task that is not paused: -32602; on an unknown task: -32001.
    decide(&app, &task, &context, json!({"decision_type": "approve"})).await;
    let late = decision_events(&app, &task, &context, json!({"decision_type": "approve"})).await;
    assert_eq!(late[0]["error"]["code"], -32602);
    let unknown =
        decision_events(&app, "nope", &context, json!({"decision_type": "approve"})).await;
    assert_eq!(unknown[0]["error"]["code"], -32001);
}

/// A decision the store refuses for a reason of its own reaches the client with that reason,
/// over REST and over A2A: here a call of the pending batch is no longer held (as a damaged
/// row would leave it), so the store's write refuses the batch and nothing changes.
#[tokio::test]
async fn a_store_conflict_reaches_the_client_with_its_reason() {
    let app = spawn_app().await;
    let (task, context) = pause(&app, None).await;
    sql_execute(
        app.data_dir.path(),
        &[&format!(
            "UPDATE calls SET status = 'finished' WHERE task_id = '{task}' AND call_id = 'call_2'"
        )],
    )
    .await;
    let (status, body) = decide_rest(&app, None, &task, json!({"decision_type": "approve"})).await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(body["error"], "a call of the batch is not held", "{body}");
    let events = decision_events(&app, &task, &context, json!({"decision_type": "approve"})).await;
    assert_eq!(events[0]["error"]["code"], -32602, "{events:?}");
    assert_eq!(
        events[0]["error"]["message"], "a call of the batch is not held",
        "{events:?}"
    );
    assert_eq!(task_state(&app, &task).await, "input-required");
    assert!(!app.sandbox().join("notes.txt").exists());
}

#[tokio::test]
async fn the_paused_status_is_what_tasks_get_returns() {
    let app = spawn_app().await;
    let results = say(&app, PROMPT).await;
    let last = results.last().unwrap();
    let task = last["taskId"].as_str().unwrap();
    let got = app
        .rpc(None, request("tasks/get", json!({"id": task})))
        .await;
    assert_eq!(got["result"]["status"], last["status"]);
    // v1.0 sees the same batch.
    let got = app
        .rpc(Some("1.0"), request("GetTask", json!({"id": task})))
        .await;
    assert_eq!(
        got["result"]["status"]["state"],
        "TASK_STATE_INPUT_REQUIRED"
    );
    let parts = got["result"]["status"]["message"]["parts"]
        .as_array()
        .unwrap();
    assert_eq!(
        parts[1]["data"]["action_requests"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    // Resubscribing to a paused task yields its snapshot and closes.
    let events = app
        .stream(None, request("tasks/resubscribe", json!({"id": task})))
        .await;
    assert_eq!(events.len(), 1);
    assert_eq!(events[0]["result"]["status"], last["status"]);
}

#[tokio::test]
async fn v10_decisions_resume_too() {
    let app = spawn_app().await;
    let (task, context) = pause(&app, None).await;
    let message = json!({"messageId": "d1", "role": "ROLE_USER", "taskId": task, "contextId": context,
                         "parts": [{"data": {"decision_type": "approve"}}, {"text": "Approved"}]});
    let events = app
        .stream(
            Some("1.0"),
            message_request("SendStreamingMessage", message),
        )
        .await;
    let results = results(&events);
    assert_eq!(results[0]["task"]["status"]["state"], "TASK_STATE_WORKING");
    assert_eq!(
        results.last().unwrap()["statusUpdate"]["status"]["state"],
        "TASK_STATE_COMPLETED"
    );
    assert!(app.sandbox().join("notes.txt").exists());
}

/// A fixture request from kagent's UI, pointed at our task.
fn kagent_request(name: &str, task: &str, context: &str) -> Value {
    let path = format!(
        "{}/tests/fixtures/kagent-decisions/{name}.request.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(path).unwrap();
    // kagent keys batches by the original call ids; ours are call_1 (write) and call_2 (delete).
    let text = text
        .replace("call_write_b", "call_1")
        .replace("call_delete_b", "call_2");
    let mut body: Value = serde_json::from_str(&text).unwrap();
    body["params"]["message"]["taskId"] = json!(task);
    body["params"]["message"]["contextId"] = json!(context);
    body
}

/// Pauses a fresh task, decides it with the fixture `name`, and returns the resumed results.
async fn decide_as_kagent(app: &TestApp, name: &str) -> Vec<Value> {
    let (task, context) = pause(app, None).await;
    let resumed = results(
        &app.stream(None, kagent_request(name, &task, &context))
            .await,
    );
    assert_completed(&resumed);
    resumed
}

#[tokio::test]
async fn decisions_shaped_as_kagents_ui_sends_them() {
    let app = spawn_app().await;
    // c2: approve.
    decide_as_kagent(&app, "c2_resume").await;
    assert!(app.sandbox().join("notes.txt").exists() && !app.sandbox().join("old.txt").exists());
    // d2: reject with rejection_reason.
    std::fs::write(app.sandbox().join("old.txt"), "x").unwrap();
    std::fs::remove_file(app.sandbox().join("notes.txt")).unwrap();
    let rejected = decide_as_kagent(&app, "d2_resume").await;
    assert!(answer_text(&rejected).contains("\"Not allowed: the sandbox is read-only today.\""));
    assert!(app.sandbox().join("old.txt").exists());
    // e2: batch keyed by call ids, `reject` and rejection_reasons.
    let mixed = decide_as_kagent(&app, "e2_resume").await;
    let answer = answer_text(&mixed);
    assert!(
        answer.contains("I wrote notes.txt.")
            && answer.contains("\"Keep old_b.txt, it is still needed.\""),
        "{answer}"
    );
    assert!(app.sandbox().join("old.txt").exists());
}

#[tokio::test]
async fn multi_round_pauses_in_one_task() {
    let app = spawn_app().await;
    let results1 = say(&app, "write a.txt: 1 then delete old.txt").await;
    let last = results1.last().unwrap();
    assert_eq!(last["status"]["state"], "input-required");
    let task = last["taskId"].as_str().unwrap().to_owned();
    let context = last["contextId"].as_str().unwrap().to_owned();
    let requests = &last["status"]["message"]["parts"][1]["data"]["action_requests"];
    assert_eq!(requests[0]["id"], "call_1");
    assert_eq!(requests.as_array().unwrap().len(), 1);
    // Round one approved: the write runs, the model asks for the delete: a new batch.
    let round2 = decide(&app, &task, &context, json!({"decision_type": "approve"})).await;
    assert_eq!(states(&round2).last().unwrap(), "input-required");
    let last = round2.last().unwrap();
    assert_eq!(
        last["status"]["message"]["parts"][1]["data"]["action_requests"][0]["id"],
        "call_2"
    );
    assert!(app.sandbox().join("a.txt").exists());
    assert!(app.sandbox().join("old.txt").exists());
    let (_, body) = app.get("/api/approvals").await;
    assert_eq!(body["approvals"][0]["calls"][0]["id"], "call_2");
    // Round two rejected: the task completes in the same task id.
    let done = decide(
        &app,
        &task,
        &context,
        json!({"decision_type": "deny", "reason": "not today"}),
    )
    .await;
    assert_completed(&done);
    let answer = answer_text(&done);
    assert!(
        answer.contains("I wrote a.txt.") && answer.contains("\"not today\""),
        "{answer}"
    );
    assert_eq!(done.last().unwrap()["taskId"], task.as_str());
    let got = app
        .rpc(None, request("tasks/get", json!({"id": task})))
        .await;
    assert_eq!(
        got["result"]["metadata"]["signoff_audit"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
}

#[tokio::test]
async fn rest_approvals_list_decide_and_answer_with_results() {
    let app = spawn_app().await;
    let (task, context) = pause(&app, None).await;
    let (status, body) = app.get("/api/approvals").await;
    assert_eq!(status, 200);
    let pending = &body["approvals"][0];
    assert_eq!(pending["taskId"], task.as_str());
    assert_eq!(pending["contextId"], context.as_str());
    assert_eq!(pending["agent"], "default/demo");
    assert!(pending["since"].as_str().unwrap().ends_with('Z'));
    assert_eq!(pending["calls"].as_array().unwrap().len(), 2);
    let data = json!({"decision_type": "batch", "decisions": {"call_1": "approve", "call_2": "reject"},
                      "rejection_reason": "ignored", "rejection_reasons": {"call_2": "keep it"}});
    let (status, body) = decide_rest(&app, None, &task, data).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["taskId"], task.as_str());
    let calls = body["decision"]["calls"].as_array().unwrap();
    assert_eq!(calls[0]["verdict"], "approve");
    assert_eq!(
        calls[0]["result"]["isError"], false,
        "the approved call's result: {body}"
    );
    assert_eq!(calls[1]["verdict"], "deny");
    assert_eq!(calls[1]["result"]["status"], "rejected");
    assert_eq!(body["decision"]["channel"], "rest");
    assert_eq!(
        body["state"], "completed",
        "a quick answer reports the final state"
    );
    assert_eq!(body["follow"]["url"], "/api/a2a/default/demo");
    assert!(app.sandbox().join("notes.txt").exists() && app.sandbox().join("old.txt").exists());
    // Decided: nothing pending; deciding again is a conflict; unknown tasks are 404.
    let (_, body) = app.get("/api/approvals").await;
    assert_eq!(body["approvals"], json!([]));
    let (status, body) = decide_rest(&app, None, &task, json!({"decision_type": "approve"})).await;
    assert_eq!(status, 409, "{body}");
    let (status, _) = decide_rest(&app, None, "nope", json!({"decision_type": "approve"})).await;
    assert_eq!(status, 404);
    // A refused decision is 400 and changes nothing.
    let (task, _) = {
        std::fs::remove_file(app.sandbox().join("notes.txt")).unwrap();
        pause(&app, None).await
    };
    let (status, body) = decide_rest(
        &app,
        None,
        &task,
        json!({"decision_type": "batch", "decisions": {"call_1": "approve"}}),
    )
    .await;
    assert_eq!(status, 400);
    assert!(body["error"]
        .as_str()
        .unwrap()
        .contains("batch misses pending call call_2"));
    assert_eq!(task_state(&app, &task).await, "input-required");
}

#[tokio::test]
async fn cancel_of_a_paused_task_runs_nothing_and_is_audited() {
    let app = spawn_app().await;
    let (task, _) = pause(&app, None).await;
    let canceled = app
        .rpc(None, request("tasks/cancel", json!({"id": task})))
        .await;
    assert_eq!(canceled["result"]["status"]["state"], "canceled");
    assert!(!app.sandbox().join("notes.txt").exists());
    assert!(app.sandbox().join("old.txt").exists());
    let (_, body) = app.get("/api/approvals").await;
    assert_eq!(body["approvals"], json!([]));
    let (_, body) = app.get("/api/approvals?state=decided").await;
    assert_eq!(body["decisions"][0]["channel"], "cancel");
    assert_eq!(body["decisions"][0]["calls"][0]["verdict"], "cancel");
    let (status, _) = decide_rest(&app, None, &task, json!({"decision_type": "approve"})).await;
    assert_eq!(status, 409);
    // The task never resumes: not once every runner has ended (a graceful stop waits for
    // them), nor when a restart looks for unfinished work; and no held call ran.
    let app = spawn_in(app.stop().await, |_| {}).await;
    assert_eq!(task_state(&app, &task).await, "canceled");
    assert!(responses_in_history(&app, &task)
        .await
        .iter()
        .all(|r| r["name"] == "read_file"));
    assert!(!app.sandbox().join("notes.txt").exists());
    assert!(app.sandbox().join("old.txt").exists());
}

#[tokio::test]
async fn fifty_concurrent_decisions_one_wins_and_each_call_runs_once() {
    let app = spawn_app().await;
    let (task, context) = pause(&app, None).await;
    let app = std::sync::Arc::new(app);
    let mut racers = Vec::new();
    for index in 0..50 {
        let app = app.clone();
        let (task, context) = (task.clone(), context.clone());
        racers.push(tokio::spawn(async move {
            if index % 2 == 0 {
                let (status, body) =
                    decide_rest(&app, None, &task, json!({"decision_type": "approve"})).await;
                (status == 200, body.to_string())
            } else {
                let events =
                    decision_events(&app, &task, &context, json!({"decision_type": "approve"}))
                        .await;
                let won = events[0].get("error").is_none();
                (won, events[0].to_string())
            }
        }));
    }
    let mut wins = 0;
    for racer in racers {
        let (won, body) = racer.await.unwrap();
        if won {
            wins += 1;
        } else {
            assert!(
                body.contains("already decided")
                    || body.contains("waits for no decision")
                    || body.contains("not waiting for a decision"),
                "a loser gets a clear error: {body}"
            );
        }
    }
    assert_eq!(wins, 1, "exactly one decision wins");
    // Wait for the task to finish, then count the side effects in its history.
    wait_for_state(&app, &task, "completed").await;
    let responses = responses_in_history(&app, &task).await;
    for id in ["call_1", "call_2", "call_3"] {
        let runs: Vec<&Value> = responses.iter().filter(|r| r["id"] == id).collect();
        assert_eq!(runs.len(), 1, "{id} ran exactly once: {responses:?}");
        assert_eq!(runs[0]["response"]["isError"], false, "{id}: {runs:?}");
    }
    let (_, body) = app.get("/api/approvals?state=decided").await;
    assert_eq!(body["decisions"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn users_see_and_decide_only_their_own_tasks() {
    let app = spawn_with(|config| {
        config.auth = signoff_server::AuthMode::Tokens;
        config.tokens = vec!["alice-token=alice".into(), "bob-token=bob".into()];
    })
    .await;
    let (task, context) = pause(&app, Some("alice-token")).await;
    // Bob: A2A says "not found"; REST says 403 to a read, and "not found" to a decision, as
    // for an unknown task; his lists are empty.
    for method in ["tasks/get", "tasks/cancel"] {
        let got = app
            .rpc_as(
                None,
                Some("bob-token"),
                request(method, json!({"id": task})),
            )
            .await;
        assert_eq!(got["error"]["code"], -32001, "{method}: {got}");
    }
    let events = app
        .stream_as(
            None,
            Some("bob-token"),
            message_request(
                "message/stream",
                decision(&task, &context, json!({"decision_type": "approve"})),
            ),
        )
        .await;
    assert_eq!(events[0]["error"]["code"], -32001);
    let (status, _) = decide_rest(
        &app,
        Some("bob-token"),
        &task,
        json!({"decision_type": "approve"}),
    )
    .await;
    assert_eq!(status, 404);
    let (_, body) = app.get_as("/api/approvals", Some("bob-token")).await;
    assert_eq!(body["approvals"], json!([]));
    let (_, body) = app.get_as("/api/sessions", Some("bob-token")).await;
    assert_eq!(body["sessions"], json!([]));
    let (status, _) = app
        .get_as(&format!("/api/sessions/{context}"), Some("bob-token"))
        .await;
    assert_eq!(status, 404);
    // No token: 401. Alice decides her own.
    let (status, _) = app.get_as("/api/approvals", None).await;
    assert_eq!(status, 401);
    let (_, body) = app.get_as("/api/approvals", Some("alice-token")).await;
    assert_eq!(body["approvals"].as_array().unwrap().len(), 1);
    let (status, body) = decide_rest(
        &app,
        Some("alice-token"),
        &task,
        json!({"decision_type": "approve"}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["decision"]["decidedBy"], "alice");
    assert_eq!(body["decision"]["deciderAuth"], "tokens");
    assert!(app.sandbox().join("notes.txt").exists());
}
