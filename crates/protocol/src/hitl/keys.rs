//! The metadata keys and values of the HITL wire (docs/wire.md), in one place so that the
//! server and the UI never spell them by hand.

/// Part metadata key naming what a DataPart holds (kagent's convention, which we speak too).
pub const KAGENT_TYPE: &str = "kagent_type";
/// [`KAGENT_TYPE`] of a tool call.
pub const FUNCTION_CALL: &str = "function_call";
/// [`KAGENT_TYPE`] of a tool result.
pub const FUNCTION_RESPONSE: &str = "function_response";
/// [`KAGENT_TYPE`] of a native approval interrupt's DataPart.
pub const INTERRUPT_DATA: &str = "interrupt_data";
/// Event metadata key and value marking a tool-approval interrupt.
pub const INTERRUPT_TYPE: &str = "interrupt_type";
pub const TOOL_APPROVAL: &str = "tool_approval";

/// Task metadata key holding the task's audit trail (docs/rest.md, Approvals): a list of audit
/// entries, as `GET /api/approvals?state=decided` lists them.
pub const SIGNOFF_AUDIT: &str = "signoff_audit";

/// Task metadata key holding the ratings of the task's answer (docs/rest.md, Feedback), in
/// `GET /api/sessions/{id}`: a list of feedback entries, as `GET /api/feedback` lists them.
pub const SIGNOFF_FEEDBACK: &str = "signoff_feedback";

/// Part metadata kagent sets on calls that wait for something outside the model.
pub const IS_LONG_RUNNING: &str = "kagent_is_long_running";
/// Event and message metadata marking a partial (token-streamed) chunk; the full text follows.
pub const PARTIAL: &str = "kagent_adk_partial";
/// Event metadata with a turn's token counts (see [`super::kagent::TokenUsage`]).
pub const USAGE_METADATA: &str = "kagent_usage_metadata";

/// Native `interrupt_data` key: when the batch expires unanswered (RFC 3339; docs/wire.md,
/// Expiry). Absent when the agent has no approval timeout.
pub const EXPIRES_AT: &str = "expires_at";
/// Part metadata on a `function_call` and its `function_response` that no person was asked
/// about: who decided instead (docs/wire.md, Rules and policies), as [`super::DecidedBy`].
pub const SIGNOFF_DECIDED_BY: &str = "signoff_decided_by";
/// Part metadata on a `function_call`: the rule, grant or policy that decided whether it runs,
/// waits or is refused (docs/policies.md), as [`super::Why`].
pub const SIGNOFF_WHY: &str = "signoff_why";
/// Action request metadata key, and part metadata key on a nested `function_call` and
/// `function_response`: the call is a subagent's, asked through an agent-tool call
/// (docs/wire.md, Subagents), as [`super::subagent::Via`].
pub const SUBAGENT: &str = "subagent";

/// Part metadata on a `function_call` and its `function_response` that a coding agent ran
/// itself, without asking (docs/wire.md, Calls an agent ran itself): the status it reported, as
/// [`super::ran::RanStatus`].
pub const SIGNOFF_RAN: &str = "signoff_ran";
/// TextPart metadata marking an agent's thought, not its answer (kagent's key: `true`).
pub const THOUGHT: &str = "kagent_thought";

/// Action request metadata key (and on a call an agent ran itself, part metadata): what the
/// held call will change (docs/wire.md, Previews), as
/// [`super::Preview`]. Only the server's built-in file tools and the calls of coding agents
/// write it; readers may ignore it.
pub const PREVIEW: &str = "preview";
/// Action request metadata key: `false` when the call cannot run with edited arguments (a
/// coding agent over ACP runs its tools itself, and can only be told yes or no); absent: it can.
pub const EDITABLE: &str = "editable";
/// Action request metadata key: the file's current text (at most
/// [`super::preview::MAX_BASE_BYTES`]), so a client can diff an edited write against it.
pub const PREVIEW_BASE: &str = "preview_base";
