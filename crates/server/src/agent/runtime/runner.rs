//! The runner: drives a task from the store's state (model turn, settling calls, pausing with
//! one batch), so the same code starts a task, resumes it after a decision or a restart.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use futures_util::StreamExt;
use signoff_protocol::hitl::{DecidedBy, ToolCall, Why};
use signoff_protocol::{Part, StreamEvent, TaskState};
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::agent::asked::{asked_call, AskedModel};
use crate::agent::metrics::ModelFailure;
use crate::agent::model::{
    ran_id, ChatMessage, Model, ModelError, ModelEvent, ModelRequest, ModelToolCall,
};
use crate::agent::view::{self};
use crate::store::{CallRow, CallStatus, Commit, Guard, NewCall, Store, TaskRow, LEASE};

use super::reviewing;
use super::screening::{Requester, Screened};
use super::transcript::*;
use super::turn_writes::TurnWrites;
use super::{Agent, AgentError, Result, Runtime};
use crate::agent::approvals::args_sha256;

/// One runner's view of its task: which it is, the agent that runs it, the person's cancel,
/// the tokens used so far (the turn's final event reports them), and the task's call records
/// as this runner wrote them (read once when it starts, then kept in step with its commits).
pub(super) struct TaskRun<'a> {
    pub(super) agent: Arc<Agent>,
    /// What takes the model turns: the agent's model, or for a call asked from outside
    /// (`agent::asked`) the stand-in that only proposes that call and ends the task.
    pub(super) model: Arc<dyn Model>,
    pub(super) task_id: String,
    pub(super) context_id: String,
    /// The task's owner, whose policies may approve its calls.
    pub(super) user_id: String,
    /// The owner's groups as they sent the task, for the deployment's policies.
    pub(super) groups: Vec<String>,
    /// The task is a subagent's (its calls are a subagent's, for the policies).
    pub(super) subagent: bool,
    pub(super) cancel: &'a CancellationToken,
    pub(super) usage: (u64, u64),
    pub(super) calls: HashMap<String, CallRow>,
    /// Who decided the calls no person was asked about, for their result parts.
    pub(super) decided_by: HashMap<String, DecidedBy>,
    /// When this runner took the task up (the time to pause counts from here).
    pub(super) taken_up: Instant,
    /// The messageId of the text reply that decided the batch this runner settles, if any.
    pub(super) reply_message_id: Option<String>,
}

/// What one model turn gave: its text, its tool calls, and whether the text is one message.
struct Turn {
    text: String,
    calls: Vec<ModelToolCall>,
    /// The model sent its answer as one message (`ModelEvent::Message`), not streamed text.
    as_message: bool,
}

/// What a runner knows of its task when it starts, so it reads only what it lacks.
pub(super) enum RunnerStart {
    /// A task `send` has just created: its row, and whether its session is new (then no
    /// conversation came before it).
    New { row: TaskRow, new_session: bool },
    /// A task taken up from the store: after a decision, or left running by a previous process.
    /// `reply_message_id`: the messageId of the text reply that decided its batch, if one did
    /// (for the rejected calls' transcript entries).
    Stored { reply_message_id: Option<String> },
}

/// A runner that starts when this is dropped: a decision sent as a stream holds it until the
/// stream's follower is spawned. Of two tasks spawned in a row, tokio runs the second next on
/// this worker and wakes another worker for the first; the follower only subscribes and waits,
/// but the runner, taken up by a worker woken on the same CPU, kept the request from sending
/// its first event for the length of the runner's first steps (bench: ~0.3 ms of the ~0.64 ms
/// from the decision's request to its first event written).
#[must_use = "the runner starts when this is dropped"]
pub struct PendingRunner {
    runtime: Arc<Runtime>,
    task_id: String,
    /// The runner's start and its span, made under the caller's span; taken at the spawn.
    start: Option<(RunnerStart, tracing::Span)>,
}

impl std::fmt::Debug for PendingRunner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PendingRunner")
            .field("task_id", &self.task_id)
            .finish_non_exhaustive()
    }
}

impl Drop for PendingRunner {
    fn drop(&mut self) {
        if let Some((start, span)) = self.start.take() {
            self.runtime.spawn_runner_in(span, &self.task_id, start);
        }
    }
}

impl Runtime {
    // ---- runners ---------------------------------------------------------------------------

    /// Resumes tasks a previous process left running (see `drive` for how their calls are
    /// settled).
    pub async fn resume_unfinished(self: &Arc<Self>) -> Result<usize> {
        let watched = self.watch_stored_deadlines().await?;
        if watched > 0 {
            tracing::info!(watched, "watching the deadlines of paused batches");
        }
        self.start_sender();
        self.start_ladder();
        if self.start_replica().await? {
            // Other replicas may be driving the unfinished tasks: the sweep takes over those
            // whose lease lapsed.
            return Ok(0);
        }
        let tasks = self.store.unfinished_tasks().await?;
        for task in &tasks {
            tracing::info!(task = %task.id, "resuming a task left running by the previous process");
            self.spawn_runner(
                &task.id,
                RunnerStart::Stored {
                    reply_message_id: None,
                },
            );
        }
        Ok(tasks.len())
    }

    /// Starts a runner for the task. Its span is a child of the caller's (the message or the
    /// decision that started it): `run` for a new task, `resume` for one taken up again.
    pub(super) fn spawn_runner(self: &Arc<Self>, task_id: &str, start: RunnerStart) {
        let span = runner_span(task_id, &start);
        self.spawn_runner_in(span, task_id, start);
    }

    /// [`Runtime::spawn_runner`] once the caller's stream is set up (see [`PendingRunner`]);
    /// the runner's span is made now, under the caller's.
    pub(super) fn pending_runner(
        self: &Arc<Self>,
        task_id: &str,
        start: RunnerStart,
    ) -> PendingRunner {
        let span = runner_span(task_id, &start);
        PendingRunner {
            runtime: self.clone(),
            task_id: task_id.to_owned(),
            start: Some((start, span)),
        }
    }

    fn spawn_runner_in(self: &Arc<Self>, span: tracing::Span, task_id: &str, start: RunnerStart) {
        let runtime = self.clone();
        let task_id = task_id.to_owned();
        let lock = match self.locks.lock() {
            Ok(mut locks) => locks.entry(task_id.clone()).or_default().clone(),
            Err(_) => Arc::new(tokio::sync::Mutex::new(())),
        };
        let runner = async move {
            // Let the request that started us answer first (the stream's first event shows the
            // person their message or decision was taken) before the runner's own writes.
            tokio::task::yield_now().await;
            let _turn = lock.lock().await;
            // On a shared database, only the replica holding the task's lease drives it.
            if take_lease(&runtime.store, &task_id).await {
                runtime.run_leased(&task_id, start).await;
            } else {
                tracing::debug!(task = %task_id, "another replica drives this task");
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
        };
        self.tracker.spawn(runner.instrument(span));
    }

    /// Drives a task this replica holds the lease of, then gives the lease up.
    async fn run_leased(self: &Arc<Self>, task_id: &str, start: RunnerStart) {
        let cancel = CancellationToken::new();
        if let Ok(mut running) = self.running.lock() {
            running.insert(task_id.to_owned(), cancel.clone());
        }
        let inner = self.clone();
        let id = task_id.to_owned();
        let token = cancel.clone();
        // A panic inside the runner ends the task `failed`, never the process.
        let drive = async move { inner.drive(&id, start, &token).await };
        let outcome = tokio::spawn(drive.in_current_span()).await;
        if let Ok(mut running) = self.running.lock() {
            running.remove(task_id);
        }
        let failure = match outcome {
            Ok(Ok(())) | Ok(Err(AgentError::Conflict(_))) => None,
            Ok(Err(err)) => Some(err.to_string()),
            Err(join) => Some(format!("runner panicked: {join}")),
        };
        if let Some(detail) = failure {
            tracing::error!(task = %task_id, error = %detail, "task runner failed");
            self.fail(task_id, "The agent hit an internal error and stopped.")
                .await;
        }
        give_up_lease(&self.store, task_id).await;
    }

    /// Ends a task `failed` with a message a person understands.
    pub(super) async fn fail(&self, task_id: &str, text: &str) {
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
            state: Some(TaskState::Failed),
            guard: Some(Guard::NotTerminal),
            ..Commit::default()
        };
        if let Err(err) = self.commit(task_id, vec![event], commit).await {
            tracing::warn!(task = %task_id, error = %err, "could not mark the task failed");
        }
    }

    /// Takes the task's next steps until it completes, fails, pauses or is canceled.
    pub(super) async fn drive(
        self: Arc<Self>,
        task_id: &str,
        start: RunnerStart,
        cancel: &CancellationToken,
    ) -> Result<()> {
        let reply_message_id = match &start {
            RunnerStart::Stored { reply_message_id } => reply_message_id.clone(),
            RunnerStart::New { .. } => None,
        };
        let (row, earlier_rows, calls) = self.runner_rows(task_id, start).await?;
        let state = row.state;
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
            TurnWrites::new(&self, &task_id, &context_id)
                .working()
                .await?;
        }
        let mut transcript = transcript_of(&row)?;
        // The conversation before this task, in the same session.
        let mut earlier = Vec::new();
        for other in &earlier_rows {
            earlier.extend(closed(transcript_of(other)?));
        }
        let subagent = self.store.subagent_parent(&task_id).await?.is_some();
        let model: Arc<dyn Model> = match asked_call(&transcript) {
            Some(_) => Arc::new(AskedModel),
            None => agent.model.clone(),
        };
        let mut run = TaskRun {
            agent: agent.clone(),
            model,
            task_id: task_id.clone(),
            context_id: context_id.clone(),
            user_id: row.user_id.clone(),
            groups: row.requester_groups.clone(),
            subagent,
            cancel,
            usage: (0, 0),
            calls: calls
                .into_iter()
                .map(|call| (call.call_id.clone(), call))
                .collect(),
            decided_by: HashMap::new(),
            taken_up: Instant::now(),
            reply_message_id,
        };
        loop {
            if cancel.is_cancelled() || self.shutdown.is_cancelled() {
                return Ok(());
            }
            let open = open_calls(&transcript);
            if !open.is_empty() {
                let paused = self.settle_calls(&mut run, &open, &mut transcript).await?;
                if paused {
                    return Ok(());
                }
                continue;
            }
            self.deliver_queued(&task_id, &context_id, &mut transcript)
                .await?;
            let request = ModelRequest {
                context_id: context_id.clone(),
                instruction: agent.instruction.clone(),
                messages: earlier.iter().chain(transcript.iter()).cloned().collect(),
                tools: agent.tools.specs(),
            };
            let Some(turn) = self.model_turn(&mut run, request).await? else {
                return Ok(());
            };
            let Turn {
                text,
                calls,
                as_message,
            } = turn;
            if calls.is_empty() {
                let writes = TurnWrites::new(&self, &task_id, &context_id);
                if writes
                    .complete(run.usage, &mut transcript, text, as_message)
                    .await?
                {
                    return Ok(());
                }
                // A message that came during the turn gets a turn of its own first.
                continue;
            }
            self.record_calls(&mut run, &earlier, &mut transcript, text, calls)
                .await?;
        }
    }

    /// Reads what the runner lacks of its task: its row, the session's tasks before it (for
    /// the earlier conversation) and its call records. A new task has no calls yet, and a new
    /// session no earlier tasks, so neither is read for them.
    async fn runner_rows(
        &self,
        task_id: &str,
        start: RunnerStart,
    ) -> Result<(TaskRow, Vec<TaskRow>, Vec<CallRow>)> {
        Ok(match start {
            RunnerStart::New { row, new_session } => {
                let earlier = if new_session {
                    Vec::new()
                } else {
                    let tasks = self.store.session_tasks(&row.context_id).await?;
                    tasks
                        .into_iter()
                        .take_while(|other| other.id != row.id)
                        .collect()
                };
                (row, earlier, Vec::new())
            }
            RunnerStart::Stored { .. } => {
                let view = self
                    .store
                    .runner_view(task_id)
                    .await?
                    .ok_or_else(|| AgentError::TaskNotFound(task_id.to_owned()))?;
                (view.task, view.earlier, view.calls)
            }
        })
    }

    /// Records a turn that asked for calls. Every call of the turn gets the server's id, is
    /// screened (a policy may approve it, a rule deny it), then is announced and recorded, with
    /// the turn's text in the transcript, in one commit before any of them runs; the calls
    /// decided without a person are counted once that commit is written.
    async fn record_calls(
        &self,
        run: &mut TaskRun<'_>,
        earlier: &[ChatMessage],
        transcript: &mut Vec<ChatMessage>,
        text: String,
        calls: Vec<ModelToolCall>,
    ) -> Result<()> {
        let agent = run.agent.clone();
        let (task_id, context_id) = (run.task_id.clone(), run.context_id.clone());
        let mut tool_calls = calls;
        let earlier_calls = calls_in(earlier) + calls_in(transcript);
        let taken = |id: &str| run.calls.contains_key(id);
        if run.model.reports_its_calls() {
            ModelToolCall::assign_ran_ids(&mut tool_calls, earlier_calls, &taken);
        } else {
            ModelToolCall::assign_ids(&mut tool_calls, earlier_calls, &taken);
        }
        let requester = Requester {
            user: &run.user_id,
            groups: &run.groups,
            context_id: &context_id,
            task_id: &task_id,
            subagent: run.subagent,
        };
        let mut screened = self.screen_calls(&agent, &requester, &tool_calls).await?;
        // The reviewer, for the calls that would wait on a person: before the commit.
        let seen = reviewing::TurnSeen {
            transcript: &transcript[..],
            text: &text,
        };
        reviewing::review_calls(
            &self.metrics,
            &agent,
            &requester,
            &tool_calls,
            &mut screened,
            seen,
            &run.calls,
        )
        .await;
        let decided_by: Vec<Option<DecidedBy>> = screened
            .iter()
            .map(|screened| screened.decided_by.clone())
            .collect();
        let events = announce_calls(&task_id, &context_id, &tool_calls, &screened);
        let new_calls: Vec<NewCall> = tool_calls
            .iter()
            .zip(screened)
            .map(|(call, screened)| NewCall {
                call_id: call.id.clone(),
                name: call.name.clone(),
                source: agent
                    .tools
                    .get(&call.name)
                    .map(|tool| tool.spec.source.clone())
                    .unwrap_or_default(),
                args: call.args.clone(),
                args_sha256: args_sha256(&call.args),
                held: screened.held,
                auto: screened.auto,
                why: screened.why.as_ref().map(Why::to_value),
            })
            .collect();
        let auto_decided: Vec<_> = new_calls
            .iter()
            .filter_map(|call| call.auto.as_ref().map(|auto| (auto.channel, auto.verdict)))
            .collect();
        for (call, decided_by) in tool_calls.iter().zip(decided_by) {
            if let Some(decided_by) = decided_by {
                run.decided_by.insert(call.id.clone(), decided_by);
            }
        }
        let first_position = run.calls.len() as i64 + 1;
        for (index, call) in new_calls.iter().enumerate() {
            let record = CallRow::proposed(&task_id, first_position + index as i64, call);
            run.calls.insert(record.call_id.clone(), record);
        }
        transcript.push(ChatMessage::Assistant { text, tool_calls });
        let commit = Commit {
            transcript: Some(transcript_value(transcript)?),
            new_calls,
            guard: Some(Guard::NotTerminal),
            ..Commit::default()
        };
        self.commit(&task_id, events, commit).await?;
        for (channel, verdict) in auto_decided {
            self.metrics.decided(channel, [verdict], None);
        }
        Ok(())
    }

    /// One streamed model turn: text chunks become artifact updates as they arrive (one held
    /// back, so the last can say `lastChunk`); returns the text and tool calls, or `None` when
    /// the task was canceled or failed.
    #[tracing::instrument(name = "model_turn", skip_all, fields(
        task.id = %run.task_id,
        context.id = %run.context_id,
        agent = %run.agent.key(),
    ))]
    async fn model_turn(
        &self,
        run: &mut TaskRun<'_>,
        request: ModelRequest,
    ) -> Result<Option<Turn>> {
        let agent = run.agent.clone();
        let (task_id, context_id, cancel) =
            (run.task_id.clone(), run.context_id.clone(), run.cancel);
        let (task_id, context_id) = (task_id.as_str(), context_id.as_str());
        let mut stream = run.model.turn(request);
        let mut writes = TurnWrites::new(self, task_id, context_id);
        let mut text = String::new();
        let mut calls = Vec::new();
        let started = Instant::now();
        let agent_key = agent.key();
        let failed = |failure: ModelFailure| {
            self.metrics
                .model_turn(&agent_key, started.elapsed(), Some(failure));
        };
        let mut as_message = false;
        loop {
            let next = tokio::select! {
                _ = cancel.cancelled() => return Ok(None),
                _ = self.shutdown.cancelled() => return Ok(None),
                next = tokio::time::timeout(self.limits.model_timeout, stream.next()) => next,
            };
            let event = match next {
                Err(_elapsed) => {
                    failed(ModelFailure::Timeout);
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
                    failed(ModelFailure::Error);
                    tracing::warn!(task = %task_id, error = %err, "model turn failed");
                    self.fail(task_id, &model_failure(&err)).await;
                    return Ok(None);
                }
                Ok(Some(Ok(event))) => event,
            };
            match event {
                ModelEvent::Text(chunk) => {
                    text.push_str(&chunk);
                    writes.chunk(chunk).await?;
                }
                ModelEvent::ToolCall(call) => {
                    calls.push(call);
                    if calls.len() > self.limits.max_tool_calls_per_turn {
                        failed(ModelFailure::TooManyCalls);
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
                ModelEvent::Message(reply) => {
                    text.push_str(&reply);
                    as_message = true;
                }
                ModelEvent::Artifact(artifact) => {
                    let event =
                        view::whole_artifact(task_id, context_id, &artifact.name, artifact.parts);
                    writes.step(event).await?;
                }
                ModelEvent::Ran(mut call) => {
                    call.id = ran_id(&call.id);
                    // A call the task holds is never changed by a report: its end comes as
                    // its result (`Reported`), once it was allowed.
                    if run.calls.contains_key(&call.id) {
                        continue;
                    }
                    let parts = ran_parts(call);
                    writes.aside(parts).await?;
                }
                ModelEvent::Reported(call) => {
                    let Some(part) = reported_part(&run.calls, call) else {
                        tracing::warn!(task = %task_id, "dropped a report on a call that was not allowed to run");
                        continue;
                    };
                    writes.aside(vec![part]).await?;
                }
                ModelEvent::Thought(thought) => {
                    let parts = vec![signoff_protocol::hitl::ran::thought_part(thought)];
                    writes.aside(parts).await?;
                }
                ModelEvent::Usage(turn) => {
                    run.usage.0 += turn.prompt_tokens;
                    run.usage.1 += turn.completion_tokens;
                }
            }
        }
        self.metrics.model_turn(&agent_key, started.elapsed(), None);
        writes.close_answer().await?;
        Ok(Some(Turn {
            text,
            calls,
            as_message,
        }))
    }
}

/// The parts of a call the model ran itself, under the server's id for it: the call, and its
/// result once it ended.
fn ran_parts(call: signoff_protocol::hitl::RanCall) -> Vec<Part> {
    let mut parts = vec![call.call_part()];
    parts.extend(call.result_part());
    parts
}

/// The result part of how an allowed call of the task went once the agent ran it: only for a
/// call that was let run (its result, saying so, is written), once the report says it ended.
fn reported_part(
    calls: &HashMap<String, CallRow>,
    call: signoff_protocol::hitl::RanCall,
) -> Option<Part> {
    let row = calls.get(&call.id)?;
    // A call that ran has the arguments it ran with; a refused one never started.
    let ran = row.status == CallStatus::Finished && row.run_args.is_some();
    if !ran || row.name != call.name {
        return None;
    }
    call.result_part()
}

/// The `function_call` parts announcing a turn's calls, one working status each; a call a
/// policy or rule decided is marked with who decided it.
fn announce_calls(
    task_id: &str,
    context_id: &str,
    calls: &[ModelToolCall],
    screened: &[Screened],
) -> Vec<StreamEvent> {
    calls
        .iter()
        .zip(screened)
        .map(|(call, screened)| {
            let part = ToolCall {
                id: call.id.clone(),
                name: call.name.clone(),
                args: call.args.clone(),
            }
            .to_part();
            let part = match &screened.decided_by {
                Some(decided_by) => decided_by.mark(part),
                None => part,
            };
            let part = match &screened.why {
                Some(why) => why.mark(part),
                None => part,
            };
            let message = view::agent_message(task_id, context_id, vec![part]);
            view::status_event(task_id, context_id, TaskState::Working, Some(message), None)
        })
        .collect()
}

/// The failure text a person reads when the model fails.
fn model_failure(err: &ModelError) -> String {
    format!("The model failed: {err}. Try again, or check the model's configuration.")
}

/// The span a runner works in: a new turn's (with its chat), or a stored task resumed.
fn runner_span(task_id: &str, start: &RunnerStart) -> tracing::Span {
    match start {
        RunnerStart::New { row, .. } => {
            tracing::info_span!("run", task.id = %task_id, context.id = %row.context_id)
        }
        RunnerStart::Stored { .. } => tracing::info_span!("resume", task.id = %task_id),
    }
}

/// Whether this replica may drive `task_id` now (always, on SQLite).
async fn take_lease(store: &Store, task_id: &str) -> bool {
    match store.acquire_lease(task_id, LEASE).await {
        Ok(taken) => taken,
        Err(err) => {
            tracing::warn!(task = %task_id, error = %err, "could not take a task's lease");
            false
        }
    }
}

/// Lets another replica drive `task_id` next (after a pause, an end or a failure).
async fn give_up_lease(store: &Store, task_id: &str) {
    if let Err(err) = store.release_lease(task_id).await {
        // It lapses on its own.
        tracing::warn!(task = %task_id, error = %err, "could not release a task's lease");
    }
}
