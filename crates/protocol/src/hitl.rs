//! Human-in-the-loop payloads: tool calls and results as DataParts (spec/wire.md §3), the
//! approval interrupt (§4), the decision (§5) and its validation rules.
//!
//! kagent's `adk_request_confirmation` dialect (§8) is read into the same types by
//! [`crate::kagent`]; nothing here depends on which dialect the peer speaks.

use std::collections::BTreeMap;

use serde_json::Value;

/// Part metadata key naming what a DataPart holds (kagent's convention, which we speak too).
pub const KAGENT_TYPE: &str = "kagent_type";
pub const FUNCTION_CALL: &str = "function_call";
pub const FUNCTION_RESPONSE: &str = "function_response";
pub const INTERRUPT_DATA: &str = "interrupt_data";
/// Event metadata key and value marking a tool-approval interrupt.
pub const INTERRUPT_TYPE: &str = "interrupt_type";
pub const TOOL_APPROVAL: &str = "tool_approval";

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

/// One held call in an approval interrupt.
#[derive(Debug, Clone, PartialEq)]
pub struct ActionRequest {
    /// The model's call id (kagent: the ORIGINAL function call's id).
    pub id: String,
    pub name: String,
    pub args: Value,
    /// The tool's description, for the card.
    pub description: Option<String>,
    /// The MCP server (tool source) the call goes to.
    pub server: Option<String>,
}

/// Which approval dialect a peer speaks: how its interrupts look and how decisions must be written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Dialect {
    /// spec/wire.md §4-§5: one `interrupt_data` DataPart, `deny` understood.
    Native,
    /// kagent 0.10.x (§8): `adk_request_confirmation` calls, `reject` instead of `deny`.
    Kagent,
}

/// A pending batch of calls that wait for a person's decision.
#[derive(Debug, Clone, PartialEq)]
pub struct ApprovalInterrupt {
    pub action_requests: Vec<ActionRequest>,
    pub dialect: Dialect,
}

/// A verdict on one call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Verdict {
    Approve,
    Deny,
}

/// What the person decided, as the decision DataPart says it (before validation).
#[derive(Debug, Clone, PartialEq)]
pub enum DecisionKind {
    ApproveAll,
    DenyAll {
        reason: Option<String>,
    },
    Batch {
        decisions: BTreeMap<String, Verdict>,
        rejection_reasons: BTreeMap<String, String>,
    },
}

/// A decision message's DataPart, parsed.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    pub kind: DecisionKind,
    /// Edited arguments by call id; each must belong to an approved call.
    pub modified_args: BTreeMap<String, Value>,
}

/// A validated decision: one resolved verdict per pending call, in the batch's order.
#[derive(Debug, Clone, PartialEq)]
pub struct ResolvedCall {
    pub request: ActionRequest,
    pub verdict: Verdict,
    /// For a rejected call: the reason the model will read, if any.
    pub reason: Option<String>,
    /// For an approved call with edited arguments: what will run instead of `request.args`.
    pub modified_args: Option<Value>,
}
