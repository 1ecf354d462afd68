//! The built-in `ask_user` tool: the scripted model's `ask`, the question in the interrupt, the
//! answers over A2A and REST in one shape, bad answers refused without a change, and a question
//! decided together with a gated call.

use serde_json::{json, Value};

use crate::support::*;

const ASK: &str = "ask Which database? PostgreSQL / SQLite / other";

/// Says `text` and returns the paused task, its context and the interrupt's action requests.
async fn ask(app: &TestApp, text: &str) -> (String, String, Vec<Value>) {
    let results = say(app, text).await;
    let last = results.last().unwrap();
    assert_eq!(last["status"]["state"], "input-required", "{last}");
    let parts = last["status"]["message"]["parts"].as_array().unwrap();
    let requests = parts[1]["data"]["action_requests"]
        .as_array()
        .unwrap()
        .clone();
    (
        task_id(&results),
        last["contextId"].as_str().unwrap().to_owned(),
        requests,
    )
}

/// The `(question, answer)` pairs of the ask_user result in `results`.
fn answered(results: &[Value]) -> Value {
    let responses = data_parts(results, "function_response");
    let result = responses
        .iter()
        .find(|response| response["name"] == "ask_user")
        .unwrap_or_else(|| panic!("no ask_user result: {responses:?}"));
    serde_json::from_str(result["response"]["result"].as_str().unwrap()).unwrap()
}

#[tokio::test]
async fn a_question_waits_and_its_answer_reaches_the_model_as_the_result() {
    let app = spawn_app().await;
    let (task, context, requests) = ask(&app, ASK).await;
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0]["kind"], "question");
    assert_eq!(requests[0]["name"], "ask_user");
    assert_eq!(
        requests[0]["args"],
        json!({"questions": [{"question": "Which database?",
                              "choices": ["PostgreSQL", "SQLite", "other"]}]})
    );
    let results = decide(
        &app,
        &task,
        &context,
        json!({"decision_type": "approve", "ask_user_answers": [{"answer": ["SQLite"]}]}),
    )
    .await;
    assert_eq!(states(&results).last().unwrap(), "completed");
    assert_eq!(
        answered(&results),
        json!([{"question": "Which database?", "answer": ["SQLite"]}])
    );
    let answer = answer_text(&results);
    assert_eq!(answer, "You answered \"Which database?\": SQLite.");
}

#[tokio::test]
async fn rest_takes_answers_in_the_same_shape() {
    let app = spawn_app().await;
    let (task, _, _) = ask(
        &app,
        "ask Which features? metrics + tracing + profiling and ask Anything else?",
    )
    .await;
    let (_, body) = app.get("/api/approvals").await;
    assert_eq!(body["approvals"][0]["calls"][0]["name"], "ask_user");
    let (status, body) = decide_rest(
        &app,
        None,
        &task,
        json!({"decision_type": "approve",
               "ask_user_answers": [{"answer": ["metrics", "tracing"]}, {"answer": ["keep it small"]}]}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let result = &body["decision"]["calls"][0]["result"]["result"];
    let pairs: Value = serde_json::from_str(result.as_str().unwrap()).unwrap();
    assert_eq!(
        pairs,
        json!([{"question": "Which features?", "answer": ["metrics", "tracing"]},
               {"question": "Anything else?", "answer": ["keep it small"]}])
    );
}

#[tokio::test]
async fn bad_answers_get_a_clear_error_and_change_nothing() {
    let app = spawn_app().await;
    let (task, _, _) = ask(&app, ASK).await;
    for (data, error) in [
        (
            json!({"decision_type": "approve", "ask_user_answers": [{"answer": ["MySQL"]}]}),
            "\"MySQL\" is not an option of the question \"Which database?\"",
        ),
        (
            json!({"decision_type": "approve"}),
            "no answer to the question \"Which database?\"",
        ),
        (
            json!({"decision_type": "approve", "ask_user_answers": [{"answer": ["SQLite"]}, {"answer": ["x"]}]}),
            "2 answers given, but only 1 questions were asked",
        ),
        (
            json!({"decision_type": "approve", "ask_user_answers": [{"answer": ["SQLite", "other"]}]}),
            "takes one answer",
        ),
        (
            json!({"decision_type": "approve", "ask_user_answers": [{"answer": "SQLite"}]}),
            "ask_user_answers must be a list",
        ),
        (
            json!({"decision_type": "approve", "modified_args": {"call_1": {"questions": []}}}),
            "which is a question",
        ),
    ] {
        let (status, body) = decide_rest(&app, None, &task, data.clone()).await;
        assert_eq!(status, 400, "{data}: {body}");
        let message = body["error"].as_str().unwrap();
        assert!(message.contains(error), "{data}: {message}");
        assert_eq!(task_state(&app, &task).await, "input-required");
    }
    // Answers where no question waits.
    let (write_task, _, _) = ask(&app, "write notes.txt: hi").await;
    let (status, body) = decide_rest(
        &app,
        None,
        &write_task,
        json!({"decision_type": "approve", "ask_user_answers": [{"answer": ["SQLite"]}]}),
    )
    .await;
    assert_eq!(status, 400, "{body}");
    assert!(body["error"]
        .as_str()
        .unwrap()
        .contains("no pending question"));
    assert!(!app.sandbox().join("notes.txt").exists());
    // The question still takes a good answer.
    let (status, body) = decide_rest(
        &app,
        None,
        &task,
        json!({"decision_type": "approve", "ask_user_answers": [{"answer": ["other"]}]}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
}

#[tokio::test]
async fn a_question_is_answered_while_its_gated_call_is_rejected() {
    let app = spawn_app().await;
    let (task, context, requests) = ask(&app, &format!("{ASK} and write notes.txt: hi")).await;
    let ids: Vec<&str> = requests.iter().map(|r| r["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["call_1", "call_2"]);
    let results = decide(
        &app,
        &task,
        &context,
        json!({"decision_type": "batch",
               "decisions": {"call_1": "approve", "call_2": "deny"},
               "rejection_reasons": {"call_2": "not yet"},
               "ask_user_answers": [{"answer": ["PostgreSQL"]}]}),
    )
    .await;
    assert_eq!(states(&results).last().unwrap(), "completed");
    assert_eq!(answered(&results)[0]["answer"], json!(["PostgreSQL"]));
    assert!(
        !app.sandbox().join("notes.txt").exists(),
        "the rejected write did not run"
    );
    let answer = answer_text(&results);
    assert!(
        answer.contains("You rejected writing notes.txt: \"not yet\"."),
        "{answer}"
    );
}

/// An answer is the person's words to the model, as a message is: the audit does not call an
/// answered question edited (the call ran with its answers added, not with other arguments),
/// and answers longer than a message may be are refused, changing nothing.
#[tokio::test]
async fn answers_are_no_edit_and_are_bounded_like_a_message() {
    let app = spawn_with(|config| config.max_message_bytes = 100).await;
    let (task, _, _) = ask(&app, "ask Anything else?").await;
    let long = "x".repeat(101);
    let (status, body) = decide_rest(
        &app,
        None,
        &task,
        json!({"decision_type": "approve", "ask_user_answers": [{"answer": [long]}]}),
    )
    .await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(
        body["error"],
        "the answers to call_1 are 101 bytes; the limit is 100 bytes"
    );
    assert_eq!(task_state(&app, &task).await, "input-required");

    let (status, body) = decide_rest(
        &app,
        None,
        &task,
        json!({"decision_type": "approve", "ask_user_answers": [{"answer": ["keep it small"]}]}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let call = &body["decision"]["calls"][0];
    assert_eq!(call["verdict"], "approve", "{body}");
    assert_eq!(call["edited"], false, "{body}");
}
