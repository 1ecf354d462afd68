//! Approvals that expire: a batch of an agent with an `approval_timeout` gets a deadline when
//! it pauses; a watch per deadline expires it then (or at once, after a restart that finds it
//! passed), through the same compare-and-set as a decision, so it happens once and a decision
//! that comes later is told the batch expired (docs/wire.md, Expiry).

use std::sync::Arc;

use signoff_protocol::hitl::keys::SUBAGENT;
use signoff_protocol::hitl::{ExpiredWith, RecordedDecision, ToolResult};
use signoff_protocol::{Part, TaskState};

use crate::agent::config::OnTimeout;
use crate::agent::view;
use crate::store::{
    handed_to, BatchRow, BatchState, CallRow, CallStatus, CallVerdict, Channel, Verdict,
};

use super::decide::PlannedDecision;
use super::runner::RunnerStart;
use super::subagent::batch_requests;
use super::{AgentError, Decider, Result, Runtime};
use crate::agent::approvals::{self, Actor, Command};

impl Runtime {
    /// Watches the stored deadlines of pending batches (at start: a previous process set them).
    pub(super) async fn watch_stored_deadlines(self: &Arc<Self>) -> Result<usize> {
        let deadlines = self.store.pending_deadlines().await?;
        for deadline in &deadlines {
            self.watch_deadline(&deadline.task_id, &deadline.expires_at);
        }
        Ok(deadlines.len())
    }

    /// Expires the task's pending batch at `expires_at`, unless it was decided first. The
    /// deadline text identifies the batch: a later batch of the same task has its own.
    pub(super) fn watch_deadline(self: &Arc<Self>, task_id: &str, expires_at: &str) {
        let Ok(at) = chrono::DateTime::parse_from_rfc3339(expires_at) else {
            tracing::warn!(task = %task_id, expires_at, "a batch deadline that is not a time");
            return;
        };
        let wait = (at.with_timezone(&chrono::Utc) - chrono::Utc::now())
            .to_std()
            .unwrap_or_default();
        let runtime = self.clone();
        let (task_id, expires_at) = (task_id.to_owned(), expires_at.to_owned());
        self.tracker.spawn(async move {
            tokio::select! {
                // The next start watches it again.
                _ = runtime.shutdown.cancelled() => return,
                _ = tokio::time::sleep(wait) => {}
            }
            let expire = Command::Expire { expires_at };
            if let Err(err) = runtime.apply(&task_id, &Actor::deadline(), expire).await {
                tracing::warn!(task = %task_id, error = %err, "could not expire a batch");
            }
        });
    }

    /// Ends the task's pending batch as expired if it is still the one due at `expires_at`:
    /// every held call is answered "expired" (not rejected: nobody refused it), then the task
    /// goes on (`on_timeout = "reject"`) or ends canceled (`"cancel"`).
    #[tracing::instrument(name = "decision", skip_all, fields(task.id = task_id, channel = "expiry"))]
    pub(super) async fn expire(self: &Arc<Self>, task_id: &str, expires_at: &str) -> Result<()> {
        let Some(deadline) = self.store.pending_deadline(task_id).await? else {
            return Ok(()); // decided (or canceled) in time
        };
        if deadline.expires_at != expires_at {
            return Ok(());
        }
        let Some(row) = self.store.task(task_id).await? else {
            return Ok(());
        };
        let agent = self.agent_by_key(&row.agent);
        let (after, on_timeout) = match &agent {
            Some(agent) => (
                approvals::expired_after(&agent.approvals),
                agent.approvals.on_timeout,
            ),
            None => (approvals::SOME_TIMEOUT.to_owned(), OnTimeout::Reject),
        };
        let held = held_calls(self.store.calls(task_id).await?, deadline.batch_id);
        let verdicts = expire_each(&held);
        let (context_id, summary) = (&row.context_id, format!("Expired unanswered after {after}"));
        let events = match on_timeout {
            // The runner answers each call "expired" and the model goes on.
            OnTimeout::Reject => vec![view::status_event(
                task_id,
                context_id,
                TaskState::Working,
                None,
                None,
            )],
            // Nothing runs again: the results and the end are written here.
            OnTimeout::Cancel => {
                let results = held
                    .iter()
                    .map(|call| ToolResult::expired(&call.call_id, &call.name, &after).to_part())
                    .collect();
                let results = view::agent_message(task_id, context_id, results);
                let reason = view::agent_message(
                    task_id,
                    context_id,
                    vec![Part::text(format!(
                        "Canceled: the approval request expired unanswered after {after}."
                    ))],
                );
                vec![
                    view::status_event(
                        task_id,
                        context_id,
                        TaskState::Working,
                        Some(results),
                        None,
                    ),
                    view::status_event(
                        task_id,
                        context_id,
                        TaskState::Canceled,
                        Some(reason),
                        None,
                    ),
                ]
            }
        };
        let task_state = match on_timeout {
            OnTimeout::Reject => TaskState::Working,
            OnTimeout::Cancel => TaskState::Canceled,
        };
        let planned = PlannedDecision {
            by: Actor {
                channel: Channel::Expiry,
                decider: Decider::subject(row.user_id.clone()),
                auth: None,
            },
            batch_id: deadline.batch_id,
            decision: RecordedDecision::Expire {
                after: after.clone(),
                with: None,
            },
            summary,
            verdicts,
            batch_state: BatchState::Expired,
            task_state,
            events,
            paused_at: None,
            votes: Vec::new(),
            quorum: None,
            uses_link: None,
        };
        match self.commit_decision(task_id, planned.if_pending()).await {
            Ok((Some(_), ())) => {
                tracing::info!(task = %task_id, after, "approval expired unanswered");
                match on_timeout {
                    OnTimeout::Reject => self.spawn_runner(
                        task_id,
                        RunnerStart::Stored {
                            reply_message_id: None,
                        },
                    ),
                    // The subagent tasks it started end with it, as with any cancel.
                    OnTimeout::Cancel => {
                        let owner = Decider::subject(row.user_id.clone());
                        self.subagents().cancel_subagents(&owner, task_id).await
                    }
                }
                // A subagent's calls wait nested in its parent's batch: it expires with them.
                self.expire_nesting_parent(task_id, &after).await
            }
            // A decision won the race: nothing expired.
            Ok((None, ())) | Err(AgentError::Conflict(_)) => Ok(()),
            Err(err) => Err(err),
        }
    }

    /// After the batch of `child_task_id` (a local subagent's task) expired: the pending batch of
    /// its parent that nests its calls expires too, as a whole (a batch is decided once): every
    /// held call of it is expired, the nested ones answered "expired" in the parent's log, and
    /// the parent goes on, its agent-tool call taking the subagent's outcome. A decision on the
    /// parent then gets the same "expired" refusal as any expired batch. The same goes on up
    /// (docs/wire.md, Subagents).
    async fn expire_nesting_parent(
        self: &Arc<Self>,
        child_task_id: &str,
        after: &str,
    ) -> Result<()> {
        let Some(link) = super::subagent::driving_parent(&self.store, child_task_id).await? else {
            return Ok(());
        };
        let parent_id = link.parent_task_id.as_str();
        let Some(batch) = self.store.pending_batch(parent_id).await? else {
            return Ok(()); // decided first, or the subagent's calls never joined it
        };
        let requests = batch_requests(&batch);
        let nests_child = requests.iter().any(|request| {
            request.via.as_ref().is_some_and(|via| {
                via.call_id == link.parent_call_id && via.task_id == link.child_task_id
            })
        });
        if !nests_child {
            return Ok(());
        }
        let Some(row) = self.store.task(parent_id).await? else {
            return Ok(());
        };
        let held = held_calls(self.store.calls(parent_id).await?, batch.id);
        let verdicts = expire_each(&held);
        // The nested calls' results are written here: no model call of the parent's answers
        // them. The parent's own held calls are answered by its runner, as after any expiry.
        let nested: Vec<Part> = requests
            .iter()
            .filter(|request| held.iter().any(|call| call.call_id == request.id))
            .filter_map(|request| {
                let via = request.via.as_ref()?;
                let part = ToolResult::expired(&request.id, &request.name, after).to_part();
                Some(part.with_metadata(SUBAGENT, via.to_value()))
            })
            .collect();
        let context_id = &row.context_id;
        let results =
            (!nested.is_empty()).then(|| view::agent_message(parent_id, context_id, nested));
        let event = view::status_event(parent_id, context_id, TaskState::Working, results, None);
        let planned = PlannedDecision {
            by: Actor {
                channel: Channel::Expiry,
                decider: Decider::subject(row.user_id.clone()),
                auth: None,
            },
            batch_id: batch.id,
            decision: RecordedDecision::Expire {
                after: after.to_owned(),
                with: Some(ExpiredWith {
                    task_id: child_task_id.to_owned(),
                    call_id: link.parent_call_id.clone(),
                }),
            },
            summary: format!(
                "Expired with the approval request of {}, unanswered after {after}",
                link.agent
            ),
            verdicts,
            batch_state: BatchState::Expired,
            task_state: TaskState::Working,
            events: vec![event],
            paused_at: None,
            votes: Vec::new(),
            quorum: None,
            uses_link: None,
        };
        match self.commit_decision(parent_id, planned.if_pending()).await {
            Ok((Some(_), ())) => {
                tracing::info!(task = %parent_id, child = %child_task_id, after, "a subagent's approval expired: so did its parent's");
                self.spawn_runner(
                    parent_id,
                    RunnerStart::Stored {
                        reply_message_id: None,
                    },
                );
                // Boxed: the parent may be a subagent's task too.
                Box::pin(self.expire_nesting_parent(parent_id, after)).await
            }
            // A decision on the parent came first: its runner finds the subagent's batch gone
            // and takes the subagent's outcome.
            Ok((None, ())) | Err(AgentError::Conflict(_)) => Ok(()),
            Err(err) => Err(err),
        }
    }

    /// A decision's outcome, with a "no batch waits" error (the task ended, or works, or its
    /// batch is gone) told as an expiry when the task's last batch expired. Someone who was not
    /// found only because the batch they may approve was decided a moment ago (`who`, late to a
    /// quorum) is told that instead: they could read it until then.
    pub(super) async fn or_expired<T>(
        &self,
        task_id: &str,
        who: Option<&Decider>,
        outcome: Result<T>,
    ) -> Result<T> {
        match outcome {
            Err(err @ (AgentError::Terminal(_) | AgentError::NotPaused(_))) => {
                Err(self.late_decision(task_id, None, err).await)
            }
            Err(AgentError::TaskNotFound(id)) => match who {
                Some(who) => Err(self
                    .late_decision(task_id, Some(who), AgentError::TaskNotFound(id))
                    .await),
                None => Err(AgentError::TaskNotFound(id)),
            },
            other => other,
        }
    }

    /// The error for a decision that found no pending batch: if the task's last batch expired,
    /// one that says so (REST answers it 409, A2A -32602); if `approver` (not found otherwise)
    /// could approve that batch before it was decided, that it was; else `otherwise`.
    async fn late_decision(
        &self,
        task_id: &str,
        approver: Option<&Decider>,
        otherwise: AgentError,
    ) -> AgentError {
        let last = match self.store.last_batch(task_id).await {
            Ok(last) => last,
            Err(err) => return err.into(),
        };
        let Some(batch) = last.filter(|batch| batch.state != BatchState::Pending) else {
            return otherwise;
        };
        if let Some(who) = approver {
            match self.could_approve(task_id, &batch, who).await {
                Ok(true) if batch.state != BatchState::Expired => {
                    return AgentError::NotPaused(format!(
                        "the approval request of task {task_id} was already decided"
                    ))
                }
                // An approver late to an expired batch hears that it expired, as its owner does.
                Ok(true) => {}
                Ok(false) => return otherwise,
                Err(err) => return err,
            }
        }
        match batch.state {
            BatchState::Expired => AgentError::NotPaused(format!(
                "the approval request of task {task_id} expired unanswered at {}; it takes \
                 no decision any more",
                batch.expires_at.as_deref().unwrap_or("its deadline")
            )),
            BatchState::Pending | BatchState::Decided | BatchState::Canceled => otherwise,
        }
    }

    /// Whether `who` could approve a call of `batch` (or a hand-over of it named them) while
    /// it waited.
    async fn could_approve(&self, task_id: &str, batch: &BatchRow, who: &Decider) -> Result<bool> {
        let Some(row) = self.store.task(task_id).await? else {
            return Ok(false);
        };
        let steps = self.store.batch_steps(task_id).await?;
        let handed = handed_to(&steps, batch.id);
        Ok(approvals::handed_over_to(&handed, who)
            || self.approvals.approvers().eligible_for_batch(
                &row,
                &batch_requests(batch),
                &handed,
                who,
            ))
    }
}

/// The calls of `batch_id` among `calls` that still wait for a decision.
fn held_calls(calls: Vec<CallRow>, batch_id: i64) -> Vec<CallRow> {
    calls
        .into_iter()
        .filter(|call| call.batch_id == Some(batch_id) && call.status == CallStatus::Held)
        .collect()
}

/// Each of `held` expired: nobody refused it, its deadline passed.
fn expire_each(held: &[CallRow]) -> Vec<CallVerdict> {
    held.iter()
        .map(|call| CallVerdict {
            call_id: call.call_id.clone(),
            status: CallStatus::Expired,
            verdict: Verdict::Expire,
            reason: None,
            run_args: None,
            run_args_sha256: None,
        })
        .collect()
}
