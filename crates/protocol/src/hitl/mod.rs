//! Human-in-the-loop payloads: tool calls and results as DataParts, the approval interrupt, the
//! decision and its validation rules (docs/wire.md: Tool calls and results, Approval interrupt,
//! Decision message, Decision rules).
//!
//! kagent's `adk_request_confirmation` dialect (docs/wire.md, kagent dialect) is read into the
//! same types by [`kagent`]. After that, what differs is the [`Dialect`] an interrupt carries:
//! how a decision is written back (`Decision::to_data`) and what the peer accepts
//! (`Dialect::supports_modified_args` and the like). The
//! `ask_user` questions and their answers, the same in both dialects, are in [`question`].
//! kagent's newer HITL extension (`https://kagent.dev/extensions/hitl/v1`, requests and
//! responses in message metadata) is read and written by [`extension`].

mod call;
pub mod codex;
mod decision;
pub mod elicitation;
pub mod extension;
mod field;
mod interrupt;
pub mod kagent;
pub mod keys;
mod outcome;
pub mod preview;
pub mod question;
pub mod ran;
mod read;
mod recorded;
mod rules;
pub mod subagent;
mod text;
pub mod why;

pub use call::{ToolCall, ToolResult};
pub use decision::{Decision, DecisionError, DecisionKind, Verdict};
pub use interrupt::{
    interrupt_event_metadata, quorum_event_metadata, quorum_from_metadata, ActionRequest,
    ApprovalInterrupt, Dialect, QUORUM,
};
pub use keys::{
    FUNCTION_CALL, FUNCTION_RESPONSE, INTERRUPT_DATA, INTERRUPT_TYPE, KAGENT_TYPE, SIGNOFF_WHY,
    TOOL_APPROVAL,
};
pub use outcome::DecidedBy;
pub use preview::Preview;
pub use question::{Answer, Question, ASK_USER};
pub use ran::{RanCall, RanStatus};
pub use read::DecisionSource;
pub use recorded::{ExpiredWith, RecordedDecision};
pub use rules::{resolve, ResolvedCall};
pub use subagent::Via;
pub use why::{GateOutcome, Review, ReviewOutcome, Why, WhyKind};

/// A pending call for the tests of this module's parts.
#[cfg(test)]
pub(crate) fn test_request(id: &str, name: &str, args: serde_json::Value) -> ActionRequest {
    ActionRequest {
        id: id.to_owned(),
        name: name.to_owned(),
        args,
        description: None,
        server: None,
        approval_id: None,
        via: None,
        metadata: Default::default(),
    }
}
