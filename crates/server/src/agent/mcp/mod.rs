//! MCP servers as tool sources, through rmcp (the official Rust SDK): the agents-file entries
//! (`mcp_stdio`, `mcp_http`), their checks, and [`McpSource`], which serves one server's tools
//! (filtered and prefixed) over a shared, self-healing [`Connection`].
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

pub mod connection;
pub mod kagent;
pub mod sse;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use futures_util::future::BoxFuture;
use serde::Deserialize;
use serde_json::{json, Map, Value};
use tokio::time::Instant;

use super::config::ConfigError;
use super::tools::{ToolError, ToolSource, ToolSpec, Toolbox};
use connection::{CallError, Live};
pub use connection::{Connection, Endpoint, State};

/// Default wait for a server to start and answer the MCP handshake.
const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(20);
/// A call that finds its server reconnecting waits for the attempt if it starts this soon;
/// otherwise it fails at once with the last error.
const RECONNECT_PATIENCE: Duration = Duration::from_secs(2);

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
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HttpTransport {
    #[default]
    StreamableHttp,
    /// The legacy HTTP+SSE transport (MCP 2024-11-05), as kagent's `sse_tools` use.
    Sse,
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

fn invalid(path: String, message: String) -> ConfigError {
    ConfigError::Invalid { path, message }
}

impl McpStdioSpec {
    /// Checks the entry at `at` (such as `agents[0].tools[1]`); relative `cwd`s are inside
    /// `data_dir`.
    pub fn check(&self, at: &str, data_dir: &Path) -> Result<McpSourceSpec, ConfigError> {
        if self.command.trim().is_empty() {
            return Err(invalid(format!("{at}.command"), "must not be empty".into()));
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
            return Err(invalid(
                format!("{at}.url"),
                format!("{:?} is not an http:// or https:// URL", self.url),
            ));
        }
        if self.url.starts_with("https://") {
            return Err(invalid(
                format!("{at}.url"),
                "https is not supported by this build (it has no TLS); use http:// on a \
                 trusted network or a local TLS-terminating proxy"
                    .into(),
            ));
        }
        let mut headers = Vec::new();
        for (name, value) in &self.headers {
            let at = format!("{at}.headers.{name}");
            let header = http::HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| invalid(at.clone(), "is not a valid header name".into()))?;
            // rmcp sets these itself (and refuses them as custom headers).
            let reserved = [
                "accept",
                "mcp-session-id",
                "mcp-protocol-version",
                "last-event-id",
            ];
            if reserved.contains(&header.as_str()) {
                return Err(invalid(at, "is set by the MCP transport itself".into()));
            }
            let value = http::HeaderValue::from_str(value)
                .map_err(|_| invalid(at, "is not a valid header value".into()))?;
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
        return Err(invalid(
            format!("{at}.name"),
            format!("{name:?} must be non-empty letters, digits, '-', '_' or '.'"),
        ));
    }
    let prefix = prefix.clone().unwrap_or_default();
    if !prefix.is_empty() && !word(&prefix) {
        return Err(invalid(
            format!("{at}.prefix"),
            format!("{prefix:?} must be letters, digits, '-', '_' or '.'"),
        ));
    }
    if let Some(tools) = tools {
        for (index, tool) in tools.iter().enumerate() {
            if tool.trim().is_empty() || tools[..index].contains(tool) {
                return Err(invalid(
                    format!("{at}.tools[{index}]"),
                    format!("{tool:?} is empty or listed twice"),
                ));
            }
        }
        // What is known now is checked now; the rest at first connect.
        let exposed: Vec<&str> = tools.iter().map(String::as_str).collect();
        check_approval(at, &exposed, &prefix, require_approval)
            .map_err(|(path, message)| invalid(path, message))?;
    }
    let seconds = |field: &str, value: Option<u64>| match value {
        Some(0) => Err(invalid(
            format!("{at}.{field}"),
            "must be at least 1".into(),
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
fn check_approval(
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

/// One tool as an agent exposes it.
#[derive(Debug, Clone, PartialEq)]
pub struct Exposed {
    pub spec: ToolSpec,
    pub requires_approval: bool,
}

/// An MCP server's tools as one agent's tool source.
pub struct McpSource {
    spec: McpSourceSpec,
    connection: Arc<Connection>,
    /// The agents-file path of this entry, for errors found at first connect.
    at: String,
    /// Set when the server, first reached after start, turned out not to fit the configuration
    /// (a `require_approval` or `tools` name it lacks, a clashing tool name): the source then
    /// serves nothing, and says why.
    refused: OnceLock<String>,
}

impl McpSource {
    /// Starts connecting in the background (several sources may share one connection).
    pub fn new(spec: McpSourceSpec, connection: Arc<Connection>, at: String) -> McpSource {
        McpSource {
            spec,
            connection,
            at,
            refused: OnceLock::new(),
        }
    }

    pub fn spec(&self) -> &McpSourceSpec {
        &self.spec
    }

    pub fn connection(&self) -> &Arc<Connection> {
        &self.connection
    }

    /// What this source exposes of the server's current tools: the `tools` filter, the prefix
    /// and `require_approval`, each checked against what the server really offers.
    pub fn expose(&self, offered: &[rmcp::model::Tool]) -> Result<Vec<Exposed>, ConfigError> {
        let names: Vec<&str> = offered.iter().map(|tool| tool.name.as_ref()).collect();
        if let Some(wanted) = &self.spec.tools {
            for (index, name) in wanted.iter().enumerate() {
                if !names.contains(&name.as_str()) {
                    return Err(invalid(
                        format!("{}.tools[{index}]", self.at),
                        format!(
                            "the MCP server {} has no tool named {name:?} (it has: {})",
                            self.spec.name,
                            names.join(", ")
                        ),
                    ));
                }
            }
        }
        let chosen: Vec<&rmcp::model::Tool> = offered
            .iter()
            .filter(|tool| {
                self.spec
                    .tools
                    .as_ref()
                    .is_none_or(|wanted| wanted.iter().any(|name| name == tool.name.as_ref()))
            })
            .collect();
        let exposed_names: Vec<&str> = chosen.iter().map(|tool| tool.name.as_ref()).collect();
        check_approval(
            &self.at,
            &exposed_names,
            &self.spec.prefix,
            &self.spec.require_approval,
        )
        .map_err(|(path, message)| invalid(path, message))?;
        Ok(chosen
            .into_iter()
            .map(|tool| {
                let name = format!("{}{}", self.spec.prefix, tool.name);
                let requires_approval = self
                    .spec
                    .require_approval
                    .iter()
                    .any(|wanted| *wanted == name || wanted == tool.name.as_ref());
                Exposed {
                    spec: ToolSpec {
                        name,
                        description: tool.description.as_deref().unwrap_or_default().to_owned(),
                        input_schema: Value::Object((*tool.input_schema).clone()),
                        source: self.spec.name.clone(),
                    },
                    requires_approval,
                }
            })
            .collect())
    }

    /// Waits for the first connection (up to the connect timeout) and returns what it exposes.
    pub async fn first_connect(&self) -> Result<Vec<Exposed>, FirstConnect> {
        let deadline = Instant::now() + self.spec.connect_timeout;
        let live = self
            .connection
            .live(deadline, Duration::ZERO)
            .await
            .map_err(FirstConnect::Unavailable)?;
        self.expose(&live.tools).map_err(FirstConnect::Refused)
    }

    /// Why the source cannot serve calls right now (`None`: it can, or is about to).
    pub fn unavailable(&self) -> Option<String> {
        if let Some(refused) = self.refused.get() {
            return Some(refused.clone());
        }
        match self.connection.state() {
            State::Ready(_) | State::Connecting { last_error: None } => None,
            State::Connecting {
                last_error: Some(error),
            }
            | State::Down { error, .. } => Some(error),
            State::Stopped { reason } => Some(reason),
        }
    }

    async fn call_tool(
        &self,
        tool: &str,
        args: Value,
        timeout: Duration,
    ) -> Result<Value, ToolError> {
        if let Some(refused) = self.refused.get() {
            return Err(ToolError::Unavailable(refused.clone()));
        }
        let timeout = self
            .spec
            .call_timeout
            .map_or(timeout, |own| own.min(timeout));
        let deadline = Instant::now() + timeout;
        let Some(server_tool) = tool.strip_prefix(self.spec.prefix.as_str()) else {
            return Err(ToolError::Unknown(tool.to_owned()));
        };
        let live: Live = self
            .connection
            .live(deadline, RECONNECT_PATIENCE)
            .await
            .map_err(ToolError::Unavailable)?;
        let exposed = self
            .spec
            .tools
            .as_ref()
            .is_none_or(|wanted| wanted.iter().any(|name| name == server_tool));
        let Some(definition) = live
            .tools
            .iter()
            .find(|offered| exposed && offered.name == server_tool)
        else {
            return Err(ToolError::Failed(format!(
                "the MCP server {} no longer offers a tool named {server_tool}",
                self.spec.name
            )));
        };
        let arguments = match args {
            Value::Object(arguments) => arguments,
            Value::Null => Map::new(),
            other @ (Value::Bool(_) | Value::Number(_) | Value::String(_) | Value::Array(_)) => {
                return Err(ToolError::InvalidArgs(format!(
                    "invalid arguments for {tool}: expected an object, got {other}"
                )))
            }
        };
        let schema = Value::Object((*definition.input_schema).clone());
        crate::agent::schema::check(&schema, &Value::Object(arguments.clone())).map_err(
            |error| {
                ToolError::InvalidArgs(format!(
                    "invalid arguments for {tool}: {error}. Its input schema is {schema}"
                ))
            },
        )?;
        let call = self.connection.call(&live, server_tool, arguments);
        match tokio::time::timeout_at(deadline, call).await {
            Err(_elapsed) => Err(ToolError::Timeout(timeout.as_secs())),
            Ok(Ok(result)) => {
                let mut response = serde_json::to_value(&result)
                    .map_err(|error| ToolError::Failed(format!("unreadable result: {error}")))?;
                // `isError` is optional in MCP; the UI and models read it, so always set it.
                if let Value::Object(fields) = &mut response {
                    fields.insert("isError".into(), json!(result.is_error.unwrap_or(false)));
                }
                Ok(response)
            }
            Ok(Err(CallError::Unavailable(error))) => Err(ToolError::Unavailable(error)),
            Ok(Err(CallError::Lost(error))) => Err(ToolError::Failed(format!(
                "{error}; it is being restarted, so trying again may work"
            ))),
            Ok(Err(CallError::Rejected(error))) => Err(ToolError::Failed(format!(
                "the MCP server {} refused the call: {error}",
                self.spec.name
            ))),
        }
    }
}

/// Why a source has no tools after its first connect.
#[derive(Debug)]
pub enum FirstConnect {
    /// The server could not be reached in time; it keeps being retried.
    Unavailable(String),
    /// The server answered, but the configuration does not fit what it offers.
    Refused(ConfigError),
}

impl ToolSource for McpSource {
    fn name(&self) -> &str {
        &self.spec.name
    }

    fn list_tools(&self) -> BoxFuture<'_, Result<Vec<ToolSpec>, ToolError>> {
        Box::pin(async move {
            match self.first_connect().await {
                Ok(exposed) => Ok(exposed.into_iter().map(|tool| tool.spec).collect()),
                Err(FirstConnect::Unavailable(error)) => Err(ToolError::Unavailable(error)),
                Err(FirstConnect::Refused(error)) => Err(ToolError::Failed(error.to_string())),
            }
        })
    }

    fn call<'a>(
        &'a self,
        tool: &'a str,
        args: Value,
        timeout: Duration,
    ) -> BoxFuture<'a, Result<Value, ToolError>> {
        Box::pin(self.call_tool(tool, args, timeout))
    }

    fn unavailable(&self) -> Option<String> {
        McpSource::unavailable(self)
    }
}

/// Adds an MCP source to an agent's tools. If its server answers within the connect timeout,
/// its tools are checked and added now, and a misfit (a `require_approval` or `tools` name the
/// server lacks, a tool name another source exposes) refuses the agents file. If not, the agent
/// serves without them, reports the source unavailable, and the tools are checked and added
/// when the server first connects (a misfit then disables the source, saying why).
pub async fn attach(source: Arc<McpSource>, toolbox: &Toolbox) -> Result<(), ConfigError> {
    let dynamic: Arc<dyn ToolSource> = source.clone();
    toolbox.add_source(dynamic.clone());
    match source.first_connect().await {
        Ok(exposed) => toolbox
            .add_all(into_pairs(exposed), dynamic)
            .map_err(|message| invalid(source.at.clone(), message)),
        Err(FirstConnect::Refused(error)) => Err(error),
        Err(FirstConnect::Unavailable(error)) => {
            tracing::warn!(
                source = %source.spec.name,
                "{error}; the agent serves without its tools until it connects"
            );
            let weak = Arc::downgrade(&source);
            let mut state = source.connection.subscribe();
            let toolbox = toolbox.clone();
            tokio::spawn(async move {
                // Ends when the server first connects, or when the source is dropped.
                while state.changed().await.is_ok() {
                    let ready = matches!(*state.borrow_and_update(), State::Ready(_));
                    if !ready {
                        continue;
                    }
                    let Some(source) = weak.upgrade() else { return };
                    let added = match source.first_connect().await {
                        Ok(exposed) => toolbox
                            .add_all(into_pairs(exposed), source.clone())
                            .map_err(|message| invalid(source.at.clone(), message).to_string()),
                        Err(FirstConnect::Refused(error)) => Err(error.to_string()),
                        Err(FirstConnect::Unavailable(_)) => continue,
                    };
                    match added {
                        Ok(()) => tracing::info!(source = %source.spec.name, "tools added"),
                        Err(message) => {
                            tracing::error!(source = %source.spec.name, "{message}");
                            let _ = source.refused.set(message);
                        }
                    }
                    return;
                }
            });
            Ok(())
        }
    }
}

fn into_pairs(exposed: Vec<Exposed>) -> Vec<(ToolSpec, bool)> {
    exposed
        .into_iter()
        .map(|tool| (tool.spec, tool.requires_approval))
        .collect()
}

/// Opens each distinct server once: sources with the same endpoint share a connection.
#[derive(Default)]
pub struct Connections {
    open: Vec<(Endpoint, Arc<Connection>)>,
}

impl Connections {
    pub fn get(&mut self, spec: &McpSourceSpec) -> Arc<Connection> {
        if let Some((_, connection)) = self
            .open
            .iter()
            .find(|(endpoint, _)| *endpoint == spec.endpoint)
        {
            return connection.clone();
        }
        let connection = Connection::open(
            spec.name.clone(),
            spec.endpoint.clone(),
            spec.connect_timeout,
        );
        self.open.push((spec.endpoint.clone(), connection.clone()));
        connection
    }
}
