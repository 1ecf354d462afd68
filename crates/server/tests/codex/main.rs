//! Codex as a tool: the real `codex mcp-server` (npm `@openai/codex`, pinned in this folder's
//! package-lock.json; `install.sh` installs it) as an agent's `mcp_stdio` source, run offline
//! against `responses.py`, a scripted OpenAI Responses endpoint on loopback whose script has
//! Codex's "model" ask to run a shell command. Codex asks for approval first, with its own
//! `elicitation/create`; Signoff shows it as an approval card with the command and its folder,
//! decided like any card, and answers Codex with the decision Codex reads. The `codex` tool is
//! called through the agent's MCP endpoint by the Python `mcp` SDK's client
//! (`tests/gateway/mcp_client.py`, in the venv `tests/mcp/install.sh` makes).

#![allow(clippy::unwrap_used, clippy::expect_used)]

// Shared by every test crate; each uses part of it.
#[allow(dead_code, unused_imports)]
#[path = "../support/mod.rs"]
mod support;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde_json::{json, Value};
use support::*;
use tokio::io::{AsyncBufReadExt, BufReader};

const INSTALL: &str = "run crates/server/tests/codex/install.sh (scripts/test.sh does) to \
     install Codex";

fn here() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/codex")
}

fn codex() -> PathBuf {
    let path = here().join("node_modules/.bin/codex");
    assert!(path.exists(), "{} is missing: {INSTALL}", path.display());
    path
}

/// The scripted Responses endpoint, started on a free port with `turns`; its request log is
/// `log`.
struct Endpoint {
    port: u16,
    log: PathBuf,
    _child: tokio::process::Child,
}

async fn start_endpoint(dir: &Path, turns: Value) -> Endpoint {
    let script = dir.join("turns.json");
    let log = dir.join("requests.jsonl");
    std::fs::write(&script, turns.to_string()).unwrap();
    let mut child = tokio::process::Command::new("python3")
        .arg(here().join("responses.py"))
        .args(["--port", "0", "--script"])
        .arg(&script)
        .arg("--log")
        .arg(&log)
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let first = within("the scripted endpoint to listen", lines.next_line())
        .await
        .unwrap()
        .unwrap();
    let port = first.strip_prefix("PORT ").unwrap().parse().unwrap();
    Endpoint {
        port,
        log,
        _child: child,
    }
}

impl Endpoint {
    /// What Codex sent back for its tool calls: each `function_call_output`'s output.
    fn outputs(&self) -> Vec<String> {
        let log = std::fs::read_to_string(&self.log).unwrap_or_default();
        let mut outputs = Vec::new();
        for line in log.lines() {
            let entry: Value = serde_json::from_str(line).unwrap();
            for item in entry["body"]["input"].as_array().into_iter().flatten() {
                if item["type"] == "function_call_output" {
                    outputs.push(item["output"].to_string());
                }
            }
        }
        outputs
    }
}

/// Codex's home, with its model pointed at the scripted endpoint (the agents-file entry in
/// crates/server/README.md, Codex as a tool, with a config.toml like this one). Its sandbox
/// lets it write only in its `cwd` (not in /tmp, where the tests' folders are), so a patch to
/// a file beside that folder asks for approval.
fn codex_home(dir: &Path, port: u16) -> PathBuf {
    let home = dir.join("codex-home");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(
        home.join("config.toml"),
        format!(
            r#"
model = "scripted-model"
model_provider = "scripted"
check_for_update_on_startup = false

[model_providers.scripted]
name = "Scripted"
base_url = "http://127.0.0.1:{port}/v1"
wire_api = "responses"
env_key = "SCRIPTED_API_KEY"

[sandbox_workspace_write]
exclude_slash_tmp = true
exclude_tmpdir_env_var = true
"#
        ),
    )
    .unwrap();
    home
}

/// An agent served over MCP whose `codex` tool is Codex's, held for a sign-off first (so it
/// runs in a task, whose questions the inbox shows); `rules` go in the agent's table.
fn codex_agent(home: &Path, rules: &str) -> String {
    format!(
        r#"
[[agents]]
name = "coder"
serve_mcp = true
{rules}

[[agents.tools]]
kind = "mcp_stdio"
name = "codex"
command = "{codex}"
args = ["mcp-server"]
env = {{ CODEX_HOME = "{home}", SCRIPTED_API_KEY = "offline" }}
tools = ["codex"]
require_approval = ["codex"]
"#,
        codex = codex().display(),
        home = home.display(),
    )
}

type Lines = tokio::io::Lines<BufReader<tokio::process::ChildStdout>>;

/// The Python SDK's client calling `codex` on the agent, asking Codex to work in `work` and to
/// ask before anything it runs outside its sandbox.
fn call_codex(app: &TestApp, work: &Path) -> Lines {
    let client = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/gateway/mcp_client.py");
    let arguments = json!({
        "prompt": "make the marker",
        "cwd": work,
        "approval-policy": "on-request",
        "sandbox": "workspace-write",
    });
    let mut child = tokio::process::Command::new(mcp_python())
        .arg(client)
        .arg(app.url("/api/mcp/default/coder"))
        .arg("codex")
        .arg(arguments.to_string())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let lines = BufReader::new(child.stdout.take().unwrap()).lines();
    tokio::spawn(async move { child.wait().await });
    lines
}

async fn next_line(lines: &mut Lines) -> Value {
    let line = tokio::time::timeout(Duration::from_secs(120), lines.next_line())
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

/// Approves the held `codex` call, so Codex runs.
async fn approve_the_run(app: &TestApp) {
    let held = pending(app, "codex").await;
    let task = held["taskId"].as_str().unwrap();
    let (status, body) = decide_rest(app, None, task, json!({"decision_type": "approve"})).await;
    assert_eq!(status, 200, "{body}");
}

/// Approves the held `codex` call, so Codex runs; then Codex's own approval, once it is in the
/// inbox, is decided with `verdict`. Returns the approval's card as the inbox showed it.
async fn run_and_decide(app: &TestApp, verdict: &str) -> Value {
    approve_the_run(app).await;
    let asked = pending(app, "elicitation").await;
    let task = asked["taskId"].as_str().unwrap();
    let (status, body) = decide_rest(app, None, task, json!({"decision_type": verdict})).await;
    assert_eq!(status, 200, "{body}");
    asked["calls"][0].clone()
}

/// The decided batches of Codex's approvals, oldest first.
async fn approval_decisions(app: &TestApp) -> Vec<Value> {
    let (_, decided) = app.get("/api/approvals?state=decided").await;
    let mut decisions: Vec<Value> = decided["decisions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|decision| decision["calls"][0]["name"] == "elicitation")
        .cloned()
        .collect();
    decisions.reverse();
    decisions
}

/// Each decision's verdict on its one call.
fn verdicts(decisions: &[Value]) -> Vec<Value> {
    decisions
        .iter()
        .map(|decision| decision["calls"][0]["verdict"].clone())
        .collect()
}

#[tokio::test]
async fn codexs_exec_approval_is_a_card_a_rejection_stops_the_command_and_an_approval_runs_it_once()
{
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    // Two runs of Codex, each: the model asks to run the command, then says it is done.
    let shell = json!({"shell": "echo ran >> marker"});
    let endpoint = start_endpoint(
        dir.path(),
        json!([shell, {"text": "stopped"}, shell, {"text": "made it"}]),
    )
    .await;
    let home = codex_home(dir.path(), endpoint.port);
    let app = spawn_with_agents(&codex_agent(&home, ""), |_| {}).await;
    let marker = work.join("marker");

    // Rejected: the command never runs, and Codex is told it was refused.
    let mut lines = call_codex(&app, &work);
    let listed = next_line(&mut lines).await;
    assert_eq!(listed["tools"], json!(["codex"]), "{listed}");
    let card = run_and_decide(&app, "reject").await;
    assert_eq!(card["args"]["mode"], "approval", "{card}");
    assert_eq!(card["args"]["kind"], "exec-approval", "{card}");
    assert_eq!(card["args"]["command"], "echo ran >> marker", "{card}");
    assert_eq!(card["args"]["cwd"], json!(work), "{card}");
    assert_eq!(card["args"]["server"], "codex", "{card}");
    assert!(
        card["args"]["message"]
            .as_str()
            .unwrap()
            .starts_with("Allow Codex to run"),
        "{card}"
    );
    let result = next_line(&mut lines).await;
    assert_eq!(result["result"]["isError"], false, "{result}");
    assert_eq!(result["result"]["text"], "stopped", "{result}");
    assert!(!marker.exists(), "a rejected command does not run");
    let outputs = endpoint.outputs();
    assert_eq!(outputs.len(), 1, "{outputs:?}");
    assert!(
        outputs[0].to_lowercase().contains("rejected"),
        "Codex told its model the command was refused: {outputs:?}"
    );

    // Approved: the command runs, once.
    let mut lines = call_codex(&app, &work);
    next_line(&mut lines).await;
    run_and_decide(&app, "approve").await;
    let result = next_line(&mut lines).await;
    assert_eq!(result["result"]["text"], "made it", "{result}");
    assert_eq!(std::fs::read_to_string(&marker).unwrap(), "ran\n");
    assert_eq!(endpoint.outputs().len(), 2);

    // Both decisions are in the audit, as any card's.
    let decisions = approval_decisions(&app).await;
    assert_eq!(
        verdicts(&decisions),
        [json!("deny"), json!("approve")],
        "{decisions:?}"
    );
    app.stop().await;
}

/// A rule on `elicitation` meets Codex's approval before anyone is asked: one matching its
/// command refuses it without a card, audited as the rule's; Codex is told it was refused.
#[tokio::test]
async fn a_deny_rule_refuses_codexs_command_without_a_card() {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    std::fs::write(work.join("keep.txt"), "kept").unwrap();
    let endpoint = start_endpoint(
        dir.path(),
        json!([{"shell": "rm keep.txt"}, {"text": "could not"}]),
    )
    .await;
    let home = codex_home(dir.path(), endpoint.port);
    let rules = r#"
[[agents.rules]]
tool = "elicitation"
action = "deny"
when = { command = { regex = ".*\\brm\\b.*" } }
"#;
    let app = spawn_with_agents(&codex_agent(&home, rules), |_| {}).await;
    let mut lines = call_codex(&app, &work);
    next_line(&mut lines).await;
    approve_the_run(&app).await;
    let result = next_line(&mut lines).await;
    assert_eq!(result["result"]["text"], "could not", "{result}");
    assert!(
        work.join("keep.txt").exists(),
        "the refused command did not run"
    );
    let outputs = endpoint.outputs();
    assert!(
        outputs.len() == 1 && outputs[0].to_lowercase().contains("rejected"),
        "{outputs:?}"
    );
    let decisions = approval_decisions(&app).await;
    assert_eq!(verdicts(&decisions), [json!("deny")], "{decisions:?}");
    assert_eq!(decisions[0]["channel"], "rule", "{decisions:?}");
    let (_, body) = app.get("/api/approvals").await;
    assert_eq!(body["approvals"], json!([]), "no card waited: {body}");
    app.stop().await;
}

/// Codex's patch approval is a card whose preview is the patch's diff; approved, the patch is
/// applied.
#[tokio::test]
async fn codexs_patch_approval_shows_the_diff_and_an_approval_applies_it() {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let outside = dir.path().join("outside.txt");
    let patch = format!(
        "apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: {}\n+hello\n*** End Patch\nEOF\n",
        outside.display()
    );
    let endpoint = start_endpoint(dir.path(), json!([{"shell": patch}, {"text": "patched"}])).await;
    let home = codex_home(dir.path(), endpoint.port);
    let app = spawn_with_agents(&codex_agent(&home, ""), |_| {}).await;
    let mut lines = call_codex(&app, &work);
    next_line(&mut lines).await;
    let card = run_and_decide(&app, "approve").await;
    assert_eq!(card["args"]["kind"], "patch-approval", "{card}");
    let path = outside.display().to_string();
    assert_eq!(
        card["args"]["changes"][&path],
        json!({"type": "add", "content": "hello\n"}),
        "{card}"
    );
    let preview = card["metadata"]["preview"]
        .as_str()
        .unwrap_or_else(|| panic!("a diff preview: {card}"));
    assert!(preview.contains("+hello\n"), "{preview}");
    let result = next_line(&mut lines).await;
    assert_eq!(result["result"]["text"], "patched", "{result}");
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "hello\n");
    app.stop().await;
}

/// A Cedar policy meets Codex's approval as it meets a tool call: a permit of tool
/// `elicitation` from source `codex` lets the command run without a card, audited as the
/// policy's.
#[tokio::test]
async fn a_cedar_permit_runs_codexs_command_without_a_card() {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let endpoint = start_endpoint(
        dir.path(),
        json!([{"shell": "echo ran >> marker"}, {"text": "made it"}]),
    )
    .await;
    let home = codex_home(dir.path(), endpoint.port);
    let policies = dir.path().join("policies");
    std::fs::create_dir_all(&policies).unwrap();
    std::fs::write(
        policies.join("codex.cedar"),
        r#"
@id("codex-echo")
permit (principal, action == Signoff::Action::"call", resource == Signoff::Tool::"elicitation")
when { resource.source == "codex" && context.args has command
       && context.args.command like "echo *" };
"#,
    )
    .unwrap();
    let app = spawn_with_agents(&codex_agent(&home, ""), move |config| {
        config.policies_dir = Some(policies);
    })
    .await;
    let mut lines = call_codex(&app, &work);
    next_line(&mut lines).await;
    approve_the_run(&app).await;
    let result = next_line(&mut lines).await;
    assert_eq!(result["result"]["text"], "made it", "{result}");
    assert_eq!(
        std::fs::read_to_string(work.join("marker")).unwrap(),
        "ran\n"
    );
    let decisions = approval_decisions(&app).await;
    assert_eq!(verdicts(&decisions), [json!("approve")], "{decisions:?}");
    assert_eq!(decisions[0]["channel"], "policy", "{decisions:?}");
    app.stop().await;
}
