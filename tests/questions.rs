//! Browser tests of question cards: the demo agent's own `ask_user` (single choice, several
//! choices, free text, with a gated call beside it), a reload and an answer from elsewhere, and
//! a kagent 0.10.4 agent's question through the relay, where answering runs every waiting call.
#![cfg(not(target_arch = "wasm32"))]
// Tests fail loudly: unwrapping is how they report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/harness.rs"]
mod harness;
#[path = "support/kagent.rs"]
mod kagent;

use harness::{App, Options};
use serde_json::{json, Value};

const FORM: &str = "[data-testid=question-form]";

fn card(tool: &str) -> String {
    format!("[data-testid=tool-card][data-tool={tool}]")
}

async fn click(app: &App, css: &str) {
    let element = app.wait_for(&format!("{css} shows"), css).await;
    app.wait_until(&format!("{css} is enabled"), || async {
        element.is_enabled().await
    })
    .await;
    element.click().await.unwrap();
}

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
    click(
        &app,
        &format!("{} [data-testid=reject-button]", card("write_file")),
    )
    .await;
    let reason = app
        .wait_for("the reason box opens", "[data-testid=reject-reason]")
        .await;
    reason.send_keys("not yet").await.unwrap();
    click(
        &app,
        &format!("{} [data-testid=reject-confirm]", card("write_file")),
    )
    .await;
    app.color_scheme("light").await;
    app.shot("question-card-light").await;
    app.color_scheme("dark").await;
    app.shot("question-card-dark").await;
    app.color_scheme("light").await;
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
    let agents = format!("[[agents]]\nname = \"k8s-agent\"\nnamespace = \"kagent\"\nremote = {{ url = \"{url}\" }}\n");
    let app = App::start_with(
        "kagent-question",
        Options {
            agents_toml: Some(agents),
            ..Options::default()
        },
    )
    .await;
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
