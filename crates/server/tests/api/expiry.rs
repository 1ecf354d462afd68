//! Approvals that expire: `approval_timeout` with `on_timeout = "reject"` (the model goes on,
//! told the calls expired) and `"cancel"` (the task ends canceled), the deadline in the
//! interrupt, a restart in between, and late decisions over REST and A2A.

use serde_json::{json, Value};

use crate::support::*;

fn agents(timeout: &str, on_timeout: &str) -> String {
    format!(
        "[[agents]]\nname = \"demo\"\napproval_timeout = \"{timeout}\"\non_timeout = \"{on_timeout}\"\n\
         [[agents.tools]]\nkind = \"builtin_files\"\nrequire_approval = [\"write_file\", \"delete_file\"]\n"
    )
}

/// Pauses on two held calls; the task, its context and the interrupt's data.
async fn pause(app: &TestApp) -> (String, String, Value) {
    let results = say(app, "write notes.txt: hi and delete old.txt").await;
    let last = results.last().unwrap();
    assert_eq!(last["status"]["state"], "input-required", "{results:?}");
    let data = last["status"]["message"]["parts"][1]["data"].clone();
    (task_id(&results), context_id(&results), data)
}

/// The function_response parts in a task's history and status, in order.
fn responses(task: &Value) -> Vec<Value> {
    let mut messages: Vec<Value> = task["history"].as_array().cloned().unwrap_or_default();
    messages.push(task["status"]["message"].clone());
    messages
        .iter()
        .filter_map(|message| message["parts"].as_array().cloned())
        .flatten()
        .filter(|part| part["metadata"]["kagent_type"] == "function_response")
        .map(|part| part["data"].clone())
        .collect()
}

/// The audit entries of `task` with channel `expiry`.
fn expiries(task: &Value) -> Vec<Value> {
    task["metadata"]["signoff_audit"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .filter(|entry| entry["channel"] == "expiry")
        .collect()
}

#[tokio::test]
async fn an_unanswered_batch_expires_and_the_model_is_told_so_not_that_it_was_rejected() {
    let app = spawn_with_agents(&agents("1s", "reject"), |_| {}).await;
    let (task, _, interrupt) = pause(&app).await;
    let expires_at = interrupt["expires_at"].as_str().unwrap().to_owned();
    assert!(expires_at.ends_with('Z'), "{expires_at}");
    let (_, pending) = app.get("/api/approvals").await;
    assert_eq!(pending["approvals"][0]["expiresAt"], expires_at.as_str());

    let done = wait_for_state(&app, &task, "completed").await;
    assert!(!app.sandbox().join("notes.txt").exists());
    assert!(app.sandbox().join("old.txt").exists(), "nothing ran");
    let responses = responses(&done);
    assert_eq!(responses.len(), 2, "{responses:?}");
    for response in &responses {
        assert_eq!(
            response["response"],
            json!({"status": "expired",
                   "message": "The approval request expired unanswered after 1s; the call did not run."})
        );
    }
    let answer: String = done["artifacts"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|artifact| artifact["parts"].as_array().unwrap().clone())
        .filter_map(|part| part["text"].as_str().map(str::to_owned))
        .collect();
    assert!(answer.contains("the approval expired"), "{answer}");
    assert!(!answer.contains("rejected"), "{answer}");
    let audit = expiries(&done);
    assert_eq!(audit.len(), 1);
    assert_eq!(audit[0]["summary"], "Expired unanswered after 1s");
    assert_eq!(audit[0]["calls"][0]["verdict"], "expire");
    assert_eq!(audit[0]["calls"][0]["reason"], Value::Null);

    // A late decision: 409 over REST, a clear error over A2A; nothing changes.
    let (status, body) = decide_rest(&app, None, &task, json!({"decision_type": "approve"})).await;
    assert_eq!(status, 409);
    assert!(
        body["error"].as_str().unwrap().contains("expired"),
        "{body}"
    );
    let events = decision_events(
        &app,
        &task,
        done["contextId"].as_str().unwrap(),
        json!({"decision_type": "approve"}),
    )
    .await;
    let error = &events[0]["error"];
    assert_eq!(error["code"], -32602);
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("expired unanswered"),
        "{error}"
    );
    assert!(!app.sandbox().join("notes.txt").exists());
}

#[tokio::test]
async fn with_on_timeout_cancel_the_task_ends_canceled_saying_why() {
    let app = spawn_with_agents(&agents("1s", "cancel"), |_| {}).await;
    let (task, context, _) = pause(&app).await;
    let canceled = wait_for_state(&app, &task, "canceled").await;
    assert_eq!(
        canceled["status"]["message"]["parts"][0]["text"],
        "Canceled: the approval request expired unanswered after 1s."
    );
    let responses = responses(&canceled);
    assert_eq!(responses.len(), 2);
    assert!(responses
        .iter()
        .all(|response| response["response"]["status"] == "expired"));
    assert_eq!(expiries(&canceled).len(), 1);
    assert!(app.sandbox().join("old.txt").exists());
    let (status, body) = decide_rest(&app, None, &task, json!({"decision_type": "deny"})).await;
    assert_eq!(status, 409);
    assert!(
        body["error"].as_str().unwrap().contains("expired"),
        "{body}"
    );
    let events = decision_events(&app, &task, &context, json!({"decision_type": "approve"})).await;
    assert!(
        events[0]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("expired"),
        "{events:?}"
    );
}

#[tokio::test]
async fn a_decision_in_time_wins_and_nothing_expires_later() {
    let app = spawn_with_agents(&agents("2s", "reject"), |_| {}).await;
    let (task, _, _) = pause(&app).await;
    let (status, _) = decide_rest(&app, None, &task, json!({"decision_type": "approve"})).await;
    assert_eq!(status, 200);
    let done = wait_for_state(&app, &task, "completed").await;
    assert!(app.sandbox().join("notes.txt").exists());
    // A second pause of the same chat still waits for its own deadline.
    let (later, _, _) = pause(&app).await;
    let (_, pending) = app.get("/api/approvals").await;
    assert_eq!(pending["approvals"][0]["taskId"], later.as_str());
    assert!(expiries(&done).is_empty());
}

#[tokio::test]
async fn a_stored_deadline_survives_a_restart_and_fires_once() {
    let toml = agents("2s", "reject");
    let app = spawn_with_agents(&toml, |_| {}).await;
    let (task, _, _) = pause(&app).await;
    let data_dir = app.stop().await;
    let agents_file = write_agents(data_dir.path(), &toml);
    let app = spawn_in(data_dir, move |config| {
        config.agents_file = Some(agents_file)
    })
    .await;
    let done = wait_for_state(&app, &task, "completed").await;
    assert_eq!(expiries(&done).len(), 1);
    assert_eq!(responses(&done).len(), 2);
    // And again: the next start has nothing left to expire.
    let data_dir = app.stop().await;
    let agents_file = write_agents(data_dir.path(), &toml);
    let app = spawn_in(data_dir, move |config| {
        config.agents_file = Some(agents_file)
    })
    .await;
    let again = wait_for_state(&app, &task, "completed").await;
    assert_eq!(expiries(&again).len(), 1, "not fired twice");
    assert_eq!(responses(&again).len(), 2);
    assert_eq!(again["history"], done["history"]);
}
