//! Chats relayed to remote A2A agents, recorded as they pass (crates/server/README.md, Relayed
//! chats). The relay hands over each event it decoded from the remote's answer; it is stored in
//! the event log's version like our own events, so reload, the sessions list, the approvals list
//! and the audit read relayed chats as they read ours. A pause opens a pending batch with one
//! held call record per request; the person's decision (in the chat, or forwarded from
//! `POST /api/approvals`) closes it with its audit row. No runner of ours ever drives these
//! tasks: they are stored marked remote.

use serde_json::Value;
use signoff_protocol::hitl::{keys, ApprovalInterrupt, RecordedDecision, ToolResult};
use signoff_protocol::{
    Message, Role, StreamEvent, Task, TaskState, TaskStatus, TaskStatusUpdateEvent,
};

use crate::agent::view;
use crate::store::{
    BatchState, CallStatus, CallUpdate, CallVerdict, Channel, Commit, NewCall, TaskRow,
    Verdict as StoredVerdict,
};

use super::{AgentError, Decider, Result, Runtime};
use crate::agent::approvals::args_sha256;
use crate::agent::approvals::Actor;
use crate::agent::approvals::PlannedDecision;

/// The `source` of a relayed call's record: the calls run at the remote agent.
const REMOTE_SOURCE: &str = "remote";

/// One relayed request and its answer, as recorded: who asked which agent, and the message
/// sent (recorded with the first event of the answer, unless the remote echoes it).
#[derive(Debug, Clone)]
pub struct RelayedExchange {
    /// The person who asked, as they signed in: a decision in the message is theirs.
    who: Decider,
    /// `namespace/name` of the remote agent.
    agent: String,
    /// The message of a `message/send` or `message/stream`, until it is recorded.
    request: Option<Message>,
    /// Through which surface a decision in the message came.
    channel: Channel,
}

impl RelayedExchange {
    /// An exchange of `who` with the remote agent `agent` (`namespace/name`); `request` is the
    /// message sent, if the call sent one.
    pub fn new(who: &Decider, agent: &str, request: Option<Message>) -> RelayedExchange {
        RelayedExchange {
            who: who.clone(),
            agent: agent.to_owned(),
            request,
            channel: Channel::A2a,
        }
    }

    /// The same exchange for a decision made through `POST /api/approvals`.
    pub fn through_rest(mut self) -> RelayedExchange {
        self.channel = Channel::Rest;
        self
    }
}

/// The task and session an event belongs to; `None` for a message outside any task.
fn event_ids(event: &StreamEvent) -> Option<(&str, &str)> {
    match event {
        StreamEvent::Task(task) => Some((&task.id, &task.context_id)),
        StreamEvent::StatusUpdate(update) => Some((&update.task_id, &update.context_id)),
        StreamEvent::ArtifactUpdate(update) => Some((&update.task_id, &update.context_id)),
        StreamEvent::Message(message) => {
            Some((message.task_id.as_deref()?, message.context_id.as_deref()?))
        }
    }
}

/// The status an event moves its task to, if it does.
fn event_status(event: &StreamEvent) -> Option<&TaskStatus> {
    match event {
        StreamEvent::Task(task) => Some(&task.status),
        StreamEvent::StatusUpdate(update) => Some(&update.status),
        StreamEvent::Message(_) | StreamEvent::ArtifactUpdate(_) => None,
    }
}

/// Whether the remote's event already carries the message `id` (kagent echoes the first
/// message of a task in its `submitted` status).
fn echoes(event: &StreamEvent, id: &str) -> bool {
    let status_has = |status: &TaskStatus| {
        status
            .message
            .as_ref()
            .is_some_and(|message| message.message_id == id)
    };
    match event {
        StreamEvent::Task(task) => {
            status_has(&task.status) || task.history.iter().any(|message| message.message_id == id)
        }
        StreamEvent::StatusUpdate(update) => status_has(&update.status),
        StreamEvent::Message(message) => message.message_id == id,
        StreamEvent::ArtifactUpdate(_) => false,
    }
}

/// The results of calls an event reports, for their records' audit.
fn reported_results(event: &StreamEvent) -> Vec<ToolResult> {
    let messages: Vec<&Message> = match event {
        StreamEvent::StatusUpdate(update) => update.status.message.iter().collect(),
        StreamEvent::Message(message) => vec![message],
        StreamEvent::Task(_) | StreamEvent::ArtifactUpdate(_) => Vec::new(),
    };
    messages
        .iter()
        .flat_map(|message| message.parts.iter())
        .filter_map(ToolResult::from_part)
        .collect()
}

/// A relayed event as it is stored: with a turn's token counts, which kagent sends in the event's metadata, also on
/// the agent message it carries: folded into a task, an event's metadata is gone, and kagent's
/// own stored tasks keep each turn's counts on the turn's message, where the reducer reads them
/// after a reload.
pub fn as_recorded(mut event: StreamEvent) -> StreamEvent {
    if let StreamEvent::StatusUpdate(update) = &mut event {
        let usage = update
            .metadata
            .as_ref()
            .and_then(|metadata| metadata.get(keys::USAGE_METADATA))
            .cloned();
        if let (Some(usage), Some(message)) = (usage, update.status.message.as_mut()) {
            if message.role == Role::Agent {
                message
                    .metadata
                    .get_or_insert_with(Default::default)
                    .entry(keys::USAGE_METADATA.to_owned())
                    .or_insert(usage);
            }
        }
    }
    event
}

/// A chat's title: the first line of its first message, as for our own chats.
fn title_of(message: Option<&Message>) -> String {
    let text = message.map(Message::text).unwrap_or_default();
    let line = text.lines().next().unwrap_or("").trim();
    if line.is_empty() {
        "New chat".to_owned()
    } else {
        line.chars().take(80).collect()
    }
}

/// The relay's record of chats with remote agents that the UI reaches through this server:
/// their tasks, their pauses, and decisions on them; what [`Runtime::relay`] lends.
pub struct Relay<'a> {
    pub(super) runtime: &'a Runtime,
}

impl Runtime {
    /// The relayed chats.
    pub fn relay(&self) -> Relay<'_> {
        Relay { runtime: self }
    }
}

impl Relay<'_> {
    /// The relayed task `task_id` if `user` owns it; `None` for a task of ours or none at all.
    pub async fn task(&self, user: &str, task_id: &str) -> Result<Option<TaskRow>> {
        if !self.runtime.store.is_relayed(task_id).await? {
            return Ok(None);
        }
        Ok(Some(
            super::reads::owned_task(&self.runtime.store, user, task_id).await?,
        ))
    }

    /// The relayed tasks of a user's session that have not ended: those whose state the remote
    /// agent is asked for on reload.
    pub async fn tasks_to_refresh(&self, user: &str, context_id: &str) -> Result<Vec<TaskRow>> {
        let Some(session) = self.runtime.store.session(context_id).await? else {
            return Ok(Vec::new());
        };
        if session.user_id != user {
            return Ok(Vec::new());
        }
        let mut open = Vec::new();
        for task in self.runtime.store.session_tasks(context_id).await? {
            if !task.state.is_terminal() && self.runtime.store.is_relayed(&task.id).await? {
                open.push(task);
            }
        }
        Ok(open)
    }

    /// The id of a relayed task's pending batch, if it waits for a decision.
    pub async fn pending_batch(&self, task_id: &str) -> Result<Option<i64>> {
        Ok(self
            .runtime
            .store
            .pending_batch(task_id)
            .await?
            .map(|batch| batch.id))
    }

    /// A relayed task's pause: the interrupt its stored status holds, read in its dialect.
    pub async fn interrupt(&self, task_id: &str) -> Result<Option<ApprovalInterrupt>> {
        let (task, _) = self.runtime.snapshot(task_id, None).await?;
        Ok(ApprovalInterrupt::from_status(&task.status))
    }

    /// Records one event of a relayed answer (and, with the first, the message sent). An event
    /// for someone else's task, or another agent's, is not recorded.
    pub async fn record(&self, exchange: &mut RelayedExchange, event: &StreamEvent) -> Result<()> {
        let Some((task_id, context_id)) = event_ids(event) else {
            return Ok(());
        };
        let row = match self.runtime.store.task(task_id).await? {
            Some(row) => row,
            None => {
                let row = TaskRow::new(
                    task_id.to_owned(),
                    context_id.to_owned(),
                    exchange.who.subject.clone(),
                    exchange.agent.clone(),
                    TaskState::Submitted,
                    "[]".to_owned(),
                );
                let title = title_of(exchange.request.as_ref());
                self.runtime
                    .store
                    .create_relayed_task(&row, &title, Vec::new())
                    .await?;
                row
            }
        };
        // Someone the batch is routed to decides the owner's chat: its answer is recorded too.
        let reaches = row.user_id == exchange.who.subject
            || self
                .runtime
                .readable_task(&exchange.who, task_id)
                .await
                .is_ok();
        if !reaches
            || row.agent != exchange.agent
            || !self.runtime.store.is_relayed(task_id).await?
        {
            tracing::warn!(task = %task_id, agent = %exchange.agent, "a relayed event names a task that is not this chat's; not recorded");
            exchange.request = None;
            return Ok(());
        }
        let mut events = Vec::new();
        let mut event = as_recorded(event.clone());
        if let Some(mut request) = exchange.request.take() {
            // kagent echoes a task's first message, and Signoff every message; else the message
            // is recorded as our own runtime records one: in a `working` status, or in the
            // history of a task snapshot (which would replace what came before it).
            let echoed = echoes(&event, &request.message_id);
            request.task_id = Some(row.id.clone());
            request.context_id = Some(row.context_id.clone());
            let by = Actor::of(&exchange.who, exchange.channel);
            let decided = self.record_decision(by, &row, &request, !echoed).await?;
            if !decided && !echoed {
                match &mut event {
                    StreamEvent::Task(task) => task.history.insert(0, request),
                    StreamEvent::StatusUpdate(_)
                    | StreamEvent::ArtifactUpdate(_)
                    | StreamEvent::Message(_) => events.push(view::status_event(
                        &row.id,
                        &row.context_id,
                        TaskState::Working,
                        Some(request),
                        None,
                    )),
                }
            }
        }
        events.push(event);
        self.append(&row.id, events).await
    }

    /// The state the remote agent reports for a relayed task (`tasks/get`), recorded when it
    /// differs from ours: a stream that was cut, or a chat decided elsewhere.
    pub async fn refresh(&self, task: &Task) -> Result<()> {
        let Some(row) = self.runtime.store.task(&task.id).await? else {
            return Ok(());
        };
        if row.state == task.status.state || !self.runtime.store.is_relayed(&row.id).await? {
            return Ok(());
        }
        let event = StreamEvent::StatusUpdate(TaskStatusUpdateEvent {
            task_id: row.id.clone(),
            context_id: row.context_id.clone(),
            status: task.status.clone(),
            is_final: task.status.state.ends_stream(),
            metadata: None,
        });
        self.append(&row.id, vec![event]).await
    }

    /// A decision in a message to a paused relayed task, `by` the person who sent it: its
    /// batch closed with the audit row, and the message recorded with it (`with_message`; else
    /// the remote's echo records it). `false` when the message decides nothing here. The
    /// message is planned as the relay checked it before forwarding it (`plan_relayed`); its
    /// text is the remote agent's to read, not a decision here.
    async fn record_decision(
        &self,
        by: Actor,
        row: &TaskRow,
        request: &Message,
        with_message: bool,
    ) -> Result<bool> {
        let Some(batch) = self.runtime.store.pending_batch(&row.id).await? else {
            return Ok(false);
        };
        let Some(pause) = self.interrupt(&row.id).await? else {
            return Ok(false);
        };
        let requests = &pause.action_requests;
        let mut planned = match self.plan(by, row, &batch, requests, request) {
            Ok(Some(planned)) => planned,
            Ok(None) => return Ok(false),
            Err(err) => {
                tracing::warn!(task = %row.id, error = %err, "a relayed decision the relay let through was not recorded");
                return Ok(false);
            }
        };
        if !with_message {
            planned.events.clear();
        }
        let (applied, ()) = self
            .runtime
            .commit_decision(&row.id, planned.if_pending())
            .await?;
        Ok(applied.is_some())
    }

    /// Appends relayed events to a task's log with the state they move it to; a pause opens
    /// its batch with a held record per call, and a pause the remote left without a decision
    /// here is closed as canceled.
    async fn append(&self, task_id: &str, events: Vec<StreamEvent>) -> Result<()> {
        let state = events
            .iter()
            .rev()
            .find_map(event_status)
            .map(|status| status.state);
        let interrupt = events
            .iter()
            .rev()
            .find_map(event_status)
            .and_then(ApprovalInterrupt::from_status);
        let pending = self.runtime.store.pending_batch(task_id).await?;
        let mut commit = Commit {
            state,
            ..Commit::default()
        };
        let known = self.runtime.store.calls(task_id).await?;
        commit.call_updates = events
            .iter()
            .flat_map(reported_results)
            .filter(|result| known.iter().any(|call| call.call_id == result.id))
            .map(|result| CallUpdate::Finished {
                call_id: result.id,
                result: result.response,
            })
            .collect();
        match (&interrupt, &pending) {
            (Some(interrupt), None) => {
                let requests: Vec<Value> = interrupt
                    .action_requests
                    .iter()
                    .map(|request| request.to_value())
                    .collect();
                commit.new_calls = interrupt
                    .action_requests
                    .iter()
                    .filter(|request| !known.iter().any(|call| call.call_id == request.id))
                    .map(|request| NewCall {
                        call_id: request.id.clone(),
                        name: request.name.clone(),
                        source: REMOTE_SOURCE.to_owned(),
                        args_sha256: args_sha256(&request.args),
                        args: request.args.clone(),
                        held: true,
                        auto: None,
                        why: None,
                    })
                    .collect();
                commit.new_batch = Some(Value::Array(requests));
            }
            (None, Some(batch)) if state.is_some_and(|state| state != TaskState::InputRequired) => {
                // The remote went on (decided elsewhere, or canceled): the batch no longer waits.
                let held = known.iter().filter(|call| {
                    call.batch_id == Some(batch.id) && call.status == CallStatus::Held
                });
                let decider = self
                    .runtime
                    .store
                    .task(task_id)
                    .await?
                    .map(|row| row.user_id)
                    .unwrap_or_default();
                let planned = PlannedDecision {
                    by: Actor {
                        channel: Channel::Cancel,
                        decider: Decider::subject(decider),
                        auth: None,
                    },
                    batch_id: batch.id,
                    decision: RecordedDecision::Cancel,
                    summary: "The remote agent went on without a decision made here".to_owned(),
                    verdicts: held
                        .map(|call| CallVerdict {
                            call_id: call.call_id.clone(),
                            status: CallStatus::Canceled,
                            verdict: StoredVerdict::Cancel,
                            reason: None,
                            run_args: None,
                            run_args_sha256: None,
                        })
                        .collect(),
                    batch_state: BatchState::Canceled,
                    task_state: state.unwrap_or(TaskState::Working),
                    events,
                    paused_at: None,
                    votes: Vec::new(),
                    quorum: None,
                    uses_link: None,
                };
                let (applied, ()) = self
                    .runtime
                    .commit_decision(task_id, planned.if_pending())
                    .await?;
                if applied.is_none() {
                    return Err(AgentError::Conflict("the batch was already decided"));
                }
                return Ok(());
            }
            (Some(_), Some(_)) | (None, Some(_)) | (None, None) => {}
        }
        self.runtime.commit_any(task_id, events, commit).await?;
        Ok(())
    }
}
