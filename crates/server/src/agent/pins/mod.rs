//! Pinned tool definitions, against tool poisoning and "rug pulls": the definition (name,
//! description, input schema) of each tool an MCP server serves an agent is pinned by the
//! sha256 of its RFC 8785 text the first time it is seen (the store's `tool_pins`, shared by
//! every replica). A tool whose server later serves another definition is held back: not listed
//! to the model or to MCP clients and refused when called, until an operator approves the
//! change, which revokes every grant made for the old definition. Signoff's own tools (the
//! built-in files, `ask_user`, agents as tools) need no pin.

mod diff;

use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use signoff_protocol::rest::{ApproveToolChange, ToolChange, ToolDefinition};
use tokio_util::sync::CancellationToken;

use crate::agent::error::{AgentError, Result};
use crate::agent::tools::{ExposedTool, PinState, ToolSpec, Toolbox};
use crate::store::{self, Store, ToolPinRow, FIRST_USE};

pub use signoff_protocol::canonical::canonical;

/// The sha256 (hex) of the RFC 8785 text of `value`.
pub fn digest(value: &Value) -> String {
    store::sha256_hex(&canonical(value))
}

/// The pins of every agent's tools.
pub struct ToolPins {
    store: Store,
    /// Each agent's key (`namespace/name`) and tools.
    toolboxes: Vec<(String, Toolbox)>,
    /// The server's: ends the checks that follow sources adding tools.
    shutdown: CancellationToken,
}

/// A tool's definition as pinned: its name, description and input schema.
pub fn definition_of(spec: &ToolSpec) -> Value {
    json!({
        "name": spec.name,
        "description": spec.description,
        "inputSchema": spec.input_schema,
    })
}

impl ToolPins {
    pub fn new(
        store: Store,
        toolboxes: impl IntoIterator<Item = (String, Toolbox)>,
        shutdown: CancellationToken,
    ) -> ToolPins {
        ToolPins {
            store,
            toolboxes: toolboxes.into_iter().collect(),
            shutdown,
        }
    }

    /// Checks every tool not yet checked or held back against its pin, pinning the ones seen
    /// for the first time: a held-back tool another replica's operator approved is usable
    /// here once this runs.
    pub async fn check(&self) -> Result<()> {
        for (agent, toolbox) in &self.toolboxes {
            check_toolbox(&self.store, agent, toolbox).await?;
        }
        Ok(())
    }

    /// Checks each agent's tools whenever a source adds some (an MCP server that connected
    /// after the start), until the server shuts down. A check the store fails is tried again
    /// shortly; the tools stay held back meanwhile.
    pub fn keep_checking(self: &Arc<Self>) {
        for (agent, toolbox) in &self.toolboxes {
            let (pins, agent, toolbox) = (self.clone(), agent.clone(), toolbox.clone());
            let shutdown = self.shutdown.clone();
            tokio::spawn(async move {
                loop {
                    tokio::select! {
                        () = toolbox.tools_added() => {}
                        () = shutdown.cancelled() => return,
                    }
                    while let Err(err) = check_toolbox(&pins.store, &agent, &toolbox).await {
                        tracing::warn!(agent = %agent, error = %err, "tool pins not checked; trying again");
                        tokio::time::sleep(Duration::from_secs(5)).await;
                    }
                }
            });
        }
    }

    /// Every held-back tool of every agent, with what changed.
    pub async fn changes(&self) -> Result<Vec<ToolChange>> {
        self.check().await?;
        let mut changes = Vec::new();
        for (agent, toolbox) in &self.toolboxes {
            for tool in toolbox.every_tool() {
                if let PinState::Changed(pinned) = &tool.pin {
                    changes.push(change_of(agent, &tool, pinned)?);
                }
            }
        }
        Ok(changes)
    }

    /// `operator` approves the served definition of a held-back tool, named by its digest:
    /// it becomes the pin, the tool is usable again, and the grants made for the old
    /// definition are revoked. Returns the change approved.
    pub async fn approve(&self, operator: &str, approve: &ApproveToolChange) -> Result<ToolChange> {
        let (agent, toolbox) = self
            .toolboxes
            .iter()
            .find(|(agent, _)| *agent == approve.agent)
            .ok_or_else(|| AgentError::AgentNotFound(approve.agent.clone()))?;
        check_toolbox(&self.store, agent, toolbox).await?;
        let tool = toolbox
            .every_tool()
            .into_iter()
            .find(|tool| tool.spec.name == approve.tool)
            .ok_or_else(|| {
                AgentError::InvalidParams(format!("agent {agent} has no tool {}", approve.tool))
            })?;
        let PinState::Changed(pinned) = &tool.pin else {
            return Err(AgentError::NotPaused(format!(
                "the tool {} of agent {agent} is not held back: nothing to approve",
                approve.tool
            )));
        };
        let change = change_of(agent, &tool, pinned)?;
        if change.served.digest != approve.digest {
            return Err(AgentError::InvalidParams(format!(
                "the tool {} is served with definition {}, not {}: read the change again",
                approve.tool, change.served.digest, approve.digest
            )));
        }
        let pin = ToolPinRow {
            agent: agent.clone(),
            tool: tool.spec.name.clone(),
            source: tool.spec.source.clone(),
            digest: change.served.digest.clone(),
            definition: canonical(&definition_of(&tool.spec)),
            pinned_at: store::now(),
            pinned_by: operator.to_owned(),
        };
        if !self.store.repin_tool(pin, &pinned.digest).await? {
            return Err(AgentError::Conflict(
                "the tool's pin changed meanwhile (another operator approved a change): read the \
                 changes again",
            ));
        }
        toolbox.set_pin(&tool.spec.name, PinState::Pinned);
        tracing::info!(agent = %agent, tool = %tool.spec.name, operator, "tool definition change approved");
        Ok(change)
    }
}

/// Checks `agent`'s tools that are not yet checked or are held back against their pins.
async fn check_toolbox(store: &Store, agent: &str, toolbox: &Toolbox) -> Result<()> {
    let open: Vec<ExposedTool> = toolbox
        .every_tool()
        .into_iter()
        .filter(|tool| matches!(tool.pin, PinState::Unchecked | PinState::Changed(_)))
        .collect();
    if open.is_empty() {
        return Ok(());
    }
    let pins = store.tool_pins(agent).await?;
    for tool in open {
        let definition = definition_of(&tool.spec);
        let served = digest(&definition);
        let pin = match pins.iter().find(|pin| pin.tool == tool.spec.name) {
            Some(pin) => pin.clone(),
            None => {
                let first = ToolPinRow {
                    agent: agent.to_owned(),
                    tool: tool.spec.name.clone(),
                    source: tool.spec.source.clone(),
                    digest: served.clone(),
                    definition: canonical(&definition),
                    pinned_at: store::now(),
                    pinned_by: FIRST_USE.to_owned(),
                };
                store.pin_first_seen(first).await?
            }
        };
        let state = match pin.digest == served {
            true => PinState::Pinned,
            false => {
                if tool.pin == PinState::Unchecked {
                    tracing::warn!(agent, tool = %tool.spec.name, source = %tool.spec.source, pinned = %pin.digest, served = %served, "tool held back: its server describes it otherwise than approved");
                }
                PinState::Changed(Box::new(pin))
            }
        };
        toolbox.set_pin(&tool.spec.name, state);
    }
    Ok(())
}

/// The change of a held-back `tool` from its `pinned` definition.
fn change_of(agent: &str, tool: &ExposedTool, pinned: &ToolPinRow) -> Result<ToolChange> {
    let before: Value = serde_json::from_str(&pinned.definition).map_err(|err| {
        AgentError::Internal(format!(
            "the pin of tool {} is not JSON: {err}",
            pinned.tool
        ))
    })?;
    let after = definition_of(&tool.spec);
    Ok(ToolChange {
        agent: agent.to_owned(),
        tool: tool.spec.name.clone(),
        source: tool.spec.source.clone(),
        changes: diff::changes(&before, &after),
        pinned: definition(&before, pinned.digest.clone()),
        pinned_at: pinned.pinned_at.clone(),
        pinned_by: pinned.pinned_by.clone(),
        served: definition(&after, digest(&after)),
    })
}

fn definition(value: &Value, digest: String) -> ToolDefinition {
    let text = |key: &str| {
        value
            .get(key)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned()
    };
    ToolDefinition {
        digest,
        name: text("name"),
        description: text("description"),
        input_schema: value.get("inputSchema").cloned().unwrap_or(Value::Null),
    }
}
