//! Remote subagents (docs/wire.md, Subagents): an agent-tool call of a remote A2A agent runs
//! as that agent's task, in the A2A version its card offers, through the remote's one client
//! (`agent::remote`, shared with the relay). Its pause is read in whichever
//! dialect it speaks (native, kagent's confirmation calls, kagent's HITL extension) and nested
//! in the parent's batch as a local subagent's is; the parent's decisions go back as a message
//! in that dialect. The link is stored once the remote agent has named its task.

use std::collections::{BTreeMap, HashSet};
use std::ops::ControlFlow;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use signoff_protocol::hitl::{ApprovalInterrupt, ToolResult, SIGNOFF_WHY};
use signoff_protocol::{Message, Part, Role, StreamEvent, Task, TaskState};

use crate::agent::model::ModelToolCall;
use crate::agent::remote::RemoteClient;
use crate::agent::subagents::{request_text, Subagent};
use crate::agent::tools::{error_result, text_result};
use crate::agent::view;
use crate::store::SubagentLink;

use super::runner::TaskRun;
use super::subagent::{
    finished_answer, nested_calls, nested_state, Mirrored, Nested, SubagentStep, Subagents,
};
use super::Result;

/// How often a working remote task is looked at again (a remote agent may not offer
/// `tasks/resubscribe`, kagent's among them).
const REMOTE_POLL: Duration = Duration::from_millis(500);

/// What a step of following a remote subagent ends with: the call's step, and the results it
/// mirrors.
type Outcome = (SubagentStep, Mirrored);

/// A remote subagent task this runner follows.
struct Followed {
    client: Arc<RemoteClient>,
    link: SubagentLink,
    /// What the last message's stream showed (results kagent streams but may not keep).
    seen: Vec<StreamEvent>,
    /// The nested calls this runner forwarded a decision on: a remote agent that still shows
    /// the same pause a moment later is not sent it twice.
    forwarded: HashSet<String>,
}

/// When the runner looks at a remote task that has not ended again.
enum NextLook {
    /// After a moment.
    AfterPause,
    /// At once (a decision was just sent).
    Now,
}

impl Subagents<'_> {
    /// [`Runtime::run_subagent`] for a remote agent.
    pub(super) async fn run_remote_subagent(
        &self,
        run: &mut TaskRun<'_>,
        call: &ModelToolCall,
        subagent: &Subagent,
        run_args: &Value,
    ) -> Result<Outcome> {
        let Some(spec) = &subagent.remote else {
            return Ok(could_not_ask(
                subagent,
                "it is not a remote agent".to_owned(),
            ));
        };
        let client = match self.runtime.remotes.client(&subagent.agent, spec) {
            Ok(client) => client,
            Err(why) => return Ok(could_not_ask(subagent, why.to_string())),
        };
        let (link, seen) = match self
            .remote_link(run, call, subagent, run_args, &client)
            .await?
        {
            ControlFlow::Continue(started) => started,
            ControlFlow::Break(outcome) => return Ok(outcome),
        };
        let mut followed = Followed {
            client,
            link,
            seen,
            forwarded: HashSet::new(),
        };
        loop {
            if run.cancel.is_cancelled() || self.runtime.shutdown.is_cancelled() {
                return Ok((SubagentStep::Stopped, None));
            }
            let task = tokio::select! {
                _ = run.cancel.cancelled() => return Ok((SubagentStep::Stopped, None)),
                task = followed.client.get_task(&run.user_id, &followed.link.child_task_id, followed.client.idle_timeout()) => task,
            };
            let task = match task {
                Ok(task) => task,
                Err(why) => return Ok(could_not_ask(subagent, why)),
            };
            let results = remote_results(&task, &followed.seen);
            let state = task.status.state;
            if state.is_terminal() {
                let link = &followed.link;
                let mirrored = Self::mirror_results(run, call, link, &results);
                let answer =
                    finished_answer(&link.agent, state, &remote_answer(&task, &followed.seen));
                return Ok((SubagentStep::Answer(answer), mirrored));
            }
            if state == TaskState::InputRequired {
                match self
                    .on_remote_pause(run, call, subagent, &mut followed, &task, &results)
                    .await?
                {
                    ControlFlow::Break(outcome) => return Ok(outcome),
                    ControlFlow::Continue(NextLook::Now) => continue,
                    ControlFlow::Continue(NextLook::AfterPause) => {}
                }
            }
            self.pause_between_looks(run).await;
        }
    }

    /// The call's link to its remote task: the stored one, or else a new task started on the
    /// remote agent with the call's request (stored once the remote agent has named its task,
    /// with the events its stream showed). Breaks with the call's step when the call goes no
    /// further: too deep, canceled, not reachable, or answered with a message.
    async fn remote_link(
        &self,
        run: &TaskRun<'_>,
        call: &ModelToolCall,
        subagent: &Subagent,
        run_args: &Value,
        client: &RemoteClient,
    ) -> Result<ControlFlow<Outcome, (SubagentLink, Vec<StreamEvent>)>> {
        if let Some(link) = self.subagent_link(&run.task_id, &call.id).await? {
            return Ok(ControlFlow::Continue((link, Vec::new())));
        }
        let depth = match self.subagent_depth(run, subagent, run_args).await? {
            Ok(depth) => depth,
            Err(why) => {
                return Ok(ControlFlow::Break((
                    SubagentStep::Answer(error_result(why)),
                    None,
                )))
            }
        };
        let text = request_text(run_args).unwrap_or_default();
        let context_id = view::new_id();
        let mut message = Message::new(view::new_id(), Role::User, vec![Part::text(text)]);
        message.context_id = Some(context_id.clone());
        let events = tokio::select! {
            _ = run.cancel.cancelled() => return Ok(ControlFlow::Break((SubagentStep::Stopped, None))),
            events = client.stream(&run.user_id, &message) => events,
        };
        let events = match events {
            Ok(events) => events,
            Err(why) => return Ok(ControlFlow::Break(could_not_ask(subagent, why))),
        };
        let Some(task_id) = events.iter().find_map(|event| event.task_id()) else {
            // Answered with a message: no task to follow.
            let answer = message_text(&events);
            let answer = finished_answer(&subagent.agent, TaskState::Completed, &answer);
            return Ok(ControlFlow::Break((SubagentStep::Answer(answer), None)));
        };
        let link = SubagentLink {
            parent_task_id: run.task_id.clone(),
            parent_call_id: call.id.clone(),
            agent: subagent.agent.clone(),
            child_task_id: task_id.to_owned(),
            child_context_id: context_id,
            remote: true,
            depth,
            created_at: crate::store::now(),
        };
        self.runtime
            .store
            .insert_subagent(link.clone(), None)
            .await?;
        tracing::info!(task = %run.task_id, call = %call.id, subagent = %subagent.agent, remote_task = %task_id, depth, "agent-tool call started a remote subagent task");
        Ok(ControlFlow::Continue((link, events)))
    }

    /// A remote task that waits for input: a pause asking for approvals nests its calls in the
    /// parent's batch, or forwards the parent's decision on them; a question in words is the
    /// call's answer. A pause whose decision was already forwarded is looked at again later.
    async fn on_remote_pause(
        &self,
        run: &mut TaskRun<'_>,
        call: &ModelToolCall,
        subagent: &Subagent,
        followed: &mut Followed,
        task: &Task,
        results: &BTreeMap<String, Value>,
    ) -> Result<ControlFlow<Outcome, NextLook>> {
        let link = &followed.link;
        let Some(interrupt) = pending_interrupt(task, &followed.seen) else {
            // It asks in words, not for approvals: its question is the answer.
            let mirrored = Self::mirror_results(run, call, link, results);
            let asks = task.status.message.as_ref().map(Message::text);
            let text = format!(
                "{} needs more input: {}",
                link.agent,
                asks.unwrap_or_default()
            );
            return Ok(ControlFlow::Break((
                SubagentStep::Answer(text_result(text)),
                mirrored,
            )));
        };
        let ids: HashSet<String> = interrupt.ids().map(str::to_owned).collect();
        if !ids.is_disjoint(&followed.forwarded) {
            return Ok(ControlFlow::Continue(NextLook::AfterPause));
        }
        let decision = match nested_state(run, call, &interrupt.action_requests) {
            Nested::New => {
                let mirrored = Self::mirror_results(run, call, link, results);
                // What decided a call (and so who approves it) is this server's to say: a
                // peer's `signoff_why` would route its calls to whoever it names.
                let mut requests = interrupt.action_requests.clone();
                for request in &mut requests {
                    request.metadata.remove(SIGNOFF_WHY);
                }
                let nested = nested_calls(run, call, subagent, link, requests);
                return Ok(ControlFlow::Break((
                    SubagentStep::Waiting(nested),
                    mirrored,
                )));
            }
            Nested::Waiting => {
                return Ok(ControlFlow::Break((
                    SubagentStep::Waiting(Vec::new()),
                    None,
                )))
            }
            Nested::Decided(decision) => decision,
        };
        let message = decision.to_message(
            interrupt.dialect,
            &interrupt.action_requests,
            view::new_id(),
        );
        let mut message = match message {
            Ok(message) => message,
            Err(err) => return Ok(ControlFlow::Break(could_not_ask(subagent, err.to_string()))),
        };
        message.task_id = Some(link.child_task_id.clone());
        message.context_id = Some(task.context_id.clone());
        followed.forwarded.extend(ids);
        let events = tokio::select! {
            _ = run.cancel.cancelled() => return Ok(ControlFlow::Break((SubagentStep::Stopped, None))),
            events = followed.client.stream(&run.user_id, &message) => events,
        };
        match events {
            Ok(events) => followed.seen.extend(events),
            Err(why) => return Ok(ControlFlow::Break(could_not_ask(subagent, why))),
        }
        Ok(ControlFlow::Continue(NextLook::Now))
    }

    /// Waits a moment before looking at a remote task again (or until a cancel).
    async fn pause_between_looks(&self, run: &TaskRun<'_>) {
        tokio::select! {
            _ = run.cancel.cancelled() => {}
            _ = self.runtime.shutdown.cancelled() => {}
            _ = tokio::time::sleep(REMOTE_POLL) => {}
        }
    }

    /// Cancels a remote subagent's task.
    pub(super) async fn cancel_remote(
        &self,
        user: &str,
        link: &SubagentLink,
    ) -> std::result::Result<(), String> {
        let spec = self
            .agent_subagent_spec(&link.agent)
            .ok_or_else(|| format!("{} is no longer a remote agent of this server", link.agent))?;
        self.runtime
            .remotes
            .client(&link.agent, &spec)
            .map_err(|err| err.to_string())?
            .cancel(user, &link.child_task_id)
            .await
    }

    /// The remote spec of `agent`, as any agent of this server lists it.
    fn agent_subagent_spec(&self, agent: &str) -> Option<crate::agent::config::RemoteSpec> {
        self.runtime.agents.iter().find_map(|parent| {
            parent
                .subagents
                .by_agent(agent)
                .and_then(|subagent| subagent.remote.clone())
        })
    }
}

/// The call's step when the remote agent could not be asked, and why.
fn could_not_ask(subagent: &Subagent, why: String) -> Outcome {
    let text = format!("{} could not be asked: {why}", subagent.agent);
    (SubagentStep::Answer(error_result(text)), None)
}

/// The approvals a remote task waits for: read from its status, else from the last status
/// the last message's stream showed with one.
fn pending_interrupt(task: &Task, seen: &[StreamEvent]) -> Option<ApprovalInterrupt> {
    ApprovalInterrupt::from_status(&task.status).or_else(|| {
        seen.iter().rev().find_map(|event| match event {
            StreamEvent::StatusUpdate(update) => ApprovalInterrupt::from_status(&update.status),
            StreamEvent::Task(task) => ApprovalInterrupt::from_status(&task.status),
            StreamEvent::Message(_) | StreamEvent::ArtifactUpdate(_) => None,
        })
    })
}

/// Every tool result the remote task's history and the last stream hold, by call id.
fn remote_results(task: &Task, seen: &[StreamEvent]) -> BTreeMap<String, Value> {
    let from_history = task.history.iter();
    let from_stream = seen.iter().filter_map(|event| match event {
        StreamEvent::StatusUpdate(update) => update.status.message.as_ref(),
        StreamEvent::Message(message) => Some(message),
        StreamEvent::Task(_) | StreamEvent::ArtifactUpdate(_) => None,
    });
    from_history
        .chain(from_stream)
        .flat_map(|message| message.parts.iter())
        .filter_map(ToolResult::from_part)
        .map(|result| (result.id, result.response))
        .collect()
}

/// A remote task's answer: its status message's text, else its artifacts', else the streamed
/// artifacts'.
fn remote_answer(task: &Task, seen: &[StreamEvent]) -> String {
    if let Some(text) = task
        .status
        .message
        .as_ref()
        .map(Message::text)
        .filter(|text| !text.trim().is_empty())
    {
        return text;
    }
    let artifacts: String = task
        .artifacts
        .iter()
        .flat_map(|artifact| artifact.parts.iter().filter_map(Part::as_text))
        .collect();
    if !artifacts.trim().is_empty() {
        return artifacts;
    }
    seen.iter()
        .filter_map(|event| match event {
            StreamEvent::ArtifactUpdate(update) => Some(update.artifact.parts.iter()),
            StreamEvent::Task(_) | StreamEvent::Message(_) | StreamEvent::StatusUpdate(_) => None,
        })
        .flatten()
        .filter_map(Part::as_text)
        .collect()
}

/// The text of the message answers among `events`.
fn message_text(events: &[StreamEvent]) -> String {
    events
        .iter()
        .filter_map(|event| match event {
            StreamEvent::Message(message) => Some(message.text()),
            StreamEvent::Task(_)
            | StreamEvent::StatusUpdate(_)
            | StreamEvent::ArtifactUpdate(_) => None,
        })
        .collect()
}
