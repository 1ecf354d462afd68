//! The JSON of Signoff's REST surfaces (docs/rest.md) as serde types: the server builds these
//! and the UI reads them, so the two cannot drift apart.
//!
//! camelCase on the wire (policy and share-link keys are snake_case). Unknown keys are refused;
//! a field is required unless it is marked optional (absent means none), so a missing key is an
//! error that names it (a field that is always sent but may be `null` is read with
//! [`nullable`], not defaulted). Tasks stay raw JSON: they are A2A tasks in
//! the caller's version, read with [`crate::codec::decode_task`].

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

use crate::hitl::RecordedDecision;
use crate::model::TaskState;

mod requests;
mod sharing;
mod tools;
mod web_push;
pub use requests::{
    ApprovalRequest, ApprovalRequestState, RequestStatus, SettledCall, SettledCalls,
};
pub use sharing::{
    Feedback, FeedbackList, NewDecisionLinks, NewFeedback, NewShare, Rating, Share, ShareList,
};
pub use tools::{ApproveToolChange, DefinitionChange, ToolChange, ToolChanges, ToolDefinition};
pub use web_push::{
    BrowserSubscription, Device, DeviceList, NewDevice, SubscriptionKeys, VapidKey,
};

/// `GET /api/agents`: the local agents, then the remote ones.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AgentList {
    pub agents: Vec<AgentEntry>,
}

/// One agent of [`AgentList`]. A local agent has `unavailableSources` and no `reachable`; a
/// remote one has `reachable`, no `unavailableSources`, and no tools.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AgentEntry {
    pub namespace: String,
    pub name: String,
    pub description: String,
    /// The agent's A2A endpoint on this server (`/api/a2a/{namespace}/{name}`).
    pub url: String,
    pub card_url: String,
    pub tools: Vec<ToolEntry>,
    /// The names of the tools whose calls wait for approval.
    pub require_approval: Vec<String>,
    /// Local agents only: tool sources that cannot serve calls right now.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unavailable_sources: Option<Vec<UnavailableSource>>,
    pub remote: bool,
    /// Remote agents only: whether the agent gave its card.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reachable: Option<bool>,
    /// Remote agents only: the skills their card lists (a remote publishes no tools).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skills: Option<Vec<SkillEntry>>,
    /// `false` for an agent that cannot cancel a task (A2A `tasks/cancel`), as kagent 0.10's
    /// "Cancellation is not supported"; absent: it can.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cancelable: Option<bool>,
    /// Local agents only: `true` when the agent answers permission prompts (a
    /// `permission_prompts` tool source): programs ask it whether their own tools may run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answers_prompts: Option<bool>,
}

/// One skill of a remote agent's card.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SkillEntry {
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub tags: Vec<String>,
}

/// One tool of an [`AgentEntry`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ToolEntry {
    pub name: String,
    pub description: String,
    /// The source that serves it: `files`, or an MCP server's name.
    pub source: String,
    pub requires_approval: bool,
    /// For a tool that requires approval: who must approve its calls, in words (`needs
    /// approval by group sre; the requester may not approve; 2 distinct approvals`); an
    /// argument rule or a policy may ask others for some calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<String>,
}

/// A tool source that is down, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UnavailableSource {
    pub name: String,
    pub error: String,
}

/// `GET /api/me`: who the caller is (`local` with `--auth none`): the subject, and what the auth
/// mode knows of them. The UI asks it before a link's `#token=` may switch the person to another
/// account, and shows it in its account menu.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Me {
    pub user: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub email: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<String>,
    /// The server's `--auth` mode (`none`, `tokens`, `proxy`, `oidc`); with `oidc` a signed-in
    /// browser signs out with `POST /auth/logout`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth: Option<String>,
}

/// `GET /api/sessions`: the caller's sessions, the most recently updated first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SessionList {
    pub sessions: Vec<Session>,
}

/// A session (an A2A context) as the API lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Session {
    /// The A2A `contextId`.
    pub id: String,
    /// `namespace/name` of its agent.
    pub agent: String,
    pub title: String,
    /// RFC 3339.
    pub created_at: String,
    pub updated_at: String,
}

/// `GET /api/sessions/{id}`: the session and its tasks in the order they were made.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SessionDetail {
    pub session: Session,
    /// Each task as `tasks/get` returns it, in the caller's A2A version (v0.3 by default).
    pub tasks: Vec<Value>,
    /// Whose chat it is, when the reader is not its owner but an approver of a batch routed to
    /// them (docs/rest.md, Approvers): they read only those tasks and may not write to it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requested_by: Option<String>,
}

/// `GET /api/approvals` (or `?state=pending`): the caller's pending batches, oldest first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PendingApprovals {
    pub approvals: Vec<PendingApproval>,
}

/// A pending batch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PendingApproval {
    pub task_id: String,
    pub context_id: String,
    /// The batch's id: a decision may pin it (`POST /api/approvals/{taskId}?batch=ID`), so it
    /// never decides a later batch of the task.
    #[serde(default)]
    pub batch_id: i64,
    pub agent: String,
    /// The chat's title (as `GET /api/sessions` lists it).
    pub title: String,
    /// When the batch started waiting (RFC 3339).
    pub since: String,
    /// The action requests of the task's approval interrupt, as the interrupt's DataPart holds
    /// them; [`crate::hitl::ActionRequest::from_value`] reads each.
    pub calls: Vec<Value>,
    /// When the batch expires unanswered (RFC 3339), if its agent has an approval timeout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<String>,
    /// Who asked, why the reader is asked and where each call's quorum stands (docs/rest.md,
    /// Approvers); absent where the requester decides alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub routing: Option<Box<ApprovalRouting>>,
    /// What the deadline ladder did to the batch so far, and how far its deadline may still
    /// move (docs/rest.md, Deadline ladder); absent while it did nothing and may not be
    /// extended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ladder: Option<Box<LadderMarks>>,
}

/// A waiting batch's reminder and escalation, and its `max_extend` (docs/rest.md, Deadline
/// ladder).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LadderMarks {
    /// When people were reminded of it (RFC 3339): its `remind_after` passed unanswered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reminded_at: Option<String>,
    /// The entries (`group:NAME`, `user:ID`) it escalated to once its `escalate_after` passed:
    /// they may decide it too.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub escalated_to: Vec<String>,
    /// The agents file's `max_extend` for the batch (as written: `30m`): extensions may move
    /// its deadline at most this far past `firstExpiresAt`. Absent when it may not be extended
    /// (no deadline, or some call sets no `max_extend`), so a UI offers only what fits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_extend: Option<String>,
    /// The deadline the batch had before any extension (RFC 3339); set with `maxExtend`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_expires_at: Option<String>,
}

/// The body of `POST /api/approvals/{taskId}/handover` (docs/rest.md, Hand-over).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HandoverRequest {
    /// `user:ID` or `group:NAME`.
    pub to: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// The answer to a hand-over: who handed the batch of `taskId` to whom.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HandedOver {
    pub task_id: String,
    pub by: String,
    pub to: String,
}

/// The body of `POST /api/approvals/{taskId}/extend` (docs/rest.md, Deadline ladder).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ExtendRequest {
    /// How much later the batch expires, as a duration (`15m`, `1h 30m`).
    pub by: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// The answer to an extension: the batch's new deadline, and how much of its `max_extend`
/// the extensions so far took.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DeadlineExtended {
    pub task_id: String,
    /// RFC 3339.
    pub expires_at: String,
    /// The deadline the batch had before any extension (RFC 3339).
    pub first_expires_at: String,
    /// The agents file's `max_extend` (as written: `1h`).
    pub max_extend: String,
}

/// Why a person is asked to decide a batch, and where it stands (docs/rest.md, Approvers).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ApprovalRouting {
    /// The subject of the person who started the chat.
    pub requested_by: String,
    /// What lets the reader approve: the agents file's entries that match them (`group:sre`,
    /// `user:alice@example.com`) or `requester`; empty when they may only reject or cancel
    /// (the requester under a two-person rule), or only read it (a person a hand-over named
    /// whom the approvers do not).
    pub eligible_by: Vec<String>,
    /// Each call of the batch, in order.
    pub calls: Vec<CallQuorum>,
}

/// Who may approve one call and how far its quorum has come: in [`ApprovalRouting`], in a
/// [`DecideResponse`] that left the batch waiting, and in the `quorum` metadata of the
/// `input-required` event such an approval writes (docs/wire.md, Approvers).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CallQuorum {
    pub call_id: String,
    /// The agents file's `approvers` entries for the call; empty: the requester decides.
    pub approvers: Vec<String>,
    pub requester_may_approve: bool,
    /// How many distinct eligible people must approve it.
    pub quorum: u32,
    /// Who approved the call's current arguments so far, in order (subjects).
    pub approved_by: Vec<String>,
    /// What let each of `approved_by` approve, in the same order: their vote's entries
    /// (`group:sre`, `user:dave`, `requester`, or one a hand-over or an escalation added), so a
    /// reader can tell someone named by another route from a member of the group.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub approved_via: Vec<Vec<String>>,
    /// The entries the batch's escalation added (the agents file's `escalate_to`). Of the
    /// entries in `approvedVia` that `approvers` does not list, these were asked by
    /// escalation and any other by a hand-over.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub escalated_to: Vec<String>,
    /// Whose approvals an edit voided: they approved other arguments than those now proposed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub voided: Vec<String>,
    /// The sha256 of the arguments the approvals so far are for; none before any approval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args_sha256: Option<String>,
    /// What approving takes, in words: `needs approval by group sre; the requester may not
    /// approve; 2 distinct approvals`.
    pub requirement: String,
    /// In an [`ApprovalRouting`]: whether its reader may approve this call (the server refuses
    /// their approval otherwise), so a page offers only what will be accepted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub may_approve: Option<bool>,
}

/// One person's verdict on one call (docs/rest.md, Approvers): an [`AuditCall`]'s `votes`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CallVoteEntry {
    /// The person's subject.
    pub by: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub email: Option<String>,
    /// `approve` or `deny`.
    pub verdict: AuditVerdict,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The entries that made them eligible (`group:sre`, `user:alice`, `requester`).
    pub eligible_by: Vec<String>,
    pub channel: DecisionChannel,
    /// RFC 3339.
    pub at: String,
    /// The sha256 of the arguments they approved or rejected.
    pub args_sha256: String,
    /// Whether it counted toward the outcome: an approval of arguments an edit replaced does
    /// not.
    pub counted: bool,
}

/// The data of a `decided` event of `GET /api/approvals/stream`: the batch of `taskId` waits no
/// more.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ApprovalDecided {
    pub task_id: String,
    pub context_id: String,
    /// How it ended: the decision's channel (`a2a`, `text`, `rest`, `cancel`, `expiry`), or
    /// `deleted` when its chat was deleted.
    pub outcome: String,
    /// Who decided; `null` for a deleted chat.
    #[serde(deserialize_with = "nullable")]
    pub decided_by: Option<String>,
    /// RFC 3339.
    pub decided_at: String,
}

/// One event of `GET /api/approvals/stream`: its `event:` name says which.
#[derive(Debug, Clone, PartialEq)]
pub enum ApprovalEvent {
    /// `event: pending`: a batch started waiting; the data is the batch as
    /// `GET /api/approvals` lists it.
    Pending(PendingApproval),
    /// `event: decided`: a batch stopped waiting.
    Decided(ApprovalDecided),
}

impl ApprovalEvent {
    /// The SSE `event:` name.
    pub fn name(&self) -> &'static str {
        match self {
            ApprovalEvent::Pending(_) => "pending",
            ApprovalEvent::Decided(_) => "decided",
        }
    }

    /// The task whose batch it is about.
    pub fn task_id(&self) -> &str {
        match self {
            ApprovalEvent::Pending(pending) => &pending.task_id,
            ApprovalEvent::Decided(decided) => &decided.task_id,
        }
    }

    /// The SSE `data:` (one line of JSON).
    pub fn data(&self) -> String {
        let data = match self {
            ApprovalEvent::Pending(pending) => serde_json::to_string(pending),
            ApprovalEvent::Decided(decided) => serde_json::to_string(decided),
        };
        // Plain structs of strings and JSON values: serialising them cannot fail.
        data.unwrap_or_default()
    }

    /// An event read back from its `event:` name and `data:`; an unknown name or data that
    /// does not fit is an error saying so.
    pub fn parse(name: &str, data: &str) -> Result<ApprovalEvent, String> {
        match name {
            "pending" => serde_json::from_str(data)
                .map(ApprovalEvent::Pending)
                .map_err(|err| format!("a pending event: {err}")),
            "decided" => serde_json::from_str(data)
                .map(ApprovalEvent::Decided)
                .map_err(|err| format!("a decided event: {err}")),
            other => Err(format!("unknown approvals event {other:?}")),
        }
    }
}

/// `GET /api/approvals?state=decided`: the caller's decisions, newest first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DecidedApprovals {
    pub decisions: Vec<AuditEntry>,
}

/// One decision of the audit trail (also in a task's `metadata.signoff_audit`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AuditEntry {
    pub task_id: String,
    pub context_id: String,
    pub agent: String,
    pub decided_by: Decider,
    /// How the person who decided was authenticated; absent when no request decided (a
    /// policy, a rule, an expiry) and for decisions recorded before servers kept it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decider_auth: Option<DeciderAuth>,
    pub decided_at: String,
    pub channel: DecisionChannel,
    /// Channel `policy`: the policy that approved the call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy_id: Option<String>,
    pub summary: String,
    /// The decision object as stored, in native terms.
    pub decision: RecordedDecision,
    pub calls: Vec<AuditCall>,
    /// A subagent's task (docs/wire.md, Subagents): the parent task whose agent-tool call
    /// started it; its calls were decided in the parent's batch, nested under that call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<AuditParent>,
    /// What happened to the batch while it waited, oldest first: hand-overs, the deadline
    /// ladder's reminder and escalation, extensions of its deadline.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub steps: Vec<BatchStepEntry>,
}

/// One step of a waiting batch in its [`AuditEntry`] (docs/rest.md, Hand-over and Deadline
/// ladder).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BatchStepEntry {
    /// `handover`, `remind`, `escalate` or `extend`.
    pub kind: String,
    /// Who took it; absent for the deadline ladder's own steps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<String>,
    /// The entries it made eligible (a hand-over, an escalation).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub to: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// An extension: the new deadline (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<String>,
    /// RFC 3339.
    pub at: String,
}

/// Who decided, by user id: the person who decided, or the task's owner for whom a policy, a
/// rule, a cancel or an expiry decided. A string on the wire.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Decider(pub String);

impl Decider {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// How the person who decided was authenticated (the server's `--auth` mode, and for `oidc`
/// whether a signed-in browser or a program's JWT).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DeciderAuth {
    /// `--auth none`: the one local user.
    None,
    /// A bearer token of `--auth tokens`.
    Tokens,
    /// An authenticating proxy's headers (`--auth proxy`).
    Proxy,
    /// A signed-in browser's session (`--auth oidc`).
    OidcSession,
    /// A program's bearer JWT from the provider (`--auth oidc`).
    OidcJwt,
    /// A decision link sent to one person (its token is the credential).
    DecisionLink,
    /// A Slack interaction signed with the Slack app's signing secret, its Slack user mapped
    /// to the person.
    Slack,
}

impl DeciderAuth {
    /// The name the store and the wire use.
    pub fn as_str(self) -> &'static str {
        match self {
            DeciderAuth::None => "none",
            DeciderAuth::Tokens => "tokens",
            DeciderAuth::Proxy => "proxy",
            DeciderAuth::OidcSession => "oidc_session",
            DeciderAuth::OidcJwt => "oidc_jwt",
            DeciderAuth::DecisionLink => "decision_link",
            DeciderAuth::Slack => "slack",
        }
    }

    /// The mode a stored name stands for.
    pub fn parse(text: &str) -> Option<DeciderAuth> {
        [
            DeciderAuth::None,
            DeciderAuth::Tokens,
            DeciderAuth::Proxy,
            DeciderAuth::OidcSession,
            DeciderAuth::OidcJwt,
            DeciderAuth::DecisionLink,
            DeciderAuth::Slack,
        ]
        .into_iter()
        .find(|auth| auth.as_str() == text)
    }
}

/// How a decision came (docs/rest.md, Approvals: `channel`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DecisionChannel {
    /// A decision DataPart (or kagent's HITL extension response) in an A2A message.
    A2a,
    /// Approve or reject words in an A2A message.
    Text,
    /// `POST /api/approvals/{taskId}`.
    Rest,
    /// The task was canceled while its batch waited.
    Cancel,
    /// One of the person's "always allow" policies approved the call.
    Policy,
    /// An argument rule of the agents file denied the call.
    Rule,
    /// Nobody decided before the batch's deadline.
    Expiry,
    /// A decision link in a message to the person (an email's Approve or Reject).
    Link,
    /// A button of a Slack message posted by the Slack app channel.
    Slack,
    /// The agent's first reviewer approved the call (no one was asked).
    Reviewer,
    /// A Web Push notification's Approve or Reject (`POST /api/push/approvals/{taskId}`).
    WebPush,
    /// The gateway's MCP client answered the question an upstream server asked during its call.
    McpClient,
}

/// What was decided about one call of an [`AuditEntry`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AuditVerdict {
    Approve,
    Deny,
    /// Its task was canceled before anyone decided.
    Cancel,
    /// Nobody decided before its batch's deadline.
    Expire,
}

/// The parent of a subagent's task in an [`AuditEntry`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AuditParent {
    pub task_id: String,
    /// The parent's agent-tool call.
    pub call_id: String,
    pub agent: String,
}

/// One call of an [`AuditEntry`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AuditCall {
    pub id: String,
    pub name: String,
    pub verdict: AuditVerdict,
    /// For a rejection: the person's reason, if any.
    #[serde(deserialize_with = "nullable")]
    pub reason: Option<String>,
    /// sha256 of the arguments as the model proposed them.
    pub args_sha256: String,
    /// sha256 of the arguments as run (edited ones where given); none for a call that never ran.
    #[serde(deserialize_with = "nullable")]
    pub run_args_sha256: Option<String>,
    pub edited: bool,
    /// The call's result once it has run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    /// The rule, grant or policy that let it run, made it wait or refused it (docs/policies.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why: Option<crate::hitl::Why>,
    /// Each person's verdict on the call, in order: the approvals that made its quorum (or the
    /// rejection that ended it), with who, why they were eligible, how and when.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub votes: Vec<CallVoteEntry>,
}

/// The answer to `POST /api/approvals/{taskId}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DecideResponse {
    pub task_id: String,
    /// The task's state when the answer was made, in its v0.3 spelling.
    #[serde(with = "v03_state")]
    pub state: TaskState,
    /// This batch's audit entry; `null` if the task is gone, or while the batch still waits
    /// for more approvals (then `quorum` says how far each call has come).
    #[serde(deserialize_with = "nullable")]
    pub decision: Option<AuditEntry>,
    /// An approval that left a call short of its quorum: each call of the still waiting batch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quorum: Option<Vec<CallQuorum>>,
    pub follow: Follow,
    /// The task now, always in the v0.3 shape.
    pub task: Value,
}

/// How to stream the rest of a decided task: a JSON-RPC call on the agent's endpoint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Follow {
    /// The agent's endpoint; `null` if the agent is unknown.
    #[serde(deserialize_with = "nullable")]
    pub url: Option<String>,
    /// `tasks/resubscribe`.
    pub method: String,
    pub params: FollowParams,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FollowParams {
    pub id: String,
}

/// Where an "always allow" policy applies: one chat, or every chat of the agent for its owner.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PolicyScope {
    Chat,
    Agent,
}

/// One argument's matcher (docs/rest.md, Policies; the agents file's rules use the same
/// language): exactly one of `glob`, `equals`, `regex`, `min`/`max` and `any`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArgMatch {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub glob: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub equals: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub regex: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub any: Option<bool>,
}

/// `POST /api/policies`: approve, from now on, the calls of `tool` that match `args` (every
/// call of it without `args`) in `scope`. Keys as the request spells them (snake_case).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewPolicy {
    /// `namespace/name`.
    pub agent: String,
    pub tool: String,
    pub scope: PolicyScope,
    /// The chat (A2A `contextId`) of a `chat` policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args: Option<BTreeMap<String, ArgMatch>>,
    /// A time-boxed grant: it stops applying this many seconds from now.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_in_secs: Option<u64>,
    /// A grant for this many calls, then no more.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uses: Option<u32>,
}

/// A policy as `POST` answers it and `GET /api/policies` lists it: the request's keys plus
/// who made it, when, and how a person reads it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Policy {
    pub id: String,
    pub agent: String,
    pub tool: String,
    pub scope: PolicyScope,
    #[serde(deserialize_with = "nullable")]
    pub context_id: Option<String>,
    #[serde(deserialize_with = "nullable")]
    pub args: Option<BTreeMap<String, ArgMatch>>,
    pub created_by: String,
    pub created_at: String,
    /// "write_file under notes/, in this chat".
    pub summary: String,
    /// When a time-boxed grant stops applying (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<String>,
    /// How many more calls a counted grant approves.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uses_left: Option<i64>,
}

/// `GET /api/policies`: the caller's policies, oldest first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PolicyList {
    pub policies: Vec<Policy>,
}

/// Reads a key that is always sent but may be `null`. A plain `Option` field would read a
/// missing key as `None`; with `deserialize_with`, serde reports it as missing instead.
fn nullable<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::deserialize(deserializer)
}

/// A task state in its v0.3 spelling (`input-required`), as the store and REST answers keep it.
mod v03_state {
    use serde::de::Error as _;
    use serde::{Deserialize, Deserializer, Serializer};

    use crate::codec::{parse_state, state_name};
    use crate::model::{ProtocolVersion, TaskState};

    pub fn serialize<S: Serializer>(state: &TaskState, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(state_name(ProtocolVersion::V0_3, *state))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<TaskState, D::Error> {
        let name = String::deserialize(deserializer)?;
        parse_state(ProtocolVersion::V0_3, &name)
            .ok_or_else(|| D::Error::custom(format!("unknown task state \"{name}\"")))
    }
}

#[cfg(test)]
mod tests;
