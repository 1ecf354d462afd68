//! Tool calls and their results as DataParts (docs/wire.md, Tool calls and results).

use serde_json::{json, Value};

use super::kagent;
use super::keys::{FUNCTION_CALL, FUNCTION_RESPONSE, KAGENT_TYPE};
use crate::model::Part;

/// A tool call the model asked for: a `function_call` DataPart.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    /// The model's own call id.
    pub id: String,
    pub name: String,
    pub args: Value,
}

/// The result of a tool call: a `function_response` DataPart.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolResult {
    pub id: String,
    pub name: String,
    /// `{"isError": true, …}` marks a failed call; `{"status":"rejected","reason":…}` a rejected one.
    pub response: Value,
}

impl ToolCall {
    /// A `function_call` DataPart: `{"id","name","args"}` with `kagent_type: function_call`.
    pub fn to_part(&self) -> Part {
        Part::data(json!({"id": self.id, "name": self.name, "args": self.args}))
            .with_metadata(KAGENT_TYPE, json!(FUNCTION_CALL))
    }

    /// Reads a `function_call` DataPart. kagent's `adk_request_confirmation` calls are not tool
    /// calls (they are its approval requests, read by [`ApprovalInterrupt::from_message`]).
    pub fn from_part(part: &Part) -> Option<ToolCall> {
        if part.metadata_str(KAGENT_TYPE) != Some(FUNCTION_CALL) {
            return None;
        }
        let data = part.as_data()?.as_object()?;
        let name = data.get("name")?.as_str()?;
        if name == kagent::REQUEST_CONFIRMATION {
            return None;
        }
        Some(ToolCall {
            id: data.get("id")?.as_str()?.to_owned(),
            name: name.to_owned(),
            args: data.get("args").cloned().unwrap_or_else(|| json!({})),
        })
    }
}

impl ToolResult {
    /// A `function_response` DataPart: `{"id","name","response"}` with `kagent_type: function_response`.
    pub fn to_part(&self) -> Part {
        Part::data(json!({"id": self.id, "name": self.name, "response": self.response}))
            .with_metadata(KAGENT_TYPE, json!(FUNCTION_RESPONSE))
    }

    pub fn from_part(part: &Part) -> Option<ToolResult> {
        if part.metadata_str(KAGENT_TYPE) != Some(FUNCTION_RESPONSE) {
            return None;
        }
        let data = part.as_data()?.as_object()?;
        let name = data.get("name")?.as_str()?;
        if name == kagent::REQUEST_CONFIRMATION {
            return None;
        }
        Some(ToolResult {
            id: data.get("id")?.as_str()?.to_owned(),
            name: name.to_owned(),
            response: data.get("response").cloned().unwrap_or(Value::Null),
        })
    }

    /// The result of a call the person rejected: `{"status":"rejected","reason":…}`
    /// (docs/wire.md, Resume).
    pub fn rejected(
        id: impl Into<String>,
        name: impl Into<String>,
        reason: Option<&str>,
    ) -> ToolResult {
        let mut response = json!({"status": REJECTED});
        if let (Some(reason), Some(object)) = (reason, response.as_object_mut()) {
            object.insert("reason".to_owned(), json!(reason));
        }
        ToolResult {
            id: id.into(),
            name: name.into(),
            response,
        }
    }

    /// `response.isError: true` marks a failed call (MCP's convention, which kagent keeps).
    pub fn is_error(&self) -> bool {
        self.response.get("isError").and_then(Value::as_bool) == Some(true)
    }

    /// A rejected call, in either dialect (kagent writes the rejection as a sentence).
    pub fn is_rejected(&self) -> bool {
        self.response.get("status").and_then(Value::as_str) == Some(REJECTED)
            || kagent::is_rejection(&self.response)
    }

    /// Why the person rejected the call, if the result says.
    pub fn rejection_reason(&self) -> Option<&str> {
        if self.response.get("status").and_then(Value::as_str) == Some(REJECTED) {
            return self.response.get("reason").and_then(Value::as_str);
        }
        kagent::rejection_reason(&self.response)
    }
}

const REJECTED: &str = "rejected";
