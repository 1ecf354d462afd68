//! Approval requests from outside (docs/rest.md, Approval requests): a program that runs its
//! own tools asks Signoff whether one call may run, and waits for the answer.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The body of `POST /api/approvals/requests`: one call a program wants to make.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ApprovalRequest {
    /// The agent whose rules, approvers and policies decide (`namespace/name`).
    pub agent: String,
    /// The tool, as the agent's rules name it (`Bash`, `write_file`, …).
    pub tool: String,
    /// Its arguments (a JSON object).
    pub arguments: Value,
    /// What the chat's first message says (default "Asks to run TOOL" and its command, path
    /// or URL).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The program's own id of the call, kept as its label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
}

/// Where an approval request stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RequestStatus {
    /// Not decided yet (held for a person, or being screened).
    Waiting,
    /// Allowed: run it with `arguments` (which an approver may have edited).
    Allowed,
    /// Rejected, by a person, a rule or a policy; `reason` says why.
    Rejected,
    /// Ended without a decision: canceled, expired or failed; `reason` says how.
    Ended,
}

/// The answer to `POST /api/approvals/requests` and `GET /api/approvals/requests/{taskId}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ApprovalRequestState {
    /// The task that holds the call; for a call the rules settled at once (it opened no chat),
    /// the id of its record in the audit of settled calls.
    pub task_id: String,
    /// The chat of the task; absent for a call settled at once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_id: Option<String>,
    pub status: RequestStatus,
    /// The arguments that may run (set when allowed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Value>,
    /// The tool's result, when Signoff ran the tool itself (an agent's own tool).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    /// Why it was rejected, or how it ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// `GET /api/approvals?state=settled`: the caller's calls the rules settled at once (newest
/// first). A call from outside that the gate allows or denies without asking anyone opens no
/// chat; these records are its audit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SettledCalls {
    pub calls: Vec<SettledCall>,
}

/// One call settled at once.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SettledCall {
    /// The record's id (the `taskId` its approval request was answered with).
    pub id: String,
    pub agent: String,
    pub tool: String,
    pub arguments: Value,
    /// The sha256 of the arguments' RFC 8785 text.
    pub args_sha256: String,
    /// `approve` (it ran, or was allowed) or `deny`.
    pub verdict: super::AuditVerdict,
    /// The rule, policy or tool setting that settled it.
    pub why: crate::hitl::Why,
    /// When (RFC 3339), before it ran.
    pub settled_at: String,
}
