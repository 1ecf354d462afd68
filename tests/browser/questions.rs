//! Browser tests of question cards: the demo agent's own `ask_user` (single choice, several
//! choices, free text, with a gated call beside it), a reload and an answer from elsewhere, and
//! a kagent 0.10.4 agent's question through the relay, where answering runs every waiting call;
//! and agents speaking kagent's HITL extension through the relay, approved, rejected and answered
//! in the extension's shape.

use crate::support::harness::{card, click, reject_with_reason, App, Options};
use crate::support::kagent;
use serde_json::{json, Value};

const FORM: &str = "[data-testid=question-form]";

fn choice(value: &str) -> String {
    format!("[data-testid=question-choice][value=\"{value}\"]")
}

/// Waits for the answers on the question card, opening the group that finished cards fold into.
async fn wait_answers(app: &App, expected: &[&str]) {
    app.wait_until("the answers show on the card", || async {
        for summary in app
            .find_all("details:not([open]) > [data-testid=tool-group-summary]")
            .await
        {
            summary.click().await?;
        }
        Ok(app.texts("[data-testid=answer]").await == expected)
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answer_every_kind_of_question_and_reject_the_write_beside_them() {
    let app = App::start("questions").await;
    app.open_new_chat().await;
    app.send(
        "ask Which database? PostgreSQL / SQLite / other, ask Which features? metrics + tracing \
         and ask Anything else? and write notes.txt: hi",
    )
    .await;
    app.wait_for("the question form shows", FORM).await;
    assert_eq!(app.find_all("[data-testid=question]").await.len(), 3);
    // The composer speaks of answering, not of approving.
    let placeholder = app
        .attribute("[data-testid=composer-input]", "placeholder")
        .await;
    assert_eq!(
        placeholder,
        "Answer the question above, or say what to do instead"
    );
    // One Submit decides the pause: no batch bar, and the write is decided on its own card.
    assert!(app.find_all("[data-testid=batch-bar]").await.is_empty());
    app.wait_for_text(
        "[data-testid=question-notice]",
        "Decide write_file on its card",
    )
    .await;
    // Submit before answering says what is missing and sends nothing.
    click(&app, "[data-testid=question-submit]").await;
    app.wait_for_text(
        "[data-testid=question-error]",
        "no answer to the question \"Which database?\"",
    )
    .await;
    click(&app, &choice("PostgreSQL")).await;
    click(&app, &choice("SQLite")).await;
    click(&app, &choice("metrics")).await;
    click(&app, &choice("tracing")).await;
    let text = app.find("[data-testid=question-text]").await.unwrap();
    text.send_keys("keep it small").await.unwrap();
    reject_with_reason(&app, "write_file", "not yet").await;
    app.shots("question-card").await;
    click(&app, "[data-testid=question-submit]").await;
    app.wait_for_status("ready").await;
    app.wait_for_text(
        "[data-testid=message-agent]",
        "You answered \"Which database?\": SQLite.",
    )
    .await;
    app.wait_for_text(
        "[data-testid=message-agent]",
        "You rejected writing notes.txt: \"not yet\".",
    )
    .await;
    wait_answers(&app, &["SQLite", "metrics, tracing", "keep it small"]).await;
    // An answered question reads as answered, with no "Approved" beside it.
    let question = card("ask_user");
    app.wait_for_text(&format!("{question} [data-testid=tool-status]"), "Answered")
        .await;
    let chips = app
        .texts(&format!("{question} [data-testid=decision-chip]"))
        .await;
    assert!(chips.is_empty(), "{chips:?}");
    assert!(!app.sandbox("notes.txt").exists());
    app.shot("question-answered").await;
    app.assert_no_errors().await;
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reload_restores_a_waiting_question_and_an_answer_from_elsewhere_shows() {
    let app = App::start("question-reload").await;
    app.open_new_chat().await;
    app.send("ask Which database? PostgreSQL / SQLite / other")
        .await;
    app.wait_for("the question form shows", FORM).await;
    app.driver.refresh().await.unwrap();
    app.wait_for("the question form shows again", FORM).await;
    app.wait_for_status("approval").await;
    // Answered through the REST API, as another tab or client would.
    let session = app.session_id().await;
    let task = app.stored_tasks(&session).await[0]["id"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let answer = app
        .http
        .post(format!("{}/api/approvals/{task}", app.base))
        .json(&json!({"decision_type": "approve", "ask_user_answers": [{"answer": ["SQLite"]}]}))
        .send()
        .await
        .unwrap();
    assert!(answer.status().is_success(), "{}", answer.status());
    app.driver.refresh().await.unwrap();
    wait_answers(&app, &["SQLite"]).await;
    app.wait_for_status("ready").await;
    assert!(app.find_all(FORM).await.is_empty());
    app.assert_no_errors().await;
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kagent_question_beside_a_write_says_the_write_runs_and_sends_kagents_answer() {
    let (url, received) = kagent::fake_kagent(
        "o1_ask_user_and_write_interrupt.sse",
        "o2_answer_and_approve.sse",
    )
    .await;
    let agents = kagent::agent_toml("k8s-agent", &url);
    let app = App::start_with("kagent-question", Options::with_agents(agents)).await;
    app.open_new_chat_of("/agents/kagent/k8s-agent/chat").await;
    app.send("Write a greeting to notes_o.txt.").await;
    app.wait_for("the question form shows", FORM).await;
    // kagent runs the write with any answer: no reject of its own is offered, and the card
    // says so before Submit.
    app.wait_for_text(
        "[data-testid=question-notice]",
        "Submit also runs write_file",
    )
    .await;
    app.wait_for(
        "the write says it runs with the answers",
        &format!("{} [data-testid=runs-with-answers]", card("write_file")),
    )
    .await;
    assert!(app
        .find_all(&format!(
            "{} [data-testid=reject-button]",
            card("write_file")
        ))
        .await
        .is_empty());
    click(&app, &choice("hello")).await;
    app.shot("kagent-question").await;
    click(&app, "[data-testid=question-submit]").await;
    app.wait_for_text(
        "[data-testid=message-agent]",
        "Question answered and write handled",
    )
    .await;
    // kagent's reply quotes the tool results its model saw: the answer is among them.
    let reply = app.texts("[data-testid=message-agent]").await.join("\n");
    assert!(reply.contains("hello"), "{reply}");
    wait_answers(&app, &["hello"]).await;

    let received = received.lock().map(|seen| seen.clone()).unwrap_or_default();
    assert_eq!(received.len(), 2, "{received:?}");
    let parts = received[1]["params"]["message"]["parts"].clone();
    assert_eq!(
        parts[0]["data"],
        json!({"decision_type": "approve", "ask_user_answers": [{"answer": ["hello"]}]})
    );
    assert_eq!(parts[1]["text"], Value::from("Answered questions"));
    app.assert_no_errors().await;
    app.finish().await;
}

/// The documented response a stand-in speaking kagent's HITL extension expects (its
/// `*.request.json`), as the message fields the UI must send alike.
fn documented_response(name: &str) -> Value {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("crates/protocol/tests/fixtures/kagent-hitl-v1")
        .join(name);
    let body: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    body["params"]["message"].clone()
}

/// The fields of a sent message that the extension reads.
fn extension_fields(message: &Value) -> Value {
    json!({
        "extensions": message["extensions"],
        "metadata": message["metadata"],
        "taskId": message["taskId"],
        "contextId": message["contextId"],
        "parts": message["parts"],
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kagents_hitl_extension_through_the_relay_approve_reject_and_answer() {
    let uri = "https://kagent.dev/extensions/hitl/v1";
    let (k8s_url, k8s_received, k8s_heads) = kagent::fake_kagent_hitl(
        "p1_tool_approval_request.sse",
        "p2_tool_approval_resume.sse",
    )
    .await;
    let (db_url, db_received, db_heads) =
        kagent::fake_kagent_hitl("q1_ask_user_request.sse", "q2_ask_user_resume.sse").await;
    let agents = format!(
        "{}\n{}",
        kagent::agent_toml("k8s-agent", &k8s_url),
        kagent::agent_toml("db-agent", &db_url)
    );
    let app = App::start_with("kagent-extension", Options::with_agents(agents)).await;

    // Two approvals: reject one with a reason, approve the other.
    app.open_new_chat_of("/agents/kagent/k8s-agent/chat").await;
    app.send("Clean up /tmp/old and restart the api.").await;
    app.wait_for("the batch bar shows", "[data-testid=batch-bar]")
        .await;
    // The extension carries no edited arguments: no edit is offered.
    assert!(app
        .find_all("[data-testid=edit-button]:not([hidden])")
        .await
        .is_empty());
    click(
        &app,
        &format!(
            "{} [data-testid=approve-button]",
            card("restart_deployment")
        ),
    )
    .await;
    reject_with_reason(
        &app,
        "delete_file",
        "The file is still used by the migration job",
    )
    .await;
    app.shot("kagent-extension-approvals").await;
    click(&app, "[data-testid=submit-decisions]").await;
    app.wait_for_text("[data-testid=message-agent]", "Restarted production/api")
        .await;
    app.wait_for_status("ready").await;
    let received = k8s_received.lock().map(|seen| seen.clone()).unwrap();
    assert_eq!(received.len(), 2, "{received:?}");
    assert_eq!(
        extension_fields(&received[1]["params"]["message"]),
        extension_fields(&documented_response(
            "p2_tool_approval_response.request.json"
        ))
    );

    // A question: answered, with no reject offered (the extension has none for a question).
    app.open_new_chat_of("/agents/kagent/db-agent/chat").await;
    app.send("Set up a database for the service.").await;
    app.wait_for("the question form shows", FORM).await;
    assert_eq!(app.find_all("[data-testid=question]").await.len(), 3);
    // The composer speaks of answering, not of approving.
    let placeholder = app
        .attribute("[data-testid=composer-input]", "placeholder")
        .await;
    assert_eq!(
        placeholder,
        "Answer the question above, or say what to do instead"
    );
    assert!(app
        .find_all("[data-testid=question-reject]:not([hidden])")
        .await
        .is_empty());
    click(&app, &choice("PostgreSQL")).await;
    click(&app, &choice("Authentication")).await;
    click(&app, &choice("Caching")).await;
    let text = app.find("[data-testid=question-text]").await.unwrap();
    text.send_keys("Use the existing backup policy")
        .await
        .unwrap();
    click(&app, "[data-testid=question-submit]").await;
    app.wait_for_text("[data-testid=message-agent]", "Setting up PostgreSQL")
        .await;
    wait_answers(
        &app,
        &[
            "PostgreSQL",
            "Authentication, Caching",
            "Use the existing backup policy",
        ],
    )
    .await;
    let received = db_received.lock().map(|seen| seen.clone()).unwrap();
    assert_eq!(received.len(), 2, "{received:?}");
    assert_eq!(
        extension_fields(&received[1]["params"]["message"]),
        extension_fields(&documented_response("q2_ask_user_response.request.json"))
    );

    // Every request through the relay activated the extension, in v1.0's header.
    for heads in [&k8s_heads, &db_heads] {
        let heads = heads.lock().map(|seen| seen.clone()).unwrap();
        assert_eq!(heads.len(), 2);
        for head in heads {
            assert!(head.contains(&format!("\na2a-extensions: {uri}")), "{head}");
            assert!(head.contains("\na2a-version: 1.0"), "{head}");
        }
    }
    // The relay passes the remote's echo of the activated extension back.
    let echoed = app
        .http
        .post(format!("{}/api/a2a/kagent/db-agent", app.base))
        .header("A2A-Version", "1.0")
        .header("A2A-Extensions", uri)
        .json(
            &json!({"jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage",
            "params": {"message": {"messageId": "m-echo", "role": "ROLE_USER",
                                   "parts": [{"text": "hello"}]}}}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(
        echoed
            .headers()
            .get("a2a-extensions")
            .and_then(|value| value.to_str().ok()),
        Some(uri)
    );
    app.assert_no_errors().await;
    app.finish().await;
}
