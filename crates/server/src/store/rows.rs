//! What the store reads and writes: rows, the changes the runtime asks for, and the typed
//! columns (task state, batch state, call status, verdict, channel) with their stored spelling.
//! The typed columns are declared here (SQL that filters on a fixed value, `state = 'pending'`,
//! spells it in the backends; approval-event kinds are in `approvals`); a text the store does
//! not know is a corrupt row.

use std::collections::BTreeMap;

use serde_json::Value;

use super::outbox::NewNotification;
use signoff_protocol::{codec, ProtocolVersion, TaskState};

use super::{Result, StoreError};

/// The A2A version the event log and the task state column are written in. Changing it needs a
/// migration of every stored event.
pub const EVENT_LOG_VERSION: ProtocolVersion = ProtocolVersion::V0_3;

/// The stored text of a task state.
pub fn task_state_text(state: TaskState) -> &'static str {
    codec::state_name(EVENT_LOG_VERSION, state)
}

/// A stored task state; unknown text is a corrupt row.
pub fn parse_task_state(text: &str) -> Result<TaskState> {
    codec::parse_state(EVENT_LOG_VERSION, text)
        .ok_or_else(|| StoreError::Corrupt(format!("unknown task state {text:?}")))
}

/// Declares a typed column: an enum, its stored spelling, and the parse that refuses the rest.
macro_rules! column {
    ($(#[$doc:meta])* $name:ident, $what:literal { $($(#[$vdoc:meta])* $variant:ident => $text:literal,)+ }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name {
            $($(#[$vdoc])* $variant,)+
        }

        impl $name {
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text,)+
                }
            }

            pub fn parse(text: &str) -> Result<Self> {
                match text {
                    $($text => Ok($name::$variant),)+
                    other => Err(StoreError::Corrupt(format!(concat!("unknown ", $what, " {:?}"), other))),
                }
            }
        }
    };
}

column!(
    /// Where a batch of held calls stands.
    BatchState, "batch state" {
        Pending => "pending",
        Decided => "decided",
        /// Its task was canceled while it waited.
        Canceled => "canceled",
        /// Nobody decided before its deadline (`expires_at`).
        Expired => "expired",
    }
);

column!(
    /// Where a tool call stands.
    CallStatus, "call status" {
        /// Needs no approval; runs at once.
        Auto => "auto",
        /// Waits in a pending batch.
        Held => "held",
        Approved => "approved",
        Rejected => "rejected",
        /// Dropped because its paused task was canceled.
        Canceled => "canceled",
        /// Refused by an argument rule without asking; answered with the rule.
        Denied => "denied",
        /// Held until its batch expired unanswered; answered as expired, never run.
        Expired => "expired",
        /// Began to run; if no `Finished` follows, a crash interrupted it.
        Started => "started",
        Finished => "finished",
    }
);

column!(
    /// What was decided about one call (kept for the audit after the call has run).
    Verdict, "verdict" {
        Approve => "approve",
        Deny => "deny",
        /// Its task was canceled before anyone decided.
        Cancel => "cancel",
        /// Nobody decided before the batch's deadline.
        Expire => "expire",
    }
);

column!(
    /// Through which surface a decision (or a cancel) came.
    Channel, "channel" {
        /// A decision DataPart in an A2A message.
        A2a => "a2a",
        /// Approve or reject words in an A2A message.
        Text => "text",
        Rest => "rest",
        /// The task was canceled while its batch waited.
        Cancel => "cancel",
        /// A person's "always allow" policy approved the call (no one was asked).
        Policy => "policy",
        /// An argument rule of the agents file denied the call.
        Rule => "rule",
        /// The batch's approval timeout passed unanswered.
        Expiry => "expiry",
        /// A person's decision link (an Approve or Reject link in a message to them).
        Link => "link",
        /// A Slack message's Approve button, or its Reject modal (the Slack app channel).
        Slack => "slack",
        /// The agent's first reviewer approved the call (no one was asked).
        Reviewer => "reviewer",
        /// A Web Push notification's Approve or Reject, sent by Signoff's service worker for
        /// the batch the notification showed.
        WebPush => "web_push",
        /// The gateway's MCP client answered a server's question itself (`elicitation/create`
        /// passed on to it), closing the question's copy in the inbox.
        McpClient => "mcp_client",
    }
);

#[derive(Debug, Clone, PartialEq)]
pub struct SessionRow {
    pub id: String,
    pub user_id: String,
    pub agent: String,
    pub title: String,
    pub created_at: String,
    pub updated_at: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct TaskRow {
    pub id: String,
    pub context_id: String,
    pub user_id: String,
    pub agent: String,
    pub state: TaskState,
    /// The conversation as the model sees it: JSON the runtime reads and writes, kept as text.
    pub transcript: String,
    pub last_seq: i64,
    pub created_at: String,
    pub updated_at: String,
    /// The groups of the person who sent the task, as their sign-in named them then: the
    /// policies see them on whichever replica runs the task.
    pub requester_groups: Vec<String>,
}

impl TaskRow {
    /// The row of a new task, created now; its log is empty until the store writes the task with
    /// its first events. A column added later gets its default here, so the callers that make
    /// tasks stay as they are.
    pub fn new(
        id: String,
        context_id: String,
        user_id: String,
        agent: String,
        state: TaskState,
        transcript: String,
    ) -> TaskRow {
        let now = super::now();
        TaskRow {
            id,
            context_id,
            user_id,
            agent,
            state,
            transcript,
            last_seq: 0,
            created_at: now.clone(),
            updated_at: now,
            requester_groups: Vec::new(),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct EventRow {
    pub seq: i64,
    /// The event as announced, JSON in [`EVENT_LOG_VERSION`].
    pub event: String,
    pub is_final: bool,
}

/// An event to append to a task's log, already encoded.
#[derive(Debug, Clone, PartialEq)]
pub struct NewEvent {
    /// Shared with the announcement of the commit, so the text is made once.
    pub event: std::sync::Arc<str>,
    pub is_final: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct BatchRow {
    pub id: i64,
    pub task_id: String,
    pub state: BatchState,
    pub requests: Value,
    pub created_at: String,
    pub decided_at: Option<String>,
    /// When it expires unanswered (RFC 3339), if its agent has an approval timeout.
    pub expires_at: Option<String>,
    /// The votes cast on a pending batch so far, oldest first: read inside a decision's write
    /// (`Store::decide_planned`); empty elsewhere.
    pub votes: Vec<CallVote>,
    /// The `group:NAME` and `user:ID` entries hand-overs and escalations named for a pending
    /// batch: read with its votes inside a decision's write; empty elsewhere.
    pub handed_to: super::Handed,
}

/// A pending batch with what the approvals list shows of its task.
#[derive(Debug, Clone, PartialEq)]
pub struct PendingBatchRow {
    pub batch: BatchRow,
    pub context_id: String,
    pub agent: String,
    /// The chat's title.
    pub title: String,
}

/// Where a counts read's windows start (RFC 3339): the last hour's and the last day's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CountWindows {
    pub hour: String,
    pub day: String,
}

/// What the task and the person have done before this call, as `context.counts` shows it
/// (also a `signoff policy test` case's `counts`).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CallCounts {
    /// Calls of this tool allowed to run in this task (by a person, a grant, a policy, a rule
    /// or the tool's setting).
    pub tool_allowed_in_task: i64,
    /// Calls of this tool allowed to run in any of this person's tasks in the last hour.
    pub tool_allowed_by_user_last_hour: i64,
    /// The tools of which a call was approved in this task (by a person, a grant or a policy).
    pub approved_in_task: Vec<String>,
    /// Sums of this tool's numeric arguments, by argument name, over its calls allowed to run
    /// (with the arguments that ran, a person's edit included): in this task, and across the
    /// person's tasks in the last hour and the last day. A fractional total counts rounded up,
    /// so a cap is never passed by rounding.
    pub sum_in_task: BTreeMap<String, i64>,
    pub sum_by_user_last_hour: BTreeMap<String, i64>,
    pub sum_by_user_last_day: BTreeMap<String, i64>,
}

impl CallCounts {
    /// Reads the sums of a counts query: a JSON object of argument name to the
    /// `[in task, last hour, last day]` totals (SQLite's `json_group_object`, PostgreSQL's
    /// `jsonb_object_agg`).
    pub(crate) fn read_sums(&mut self, sums: &str) -> Result<(), serde_json::Error> {
        let sums: BTreeMap<String, [Value; 3]> = serde_json::from_str(sums)?;
        for (name, [in_task, last_hour, last_day]) in sums {
            self.sum_in_task.insert(name.clone(), whole_up(&in_task));
            self.sum_by_user_last_hour
                .insert(name.clone(), whole_up(&last_hour));
            self.sum_by_user_last_day.insert(name, whole_up(&last_day));
        }
        Ok(())
    }

    /// Counts the call just allowed in this turn, with `args`, before the store has it.
    pub fn add_allowed(&mut self, args: &Value) {
        self.tool_allowed_in_task += 1;
        self.tool_allowed_by_user_last_hour += 1;
        let Some(args) = args.as_object() else {
            return;
        };
        for (name, value) in args.iter().filter(|(_, value)| value.is_number()) {
            let amount = whole_up(value);
            for sums in [
                &mut self.sum_in_task,
                &mut self.sum_by_user_last_hour,
                &mut self.sum_by_user_last_day,
            ] {
                let sum = sums.entry(name.clone()).or_insert(0);
                *sum = sum.saturating_add(amount);
            }
        }
    }
}

/// A JSON number as a whole number, a fractional one rounded up (saturating at i64's bounds);
/// anything else 0.
fn whole_up(value: &Value) -> i64 {
    if let Some(whole) = value.as_i64() {
        return whole;
    }
    let Some(real) = value.as_f64() else {
        return 0;
    };
    // `as` saturates, and maps NaN (which JSON cannot hold) to 0.
    #[allow(clippy::cast_possible_truncation)]
    let rounded = real.ceil() as i64;
    rounded
}

#[derive(Debug, Clone, PartialEq)]
pub struct CallRow {
    pub task_id: String,
    pub call_id: String,
    pub position: i64,
    pub name: String,
    pub source: String,
    pub args: Value,
    pub args_sha256: String,
    pub batch_id: Option<i64>,
    pub status: CallStatus,
    pub verdict: Option<Verdict>,
    pub reason: Option<String>,
    pub run_args: Option<Value>,
    pub run_args_sha256: Option<String>,
    pub result: Option<Value>,
    pub started_at: Option<String>,
    pub finished_at: Option<String>,
    /// The rule, grant or policy that decided whether it ran, waited or was refused
    /// (`hitl::Why` as JSON).
    pub why: Option<Value>,
}

/// A tool call the model asked for, recorded with the turn that asked.
#[derive(Debug, Clone, PartialEq)]
pub struct NewCall {
    pub call_id: String,
    pub name: String,
    pub source: String,
    pub args: Value,
    pub args_sha256: String,
    pub held: bool,
    /// Decided without asking (a policy approved it or a rule denied it): recorded with the
    /// call as a decided batch of its own and an audit row.
    pub auto: Option<AutoDecision>,
    /// The rule, grant or policy that decided it (`hitl::Why` as JSON).
    pub why: Option<Value>,
}

/// A decision no person was asked for, written with the call it decides.
#[derive(Debug, Clone, PartialEq)]
pub struct AutoDecision {
    /// The task's owner, for whom the policy or rule decided.
    pub user_id: String,
    /// `Policy` or `Rule`.
    pub channel: Channel,
    pub verdict: Verdict,
    /// The rule that denied it, as the model and the person read it.
    pub reason: Option<String>,
    /// The decision as audited, a policy's or a rule's (`hitl::RecordedDecision::to_value`).
    pub decision: Value,
    pub summary: String,
}

impl NewCall {
    /// The status a new call is recorded with: held for a decision, denied by a rule, or free
    /// to run.
    pub fn status(&self) -> CallStatus {
        match &self.auto {
            Some(auto) if auto.verdict == Verdict::Deny => CallStatus::Denied,
            Some(_) => CallStatus::Auto,
            None if self.held => CallStatus::Held,
            None => CallStatus::Auto,
        }
    }
}

impl CallRow {
    /// The record a commit writes for `call`, the `position`th of its task.
    pub fn proposed(task_id: &str, position: i64, call: &NewCall) -> CallRow {
        CallRow {
            task_id: task_id.to_owned(),
            call_id: call.call_id.clone(),
            position,
            name: call.name.clone(),
            source: call.source.clone(),
            args: call.args.clone(),
            args_sha256: call.args_sha256.clone(),
            batch_id: None,
            status: call.status(),
            verdict: call.auto.as_ref().map(|auto| auto.verdict),
            reason: call.auto.as_ref().and_then(|auto| auto.reason.clone()),
            run_args: None,
            run_args_sha256: None,
            result: None,
            started_at: None,
            finished_at: None,
            why: call.why.clone(),
        }
    }
}

/// A change to a call's execution record.
#[derive(Debug, Clone, PartialEq)]
pub enum CallUpdate {
    Started {
        call_id: String,
        run_args: Value,
        run_args_sha256: String,
    },
    /// The call's result; a call finishes once, so a call that has a result keeps it.
    Finished { call_id: String, result: Value },
}

/// Which state the task must be in for a commit to apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Guard {
    /// Refuse once the task is terminal (so a canceled task's runner cannot write after cancel).
    NotTerminal,
}

/// One atomic change to a task: new events, a new state, the model's transcript, call records,
/// a new pending batch. All or nothing.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Commit {
    pub events: Vec<NewEvent>,
    pub state: Option<TaskState>,
    /// The new transcript (JSON text), if it changed.
    pub transcript: Option<String>,
    pub new_calls: Vec<NewCall>,
    pub call_updates: Vec<CallUpdate>,
    /// Opens a pending batch with these action requests; every held call without a batch joins it.
    pub new_batch: Option<Value>,
    /// When the new batch expires unanswered (RFC 3339), if its agent has a timeout.
    pub batch_deadline: Option<String>,
    pub guard: Option<Guard>,
    /// Queued messages this step delivers (their ids): they leave the queue with it.
    pub delivered: Vec<i64>,
    /// Refuse with [`StoreError::MessagesWaiting`] if messages wait in the task's queue (a task
    /// about to complete takes another turn for them instead).
    pub unless_queued: bool,
    /// A step of the task's runner: on a shared database it is refused
    /// ([`StoreError::Conflict`]) unless this replica still holds the task's lease, so a runner
    /// that lost its task to another replica writes nothing more.
    pub leased: bool,
    /// Notifications of what this step does (a pause: its batch waits), written with it
    /// (`store::outbox`); each names the batch this commit opens, if it opens one.
    pub notifications: Vec<NewNotification>,
    /// Posts the task as of this commit to each of its push configs: one outbox row per config,
    /// written with it (`store::outbox`).
    pub push: bool,
}

impl Commit {
    /// This step followed by `next`, as one commit: the events and call records of both, in
    /// order; where both set the state, the transcript or the batch, `next` wins; guarded if
    /// either is.
    pub fn then(mut self, next: Commit) -> Commit {
        self.events.extend(next.events);
        self.new_calls.extend(next.new_calls);
        self.call_updates.extend(next.call_updates);
        self.delivered.extend(next.delivered);
        self.notifications.extend(next.notifications);
        Commit {
            events: self.events,
            state: next.state.or(self.state),
            transcript: next.transcript.or(self.transcript),
            new_calls: self.new_calls,
            call_updates: self.call_updates,
            new_batch: next.new_batch.or(self.new_batch),
            batch_deadline: next.batch_deadline.or(self.batch_deadline),
            guard: next.guard.or(self.guard),
            delivered: self.delivered,
            unless_queued: self.unless_queued || next.unless_queued,
            leased: self.leased || next.leased,
            notifications: self.notifications,
            push: self.push || next.push,
        }
    }
}

/// What a runner reads when it takes a stored task up: the task, the tasks before it in its
/// session (the conversation so far) and its tool calls, as of one moment.
#[derive(Debug, Clone)]
pub struct RunnerView {
    pub task: TaskRow,
    pub earlier: Vec<TaskRow>,
    pub calls: Vec<CallRow>,
}

/// A verdict on one call of a batch, as written by a decision.
#[derive(Debug, Clone, PartialEq)]
pub struct CallVerdict {
    pub call_id: String,
    pub status: CallStatus,
    pub verdict: Verdict,
    pub reason: Option<String>,
    pub run_args: Option<Value>,
    pub run_args_sha256: Option<String>,
}

/// A decision (or a cancel) on a pending batch: the compare-and-set plus the audit record.
#[derive(Debug, Clone, PartialEq)]
pub struct DecisionWrite {
    pub batch_id: i64,
    pub user_id: String,
    /// How the decider was authenticated (`none`, `tokens`, `proxy`, `oidc_session`,
    /// `oidc_jwt`); `None`: no request decided.
    pub decider_auth: Option<String>,
    pub channel: Channel,
    pub decision: Value,
    pub summary: String,
    pub verdicts: Vec<CallVerdict>,
    /// `Decided`, or `Canceled` when the task was canceled; `Pending` for approvals that
    /// leave a call short of its quorum: the votes and events are written, the batch still
    /// waits (the same compare-and-set checks that it does), and no call or audit row changes.
    pub batch_state: BatchState,
    pub task_state: TaskState,
    pub events: Vec<NewEvent>,
    /// Each person's verdict on each call this write records (`call_votes`).
    pub votes: Vec<CallVote>,
    /// The hex SHA-256 of the decision link this decision comes through, marked used in the
    /// same transaction: a link already used, expired or of another batch fails the decision.
    pub uses_link: Option<String>,
    /// Notifications of this decision (decided, canceled, expired), written with it.
    pub notifications: Vec<NewNotification>,
    /// Posts the task as of this decision to each of its push configs, as [`Commit::push`].
    pub push: bool,
}

/// One person's verdict on one call of a batch (`call_votes`): an approval toward the call's
/// quorum, or a rejection, with what made the person eligible.
#[derive(Debug, Clone, PartialEq)]
pub struct CallVote {
    pub call_id: String,
    pub user_id: String,
    pub email: Option<String>,
    /// `Approve` or `Deny`.
    pub verdict: Verdict,
    pub reason: Option<String>,
    /// Edited arguments; `None`: as asked.
    pub run_args: Option<Value>,
    /// The SHA-256 of the arguments approved or rejected.
    pub args_sha256: String,
    /// The approvers entries (`group:sre`, `user:alice`) or `requester` that let them decide.
    pub eligible_by: Vec<String>,
    pub channel: Channel,
    /// When it was written (RFC 3339); set by the store.
    pub voted_at: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct DecisionRow {
    pub id: i64,
    pub batch_id: i64,
    pub task_id: String,
    pub user_id: String,
    pub decider_auth: Option<String>,
    pub channel: Channel,
    pub decision: Value,
    pub summary: String,
    pub decided_at: String,
}

/// JSON text for a column.
pub(super) fn json_text(value: &Value) -> Result<String> {
    Ok(serde_json::to_string(value)?)
}

/// A JSON column read back; text that is not JSON is a corrupt row.
pub(super) fn json_value(text: &str) -> Result<Value> {
    serde_json::from_str(text).map_err(|err| StoreError::Corrupt(format!("stored JSON: {err}")))
}

/// A message waiting in a working task's queue.
#[derive(Debug, Clone, PartialEq)]
pub struct QueuedMessage {
    pub id: i64,
    /// The A2A message, JSON in [`EVENT_LOG_VERSION`].
    pub message: String,
}

/// A pending batch with a deadline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Deadline {
    pub task_id: String,
    pub batch_id: i64,
    pub expires_at: String,
}

/// Where a policy applies; stored as `chat` or `agent`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GrantScope {
    /// One chat (session) of its owner.
    Chat,
    /// Every chat of its owner with the agent.
    Agent,
}

impl GrantScope {
    pub fn as_str(self) -> &'static str {
        match self {
            GrantScope::Chat => "chat",
            GrantScope::Agent => "agent",
        }
    }

    pub fn parse(text: &str) -> Result<GrantScope> {
        match text {
            "chat" => Ok(GrantScope::Chat),
            "agent" => Ok(GrantScope::Agent),
            other => Err(StoreError::Corrupt(format!(
                "unknown policy scope {other:?}"
            ))),
        }
    }
}

/// A recorded call with what the gate knew of it, for replaying policies over the audit
/// (`signoff policy replay`).
#[derive(Debug, Clone, PartialEq)]
pub struct ReplayCall {
    pub call: CallRow,
    /// The task's owner, agent and groups (as they sent the task).
    pub user_id: String,
    pub agent: String,
    pub requester_groups: Vec<String>,
    /// Whether a subagent's task made the call.
    pub subagent: bool,
    /// When the gate decided it: its batch's time (an asked or decided call), else when it
    /// started, else the task's creation.
    pub at: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct GrantRow {
    pub id: String,
    pub user_id: String,
    pub agent: String,
    pub tool: String,
    pub scope: GrantScope,
    pub context_id: Option<String>,
    /// Argument name -> matcher (the agents file's matcher language); `None`: any arguments.
    pub args: Option<Value>,
    pub created_by: String,
    pub created_at: String,
    pub revoked_at: Option<String>,
    /// A time-boxed grant's end (RFC 3339); `None`: until revoked.
    pub expires_at: Option<String>,
    /// How many more calls it approves; `None`: any number.
    pub uses_left: Option<i64>,
}

/// What became of a new policy ([`crate::store::Store::insert_grant`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GrantInsert {
    Inserted,
    /// Its user already has as many policies in force as allowed; nothing was stored.
    AtCap,
    /// Its chat (a chat policy's `context_id`) is gone; nothing was stored.
    NoChat,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(text: &str) -> NewEvent {
        NewEvent {
            event: text.into(),
            is_final: false,
        }
    }

    #[test]
    fn two_steps_as_one_commit_keep_both_in_order_and_the_later_wins() {
        let finished = Commit {
            events: vec![event("result of a")],
            transcript: Some("[a]".into()),
            call_updates: vec![CallUpdate::Finished {
                call_id: "a".into(),
                result: serde_json::json!("done"),
            }],
            guard: Some(Guard::NotTerminal),
            ..Commit::default()
        };
        let pause = Commit {
            events: vec![event("paused")],
            state: Some(TaskState::InputRequired),
            new_batch: Some(serde_json::json!([{"id": "b"}])),
            ..Commit::default()
        };
        let both = finished.clone().then(pause);
        assert_eq!(both.events, vec![event("result of a"), event("paused")]);
        assert_eq!(both.state, Some(TaskState::InputRequired));
        assert_eq!(both.transcript.as_deref(), Some("[a]"));
        assert_eq!(both.call_updates, finished.call_updates);
        assert!(both.new_batch.is_some());
        assert_eq!(both.guard, Some(Guard::NotTerminal));
        let later_transcript = Commit {
            transcript: Some("[a, b]".into()),
            ..Commit::default()
        };
        assert_eq!(
            finished.then(later_transcript).transcript.as_deref(),
            Some("[a, b]")
        );
    }

    #[test]
    fn typed_columns_round_trip_and_refuse_unknown_text() {
        for status in [
            CallStatus::Auto,
            CallStatus::Held,
            CallStatus::Approved,
            CallStatus::Rejected,
            CallStatus::Canceled,
            CallStatus::Started,
            CallStatus::Finished,
            CallStatus::Denied,
            CallStatus::Expired,
        ] {
            assert_eq!(CallStatus::parse(status.as_str()).unwrap(), status);
        }
        for state in [
            BatchState::Pending,
            BatchState::Decided,
            BatchState::Canceled,
            BatchState::Expired,
        ] {
            assert_eq!(BatchState::parse(state.as_str()).unwrap(), state);
        }
        for verdict in [
            Verdict::Approve,
            Verdict::Deny,
            Verdict::Cancel,
            Verdict::Expire,
        ] {
            assert_eq!(Verdict::parse(verdict.as_str()).unwrap(), verdict);
        }
        for channel in [
            Channel::A2a,
            Channel::Text,
            Channel::Rest,
            Channel::Cancel,
            Channel::Policy,
            Channel::Rule,
            Channel::Expiry,
            Channel::Link,
            Channel::Slack,
            Channel::Reviewer,
            Channel::WebPush,
            Channel::McpClient,
        ] {
            assert_eq!(Channel::parse(channel.as_str()).unwrap(), channel);
        }
        for state in TaskState::ALL {
            assert_eq!(parse_task_state(task_state_text(state)).unwrap(), state);
        }
        let err = CallStatus::parse("exploded").unwrap_err();
        assert!(matches!(err, StoreError::Corrupt(_)));
        assert_eq!(
            err.to_string(),
            "corrupt row: unknown call status \"exploded\""
        );
        assert!(matches!(
            parse_task_state("paused"),
            Err(StoreError::Corrupt(_))
        ));
        assert!(matches!(json_value("{"), Err(StoreError::Corrupt(_))));
    }
}

/// A subagent's task started by an agent-tool call of a parent task (docs/wire.md, Subagents).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubagentLink {
    pub parent_task_id: String,
    /// The parent's agent-tool call that started it.
    pub parent_call_id: String,
    /// The subagent, `namespace/name`.
    pub agent: String,
    /// Our task id for a local subagent; the remote agent's task id for a remote one.
    pub child_task_id: String,
    pub child_context_id: String,
    pub remote: bool,
    /// How deep the child is: 1 under a task a person started.
    pub depth: i64,
    pub created_at: String,
}

/// The chat a local subagent's task will have, stored with its link (before the task): a link
/// whose task is missing then tells "not created yet" (its chat is there) from "deleted with
/// its chat" (gone), so a deleted subagent task is never made again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChildChat {
    /// The parent task's owner, who owns the subagent's chat too.
    pub user_id: String,
    pub title: String,
}
