//! The view model of one chat: what the components render.

use std::collections::BTreeMap;

use super::keyed::{KeySet, KeyedMap};

use serde_json::Value;
use signoff_protocol::hitl::{ActionRequest, DecidedBy, Dialect, Via};
use signoff_protocol::TaskState;

use super::tools::ToolLog;

/// Who or what a chat item comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ItemKind {
    User,
    Agent,
    /// The person's decision on a batch, shown as a short line rather than a bubble.
    Decision,
    /// The task was canceled.
    Canceled,
    /// The task failed; the item's text says why.
    Failed,
    /// The agent's thought beside its answer (docs/wire.md, Calls an agent ran itself), shown
    /// folded away.
    Thought,
}

/// One entry in the transcript: a bubble with text, the tool cards it introduced, or both.
#[derive(Debug, Clone, PartialEq)]
pub struct Item {
    /// Stable across updates (the `For` key): a message id, or `artifact:<id>`, or `stream:<task>`.
    pub key: String,
    pub task_id: Option<String>,
    pub kind: ItemKind,
    pub text: String,
    /// Keys of the tool calls this item introduced first, in order.
    pub tool_keys: Vec<String>,
    /// More text is still coming for this item.
    pub streaming: bool,
}

/// A tool call's status, derived from the event log (ARCHITECTURE.md, invariant 3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolStatus {
    Requested,
    PendingApproval,
    Approved,
    Rejected,
    Executing,
    Completed,
    Failed,
    /// Pending when its task ended without a decision (canceled, failed, or completed as kagent
    /// does when a question is answered without one): it never ran.
    NotRun,
    /// Refused by an argument rule of the agents file without asking anyone.
    Denied,
    /// Nobody decided before the batch's deadline; it never ran.
    Expired,
}

impl ToolStatus {
    /// The badge text.
    pub fn label(self) -> &'static str {
        match self {
            ToolStatus::Requested => "Call requested",
            ToolStatus::PendingApproval => "Approval required",
            ToolStatus::Approved => "Approved",
            ToolStatus::Rejected => "Rejected",
            ToolStatus::Executing => "Executing",
            ToolStatus::Completed => "Completed",
            ToolStatus::Failed => "Failed",
            ToolStatus::NotRun => "Not run",
            ToolStatus::Denied => "Denied by rule",
            ToolStatus::Expired => "Expired",
        }
    }

    /// The CSS modifier and test id suffix.
    pub fn slug(self) -> &'static str {
        match self {
            ToolStatus::Requested => "requested",
            ToolStatus::PendingApproval => "pending",
            ToolStatus::Approved => "approved",
            ToolStatus::Rejected => "rejected",
            ToolStatus::Executing => "executing",
            ToolStatus::Completed => "completed",
            ToolStatus::Failed => "failed",
            ToolStatus::NotRun => "not-run",
            ToolStatus::Denied => "denied",
            ToolStatus::Expired => "expired",
        }
    }

    /// Nothing more will happen to the call (it may fold into a group).
    pub fn is_finished(self) -> bool {
        match self {
            ToolStatus::Completed
            | ToolStatus::Failed
            | ToolStatus::Rejected
            | ToolStatus::NotRun
            | ToolStatus::Denied
            | ToolStatus::Expired => true,
            ToolStatus::Requested
            | ToolStatus::PendingApproval
            | ToolStatus::Approved
            | ToolStatus::Executing => false,
        }
    }
}

/// One tool call, as its card shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCallView {
    /// `<task>:<call id>` (with `#n` when a call id is reused in the same task).
    pub key: String,
    /// The model's call id (kagent: the original call's id).
    pub id: String,
    pub task_id: String,
    pub name: String,
    pub args: Value,
    /// The arguments the person edited before approving: what ran instead of `args`.
    pub edited_args: Option<Value>,
    pub server: Option<String>,
    pub description: Option<String>,
    pub status: ToolStatus,
    /// The tool's `response` object, once it came.
    pub result: Option<Value>,
    pub is_error: bool,
    /// The person's reason, for a rejected call; the rule, for a denied one.
    pub reason: Option<String>,
    /// The policy or rule that decided the call without asking (docs/wire.md, Rules and
    /// policies).
    pub decided_by: Option<DecidedBy>,
    /// The call's `signoff_why` as the server sent it (`hitl::Why`, read by the card): the
    /// rule, grant or policy that let it run, made it wait or refused it.
    pub why: Option<serde_json::Value>,
    /// The item that first introduced the call id: the card shows under it.
    pub owner: String,
    /// A subagent's call nested under an agent-tool call of the same task (docs/wire.md,
    /// Subagents): the card shows inside that call's card.
    pub via: Option<Via>,
    /// What a call the agent ran itself changed, as it reported: its `preview` (a
    /// `hitl::Preview`, read by the card, whose chunk has the reader).
    pub preview: Option<Value>,
    /// The agent ran it itself, without asking anyone (docs/wire.md, Calls an agent ran
    /// itself): its status is the one it reported.
    pub ran: bool,
}

impl ToolCallView {
    /// What the card's badge says, and the decision shown beside it: an approved call that
    /// reported its result says "Completed" (or "Failed") with "Approved" beside it; the
    /// derived status stays approved (ARCHITECTURE.md, invariant 3).
    pub fn outcome(&self) -> (ToolStatus, Option<ToolStatus>) {
        match (self.status, &self.result) {
            (ToolStatus::Approved, Some(_)) if self.is_error => {
                (ToolStatus::Failed, Some(ToolStatus::Approved))
            }
            (ToolStatus::Approved, Some(_)) => (ToolStatus::Completed, Some(ToolStatus::Approved)),
            (status, _) => (status, None),
        }
    }

    /// A call that is done although no result came (its task completed without one).
    pub fn no_result_reported(&self) -> bool {
        self.status == ToolStatus::Completed && self.result.is_none()
    }
}

/// A batch of calls that waits for a person's decision.
#[derive(Debug, Clone, PartialEq)]
pub struct PendingBatch {
    pub task_id: String,
    pub context_id: Option<String>,
    pub dialect: Dialect,
    pub requests: Vec<ActionRequest>,
    /// The card keys of the requests, in the same order.
    pub keys: Vec<String>,
    /// When it expires unanswered (RFC 3339), if the agent has an approval timeout.
    pub expires_at: Option<String>,
}

impl PendingBatch {
    /// Two or more calls, none a question, are decided from a bar above their cards; a batch
    /// with a question is decided by the question card's one Submit, and a lone call on its card.
    pub fn has_bar(&self) -> bool {
        self.keys.len() >= 2
            && self
                .requests
                .iter()
                .all(|request| request.questions().is_none())
    }

    /// Whether the approver may edit call `id`'s arguments: kagent's peers run the original
    /// arguments (`Dialect::supports_modified_args`), and a request the server marks not
    /// editable (`metadata.editable: false`: a coding agent over ACP runs its own tools) only
    /// takes yes or no.
    pub fn can_edit(&self, id: &str) -> bool {
        self.dialect.supports_modified_args()
            && self
                .requests
                .iter()
                .find(|request| request.id == id)
                .is_some_and(ActionRequest::editable)
    }

    /// The call whose card comes into view when the batch arrives, when no bar does: the
    /// question (whose Submit decides the pause), else the only call.
    pub fn call_to_reveal(&self) -> Option<&str> {
        if self.has_bar() {
            return None;
        }
        self.requests
            .iter()
            .find(|request| request.questions().is_some())
            .or(self.requests.first())
            .map(|request| request.id.as_str())
    }

    /// What the status line (a polite live region) says while the batch waits, so a screen
    /// reader hears which tools wait: "write_file waits for your approval", "2 calls wait for
    /// your approval: write_file, delete_file".
    pub fn announcement(&self) -> String {
        let names: Vec<&str> = self
            .requests
            .iter()
            .map(|call| call.name.as_str())
            .collect();
        match names.as_slice() {
            // A question is answered, not approved (its card says "Waiting for your answer").
            [_] if self.requests.iter().all(|call| call.questions().is_some()) => {
                "A question waits for your answer".to_owned()
            }
            [one] => format!("{one} waits for your approval"),
            many => format!(
                "{} calls wait for your approval: {}",
                many.len(),
                many.join(", ")
            ),
        }
    }
}

/// What the chat is doing, for the status line and the composer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChatStatus {
    Ready,
    /// Sent; nothing back yet.
    Thinking,
    Working,
    ExecutingTools,
    AwaitingApproval,
    /// The stream broke mid-turn (the server restarted, the network dropped); the task goes on
    /// on the server, and the chat resubscribes to it until the server answers.
    Reconnecting,
    /// The last turn failed or the connection broke; the person may send again.
    Error(String),
}

impl ChatStatus {
    /// kagent's wording where it fits.
    pub fn label(&self) -> String {
        match self {
            ChatStatus::Ready => "Ready".to_owned(),
            ChatStatus::Thinking => "Thinking…".to_owned(),
            ChatStatus::Working => "Working…".to_owned(),
            ChatStatus::ExecutingTools => "Executing tools…".to_owned(),
            ChatStatus::AwaitingApproval => "Awaiting approval".to_owned(),
            ChatStatus::Reconnecting => "Connection lost: reconnecting…".to_owned(),
            ChatStatus::Error(message) => format!("Error: {message}"),
        }
    }

    /// Whether a turn is under way (Stop applies).
    pub fn is_busy(&self) -> bool {
        match self {
            ChatStatus::Thinking
            | ChatStatus::Working
            | ChatStatus::ExecutingTools
            | ChatStatus::Reconnecting => true,
            ChatStatus::Ready | ChatStatus::AwaitingApproval | ChatStatus::Error(_) => false,
        }
    }
}

/// Token counts the agent reported for the last turn.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    pub prompt: u64,
    pub completion: u64,
    pub total: u64,
}

impl std::ops::Add for Usage {
    type Output = Usage;

    fn add(self, other: Usage) -> Usage {
        Usage {
            prompt: self.prompt + other.prompt,
            completion: self.completion + other.completion,
            total: self.total + other.total,
        }
    }
}

/// One turn's token counts and the answer they belong to.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct TurnUsage {
    pub task_id: String,
    pub usage: Usage,
    /// The key of the task's latest agent item when the counts were last seen.
    pub item: Option<String>,
}

/// Everything one chat shows. Built only by [`ChatView::apply`] and its siblings in
/// `reduce.rs`, from live events and stored tasks alike.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatView {
    pub context_id: Option<String>,
    /// The task of the latest turn.
    pub task_id: Option<String>,
    pub items: Vec<Item>,
    pub tools: Vec<ToolCallView>,
    pub pending: Option<PendingBatch>,
    pub status: ChatStatus,
    pub usage: Option<Usage>,
    /// Every turn's counts, once each (kagent repeats a turn's counts on several events).
    pub(super) turns: Vec<TurnUsage>,
    /// The tool-related events, in order: the input of the three-pass derivation of `tools`.
    pub(super) tool_log: ToolLog,
    pub(super) task_states: KeyedMap<TaskState>,
    /// Message ids already applied (a stored task repeats them; the server echoes ours).
    pub(super) seen_messages: KeySet,
    /// The person's messages sent to the working task and not yet delivered to the agent
    /// (docs/wire.md, Methods): their bubbles say "Queued".
    pub queued: KeySet,
    /// Messages that were queued and have reached the agent: their bubbles say "Delivered".
    pub delivered: KeySet,
    /// Artifacts whose text duplicates an earlier message (kagent sends both): artifact id ->
    /// the item that already shows it.
    pub(super) artifact_aliases: BTreeMap<String, String>,
    /// Item key -> its position in `items` (the first, should a key repeat), so a lookup does
    /// not walk the transcript.
    pub(super) item_index: BTreeMap<String, usize>,
    /// The person's rating of each task's answer (stored, or given in this view).
    pub ratings: KeyedMap<super::feedback::Rating>,
}

impl Default for ChatView {
    fn default() -> Self {
        ChatView {
            context_id: None,
            task_id: None,
            items: Vec::new(),
            tools: Vec::new(),
            pending: None,
            status: ChatStatus::Ready,
            usage: None,
            turns: Vec::new(),
            tool_log: ToolLog::default(),
            task_states: KeyedMap::new(),
            seen_messages: KeySet::new(),
            queued: KeySet::new(),
            delivered: KeySet::new(),
            artifact_aliases: BTreeMap::new(),
            item_index: BTreeMap::new(),
            ratings: KeyedMap::new(),
        }
    }
}

impl ChatView {
    pub fn item(&self, key: &str) -> Option<&Item> {
        self.items.get(*self.item_index.get(key)?)
    }

    pub(super) fn item_mut(&mut self, key: &str) -> Option<&mut Item> {
        self.items.get_mut(*self.item_index.get(key)?)
    }

    pub(super) fn push_item(&mut self, item: Item) {
        self.item_index
            .entry(item.key.clone())
            .or_insert(self.items.len());
        self.items.push(item);
    }

    /// Keeps the items `keep` says to keep, in order.
    pub(super) fn retain_items(&mut self, keep: impl FnMut(&Item) -> bool) {
        let before = self.items.len();
        self.items.retain(keep);
        if self.items.len() != before {
            self.item_index.clear();
            for (at, item) in self.items.iter().enumerate() {
                self.item_index.entry(item.key.clone()).or_insert(at);
            }
        }
    }

    pub fn tool(&self, key: &str) -> Option<&ToolCallView> {
        self.tools.get(self.tool_log.position(key)?)
    }

    /// The tokens of every turn of the chat, if the agent reported any (a chat that took no
    /// model, such as a call a program asked about, counts none and shows none).
    pub fn session_usage(&self) -> Option<Usage> {
        self.turns
            .iter()
            .map(|turn| turn.usage)
            .reduce(|a, b| a + b)
            .filter(|usage| usage.total > 0)
    }

    /// The tokens of the turns whose answer is one of `items`, if any.
    pub fn answer_usage(&self, items: &[String]) -> Option<Usage> {
        self.turns
            .iter()
            .filter(|turn| {
                self.answer_of(turn)
                    .is_some_and(|item| items.contains(item))
            })
            .map(|turn| turn.usage)
            .reduce(|a, b| a + b)
            .filter(|usage| usage.total > 0)
    }

    /// The answer a turn's counts show on: its own item while the chat shows it, else its
    /// task's latest agent answer (a pause's message, which its cards stand for, may be gone
    /// or not yet there), so every count the total holds shows on some answer, live as after
    /// a reload.
    fn answer_of<'a>(&'a self, turn: &'a TurnUsage) -> Option<&'a String> {
        match &turn.item {
            Some(key) if self.item(key).is_some() => Some(key),
            Some(_) | None => self
                .items
                .iter()
                .rev()
                .find(|item| {
                    item.kind == ItemKind::Agent && item.task_id.as_deref() == Some(&turn.task_id)
                })
                .map(|item| &item.key),
        }
    }

    /// The state of the latest task, if any.
    pub fn task_state(&self) -> Option<TaskState> {
        self.task_id
            .as_ref()
            .and_then(|task| self.task_states.get(task).copied())
    }
}
