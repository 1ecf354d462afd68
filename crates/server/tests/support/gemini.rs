//! A scripted Gemini API endpoint (`tests/acp/gemini.py`) for driving Gemini CLI offline: its
//! script says which tool the "model" calls, and its log shows what Gemini CLI sent back.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};

/// `gemini.py` on a port of its own, answering the main conversation with `script`.
pub struct ScriptedGemini {
    /// Held so the endpoint lives as long as this (it is killed on drop).
    _child: tokio::process::Child,
    pub port: u16,
    pub log: PathBuf,
}

impl ScriptedGemini {
    pub async fn start(dir: &Path, script: Value) -> ScriptedGemini {
        let script_path = dir.join("gemini-script.json");
        std::fs::write(&script_path, script.to_string()).unwrap();
        let log = dir.join("gemini.jsonl");
        let mut child = tokio::process::Command::new("python3")
            .arg(acp_dir().join("gemini.py"))
            .args(["--port", "0", "--script"])
            .arg(&script_path)
            .arg("--log")
            .arg(&log)
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("python3 runs gemini.py");
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let first = tokio::time::timeout(Duration::from_secs(20), lines.next_line())
            .await
            .expect("gemini.py prints its port")
            .unwrap()
            .unwrap();
        let port = first.trim_start_matches("PORT ").parse().unwrap();
        ScriptedGemini {
            _child: child,
            port,
            log,
        }
    }

    /// The function responses Gemini CLI sent back to the model, in order (each request of the
    /// main conversation resends the whole history: its last entry is the new one).
    pub fn function_responses(&self) -> Vec<Value> {
        let log = std::fs::read_to_string(&self.log).unwrap_or_default();
        let mut responses = Vec::new();
        for line in log.lines() {
            let entry: Value = serde_json::from_str(line).unwrap();
            if entry["kind"] != "main" {
                continue;
            }
            let last = entry["body"]["contents"]
                .as_array()
                .and_then(|contents| contents.last().cloned());
            for part in last
                .iter()
                .flat_map(|last| last["parts"].as_array().cloned().unwrap_or_default())
            {
                if !part["functionResponse"].is_null() {
                    responses.push(part["functionResponse"].clone());
                }
            }
        }
        responses
    }

    /// The bodies of the main conversation's requests, as text (to find what Gemini CLI read).
    pub fn main_requests(&self) -> Vec<String> {
        let log = std::fs::read_to_string(&self.log).unwrap_or_default();
        log.lines()
            .filter(|line| line.contains(r#""kind": "main""#))
            .map(str::to_owned)
            .collect()
    }
}

/// The installed Gemini CLI's entry point (`tests/acp/install.sh` installs it).
pub fn gemini_entry() -> PathBuf {
    let entry = acp_dir().join("node_modules/@google/gemini-cli/bundle/gemini.js");
    assert!(
        entry.exists(),
        "{} is missing: run crates/server/tests/acp/install.sh (scripts/test.sh does)",
        entry.display()
    );
    entry
}

/// The server's `tests/acp/` folder.
fn acp_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/acp")
}
