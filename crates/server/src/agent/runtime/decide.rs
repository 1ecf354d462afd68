//! Decisions on a paused batch (an A2A message, text, or REST): each is admitted, checked and
//! applied in ONE store write that reads the task and its pending batch on the writer's
//! connection, so the checks and the compare-and-set see the same moment and the decision pays
//! for no read of its own. Only the winner of the compare-and-set runs the calls.

use std::sync::Arc;

use serde_json::Value;
use signoff_protocol::hitl::{self, ActionRequest, Decision, Dialect, Verdict};
use signoff_protocol::{Message, Role, StreamEvent, TaskState};

use crate::agent::config::RuleAction;
use crate::agent::view;
use crate::store::{
    task_state_text, BatchRow, BatchState, CallStatus, CallVerdict, Channel, DecisionWrite,
    NewEvent, StoreError, SubagentLink, TaskRow, Verdict as StoredVerdict,
};

use super::audit::args_sha256;
use super::runner::RunnerStart;
use super::{Accepted, Agent, AgentError, LoggedEvent, Result, Runtime};

/// A decision as planned inside the write: what the caller needs once it has committed.
pub(super) struct Decided {
    task_id: String,
    batch_id: i64,
    channel: Channel,
    summary: String,
    working: StreamEvent,
    stored: NewEvent,
    /// Each decided call's verdict, and when the batch paused (RFC 3339), for the metrics.
    verdicts: Vec<StoredVerdict>,
    paused_at: String,
}

/// What a message to an existing task turns into.
enum Continuation {
    Decided(Box<Decided>),
    /// Text for a working task, taken before its next model turn; its log ended at `last_seq`.
    Queued {
        message: Box<Message>,
        last_seq: i64,
    },
}

impl Runtime {
    /// A message to task `task_id` of `agent`: a decision on its pending batch, or text for it
    /// while it works. Its span (under the message's) is the parent of the resumed runner's;
    /// its `channel` (a2a or text) is recorded once the message turns out to be a decision.
    #[tracing::instrument(name = "decision", skip_all, fields(
        task.id = task_id,
        channel = tracing::field::Empty,
    ))]
    pub(super) async fn continue_task(
        self: &Arc<Self>,
        user: &str,
        agent: &Arc<Agent>,
        task_id: &str,
        message: Message,
    ) -> Result<Accepted> {
        let runtime = self.clone();
        let (user_id, agent_key, id) = (user.to_owned(), agent.key(), task_id.to_owned());
        let driven_by = self.driving_parent(task_id).await?;
        let planned = self
            .store
            .decide_planned(task_id, move |row, batch| {
                // Over A2A, another user's or agent's task does not exist.
                let row = row
                    .filter(|row| row.user_id == user_id && row.agent == agent_key)
                    .ok_or_else(|| AgentError::TaskNotFound(id.clone()))?;
                if let Some(context_id) = &message.context_id {
                    if *context_id != row.context_id {
                        return Err(AgentError::InvalidParams(format!(
                            "params.message.contextId: task {id} belongs to context {}, not {context_id}",
                            row.context_id
                        )));
                    }
                }
                if let Some(link) = &driven_by {
                    return Err(driven_by_parent(&id, link));
                }
                let state = row.state;
                if state.is_terminal() {
                    return Err(AgentError::Terminal(format!(
                        "task {id} is {} and takes no more messages; send a message without taskId to start a new task",
                        task_state_text(state)
                    )));
                }
                let mut message = message.clone();
                message.context_id = Some(row.context_id.clone());
                let data_decision = Decision::from_message(&message)?;
                // A working task takes text before its next model turn; a decision DataPart is
                // late (another decision won a moment ago) and refused, so a batch is decided
                // once.
                if matches!(state, TaskState::Submitted | TaskState::Working)
                    && data_decision.is_none()
                {
                    let last_seq = row.last_seq;
                    let message = Box::new(message);
                    return Ok((None, Continuation::Queued { message, last_seq }));
                }
                if state != TaskState::InputRequired {
                    return Err(AgentError::NotPaused(format!(
                        "task {id} is {} and is not waiting for a decision",
                        task_state_text(state)
                    )));
                }
                // A paused task reads a decision from a DataPart, else from the text; any other
                // text rejects the pending calls with the text as the reason, which the model
                // reads.
                let (decision, channel) = match data_decision {
                    Some(decision) => (decision, Channel::A2a),
                    None => match Decision::from_reply(&message.text()) {
                        Some(decision) => (decision, Channel::Text),
                        None => {
                            return Err(AgentError::InvalidParams(
                                "the task waits for a decision on its tool calls: say approve \
                                 or reject (or send a decision DataPart)"
                                    .into(),
                            ))
                        }
                    },
                };
                let batch = batch.ok_or_else(|| {
                    AgentError::NotPaused(format!(
                        "task {id} has no pending batch: it was already decided"
                    ))
                })?;
                let (write, decided) = runtime.plan_decision(
                    &user_id,
                    row,
                    batch,
                    &decision,
                    channel,
                    Some(message),
                )?;
                Ok((Some(write), Continuation::Decided(Box::new(decided))))
            })
            .await;
        match self
            .or_expired(task_id, Self::committed(task_id, planned))
            .await?
        {
            (Some(seq), Continuation::Decided(decided)) => Ok(self.decided(user, seq, *decided)),
            (_, Continuation::Queued { message, last_seq }) => {
                self.queue_message(task_id, last_seq, *message).await
            }
            (None, Continuation::Decided(_)) => Err(AgentError::Internal(
                "a planned decision was not written".into(),
            )),
        }
    }

    /// Decides a paused task's batch through the REST API (`POST /api/approvals/{task}`);
    /// returns the batch decided too. A subagent's task is decided through its parent's batch.
    pub async fn decide_rest(
        self: &Arc<Self>,
        user: &str,
        task_id: &str,
        data: &Value,
    ) -> Result<(Accepted, i64)> {
        let driven_by = self.driving_parent(task_id).await?;
        self.decide_data(user, task_id, data, driven_by).await
    }

    /// Decides a paused task's batch with the decision object `data` (channel `rest`): a
    /// person's over REST, or a parent's forwarded to its subagent's task (`driven_by` none).
    /// A task `driven_by` a parent is refused once its owner is known.
    #[tracing::instrument(name = "decision", skip_all, fields(task.id = task_id, channel = "rest"))]
    pub(super) async fn decide_data(
        self: &Arc<Self>,
        user: &str,
        task_id: &str,
        data: &Value,
        driven_by: Option<SubagentLink>,
    ) -> Result<(Accepted, i64)> {
        let runtime = self.clone();
        let (user_id, id, data) = (user.to_owned(), task_id.to_owned(), data.clone());
        let planned = self
            .store
            .decide_planned(task_id, move |row, batch| {
                let row = row.ok_or_else(|| AgentError::TaskNotFound(id.clone()))?;
                if row.user_id != user_id {
                    return Err(AgentError::Forbidden(id.clone()));
                }
                if let Some(link) = &driven_by {
                    return Err(driven_by_parent(&id, link));
                }
                let decision = Decision::from_data(&data)?;
                let mut message = Message::new(
                    view::new_id(),
                    Role::User,
                    decision.to_parts(Dialect::Native),
                );
                message.task_id = Some(row.id.clone());
                message.context_id = Some(row.context_id.clone());
                let batch = batch.ok_or_else(|| {
                    AgentError::NotPaused(format!(
                        "task {id} is {} and waits for no decision",
                        task_state_text(row.state)
                    ))
                })?;
                let (write, decided) = runtime.plan_decision(
                    &user_id,
                    row,
                    batch,
                    &decision,
                    Channel::Rest,
                    Some(message),
                )?;
                Ok((Some(write), decided))
            })
            .await;
        match self
            .or_expired(task_id, Self::committed(task_id, planned))
            .await?
        {
            (Some(seq), decided) => {
                let batch_id = decided.batch_id;
                let mut accepted = self.decided(user, seq, decided);
                accepted.start_runner();
                Ok((accepted, batch_id))
            }
            (None, _) => Err(AgentError::Internal(
                "a planned decision was not written".into(),
            )),
        }
    }

    /// The store's answer to a planned decision, as the runtime's error.
    fn committed<X>(
        task_id: &str,
        planned: crate::store::Result<Result<(Option<i64>, X)>>,
    ) -> Result<(Option<i64>, X)> {
        match planned {
            Ok(outcome) => outcome,
            // Cannot happen (the plan saw the batch pending in the same transaction); kept so a
            // lost compare-and-set never runs anything.
            Err(StoreError::Conflict(_)) => Err(AgentError::NotPaused(format!(
                "the pending batch of task {task_id} was already decided"
            ))),
            Err(err) => Err(err.into()),
        }
    }

    /// The decision rules (docs/wire.md, Decision rules) on the task's pending `batch`: the
    /// write that decides it, and what to announce once it has committed. Pure: it runs inside
    /// the store's write, perhaps twice.
    fn plan_decision(
        &self,
        user: &str,
        row: &TaskRow,
        batch: &BatchRow,
        decision: &Decision,
        channel: Channel,
        echo: Option<Message>,
    ) -> Result<(DecisionWrite, Decided)> {
        let requests: Vec<ActionRequest> = batch
            .requests
            .as_array()
            .map(|items| items.iter().filter_map(ActionRequest::from_value).collect())
            .unwrap_or_default();
        let resolved = hitl::resolve(&requests, decision)?;
        self.check_decided_calls(row, &resolved)?;
        let verdicts: Vec<CallVerdict> = resolved
            .iter()
            .map(|call| match call.verdict {
                Verdict::Approve => {
                    // A question call keeps its answers with it: they are what it returns.
                    let run_args = match (&call.answers, &call.modified_args) {
                        (Some(answers), _) => {
                            hitl::question::args_with_answers(&call.request.args, answers)
                        }
                        (None, Some(args)) => args.clone(),
                        (None, None) => call.request.args.clone(),
                    };
                    CallVerdict {
                        call_id: call.request.id.clone(),
                        status: CallStatus::Approved,
                        verdict: StoredVerdict::Approve,
                        reason: None,
                        run_args_sha256: Some(args_sha256(&run_args)),
                        run_args: Some(run_args),
                    }
                }
                Verdict::Deny => CallVerdict {
                    call_id: call.request.id.clone(),
                    status: CallStatus::Rejected,
                    verdict: StoredVerdict::Deny,
                    reason: call.reason.clone(),
                    run_args: None,
                    run_args_sha256: None,
                },
            })
            .collect();
        let decided_verdicts = verdicts.iter().map(|verdict| verdict.verdict).collect();
        let working = view::status_event(&row.id, &row.context_id, TaskState::Working, echo, None);
        let stored = Self::encode(&working);
        let summary = decision.summary();
        let write = DecisionWrite {
            batch_id: batch.id,
            user_id: user.to_owned(),
            channel,
            decision: decision.to_data(Dialect::Native),
            summary: summary.clone(),
            verdicts,
            batch_state: BatchState::Decided,
            task_state: TaskState::Working,
            events: vec![stored.clone()],
        };
        let decided = Decided {
            task_id: row.id.clone(),
            batch_id: batch.id,
            channel,
            summary,
            working,
            stored,
            verdicts: decided_verdicts,
            paused_at: batch.created_at.clone(),
        };
        Ok((write, decided))
    }

    /// After a decision's commit: announce it, start the runner, answer with the event.
    fn decided(self: &Arc<Self>, user: &str, seq: i64, decided: Decided) -> Accepted {
        let Decided {
            task_id,
            channel,
            summary,
            working,
            stored,
            verdicts,
            paused_at,
            ..
        } = decided;
        tracing::Span::current().record("channel", channel.as_str());
        self.metrics
            .decided(channel, verdicts, waited_since(&paused_at));
        self.metrics.task_entered(TaskState::Working);
        // A text reply's id goes with the calls it rejected (its text is their reason).
        let reply_message_id = match (&channel, &working) {
            (Channel::Text, StreamEvent::StatusUpdate(update)) => update
                .status
                .message
                .as_ref()
                .map(|message| message.message_id.clone()),
            _ => None,
        };
        let logged = LoggedEvent::committed(seq, working, &stored);
        self.notify(&task_id, vec![logged.clone()]);
        tracing::info!(task = %task_id, user, channel = channel.as_str(), decision = %summary, "batch decided");
        let watch = Some(self.watch_early(&task_id));
        let runner = self.pending_runner(&task_id, RunnerStart::Stored { reply_message_id });
        Accepted {
            after_seq: seq - 1,
            committed: vec![logged],
            task_id,
            watch,
            runner: Some(runner),
        }
    }

    /// What `resolve` cannot know: reasons and answers within the size limits, and edited
    /// arguments that fit the tool's input schema (an unknown key, a wrong type). Refused before
    /// anything is stored.
    pub(super) fn check_decided_calls(
        &self,
        row: &TaskRow,
        resolved: &[hitl::ResolvedCall],
    ) -> Result<()> {
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
            // Answers are the person's words to the model, bounded as a message's are.
            if let Some(answers) = &call.answers {
                let bytes: usize = answers.iter().flatten().map(String::len).sum();
                if bytes > self.limits.max_message_bytes {
                    return Err(AgentError::InvalidParams(format!(
                        "the answers to {id} are {bytes} bytes; the limit is {} bytes",
                        self.limits.max_message_bytes
                    )));
                }
            }
            // A subagent's nested call is checked against the tool of the agent that asks.
            let asker = match &call.request.via {
                Some(via) => self.agent_by_key(&via.asker),
                None => agent.clone(),
            };
            let (Some(args), Some(agent)) = (&call.modified_args, &asker) else {
                continue;
            };
            // The operator's deny rules hold for the arguments that would run, edited or not.
            if let Some(rule) = agent.approvals.rule_for(&call.request.name, args) {
                if rule.action == RuleAction::Deny {
                    return Err(AgentError::InvalidParams(format!(
                        "modified_args for {id} ({}) are denied by rule {}; the call keeps waiting",
                        call.request.name, rule.label
                    )));
                }
            }
            if let Some(tool) = agent.tools.get(&call.request.name) {
                tool.check_args(args).map_err(|error| {
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
}

/// The refusal of a decision or message sent straight to a subagent's task `task_id`.
fn driven_by_parent(task_id: &str, link: &SubagentLink) -> AgentError {
    AgentError::NotPaused(format!(
        "task {task_id} is the subagent task of task {} (its call {}): its calls wait in that \
         task's batch; decide them there",
        link.parent_task_id, link.parent_call_id
    ))
}

/// The time since `at` (RFC 3339), if it parses and lies in the past.
fn waited_since(at: &str) -> Option<std::time::Duration> {
    let at = chrono::DateTime::parse_from_rfc3339(at).ok()?;
    (chrono::Utc::now() - at.with_timezone(&chrono::Utc))
        .to_std()
        .ok()
}
