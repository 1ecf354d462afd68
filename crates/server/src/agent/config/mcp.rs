//! The agents file's MCP entries (`mcp_stdio`, `mcp_http`) and their checks, which turn an
//! entry into an [`McpSourceSpec`]: how to reach the server and what to expose of it
//! (`agent::mcp` serves it).
//!
//! ```toml
//! [[agents.tools]]
//! kind = "mcp_stdio"
//! name = "fs"                                  # the `server` of action requests
//! command = "npx"
//! args = ["-y", "@modelcontextprotocol/server-filesystem", "/srv/notes"]
//! env = { NODE_ENV = "production" }            # added to the inherited environment
//! cwd = "/srv/notes"                           # the server's working directory
//! tools = ["read_file", "write_file"]          # which of its tools to expose (default: all)
//! prefix = "fs_"                               # exposed as fs_read_file, fs_write_file
//! require_approval = ["write_file"]            # with or without the prefix
//! timeout_secs = 30                            # per call (the runtime's limit also applies)
//! connect_timeout_secs = 20
//!
//! [[agents.tools]]
//! kind = "mcp_http"
//! name = "everything"
//! url = "http://127.0.0.1:3001/mcp"
//! headers = { Authorization = "Bearer …" }
//! transport = "streamable_http"                # or "sse" (the legacy HTTP+SSE transport)
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use super::ConfigError;

/// Default wait for a server to start and answer the MCP handshake.
const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(20);

/// `kind = "mcp_stdio"`: a server started as a child process, speaking MCP on stdin/stdout.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpStdioSpec {
    /// The server's name: shown as the action requests' `server`, and in errors.
    pub name: String,
    pub command: String,
    #[serde(default)]
    pub args: Vec<String>,
    /// Variables added to the inherited environment.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// The working directory (relative paths are inside the data directory).
    #[serde(default)]
    pub cwd: Option<PathBuf>,
    #[serde(default)]
    pub tools: Option<Vec<String>>,
    #[serde(default)]
    pub prefix: Option<String>,
    #[serde(default)]
    pub require_approval: Vec<String>,
    #[serde(default)]
    pub timeout_secs: Option<u64>,
    #[serde(default)]
    pub connect_timeout_secs: Option<u64>,
    /// Who may approve this source's calls (`super::approvers`).
    #[serde(default)]
    pub approvers: Option<Vec<String>>,
    #[serde(default)]
    pub requester_may_approve: Option<bool>,
    #[serde(default)]
    pub quorum: Option<u32>,
    /// Per tool (with or without the prefix), who may approve its calls.
    #[serde(default)]
    pub tool_approvers: BTreeMap<String, super::ApproversSpec>,
}

/// `kind = "mcp_http"`: a server reached over streamable HTTP (or legacy HTTP+SSE).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpHttpSpec {
    pub name: String,
    pub url: String,
    /// Sent with every request (`Authorization`, ...).
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    #[serde(default)]
    pub transport: HttpTransport,
    #[serde(default)]
    pub tools: Option<Vec<String>>,
    #[serde(default)]
    pub prefix: Option<String>,
    #[serde(default)]
    pub require_approval: Vec<String>,
    #[serde(default)]
    pub timeout_secs: Option<u64>,
    #[serde(default)]
    pub connect_timeout_secs: Option<u64>,
    /// Who may approve this source's calls (`super::approvers`).
    #[serde(default)]
    pub approvers: Option<Vec<String>>,
    #[serde(default)]
    pub requester_may_approve: Option<bool>,
    #[serde(default)]
    pub quorum: Option<u32>,
    /// Per tool (with or without the prefix), who may approve its calls.
    #[serde(default)]
    pub tool_approvers: BTreeMap<String, super::ApproversSpec>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HttpTransport {
    #[default]
    StreamableHttp,
    /// The legacy HTTP+SSE transport (MCP 2024-11-05), as kagent's `sse_tools` use.
    Sse,
}

/// How to reach an MCP server (`agent::mcp::connection` opens it; equal endpoints share one
/// connection).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoint {
    /// A child process speaking MCP on its stdin/stdout.
    Stdio {
        command: String,
        args: Vec<String>,
        /// Added to the server's inherited environment.
        env: Vec<(String, String)>,
        cwd: Option<PathBuf>,
    },
    /// A streamable-HTTP endpoint, or a legacy HTTP+SSE one when `sse` is set.
    Http {
        url: String,
        headers: Vec<(http::HeaderName, http::HeaderValue)>,
        sse: bool,
    },
}

/// A checked MCP source: how to reach the server and what to expose of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpSourceSpec {
    pub name: String,
    pub endpoint: Endpoint,
    /// The server's tool names to expose (`None`: all).
    pub tools: Option<Vec<String>>,
    pub prefix: String,
    /// Tool names (with or without the prefix) whose calls wait for a decision.
    pub require_approval: Vec<String>,
    pub call_timeout: Option<Duration>,
    pub connect_timeout: Duration,
}

impl McpStdioSpec {
    /// Checks the entry at `at` (such as `agents[0].tools[1]`); relative `cwd`s are inside
    /// `data_dir`.
    pub fn check(&self, at: &str, data_dir: &Path) -> Result<McpSourceSpec, ConfigError> {
        if self.command.trim().is_empty() {
            return Err(ConfigError::invalid(
                format!("{at}.command"),
                "must not be empty",
            ));
        }
        let endpoint = Endpoint::Stdio {
            command: self.command.clone(),
            args: self.args.clone(),
            env: self.env.clone().into_iter().collect(),
            cwd: self.cwd.as_ref().map(|cwd| data_dir.join(cwd)),
        };
        common(
            at,
            &self.name,
            endpoint,
            &self.tools,
            &self.prefix,
            &self.require_approval,
            self.timeout_secs,
            self.connect_timeout_secs,
        )
    }
}

impl McpHttpSpec {
    /// Checks the entry at `at`: the URL, the headers, and what to expose.
    pub fn check(&self, at: &str) -> Result<McpSourceSpec, ConfigError> {
        let scheme_ok = self.url.starts_with("http://") || self.url.starts_with("https://");
        if !scheme_ok || self.url.parse::<http::Uri>().is_err() {
            return Err(ConfigError::invalid(
                format!("{at}.url"),
                format!("{:?} is not an http:// or https:// URL", self.url),
            ));
        }
        if self.url.starts_with("https://") {
            return Err(ConfigError::invalid(
                format!("{at}.url"),
                "https is not supported by this build (it has no TLS); use http:// on a \
                 trusted network or a local TLS-terminating proxy",
            ));
        }
        let mut headers = Vec::new();
        for (name, value) in &self.headers {
            let at = format!("{at}.headers.{name}");
            let header = http::HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| ConfigError::invalid(at.clone(), "is not a valid header name"))?;
            // rmcp sets these itself (and refuses them as custom headers).
            let reserved = [
                "accept",
                "mcp-session-id",
                "mcp-protocol-version",
                "last-event-id",
            ];
            if reserved.contains(&header.as_str()) {
                return Err(ConfigError::invalid(
                    at,
                    "is set by the MCP transport itself",
                ));
            }
            let value = http::HeaderValue::from_str(value)
                .map_err(|_| ConfigError::invalid(at, "is not a valid header value"))?;
            headers.push((header, value));
        }
        let endpoint = Endpoint::Http {
            url: self.url.clone(),
            headers,
            sse: self.transport == HttpTransport::Sse,
        };
        common(
            at,
            &self.name,
            endpoint,
            &self.tools,
            &self.prefix,
            &self.require_approval,
            self.timeout_secs,
            self.connect_timeout_secs,
        )
    }
}

/// The checks both kinds share.
#[allow(clippy::too_many_arguments)]
fn common(
    at: &str,
    name: &str,
    endpoint: Endpoint,
    tools: &Option<Vec<String>>,
    prefix: &Option<String>,
    require_approval: &[String],
    timeout_secs: Option<u64>,
    connect_timeout_secs: Option<u64>,
) -> Result<McpSourceSpec, ConfigError> {
    let word = |value: &str| {
        !value.is_empty()
            && value
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.')
    };
    if !word(name) {
        return Err(ConfigError::invalid(
            format!("{at}.name"),
            format!("{name:?} must be non-empty letters, digits, '-', '_' or '.'"),
        ));
    }
    let prefix = prefix.clone().unwrap_or_default();
    if !prefix.is_empty() && !word(&prefix) {
        return Err(ConfigError::invalid(
            format!("{at}.prefix"),
            format!("{prefix:?} must be letters, digits, '-', '_' or '.'"),
        ));
    }
    if let Some(tools) = tools {
        for (index, tool) in tools.iter().enumerate() {
            if tool.trim().is_empty() || tools[..index].contains(tool) {
                return Err(ConfigError::invalid(
                    format!("{at}.tools[{index}]"),
                    format!("{tool:?} is empty or listed twice"),
                ));
            }
        }
        // What is known now is checked now; the rest at first connect.
        let exposed: Vec<&str> = tools.iter().map(String::as_str).collect();
        check_approval(at, &exposed, &prefix, require_approval)
            .map_err(|(path, message)| ConfigError::invalid(path, message))?;
    }
    let seconds = |field: &str, value: Option<u64>| match value {
        Some(0) => Err(ConfigError::invalid(
            format!("{at}.{field}"),
            "must be at least 1",
        )),
        Some(secs) => Ok(Some(Duration::from_secs(secs))),
        None => Ok(None),
    };
    Ok(McpSourceSpec {
        name: name.to_owned(),
        endpoint,
        tools: tools.clone(),
        prefix,
        require_approval: require_approval.to_vec(),
        call_timeout: seconds("timeout_secs", timeout_secs)?,
        connect_timeout: seconds("connect_timeout_secs", connect_timeout_secs)?
            .unwrap_or(DEFAULT_CONNECT_TIMEOUT),
    })
}

/// `require_approval` may name only exposed tools (a typo would silently let calls through).
/// `exposed` holds the server's names; an entry may also carry the prefix.
pub fn check_approval(
    at: &str,
    exposed: &[&str],
    prefix: &str,
    require_approval: &[String],
) -> Result<(), (String, String)> {
    for (index, wanted) in require_approval.iter().enumerate() {
        let known = exposed
            .iter()
            .any(|name| wanted == name || *wanted == format!("{prefix}{name}"));
        if !known {
            return Err((
                format!("{at}.require_approval[{index}]"),
                format!(
                    "{wanted:?} is not an exposed tool of this source (exposed: {})",
                    exposed.join(", ")
                ),
            ));
        }
    }
    Ok(())
}
