//! Agents as tools: each agent an agent lists in `agents` is one tool of its toolbox, with one
//! `request` text argument. The runtime runs such a call as a task on the subagent
//! (`runtime::subagent`), never through [`ToolSource::call`].

use std::collections::BTreeMap;

use futures_util::future::BoxFuture;
use serde_json::{json, Value};

use super::config::{agent_tool_name, AgentSpec, AgentsFile, RemoteSpec, AGENT_TOOL_ARG};
use super::tools::{ToolError, ToolSource, ToolSpec};

/// The tool source name of agent-tools, shown as their action requests' `server`.
pub const AGENTS_SOURCE: &str = "agents";

/// One subagent an agent may call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subagent {
    /// `namespace/name`.
    pub agent: String,
    /// Where a remote one is served; `None` for an agent this server runs.
    pub remote: Option<RemoteSpec>,
}

/// An agent's subagents by tool name, and the tools they are.
#[derive(Debug, Clone, Default)]
pub struct Subagents {
    by_tool: BTreeMap<String, Subagent>,
}

impl Subagents {
    /// The subagents `spec` lists in `file` (a checked file: each names an agent of it).
    pub fn of(spec: &AgentSpec, file: &AgentsFile) -> (Subagents, Vec<ToolSpec>) {
        let mut subagents = Subagents::default();
        let mut specs = Vec::new();
        for agent_ref in &spec.agents {
            let Some(target) = file
                .agents
                .iter()
                .find(|agent| format!("{}/{}", agent.namespace, agent.name) == *agent_ref)
            else {
                continue;
            };
            let name = agent_tool_name(agent_ref);
            let about = if target.description.trim().is_empty() {
                format!("the agent {agent_ref}")
            } else {
                target.description.trim().to_owned()
            };
            specs.push(ToolSpec {
                name: name.clone(),
                description: format!(
                    "Asks the agent {agent_ref} to do something and returns its answer. {about}"
                ),
                input_schema: json!({
                    "type": "object",
                    "properties": {
                        AGENT_TOOL_ARG: {
                            "type": "string",
                            "description": "What the agent should do, in words."
                        }
                    },
                    "required": [AGENT_TOOL_ARG],
                    "additionalProperties": false
                }),
                source: AGENTS_SOURCE.to_owned(),
                hints: Default::default(),
            });
            subagents.by_tool.insert(
                name,
                Subagent {
                    agent: agent_ref.clone(),
                    remote: target.remote.clone(),
                },
            );
        }
        (subagents, specs)
    }

    /// The subagent a tool name calls, if it is an agent-tool.
    pub fn get(&self, tool: &str) -> Option<&Subagent> {
        self.by_tool.get(tool)
    }

    /// The subagent `agent` (`namespace/name`), if it is one of these.
    pub fn by_agent(&self, agent: &str) -> Option<&Subagent> {
        self.by_tool
            .values()
            .find(|subagent| subagent.agent == agent)
    }
}

/// The source of agent-tools in a toolbox: it lists them; the runtime runs their calls.
pub struct AgentTools {
    pub specs: Vec<ToolSpec>,
}

impl ToolSource for AgentTools {
    fn name(&self) -> &str {
        AGENTS_SOURCE
    }

    fn list_tools(&self) -> BoxFuture<'_, Result<Vec<ToolSpec>, ToolError>> {
        let specs = self.specs.clone();
        Box::pin(async move { Ok(specs) })
    }

    fn call<'a>(
        &'a self,
        tool: &'a str,
        _args: Value,
        _timeout: std::time::Duration,
    ) -> BoxFuture<'a, Result<Value, ToolError>> {
        // Reached only if a caller bypasses the runtime, which runs agent-tools as tasks.
        let message = format!("{tool} is an agent: its calls run as the agent's tasks");
        Box::pin(async move { Err(ToolError::Failed(message)) })
    }
}

/// The text of a call's `request` argument.
pub fn request_text(args: &Value) -> Option<&str> {
    args.get(AGENT_TOOL_ARG)
        .and_then(Value::as_str)
        .filter(|text| !text.trim().is_empty())
}
