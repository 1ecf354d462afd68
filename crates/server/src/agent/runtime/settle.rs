//! Settling a turn's tool calls: the runner runs auto and approved calls (each start committed
//! before the call runs, its result written with the next step), answers rejected, denied and
//! interrupted ones, and pauses the task with one batch for the calls still held.

use std::sync::Arc;
use std::time::Instant;

use serde_json::Value;
use signoff_protocol::hitl::{self, ToolResult};
use signoff_protocol::{StreamEvent, TaskState};

use crate::agent::metrics::UNKNOWN_TOOL;
use crate::agent::model::{ChatMessage, ModelToolCall};
use crate::agent::subagents::Subagent;
use crate::agent::tools::error_result;
use crate::agent::view::{self};
use crate::store::{CallRow, CallStatus, CallUpdate, Commit, Guard};
use tracing::Instrument;

use crate::agent::notify::payload::About;

use super::elicit::CallAsker;
use super::runner::TaskRun;
use super::screening::Requester;
use super::subagent::{NestedCall, SubagentStep};
use super::transcript::*;
use super::{AgentError, Result, Runtime};
use crate::agent::approvals::args_sha256;
use signoff_protocol::hitl::elicitation::AskedBy;

/// A step written with the next one (a call's result with the next call's start, or with the
/// pause), so a batch of calls costs fewer commits. It is never held across a wait for anyone
/// but our own next write.
type Deferred = Option<(Vec<StreamEvent>, Commit)>;

fn defer(deferred: &mut Deferred, events: Vec<StreamEvent>, commit: Commit) {
    *deferred = Some(match deferred.take() {
        Some((mut earlier_events, earlier)) => {
            earlier_events.extend(events);
            (earlier_events, earlier.then(commit))
        }
        None => (events, commit),
    });
}

/// What settling one open call came to.
enum Settled {
    /// The call's answer for the model.
    Answer(Answer),
    /// The call waits for a person's decision: it joins the pause.
    Held,
    /// An agent-tool call's subagent waits for decisions: these of its calls join the pause.
    Waiting(Vec<NestedCall>),
    /// Stop settling: the call was canceled, the subagent stopped, or the server is stopping.
    /// What is deferred is written first.
    Stopped,
    /// The person canceled while the call's tool ran: stop at once (its start was written
    /// before it ran, and nothing was deferred since).
    Canceled,
}

/// A settled call's answer for the model.
struct Answer {
    response: Value,
    /// The model's own arguments, when a person edited them.
    edited_from: Option<Value>,
    /// The arguments the call ran with, when it ran in this step.
    started: Option<Value>,
}

impl Settled {
    /// The answer of a call that did not run in this step.
    fn answered(response: Value) -> Self {
        Settled::Answer(Answer {
            response,
            edited_from: None,
            started: None,
        })
    }
}

impl Runtime {
    /// Settles the open calls of the last turn in order: runs auto and approved ones, answers
    /// rejected ones, reports calls interrupted by a crash, and pauses the task with ONE batch
    /// for those still held. Returns whether the task paused (or ended).
    ///
    /// A call's start is committed before it runs; its result is written with the next step
    /// (the next call's start, or the pause), or alone when nothing follows.
    pub(super) async fn settle_calls(
        self: &Arc<Self>,
        run: &mut TaskRun<'_>,
        open: &[ModelToolCall],
        transcript: &mut Vec<ChatMessage>,
    ) -> Result<bool> {
        let (agent, task_id, cancel) = (run.agent.clone(), run.task_id.clone(), run.cancel);
        let task_id = task_id.as_str();
        let mut deferred: Deferred = None;
        let mut held = Vec::new();
        // Subagents' calls that join this pause, and whether an agent-tool call waits for one.
        let mut nested = Vec::new();
        let mut subagent_waits = false;
        for call in open {
            // Shutting down: start nothing more (another replica, or the next start, goes on
            // from the calls recorded so far).
            if cancel.is_cancelled() || self.shutdown.is_cancelled() {
                self.write_deferred(task_id, deferred).await?;
                return Ok(true);
            }
            let Some(record) = run.calls.get(&call.id).cloned() else {
                return Err(AgentError::Internal(format!(
                    "call {} has no record",
                    call.id
                )));
            };
            let rejected = record.status == CallStatus::Rejected;
            let subagent = agent.subagents.get(&call.name).cloned();
            // An agent-tool call runs as a task on its subagent: started now (auto or
            // approved), or gone on with after a decision on its nested calls or a restart.
            let delegated = match (&subagent, record.status) {
                (Some(_), CallStatus::Started) => Some(
                    record
                        .run_args
                        .clone()
                        .unwrap_or_else(|| record.args.clone()),
                ),
                (Some(_), CallStatus::Auto | CallStatus::Approved) => {
                    Some(self.start_call(run, &record, &mut deferred).await?.0)
                }
                _ => None,
            };
            let settled = if let (Some(subagent), Some(run_args)) = (&subagent, delegated) {
                self.settle_delegated(run, call, subagent, &run_args, &mut deferred)
                    .await?
            } else {
                self.settle_plain(run, call, &record, &mut deferred).await?
            };
            let answer = match settled {
                Settled::Answer(answer) => answer,
                Settled::Held => {
                    held.push(record);
                    continue;
                }
                Settled::Waiting(calls) => {
                    nested.extend(calls);
                    subagent_waits = true;
                    continue;
                }
                Settled::Stopped => {
                    self.write_deferred(task_id, deferred).await?;
                    return Ok(true);
                }
                Settled::Canceled => return Ok(true),
            };
            finish_call(run, call, answer, rejected, transcript, &mut deferred)?;
        }
        self.pause_held(run, held, nested, subagent_waits, deferred)
            .await
    }

    /// Goes on with an agent-tool call's subagent task: the results of nested calls it ran
    /// since the last step are written with the next step, and its answer, its wait for
    /// decisions or its stop is the call's.
    async fn settle_delegated(
        self: &Arc<Self>,
        run: &mut TaskRun<'_>,
        call: &ModelToolCall,
        subagent: &Subagent,
        run_args: &Value,
        deferred: &mut Deferred,
    ) -> Result<Settled> {
        let (step, mirrored) = self
            .subagents()
            .run_subagent(run, call, subagent, run_args)
            .await?;
        if let Some((events, commit)) = mirrored {
            defer(deferred, events, commit);
        }
        Ok(match step {
            SubagentStep::Answer(response) => Settled::answered(response),
            SubagentStep::Waiting(calls) => Settled::Waiting(calls),
            SubagentStep::Stopped => Settled::Stopped,
        })
    }

    /// Settles a call that is not delegated to a subagent, by its record's status: held ones
    /// wait, auto and approved ones run, and the others are answered from their record.
    async fn settle_plain(
        self: &Arc<Self>,
        run: &mut TaskRun<'_>,
        call: &ModelToolCall,
        record: &CallRow,
        deferred: &mut Deferred,
    ) -> Result<Settled> {
        Ok(match record.status {
            CallStatus::Held => Settled::Held,
            CallStatus::Canceled => Settled::Stopped,
            CallStatus::Finished => {
                // Finished but missing from the transcript cannot happen (one transaction
                // writes both); take the recorded result if it ever does.
                Settled::answered(record.result.clone().unwrap_or(Value::Null))
            }
            CallStatus::Started => Settled::answered(error_result(
                "interrupted by a restart: this call may or may not have run, and it \
                     was not run again",
            )),
            CallStatus::Rejected => {
                let rejected = ToolResult::rejected(&call.id, &call.name, record.reason.as_deref());
                Settled::answered(rejected.response)
            }
            CallStatus::Denied => {
                let rule = record.reason.as_deref().unwrap_or("of the agents file");
                Settled::answered(ToolResult::denied(&call.id, &call.name, rule).response)
            }
            CallStatus::Expired => {
                let after = crate::agent::approvals::expired_after(&run.agent.approvals);
                Settled::answered(ToolResult::expired(&call.id, &call.name, &after).response)
            }
            CallStatus::Auto | CallStatus::Approved => {
                self.run_tool(run, call, record, deferred).await?
            }
        })
    }

    /// Runs an auto or approved call's tool once its start is committed, under a `tool_call`
    /// span, and counts it in the tool metrics.
    async fn run_tool(
        self: &Arc<Self>,
        run: &mut TaskRun<'_>,
        call: &ModelToolCall,
        record: &CallRow,
        deferred: &mut Deferred,
    ) -> Result<Settled> {
        let (run_args, edited) = self.start_call(run, record, deferred).await?;
        let agent = run.agent.clone();
        // Only an exposed tool's name becomes a label (the model chooses the name).
        let tool = match agent.tools.get(&call.name) {
            Some(_) => call.name.as_str(),
            None => UNKNOWN_TOOL,
        };
        let span = tracing::info_span!(
            "tool_call",
            task.id = run.task_id.as_str(),
            context.id = run.context_id.as_str(),
            tool,
            call.id = %call.id,
        );
        let started = Instant::now();
        // The call's server may ask the person questions while it runs.
        let requester = Requester {
            user: &run.user_id,
            groups: &run.groups,
            context_id: &run.context_id,
            task_id: &run.task_id,
            subagent: run.subagent,
        };
        let asker = CallAsker::new(
            self.clone(),
            agent.clone(),
            &requester,
            AskedBy {
                server: record.source.clone(),
                tool: call.name.clone(),
                call_id: call.id.clone(),
            },
            run.usage,
        );
        let running = agent
            .tools
            .call_asking(
                &call.name,
                run_args.clone(),
                self.limits.tool_timeout,
                Some(Arc::new(asker)),
            )
            .instrument(span);
        // A tool call is not abandoned at shutdown (it would be reported as
        // interrupted); only the user's cancel stops waiting for it.
        let response = tokio::select! {
            _ = run.cancel.cancelled() => return Ok(Settled::Canceled),
            response = running => response,
        };
        let failed = response.get("isError") == Some(&Value::Bool(true));
        self.metrics.tool_call(tool, started.elapsed(), failed);
        Ok(Settled::Answer(Answer {
            response,
            edited_from: edited,
            started: Some(run_args),
        }))
    }

    /// Ends the settling: the held calls and the subagents' new nested calls pause the task
    /// with ONE batch, written with what is deferred, and its deadline is watched; with none
    /// (or none new) only what is deferred is written. Returns whether the task paused.
    async fn pause_held(
        self: &Arc<Self>,
        run: &TaskRun<'_>,
        held: Vec<CallRow>,
        nested: Vec<NestedCall>,
        subagent_waits: bool,
        mut deferred: Deferred,
    ) -> Result<bool> {
        let (task_id, context_id) = (run.task_id.as_str(), run.context_id.as_str());
        // Held calls that already have a batch wait in it (a runner taken up after a restart),
        // as do nested calls already in one.
        if (held.is_empty() && nested.is_empty())
            || held.iter().any(|record| record.batch_id.is_some())
        {
            self.write_deferred(task_id, deferred).await?;
            return Ok(!held.is_empty() || subagent_waits);
        }
        let requests: Vec<_> = nested.iter().map(|call| call.request.clone()).collect();
        let (event, mut pause, deadline) =
            Self::pause_step(&run.agent, task_id, context_id, &held, &requests, run.usage);
        let notifies = self.notifies();
        if notifies {
            let agent = run.agent.key();
            let about = About {
                task_id,
                context_id,
                agent: &agent,
                requester: &run.user_id,
            };
            pause.notifications = self
                .pause_notifications(&about, pause.new_batch.as_ref(), deadline.as_deref())
                .await;
        }
        let mut events: Vec<StreamEvent> = Vec::new();
        for call in nested {
            events.push(call.announced);
            pause.new_calls.push(call.record);
        }
        events.push(event);
        defer(&mut deferred, events, pause);
        let span = tracing::info_span!(
            "pause",
            task.id = task_id,
            context.id = context_id,
            calls = held.len(),
        );
        self.write_deferred(task_id, deferred)
            .instrument(span)
            .await?;
        // The commit woke the outbox sender for the pause's notifications (`after_commit`).
        self.metrics.paused(run.taken_up.elapsed());
        if let Some(deadline) = &deadline {
            self.watch_deadline(task_id, deadline);
        }
        tracing::info!(task = %task_id, calls = held.len(), "paused for approval");
        Ok(true)
    }

    /// Commits a call's start before it runs (with any step deferred so far), and returns the
    /// arguments it runs with and, when a person edited them, the model's own.
    async fn start_call(
        &self,
        run: &mut TaskRun<'_>,
        record: &CallRow,
        deferred: &mut Deferred,
    ) -> Result<(Value, Option<Value>)> {
        let run_args = record
            .run_args
            .clone()
            .unwrap_or_else(|| record.args.clone());
        // A question call runs with its answers added to its arguments: no edit.
        let answered = hitl::question::answers_from_args(&run_args).is_some();
        let edited = (run_args != record.args && !answered).then(|| record.args.clone());
        let started = Commit {
            call_updates: vec![CallUpdate::Started {
                call_id: record.call_id.clone(),
                run_args_sha256: args_sha256(&run_args),
                run_args: run_args.clone(),
            }],
            guard: Some(Guard::NotTerminal),
            ..Commit::default()
        };
        defer(deferred, Vec::new(), started);
        self.write_deferred(&run.task_id, deferred.take()).await?;
        if let Some(record) = run.calls.get_mut(&record.call_id) {
            record.status = CallStatus::Started;
            record.run_args = Some(run_args.clone());
        }
        Ok((run_args, edited))
    }

    /// Writes a deferred step, if there is one.
    async fn write_deferred(&self, task_id: &str, deferred: Deferred) -> Result<()> {
        if let Some((events, commit)) = deferred {
            self.commit(task_id, events, commit).await?;
        }
        Ok(())
    }
}

/// Answers a settled call: its result joins the transcript (with the arguments it ran with,
/// when a person edited them) and the task's log (marked with who decided it, when no person
/// was asked), and its record is finished; all written with the next step.
fn finish_call(
    run: &mut TaskRun<'_>,
    call: &ModelToolCall,
    answer: Answer,
    rejected: bool,
    transcript: &mut Vec<ChatMessage>,
    deferred: &mut Deferred,
) -> Result<()> {
    let Answer {
        response,
        edited_from,
        started,
    } = answer;
    let (task_id, context_id) = (run.task_id.as_str(), run.context_id.as_str());
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
        reply_message_id: rejected.then(|| run.reply_message_id.clone()).flatten(),
    });
    let part = ToolResult {
        id: call.id.clone(),
        name: call.name.clone(),
        response: response.clone(),
    }
    .to_part();
    let part = match run.decided_by.get(&call.id) {
        Some(decided_by) => decided_by.mark(part),
        None => part,
    };
    let message = view::agent_message(task_id, context_id, vec![part]);
    let event = view::status_event(task_id, context_id, TaskState::Working, Some(message), None);
    if let Some(record) = run.calls.get_mut(&call.id) {
        record.status = CallStatus::Finished;
        record.result = Some(response.clone());
    }
    let finished = Commit {
        transcript: Some(transcript_value(transcript)?),
        call_updates: vec![CallUpdate::Finished {
            call_id: call.id.clone(),
            result: response,
        }],
        guard: Some(Guard::NotTerminal),
        ..Commit::default()
    };
    defer(deferred, vec![event], finished);
    Ok(())
}
