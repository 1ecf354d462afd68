//! The tool seam: a [`ToolSource`] lists and calls tools (the built-in file tools now; MCP
//! servers later), and a [`Toolbox`] is one agent's tools with their approval rules.

use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use serde_json::{json, Value};

/// What the model is told about one tool.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    /// JSON Schema of the arguments object.
    pub input_schema: Value,
    /// The name of the source that serves it (an MCP server's name, or `files`).
    pub source: String,
}

/// Why a tool call failed; the text goes to the model (and the person) as the call's error.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ToolError {
    #[error("{0}")]
    InvalidArgs(String),
    #[error("{0}")]
    Failed(String),
    #[error("the tool did not answer within {0} s")]
    Timeout(u64),
    #[error("no tool named {0}")]
    Unknown(String),
    #[error("the tool source could not be reached: {0}")]
    Unavailable(String),
}

/// A place tools come from.
pub trait ToolSource: Send + Sync + 'static {
    /// The source's name, shown as an action request's `server`.
    fn name(&self) -> &str;
    fn list_tools(&self) -> BoxFuture<'_, Result<Vec<ToolSpec>, ToolError>>;
    /// Calls one tool; the result is the `response` object of the `function_response` part.
    /// The source should give up after `timeout` (the runtime also stops waiting then).
    fn call<'a>(
        &'a self,
        tool: &'a str,
        args: Value,
        timeout: Duration,
    ) -> BoxFuture<'a, Result<Value, ToolError>>;
}

/// A successful tool result in the MCP `CallToolResult` shape that kagent shows.
pub fn text_result(text: impl Into<String>) -> Value {
    json!({"content": [{"type": "text", "text": text.into()}], "isError": false})
}

/// A failed tool result: `isError: true` marks it in the UI (spec/wire.md §3).
pub fn error_result(text: impl Into<String>) -> Value {
    json!({"content": [{"type": "text", "text": text.into()}], "isError": true})
}

/// The text of a tool result (its text content items joined), for models that read text.
pub fn result_text(response: &Value) -> String {
    match response.get("content").and_then(Value::as_array) {
        Some(items) => items
            .iter()
            .filter_map(|item| item.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        None => response.to_string(),
    }
}

/// One exposed tool of an agent.
#[derive(Clone)]
pub struct ExposedTool {
    pub spec: ToolSpec,
    pub requires_approval: bool,
    source: Arc<dyn ToolSource>,
}

/// An agent's tools: what the model may call and which calls wait for a person.
#[derive(Clone, Default)]
pub struct Toolbox {
    tools: Vec<ExposedTool>,
}

impl Toolbox {
    pub fn new() -> Self {
        Toolbox::default()
    }

    pub fn add(&mut self, spec: ToolSpec, requires_approval: bool, source: Arc<dyn ToolSource>) {
        self.tools.push(ExposedTool {
            spec,
            requires_approval,
            source,
        });
    }

    pub fn tools(&self) -> &[ExposedTool] {
        &self.tools
    }

    pub fn specs(&self) -> Vec<ToolSpec> {
        self.tools.iter().map(|tool| tool.spec.clone()).collect()
    }

    pub fn get(&self, name: &str) -> Option<&ExposedTool> {
        self.tools.iter().find(|tool| tool.spec.name == name)
    }

    /// Whether a call of `name` must wait for a decision. Unknown tools never run, so they
    /// need none (their call fails with "no tool named …").
    pub fn requires_approval(&self, name: &str) -> bool {
        self.get(name).is_some_and(|tool| tool.requires_approval)
    }

    /// Calls a tool with a timeout; every failure becomes an error result for the model.
    pub async fn call(&self, name: &str, args: Value, timeout: Duration) -> Value {
        let Some(tool) = self.get(name) else {
            return error_result(ToolError::Unknown(name.to_owned()).to_string());
        };
        let call = tool.source.call(name, args, timeout);
        match tokio::time::timeout(timeout, call).await {
            Ok(Ok(response)) => response,
            Ok(Err(err)) => error_result(err.to_string()),
            Err(_elapsed) => error_result(ToolError::Timeout(timeout.as_secs()).to_string()),
        }
    }
}
