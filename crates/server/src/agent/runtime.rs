//! The runtime: accepts messages, runs the turn loop (model turn -> tool calls -> results ->
//! next turn), holds calls that need approval in a persisted batch, applies decisions with a
//! compare-and-set, and streams every task from its stored event log.
//!
//! Everything a task needs to go on lives in the store (ARCHITECTURE.md, invariant 4): the
//! transcript the model sees, each call's record, the pending batch. A runner (`drive`) reads
//! that state and takes the next step, so the same code starts a task, resumes it after a
//! decision, and picks it up after a restart.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::StreamExt;
use serde::Serialize;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use signoff_protocol::codec;
use signoff_protocol::hitl::{
    self, ActionRequest, ApprovalInterrupt, Decision, DecisionError, Dialect, ToolCall, ToolResult,
    Verdict,
};
use signoff_protocol::{
    ListTasksParams, ListTasksResult, Message, Part, ProtocolVersion, Role, StreamEvent, Task,
    TaskState,
};
use tokio::sync::watch;
use tokio_stream::wrappers::ReceiverStream;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::model::{ChatMessage, Model, ModelError, ModelEvent, ModelRequest, ModelToolCall};
use super::tools::{error_result, Toolbox};
use super::view::{self, parse_state, state_name};
use crate::store::{
    CallStatus, CallUpdate, CallVerdict, Commit, DecisionWrite, Guard, NewCall, NewEvent, Store,
    StoreError, TaskRow,
};

/// What goes wrong in the runtime; the HTTP layer maps each to a JSON-RPC code or a status.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    #[error("no agent {0}")]
    AgentNotFound(String),
    #[error("task {0} not found")]
    TaskNotFound(String),
    /// The task exists but belongs to someone else (A2A answers "not found"; REST 403).
    #[error("task {0} belongs to another user")]
    Forbidden(String),
    #[error("session {0} not found")]
    SessionNotFound(String),
    #[error("{0}")]
    InvalidParams(String),
    /// The task is not waiting for a decision, or its batch was already decided.
    #[error("{0}")]
    NotPaused(String),
    #[error("task {id} is {state} and cannot be canceled")]
    NotCancelable { id: String, state: String },
    #[error("{0}")]
    Decision(#[from] DecisionError),
    /// The task ended (canceled) while a runner was still working on it.
    #[error("the task has ended")]
    TaskEnded,
    /// The task was deleted (with its session) while someone followed it.
    #[error("task {0} was deleted")]
    TaskDeleted(String),
    #[error("server is shutting down")]
    ShuttingDown,
    #[error("store: {0}")]
    Store(StoreError),
    #[error("internal: {0}")]
    Internal(String),
}

impl From<StoreError> for AgentError {
    fn from(err: StoreError) -> Self {
        match err {
            StoreError::Conflict(_) => AgentError::TaskEnded,
            StoreError::Db(_)
            | StoreError::Migrate(_)
            | StoreError::Json(_)
            | StoreError::NotFound => AgentError::Store(err),
        }
    }
}

pub type Result<T, E = AgentError> = std::result::Result<T, E>;

/// The wake-up value that tells a task's followers it was deleted.
const DELETED: i64 = i64::MIN;

/// One agent the server runs.
pub struct Agent {
    pub namespace: String,
    pub name: String,
    pub description: String,
    pub instruction: String,
    pub model: Arc<dyn Model>,
    pub tools: Toolbox,
}

impl Agent {
    /// `namespace/name`, how tasks and sessions refer to their agent.
    pub fn key(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }
}

/// Timeouts and sizes of the turn loop: what one message or one model turn may cost.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// The longest a model may stay silent within a turn.
    pub model_timeout: Duration,
    pub tool_timeout: Duration,
    /// How long `POST /api/approvals` waits for the decided calls to finish.
    pub decision_wait: Duration,
    /// The longest user message, in bytes of text.
    pub max_message_bytes: usize,
    /// The longest rejection reason, in bytes.
    pub max_reason_bytes: usize,
    /// The most tool calls one model turn may ask for; more fails the task.
    pub max_tool_calls_per_turn: usize,
}

impl Limits {
    pub const DEFAULT_MESSAGE_BYTES: usize = 64 * 1024;
    pub const DEFAULT_REASON_BYTES: usize = 4 * 1024;
    pub const DEFAULT_TOOL_CALLS_PER_TURN: usize = 64;
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            model_timeout: Duration::from_secs(120),
            tool_timeout: Duration::from_secs(60),
            decision_wait: Duration::from_secs(30),
            max_message_bytes: Limits::DEFAULT_MESSAGE_BYTES,
            max_reason_bytes: Limits::DEFAULT_REASON_BYTES,
            max_tool_calls_per_turn: Limits::DEFAULT_TOOL_CALLS_PER_TURN,
        }
    }
}

/// Through which surface a decision came (kept in the audit trail).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Channel {
    /// A decision DataPart in an A2A message.
    A2a,
    /// Approve or reject words in an A2A message.
    Text,
    Rest,
}

impl Channel {
    pub fn as_str(self) -> &'static str {
        match self {
            Channel::A2a => "a2a",
            Channel::Text => "text",
            Channel::Rest => "rest",
        }
    }
}

/// A message accepted for a task: stream its events after `after_seq`.
#[derive(Debug, Clone, PartialEq)]
pub struct Accepted {
    pub task_id: String,
    pub after_seq: i64,
}

/// A session as the API lists it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Session {
    pub id: String,
    pub agent: String,
    pub title: String,
    pub created_at: String,
    pub updated_at: String,
}

/// A pending batch as `GET /api/approvals` lists it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PendingApproval {
    pub task_id: String,
    pub context_id: String,
    pub agent: String,
    pub since: String,
    pub calls: Vec<Value>,
}

/// One call of an audited decision.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AuditCall {
    pub id: String,
    pub name: String,
    pub verdict: String,
    pub reason: Option<String>,
    /// sha256 of the arguments as the model proposed them.
    pub args_sha256: String,
    /// sha256 of the arguments as run (edited ones where given); none for a call that never ran.
    pub run_args_sha256: Option<String>,
    pub edited: bool,
    /// The call's result once it has run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
}

/// One decision of the audit trail.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AuditEntry {
    pub task_id: String,
    pub context_id: String,
    pub agent: String,
    pub decided_by: String,
    pub decided_at: String,
    pub channel: String,
    pub summary: String,
    pub decision: Value,
    pub calls: Vec<AuditCall>,
}

/// The sha256 of a JSON value (keys sorted, so equal arguments hash equally).
pub fn args_sha256(args: &Value) -> String {
    let digest = Sha256::digest(args.to_string().as_bytes());
    digest.iter().map(|byte| format!("{byte:02x}")).collect()
}

/// Reads a transcript back; a corrupt one is an internal error, not a panic.
fn transcript_of(row: &TaskRow) -> Result<Vec<ChatMessage>> {
    serde_json::from_value(row.transcript.clone())
        .map_err(|err| AgentError::Internal(format!("transcript of {}: {err}", row.id)))
}

fn transcript_value(transcript: &[ChatMessage]) -> Result<Value> {
    serde_json::to_value(transcript).map_err(|err| AgentError::Internal(err.to_string()))
}

/// The calls of the last assistant turn that have no result yet.
fn open_calls(transcript: &[ChatMessage]) -> Vec<ModelToolCall> {
    let Some(turn) = transcript
        .iter()
        .rposition(|message| matches!(message, ChatMessage::Assistant { .. }))
    else {
        return Vec::new();
    };
    let ChatMessage::Assistant { tool_calls, .. } = &transcript[turn] else {
        return Vec::new();
    };
    let answered: HashSet<&str> = transcript[turn + 1..]
        .iter()
        .filter_map(|message| match message {
            ChatMessage::Tool { call_id, .. } => Some(call_id.as_str()),
            ChatMessage::User { .. } | ChatMessage::Assistant { .. } => None,
        })
        .collect();
    tool_calls
        .iter()
        .filter(|call| !answered.contains(call.id.as_str()))
        .cloned()
        .collect()
}

/// An earlier task's transcript, made safe to show a model: calls that never got a result
/// (a canceled task) get one saying so.
fn closed(mut transcript: Vec<ChatMessage>) -> Vec<ChatMessage> {
    let open = open_calls(&transcript);
    for call in open {
        transcript.push(ChatMessage::Tool {
            call_id: call.id,
            name: call.name,
            response: error_result("not run: the task ended before this call ran"),
            edited_from: None,
        });
    }
    transcript
}

/// Replaces the arguments of one call of the last assistant turn (edited arguments are what ran).
fn set_call_args(transcript: &mut [ChatMessage], call_id: &str, args: &Value) {
    for message in transcript.iter_mut().rev() {
        if let ChatMessage::Assistant { tool_calls, .. } = message {
            if let Some(call) = tool_calls.iter_mut().find(|call| call.id == call_id) {
                call.args = args.clone();
            }
            return;
        }
    }
}

pub struct Runtime {
    store: Store,
    agents: Vec<Arc<Agent>>,
    limits: Limits,
    /// Latest event sequence number of each followed task: wakes followers after a commit.
    hub: Mutex<HashMap<String, watch::Sender<i64>>>,
    /// The cancel token of each task's current runner (a user's cancel stops it at once).
    running: Mutex<HashMap<String, CancellationToken>>,
    /// One runner per task at a time: a runner spawned while another finishes waits for it.
    locks: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
    /// Cancelled at shutdown: streams end, runners stop between steps.
    shutdown: CancellationToken,
    /// The runners, so shutdown can wait for their last writes.
    tracker: TaskTracker,
}

impl Runtime {
    pub fn new(store: Store, agents: Vec<Arc<Agent>>, limits: Limits) -> Arc<Runtime> {
        Arc::new(Runtime {
            store,
            agents,
            limits,
            hub: Mutex::new(HashMap::new()),
            running: Mutex::new(HashMap::new()),
            locks: Mutex::new(HashMap::new()),
            shutdown: CancellationToken::new(),
            tracker: TaskTracker::new(),
        })
    }

    /// Ends open streams (graceful HTTP shutdown would otherwise wait on them forever).
    pub fn begin_shutdown(&self) {
        self.shutdown.cancel();
    }

    pub fn agents(&self) -> &[Arc<Agent>] {
        &self.agents
    }

    pub fn agent(&self, namespace: &str, name: &str) -> Option<Arc<Agent>> {
        self.agents
            .iter()
            .find(|agent| agent.namespace == namespace && agent.name == name)
            .cloned()
    }

    fn agent_by_key(&self, key: &str) -> Option<Arc<Agent>> {
        self.agents.iter().find(|agent| agent.key() == key).cloned()
    }

    /// Stops runners and streams, and waits (bounded) for their last writes.
    pub async fn shutdown(&self, wait: Duration) {
        self.shutdown.cancel();
        self.tracker.close();
        if tokio::time::timeout(wait, self.tracker.wait())
            .await
            .is_err()
        {
            tracing::warn!("runners still busy at shutdown; they resume at the next start");
        }
    }

    // ---- the event log ---------------------------------------------------------------------

    fn encode(event: &StreamEvent) -> NewEvent {
        let is_final = match event {
            StreamEvent::StatusUpdate(update) => update.is_final,
            StreamEvent::Task(_) | StreamEvent::Message(_) | StreamEvent::ArtifactUpdate(_) => {
                false
            }
        };
        NewEvent {
            event: codec::encode_event(ProtocolVersion::V0_3, event),
            is_final,
        }
    }

    /// Writes `events` with `commit` in one transaction, then wakes the task's followers
    /// (persist, then announce).
    async fn commit(
        &self,
        task_id: &str,
        events: &[StreamEvent],
        mut commit: Commit,
    ) -> Result<i64> {
        commit.events = events.iter().map(Self::encode).collect();
        let seq = self.store.commit(task_id, commit).await?;
        self.notify(task_id, seq);
        Ok(seq)
    }

    fn notify(&self, task_id: &str, seq: i64) {
        if let Ok(mut hub) = self.hub.lock() {
            if let Some(sender) = hub.get(task_id) {
                sender.send_replace(seq);
                if sender.receiver_count() == 0 {
                    hub.remove(task_id);
                }
            }
        }
    }

    fn watch(&self, task_id: &str) -> watch::Receiver<i64> {
        match self.hub.lock() {
            Ok(mut hub) => hub
                .entry(task_id.to_owned())
                .or_insert_with(|| watch::channel(0).0)
                .subscribe(),
            // A poisoned hub only loses wake-ups; followers also poll.
            Err(_) => watch::channel(0).1,
        }
    }

    /// The task as of event `upto` (or now), folded from its log, with its audit trail.
    pub async fn snapshot(&self, task_id: &str, upto: Option<i64>) -> Result<(Task, i64)> {
        let row = self
            .store
            .task(task_id)
            .await?
            .ok_or_else(|| AgentError::TaskNotFound(task_id.to_owned()))?;
        let mut task = view::empty_task(&row.id, &row.context_id);
        let mut seq = 0;
        loop {
            let events = self.store.events(task_id, seq, upto, 1000).await?;
            let Some(last) = events.last() else { break };
            seq = last.seq;
            for event in &events {
                let decoded = codec::decode_event(ProtocolVersion::V0_3, &event.event)
                    .map_err(|err| AgentError::Internal(format!("stored event: {err}")))?;
                view::apply(&mut task, &decoded);
            }
        }
        let audit = self.audit(&row).await?;
        if !audit.is_empty() {
            let audit = serde_json::to_value(&audit)
                .map_err(|err| AgentError::Internal(err.to_string()))?;
            task.metadata = Some(view::metadata_with("signoff_audit", audit));
        }
        Ok((task, seq))
    }

    /// Streams a task's events after `after`, from the store, until a final event (or
    /// shutdown). Reading the log rather than a channel means nothing is sent twice or missed,
    /// whoever wrote the events.
    pub fn follow(
        self: &Arc<Self>,
        task_id: &str,
        after: i64,
    ) -> ReceiverStream<Result<StreamEvent>> {
        let (sender, receiver) = tokio::sync::mpsc::channel(64);
        let runtime = self.clone();
        let task_id = task_id.to_owned();
        tokio::spawn(async move {
            let mut wake = runtime.watch(&task_id);
            let mut seq = after;
            loop {
                let events = match runtime.store.events(&task_id, seq, None, 500).await {
                    Ok(events) => events,
                    Err(err) => {
                        let _ = sender.send(Err(err.into())).await;
                        return;
                    }
                };
                let full_page = events.len() == 500;
                for event in events {
                    seq = event.seq;
                    let decoded = codec::decode_event(ProtocolVersion::V0_3, &event.event)
                        .map_err(|err| AgentError::Internal(format!("stored event: {err}")));
                    if sender.send(decoded).await.is_err() {
                        return;
                    }
                    if event.is_final {
                        return;
                    }
                }
                if full_page {
                    continue;
                }
                let woken = tokio::select! {
                    _ = runtime.shutdown.cancelled() => return,
                    _ = sender.closed() => return,
                    // Polling as well as waking: a write from another process still arrives.
                    changed = tokio::time::timeout(Duration::from_secs(2), wake.changed()) => {
                        matches!(changed, Ok(Ok(())))
                    }
                };
                // Deleted with its session: nothing more will come, so say so and end. (A poll
                // checks too: another process may have deleted it.)
                let deleted = *wake.borrow() == DELETED
                    || (!woken && matches!(runtime.store.task(&task_id).await, Ok(None)));
                if deleted {
                    let _ = sender
                        .send(Err(AgentError::TaskDeleted(task_id.clone())))
                        .await;
                    return;
                }
            }
        });
        ReceiverStream::new(receiver)
    }

    /// Waits until the task's stream after `after` reaches a final event.
    pub async fn wait_final(self: &Arc<Self>, task_id: &str, after: i64) -> Result<()> {
        let mut events = self.follow(task_id, after);
        while let Some(event) = events.next().await {
            event?;
        }
        Ok(())
    }

    // ---- access ----------------------------------------------------------------------------

    /// The task row, if `user` owns it.
    async fn owned_task(&self, user: &str, task_id: &str) -> Result<TaskRow> {
        let row = self
            .store
            .task(task_id)
            .await?
            .ok_or_else(|| AgentError::TaskNotFound(task_id.to_owned()))?;
        if row.user_id != user {
            return Err(AgentError::Forbidden(task_id.to_owned()));
        }
        Ok(row)
    }

    /// A user's task with at most `history_length` history messages.
    pub async fn task(
        &self,
        user: &str,
        task_id: &str,
        history_length: Option<u32>,
    ) -> Result<Task> {
        self.owned_task(user, task_id).await?;
        let (mut task, _) = self.snapshot(task_id, None).await?;
        view::trim_history(&mut task, history_length);
        Ok(task)
    }

    /// A user's task and its last event's number, after checking ownership.
    pub async fn owned_snapshot(&self, user: &str, task_id: &str) -> Result<(Task, i64)> {
        self.owned_task(user, task_id).await?;
        self.snapshot(task_id, None).await
    }

    /// v1.0 `ListTasks`: the user's tasks, newest first, a page at a time.
    pub async fn list_tasks(
        &self,
        user: &str,
        params: &ListTasksParams,
    ) -> Result<ListTasksResult> {
        let page_size = params.page_size.unwrap_or(50).clamp(1, 100);
        let offset: i64 = match params.page_token.as_deref() {
            None | Some("") => 0,
            Some(token) => token.parse().map_err(|_| {
                AgentError::InvalidParams(format!("pageToken {token:?} is not one we issued"))
            })?,
        };
        let state = params.status.map(state_name);
        let (rows, total) = self
            .store
            .list_tasks(
                user,
                params.context_id.as_deref(),
                state,
                offset,
                i64::from(page_size),
            )
            .await?;
        let mut tasks = Vec::new();
        for row in &rows {
            let (mut task, _) = self.snapshot(&row.id, None).await?;
            view::trim_history(&mut task, params.history_length);
            if params.include_artifacts != Some(true) {
                task.artifacts.clear();
            }
            tasks.push(task);
        }
        let next = offset + rows.len() as i64;
        Ok(ListTasksResult {
            tasks,
            next_page_token: if next < total {
                next.to_string()
            } else {
                String::new()
            },
            page_size,
            total_size: u32::try_from(total).unwrap_or(u32::MAX),
        })
    }

    pub async fn sessions(&self, user: &str) -> Result<Vec<Session>> {
        Ok(self
            .store
            .sessions(user)
            .await?
            .into_iter()
            .map(|row| Session {
                id: row.id,
                agent: row.agent,
                title: row.title,
                created_at: row.created_at,
                updated_at: row.updated_at,
            })
            .collect())
    }

    /// A user's session with its tasks, in order.
    pub async fn session(&self, user: &str, id: &str) -> Result<(Session, Vec<Task>)> {
        let row = self
            .store
            .session(id)
            .await?
            .filter(|row| row.user_id == user)
            .ok_or_else(|| AgentError::SessionNotFound(id.to_owned()))?;
        let mut tasks = Vec::new();
        for task in self.store.session_tasks(id).await? {
            tasks.push(self.snapshot(&task.id, None).await?.0);
        }
        let session = Session {
            id: row.id,
            agent: row.agent,
            title: row.title,
            created_at: row.created_at,
            updated_at: row.updated_at,
        };
        Ok((session, tasks))
    }

    /// Deletes a user's session; its running tasks are stopped first.
    pub async fn delete_session(&self, user: &str, id: &str) -> Result<()> {
        self.store
            .session(id)
            .await?
            .filter(|row| row.user_id == user)
            .ok_or_else(|| AgentError::SessionNotFound(id.to_owned()))?;
        let tasks = self.store.session_tasks(id).await?;
        for task in &tasks {
            self.stop_runner(&task.id);
        }
        self.store.delete_session(id).await?;
        // Ends the streams and blocking requests that follow these tasks.
        for task in &tasks {
            self.notify(&task.id, DELETED);
        }
        Ok(())
    }

    // ---- messages --------------------------------------------------------------------------

    /// Accepts a user message for `agent`: a new task, or a decision on a paused one.
    pub async fn send(
        self: &Arc<Self>,
        user: &str,
        agent: &Arc<Agent>,
        message: Message,
    ) -> Result<Accepted> {
        if self.shutdown.is_cancelled() {
            return Err(AgentError::ShuttingDown);
        }
        if message.role != Role::User {
            return Err(AgentError::InvalidParams(
                "params.message.role: a message to an agent must have the user role".into(),
            ));
        }
        let text_bytes = message.text().len();
        if text_bytes > self.limits.max_message_bytes {
            return Err(AgentError::InvalidParams(format!(
                "params.message: its text is {text_bytes} bytes; the limit is {} bytes",
                self.limits.max_message_bytes
            )));
        }
        if let Some(task_id) = message.task_id.clone() {
            return self.continue_task(user, agent, &task_id, message).await;
        }
        let context_id = message.context_id.clone().unwrap_or_else(view::new_id);
        let title: String = {
            let text = message.text();
            let line = text.lines().next().unwrap_or("").trim();
            if line.is_empty() {
                "New chat".to_owned()
            } else {
                line.chars().take(80).collect()
            }
        };
        match self.store.session(&context_id).await? {
            Some(session) if session.user_id != user => {
                // Someone else's session id: as if it did not exist, and not reusable.
                return Err(AgentError::InvalidParams(format!(
                    "params.message.contextId: {context_id} belongs to another session; omit it to start a new one"
                )));
            }
            Some(session) if session.agent != agent.key() => {
                return Err(AgentError::InvalidParams(format!(
                    "params.message.contextId: session {context_id} talks to {}, not {}",
                    session.agent,
                    agent.key()
                )));
            }
            Some(_) => {}
            None => {
                self.store
                    .ensure_session(&context_id, user, &agent.key(), &title)
                    .await?;
            }
        }
        let task_id = view::new_id();
        let mut message = message;
        message.task_id = Some(task_id.clone());
        message.context_id = Some(context_id.clone());
        let transcript = vec![ChatMessage::User {
            text: message.text(),
        }];
        let submitted = view::status_event(
            &task_id,
            &context_id,
            TaskState::Submitted,
            Some(message),
            None,
        );
        let now = crate::store::now();
        let row = TaskRow {
            id: task_id.clone(),
            context_id,
            user_id: user.to_owned(),
            agent: agent.key(),
            state: state_name(TaskState::Submitted).to_owned(),
            transcript: transcript_value(&transcript)?,
            last_seq: 0,
            created_at: now.clone(),
            updated_at: now,
        };
        self.store
            .create_task(&row, vec![Self::encode(&submitted)])
            .await?;
        self.spawn_runner(&task_id);
        Ok(Accepted {
            task_id,
            after_seq: 0,
        })
    }

    async fn continue_task(
        self: &Arc<Self>,
        user: &str,
        agent: &Arc<Agent>,
        task_id: &str,
        message: Message,
    ) -> Result<Accepted> {
        let row = match self.owned_task(user, task_id).await {
            Ok(row) => row,
            // Over A2A, another user's task does not exist.
            Err(AgentError::Forbidden(id)) => return Err(AgentError::TaskNotFound(id)),
            Err(err) => return Err(err),
        };
        if row.agent != agent.key() {
            return Err(AgentError::TaskNotFound(task_id.to_owned()));
        }
        if let Some(context_id) = &message.context_id {
            if *context_id != row.context_id {
                return Err(AgentError::InvalidParams(format!(
                    "params.message.contextId: task {task_id} belongs to context {}, not {context_id}",
                    row.context_id
                )));
            }
        }
        let state = parse_state(&row.state).unwrap_or(TaskState::Failed);
        if state != TaskState::InputRequired {
            return Err(AgentError::InvalidParams(if state.is_terminal() {
                format!(
                    "task {task_id} is {} and takes no more messages; send a message without taskId to start a new task",
                    row.state
                )
            } else {
                format!(
                    "task {task_id} is {} and is not waiting for input",
                    row.state
                )
            }));
        }
        let (decision, channel) =
            match Decision::from_message(&message)? {
                Some(decision) => (decision, Channel::A2a),
                None => match Decision::from_text(&message.text()) {
                    Some(decision) => (decision, Channel::Text),
                    None => return Err(AgentError::InvalidParams(
                        "the task waits for a decision on its tool calls: say approve or reject \
                         (or send a decision DataPart)"
                            .into(),
                    )),
                },
            };
        let mut message = message;
        message.context_id = Some(row.context_id.clone());
        self.apply_decision(user, &row, &decision, channel, Some(message))
            .await
    }

    /// Decides a paused task's batch through the REST API (`POST /api/approvals/{task}`).
    pub async fn decide_rest(
        self: &Arc<Self>,
        user: &str,
        task_id: &str,
        data: &Value,
    ) -> Result<(Accepted, i64)> {
        let row = self.owned_task(user, task_id).await?;
        let decision = Decision::from_data(data)?;
        let parts = decision.to_parts(Dialect::Native);
        let mut message = Message::new(view::new_id(), Role::User, parts);
        message.task_id = Some(row.id.clone());
        message.context_id = Some(row.context_id.clone());
        let batch = self.store.pending_batch(task_id).await?.ok_or_else(|| {
            AgentError::NotPaused(format!(
                "task {task_id} is {} and waits for no decision",
                row.state
            ))
        })?;
        let accepted = self
            .apply_decision(user, &row, &decision, Channel::Rest, Some(message))
            .await?;
        Ok((accepted, batch.id))
    }

    /// The decision rules (docs/wire.md, Decision rules), then ONE compare-and-set transaction;
    /// only the winner runs the calls.
    async fn apply_decision(
        self: &Arc<Self>,
        user: &str,
        row: &TaskRow,
        decision: &Decision,
        channel: Channel,
        echo: Option<Message>,
    ) -> Result<Accepted> {
        let batch = self.store.pending_batch(&row.id).await?.ok_or_else(|| {
            AgentError::NotPaused(format!(
                "task {} has no pending batch: it was already decided",
                row.id
            ))
        })?;
        let requests: Vec<ActionRequest> = batch
            .requests
            .as_array()
            .map(|items| items.iter().filter_map(ActionRequest::from_value).collect())
            .unwrap_or_default();
        let resolved = hitl::resolve(&requests, decision)?;
        self.check_decided_calls(row, &resolved)?;
        let verdicts = resolved
            .iter()
            .map(|call| match call.verdict {
                Verdict::Approve => {
                    let run_args = call
                        .modified_args
                        .clone()
                        .unwrap_or_else(|| call.request.args.clone());
                    CallVerdict {
                        call_id: call.request.id.clone(),
                        status: CallStatus::Approved,
                        verdict: "approve".into(),
                        reason: None,
                        run_args_sha256: Some(args_sha256(&run_args)),
                        run_args: Some(run_args),
                    }
                }
                Verdict::Deny => CallVerdict {
                    call_id: call.request.id.clone(),
                    status: CallStatus::Rejected,
                    verdict: "deny".into(),
                    reason: call.reason.clone(),
                    run_args: None,
                    run_args_sha256: None,
                },
            })
            .collect();
        let working = view::status_event(&row.id, &row.context_id, TaskState::Working, echo, None);
        let write = DecisionWrite {
            batch_id: batch.id,
            user_id: user.to_owned(),
            channel: channel.as_str().to_owned(),
            decision: decision.to_data(Dialect::Native),
            summary: decision.summary(),
            verdicts,
            batch_state: "decided".into(),
            task_state: state_name(TaskState::Working).into(),
            events: vec![Self::encode(&working)],
        };
        let after_seq = row.last_seq;
        let seq = match self.store.decide(&row.id, write).await {
            Ok(seq) => seq,
            Err(StoreError::Conflict(_)) => {
                return Err(AgentError::NotPaused(format!(
                    "the pending batch of task {} was already decided",
                    row.id
                )))
            }
            Err(err) => return Err(err.into()),
        };
        self.notify(&row.id, seq);
        tracing::info!(task = %row.id, user, channel = channel.as_str(), decision = %decision.summary(), "batch decided");
        self.spawn_runner(&row.id);
        Ok(Accepted {
            task_id: row.id.clone(),
            after_seq,
        })
    }

    /// What `resolve` cannot know: reasons within the size limit, and edited arguments that fit
    /// the tool's input schema (an unknown key, a wrong type). Refused before anything is stored.
    fn check_decided_calls(&self, row: &TaskRow, resolved: &[hitl::ResolvedCall]) -> Result<()> {
        let agent = self.agent_by_key(&row.agent);
        for call in resolved {
            let id = &call.request.id;
            if let Some(reason) = &call.reason {
                if reason.len() > self.limits.max_reason_bytes {
                    return Err(AgentError::InvalidParams(format!(
                        "the rejection reason for {id} is {} bytes; the limit is {} bytes",
                        reason.len(),
                        self.limits.max_reason_bytes
                    )));
                }
            }
            let (Some(args), Some(agent)) = (&call.modified_args, &agent) else {
                continue;
            };
            if let Some(tool) = agent.tools.get(&call.request.name) {
                super::schema::check(&tool.spec.input_schema, args).map_err(|error| {
                    AgentError::InvalidParams(format!(
                        "modified_args for {id} ({}) do not fit the tool's input schema: {}",
                        call.request.name,
                        error
                            .strip_prefix("arguments: ")
                            .map(str::to_owned)
                            .unwrap_or_else(|| error.replacen("arguments", "modified_args", 1))
                    ))
                })?;
            }
        }
        Ok(())
    }

    /// Cancels a task in any non-terminal state; a paused one's calls are dropped unrun and the
    /// cancellation is audited.
    pub async fn cancel(self: &Arc<Self>, user: &str, task_id: &str) -> Result<Task> {
        let row = match self.owned_task(user, task_id).await {
            Ok(row) => row,
            Err(AgentError::Forbidden(id)) => return Err(AgentError::TaskNotFound(id)),
            Err(err) => return Err(err),
        };
        let state = parse_state(&row.state).unwrap_or(TaskState::Failed);
        if state.is_terminal() {
            return Err(AgentError::NotCancelable {
                id: task_id.to_owned(),
                state: row.state,
            });
        }
        let message = view::agent_message(
            &row.id,
            &row.context_id,
            vec![Part::text("Canceled by the user.")],
        );
        let canceled = view::status_event(
            &row.id,
            &row.context_id,
            TaskState::Canceled,
            Some(message),
            None,
        );
        let mut done = false;
        if let Some(batch) = self.store.pending_batch(task_id).await? {
            let verdicts = self
                .store
                .calls(task_id)
                .await?
                .into_iter()
                .filter(|call| call.batch_id == Some(batch.id) && call.status == CallStatus::Held)
                .map(|call| CallVerdict {
                    call_id: call.call_id,
                    status: CallStatus::Canceled,
                    verdict: "cancel".into(),
                    reason: Some("the task was canceled".into()),
                    run_args: None,
                    run_args_sha256: None,
                })
                .collect();
            let write = DecisionWrite {
                batch_id: batch.id,
                user_id: user.to_owned(),
                channel: "cancel".into(),
                decision: json!({"decision_type": "cancel"}),
                summary: "Canceled".into(),
                verdicts,
                batch_state: "canceled".into(),
                task_state: state_name(TaskState::Canceled).into(),
                events: vec![Self::encode(&canceled)],
            };
            match self.store.decide(task_id, write).await {
                Ok(seq) => {
                    self.notify(task_id, seq);
                    done = true;
                }
                // Decided a moment ago: the task is running now; cancel it as such.
                Err(StoreError::Conflict(_)) => {}
                Err(err) => return Err(err.into()),
            }
        }
        if !done {
            let commit = Commit {
                state: Some(state_name(TaskState::Canceled).into()),
                guard: Some(Guard::NotTerminal),
                ..Commit::default()
            };
            match self.commit(task_id, &[canceled], commit).await {
                Ok(_) => {}
                Err(AgentError::TaskEnded) => {
                    let current = self
                        .store
                        .task(task_id)
                        .await?
                        .map(|row| row.state)
                        .unwrap_or_default();
                    return Err(AgentError::NotCancelable {
                        id: task_id.to_owned(),
                        state: current,
                    });
                }
                Err(err) => return Err(err),
            }
        }
        self.stop_runner(task_id);
        tracing::info!(task = %task_id, user, "task canceled");
        Ok(self.snapshot(task_id, None).await?.0)
    }

    fn stop_runner(&self, task_id: &str) {
        if let Ok(running) = self.running.lock() {
            if let Some(token) = running.get(task_id) {
                token.cancel();
            }
        }
    }

    // ---- approvals -------------------------------------------------------------------------

    pub async fn pending_approvals(&self, user: &str) -> Result<Vec<PendingApproval>> {
        Ok(self
            .store
            .pending_batches(user)
            .await?
            .into_iter()
            .map(|row| PendingApproval {
                task_id: row.batch.task_id,
                context_id: row.context_id,
                agent: row.agent,
                since: row.batch.created_at,
                calls: row.batch.requests.as_array().cloned().unwrap_or_default(),
            })
            .collect())
    }

    pub async fn recent_decisions(&self, user: &str, limit: i64) -> Result<Vec<AuditEntry>> {
        let mut out = Vec::new();
        for decision in self.store.recent_decisions(user, limit).await? {
            let Some(task) = self.store.task(&decision.task_id).await? else {
                continue;
            };
            let calls = self.store.calls(&task.id).await?;
            out.push(Self::audit_entry(&task, decision, &calls));
        }
        Ok(out)
    }

    async fn audit(&self, row: &TaskRow) -> Result<Vec<AuditEntry>> {
        let decisions = self.store.task_decisions(&row.id).await?;
        if decisions.is_empty() {
            return Ok(Vec::new());
        }
        let calls = self.store.calls(&row.id).await?;
        Ok(decisions
            .into_iter()
            .map(|decision| Self::audit_entry(row, decision, &calls))
            .collect())
    }

    fn audit_entry(
        task: &TaskRow,
        decision: crate::store::DecisionRow,
        calls: &[crate::store::CallRow],
    ) -> AuditEntry {
        AuditEntry {
            task_id: task.id.clone(),
            context_id: task.context_id.clone(),
            agent: task.agent.clone(),
            decided_by: decision.user_id,
            decided_at: decision.decided_at,
            channel: decision.channel,
            summary: decision.summary,
            decision: decision.decision,
            calls: calls
                .iter()
                .filter(|call| call.batch_id == Some(decision.batch_id))
                .map(|call| AuditCall {
                    id: call.call_id.clone(),
                    name: call.name.clone(),
                    verdict: call.verdict.clone().unwrap_or_default(),
                    reason: call.reason.clone(),
                    args_sha256: call.args_sha256.clone(),
                    run_args_sha256: call.run_args_sha256.clone(),
                    edited: call
                        .run_args_sha256
                        .as_ref()
                        .is_some_and(|hash| *hash != call.args_sha256),
                    result: call.result.clone(),
                })
                .collect(),
        }
    }

    /// The audit entry of one batch, with results of the calls that have finished.
    pub async fn batch_outcome(&self, task_id: &str, batch_id: i64) -> Result<Option<AuditEntry>> {
        let Some(row) = self.store.task(task_id).await? else {
            return Ok(None);
        };
        Ok(self
            .audit(&row)
            .await?
            .into_iter()
            .zip(self.store.task_decisions(task_id).await?)
            .find(|(_, decision)| decision.batch_id == batch_id)
            .map(|(entry, _)| entry))
    }

    /// Waits (bounded) until every call of `batch_id` has a result or the task stops running,
    /// then briefly for the turn to end, so a quick answer reports the task's final state.
    pub async fn wait_batch(
        self: &Arc<Self>,
        task_id: &str,
        batch_id: i64,
        after: i64,
    ) -> Result<()> {
        let runtime = self.clone();
        let task = task_id.to_owned();
        let wait = async move {
            let mut events = runtime.follow(&task, after);
            loop {
                let calls = runtime.store.calls(&task).await?;
                let done = calls
                    .iter()
                    .filter(|call| call.batch_id == Some(batch_id))
                    .all(|call| call.result.is_some() || call.status == CallStatus::Canceled);
                if done {
                    return Ok::<(), AgentError>(());
                }
                match events.next().await {
                    Some(event) => {
                        event?;
                    }
                    None => return Ok(()),
                }
            }
        };
        match tokio::time::timeout(self.limits.decision_wait, wait).await {
            Ok(result) => result?,
            Err(_elapsed) => return Ok(()),
        }
        let turn_end = self.wait_final(task_id, after);
        match tokio::time::timeout(Duration::from_secs(2), turn_end).await {
            Ok(result) => result,
            Err(_elapsed) => Ok(()),
        }
    }

    // ---- runners ---------------------------------------------------------------------------

    /// Resumes tasks a previous process left running (see `drive` for how their calls are
    /// settled).
    pub async fn resume_unfinished(self: &Arc<Self>) -> Result<usize> {
        let tasks = self.store.unfinished_tasks().await?;
        for task in &tasks {
            tracing::info!(task = %task.id, "resuming a task left running by the previous process");
            self.spawn_runner(&task.id);
        }
        Ok(tasks.len())
    }

    fn spawn_runner(self: &Arc<Self>, task_id: &str) {
        let runtime = self.clone();
        let task_id = task_id.to_owned();
        let lock = match self.locks.lock() {
            Ok(mut locks) => locks.entry(task_id.clone()).or_default().clone(),
            Err(_) => Arc::new(tokio::sync::Mutex::new(())),
        };
        self.tracker.spawn(async move {
            let _turn = lock.lock().await;
            let cancel = CancellationToken::new();
            if let Ok(mut running) = runtime.running.lock() {
                running.insert(task_id.clone(), cancel.clone());
            }
            let inner = runtime.clone();
            let id = task_id.clone();
            let token = cancel.clone();
            // A panic inside the runner ends the task `failed`, never the process.
            let outcome = tokio::spawn(async move { inner.drive(&id, &token).await }).await;
            if let Ok(mut running) = runtime.running.lock() {
                running.remove(&task_id);
            }
            let failure = match outcome {
                Ok(Ok(())) | Ok(Err(AgentError::TaskEnded)) => None,
                Ok(Err(err)) => Some(err.to_string()),
                Err(join) => Some(format!("runner panicked: {join}")),
            };
            if let Some(detail) = failure {
                tracing::error!(task = %task_id, error = %detail, "task runner failed");
                runtime
                    .fail(&task_id, "The agent hit an internal error and stopped.")
                    .await;
            }
            drop(_turn);
            drop(lock);
            // Forget the task's lock once no runner holds or waits for it (spawn_runner clones
            // it under the same std mutex, so this check cannot race a new runner).
            if let Ok(mut locks) = runtime.locks.lock() {
                if locks
                    .get(&task_id)
                    .is_some_and(|lock| Arc::strong_count(lock) == 1)
                {
                    locks.remove(&task_id);
                }
            }
        });
    }

    /// Ends a task `failed` with a message a person understands.
    async fn fail(&self, task_id: &str, text: &str) {
        let Ok(Some(row)) = self.store.task(task_id).await else {
            return;
        };
        let message = view::agent_message(&row.id, &row.context_id, vec![Part::text(text)]);
        let event = view::status_event(
            &row.id,
            &row.context_id,
            TaskState::Failed,
            Some(message),
            None,
        );
        let commit = Commit {
            state: Some(state_name(TaskState::Failed).into()),
            guard: Some(Guard::NotTerminal),
            ..Commit::default()
        };
        if let Err(err) = self.commit(task_id, &[event], commit).await {
            tracing::warn!(task = %task_id, error = %err, "could not mark the task failed");
        }
    }

    /// Takes the task's next steps until it completes, fails, pauses or is canceled.
    async fn drive(self: Arc<Self>, task_id: &str, cancel: &CancellationToken) -> Result<()> {
        let row = self
            .store
            .task(task_id)
            .await?
            .ok_or_else(|| AgentError::TaskNotFound(task_id.to_owned()))?;
        let state = parse_state(&row.state).unwrap_or(TaskState::Failed);
        if !matches!(state, TaskState::Submitted | TaskState::Working) {
            return Ok(());
        }
        let Some(agent) = self.agent_by_key(&row.agent) else {
            self.fail(
                task_id,
                &format!(
                    "The agent {} is no longer configured on this server.",
                    row.agent
                ),
            )
            .await;
            return Ok(());
        };
        let (task_id, context_id) = (row.id.clone(), row.context_id.clone());
        if state == TaskState::Submitted {
            let working = view::status_event(&task_id, &context_id, TaskState::Working, None, None);
            let commit = Commit {
                state: Some(state_name(TaskState::Working).into()),
                guard: Some(Guard::NotTerminal),
                ..Commit::default()
            };
            self.commit(&task_id, &[working], commit).await?;
        }
        let mut transcript = transcript_of(&row)?;
        // The conversation before this task, in the same session.
        let mut earlier = Vec::new();
        for other in self.store.session_tasks(&context_id).await? {
            if other.id == task_id {
                break;
            }
            earlier.extend(closed(transcript_of(&other)?));
        }
        let mut usage = (0u64, 0u64);
        loop {
            if cancel.is_cancelled() || self.shutdown.is_cancelled() {
                return Ok(());
            }
            let open = open_calls(&transcript);
            if !open.is_empty() {
                let paused = self
                    .settle_calls(
                        &agent,
                        &task_id,
                        &context_id,
                        &open,
                        &mut transcript,
                        cancel,
                        usage,
                    )
                    .await?;
                if paused {
                    return Ok(());
                }
                continue;
            }
            let request = ModelRequest {
                instruction: agent.instruction.clone(),
                messages: earlier.iter().chain(transcript.iter()).cloned().collect(),
                tools: agent.tools.specs(),
            };
            let Some(turn) = self
                .model_turn(&agent, &task_id, &context_id, request, cancel, &mut usage)
                .await?
            else {
                return Ok(());
            };
            let (text, calls) = turn;
            if calls.is_empty() {
                transcript.push(ChatMessage::Assistant {
                    text,
                    tool_calls: Vec::new(),
                });
                let metadata = view::usage_metadata(usage.0, usage.1);
                let done = view::status_event(
                    &task_id,
                    &context_id,
                    TaskState::Completed,
                    None,
                    Some(metadata),
                );
                let commit = Commit {
                    state: Some(state_name(TaskState::Completed).into()),
                    transcript: Some(transcript_value(&transcript)?),
                    guard: Some(Guard::NotTerminal),
                    ..Commit::default()
                };
                self.commit(&task_id, &[done], commit).await?;
                return Ok(());
            }
            // Every call of the turn is announced and recorded before any of them runs.
            let mut used: HashSet<String> = self
                .store
                .calls(&task_id)
                .await?
                .into_iter()
                .map(|call| call.call_id)
                .collect();
            let mut tool_calls = Vec::new();
            for mut call in calls {
                let base = call.id.clone();
                let mut n = 1;
                while used.contains(&call.id) || call.id.is_empty() {
                    n += 1;
                    call.id = format!("{base}_{n}");
                }
                used.insert(call.id.clone());
                tool_calls.push(call);
            }
            let events: Vec<StreamEvent> = tool_calls
                .iter()
                .map(|call| {
                    let part = ToolCall {
                        id: call.id.clone(),
                        name: call.name.clone(),
                        args: call.args.clone(),
                    }
                    .to_part();
                    let message = view::agent_message(&task_id, &context_id, vec![part]);
                    view::status_event(
                        &task_id,
                        &context_id,
                        TaskState::Working,
                        Some(message),
                        None,
                    )
                })
                .collect();
            let new_calls = tool_calls
                .iter()
                .map(|call| NewCall {
                    call_id: call.id.clone(),
                    name: call.name.clone(),
                    source: agent
                        .tools
                        .get(&call.name)
                        .map(|tool| tool.spec.source.clone())
                        .unwrap_or_default(),
                    args: call.args.clone(),
                    args_sha256: args_sha256(&call.args),
                    held: agent.tools.requires_approval(&call.name),
                })
                .collect();
            transcript.push(ChatMessage::Assistant { text, tool_calls });
            let commit = Commit {
                transcript: Some(transcript_value(&transcript)?),
                new_calls,
                guard: Some(Guard::NotTerminal),
                ..Commit::default()
            };
            self.commit(&task_id, &events, commit).await?;
        }
    }

    /// One streamed model turn: text chunks become artifact updates as they arrive (one held
    /// back, so the last can say `lastChunk`); returns the text and tool calls, or `None` when
    /// the task was canceled or failed.
    async fn model_turn(
        &self,
        agent: &Agent,
        task_id: &str,
        context_id: &str,
        request: ModelRequest,
        cancel: &CancellationToken,
        usage: &mut (u64, u64),
    ) -> Result<Option<(String, Vec<ModelToolCall>)>> {
        let mut stream = agent.model.turn(request);
        let artifact_id = view::new_id();
        let mut text = String::new();
        let mut calls = Vec::new();
        let mut held: Option<String> = None;
        let mut sent_any = false;
        loop {
            let next = tokio::select! {
                _ = cancel.cancelled() => return Ok(None),
                _ = self.shutdown.cancelled() => return Ok(None),
                next = tokio::time::timeout(self.limits.model_timeout, stream.next()) => next,
            };
            let event = match next {
                Err(_elapsed) => {
                    let secs = self.limits.model_timeout.as_secs();
                    self.fail(
                        task_id,
                        &format!(
                            "The model did not answer within {secs} seconds, so the task stopped."
                        ),
                    )
                    .await;
                    return Ok(None);
                }
                Ok(None) => break,
                Ok(Some(Err(err))) => {
                    tracing::warn!(task = %task_id, error = %err, "model turn failed");
                    self.fail(task_id, &model_failure(&err)).await;
                    return Ok(None);
                }
                Ok(Some(Ok(event))) => event,
            };
            match event {
                ModelEvent::Text(chunk) => {
                    if chunk.is_empty() {
                        continue;
                    }
                    text.push_str(&chunk);
                    if let Some(previous) = held.replace(chunk) {
                        let event = view::text_chunk(
                            task_id,
                            context_id,
                            &artifact_id,
                            previous,
                            sent_any,
                            false,
                        );
                        sent_any = true;
                        let commit = Commit {
                            guard: Some(Guard::NotTerminal),
                            ..Commit::default()
                        };
                        self.commit(task_id, &[event], commit).await?;
                    }
                }
                ModelEvent::ToolCall(call) => {
                    calls.push(call);
                    if calls.len() > self.limits.max_tool_calls_per_turn {
                        let limit = self.limits.max_tool_calls_per_turn;
                        tracing::warn!(task = %task_id, limit, "model asked for too many tool calls");
                        self.fail(
                            task_id,
                            &format!(
                                "The model asked for more than {limit} tool calls in one turn, \
                                 so the task stopped. Ask for fewer steps at a time."
                            ),
                        )
                        .await;
                        return Ok(None);
                    }
                }
                ModelEvent::Usage(turn) => {
                    usage.0 += turn.prompt_tokens;
                    usage.1 += turn.completion_tokens;
                }
            }
        }
        if let Some(last) = held {
            let event = view::text_chunk(task_id, context_id, &artifact_id, last, sent_any, true);
            let commit = Commit {
                guard: Some(Guard::NotTerminal),
                ..Commit::default()
            };
            self.commit(task_id, &[event], commit).await?;
        }
        Ok(Some((text, calls)))
    }

    /// Settles the open calls of the last turn in order: runs auto and approved ones, answers
    /// rejected ones, reports calls interrupted by a crash, and pauses the task with ONE batch
    /// for those still held. Returns whether the task paused (or ended).
    #[allow(clippy::too_many_arguments)] // the task's identity, state and cancel, all needed
    async fn settle_calls(
        &self,
        agent: &Agent,
        task_id: &str,
        context_id: &str,
        open: &[ModelToolCall],
        transcript: &mut Vec<ChatMessage>,
        cancel: &CancellationToken,
        usage: (u64, u64),
    ) -> Result<bool> {
        let records: HashMap<String, crate::store::CallRow> = self
            .store
            .calls(task_id)
            .await?
            .into_iter()
            .map(|call| (call.call_id.clone(), call))
            .collect();
        let mut held = Vec::new();
        for call in open {
            if cancel.is_cancelled() {
                return Ok(true);
            }
            let Some(record) = records.get(&call.id) else {
                return Err(AgentError::Internal(format!(
                    "call {} has no record",
                    call.id
                )));
            };
            let (response, edited_from, started) = match record.status {
                CallStatus::Held => {
                    held.push(record.clone());
                    continue;
                }
                CallStatus::Canceled => return Ok(true),
                CallStatus::Finished => {
                    // Finished but missing from the transcript cannot happen (one transaction
                    // writes both); take the recorded result if it ever does.
                    (record.result.clone().unwrap_or(Value::Null), None, None)
                }
                CallStatus::Started => (
                    error_result(
                        "interrupted by a restart: this call may or may not have run, and it \
                         was not run again",
                    ),
                    None,
                    None,
                ),
                CallStatus::Rejected => {
                    let rejected =
                        ToolResult::rejected(&call.id, &call.name, record.reason.as_deref());
                    (rejected.response, None, None)
                }
                CallStatus::Auto | CallStatus::Approved => {
                    let run_args = record
                        .run_args
                        .clone()
                        .unwrap_or_else(|| record.args.clone());
                    let edited = (run_args != record.args).then(|| record.args.clone());
                    let started = CallUpdate::Started {
                        call_id: call.id.clone(),
                        run_args_sha256: args_sha256(&run_args),
                        run_args: run_args.clone(),
                    };
                    let commit = Commit {
                        call_updates: vec![started],
                        guard: Some(Guard::NotTerminal),
                        ..Commit::default()
                    };
                    self.commit(task_id, &[], commit).await?;
                    // A tool call is not abandoned at shutdown (it would be reported as
                    // interrupted); only the user's cancel stops waiting for it.
                    let response = tokio::select! {
                        _ = cancel.cancelled() => return Ok(true),
                        response = agent.tools.call(&call.name, run_args.clone(), self.limits.tool_timeout) => response,
                    };
                    (response, edited, Some(run_args))
                }
            };
            if let Some(run_args) = &started {
                if edited_from.is_some() {
                    set_call_args(transcript, &call.id, run_args);
                }
            }
            transcript.push(ChatMessage::Tool {
                call_id: call.id.clone(),
                name: call.name.clone(),
                response: response.clone(),
                edited_from,
            });
            let part = ToolResult {
                id: call.id.clone(),
                name: call.name.clone(),
                response: response.clone(),
            }
            .to_part();
            let message = view::agent_message(task_id, context_id, vec![part]);
            let event =
                view::status_event(task_id, context_id, TaskState::Working, Some(message), None);
            let commit = Commit {
                transcript: Some(transcript_value(transcript)?),
                call_updates: vec![CallUpdate::Finished {
                    call_id: call.id.clone(),
                    result: response,
                }],
                guard: Some(Guard::NotTerminal),
                ..Commit::default()
            };
            self.commit(task_id, &[event], commit).await?;
        }
        if held.is_empty() {
            return Ok(false);
        }
        if self.store.pending_batch(task_id).await?.is_some() {
            return Ok(true);
        }
        let requests: Vec<ActionRequest> = held
            .iter()
            .map(|record| {
                let tool = agent.tools.get(&record.name);
                ActionRequest {
                    id: record.call_id.clone(),
                    name: record.name.clone(),
                    args: record.args.clone(),
                    description: tool.as_ref().map(|tool| tool.spec.description.clone()),
                    server: tool.as_ref().map(|tool| tool.spec.source.clone()),
                }
            })
            .collect();
        let interrupt = ApprovalInterrupt::new(requests.clone());
        let message = view::agent_message(task_id, context_id, interrupt.to_parts());
        // The pause ends the turn's stream: it carries the usage like any final event.
        let mut metadata = hitl::interrupt_event_metadata();
        metadata.extend(view::usage_metadata(usage.0, usage.1));
        let event = view::status_event(
            task_id,
            context_id,
            TaskState::InputRequired,
            Some(message),
            Some(metadata),
        );
        let commit = Commit {
            state: Some(state_name(TaskState::InputRequired).into()),
            new_batch: Some(Value::Array(
                requests.iter().map(ActionRequest::to_value).collect(),
            )),
            guard: Some(Guard::NotTerminal),
            ..Commit::default()
        };
        self.commit(task_id, &[event], commit).await?;
        tracing::info!(task = %task_id, calls = requests.len(), "paused for approval");
        Ok(true)
    }
}

/// The failure text a person reads when the model fails.
fn model_failure(err: &ModelError) -> String {
    format!("The model failed: {err}. Try again, or check the model's configuration.")
}
