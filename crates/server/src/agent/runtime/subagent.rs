//! Subagents (docs/wire.md, Subagents): an agent-tool call runs as a task on the subagent.
//! The link from the parent's call to that task is stored before the task is created, so a
//! restart or another replica goes on waiting for it. When the subagent's task pauses, its held
//! calls join the parent's batch nested under the agent-tool call (each recorded as a held call
//! of the parent, so the parent's compare-and-set decides them once); once decided, the
//! decisions are forwarded to the subagent's task, whose own compare-and-set runs each call
//! once; the subagent's answer is the agent-tool call's result.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;
use signoff_protocol::hitl::keys::SUBAGENT;
use signoff_protocol::hitl::{
    self, ActionRequest, Decision, DecisionKind, ToolCall, ToolResult, Verdict, Via,
};
use signoff_protocol::{Message, Part, Role, StreamEvent, TaskState};

use crate::agent::model::ModelToolCall;
use crate::agent::subagents::{request_text, Subagent};
use crate::agent::tools::{error_result, text_result};
use crate::agent::view;
use crate::store::{
    task_state_text, CallRow, CallStatus, CallUpdate, ChildChat, Commit, Guard, NewCall, Store,
    SubagentLink, TaskRow,
};

use super::runner::TaskRun;
use super::transcript::chat_title;
use super::{AgentError, Decider, Result, Runtime};
use crate::agent::approvals::args_sha256;
use crate::agent::approvals::{Actor, Channel, Count, Decide};

/// Where an agent-tool call stands after a step of its subagent.
pub(super) enum SubagentStep {
    /// The subagent's task ended: its answer (or why it failed) is the call's result.
    Answer(Value),
    /// The subagent waits for decisions: these of its calls join the parent's batch (none when
    /// they already wait in it).
    Waiting(Vec<NestedCall>),
    /// The parent was canceled or the server is stopping.
    Stopped,
}

/// A subagent's held call, nested in the parent's batch.
pub(super) struct NestedCall {
    pub(super) request: ActionRequest,
    pub(super) record: NewCall,
    /// Its `function_call` part, announced in the parent's log before the pause.
    pub(super) announced: StreamEvent,
}

/// The subagent's results for nested calls that ran, to write into the parent's log.
pub(super) type Mirrored = Option<(Vec<StreamEvent>, Commit)>;

/// Agent-tool calls that run on subagents, and the tasks they start: what
/// [`Runtime::subagents`] lends the runner and the cancels.
pub(super) struct Subagents<'a> {
    pub(super) runtime: &'a Arc<Runtime>,
}

impl Runtime {
    /// The subagent calls of this runtime's tasks.
    pub(super) fn subagents(self: &Arc<Self>) -> Subagents<'_> {
        Subagents { runtime: self }
    }
}

impl Subagents<'_> {
    /// Runs one step of an agent-tool call: starts the subagent's task if the call has none yet,
    /// forwards the parent's decisions on its nested calls, and waits until the subagent ends
    /// or waits for decisions. Also returns the step that mirrors the results of nested calls
    /// the subagent ran since the last step.
    pub(super) async fn run_subagent(
        &self,
        run: &mut TaskRun<'_>,
        call: &ModelToolCall,
        subagent: &Subagent,
        run_args: &Value,
    ) -> Result<(SubagentStep, Mirrored)> {
        if subagent.remote.is_some() {
            return self
                .run_remote_subagent(run, call, subagent, run_args)
                .await;
        }
        let link = match self.subagent_link(&run.task_id, &call.id).await? {
            Some(link) => link,
            None => match self.start_subagent(run, call, subagent, run_args).await? {
                Ok(link) => link,
                Err(failure) => return Ok((SubagentStep::Answer(error_result(failure)), None)),
            },
        };
        loop {
            if run.cancel.is_cancelled() || self.runtime.shutdown.is_cancelled() {
                return Ok((SubagentStep::Stopped, None));
            }
            let Some(child) = self.runtime.store.task(&link.child_task_id).await? else {
                // Recorded with its chat, then stopped before the task was created: create it
                // now. Without its chat, the task was deleted with it: never made again.
                if self
                    .runtime
                    .store
                    .session(&link.child_context_id)
                    .await?
                    .is_none()
                {
                    let gone = format!(
                        "{} did not finish: its task {} was deleted with its chat",
                        link.agent, link.child_task_id
                    );
                    return Ok((SubagentStep::Answer(error_result(gone)), None));
                }
                self.create_local_child(run, subagent, &link, run_args)
                    .await?;
                continue;
            };
            if child.state.is_terminal() {
                let results = self.local_results(&link).await?;
                let mirrored = Self::mirror_results(run, call, &link, &results);
                let answer = self.local_answer(&link, child.state).await?;
                return Ok((SubagentStep::Answer(answer), mirrored));
            }
            if child.state == TaskState::InputRequired {
                if let Some(batch) = self
                    .runtime
                    .store
                    .pending_batch(&link.child_task_id)
                    .await?
                {
                    let requests = batch_requests(&batch);
                    match nested_state(run, call, &requests) {
                        Nested::New => {
                            let results = self.local_results(&link).await?;
                            let mirrored = Self::mirror_results(run, call, &link, &results);
                            let nested = nested_calls(run, call, subagent, &link, requests);
                            return Ok((SubagentStep::Waiting(nested), mirrored));
                        }
                        Nested::Decided(decision) => {
                            self.forward_local(run, &link, decision).await?;
                            continue;
                        }
                        Nested::Waiting => return Ok((SubagentStep::Waiting(Vec::new()), None)),
                    }
                }
            }
            let wait = self
                .runtime
                .log
                .wait_final(&link.child_task_id, child.last_seq);
            tokio::select! {
                _ = run.cancel.cancelled() => return Ok((SubagentStep::Stopped, None)),
                _ = self.runtime.shutdown.cancelled() => return Ok((SubagentStep::Stopped, None)),
                waited = wait => waited?,
            }
        }
    }

    /// The subagent task an agent-tool call of `task_id` started, if any.
    pub(super) async fn subagent_link(
        &self,
        task_id: &str,
        call_id: &str,
    ) -> Result<Option<SubagentLink>> {
        Ok(self
            .runtime
            .store
            .subagents_of(task_id)
            .await?
            .into_iter()
            .find(|link| link.parent_call_id == call_id))
    }

    /// Ends the subagent tasks of `tasks`, whose chat is being deleted: a subagent's task ends
    /// with its parent (canceled, in its own chat, which is kept), so none of its calls is left
    /// waiting with no batch of the parent's to decide it. An ended task's remote subagents
    /// ended with it; only a local one that still goes on is canceled.
    pub(super) async fn end_subagents_of(&self, user: &str, tasks: &[TaskRow]) {
        let owner = Decider::subject(user);
        for task in tasks {
            if !task.state.is_terminal() {
                self.cancel_subagents(&owner, &task.id).await;
                continue;
            }
            let links = match self.runtime.store.subagents_of(&task.id).await {
                Ok(links) => links,
                Err(err) => {
                    tracing::warn!(task = %task.id, error = %err, "could not read the subagent tasks to end");
                    continue;
                }
            };
            for link in links.iter().filter(|link| !link.remote) {
                match Box::pin(self.runtime.cancel_task(&owner, &link.child_task_id)).await {
                    Ok(_) | Err(AgentError::NotCancelable { .. } | AgentError::TaskNotFound(_)) => {
                    }
                    Err(err) => {
                        tracing::warn!(task = %task.id, child = %link.child_task_id, error = %err, "could not end the subagent task")
                    }
                }
            }
        }
    }

    /// Records and starts the subagent's task for `call`; `Err` with the call's failure text
    /// when it cannot be (too deep, no request, an unknown agent).
    async fn start_subagent(
        &self,
        run: &TaskRun<'_>,
        call: &ModelToolCall,
        subagent: &Subagent,
        run_args: &Value,
    ) -> Result<Result<SubagentLink, String>> {
        let depth = match self.subagent_depth(run, subagent, run_args).await? {
            Ok(depth) => depth,
            Err(failure) => return Ok(Err(failure)),
        };
        if self.runtime.agent_by_key(&subagent.agent).is_none() {
            return Ok(Err(format!(
                "{} is not an agent of this server",
                subagent.agent
            )));
        }
        let link = SubagentLink {
            parent_task_id: run.task_id.clone(),
            parent_call_id: call.id.clone(),
            agent: subagent.agent.clone(),
            child_task_id: view::new_id(),
            child_context_id: view::new_id(),
            remote: false,
            depth,
            created_at: crate::store::now(),
        };
        let chat = ChildChat {
            user_id: run.user_id.clone(),
            title: chat_title(request_text(run_args).unwrap_or_default()),
        };
        self.runtime
            .store
            .insert_subagent(link.clone(), Some(chat))
            .await?;
        self.create_local_child(run, subagent, &link, run_args)
            .await?;
        tracing::info!(
            task = %run.task_id,
            call = %call.id,
            subagent = %subagent.agent,
            depth,
            "agent-tool call started a subagent task"
        );
        Ok(Ok(link))
    }

    /// The depth a subagent task of `run` would have, or why the call may not start one (too
    /// deep, no request).
    pub(super) async fn subagent_depth(
        &self,
        run: &TaskRun<'_>,
        subagent: &Subagent,
        run_args: &Value,
    ) -> Result<Result<i64, String>> {
        let depth = self
            .runtime
            .store
            .subagent_parent(&run.task_id)
            .await?
            .map_or(0, |link| link.depth)
            + 1;
        let limit = self.runtime.limits.max_subagent_depth as i64;
        if depth > limit {
            return Ok(Err(format!(
                "{} was not asked: subagents may nest {limit} deep, and this call would be \
                 {depth} deep",
                subagent.agent
            )));
        }
        if request_text(run_args).is_none() {
            return Ok(Err(format!(
                "{} was not asked: the call needs a non-empty `request` text",
                subagent.agent
            )));
        }
        Ok(Ok(depth))
    }

    /// Creates the local subagent's task the link names, in a session of its own, for the
    /// parent task's owner.
    async fn create_local_child(
        &self,
        run: &TaskRun<'_>,
        subagent: &Subagent,
        link: &SubagentLink,
        run_args: &Value,
    ) -> Result<()> {
        let agent = self
            .runtime
            .agent_by_key(&subagent.agent)
            .ok_or_else(|| AgentError::AgentNotFound(subagent.agent.clone()))?;
        let text = request_text(run_args).unwrap_or_default();
        let mut message = Message::new(view::new_id(), Role::User, vec![Part::text(text)]);
        message.context_id = Some(link.child_context_id.clone());
        // The subagent acts for the same person, with the groups they sent the parent with.
        let requester = Decider {
            groups: run.groups.clone(),
            ..Decider::subject(run.user_id.clone())
        };
        self.runtime
            .send_as(
                &requester,
                &agent,
                message,
                link.child_task_id.clone(),
                None,
            )
            .await?
            .start_runner();
        Ok(())
    }

    /// A local subagent's answer once its task ended: its text, or why it did not finish.
    async fn local_answer(&self, link: &SubagentLink, state: TaskState) -> Result<Value> {
        let (task, _) = self.runtime.snapshot(&link.child_task_id, None).await?;
        let said = task
            .status
            .message
            .as_ref()
            .map(Message::text)
            .filter(|text| !text.trim().is_empty());
        let answer = said.unwrap_or_else(|| {
            task.artifacts
                .iter()
                .flat_map(|artifact| artifact.parts.iter().filter_map(Part::as_text))
                .collect::<Vec<_>>()
                .join("")
        });
        Ok(finished_answer(&link.agent, state, &answer))
    }

    /// Forwards the parent's decision on a nested batch to the local subagent's task. A batch
    /// decided meanwhile (a restart after forwarding) is left as it is: its compare-and-set
    /// let one decision through.
    async fn forward_local(
        &self,
        run: &TaskRun<'_>,
        link: &SubagentLink,
        decision: Decision,
    ) -> Result<()> {
        match self
            .runtime
            .decide(
                &Actor::of(&Decider::subject(run.user_id.clone()), Channel::Rest),
                &link.child_task_id,
                Decide::of(decision),
                Count::Counted,
            )
            .await
        {
            Ok(_) => Ok(()),
            Err(AgentError::NotPaused(_)) => Ok(()),
            Err(err) => {
                // The subagent refused what the parent accepted: nothing of its batch runs.
                tracing::warn!(task = %run.task_id, child = %link.child_task_id, error = %err, "a forwarded decision was refused");
                let owner = Decider::subject(run.user_id.clone());
                let _ = Box::pin(self.runtime.cancel_task(&owner, &link.child_task_id)).await;
                Err(err)
            }
        }
    }

    /// The results of nested calls of `call` that the subagent ran, as the parent's step: each
    /// approved nested call whose call in the subagent's task finished gets that result.
    pub(super) fn mirror_results(
        run: &mut TaskRun<'_>,
        call: &ModelToolCall,
        link: &SubagentLink,
        child_calls: &BTreeMap<String, Value>,
    ) -> Mirrored {
        let prefix = Via::nested_id(&call.id, "");
        let waiting: Vec<CallRow> = run
            .calls
            .values()
            .filter(|record| {
                record.call_id.starts_with(&prefix) && record.status == CallStatus::Approved
            })
            .cloned()
            .collect();
        if waiting.is_empty() {
            return None;
        }

        let mut events = Vec::new();
        let mut commit = Commit {
            guard: Some(Guard::NotTerminal),
            ..Commit::default()
        };
        for record in waiting {
            let child_id = &record.call_id[prefix.len()..];
            let Some(result) = child_calls.get(child_id) else {
                continue;
            };
            let run_args = record.run_args.clone().unwrap_or(record.args.clone());
            let via = nested_via(call, link, child_id);
            let part = ToolResult {
                id: record.call_id.clone(),
                name: record.name.clone(),
                response: result.clone(),
            }
            .to_part()
            .with_metadata(SUBAGENT, via.to_value());
            let message = view::agent_message(&run.task_id, &run.context_id, vec![part]);
            events.push(view::status_event(
                &run.task_id,
                &run.context_id,
                TaskState::Working,
                Some(message),
                None,
            ));
            commit.call_updates.push(CallUpdate::Started {
                call_id: record.call_id.clone(),
                run_args_sha256: args_sha256(&run_args),
                run_args,
            });
            commit.call_updates.push(CallUpdate::Finished {
                call_id: record.call_id.clone(),
                result: result.clone(),
            });
            if let Some(mine) = run.calls.get_mut(&record.call_id) {
                mine.status = CallStatus::Finished;
                mine.result = Some(result.clone());
            }
        }
        (!events.is_empty()).then_some((events, commit))
    }

    /// The results of the calls that finished in a local subagent's task, by call id.
    async fn local_results(&self, link: &SubagentLink) -> Result<BTreeMap<String, Value>> {
        Ok(self
            .runtime
            .store
            .calls(&link.child_task_id)
            .await?
            .into_iter()
            .filter_map(|call| Some((call.call_id, call.result?)))
            .collect())
    }

    /// Cancels the subagent tasks of a canceled task that are still going (each cancel goes on
    /// down to theirs), each audited as `who`'s, as the parent's was.
    pub(super) async fn cancel_subagents(&self, who: &Decider, task_id: &str) {
        let links = match self.runtime.store.subagents_of(task_id).await {
            Ok(links) => links,
            Err(err) => {
                tracing::warn!(task = %task_id, error = %err, "could not read the subagent tasks to cancel");
                return;
            }
        };
        for link in links {
            // Boxed: a cancel comes back here for the child's own subagents.
            let outcome = if link.remote {
                self.cancel_remote(&who.subject, &link).await
            } else {
                match Box::pin(self.runtime.cancel_task(who, &link.child_task_id)).await {
                    Ok(_) | Err(AgentError::NotCancelable { .. }) => Ok(()),
                    Err(err) => Err(err.to_string()),
                }
            };
            match outcome {
                Ok(()) => {
                    tracing::info!(task = %task_id, child = %link.child_task_id, "canceled the subagent task")
                }
                Err(err) => {
                    tracing::warn!(task = %task_id, child = %link.child_task_id, error = %err, "could not cancel the subagent task")
                }
            }
        }
    }
}

/// The link to the parent task that drives `task_id`, when `task_id` is a local subagent's
/// task whose parent has not ended. Such a task takes decisions and cancels only from its
/// parent: its held calls wait in the parent's batch (docs/wire.md, Subagents), and a
/// decision of its own would run them behind that batch's back.
pub(super) async fn driving_parent(store: &Store, task_id: &str) -> Result<Option<SubagentLink>> {
    let Some(link) = store.subagent_parent(task_id).await? else {
        return Ok(None);
    };
    let parent_going = store
        .task(&link.parent_task_id)
        .await?
        .is_some_and(|parent| !parent.state.is_terminal());
    Ok(parent_going.then_some(link))
}

/// Refuses to delete chat `context_id` while it holds `task_id` as the subagent task of a
/// parent that goes on: the parent's batch would decide calls of a task that is gone.
pub(super) async fn refuse_driven_chat(
    store: &Store,
    context_id: &str,
    task_id: &str,
) -> Result<()> {
    let Some(link) = driving_parent(store, task_id).await? else {
        return Ok(());
    };
    let parent_chat = store
        .task(&link.parent_task_id)
        .await?
        .map(|row| row.context_id)
        .unwrap_or_default();
    Err(AgentError::ChatInUse(format!(
        "chat {context_id} holds task {task_id}, the subagent task of task {} (its call {}) \
         in chat {parent_chat}, which has not ended: its calls wait in that task's batch. \
         Decide or cancel task {}, or delete chat {parent_chat}, first",
        link.parent_task_id, link.parent_call_id, link.parent_task_id
    )))
}

pub(super) use crate::agent::approvals::batch_requests;

/// The agent-tool call's result for a subagent task that ended in `state` with `answer`.
pub(super) fn finished_answer(agent: &str, state: TaskState, answer: &str) -> Value {
    if state == TaskState::Completed {
        if answer.trim().is_empty() {
            return text_result(format!("{agent} finished without an answer."));
        }
        return text_result(answer);
    }
    let why = if answer.trim().is_empty() {
        "no reason given"
    } else {
        answer.trim()
    };
    error_result(format!("{agent} ended {}: {why}", task_state_text(state)))
}

/// Where a subagent's pending batch stands in the parent.
pub(super) enum Nested {
    /// Not in the parent's batch yet.
    New,
    /// The parent decided every call of it: the decision to forward.
    Decided(Decision),
    /// It waits in the parent's pending batch.
    Waiting,
}

/// Where the subagent's pending `requests` stand in the parent's records.
pub(super) fn nested_state(
    run: &TaskRun<'_>,
    call: &ModelToolCall,
    requests: &[ActionRequest],
) -> Nested {
    let records: Vec<(&ActionRequest, Option<&CallRow>)> = requests
        .iter()
        .map(|request| {
            let id = Via::nested_id(&call.id, &request.id);
            (request, run.calls.get(&id))
        })
        .collect();
    if records.iter().all(|(_, record)| record.is_none()) {
        return Nested::New;
    }
    let mut decisions = BTreeMap::new();
    let mut rejection_reasons = BTreeMap::new();
    let mut modified_args = BTreeMap::new();
    let mut answers = Vec::new();
    for (request, record) in records {
        let Some(record) = record else {
            return Nested::Waiting;
        };
        match record.status {
            CallStatus::Approved | CallStatus::Started | CallStatus::Finished => {
                decisions.insert(request.id.clone(), Verdict::Approve);
                let run_args = record.run_args.clone().unwrap_or(record.args.clone());
                match hitl::question::answers_from_args(&run_args) {
                    Some(given) => answers.extend(given),
                    None if run_args != record.args => {
                        modified_args.insert(request.id.clone(), run_args);
                    }
                    None => {}
                }
            }
            CallStatus::Rejected | CallStatus::Expired | CallStatus::Canceled => {
                decisions.insert(request.id.clone(), Verdict::Deny);
                if let Some(reason) = &record.reason {
                    if record.status == CallStatus::Rejected {
                        rejection_reasons.insert(request.id.clone(), reason.clone());
                    }
                }
            }
            CallStatus::Held | CallStatus::Auto | CallStatus::Denied => return Nested::Waiting,
        }
    }
    Nested::Decided(Decision {
        kind: DecisionKind::Batch {
            decisions,
            rejection_reasons,
        },
        modified_args,
        answers,
    })
}

/// How a call of the subagent's task is nested under `call`.
fn nested_via(call: &ModelToolCall, link: &SubagentLink, child_call_id: &str) -> Via {
    Via {
        agent: link.agent.clone(),
        asker: link.agent.clone(),
        call_id: call.id.clone(),
        task_id: link.child_task_id.clone(),
        subagent_call_id: child_call_id.to_owned(),
    }
}

/// The subagent's pending `requests` as calls of the parent's batch: ids nested under `call`,
/// each saying through which call and for which task it asks.
pub(super) fn nested_calls(
    run: &TaskRun<'_>,
    call: &ModelToolCall,
    subagent: &Subagent,
    link: &SubagentLink,
    requests: Vec<ActionRequest>,
) -> Vec<NestedCall> {
    requests
        .into_iter()
        .map(|request| {
            let mut via = nested_via(call, link, &request.id);
            // A call nested deeper keeps who asks; the subagent is whom it asks through.
            if let Some(inner) = &request.via {
                via.asker = inner.asker.clone();
            }
            let id = Via::nested_id(&call.id, &request.id);
            let part = ToolCall {
                id: id.clone(),
                name: request.name.clone(),
                args: request.args.clone(),
            }
            .to_part()
            .with_metadata(SUBAGENT, via.to_value());
            let message = view::agent_message(&run.task_id, &run.context_id, vec![part]);
            let announced = view::status_event(
                &run.task_id,
                &run.context_id,
                TaskState::Working,
                Some(message),
                None,
            );
            let record = NewCall {
                call_id: id.clone(),
                name: request.name.clone(),
                source: request
                    .server
                    .clone()
                    .unwrap_or_else(|| subagent.agent.clone()),
                args: request.args.clone(),
                args_sha256: args_sha256(&request.args),
                held: true,
                auto: None,
                why: None,
            };
            let request = ActionRequest {
                id,
                via: Some(via),
                approval_id: None,
                server: Some(request.server.unwrap_or_else(|| subagent.agent.clone())),
                ..request
            };
            NestedCall {
                request,
                record,
                announced,
            }
        })
        .collect()
}
