//! Pinned tool definitions over REST (docs/rest.md, Tool definitions): the tools held back
//! because their server now describes them otherwise than approved, with what changed, and
//! an operator's approval of one change.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// `GET /api/tools/changes`: every held-back tool of every agent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ToolChanges {
    pub changes: Vec<ToolChange>,
}

/// One tool whose served definition differs from its pinned one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ToolChange {
    /// `namespace/name`.
    pub agent: String,
    /// The name the agent's model and MCP clients see.
    pub tool: String,
    /// The tool source that serves it.
    pub source: String,
    /// The definition approved (or first seen).
    pub pinned: ToolDefinition,
    /// When it was pinned (RFC 3339).
    pub pinned_at: String,
    /// The operator's subject who approved it, or `first use`.
    pub pinned_by: String,
    /// The definition its server serves now.
    pub served: ToolDefinition,
    /// What differs, one entry per changed place, in document order.
    pub changes: Vec<DefinitionChange>,
}

/// A tool's name, description and input schema, and the sha256 of their RFC 8785 text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ToolDefinition {
    pub digest: String,
    pub name: String,
    pub description: String,
    pub input_schema: Value,
}

/// One place where two definitions differ: a JSON pointer into the definition
/// (`/description`, `/inputSchema/properties/path/type`), and the value on each side
/// (absent where that side has none).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DefinitionChange {
    pub at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<Value>,
}

/// `POST /api/tools/changes/approve`: the change an operator approves, named by the digest of
/// the served definition they read, so a definition that changed again since is not approved
/// unseen.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ApproveToolChange {
    pub agent: String,
    pub tool: String,
    pub digest: String,
}
