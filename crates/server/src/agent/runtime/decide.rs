//! The decision core. A person's decision from any channel (REST, an A2A DataPart, kagent's
//! extension, text, a decision link) is read into an `approvals::Decide` and comes, by way of
//! [`Runtime::apply`], to ONE function, [`Runtime::decide`]: its checks and plan run inside the
//! store's write, which reads the task and its pending batch on the writer's connection, so the
//! checks and the compare-and-set see the same moment. Under it, [`Runtime::commit_decision`]
//! commits every planned batch write (a decision, a cancel, an expiry, a relayed chat's record
//! of the remote's), counts it and announces it, in that order. Only the winner of the
//! compare-and-set runs the calls.

use std::sync::Arc;

use signoff_protocol::hitl::{self, Decision, DecisionError, DecisionSource, Dialect};
use signoff_protocol::rest::CallQuorum;
use signoff_protocol::{Message, Role, TaskState};

use crate::agent::notify::payload::{self, About, NoticeApprovals};
use crate::agent::notify::{Audience, Notifications};
use crate::agent::view;
use crate::store::{
    task_state_text, BatchRow, BatchState, Channel, DecisionWrite, NewEvent, NewNotification,
    NotificationKind, SubagentLink, TaskRow,
};

use super::log::Committed;
use super::routing;
use super::runner::RunnerStart;
use super::{Accepted, Agent, AgentError, LoggedEvent, Result, Runtime};
use crate::agent::approvals::batch_requests;
use crate::agent::approvals::{self, Actor, Command, Decide, Decider};
pub(super) use crate::agent::approvals::{person_decision, Count, PlannedDecision};

/// A decision written: by whom, and its events as logged.
pub(super) struct Applied {
    pub by: Actor,
    /// Set when it only recorded approvals and the batch still waits (`quorum`).
    pub quorum: Option<Vec<CallQuorum>>,
    pub logged: Vec<LoggedEvent>,
}

/// What a message to an existing task turns into.
enum Continuation {
    /// A decision, read through `channel` (a2a, or text).
    Decide {
        channel: Channel,
        decide: Box<Decide>,
    },
    /// Text for a working task, taken before its next model turn; its log ended at `last_seq`.
    Queued {
        message: Box<Message>,
        last_seq: i64,
    },
}

/// The refusal of text to a paused task that says neither approve nor reject.
const NO_DECISION_IN_TEXT: &str = "the task waits for a decision on its tool calls: say approve \
                                   or reject (or send a decision DataPart)";

impl Runtime {
    /// THE commit of a planned batch write (a decision, a cancel, an expiry, a relayed record). `plan` sees the task and its pending batch inside the
    /// store's write (it may run twice: it must only compute) and returns the decision to
    /// write, if any, and what its caller needs back. Once the write has committed, the
    /// decision is counted (metrics), then announced (the task's followers; the store wakes the
    /// approvals streams), in that order, so whoever sees it sees it counted. `None` when the
    /// plan wrote nothing. A store conflict comes back with its reason.
    pub(super) async fn commit_decision<X, P>(
        &self,
        task_id: &str,
        mut plan: P,
    ) -> Result<(Option<Applied>, X)>
    where
        X: Send + 'static,
        P: FnMut(Option<&TaskRow>, Option<&BatchRow>) -> Result<(Option<PlannedDecision>, X)>
            + Send
            + 'static,
    {
        type Back<X> = (Option<(PlannedDecision, Vec<NewEvent>)>, X);
        let notifications = self.notifies().then(|| self.notifications.clone());
        // The agents' settings, to tell whom a batch is routed to (channels routed by group).
        let agents = match self.notifications.needs_audience() {
            true => self.agents().to_vec(),
            false => Vec::new(),
        };
        let notifies = notifications.is_some();
        // Who heard of the waiting batch, read before the write (which cannot wait on another
        // read): its decision reaches them as its pause did.
        let waiting = match notifies {
            true => self.directory().waiting_audience(task_id).await,
            false => None,
        };
        let pushes = self.pushes().on();
        let outcome: Result<(Option<i64>, Back<X>)> = self
            .store
            .decide_planned(task_id, move |row, batch| {
                let (planned, back) = plan(row, batch)?;
                let Some(planned) = planned else {
                    return Ok((None, (None, back)));
                };
                let stored: Vec<NewEvent> = planned.events.iter().map(Self::encode).collect();
                // An approval short of its quorum leaves the batch waiting: no push, and its
                // channels hear only that it was counted.
                let decided = planned.quorum.is_none();
                let notifications = match (&notifications, row) {
                    (Some(notifications), Some(row)) => {
                        let requests = batch
                            .and_then(|batch| batch.requests.as_array())
                            .map_or(&[][..], Vec::as_slice);
                        let audience = match &waiting {
                            Some((batch_id, audience))
                                if batch.is_some_and(|batch| batch.id == *batch_id) =>
                            {
                                audience.clone()
                            }
                            // Another batch than the one read before (a race): its approvers,
                            // without the directory's members.
                            Some(_) | None => routing::audience(&agents, &row.agent, requests),
                        };
                        match &planned.quorum {
                            None => decision_notifications(notifications, row, &audience, &planned),
                            Some(quorum) => {
                                counted_notifications(notifications, row, &audience, batch, quorum)
                            }
                        }
                    }
                    _ => Vec::new(),
                };
                let write = DecisionWrite {
                    batch_id: planned.batch_id,
                    user_id: planned.by.decider.subject.clone(),
                    decider_auth: planned.by.auth.map(|auth| auth.as_str().to_owned()),
                    channel: planned.by.channel,
                    decision: planned.decision.to_value(),
                    summary: planned.summary.clone(),
                    verdicts: planned.verdicts.clone(),
                    batch_state: planned.batch_state,
                    task_state: planned.task_state,
                    events: stored.clone(),
                    votes: planned.votes.clone(),
                    uses_link: planned.uses_link.clone(),
                    notifications,
                    push: decided && pushes && super::push::pushed_state(planned.task_state),
                };
                Ok((Some(write), (Some((planned, stored)), back)))
            })
            .await?;
        let (seq, (planned, back)) = outcome?;
        let (Some(seq), Some((planned, stored))) = (seq, planned) else {
            return Ok((None, back));
        };
        let PlannedDecision {
            by,
            summary,
            verdicts,
            task_state,
            events,
            paused_at,
            quorum,
            votes,
            ..
        } = planned;
        // One observation per person and group, however many calls they decided.
        if let Some(waited) = paused_at.as_deref().and_then(waited_since) {
            let entries: Vec<&str> = votes
                .iter()
                .flat_map(|vote| vote.eligible_by.iter().map(String::as_str))
                .collect();
            self.metrics.voted(entries, waited);
        }
        if quorum.is_none() {
            self.metrics.decided(
                by.channel,
                verdicts.iter().map(|verdict| verdict.verdict),
                paused_at.as_deref().and_then(waited_since),
            );
        }
        let logged = LoggedEvent::numbered(seq, events, &stored);
        // An approval short of its quorum decided nothing: no state counted, no push (its
        // channels hear only that it was counted).
        let decided = quorum.is_none();
        self.after_commit(Committed {
            task_id,
            logged: Some(logged.clone()),
            entered: decided.then_some(task_state),
            // A counted approval may have written `batch.counted` rows.
            outbox: notifies || (decided && pushes && super::push::pushed_state(task_state)),
        });
        match &quorum {
            None => {
                tracing::info!(task = %task_id, user = %by.decider.subject, channel = by.channel.as_str(), decision = %summary, "batch decided")
            }
            Some(_) => {
                tracing::info!(task = %task_id, user = %by.decider.subject, channel = by.channel.as_str(), "approval recorded; the batch waits for its quorum")
            }
        }
        Ok((Some(Applied { by, quorum, logged }), back))
    }

    /// A message to task `task_id` of `agent`: text for it while it works, or the A2A channel's
    /// decision on its pending batch, read from the message (a DataPart, kagent's extension
    /// response, or text) against the batch it was read with and written by way of
    /// [`Runtime::apply`]. Its span (under the message's) is the parent of the resumed runner's.
    #[tracing::instrument(name = "message", skip_all, fields(task.id = task_id))]
    pub(super) async fn continue_task(
        self: &Arc<Self>,
        who: &Decider,
        agent: &Arc<Agent>,
        task_id: &str,
        message: Message,
    ) -> Result<Accepted> {
        let read = self.read_message(who, agent, task_id, message).await;
        match self.or_expired(task_id, Some(who), read).await? {
            Continuation::Queued { message, last_seq } => {
                self.queue_message(task_id, last_seq, *message).await
            }
            Continuation::Decide { channel, decide } => {
                let actor = Actor::of(who, channel);
                let outcome = self.apply(task_id, &actor, Command::Decide(decide)).await?;
                Ok(outcome.into_decided()?.0)
            }
        }
    }

    /// What a message to an existing task is, as the task and its pending batch stand now
    /// (the decision's write checks again that the batch it was read against still waits).
    async fn read_message(
        &self,
        who: &Decider,
        agent: &Arc<Agent>,
        task_id: &str,
        mut message: Message,
    ) -> Result<Continuation> {
        let id = task_id;
        let row = self.store.task(task_id).await?;
        let mut batch = self.store.pending_batch(task_id).await?;
        // Someone a hand-over names may read the batch (and decide it, if the approvers let
        // them): the plain read leaves its hand-overs out.
        if let Some(batch) = batch.as_mut() {
            let steps = self.store.batch_steps(task_id).await?;
            batch.handed_to = crate::store::handed_to(&steps, batch.id);
        }
        let voted = self.store.voted_on(task_id, &who.subject).await?;
        // Over A2A, another agent's task does not exist, nor a task its sender may not see: an
        // approver of its batch may decide it, and only that.
        let row = row
            .filter(|row| row.agent == agent.key())
            .filter(|row| self.sees_for_decision(row, batch.as_ref(), who, voted))
            .ok_or_else(|| AgentError::TaskNotFound(id.to_owned()))?;
        let owner = row.user_id == who.subject;
        if let Some(context_id) = &message.context_id {
            if *context_id != row.context_id {
                return Err(AgentError::InvalidParams(format!(
                    "params.message.contextId: task {id} belongs to context {}, not {context_id}",
                    row.context_id
                )));
            }
        }
        if let Some(link) = super::subagent::driving_parent(&self.store, task_id).await? {
            return Err(driven_by_parent(id, &link));
        }
        let state = row.state;
        if state.is_terminal() {
            return Err(AgentError::Terminal(format!(
                "task {id} is {} and takes no more messages; send a message without taskId to start a new task",
                task_state_text(state)
            )));
        }
        message.context_id = Some(row.context_id.clone());
        let requests = batch.as_ref().map(batch_requests).unwrap_or_default();
        // A working task takes text before its next model turn; a decision (a DataPart, an
        // extension response) is late (another decision won a moment ago) and refused, so a
        // batch is decided once.
        if owner
            && matches!(state, TaskState::Submitted | TaskState::Working)
            && Decision::from_message_parts(&message, &requests)?.is_none()
        {
            let last_seq = row.last_seq;
            let message = Box::new(message);
            return Ok(Continuation::Queued { message, last_seq });
        }
        let batch = match (state, batch) {
            (TaskState::InputRequired, Some(batch)) => batch,
            _ => {
                return Err(AgentError::NotPaused(format!(
                    "task {id} is {} and is not waiting for a decision",
                    task_state_text(state)
                )))
            }
        };
        // A paused task reads a decision from a DataPart or an extension response, else from
        // the text; any other text rejects the pending calls with the text as the reason, which
        // the model reads. Someone else's words are a decision only when they say approve or
        // reject: any other text is a message to the model, which only the requester sends.
        let read = match owner {
            true => Decision::from_message_on(&message, &requests),
            false => Decision::from_message_parts(&message, &requests)
                .transpose()
                .or_else(|| {
                    Decision::from_text(&message.text())
                        .map(|decision| Ok((decision, DecisionSource::Text)))
                })
                .unwrap_or(Err(DecisionError::NoDecision)),
        };
        if matches!(read, Err(DecisionError::NoDecision)) {
            return Err(AgentError::InvalidParams(NO_DECISION_IN_TEXT.into()));
        }
        let (decision, source) = read?;
        let channel = match source {
            DecisionSource::DataPart | DecisionSource::Extension => Channel::A2a,
            DecisionSource::Text => Channel::Text,
        };
        let decide = Decide {
            decision,
            batch_id: Some(batch.id),
            message: Some(message),
            link: None,
        };
        Ok(Continuation::Decide {
            channel,
            decide: Box::new(decide),
        })
    }

    /// THE decision of every channel (by way of [`Runtime::apply`]; a parent's decision
    /// forwarded to its subagent's task, `Count::Counted`, comes here directly): `decide` on task
    /// `task_id`'s pending batch by `actor`, checked and planned inside the write. Returns the
    /// accepted message (its runner not yet started), the batch decided, and where each call
    /// stands when approvals left it short of its quorum. A task driven by a live parent takes
    /// no decision of its own.
    #[tracing::instrument(name = "decision", skip_all, fields(
        task.id = task_id,
        channel = actor.channel.as_str(),
    ))]
    pub(super) async fn decide(
        self: &Arc<Self>,
        actor: &Actor,
        task_id: &str,
        decide: Decide,
        count: Count,
    ) -> Result<(Accepted, i64, Option<Vec<CallQuorum>>)> {
        let forwarded = count == Count::Counted;
        let driven_by = match forwarded {
            true => None,
            false => super::subagent::driving_parent(&self.store, task_id).await?,
        };
        let voted = self.store.voted_on(task_id, &actor.decider.subject).await?;
        let Decide {
            decision,
            batch_id,
            message,
            link,
        } = decide;
        // A text reply's message id goes with the calls it rejected (its text is their reason).
        let reply_message_id = message
            .as_ref()
            .filter(|_| actor.channel == Channel::Text)
            .map(|message| message.message_id.clone());
        let (runtime, by, id) = (self.clone(), actor.clone(), task_id.to_owned());
        let applied = self
            .commit_decision(task_id, move |row, batch| {
                // A task its sender may not see is not found, as an unknown one, before anything
                // about its batch or who may approve it is said. A link's person was handed the
                // batch by the notice the link came in.
                let row = row
                    .filter(|row| {
                        by.channel == Channel::Link
                            || runtime.sees_for_decision(row, batch, &by.decider, voted)
                    })
                    .ok_or_else(|| AgentError::TaskNotFound(id.clone()))?;
                if let Some(link) = &driven_by {
                    return Err(driven_by_parent(&id, link));
                }
                let batch = batch.ok_or_else(|| {
                    AgentError::NotPaused(format!(
                        "task {id} is {} and waits for no decision",
                        task_state_text(row.state)
                    ))
                })?;
                if batch_id.is_some_and(|decides| decides != batch.id) {
                    return Err(AgentError::NotPaused(format!(
                        "the batch of task {id} this decision was for was already decided"
                    )));
                }
                let mut echo = message.clone().unwrap_or_else(|| {
                    Message::new(
                        view::new_id(),
                        Role::User,
                        decision.to_parts(Dialect::Native),
                    )
                });
                echo.task_id = Some(row.id.clone());
                echo.context_id = Some(row.context_id.clone());
                let mut planned =
                    runtime.plan_decision(by.clone(), row, batch, &decision, echo, count)?;
                planned.uses_link = link.clone();
                Ok((Some(planned), batch.id))
            })
            .await;
        let who = (actor.channel != Channel::Link).then_some(&actor.decider);
        match self.or_expired(task_id, who, applied).await? {
            (Some(applied), batch_id) if applied.quorum.is_some() => {
                let quorum = applied.quorum.clone();
                Ok((recorded(task_id, applied), batch_id, quorum))
            }
            (Some(applied), batch_id) => Ok((
                self.decided(task_id, applied, reply_message_id),
                batch_id,
                None,
            )),
            (None, _) => Err(AgentError::Internal(
                "a planned decision was not written".into(),
            )),
        }
    }

    /// The decision rules (docs/wire.md, Decision rules) on the task's pending `batch`, and the
    /// checks only the server can make ([`Runtime::check_decided_calls`]), then the workflow's
    /// pure plan (`approvals::plan`): the planned decision, its `echo` (the decision message)
    /// in the `working` status it moves the task to. Pure: it runs inside the store's write,
    /// perhaps twice.
    pub(super) fn plan_decision(
        &self,
        by: Actor,
        row: &TaskRow,
        batch: &BatchRow,
        decision: &Decision,
        echo: Message,
        count: Count,
    ) -> Result<PlannedDecision> {
        let resolved = hitl::resolve(&batch_requests(batch), decision)?;
        self.check_decided_calls(row, &resolved)?;
        match count {
            Count::Votes => approvals::plan(
                self.approvals.approvers(),
                by,
                row,
                batch,
                decision,
                &resolved,
                echo,
            ),
            Count::Counted => {
                let working = approvals::working_event(row, echo);
                Ok(person_decision(
                    by,
                    batch,
                    decision,
                    &resolved,
                    vec![working],
                ))
            }
        }
    }

    /// Whether `who` may see task `row` when deciding its pending `batch`, as for a read
    /// (`Runtime::readable_task`): its owner, someone who may approve a call of the batch (by
    /// the agents file, a hand-over or an escalation), or someone who voted on one of its
    /// batches (`voted`, read before the write, or a vote on this one). Checked first on every
    /// channel: anyone else gets "not found", as for a task that does not exist.
    pub(super) fn sees_for_decision(
        &self,
        row: &TaskRow,
        batch: Option<&BatchRow>,
        who: &Decider,
        voted: bool,
    ) -> bool {
        row.user_id == who.subject
            || voted
            || batch.is_some_and(|batch| {
                batch.votes.iter().any(|vote| vote.user_id == who.subject)
                    // Someone a hand-over names may read the batch, so may hear why they may
                    // not decide it.
                    || crate::agent::approvals::handed_over_to(&batch.handed_to, who)
                    || self.approvals.approvers().eligible_for_batch(row, &batch_requests(batch), &batch.handed_to, who)
            })
    }

    /// After a person's decision on a local task has committed: start its runner, answer with
    /// the event.
    pub(super) fn decided(
        self: &Arc<Self>,
        task_id: &str,
        applied: Applied,
        reply_message_id: Option<String>,
    ) -> Accepted {
        tracing::Span::current().record("channel", applied.by.channel.as_str());
        let after_seq = applied.logged.first().map_or(0, |first| first.seq - 1);
        let watch = Some(self.log.watch_early(task_id));
        let runner = self.pending_runner(task_id, RunnerStart::Stored { reply_message_id });
        Accepted {
            after_seq,
            committed: applied.logged,
            task_id: task_id.to_owned(),
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
            // Edited arguments go through the whole gate, and need no more than the batch's
            // routing gives (`edits`).
            self.check_edit(row, agent, call)?;
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

/// The answer to approvals that left the batch waiting: its event, and no runner.
fn recorded(task_id: &str, applied: Applied) -> Accepted {
    Accepted {
        after_seq: applied.logged.first().map_or(0, |first| first.seq - 1),
        committed: applied.logged,
        task_id: task_id.to_owned(),
        watch: None,
        runner: None,
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

/// The rows of a decision, a cancel or an expiry of `row`'s batch, for each channel that takes
/// its kind.
fn decision_notifications(
    notifications: &Notifications,
    row: &TaskRow,
    audience: &Audience,
    planned: &PlannedDecision,
) -> Vec<NewNotification> {
    let kind = match planned.batch_state {
        BatchState::Expired => NotificationKind::Expired,
        BatchState::Canceled => NotificationKind::Canceled,
        BatchState::Pending | BatchState::Decided => NotificationKind::Decided,
    };
    let about = About::task(row);
    notifications.for_event(kind, &row.agent, audience, |public_url| {
        payload::decided(
            &about,
            public_url,
            &planned.by.decider.subject,
            planned.by.channel.as_str(),
            &planned.summary,
            &planned.verdicts,
        )
    })
}

/// The rows of an approval short of its quorum (`batch.counted`), for each channel that takes
/// them: the waiting batch, with each call's approvals so far.
fn counted_notifications(
    notifications: &Notifications,
    row: &TaskRow,
    audience: &Audience,
    batch: Option<&BatchRow>,
    quorum: &[CallQuorum],
) -> Vec<NewNotification> {
    let Some(batch) = batch else {
        return Vec::new();
    };
    let requests = batch.requests.as_array().map_or(&[][..], Vec::as_slice);
    let approvals = quorum
        .iter()
        .map(|call| NoticeApprovals {
            call_id: call.call_id.clone(),
            approved_by: call.approved_by.clone(),
            quorum: call.quorum,
        })
        .collect();
    let about = About::task(row);
    let kind = NotificationKind::Counted;
    notifications.for_event(kind, &row.agent, audience, |public_url| {
        payload::counted(
            &about,
            public_url,
            requests,
            batch.expires_at.as_deref(),
            approvals,
        )
    })
}

/// The time since `at` (RFC 3339), if it parses and lies in the past.
fn waited_since(at: &str) -> Option<std::time::Duration> {
    let at = chrono::DateTime::parse_from_rfc3339(at).ok()?;
    (chrono::Utc::now() - at.with_timezone(&chrono::Utc))
        .to_std()
        .ok()
}
