//! RSS at rest of a server configured as a deployment would be: one agent on an
//! OpenAI-compatible model (the loopback stub) with tools from an MCP server over streamable
//! HTTP (the Python test server of crates/server/tests/mcp) and the built-in file tools.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use tokio::process::{Child, Command};
use tokio::time::Instant;

use crate::error::{BenchError, Result};
use crate::progress;
use crate::scenario;
use crate::server::{free_port, ServerProcess};
use crate::stats::Figure;
use crate::stub::OpenAiStub;

use super::endpoints::wait_for_tools;
use super::{client_for, rss_readings};

/// Chats run before the second reading: enough to open every pool and connection once.
const CHATS: usize = 20;

/// The Python MCP test server over streamable HTTP; killed on drop.
pub(super) struct PythonMcp {
    _child: Child,
    pub(super) port: u16,
}

impl PythonMcp {
    pub(super) async fn start(python: &Path, script: &Path) -> Result<PythonMcp> {
        let port = free_port()?;
        let child = Command::new(python)
            .arg(script)
            .arg(port.to_string())
            .arg("streamable-http")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .map_err(|err| BenchError::io(python, err))?;
        let deadline = Instant::now() + Duration::from_secs(30);
        while tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_err()
        {
            if Instant::now() > deadline {
                return Err(BenchError::Timeout(format!(
                    "the Python MCP server did not listen on port {port} within 30 s"
                )));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Ok(PythonMcp {
            _child: child,
            port,
        })
    }
}

/// The venv's python and the MCP test server's script, or why the figure cannot be made.
pub(super) fn python_mcp_server(mcp_dir: Option<&Path>) -> Result<(PathBuf, PathBuf)> {
    let script = mcp_dir
        .map(|dir| dir.join("http_server.py"))
        .filter(|script| script.exists())
        .ok_or_else(|| BenchError::Server("n/a (no --mcp-dir with http_server.py)".into()))?;
    let python = mcp_python().ok_or_else(|| {
        BenchError::Server("n/a (no MCP venv: run crates/server/tests/mcp/install.sh)".into())
    })?;
    Ok((python, script))
}

/// The venv crates/server/tests/mcp/install.sh makes (where the server's tests look for it).
fn mcp_python() -> Option<PathBuf> {
    let venv = std::env::var_os("SIGNOFF_MCP_VENV")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cache/signoff/mcp-venv"))
        })?;
    Some(venv.join("bin/python")).filter(|python| python.exists())
}

fn agents(openai_base: &str, mcp_port: u16) -> String {
    format!(
        r#"[[agents]]
name = "deployed"
namespace = "default"
model = {{ kind = "openai", base_url = "{openai_base}", model = "bench-stub" }}

[[agents.tools]]
kind = "builtin_files"
tools = ["write_file", "delete_file"]
require_approval = ["write_file", "delete_file"]

[[agents.tools]]
kind = "mcp_http"
name = "remote"
url = "http://127.0.0.1:{mcp_port}/mcp"
transport = "streamable_http"
tools = ["read_file"]
"#
    )
}

/// RSS after start (the MCP server's tools listed) and again after [`CHATS`] approve cycles.
pub async fn idle_deployed(
    binary: &Path,
    work_dir: &Path,
    mcp_dir: Option<&Path>,
    group: &str,
) -> Vec<Figure> {
    let name = "RSS at rest, OpenAI-compatible model + MCP over HTTP";
    match measure(binary, work_dir, mcp_dir).await {
        Ok((at_start, after_chats, split)) => vec![
            Figure::samples(group, name, "MiB", &at_start).with_note(format!(
                "one agent: the OpenAI stub, write/delete built in, read_file from the Python MCP \
                 server over streamable HTTP; after start with its tools listed; 5 readings; \
                 {split}"
            )),
            Figure::samples(
                group,
                &format!("{name}, after {CHATS} chats"),
                "MiB",
                &after_chats,
            )
            .with_note("the same server after that many approve cycles, one at a time"),
        ],
        Err(err) => vec![Figure::missing(group, name, "MiB", err.to_string())],
    }
}

async fn measure(
    binary: &Path,
    work_dir: &Path,
    mcp_dir: Option<&Path>,
) -> Result<(Vec<f64>, Vec<f64>, String)> {
    let (python, script) = python_mcp_server(mcp_dir)?;
    progress(format_args!(
        "footprint: at rest with an OpenAI-compatible model and MCP over HTTP"
    ));
    let stub = OpenAiStub::start().await?;
    let mcp = PythonMcp::start(&python, &script).await?;
    let server = ServerProcess::start(
        binary,
        &work_dir.join("footprint-deployed"),
        Some(&agents(&stub.base_url, mcp.port)),
    )
    .await?;
    let outcome = async {
        wait_for_tools(&server, "deployed", &["read_file", "write_file"]).await?;
        let at_start = rss_readings(&server).await;
        let mib = |bytes: u64| bytes as f64 / (1024.0 * 1024.0);
        let split = match server.rss_anon_file_bytes() {
            Ok((anon, file)) => format!(
                "of it {:.1} MiB anonymous (heap, stacks) and {:.1} MiB file pages (the binary's \
                 code and read-only data)",
                mib(anon),
                mib(file)
            ),
            Err(err) => format!("no anonymous/file split: {err}"),
        };
        let client = client_for(&server, "deployed");
        for _ in 0..CHATS {
            let (_, paused) = scenario::pause(&client).await?;
            scenario::approve(&client, &paused).await?;
        }
        drop(client);
        let after_chats = rss_readings(&server).await;
        Ok((at_start, after_chats, split))
    }
    .await;
    let _ = server.stop().await;
    outcome
}
