//! The real Claude Code CLI (npm `@anthropic-ai/claude-code`, pinned in this folder's
//! package-lock.json; `install.sh` installs it) asks Signoff for permission before each of its
//! own tools, with `--permission-prompt-tool mcp__signoff__approve` over MCP's streamable HTTP.
//! It runs offline against `anthropic.py`, a scripted Anthropic Messages endpoint on loopback:
//! the script says which tool the "model" calls, and its log shows what Claude Code sent back.
//! The official SDKs' clients (the Python `mcp` package, in the venv `tests/mcp/install.sh`
//! makes, and npm's `@modelcontextprotocol/sdk`) call an agent's own tool through the same
//! endpoint.

#![allow(clippy::unwrap_used, clippy::expect_used)]

// Shared by every test crate; each uses part of it.
#[allow(dead_code, unused_imports)]
#[path = "../support/mod.rs"]
mod support;

mod elicit;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde_json::{json, Value};
use support::*;
use tokio::io::{AsyncBufReadExt, BufReader};

const INSTALL: &str = "run crates/server/tests/gateway/install.sh (scripts/test.sh does) to \
     install Claude Code and the MCP TypeScript SDK";

/// The agent Claude Code asks: its permission prompts, Read allowed, a Bash command with `rm`
/// denied by a rule, the rest waiting for a person.
const GATE: &str = r#"
[[agents]]
name = "claude-code"
description = "Signs off Claude Code's tools"
serve_mcp = true

[[agents.tools]]
kind = "permission_prompts"
name = "claude-code"
allow = ["Read"]

[[agents.rules]]
tool = "Bash"
action = "deny"
when = { command = { regex = ".*\\brm\\b.*" } }
"#;

fn here() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/gateway")
}

fn claude() -> PathBuf {
    let path = here().join("node_modules/.bin/claude");
    assert!(path.exists(), "{} is missing: {INSTALL}", path.display());
    path
}

/// One `claude -p` run in `cwd`, asking Signoff's MCP endpoint for permission; its JSON
/// result once it exits.
async fn run_claude(app: &TestApp, model: &ScriptedModel, cwd: &Path) -> (i32, Value) {
    let home = tempfile::tempdir().unwrap();
    let config = cwd.join("mcp.json");
    let url = app.url("/api/mcp/default/claude-code");
    let servers = json!({"mcpServers": {"signoff": {"type": "http", "url": url}}});
    std::fs::write(&config, servers.to_string()).unwrap();
    let run = tokio::process::Command::new(claude())
        .current_dir(cwd)
        .env_clear()
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .env("HOME", home.path())
        .env(
            "ANTHROPIC_BASE_URL",
            format!("http://127.0.0.1:{}", model.port),
        )
        .env("ANTHROPIC_API_KEY", "sk-test")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("DISABLE_TELEMETRY", "1")
        .env("DISABLE_AUTOUPDATER", "1")
        .args([
            "-p",
            "do the task",
            "--output-format",
            "json",
            "--strict-mcp-config",
        ])
        .arg("--mcp-config")
        .arg(&config)
        .args(["--permission-prompt-tool", "mcp__signoff__approve"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(Duration::from_secs(120), run)
        .await
        .expect("claude -p ends")
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let result = serde_json::from_str(stdout.trim()).unwrap_or_else(|_| {
        panic!(
            "claude printed no JSON result: {stdout}\nstderr: {}",
            String::from_utf8_lossy(&output.stderr)
        )
    });
    (output.status.code().unwrap_or(-1), result)
}

/// The batch waiting in the inbox, once Claude Code's prompt arrived.
async fn waiting_batch(app: &TestApp) -> Value {
    for _ in 0..600 {
        let (_, body) = app.get("/api/approvals").await;
        if let Some(batch) = body["approvals"].as_array().and_then(|all| all.first()) {
            return batch.clone();
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("Claude Code's permission prompt never waited in the inbox");
}

fn write_turn(path: &Path, content: &str) -> Value {
    json!([
        {"tool_use": {"name": "Write", "input": {"file_path": path, "content": content}}},
        {"text": "finished"}
    ])
}

#[tokio::test]
async fn a_write_waits_in_the_inbox_and_runs_with_the_approvers_edit() {
    let app = std::sync::Arc::new(spawn_with_agents(GATE, |_| {}).await);
    let cwd = tempfile::tempdir().unwrap();
    let target = cwd.path().join("hello.txt");
    let model = ScriptedModel::start(cwd.path(), write_turn(&target, "draft\n")).await;
    let run = tokio::spawn({
        let (app, cwd) = (app.clone(), cwd.path().to_owned());
        async move { run_claude(&app, &model, &cwd).await }
    });
    let batch = waiting_batch(&app).await;
    let call = &batch["calls"][0];
    assert_eq!(call["name"], "Write", "{batch}");
    assert_eq!(call["args"]["content"], "draft\n", "{batch}");
    assert!(!target.exists(), "nothing is written before the sign-off");
    let task = batch["taskId"].as_str().unwrap();
    let id = call["id"].as_str().unwrap();
    let edited = json!({"file_path": target, "content": "reviewed\n"});
    let (status, body) = decide_rest(
        &app,
        None,
        task,
        json!({"decision_type": "approve", "modified_args": {id: edited}}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let (code, result) = run.await.unwrap();
    assert_eq!(code, 0, "{result}");
    assert_eq!(result["permission_denials"], json!([]), "{result}");
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "reviewed\n");
}

#[tokio::test]
async fn a_rejection_with_a_reason_stops_the_write_and_claude_reads_the_reason() {
    let app = std::sync::Arc::new(spawn_with_agents(GATE, |_| {}).await);
    let cwd = tempfile::tempdir().unwrap();
    let target = cwd.path().join("deploy.sh");
    let model = ScriptedModel::start(cwd.path(), write_turn(&target, "rm -rf /\n")).await;
    let model_log = model.log.clone();
    let run = tokio::spawn({
        let (app, cwd) = (app.clone(), cwd.path().to_owned());
        async move {
            let outcome = run_claude(&app, &model, &cwd).await;
            (outcome, model.tool_results())
        }
    });
    let batch = waiting_batch(&app).await;
    let task = batch["taskId"].as_str().unwrap();
    let (status, _) = decide_rest(
        &app,
        None,
        task,
        json!({"decision_type": "deny", "reason": "not a deploy script, please"}),
    )
    .await;
    assert_eq!(status, 200);
    let ((code, result), tool_results) = run.await.unwrap();
    assert_eq!(code, 0, "{result}");
    let denials = result["permission_denials"].as_array().unwrap();
    assert_eq!(denials.len(), 1, "{result}");
    assert_eq!(denials[0]["tool_name"], "Write");
    assert!(!target.exists());
    let told = tool_results.first().unwrap_or_else(|| {
        panic!(
            "no tool result in {}",
            std::fs::read_to_string(&model_log).unwrap()
        )
    });
    assert_eq!(told["is_error"], true, "{told}");
    assert!(
        told["content"]
            .to_string()
            .contains("not a deploy script, please"),
        "{told}"
    );
}

#[tokio::test]
async fn the_agents_rules_settle_prompts_without_asking_anyone() {
    let app = spawn_with_agents(GATE, |_| {}).await;
    a_read_runs_and_an_rm_is_denied_asking_no_one(&app, "Denied by rule").await;
}

/// Claude Code reads a file outside its working folder (asked about, and allowed) and runs a
/// Bash `rm` (denied, the model reading `denial`), and no person is asked about either.
async fn a_read_runs_and_an_rm_is_denied_asking_no_one(app: &TestApp, denial: &str) {
    let cwd = tempfile::tempdir().unwrap();
    let script = json!([
        {"text": "reading", "tool_use": {"name": "Read", "input": {"file_path": "/etc/hostname"}}},
        {"tool_use": {"name": "Bash", "input": {"command": "rm -rf build", "description": "clean"}}},
        {"text": "finished"}
    ]);
    let model = ScriptedModel::start(cwd.path(), script).await;
    let (code, result) = run_claude(app, &model, cwd.path()).await;
    assert_eq!(code, 0, "{result}");
    let denied: Vec<&str> = result["permission_denials"]
        .as_array()
        .unwrap()
        .iter()
        .map(|denial| denial["tool_name"].as_str().unwrap())
        .collect();
    assert_eq!(denied, ["Bash"], "{result}");
    let results = model.tool_results();
    assert_eq!(results.len(), 2, "{results:?}");
    assert_ne!(results[0]["is_error"], true, "Read ran: {:?}", results[0]);
    let told = results[1]["content"].to_string();
    assert!(told.contains(denial), "{told}");
    let (_, inbox) = app.get("/api/approvals").await;
    assert_eq!(inbox["approvals"], json!([]), "no one was asked: {inbox}");
}

/// The agent's own file tools served over MCP, writes waiting for a person.
const FILES: &str = r#"
[[agents]]
name = "files"
serve_mcp = true

[[agents.tools]]
kind = "builtin_files"
require_approval = ["write_file"]
"#;

/// The official MCP SDKs' clients, each a script of this folder.
#[derive(Clone, Copy)]
enum Sdk {
    /// The Python `mcp` package (`mcp_client.py`).
    Python,
    /// npm's `@modelcontextprotocol/sdk` (`mcp_client.mjs`).
    TypeScript,
}

/// An SDK's client calling `tool` through the endpoint of `default/files`: its output lines,
/// the tools it listed, and then (once it is answered) the call's result.
async fn sdk_client_call(
    app: &TestApp,
    sdk: Sdk,
    tool: &str,
    arguments: Value,
) -> tokio::io::Lines<BufReader<tokio::process::ChildStdout>> {
    let mut command = match sdk {
        Sdk::Python => {
            let mut command = tokio::process::Command::new(mcp_python());
            command.arg(here().join("mcp_client.py"));
            command
        }
        Sdk::TypeScript => {
            let script = here().join("mcp_client.mjs");
            let sdk = here().join("node_modules/@modelcontextprotocol/sdk");
            assert!(sdk.exists(), "{} is missing: {INSTALL}", sdk.display());
            let mut command = tokio::process::Command::new("node");
            command.arg(script);
            command
        }
    };
    let mut child = command
        .arg(app.url("/api/mcp/default/files"))
        .arg(tool)
        .arg(arguments.to_string())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let lines = BufReader::new(child.stdout.take().unwrap()).lines();
    // The child ends by itself once it printed its result.
    tokio::spawn(async move { child.wait().await });
    lines
}

async fn next_json(lines: &mut tokio::io::Lines<BufReader<tokio::process::ChildStdout>>) -> Value {
    let line = tokio::time::timeout(Duration::from_secs(60), lines.next_line())
        .await
        .expect("the Python client answers")
        .unwrap()
        .expect("the Python client printed a line");
    serde_json::from_str(&line).unwrap()
}

#[tokio::test]
async fn the_python_sdks_client_runs_an_approved_write_once_and_a_rejected_one_never() {
    an_sdk_client_runs_an_approved_write_once_and_a_rejected_one_never(Sdk::Python).await;
}

#[tokio::test]
async fn the_typescript_sdks_client_runs_an_approved_write_once_and_a_rejected_one_never() {
    an_sdk_client_runs_an_approved_write_once_and_a_rejected_one_never(Sdk::TypeScript).await;
}

async fn an_sdk_client_runs_an_approved_write_once_and_a_rejected_one_never(sdk: Sdk) {
    let app = spawn_with_agents(FILES, |_| {}).await;
    let mut lines = sdk_client_call(
        &app,
        sdk,
        "write_file",
        json!({"path": "a.txt", "content": "one"}),
    )
    .await;
    let listed = next_json(&mut lines).await;
    let tools = listed["tools"].as_array().unwrap();
    assert!(tools.contains(&json!("write_file")), "{listed}");
    // The Python SDK speaks the stateless revision (its `server/discover` probe is answered);
    // the TypeScript SDK of this pin speaks only the handshake revisions.
    let revision = match sdk {
        Sdk::Python => "2026-07-28",
        Sdk::TypeScript => "2025-11-25",
    };
    assert_eq!(listed["revision"], revision, "{listed}");
    assert!(
        !tools.contains(&json!("approve")),
        "no permission prompts here: {listed}"
    );
    let batch = waiting_batch(&app).await;
    assert!(!app.sandbox().join("a.txt").exists());
    decide_rest(
        &app,
        None,
        batch["taskId"].as_str().unwrap(),
        json!({"decision_type": "approve"}),
    )
    .await;
    let answer = next_json(&mut lines).await;
    assert_eq!(answer["result"]["isError"], false, "{answer}");
    assert_eq!(
        std::fs::read_to_string(app.sandbox().join("a.txt")).unwrap(),
        "one"
    );

    let mut lines = sdk_client_call(
        &app,
        sdk,
        "write_file",
        json!({"path": "b.txt", "content": "two"}),
    )
    .await;
    next_json(&mut lines).await;
    let batch = waiting_batch(&app).await;
    let reason = json!({"decision_type": "deny", "reason": "b is frozen"});
    decide_rest(&app, None, batch["taskId"].as_str().unwrap(), reason).await;
    let answer = next_json(&mut lines).await;
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    assert!(
        answer["result"]["text"]
            .as_str()
            .unwrap()
            .contains("b is frozen"),
        "{answer}"
    );
    assert!(!app.sandbox().join("b.txt").exists());
}

#[tokio::test]
async fn the_readmes_python_callback_waits_for_the_sign_off_and_gets_the_edit() {
    let app = spawn_with_agents(GATE, |_| {}).await;
    let asking = tokio::process::Command::new("python3")
        .arg(here().join("ask_over_rest.py"))
        .arg(&app.base)
        .arg("default/claude-code")
        .arg("Bash")
        .arg(json!({"command": "make deploy"}).to_string())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .output();
    let asking = tokio::spawn(asking);
    let batch = waiting_batch(&app).await;
    assert_eq!(batch["calls"][0]["args"], json!({"command": "make deploy"}));
    let id = batch["calls"][0]["id"].as_str().unwrap();
    let edited = json!({"command": "make deploy DRY_RUN=1"});
    let decision = json!({"decision_type": "approve", "modified_args": {id: edited}});
    decide_rest(&app, None, batch["taskId"].as_str().unwrap(), decision).await;
    let output = tokio::time::timeout(Duration::from_secs(60), asking)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    let answer: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(answer["status"], "allowed", "{answer}");
    assert_eq!(answer["arguments"], edited, "{answer}");
}

/// Cedar policies over Claude Code's prompts: Read allowed, a Bash command with `rm` forbidden.
const CEDAR: &str = r#"
@id("reads")
permit (principal, action == Signoff::Action::"call", resource == Signoff::Tool::"Read");

@id("no-rm")
@reason("nothing is removed from a CI box")
forbid (principal, action == Signoff::Action::"call", resource == Signoff::Tool::"Bash")
when { context.args has command && context.args.command like "*rm *" };
"#;

#[tokio::test]
async fn cedar_policies_over_tool_name_and_input_settle_prompts_without_asking_anyone() {
    let agents = "[[agents]]\nname = \"claude-code\"\nserve_mcp = true\n\n\
                  [[agents.tools]]\nkind = \"permission_prompts\"\n";
    let policies = tempfile::tempdir().unwrap();
    std::fs::write(policies.path().join("claude.cedar"), CEDAR).unwrap();
    let dir = policies.path().to_owned();
    let app = spawn_with_agents(agents, |config| config.policies_dir = Some(dir)).await;
    a_read_runs_and_an_rm_is_denied_asking_no_one(&app, "nothing is removed from a CI box").await;
}

/// A raw `tools/call` of `tool` on `default/files` with JSON-RPC id `id`, answered as an event
/// stream: the response once its headers came, which is once the call waits.
async fn raw_call(app: &TestApp, id: u64, tool: &str, arguments: Value) -> reqwest::Response {
    let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                      "params": {"name": tool, "arguments": arguments}});
    post_files_mcp(app, &call).await
}

/// One JSON-RPC message to `default/files`'s MCP endpoint, as a streamable HTTP client posts it.
async fn post_files_mcp(app: &TestApp, message: &Value) -> reqwest::Response {
    app.post("/api/mcp/default/files")
        .header("accept", "application/json, text/event-stream")
        .json(message)
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn a_call_repeated_while_its_twin_waits_joins_it_and_both_get_its_one_result() {
    let app = spawn_with_agents(FILES, |_| {}).await;
    let first = raw_call(
        &app,
        1,
        "write_file",
        json!({"path": "t.txt", "content": "one"}),
    )
    .await;
    let batch = waiting_batch(&app).await;
    // The same call again, its keys in another order: it joins the waiting one.
    let second = raw_call(
        &app,
        2,
        "write_file",
        json!({"content": "one", "path": "t.txt"}),
    )
    .await;
    let (_, inbox) = app.get("/api/approvals").await;
    assert_eq!(inbox["approvals"].as_array().unwrap().len(), 1, "{inbox}");
    let task = batch["taskId"].as_str().unwrap();
    let (status, decided) =
        decide_rest(&app, None, task, json!({"decision_type": "approve"})).await;
    assert_eq!(status, 200, "{decided}");
    for (id, response) in [(1, first), (2, second)] {
        let body = response.text().await.unwrap();
        let answer: Value = serde_json::from_str(
            body.lines()
                .filter_map(|line| line.strip_prefix("data: "))
                .next_back()
                .unwrap(),
        )
        .unwrap();
        assert_eq!(answer["id"], id, "{answer}");
        assert_eq!(answer["result"]["isError"], false, "{answer}");
    }
    assert_eq!(
        std::fs::read_to_string(app.sandbox().join("t.txt")).unwrap(),
        "one"
    );
    let (_, decided) = app.get("/api/approvals?state=decided&limit=10").await;
    assert_eq!(
        decided["decisions"].as_array().unwrap().len(),
        1,
        "one batch: {decided}"
    );
}

#[tokio::test]
async fn a_clients_cancel_notification_cancels_its_waiting_call_which_never_runs() {
    let app = spawn_with_agents(FILES, |_| {}).await;
    let response = raw_call(
        &app,
        7,
        "write_file",
        json!({"path": "c.txt", "content": "x"}),
    )
    .await;
    let batch = waiting_batch(&app).await;
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                        "params": {"requestId": 7, "reason": "the user pressed Escape"}});
    let sent = post_files_mcp(&app, &cancel).await;
    assert_eq!(sent.status(), 202);
    let body = within("the canceled call's answer", response.text())
        .await
        .unwrap();
    assert!(body.contains("did not run"), "{body}");
    let (_, inbox) = app.get("/api/approvals").await;
    assert_eq!(inbox["approvals"], json!([]), "{inbox}");
    let task = batch["taskId"].as_str().unwrap();
    let (status, late) = decide_rest(&app, None, task, json!({"decision_type": "approve"})).await;
    assert_eq!(status, 409, "{late}");
    assert!(!app.sandbox().join("c.txt").exists());
}
