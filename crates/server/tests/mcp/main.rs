//! MCP tool sources end to end: a real server on port 0 with the scripted model, whose agent
//! `default/demo` gets its tools from real MCP servers nobody here wrote
//! (@modelcontextprotocol/server-filesystem over stdio) or from a tiny server on the Python
//! `mcp` SDK (streamable HTTP and legacy SSE). `install.sh` in this folder installs them; the
//! tests fail, saying so, when they are missing.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[allow(dead_code)] // shared with tests/api, which uses all of it
#[path = "../api/helpers.rs"]
mod helpers;

use std::path::{Path, PathBuf};
use std::time::Duration;

use helpers::*;
use serde_json::{json, Value};

const INSTALL: &str =
    "run crates/server/tests/mcp/install.sh (scripts/test.sh does) to install the MCP test servers";

fn filesystem_server() -> PathBuf {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/mcp/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js");
    assert!(path.exists(), "{} is missing: {INSTALL}", path.display());
    path
}

fn python() -> PathBuf {
    let venv = std::env::var_os("SIGNOFF_MCP_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(&std::env::var("HOME").unwrap()).join(".cache/signoff/mcp-venv")
        });
    let python = venv.join("bin/python");
    assert!(
        python.exists(),
        "{} is missing: {INSTALL}",
        python.display()
    );
    python
}

/// A folder for server-filesystem with one file in it.
fn shared_folder() -> tempfile::TempDir {
    let folder = tempfile::tempdir().unwrap();
    std::fs::write(folder.path().join("readme.txt"), "MCP says hello").unwrap();
    folder
}

/// An agents file whose `default/demo` agent uses server-filesystem on `folder` over stdio.
/// The server runs in `folder`, so the scripted model's relative paths land there; `sh` writes
/// its pid first (it then becomes the server), so tests can kill it.
fn filesystem_agent(folder: &Path) -> String {
    format!(
        r#"
[[agents]]
name = "demo"
description = "Files over MCP"

[[agents.tools]]
kind = "mcp_stdio"
name = "fs"
command = "sh"
args = ["-c", "echo $$ > server.pid; exec node {server} {folder}"]
cwd = "{folder}"
tools = ["list_directory", "read_file", "write_file"]
require_approval = ["write_file"]
"#,
        server = filesystem_server().display(),
        folder = folder.display(),
    )
}

async fn spawn_with_agents(agents: &str) -> TestApp {
    let data_dir = tempfile::tempdir().unwrap();
    let file = data_dir.path().join("agents.toml");
    std::fs::write(&file, agents).unwrap();
    spawn_in(data_dir, |config| config.agents_file = Some(file)).await
}

/// A chat turn through `message/stream`; returns the v0.3 results.
async fn say(app: &TestApp, text: &str) -> Vec<Value> {
    let body = request(
        "message/stream",
        json!({"message": message_v03(text, None, None)}),
    );
    results(&app.stream(None, body).await)
}

/// Answers a paused task with a decision DataPart (docs/wire.md, Decision message).
async fn decide(app: &TestApp, paused: &[Value], data: Value, text: &str) -> Vec<Value> {
    let task = task_id(paused);
    let context = paused[0]["contextId"].as_str().unwrap();
    let message = json!({
        "kind": "message", "role": "user", "messageId": uuid::Uuid::new_v4().to_string(),
        "taskId": task, "contextId": context,
        "parts": [{"kind": "data", "data": data}, {"kind": "text", "text": text}],
    });
    results(
        &app.stream(None, request("message/stream", json!({"message": message})))
            .await,
    )
}

fn responses(results: &[Value]) -> Vec<Value> {
    data_parts(results, "function_response")
}

fn text_of(response: &Value) -> String {
    response["response"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test]
async fn filesystem_over_stdio_lists_reads_and_writes_through_the_agent() {
    let folder = shared_folder();
    let app = spawn_with_agents(&filesystem_agent(folder.path())).await;

    let listed = say(&app, "list files").await;
    assert_eq!(states(&listed).last().unwrap(), "completed");
    let calls = data_parts(&listed, "function_call");
    assert_eq!(calls[0]["name"], "list_directory");
    let response = &responses(&listed)[0];
    assert_eq!(response["response"]["isError"], false, "{response}");
    assert!(
        text_of(response).contains("[FILE] readme.txt"),
        "{response}"
    );

    let read = say(&app, "read readme.txt").await;
    assert_eq!(text_of(&responses(&read)[0]), "MCP says hello");
    assert!(
        answer_text(&read).contains("MCP says hello"),
        "{}",
        answer_text(&read)
    );

    // The agent card and listing show the server's tools, with its name as their source.
    let (_, agents) = app.get("/api/agents").await;
    let tools = agents["agents"][0]["tools"].as_array().unwrap();
    let names: Vec<&str> = tools
        .iter()
        .map(|tool| tool["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["read_file", "write_file", "list_directory"]);
    assert!(tools.iter().all(|tool| tool["source"] == "fs"));
    app.stop().await;
}

#[tokio::test]
async fn write_file_waits_for_approval_then_really_writes() {
    let folder = shared_folder();
    let app = spawn_with_agents(&filesystem_agent(folder.path())).await;
    let written = folder.path().join("notes.txt");

    let paused = say(&app, "write notes.txt: signed off").await;
    assert_eq!(states(&paused).last().unwrap(), "input-required");
    let interrupt = &data_parts(&paused, "interrupt_data")[0];
    let request = &interrupt["action_requests"][0];
    assert_eq!(request["name"], "write_file");
    assert_eq!(
        request["server"], "fs",
        "the action request names the MCP server"
    );
    assert_eq!(
        request["args"],
        json!({"path": "notes.txt", "content": "signed off"})
    );
    assert!(!written.exists(), "nothing runs before the decision");

    let resumed = decide(
        &app,
        &paused,
        json!({"decision_type": "approve"}),
        "Approved",
    )
    .await;
    assert_eq!(states(&resumed).last().unwrap(), "completed");
    assert_eq!(responses(&resumed)[0]["response"]["isError"], false);
    assert_eq!(std::fs::read_to_string(&written).unwrap(), "signed off");
    app.stop().await;
}

#[tokio::test]
async fn rejected_write_leaves_no_file() {
    let folder = shared_folder();
    let app = spawn_with_agents(&filesystem_agent(folder.path())).await;

    let paused = say(&app, "write secret.txt: do not").await;
    assert_eq!(states(&paused).last().unwrap(), "input-required");
    let data = json!({"decision_type": "deny", "reason": "not today"});
    let resumed = decide(&app, &paused, data, "Rejected: not today").await;
    assert_eq!(states(&resumed).last().unwrap(), "completed");
    assert_eq!(
        responses(&resumed)[0]["response"],
        json!({"status": "rejected", "reason": "not today"})
    );
    assert!(answer_text(&resumed).contains("not today"));
    assert!(!folder.path().join("secret.txt").exists());
    app.stop().await;
}

#[tokio::test]
async fn a_killed_stdio_server_fails_the_call_clearly_then_reconnects() {
    let folder = shared_folder();
    let app = spawn_with_agents(&filesystem_agent(folder.path())).await;
    let first = say(&app, "read readme.txt").await;
    assert_eq!(text_of(&responses(&first)[0]), "MCP says hello");
    let pid_file = folder.path().join("server.pid");
    let pid = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .to_owned();

    // Freeze the server so the next call is surely in flight when it dies.
    signal("-STOP", &pid);
    let body = request(
        "message/stream",
        json!({"message": message_v03("read readme.txt", None, None)}),
    );
    let mut stream = app.open_stream(None, None, body).await;
    let mut events = Vec::new();
    while let Some(event) = stream.next().await {
        let is_call = !data_parts(&[event["result"].clone()], "function_call").is_empty();
        events.push(event);
        if is_call {
            break;
        }
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    signal("-KILL", &pid);
    while let Some(event) = stream.next().await {
        events.push(event);
    }
    let crashed = results(&events);
    assert_eq!(
        states(&crashed).last().unwrap(),
        "completed",
        "the model reads the failure and goes on"
    );
    let failure = &responses(&crashed)[0];
    assert_eq!(failure["response"]["isError"], true, "{failure}");
    assert!(
        text_of(failure).contains("the MCP server fs stopped while the call was running"),
        "{failure}"
    );

    // The next call works over a new server process.
    let again = say(&app, "read readme.txt").await;
    assert_eq!(
        text_of(&responses(&again)[0]),
        "MCP says hello",
        "{again:?}"
    );
    let new_pid = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .to_owned();
    assert_ne!(new_pid, pid);
    app.stop().await;
}

fn signal(which: &str, pid: &str) {
    let status = std::process::Command::new("kill")
        .args([which, pid])
        .status()
        .unwrap();
    assert!(status.success(), "kill {which} {pid}");
}

/// The Python test server on a free port, and its URL once it accepts connections.
struct PythonServer {
    child: tokio::process::Child,
    port: u16,
}

impl PythonServer {
    async fn start(port: u16, transport: &str) -> PythonServer {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/http_server.py");
        let child = tokio::process::Command::new(python())
            .arg(script)
            .arg(port.to_string())
            .arg(transport)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        for _ in 0..600 {
            if tokio::net::TcpStream::connect(("127.0.0.1", port))
                .await
                .is_ok()
            {
                return PythonServer { child, port };
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("the Python MCP test server did not listen on port {port} within 30 s");
    }

    async fn stop(mut self) {
        self.child.kill().await.unwrap();
    }
}

fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

fn http_agent(port: u16, transport: &str, path: &str) -> String {
    format!(
        r#"
[[agents]]
name = "demo"

[[agents.tools]]
kind = "mcp_http"
name = "remote"
url = "http://127.0.0.1:{port}/{path}"
transport = "{transport}"
timeout_secs = 2
"#
    )
}

#[tokio::test]
async fn streamable_http_tools_through_the_agent_with_clear_failures() {
    let server = PythonServer::start(free_port(), "streamable-http").await;
    let app = spawn_with_agents(&http_agent(server.port, "streamable_http", "mcp")).await;

    let read = say(&app, "read remote.txt").await;
    assert_eq!(states(&read).last().unwrap(), "completed");
    assert_eq!(text_of(&responses(&read)[0]), "served over HTTP");
    assert!(answer_text(&read).contains("served over HTTP"));

    // An MCP tool error comes back as the tool's own isError result.
    let missing = say(&app, "read missing.txt").await;
    let failure = &responses(&missing)[0];
    assert_eq!(failure["response"]["isError"], true, "{failure}");
    // The Python SDK words a raised exception so.
    assert!(
        text_of(failure).contains("Error executing tool read_file"),
        "{failure}"
    );
    assert_eq!(states(&missing).last().unwrap(), "completed");

    // Arguments that violate the input schema never reach the server.
    let listed = say(&app, "list files").await;
    let failure = &responses(&listed)[0];
    assert_eq!(failure["response"]["isError"], true);
    assert!(
        text_of(failure).contains("invalid arguments for list_directory: arguments: the required field \"depth\" is missing"),
        "{failure}"
    );

    // A call that outlives the source's timeout fails, and the connection keeps working.
    let slow = say(&app, "read slow.txt").await;
    let failure = &responses(&slow)[0];
    assert_eq!(failure["response"]["isError"], true);
    assert!(
        text_of(failure).contains("did not answer within 2 s"),
        "{failure}"
    );
    assert_eq!(states(&slow).last().unwrap(), "completed");
    let again = say(&app, "read remote.txt").await;
    assert_eq!(text_of(&responses(&again)[0]), "served over HTTP");

    app.stop().await;
    server.stop().await;
}

#[tokio::test]
async fn legacy_sse_tools_through_the_agent() {
    let server = PythonServer::start(free_port(), "sse").await;
    let app = spawn_with_agents(&http_agent(server.port, "sse", "sse")).await;
    let read = say(&app, "read remote.txt").await;
    assert_eq!(
        text_of(&responses(&read)[0]),
        "served over HTTP",
        "{read:?}"
    );
    app.stop().await;
    server.stop().await;
}

#[tokio::test]
async fn a_server_down_at_start_leaves_other_agents_serving_and_joins_when_up() {
    let port = free_port();
    let agents = format!(
        "{}\n[[agents]]\nname = \"other\"\n[[agents.tools]]\nkind = \"builtin_files\"\n",
        http_agent(port, "streamable_http", "mcp")
    );
    let app = spawn_with_agents(&agents).await;

    // The other agent serves.
    let body = request(
        "message/stream",
        json!({"message": message_v03("list files", None, None)}),
    );
    let response = app
        .client
        .post(format!("{}/api/a2a/default/other", app.base))
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    // The MCP agent reports its source unavailable, and its chat ends (no tool, no hang).
    let (_, agents) = app.get("/api/agents").await;
    let demo = &agents["agents"][0];
    assert_eq!(demo["name"], "demo");
    let unavailable = &demo["unavailableSources"][0];
    assert_eq!(unavailable["name"], "remote", "{demo}");
    assert!(
        unavailable["error"]
            .as_str()
            .unwrap()
            .contains("MCP server remote is unavailable"),
        "{demo}"
    );
    let listed = say(&app, "read remote.txt").await;
    assert_eq!(states(&listed).last().unwrap(), "completed");

    // Once the server is up, a reconnect (with backoff) brings its tools in.
    let server = PythonServer::start(port, "streamable-http").await;
    let mut joined = false;
    for _ in 0..120 {
        let (_, agents) = app.get("/api/agents").await;
        if agents["agents"][0]["tools"]
            .as_array()
            .is_some_and(|tools| !tools.is_empty())
        {
            joined = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    assert!(
        joined,
        "the tools of the MCP server appear within 30 s of it starting"
    );
    let read = say(&app, "read remote.txt").await;
    assert_eq!(text_of(&responses(&read)[0]), "served over HTTP");
    app.stop().await;
    server.stop().await;
}

/// Starts a server on `agents` and returns the error it stops with.
async fn load_error(agents: &str) -> String {
    let data_dir = tempfile::tempdir().unwrap();
    let file = data_dir.path().join("agents.toml");
    std::fs::write(&file, agents).unwrap();
    let mut config = signoff_server::Config::new(data_dir.path());
    config.agents_file = Some(file);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let outcome = tokio::time::timeout(
        Duration::from_secs(60),
        signoff_server::run(listener, config, std::future::pending::<()>()),
    )
    .await
    .expect("a refused agents file stops the server at once");
    outcome.unwrap_err().to_string()
}

#[tokio::test]
async fn misfits_are_refused_at_load_naming_the_offender() {
    let folder = shared_folder();
    let server = filesystem_server();
    let source = |extra: &str| {
        format!(
            "[[agents]]\nname = \"demo\"\n[[agents.tools]]\nkind = \"mcp_stdio\"\nname = \"fs\"\n\
             command = \"node\"\nargs = [\"{}\", \"{}\"]\n{extra}\n",
            server.display(),
            folder.path().display()
        )
    };
    // server-filesystem has no delete_file: known only once it answers.
    let error = load_error(&source("require_approval = [\"delete_file\"]")).await;
    assert!(
        error.contains(
            "agents[0].tools[0].require_approval[0]: \"delete_file\" is not an exposed tool"
        ),
        "{error}"
    );
    let error = load_error(&source("tools = [\"read_file\", \"rm_rf\"]")).await;
    assert!(
        error
            .contains("agents[0].tools[0].tools[1]: the MCP server fs has no tool named \"rm_rf\""),
        "{error}"
    );

    // Two sources exposing one name are refused, naming both; a prefix resolves it.
    let clash = format!("{}[[agents.tools]]\nkind = \"builtin_files\"\n", source(""));
    let error = load_error(&clash).await;
    assert!(error.contains("is exposed by both"), "{error}");
    assert!(error.contains("fs") && error.contains("files"), "{error}");
    let prefixed = format!(
        "{}[[agents.tools]]\nkind = \"builtin_files\"\n",
        source("prefix = \"fs_\"")
    );
    let app = spawn_with_agents(&prefixed).await;
    let (_, agents) = app.get("/api/agents").await;
    let names: Vec<String> = agents["agents"][0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["name"].as_str().unwrap().to_owned())
        .collect();
    assert!(
        names.contains(&"fs_read_file".to_owned()) && names.contains(&"read_file".to_owned()),
        "{names:?}"
    );
    app.stop().await;
}
