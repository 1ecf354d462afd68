//! Who may reach a relayed task through the relay (crates/server/README.md, Relayed chats): a
//! relayed request that names a task we hold is checked here, before it is forwarded, by the
//! rules of a local task: its owner may do anything the remote agent takes; someone its batch
//! is routed to (a hand-over) may read it and decide it; anyone else learns nothing, not even
//! that it exists. A decision is planned through the decision core first, so one the core would
//! refuse never reaches the remote agent; `POST /api/approvals` on a relayed task is decided
//! here too, forwarded through the relay's `send`, and closed when the remote's answer is
//! recorded (`relayed`).

use serde_json::Value;
use signoff_protocol::hitl::{ActionRequest, Decision, Dialect};
use signoff_protocol::{Message, Task};

use crate::agent::view;
use crate::store::{BatchRow, Channel, TaskRow};

use super::relayed::Relay;
use super::{AgentError, AuditEntry, Result};
use crate::agent::approvals::Actor;
use crate::agent::approvals::Decider;
use crate::agent::approvals::{Count, PlannedDecision};

/// What a relayed request asks of a task, as the relay reads the request.
#[derive(Debug, Clone)]
pub enum RelayedAsk {
    /// To read it: `tasks/get`, a resubscription, a task a message refers to.
    Read(String),
    /// What only its owner does: a cancel, its push configs, a method the relay does not know.
    Own(String),
    /// A message to it (its `taskId`): the owner's words, or a person's decision.
    Message(Box<Message>),
}

impl RelayedAsk {
    fn task_id(&self) -> Option<&str> {
        match self {
            RelayedAsk::Read(id) | RelayedAsk::Own(id) => Some(id),
            RelayedAsk::Message(message) => message.task_id.as_deref(),
        }
    }
}

/// A decision on a relayed task taken by its remote agent and recorded here.
#[derive(Debug, Clone)]
pub struct RelayedDecided {
    /// The remote agent, `namespace/name`.
    pub agent: String,
    /// The task as stored after the remote's answer.
    pub task: Task,
    /// The batch's audit row.
    pub decision: Option<AuditEntry>,
}

/// The refusal of someone who may not reach the task: the answer to a task that does not exist.
fn unknown(task_id: &str) -> AgentError {
    AgentError::TaskNotFound(task_id.to_owned())
}

impl Relay<'_> {
    /// Whether `who` may have `asked` of a task through the relay of the remote agent `agent`
    /// (`namespace/name`). A task we do not hold, or hold as another agent's, is the remote's
    /// to answer; one of this agent's that is not relayed, or that `who` may not reach, is not
    /// found. A message that
    /// decides the task's pending batch is planned as the decision it is, and refused if the
    /// decision core refuses it.
    pub async fn check(&self, who: &Decider, agent: &str, asked: &RelayedAsk) -> Result<()> {
        let Some(task_id) = asked.task_id() else {
            return Ok(());
        };
        let Some(row) = self.runtime.store.task(task_id).await? else {
            return Ok(());
        };
        // Another agent's task of that id (remote agents choose their ids, and two may
        // choose alike): this agent's task is the remote's to answer, and it knows nothing of
        // the other one, so nothing of it can leak.
        if row.agent != agent {
            return Ok(());
        }
        if !self.runtime.store.is_relayed(task_id).await? {
            return Err(unknown(task_id));
        }
        let owner = row.user_id == who.subject;
        if !owner && !self.reaches(who, &row).await? {
            return Err(unknown(task_id));
        }
        match asked {
            RelayedAsk::Read(_) => Ok(()),
            RelayedAsk::Own(_) if owner => Ok(()),
            RelayedAsk::Own(_) => Err(unknown(task_id)),
            RelayedAsk::Message(message) => {
                let batch = self.runtime.store.pending_batch(task_id).await?;
                let pause = self.interrupt(task_id).await?;
                let planned = match (&batch, &pause) {
                    (Some(batch), Some(pause)) => {
                        let by = Actor::of(who, Channel::A2a);
                        let requests = &pause.action_requests;
                        self.plan(by, &row, batch, requests, message)?
                    }
                    (None, _) | (_, None) => None,
                };
                match (owner, batch, planned) {
                    (true, _, _) | (false, Some(_), Some(_)) => Ok(()),
                    (false, None, _) => Err(AgentError::NotPaused(format!(
                        "task {task_id} waits for no decision"
                    ))),
                    (false, Some(_), None) => Err(AgentError::InvalidParams(format!(
                        "task {task_id} waits for a decision: send it as a decision DataPart; \
                         only the chat's owner writes anything else to it"
                    ))),
                }
            }
        }
    }

    /// Whether `who`, not the owner, may read the relayed task `row`: as for a local task, an
    /// approver of its waiting batch or one who voted on it.
    async fn reaches(&self, who: &Decider, row: &TaskRow) -> Result<bool> {
        match self.runtime.readable_task(who, &row.id).await {
            Ok(_) => Ok(true),
            Err(AgentError::Forbidden(_) | AgentError::TaskNotFound(_)) => Ok(false),
            Err(err) => Err(err),
        }
    }

    /// A decision in `message` on the relayed task `row`'s pending `batch`, planned through the
    /// decision core as a local chat's is (the decision rules, the limits, who may give each
    /// verdict); `None` when the message decides nothing here (its text is the remote agent's
    /// to read). It is read against the pause's `requests` as its dialect wrote them (kagent's
    /// approval ids). A relayed batch waits for one decision: one the core would count short of
    /// a quorum is refused, as the remote agent would go on.
    pub(super) fn plan(
        &self,
        by: Actor,
        row: &TaskRow,
        batch: &BatchRow,
        requests: &[ActionRequest],
        message: &Message,
    ) -> Result<Option<PlannedDecision>> {
        let Some((decision, _)) = Decision::from_message_parts(message, requests)? else {
            return Ok(None);
        };
        let planned =
            self.runtime
                .plan_decision(by, row, batch, &decision, message.clone(), Count::Votes)?;
        if planned.quorum.is_some() {
            return Err(AgentError::NotEligible(format!(
                "task {} is a remote agent's: its batch is decided by one person's decision",
                row.id
            )));
        }
        Ok(Some(planned))
    }

    /// `who`'s decision object `data` (`POST /api/approvals/{task}`) on the relayed task
    /// `task_id`: checked as the chat's own decision would be, then `send` delivers it to the
    /// remote agent (`namespace/name`) in the dialect of its pause and records its answer, which
    /// closes the batch here (`Relay::record`). `None`: not a relayed task.
    pub async fn decide<S>(
        &self,
        who: &Decider,
        task_id: &str,
        data: &Value,
        send: S,
    ) -> Result<Option<RelayedDecided>>
    where
        S: AsyncFnOnce(&str, Message, Dialect) -> Result<()>,
    {
        if !self.runtime.store.is_relayed(task_id).await? {
            return Ok(None);
        }
        let row = self.runtime.readable_task(who, task_id).await?;
        let decision = Decision::from_data(data)?;
        let not_waiting =
            || AgentError::NotPaused(format!("task {task_id} is not waiting for a decision"));
        let batch = self
            .runtime
            .store
            .pending_batch(task_id)
            .await?
            .ok_or_else(not_waiting)?;
        let pause = self.interrupt(task_id).await?.ok_or_else(not_waiting)?;
        let mut message =
            decision.to_message(pause.dialect, &pause.action_requests, view::new_id())?;
        message.task_id = Some(row.id.clone());
        message.context_id = Some(row.context_id.clone());
        let by = Actor::of(who, Channel::Rest);
        let requests = &pause.action_requests;
        if self.plan(by, &row, &batch, requests, &message)?.is_none() {
            return Err(AgentError::Internal(
                "a decision object did not read back as a decision".into(),
            ));
        }
        send(&row.agent, message, pause.dialect).await?;
        if self.pending_batch(task_id).await? == Some(batch.id) {
            return Err(AgentError::Remote(format!(
                "the remote agent {} did not take the decision; the task still waits",
                row.agent
            )));
        }
        let decision = self
            .runtime
            .approvals
            .batch_outcome(task_id, batch.id)
            .await?;
        let (task, _) = self.runtime.snapshot(task_id, None).await?;
        Ok(Some(RelayedDecided {
            agent: row.agent,
            task,
            decision,
        }))
    }
}
