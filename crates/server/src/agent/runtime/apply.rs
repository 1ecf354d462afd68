//! The approval workflow's one write entry for requests: [`Runtime::apply`] takes who acts
//! (`approvals::Actor`: the person, how they signed in, the channel) and what they do
//! (`approvals::Command`, read from the request first: a decision into the protocol's typed
//! `Decision`) on a task's pending batch, and goes to the one write of that command. Every
//! decision comes here (REST, A2A: a DataPart, kagent's extension or text, and decision
//! links), and so do hand-overs, extensions and cancels; the
//! server's deadline ladder for its reminders, escalations and expiries (`ladder`, `expiry`),
//! as `Actor::deadline`, the one actor those steps take.

use std::sync::Arc;

use signoff_protocol::rest::{CallQuorum, DeadlineExtended};
use signoff_protocol::Task;

use crate::agent::approvals::{Actor, Channel, Command, Count};
use crate::store::BatchStepKind;

use super::{Accepted, AgentError, LadderEvent, Result, Runtime};

/// What a command came to.
#[derive(Debug)]
pub enum Outcome {
    /// A decision written: the message it is on the task (its runner started, if it decided
    /// the batch), the batch it decided, and where each call stands when approvals left it
    /// short of its quorum.
    Decided {
        accepted: Box<Accepted>,
        batch_id: i64,
        quorum: Option<Vec<CallQuorum>>,
    },
    HandedOver(LadderEvent),
    Extended(DeadlineExtended),
    /// The task as canceled.
    Canceled(Box<Task>),
    /// A step of the deadline ladder taken, if it was still due (decided, extended or taken
    /// on another replica meanwhile, it is left as it is).
    Swept,
}

impl Runtime {
    /// THE write entry of the approval workflow for a request: `actor` does `command` to task
    /// `task_id`'s pending batch. Each command keeps its own checks (who may, in what state),
    /// made inside its write.
    pub async fn apply(
        self: &Arc<Self>,
        task_id: &str,
        actor: &Actor,
        command: Command,
    ) -> Result<Outcome> {
        let who = &actor.decider;
        match command {
            Command::Decide(decide) => {
                let (mut accepted, batch_id, quorum) =
                    self.decide(actor, task_id, *decide, Count::Votes).await?;
                // An A2A sender follows the task before its runner starts (its stream misses
                // nothing); every other channel's decision runs now.
                if !matches!(actor.channel, Channel::A2a | Channel::Text) {
                    accepted.start_runner();
                }
                Ok(Outcome::Decided {
                    accepted: Box::new(accepted),
                    batch_id,
                    quorum,
                })
            }
            Command::HandOver { to, note } => Ok(Outcome::HandedOver(
                self.hand_over(who, task_id, &to, note).await?,
            )),
            Command::Extend { by, note } => Ok(Outcome::Extended(
                self.extend_deadline(who, task_id, &by, note).await?,
            )),
            Command::Cancel => Ok(Outcome::Canceled(Box::new(
                self.cancel(who, task_id).await?,
            ))),
            // Steps of the deadline ladder: the server's own, each taken only once it is due.
            Command::Remind | Command::Escalate | Command::Expire { .. }
                if !actor.is_deadline() =>
            {
                Err(AgentError::InvalidParams(
                    "reminders, escalations and expiries are the server's own, when they are due"
                        .to_owned(),
                ))
            }
            Command::Remind => {
                self.take_due_step(task_id, BatchStepKind::Remind).await?;
                Ok(Outcome::Swept)
            }
            Command::Escalate => {
                self.take_due_step(task_id, BatchStepKind::Escalate).await?;
                Ok(Outcome::Swept)
            }
            Command::Expire { expires_at } => {
                self.expire(task_id, &expires_at).await?;
                Ok(Outcome::Swept)
            }
        }
    }
}

impl Outcome {
    /// A decision's outcome: the accepted message, the batch decided, where each call stands
    /// when approvals left it short of its quorum.
    pub fn into_decided(self) -> Result<(Accepted, i64, Option<Vec<CallQuorum>>)> {
        match self {
            Outcome::Decided {
                accepted,
                batch_id,
                quorum,
            } => Ok((*accepted, batch_id, quorum)),
            other @ (Outcome::HandedOver(_)
            | Outcome::Extended(_)
            | Outcome::Canceled(_)
            | Outcome::Swept) => Err(unexpected(&other)),
        }
    }

    /// A hand-over's outcome.
    pub fn into_handed_over(self) -> Result<LadderEvent> {
        match self {
            Outcome::HandedOver(event) => Ok(event),
            other @ (Outcome::Decided { .. }
            | Outcome::Extended(_)
            | Outcome::Canceled(_)
            | Outcome::Swept) => Err(unexpected(&other)),
        }
    }

    /// An extension's outcome: the new deadline.
    pub fn into_extended(self) -> Result<DeadlineExtended> {
        match self {
            Outcome::Extended(extended) => Ok(extended),
            other @ (Outcome::Decided { .. }
            | Outcome::HandedOver(_)
            | Outcome::Canceled(_)
            | Outcome::Swept) => Err(unexpected(&other)),
        }
    }

    /// A cancel's outcome: the task as canceled.
    pub fn into_canceled(self) -> Result<Task> {
        match self {
            Outcome::Canceled(task) => Ok(*task),
            other @ (Outcome::Decided { .. }
            | Outcome::HandedOver(_)
            | Outcome::Extended(_)
            | Outcome::Swept) => Err(unexpected(&other)),
        }
    }
}

/// Each command comes to its own kind of outcome: another is a bug, said as such.
fn unexpected(outcome: &Outcome) -> AgentError {
    AgentError::Internal(format!("a command came to another outcome: {outcome:?}"))
}
