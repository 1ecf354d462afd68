//! What comes in to the runtime: new messages (a message to an existing task goes to
//! `decide`), a person's cancel, and a REST decider's wait for the calls it decided. The checks
//! of a model's calls are `screening`'s.

use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use signoff_protocol::hitl::RecordedDecision;
use signoff_protocol::{Message, Part, ProtocolVersion, PushConfig, Role, Task, TaskState};

use crate::agent::asked::AskedCall;
use crate::agent::model::ChatMessage;
use crate::agent::tools::error_result;
use crate::agent::view::{self};
use crate::store::{
    task_state_text, BatchState, CallStatus, CallUpdate, CallVerdict, Channel, Commit, Guard,
    PushConfigRow, StoreError, TaskRow, Verdict as StoredVerdict,
};

use super::runner::RunnerStart;
use super::transcript::*;
use super::{Accepted, Agent, AgentError, Decider, LoggedEvent, Result, Runtime};
use crate::agent::approvals::Actor;
use crate::agent::approvals::PlannedDecision;

/// The longest id a client may choose for a message or a session (a UUID has 36 bytes).
const MAX_ID_BYTES: usize = 256;

impl Runtime {
    // ---- messages --------------------------------------------------------------------------

    /// Accepts a user message for `agent`: a new task, or a decision on a paused one. Its span
    /// is the parent of the runner's (and so of the model turns and tool calls) in a trace.
    pub async fn send(
        self: &Arc<Self>,
        who: &Decider,
        agent: &Arc<Agent>,
        message: Message,
    ) -> Result<Accepted> {
        let mut accepted = self.send_for_stream(who, agent, message, None).await?;
        accepted.start_runner();
        Ok(accepted)
    }

    /// [`Runtime::send`] for a stream (`streams`): a decision's runner comes back unstarted in
    /// the [`Accepted`], for the stream to start once its follower is spawned. With `push`, the
    /// push config the client gave with the message (see `push`).
    pub(super) async fn send_for_stream(
        self: &Arc<Self>,
        who: &Decider,
        agent: &Arc<Agent>,
        message: Message,
        push: Option<(ProtocolVersion, PushConfig)>,
    ) -> Result<Accepted> {
        match push {
            Some(push) => {
                self.send_with_push_for_stream(who, agent, message, push)
                    .await
            }
            None => {
                self.send_as(who, agent, message, view::new_id(), None)
                    .await
            }
        }
    }

    /// [`Runtime::send`], with the id a new task gets (a subagent's task is recorded with its
    /// parent's call before it is created) and the push config it is created with.
    #[tracing::instrument(name = "message", skip_all, fields(
        agent = %agent.key(),
        task.id = message.task_id.as_deref(),
        context.id = message.context_id.as_deref(),
    ))]
    pub(super) async fn send_as(
        self: &Arc<Self>,
        who: &Decider,
        agent: &Arc<Agent>,
        message: Message,
        task_id: String,
        push: Option<PushConfigRow>,
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
        // Ids go into URLs and every list: a long one made a chat no route could reach.
        let ids = [
            ("contextId", message.context_id.as_deref()),
            ("messageId", Some(message.message_id.as_str())),
        ];
        for (field, id) in ids {
            if let Some(id) = id.filter(|id| id.len() > MAX_ID_BYTES) {
                return Err(AgentError::InvalidParams(format!(
                    "params.message.{field}: {} bytes; an id may have at most {MAX_ID_BYTES}",
                    id.len()
                )));
            }
        }
        if let Some(task_id) = message.task_id.clone() {
            return self.continue_task(who, agent, &task_id, message).await;
        }
        self.open_task(who, agent, message, task_id, push, None)
            .await
    }

    /// Creates a new task (and, with a new `contextId`, its session) for `message`, and starts
    /// its runner; `asked` is the call it asks for when it came from outside.
    pub(super) async fn open_task(
        self: &Arc<Self>,
        who: &Decider,
        agent: &Arc<Agent>,
        message: Message,
        task_id: String,
        push: Option<PushConfigRow>,
        asked: Option<AskedCall>,
    ) -> Result<Accepted> {
        let user = who.subject.as_str();
        let context_id = message.context_id.clone().unwrap_or_else(view::new_id);
        let title = chat_title(&message.text());
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
            Some(_) | None => {}
        }
        let mut message = message;
        message.task_id = Some(task_id.clone());
        message.context_id = Some(context_id.clone());
        let transcript = vec![ChatMessage::User {
            text: message.text(),
            message_id: Some(message.message_id.clone()),
            asked,
        }];
        let submitted = view::status_event(
            &task_id,
            &context_id,
            TaskState::Submitted,
            Some(message),
            None,
        );
        // Written with the task, so the runner starts on a working task without a commit of
        // its own (one round trip less before the first answer).
        let working = view::status_event(&task_id, &context_id, TaskState::Working, None, None);
        let mut row = TaskRow::new(
            task_id.clone(),
            context_id,
            user.to_owned(),
            agent.key(),
            TaskState::Working,
            transcript_value(&transcript)?,
        );
        row.requester_groups = who.groups.clone();
        let events = vec![Self::encode(&submitted), Self::encode(&working)];
        let committed = vec![
            LoggedEvent::committed(1, submitted, &events[0]),
            LoggedEvent::committed(2, working, &events[1]),
        ];
        let new_session = match self.store.create_task(&row, &title, events, push).await {
            Ok(new_session) => new_session,
            // A first message of another user or agent took this new session id a moment ago.
            Err(StoreError::Conflict(why)) => {
                return Err(AgentError::InvalidParams(format!(
                    "params.message.contextId: {why}; omit it to start a new session"
                )))
            }
            Err(err) => return Err(err.into()),
        };
        let span = tracing::Span::current();
        span.record("task.id", task_id.as_str());
        span.record("context.id", row.context_id.as_str());
        self.metrics.task_entered(TaskState::Submitted);
        self.metrics.task_entered(TaskState::Working);
        let watch = Some(self.log.watch_early(&task_id));
        // A new task's runner starts at once: the turn it runs is what the stream waits for
        // (deferring it measurably delayed the time to pause).
        self.spawn_runner(&task_id, RunnerStart::New { row, new_session });
        Ok(Accepted {
            task_id,
            after_seq: 0,
            committed,
            watch,
            runner: None,
        })
    }

    /// Cancels a task in any non-terminal state; a paused one's calls are dropped unrun and the
    /// cancellation is audited as `who`'s. A subagent's task is canceled through its parent.
    pub(super) async fn cancel(self: &Arc<Self>, who: &Decider, task_id: &str) -> Result<Task> {
        self.owned_live_task(&who.subject, task_id).await?;
        if let Some(link) = super::subagent::driving_parent(&self.store, task_id).await? {
            return Err(AgentError::NotCancelable {
                id: task_id.to_owned(),
                state: format!("the subagent task of task {}", link.parent_task_id),
            });
        }
        self.cancel_task(who, task_id).await
    }

    /// The caller's task `task_id` (another user's does not exist for them), if it has not ended.
    async fn owned_live_task(&self, user: &str, task_id: &str) -> Result<TaskRow> {
        let row = match super::reads::owned_task(&self.store, user, task_id).await {
            Ok(row) => row,
            Err(AgentError::Forbidden(id)) => return Err(AgentError::TaskNotFound(id)),
            Err(err) => return Err(err),
        };
        if row.state.is_terminal() {
            return Err(AgentError::NotCancelable {
                id: task_id.to_owned(),
                state: task_state_text(row.state).to_owned(),
            });
        }
        Ok(row)
    }

    /// [`Runtime::cancel`] for a task the caller may cancel, a parent's subagent task included.
    pub(super) async fn cancel_task(
        self: &Arc<Self>,
        who: &Decider,
        task_id: &str,
    ) -> Result<Task> {
        let row = self.owned_live_task(&who.subject, task_id).await?;
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
            let verdicts: Vec<CallVerdict> = self
                .store
                .calls(task_id)
                .await?
                .into_iter()
                .filter(|call| call.batch_id == Some(batch.id) && call.status == CallStatus::Held)
                .map(|call| CallVerdict {
                    call_id: call.call_id,
                    status: CallStatus::Canceled,
                    verdict: StoredVerdict::Cancel,
                    reason: Some("the task was canceled".into()),
                    run_args: None,
                    run_args_sha256: None,
                })
                .collect();
            let planned = PlannedDecision {
                by: Actor {
                    channel: Channel::Cancel,
                    decider: who.clone(),
                    auth: who.auth,
                },
                batch_id: batch.id,
                decision: RecordedDecision::Cancel,
                summary: "Canceled".into(),
                verdicts,
                batch_state: BatchState::Canceled,
                task_state: TaskState::Canceled,
                events: vec![canceled.clone()],
                paused_at: None,
                votes: Vec::new(),
                quorum: None,
                uses_link: None,
            };
            match self.commit_decision(task_id, planned.if_pending()).await {
                Ok((applied, ())) => done = applied.is_some(),
                // Decided a moment ago: the task is running now; cancel it as such.
                Err(AgentError::Conflict(_)) => {}
                Err(err) => return Err(err),
            }
        }
        if !done {
            // Approved calls without a result (waiting to run, or running as the runner stops)
            // get one, so the audit never shows an approval without an outcome. A result the
            // runner writes first is kept: the store fills only an empty one.
            let unfinished = self
                .store
                .calls(task_id)
                .await?
                .into_iter()
                .filter(|call| {
                    matches!(call.status, CallStatus::Approved | CallStatus::Started)
                        && call.result.is_none()
                })
                .map(|call| CallUpdate::Finished {
                    call_id: call.call_id,
                    result: error_result(
                        "the task was canceled before this call finished: it may or may not \
                         have run",
                    ),
                })
                .collect();
            let commit = Commit {
                state: Some(TaskState::Canceled),
                guard: Some(Guard::NotTerminal),
                call_updates: unfinished,
                ..Commit::default()
            };
            // Not the runner's step: any replica may cancel.
            match self.commit_any(task_id, vec![canceled], commit).await {
                Ok(_) => {}
                Err(AgentError::Conflict(_)) => {
                    let current = self
                        .store
                        .task(task_id)
                        .await?
                        .map(|row| task_state_text(row.state))
                        .unwrap_or("gone")
                        .to_owned();
                    return Err(AgentError::NotCancelable {
                        id: task_id.to_owned(),
                        state: current,
                    });
                }
                Err(err) => return Err(err),
            }
        }
        self.stop_runner(task_id);
        if let Some(agent) = self.agent_by_key(&row.agent) {
            // A model that keeps the chat's session (an ACP agent) stops what it waits on.
            agent.model.cancelled(&row.context_id);
        }
        // A cancel goes down to the subagents' tasks the task started.
        self.subagents().cancel_subagents(who, task_id).await;
        tracing::info!(task = %task_id, user = %who.subject, "task canceled");
        Ok(self.snapshot(task_id, None).await?.0)
    }

    pub(super) fn stop_runner(&self, task_id: &str) {
        if let Ok(running) = self.running.lock() {
            if let Some(token) = running.get(task_id) {
                token.cancel();
            }
        }
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
            let mut events = runtime.log.follow(&task, after);
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
        let turn_end = self.log.wait_final(task_id, after);
        match tokio::time::timeout(Duration::from_secs(2), turn_end).await {
            Ok(result) => result,
            Err(_elapsed) => Ok(()),
        }
    }
}
