//! Time to pause through the other model and tool kinds: the OpenAI-compatible stub and MCP
//! servers over stdio.

use crate::error::{BenchError, Result};
use crate::progress;
use crate::scenario;
use crate::server::ServerProcess;
use crate::stats::Figure;
use crate::stub::OpenAiStub;
use std::path::Path;
use std::time::Duration;
use tokio::time::Instant;

use super::{client_for, Counts, PHASE_LIMIT};

/// Time to pause through a real network hop: one fresh server per endpoint kind.
pub async fn endpoints(
    binary: &Path,
    work_dir: &Path,
    mcp_dir: Option<&Path>,
    counts: &Counts,
) -> Vec<Figure> {
    const GROUP: &str = "real endpoints (time to pause)";
    let mut figures = Vec::new();

    let openai_name = "OpenAI-compatible model, loopback stub";
    progress(format_args!("endpoints: {openai_name}"));
    match OpenAiStub::start().await {
        Ok(stub) => {
            let agents = format!(
                r#"[[agents]]
name = "openai"
namespace = "default"
model = {{ kind = "openai", base_url = "{}", model = "bench-stub" }}

[[agents.tools]]
kind = "builtin_files"
require_approval = ["write_file", "delete_file"]
"#,
                stub.base_url
            );
            figures.push(
                endpoint_figure(
                    binary,
                    &work_dir.join("openai"),
                    &agents,
                    "openai",
                    counts,
                    GROUP,
                    openai_name,
                )
                .await,
            );
        }
        Err(err) => figures.push(Figure::missing(GROUP, openai_name, "ms", err.to_string())),
    }

    let mcp_name = "MCP server-filesystem over stdio";
    progress(format_args!("endpoints: {mcp_name}"));
    let installed = mcp_dir
        .map(|dir| dir.join("node_modules/.bin/mcp-server-filesystem"))
        .filter(|bin| bin.exists());
    match installed {
        None => figures.push(Figure::missing(
            GROUP,
            mcp_name,
            "ms",
            "n/a (server-filesystem not installed: run crates/server/tests/mcp/install.sh)",
        )),
        Some(bin) => {
            let dir = work_dir.join("mcp");
            let files = dir.join("files");
            let prepared = std::fs::create_dir_all(&files)
                .and_then(|()| std::fs::write(files.join("c.txt"), "hello from c.txt\n"));
            // ServerProcess::start wants to create the data folder itself.
            let data_dir = dir.join("data");
            match prepared {
                Err(err) => figures.push(Figure::missing(
                    GROUP,
                    mcp_name,
                    "ms",
                    format!("cannot prepare {}: {err}", files.display()),
                )),
                Ok(()) => {
                    let agents = mcp_agents(&bin, &files);
                    figures.push(
                        endpoint_figure(binary, &data_dir, &agents, "mcp", counts, GROUP, mcp_name)
                            .await,
                    );
                }
            }
        }
    }
    figures
}

/// The scripted model with `write_file` and `read_file` from server-filesystem (stdio) and
/// `delete_file` (which server-filesystem lacks) from the built-in tools.
fn mcp_agents(bin: &Path, files: &Path) -> String {
    let toml_str = |path: &Path| {
        serde_json::to_string(&path.display().to_string()).unwrap_or_else(|_| "\"\"".into())
    };
    format!(
        r#"[[agents]]
name = "mcp"
namespace = "default"
model = {{ kind = "scripted" }}

[[agents.tools]]
kind = "builtin_files"
tools = ["delete_file"]
require_approval = ["delete_file"]

[[agents.tools]]
kind = "mcp_stdio"
name = "fs"
command = {bin}
args = [{files}]
cwd = {files}
tools = ["read_file", "write_file"]
require_approval = ["write_file"]
"#,
        bin = toml_str(bin),
        files = toml_str(files),
    )
}

async fn endpoint_figure(
    binary: &Path,
    data_dir: &Path,
    agents: &str,
    agent: &str,
    counts: &Counts,
    group: &str,
    name: &str,
) -> Figure {
    let server = match ServerProcess::start(binary, data_dir, Some(agents)).await {
        Ok(server) => server,
        Err(err) => {
            let text = err.to_string();
            // An agents file the server does not know yet: that part is not built.
            let why = if text.contains("unknown variant") {
                "n/a (not built yet)".to_owned()
            } else {
                format!("the server did not start: {text}")
            };
            return Figure::missing(group, name, "ms", why);
        }
    };
    if let Err(err) =
        wait_for_tools(&server, agent, &["read_file", "write_file", "delete_file"]).await
    {
        let _ = server.stop().await;
        return Figure::missing(group, name, "ms", err.to_string());
    }
    let client = client_for(&server, agent);
    let mut pause_ms = Vec::new();
    let mut errors = Vec::new();
    let deadline = Instant::now() + PHASE_LIMIT / 2;
    for index in 0..counts.endpoint_chats + 5 {
        if Instant::now() > deadline {
            errors.push("stopped at the phase's time limit".to_owned());
            break;
        }
        match scenario::pause(&client).await {
            // The first five warm up connections and the tool server.
            Ok((ms, _)) if index >= 5 => pause_ms.push(ms),
            Ok(_) => {}
            Err(err) => errors.push(err.to_string()),
        }
    }
    let _ = server.stop().await;
    let mut figure = Figure::samples(group, name, "ms", &pause_ms);
    figure.note = Some(match errors.first() {
        Some(first) => format!("{} errors; first: {first}", errors.len()),
        None => "POST message/stream -> final input-required; one chat at a time".to_owned(),
    });
    figure
}

/// Waits until `GET /api/agents` lists every tool in `tools` for `agent` (an MCP server joins
/// the agent's tools once its process has started and answered).
pub(super) async fn wait_for_tools(
    server: &ServerProcess,
    agent: &str,
    tools: &[&str],
) -> Result<()> {
    let http = reqwest::Client::new();
    let url = format!("{}/api/agents", server.base);
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut last = String::new();
    while Instant::now() < deadline {
        let body: serde_json::Value = match http.get(&url).send().await {
            Ok(response) => match response.bytes().await {
                Ok(bytes) => serde_json::from_slice(&bytes).unwrap_or_default(),
                Err(err) => {
                    last = err.to_string();
                    serde_json::Value::Null
                }
            },
            Err(err) => {
                last = err.to_string();
                serde_json::Value::Null
            }
        };
        let listed: Vec<String> = body["agents"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|entry| entry["name"] == agent)
            .flat_map(|entry| entry["tools"].as_array().cloned().unwrap_or_default())
            .filter_map(|tool| tool["name"].as_str().map(str::to_owned))
            .collect();
        if tools
            .iter()
            .all(|tool| listed.iter().any(|name| name == tool))
        {
            return Ok(());
        }
        if !listed.is_empty() {
            last = format!("tools so far: {}", listed.join(", "));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Err(BenchError::Timeout(format!(
        "agent {agent} did not get its tools within 60 s ({last}): {}",
        server.log_tail()
    )))
}
