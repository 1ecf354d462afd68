//! The server tests' Python MCP server (`crates/server/tests/mcp/http_server.py`, on the `mcp`
//! SDK in the venv `crates/server/tests/mcp/install.sh` makes), for browser tests that need a
//! tool served over MCP, or one whose definition changes between two starts of the server.

use std::path::Path;
use std::process::Stdio;

use tokio::process::Child;

use super::harness::wait_for_port;

// The venv's python, found as the server's tests find it: one home for both test crates.
#[path = "../../../crates/server/tests/support/venv.rs"]
mod venv;
use venv::mcp_python;

/// The Python MCP server, serving streamable HTTP at `/mcp`; stopped when dropped.
pub struct McpServer {
    child: Child,
}

impl McpServer {
    /// Starts it on `port`, its `read_file` described as `description` (none: as its
    /// docstring says), and waits until it listens.
    pub async fn start(port: u16, read_file_description: Option<&str>) -> McpServer {
        let script =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/server/tests/mcp/http_server.py");
        let mut command = tokio::process::Command::new(mcp_python());
        if let Some(description) = read_file_description {
            command.env("READ_FILE_DESCRIPTION", description);
        }
        let child = command
            .arg(script)
            .arg(port.to_string())
            .arg("streamable-http")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        wait_for_port(port).await;
        McpServer { child }
    }

    /// Stops it and waits until it has exited, so that its port is free for the next start.
    pub async fn stop(mut self) {
        self.child.kill().await.unwrap();
    }
}

/// The agents-file entry of a tool source `name` served by the MCP server on `port`.
pub fn mcp_source_toml(name: &str, port: u16) -> String {
    format!(
        "[[agents.tools]]\nkind = \"mcp_http\"\nname = \"{name}\"\n\
         url = \"http://127.0.0.1:{port}/mcp\"\ntransport = \"streamable_http\"\ntimeout_secs = 5\n"
    )
}
