//! A scripted Anthropic Messages endpoint (`tests/gateway/anthropic.py`) for driving Claude
//! Code offline: its script says which tool the "model" calls, and its log shows what Claude
//! Code sent back.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};

/// `anthropic.py` on a port of its own, answering the main conversation with `script`.
pub struct ScriptedModel {
    /// Held so the endpoint lives as long as this (it is killed on drop).
    _child: tokio::process::Child,
    pub port: u16,
    pub log: PathBuf,
}

impl ScriptedModel {
    pub async fn start(dir: &Path, script: Value) -> ScriptedModel {
        let script_path = dir.join("script.json");
        std::fs::write(&script_path, script.to_string()).unwrap();
        let log = dir.join("anthropic.jsonl");
        let mut child = tokio::process::Command::new("python3")
            .arg(endpoint_script())
            .args(["--port", "0", "--script"])
            .arg(&script_path)
            .arg("--log")
            .arg(&log)
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("python3 runs anthropic.py");
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let first = tokio::time::timeout(Duration::from_secs(20), lines.next_line())
            .await
            .expect("anthropic.py prints its port")
            .unwrap()
            .unwrap();
        let port = first.trim_start_matches("PORT ").parse().unwrap();
        ScriptedModel {
            _child: child,
            port,
            log,
        }
    }

    /// The tool results Claude Code sent back to the model, in order.
    pub fn tool_results(&self) -> Vec<Value> {
        let log = std::fs::read_to_string(&self.log).unwrap_or_default();
        let mut results = Vec::new();
        for line in log.lines() {
            let entry: Value = serde_json::from_str(line).unwrap();
            let Some(messages) = entry["body"]["messages"].as_array() else {
                continue;
            };
            if let Some(last) = messages.last() {
                for block in last["content"].as_array().into_iter().flatten() {
                    if block["type"] == "tool_result" {
                        results.push(block.clone());
                    }
                }
            }
        }
        results
    }
}

impl ScriptedModel {
    /// The agents file with Claude Code over ACP (`claude-code-acp`, which
    /// `tests/acp/install.sh` installs) as `default/coder`, working in `cwd` with its own
    /// `home`, against this endpoint; `extra` lines go under its `[[agents]]`.
    pub fn claude_code_over_acp(&self, cwd: &Path, home: &Path, extra: &str) -> String {
        let entry =
            tests_dir().join("acp/node_modules/@zed-industries/claude-code-acp/dist/index.js");
        assert!(
            entry.exists(),
            "{} is missing: run crates/server/tests/acp/install.sh (scripts/test.sh does)",
            entry.display()
        );
        format!(
            r#"
[[agents]]
name = "coder"
description = "Claude Code over ACP"
{extra}

[agents.acp]
command = ["node", {entry:?}]
cwd = {cwd:?}

[agents.acp.env]
ANTHROPIC_BASE_URL = "http://127.0.0.1:{port}"
ANTHROPIC_API_KEY = "test"
CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC = "1"
DISABLE_TELEMETRY = "1"
DISABLE_AUTOUPDATER = "1"
IS_SANDBOX = "1"
HOME = {home:?}
"#,
            entry = entry.display().to_string(),
            cwd = cwd.display().to_string(),
            home = home.display().to_string(),
            port = self.port,
        )
    }
}

/// The server's `tests/` folder, from its own test crates or from the UI's browser tests
/// (which include this module from the workspace root).
fn tests_dir() -> PathBuf {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    match here.join("tests/gateway/anthropic.py").exists() {
        true => here.join("tests"),
        false => here.join("crates/server/tests"),
    }
}

fn endpoint_script() -> PathBuf {
    tests_dir().join("gateway/anthropic.py")
}
