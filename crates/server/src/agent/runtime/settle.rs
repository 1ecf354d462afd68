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
use crate::agent::tools::error_result;
use crate::agent::view::{self};
use crate::store::{CallRow, CallStatus, CallUpdate, Commit, Guard};
use tracing::Instrument;

use super::audit::args_sha256;
use super::runner::TaskRun;
use super::subagent::SubagentStep;
use super::transcript::*;
use super::{AgentError, Result, Runtime};

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
        let (agent, task_id, context_id, cancel) = (
            run.agent.clone(),
            run.task_id.clone(),
            run.context_id.clone(),
            run.cancel,
        );
        let (task_id, context_id) = (task_id.as_str(), context_id.as_str());
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
            let (response, edited_from, started) = if let (Some(subagent), Some(run_args)) =
                (&subagent, delegated)
            {
                let (step, mirrored) = self.run_subagent(run, call, subagent, &run_args).await?;
                if let Some((events, commit)) = mirrored {
                    defer(&mut deferred, events, commit);
                }
                match step {
                    SubagentStep::Answer(response) => (response, None, None),
                    SubagentStep::Waiting(calls) => {
                        nested.extend(calls);
                        subagent_waits = true;
                        continue;
                    }
                    SubagentStep::Stopped => {
                        self.write_deferred(task_id, deferred).await?;
                        return Ok(true);
                    }
                }
            } else {
                match record.status {
                    CallStatus::Held => {
                        held.push(record);
                        continue;
                    }
                    CallStatus::Canceled => {
                        self.write_deferred(task_id, deferred).await?;
                        return Ok(true);
                    }
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
                    CallStatus::Denied => {
                        let rule = record.reason.as_deref().unwrap_or("of the agents file");
                        (
                            ToolResult::denied(&call.id, &call.name, rule).response,
                            None,
                            None,
                        )
                    }
                    CallStatus::Expired => {
                        let after = Self::expired_after(&agent);
                        (
                            ToolResult::expired(&call.id, &call.name, &after).response,
                            None,
                            None,
                        )
                    }
                    CallStatus::Auto | CallStatus::Approved => {
                        let (run_args, edited) =
                            self.start_call(run, &record, &mut deferred).await?;
                        // Only an exposed tool's name becomes a label (the model chooses the name).
                        let tool = match agent.tools.get(&call.name) {
                            Some(_) => call.name.as_str(),
                            None => UNKNOWN_TOOL,
                        };
                        let span = tracing::info_span!(
                            "tool_call",
                            task.id = task_id,
                            context.id = context_id,
                            tool,
                            call.id = %call.id,
                        );
                        let started = Instant::now();
                        let running = agent
                            .tools
                            .call(&call.name, run_args.clone(), self.limits.tool_timeout)
                            .instrument(span);
                        // A tool call is not abandoned at shutdown (it would be reported as
                        // interrupted); only the user's cancel stops waiting for it.
                        let response = tokio::select! {
                            _ = cancel.cancelled() => return Ok(true),
                            response = running => response,
                        };
                        let failed = response.get("isError") == Some(&Value::Bool(true));
                        self.metrics.tool_call(tool, started.elapsed(), failed);
                        (response, edited, Some(run_args))
                    }
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
            let event =
                view::status_event(task_id, context_id, TaskState::Working, Some(message), None);
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
            defer(&mut deferred, vec![event], finished);
        }
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
            Self::pause_step(&agent, task_id, context_id, &held, &requests, run.usage);
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
        self.metrics.paused(run.taken_up.elapsed());
        if let Some(deadline) = &deadline {
            self.watch_deadline(task_id, deadline);
        }
        tracing::info!(task = %task_id, calls = held.len(), "paused for approval");
        Ok(true)
    }

    /// Writes a deferred step, if there is one.
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

    async fn write_deferred(&self, task_id: &str, deferred: Deferred) -> Result<()> {
        if let Some((events, commit)) = deferred {
            self.commit(task_id, events, commit).await?;
        }
        Ok(())
    }
}
