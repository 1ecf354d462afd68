//! The gateway passes an upstream server's questions both ways: a call through the gateway
//! whose server elicits (`tests/mcp/asking_server.py`, the Python SDK's MCPServer, over stdio)
//! asks the gateway's client too when it offered elicitation (`elicit_client.mjs`, the
//! TypeScript SDK's client), and the question is in Signoff's inbox all the same. The first
//! answer wins: the client's closes the inbox copy (audited on channel `mcp_client`), a
//! person's withdraws the client's request (`notifications/cancelled`). A client that offered
//! nothing gets the inbox alone. A call the gate allows at once has no task and no inbox copy:
//! its questions go to the client alone, and are refused for a client that offered nothing.
//! A 2026-07-28 client (`elicit_client.py`, the Python SDK's client) is asked by an
//! `input_required` answer, and its retry brings the answer.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, BufReader};

use super::support::*;
use super::{here, INSTALL};

type Lines = tokio::io::Lines<BufReader<tokio::process::ChildStdout>>;

/// An agent served over MCP whose `read_file` is the asking server's, held for a sign-off
/// first (so it runs in a task, whose questions the inbox shows).
fn asking_agent() -> String {
    asking_agent_requiring(r#"["read_file"]"#)
}

/// The asking agent whose tools `require_approval` names (a TOML list).
fn asking_agent_requiring(require_approval: &str) -> String {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/asking_server.py");
    format!(
        r#"
[[agents]]
name = "asker"
serve_mcp = true

[[agents.tools]]
kind = "mcp_stdio"
name = "asking"
command = "{python}"
args = ["{script}", "stdio"]
require_approval = {require_approval}
"#,
        python = mcp_python().display(),
        script = script.display(),
    )
}

/// `elicit_client.mjs` (the TypeScript SDK, a handshake revision) calling `read_file(path)` on
/// the asking agent, answering questions as `answer` says.
fn client_call(app: &TestApp, path: &str, answer: &str) -> Lines {
    let sdk = here().join("node_modules/@modelcontextprotocol/sdk");
    assert!(sdk.exists(), "{} is missing: {INSTALL}", sdk.display());
    let mut node = tokio::process::Command::new("node");
    node.arg(here().join("elicit_client.mjs"));
    read_through(node, app, path, answer)
}

/// `elicit_client.py` (the Python SDK, 2026-07-28) calling `read_file(path)` on the asking
/// agent, accepting each question with the form content `answer`.
fn stateless_client_call(app: &TestApp, path: &str, answer: &str) -> Lines {
    let mut python = tokio::process::Command::new(mcp_python());
    python.arg(here().join("elicit_client.py"));
    read_through(python, app, path, answer)
}

/// `client` (a program and its script) calling `read_file(path)` on the asking agent; its
/// printed lines.
fn read_through(
    mut client: tokio::process::Command,
    app: &TestApp,
    path: &str,
    answer: &str,
) -> Lines {
    let mut child = client
        .arg(app.url("/api/mcp/default/asker"))
        .arg("read_file")
        .arg(json!({"path": path}).to_string())
        .arg(answer)
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let lines = BufReader::new(child.stdout.take().unwrap()).lines();
    tokio::spawn(async move { child.wait().await });
    lines
}

async fn next_line(lines: &mut Lines) -> Value {
    let line = tokio::time::timeout(Duration::from_secs(60), lines.next_line())
        .await
        .expect("the client answers")
        .unwrap()
        .expect("the client printed a line");
    serde_json::from_str(&line).unwrap()
}

/// The pending batch in the inbox whose one call is named `name`.
async fn pending(app: &TestApp, name: &str) -> Value {
    eventually(&format!("a pending {name} in the inbox"), || async {
        let (_, body) = app.get("/api/approvals").await;
        body["approvals"]
            .as_array()?
            .iter()
            .find(|batch| batch["calls"][0]["name"] == name)
            .cloned()
    })
    .await
}

/// Approves the held `read_file`, so it runs and its server asks.
async fn approve_the_read(app: &TestApp) {
    let held = pending(app, "read_file").await;
    let task = held["taskId"].as_str().unwrap();
    let (status, body) = decide_rest(app, None, task, json!({"decision_type": "approve"})).await;
    assert_eq!(status, 200, "{body}");
}

/// What the asking server's form sends back, as the server quotes it.
const REPORT: &str =
    r#"{"email": "ada@example.com", "copies": 2, "urgent": true, "format": "csv"}"#;

fn report_sent(result: &Value) -> Value {
    let text = result["result"]["text"].as_str().unwrap();
    let sent = text
        .strip_prefix("accepted ")
        .unwrap_or_else(|| panic!("the form was accepted: {result}"));
    serde_json::from_str(sent).unwrap()
}

/// The client was asked the asking server's form and answered it with [`REPORT`]: the upstream
/// got that answer, and the inbox copy is closed, decided by the client's person on channel
/// `mcp_client`.
async fn the_client_answered_the_form(app: &TestApp, lines: &mut Lines) {
    let elicited = next_line(lines).await;
    assert_eq!(
        elicited["elicited"]["message"], "Where should the report go?",
        "{elicited}"
    );
    assert_eq!(elicited["elicited"]["mode"], "form");
    let result = next_line(lines).await;
    assert_eq!(result["result"]["isError"], false, "{result}");
    assert_eq!(
        report_sent(&result),
        serde_json::from_str::<Value>(REPORT).unwrap()
    );
    let (_, body) = app.get("/api/approvals").await;
    assert_eq!(body["approvals"], json!([]), "{body}");
    let (_, decided) = app.get("/api/approvals?state=decided").await;
    let answered = decided["decisions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|decision| decision["calls"][0]["name"] == "elicitation")
        .cloned()
        .unwrap_or_else(|| panic!("the question's decision: {decided}"));
    assert_eq!(answered["channel"], "mcp_client", "{answered}");
    assert_eq!(answered["calls"][0]["verdict"], "approve", "{answered}");
}

#[tokio::test]
async fn the_clients_answer_reaches_the_upstream_and_closes_the_inbox_copy() {
    let app = spawn_with_agents(&asking_agent(), |_| {}).await;
    let mut lines = client_call(&app, "form.txt", REPORT);
    let listed = next_line(&mut lines).await;
    assert_eq!(
        listed["session"], true,
        "a client that offered elicitation gets a session: {listed}"
    );
    // The question's inbox copy is not looked for while it waits: a client that answers at once
    // may close it before any poll would see it.
    approve_the_read(&app).await;
    the_client_answered_the_form(&app, &mut lines).await;
    app.stop().await;
}

#[tokio::test]
async fn a_person_who_answers_first_withdraws_the_clients_request_and_the_upstream_hears_once() {
    let app = spawn_with_agents(&asking_agent(), |_| {}).await;
    let mut lines = client_call(&app, "form.txt", "wait");
    next_line(&mut lines).await;
    approve_the_read(&app).await;
    let elicited = next_line(&mut lines).await;
    assert!(elicited.get("elicited").is_some(), "{elicited}");
    let question = pending(&app, "elicitation").await;
    let task = question["taskId"].as_str().unwrap();
    let answers = json!({"decision_type": "approve", "ask_user_answers": [
        {"answer": ["grace@example.com"]}, {"answer": ["3"]}, {"answer": ["No"]}, {"answer": ["pdf"]}]});
    let (status, body) = decide_rest(&app, None, task, answers).await;
    assert_eq!(status, 200, "{body}");
    let cancelled = next_line(&mut lines).await;
    assert!(
        cancelled.get("cancelled").is_some(),
        "the client's request is withdrawn: {cancelled}"
    );
    let result = next_line(&mut lines).await;
    assert_eq!(
        report_sent(&result),
        json!({"email": "grace@example.com", "copies": 3, "urgent": false, "format": "pdf"}),
        "the upstream got the person's answer"
    );
    let (_, decided) = app.get("/api/approvals?state=decided").await;
    let channels: Vec<&Value> = decided["decisions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|decision| &decision["channel"])
        .collect();
    assert_eq!(channels, [&json!("rest"), &json!("rest")], "{decided}");
    app.stop().await;
}

#[tokio::test]
async fn a_client_that_offered_no_elicitation_leaves_the_question_to_the_inbox() {
    let app = spawn_with_agents(&asking_agent(), |_| {}).await;
    let mut lines = client_call(&app, "link.txt", "none");
    let listed = next_line(&mut lines).await;
    assert_eq!(listed["session"], false, "{listed}");
    approve_the_read(&app).await;
    let question = pending(&app, "elicitation").await;
    assert_eq!(question["calls"][0]["args"]["mode"], "url", "{question}");
    let task = question["taskId"].as_str().unwrap();
    let (status, body) = decide_rest(&app, None, task, json!({"decision_type": "approve"})).await;
    assert_eq!(status, 200, "{body}");
    // The next line is the result: the client was never asked.
    let result = next_line(&mut lines).await;
    assert_eq!(result["result"]["text"], "accept", "{result}");
    app.stop().await;
}

#[tokio::test]
async fn a_call_allowed_at_once_puts_its_servers_question_to_the_client_alone() {
    let app = spawn_with_agents(&asking_agent_requiring("[]"), |_| {}).await;
    let mut lines = client_call(&app, "form.txt", REPORT);
    assert_eq!(next_line(&mut lines).await["session"], true);
    let elicited = next_line(&mut lines).await;
    assert_eq!(
        elicited["elicited"]["message"], "Where should the report go?",
        "{elicited}"
    );
    let result = next_line(&mut lines).await;
    assert_eq!(
        report_sent(&result),
        serde_json::from_str::<Value>(REPORT).unwrap()
    );
    // No task held it, so nothing of it is in the inbox, pending or decided.
    let (_, pending) = app.get("/api/approvals").await;
    assert_eq!(pending["approvals"], json!([]), "{pending}");
    let (_, decided) = app.get("/api/approvals?state=decided").await;
    assert_eq!(decided["decisions"], json!([]), "{decided}");
    app.stop().await;
}

#[tokio::test]
async fn a_call_allowed_at_once_for_a_client_that_offered_nothing_has_its_question_refused() {
    let app = spawn_with_agents(&asking_agent_requiring("[]"), |_| {}).await;
    let mut lines = client_call(&app, "form.txt", "none");
    assert_eq!(next_line(&mut lines).await["session"], false);
    // The server's question is answered with an error saying why, which ends its tool.
    let result = next_line(&mut lines).await;
    assert_eq!(result["result"]["isError"], true, "{result}");
    let text = result["result"]["text"].as_str().unwrap();
    assert!(text.contains("nobody in Signoff can answer"), "{result}");
    app.stop().await;
}

#[tokio::test]
async fn a_2026_07_28_client_is_asked_by_input_required_and_its_retry_answers_the_upstream() {
    let app = spawn_with_agents(&asking_agent(), |_| {}).await;
    let mut lines = stateless_client_call(&app, "form.txt", REPORT);
    assert_eq!(next_line(&mut lines).await["revision"], "2026-07-28");
    approve_the_read(&app).await;
    // The retry brought the answer.
    the_client_answered_the_form(&app, &mut lines).await;
    app.stop().await;
}
