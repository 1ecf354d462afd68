//! MCP servers as tool sources, through rmcp (the official Rust SDK): [`McpSource`] serves the
//! tools of one checked agents-file entry (`config::McpSourceSpec`: filtered, prefixed, some
//! held for approval) over a shared, self-healing [`Connection`]. The entries (`mcp_stdio`,
//! `mcp_http`) and their checks are in `agent::config`.

pub mod asking;
pub mod codex;
pub mod connection;
pub mod direct;
pub mod sse;
pub mod stdio;

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use futures_util::future::BoxFuture;
use serde_json::{json, Map, Value};
use tokio::time::Instant;

use super::config::{check_approval, ConfigError, Endpoint, McpSourceSpec};
use super::tools::{within, SharedAsker, ToolError, ToolSource, ToolSpec, Toolbox};
use connection::{CallError, Live};
pub use connection::{Connection, State};

/// A call that finds its server reconnecting waits for the attempt if it starts this soon;
/// otherwise it fails at once with the last error.
const RECONNECT_PATIENCE: Duration = Duration::from_secs(2);

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
                    return Err(ConfigError::invalid(
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
        .map_err(|(path, message)| ConfigError::invalid(path, message))?;
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
                        hints: hints_of(tool.annotations.as_ref()),
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
        asker: Option<SharedAsker>,
    ) -> Result<Value, ToolError> {
        if let Some(refused) = self.refused.get() {
            return Err(ToolError::Unavailable(refused.clone()));
        }
        let timeout = self
            .spec
            .call_timeout
            .map_or(timeout, |own| own.min(timeout));
        let started = Instant::now();
        let deadline = started + timeout;
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
        // Compiled when the connection listed its tools; a tool always has its entry.
        if let Some(schema) = live.schemas.get(server_tool) {
            schema
                .check(&Value::Object(arguments.clone()))
                .map_err(|error| {
                    ToolError::InvalidArgs(format!(
                        "invalid arguments for {tool}: {error}. Its input schema is {}",
                        Value::Object((*definition.input_schema).clone())
                    ))
                })?;
        }
        let call = self
            .connection
            .call(&live, server_tool, arguments, asker.clone());
        match within(call, started, timeout, asker.as_ref()).await {
            None => Err(ToolError::Timeout(timeout.as_secs())),
            Some(Ok(result)) => {
                let mut response = serde_json::to_value(&result)
                    .map_err(|error| ToolError::Failed(format!("unreadable result: {error}")))?;
                // `isError` is optional in MCP; the UI and models read it, so always set it.
                if let Value::Object(fields) = &mut response {
                    fields.insert("isError".into(), json!(result.is_error.unwrap_or(false)));
                }
                Ok(response)
            }
            Some(Err(CallError::Unavailable(error))) => Err(ToolError::Unavailable(error)),
            Some(Err(CallError::Lost(error))) => Err(ToolError::Failed(format!(
                "{error}; it is being restarted, so trying again may work"
            ))),
            Some(Err(CallError::Rejected(error))) => Err(ToolError::Failed(format!(
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
        Box::pin(self.call_tool(tool, args, timeout, None))
    }

    fn call_asking<'a>(
        &'a self,
        tool: &'a str,
        args: Value,
        timeout: Duration,
        asker: SharedAsker,
    ) -> BoxFuture<'a, Result<Value, ToolError>> {
        Box::pin(self.call_tool(tool, args, timeout, Some(asker)))
    }

    fn unavailable(&self) -> Option<String> {
        McpSource::unavailable(self)
    }

    fn pins_definitions(&self) -> bool {
        true
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
            .map_err(|message| ConfigError::invalid(source.at.clone(), message)),
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
                            .map_err(|message| {
                                ConfigError::invalid(source.at.clone(), message).to_string()
                            }),
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

/// MCP's tool annotations as the policies read them; a hint the server leaves out takes MCP's
/// default.
fn hints_of(annotations: Option<&rmcp::model::ToolAnnotations>) -> crate::agent::cedar::ToolHints {
    let defaults = crate::agent::cedar::ToolHints::default();
    let Some(annotations) = annotations else {
        return defaults;
    };
    crate::agent::cedar::ToolHints {
        read_only: annotations.read_only_hint.unwrap_or(defaults.read_only),
        destructive: annotations.destructive_hint.unwrap_or(defaults.destructive),
        idempotent: annotations.idempotent_hint.unwrap_or(defaults.idempotent),
        open_world: annotations.open_world_hint.unwrap_or(defaults.open_world),
    }
}
