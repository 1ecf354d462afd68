//! MCP servers that ask back while a tool runs: `asking_server.py` (the Python `mcp` SDK)
//! elicits a form and a URL over stdio (`elicitation/create` mid-call), and answers
//! `input_required` over streamable HTTP at 2026-07-28. Each question is a card of its own
//! (`elicitation`), answered through the same decision as every card.

use std::path::Path;

use serde_json::{json, Value};

use super::support::*;
use super::{decide_paused, free_port, responses, text_of};

fn asking_server() -> String {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/asking_server.py");
    script.display().to_string()
}

/// The demo agent with the asking server over stdio; `extra` goes in the agent's table.
fn stdio_agent(extra: &str) -> String {
    format!(
        r#"
[[agents]]
name = "demo"
{extra}

[[agents.tools]]
kind = "mcp_stdio"
name = "asking"
command = "{python}"
args = ["{script}", "stdio"]
"#,
        python = mcp_python().display(),
        script = asking_server(),
    )
}

/// The one card of a paused stream's interrupt.
fn the_card(paused: &[Value]) -> Value {
    assert_eq!(
        states(paused).last().unwrap(),
        "input-required",
        "{paused:?}"
    );
    let interrupt = &data_parts(paused, "interrupt_data")[0];
    let requests = interrupt["action_requests"].as_array().unwrap();
    assert_eq!(requests.len(), 1, "{requests:?}");
    requests[0].clone()
}

fn answers(values: &[&[&str]]) -> Value {
    json!({
        "decision_type": "approve",
        "ask_user_answers": values.iter().map(|answer| json!({"answer": answer})).collect::<Vec<_>>(),
    })
}

#[tokio::test]
async fn a_form_is_a_card_whose_checked_answers_reach_the_server() {
    let app = spawn_with_agents(&stdio_agent(""), |_| {}).await;
    let paused = say(&app, "read form.txt").await;
    let card = the_card(&paused);
    assert_eq!(card["name"], "elicitation");
    assert_eq!(card["server"], "asking");
    assert_eq!(card["kind"], "question", "answered like ask_user: {card}");
    assert_eq!(card["args"]["tool"], "read_file");
    assert_eq!(card["args"]["message"], "Where should the report go?");
    let questions: Vec<&str> = card["args"]["questions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|question| question["question"].as_str().unwrap())
        .collect();
    // In the server's order, titled as the server titles them.
    assert_eq!(questions, ["Email", "Copies", "Urgent", "Format"]);
    assert_eq!(card["args"]["questions"][1]["kind"], "integer");
    assert_eq!(
        card["args"]["questions"][2]["choices"],
        json!(["Yes", "No"])
    );
    // Pending while the call runs: the call that asked has started.
    let calls = data_parts(&paused, "function_call");
    assert!(calls
        .iter()
        .any(|call| call["id"] == card["args"]["call_id"]));

    let (task, context) = (task_id(&paused), context_id(&paused));
    // A value the schema refuses changes nothing.
    let refused = decision_events(
        &app,
        &task,
        &context,
        answers(&[&["ada@example.com"], &["9"], &["Yes"], &["csv"]]),
    )
    .await;
    let error = refused[0]["error"]["message"].as_str().unwrap_or_default();
    assert!(error.contains("at most 5"), "{refused:?}");
    assert_eq!(task_state(&app, &task).await, "input-required");

    let resumed = decide_paused(
        &app,
        &paused,
        answers(&[&["ada@example.com"], &["2"], &["Yes"], &["csv"]]),
    )
    .await;
    assert_eq!(states(&resumed).last().unwrap(), "completed", "{resumed:?}");
    let result = responses(&resumed)
        .into_iter()
        .find(|response| response["name"] == "read_file")
        .expect("read_file's result");
    let text = text_of(&result);
    let sent: Value = serde_json::from_str(text.trim_start_matches("accepted ")).unwrap();
    assert_eq!(
        sent,
        json!({"email": "ada@example.com", "copies": 2, "urgent": true, "format": "csv"})
    );
    app.stop().await;
}

#[tokio::test]
async fn a_url_is_offered_a_rejection_declines_and_a_secret_form_is_refused() {
    let app = spawn_with_agents(&stdio_agent(""), |_| {}).await;
    let paused = say(&app, "read link.txt").await;
    let card = the_card(&paused);
    assert_eq!(card["args"]["mode"], "url");
    assert_eq!(
        card["args"]["url"],
        "https://login.example.com/authorize?client=7"
    );
    assert!(
        card.get("kind").is_none(),
        "a URL is approved, not answered"
    );
    let edited = decision_events(
        &app,
        &task_id(&paused),
        &context_id(&paused),
        json!({"decision_type": "approve", "modified_args": {
            card["id"].as_str().unwrap(): {"url": "https://elsewhere.example"}}}),
    )
    .await;
    assert!(
        edited[0]["error"]["message"]
            .as_str()
            .is_some_and(|message| message.contains("not edited")),
        "{edited:?}"
    );
    let resumed = decide_paused(&app, &paused, json!({"decision_type": "reject"})).await;
    let result = responses(&resumed)
        .into_iter()
        .find(|response| response["name"] == "read_file")
        .expect("read_file's result");
    assert_eq!(text_of(&result), "decline");

    // A form asking for a password never becomes a card: the server hears why.
    let refused = say(&app, "read secret.txt").await;
    assert_eq!(states(&refused).last().unwrap(), "completed", "{refused:?}");
    let result = &responses(&refused)[0];
    let text = text_of(result);
    assert!(text.contains("URL mode"), "{text}");
    app.stop().await;
}

#[tokio::test]
async fn an_unanswered_question_is_cancelled_at_its_deadline() {
    let app = spawn_with_agents(&stdio_agent(r#"approval_timeout = "2s""#), |_| {}).await;
    let paused = say(&app, "read link.txt").await;
    the_card(&paused);
    let task = task_id(&paused);
    eventually("the question to expire and the call to finish", || async {
        (task_state(&app, &task).await == "completed").then_some(())
    })
    .await;
    let got = app
        .rpc(None, request("tasks/get", json!({"id": task})))
        .await;
    let history = got["result"]["history"].to_string();
    assert!(
        history.contains(r#""text":"cancel""#),
        "the server was told the question was cancelled: {history}"
    );
    app.stop().await;
}

/// The demo agent with the asking server over streamable HTTP on `port` (2026-07-28).
fn http_agent(port: u16) -> String {
    format!(
        r#"
[[agents]]
name = "demo"

[[agents.tools]]
kind = "mcp_http"
name = "asking"
url = "http://127.0.0.1:{port}/mcp"
"#
    )
}

async fn start_http(port: u16) -> tokio::process::Child {
    let child = tokio::process::Command::new(mcp_python())
        .arg(asking_server())
        .arg(port.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    eventually("the asking server to listen", || async {
        tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .ok()
            .map(drop)
    })
    .await;
    child
}

#[tokio::test]
async fn input_required_is_asked_then_retried_with_the_answers_and_the_state_echoed() {
    let port = free_port();
    let _server = start_http(port).await;
    let app = spawn_with_agents(&http_agent(port), |_| {}).await;
    let paused = say(&app, "read rounds.txt").await;
    let card = the_card(&paused);
    assert_eq!(card["args"]["message"], "Archive the old reports too?");
    let resumed = decide_paused(&app, &paused, answers(&[&["Yes"]])).await;
    let result = responses(&resumed)
        .into_iter()
        .find(|response| response["name"] == "read_file")
        .expect("read_file's result");
    assert_eq!(
        text_of(&result),
        r#"state round-1; answers {"confirm": {"action": "accept", "content": {"archive": true}}}"#,
        "the SDK unseals the state only if it came back unchanged"
    );

    // A server that asks again and again is stopped after ten rounds, with a clear error.
    let mut paused = say(&app, "read loop.txt").await;
    for _round in 0..10 {
        the_card(&paused);
        paused = decide_paused(&app, &paused, answers(&[&["No"]])).await;
    }
    assert_eq!(states(&paused).last().unwrap(), "completed", "{paused:?}");
    let result = responses(&paused)
        .into_iter()
        .find(|response| response["name"] == "read_file")
        .expect("read_file's result");
    assert!(
        text_of(&result).contains("asked for input 10 times"),
        "{result}"
    );
    app.stop().await;
}
