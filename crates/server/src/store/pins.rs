//! The rows of pinned tool definitions (`agent::pins`): the definition of each MCP tool an
//! agent exposes that was seen first or approved since. Each backend's `pins` reads and writes
//! them.

/// The approved definition of one tool of one agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolPinRow {
    pub agent: String,
    pub tool: String,
    pub source: String,
    /// The sha256 (hex) of `definition`.
    pub digest: String,
    /// RFC 8785 canonical JSON of the tool's name, description and input schema.
    pub definition: String,
    pub pinned_at: String,
    /// Who approved it: a person's subject, or [`FIRST_USE`].
    pub pinned_by: String,
}

/// The `pinned_by` of a definition pinned because it was the first one seen.
pub const FIRST_USE: &str = "first use";

pub(super) const PIN_SELECT: &str =
    "SELECT agent, tool, source, digest, definition, pinned_at, pinned_by FROM tool_pins";
