//! The deadline ladder of a waiting batch (crates/server/README.md, Approvers; docs/rest.md,
//! Deadline ladder): after its calls' `remind_after` the batch is reminded, after their
//! `escalate_after` it escalates (their `escalate_to` may then decide it too), and at the
//! agent's `approval_timeout` it expires (`expiry`). An eligible approver may push the deadline
//! back, in all at most the calls' `max_extend`.
//!
//! Every replica (and the single process on SQLite) sweeps the pending batches every
//! [`SWEEP_EVERY`] while some agent has a ladder; a due reminder or escalation is a `batch_steps` row that the
//! store writes only once per batch (a unique index), with its notifications and the approval
//! event that sends the batch again on the approvals streams, all in that one commit. So each
//! step happens once, whichever replica's sweep comes first, and a replica that dies leaves
//! nothing half done: the next sweep of any replica takes the step.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use signoff_protocol::rest::{DeadlineExtended, PendingApproval};

use crate::agent::notify::payload::{self, About};
use crate::store::{
    handed_to, BatchStep, BatchStepKind, NewNotification, NotificationKind, PendingBatchRow,
    TaskRow,
};

use super::log::Committed;
use super::subagent::batch_requests;
use super::{AgentError, Result, Runtime};
use crate::agent::approvals::{first_deadline, Actor, Approvers, Command, Decider};

/// How often the ladder looks for reminders and escalations that are due.
const SWEEP_EVERY: Duration = Duration::from_secs(1);

/// The most an extension's note may say.
const MAX_NOTE: usize = 2000;

/// The least an extension moves a deadline: less is no reprieve, only another audited step
/// and notification.
const MIN_EXTEND: Duration = Duration::from_secs(60);

/// The most extensions one batch takes, however small each: each is a stored step and a
/// notification.
pub(super) const MAX_EXTENSIONS: usize = 20;

/// An extension's `by`, read: a duration of at least [`MIN_EXTEND`].
fn extension_by(by: &str) -> Result<Duration> {
    let duration = humantime::parse_duration(by)
        .ok()
        .filter(|by| !by.is_zero())
        .ok_or_else(|| {
            AgentError::InvalidParams(format!(
                "by: {by:?} is not a duration longer than zero, such as \"15m\" or \"1h 30m\""
            ))
        })?;
    if duration < MIN_EXTEND {
        return Err(AgentError::InvalidParams(format!(
            "by: {by} is shorter than the least extension, {}",
            humantime::format_duration(MIN_EXTEND)
        )));
    }
    Ok(duration)
}

/// `at` (RFC 3339) plus `after`, as the store writes times.
fn later_by(at: &str, after: Duration) -> Option<chrono::DateTime<chrono::Utc>> {
    let at = chrono::DateTime::parse_from_rfc3339(at).ok()?;
    at.with_timezone(&chrono::Utc)
        .checked_add_signed(chrono::Duration::from_std(after).ok()?)
}

/// The reminder and escalation of `row`'s batch that are due at `now`: each with the time
/// after which it is due and whom it adds (an escalation's `escalate_to`).
fn due_steps(
    approvers: &Approvers,
    row: &PendingBatchRow,
    now: chrono::DateTime<chrono::Utc>,
) -> Vec<(BatchStepKind, Duration, Vec<String>)> {
    let requests = batch_requests(&row.batch);
    let ladder = approvers.batch_ladder(&row.agent, &requests);
    [
        (BatchStepKind::Remind, ladder.remind_after, Vec::new()),
        (
            BatchStepKind::Escalate,
            ladder.escalate_after,
            ladder.escalate_to.clone(),
        ),
    ]
    .into_iter()
    .filter_map(|(kind, after, to)| {
        let after = after?;
        let due = later_by(&row.batch.created_at, after).is_some_and(|at| at <= now);
        due.then_some((kind, after, to))
    })
    .collect()
}

fn rfc3339(at: chrono::DateTime<chrono::Utc>) -> String {
    at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

impl Runtime {
    /// Sets the ladder (`ladder`) of the pending batches in `approvals` (the inbox's), read
    /// from their steps and their agents' `max_extend`.
    pub(super) async fn mark_ladder(&self, approvals: &mut [PendingApproval]) -> Result<()> {
        for approval in approvals.iter_mut() {
            let steps = self.store.batch_steps(&approval.task_id).await?;
            // Without steps no batch id is needed: nothing is filtered by it.
            let batch_id = match steps.is_empty() {
                true => 0,
                false => match self.store.pending_batch(&approval.task_id).await? {
                    Some(batch) => batch.id,
                    None => continue,
                },
            };
            approval.ladder = self
                .approvals
                .approvers()
                .batch_marks(approval, &steps, batch_id);
        }
        Ok(())
    }

    /// Starts the ladder's sweep on this replica.
    pub(super) fn start_ladder(self: &Arc<Self>) {
        let runtime = self.clone();
        self.tracker.spawn(async move {
            let mut sweep = tokio::time::interval(SWEEP_EVERY);
            // The steps this replica knows were taken (by it or another): not asked again.
            let mut taken: HashSet<(i64, BatchStepKind)> = HashSet::new();
            loop {
                tokio::select! {
                    _ = runtime.shutdown.cancelled() => return,
                    _ = sweep.tick() => {}
                }
                if let Err(err) = runtime.sweep_ladder(&mut taken).await {
                    tracing::warn!(error = %err, "could not sweep the deadline ladder");
                }
            }
        });
    }

    /// Takes every reminder and escalation that is due and not yet taken, each through the
    /// workflow's one write entry as the server's own step (`Runtime::apply`).
    async fn sweep_ladder(
        self: &Arc<Self>,
        taken: &mut HashSet<(i64, BatchStepKind)>,
    ) -> Result<()> {
        let agents = self.agents();
        if !agents.iter().any(|agent| agent.approvals.has_ladder()) {
            taken.clear();
            return Ok(());
        }
        // Every agent's batches: a subagent's calls, with its own ladder, wait nested in the
        // batch of an agent that may have none.
        let agents: Vec<String> = agents.iter().map(|agent| agent.key()).collect();
        let pending = self.store.pending_batches_of_agents(&agents).await?;
        taken.retain(|(id, _)| pending.iter().any(|(row, _)| row.batch.id == *id));
        let now = chrono::Utc::now();
        for (row, _) in &pending {
            for (kind, _, _) in due_steps(self.approvals.approvers(), row, now) {
                if taken.contains(&(row.batch.id, kind)) {
                    continue;
                }
                let command = match kind {
                    BatchStepKind::Remind => Command::Remind,
                    BatchStepKind::Escalate | BatchStepKind::Handover | BatchStepKind::Extend => {
                        Command::Escalate
                    }
                };
                self.apply(&row.batch.task_id, &Actor::deadline(), command)
                    .await?;
                taken.insert((row.batch.id, kind));
            }
        }
        Ok(())
    }

    /// The `kind` step (a reminder or an escalation) of task `task_id`'s waiting batch, when it
    /// is due and not yet taken: the server's own command, which `Runtime::apply` runs here.
    pub(super) async fn take_due_step(&self, task_id: &str, kind: BatchStepKind) -> Result<()> {
        let (Some(batch), Some(task)) = (
            self.store.pending_batch(task_id).await?,
            self.store.task(task_id).await?,
        ) else {
            return Ok(()); // decided (or gone) meanwhile
        };
        let row = PendingBatchRow {
            batch,
            context_id: task.context_id,
            agent: task.agent,
            title: String::new(),
        };
        let due = due_steps(self.approvals.approvers(), &row, chrono::Utc::now());
        if let Some((kind, after, to)) = due.into_iter().find(|(due, _, _)| *due == kind) {
            self.take_ladder_step(&row, &task.user_id, kind, to, after)
                .await?;
        }
        Ok(())
    }

    /// Writes the `kind` step of `row`'s batch with its notifications, unless it was taken
    /// already (here or on another replica) or the batch no longer waits.
    async fn take_ladder_step(
        &self,
        row: &PendingBatchRow,
        owner: &str,
        kind: BatchStepKind,
        to: Vec<String>,
        after: Duration,
    ) -> Result<()> {
        let batch = &row.batch;
        let about = About {
            task_id: &batch.task_id,
            context_id: &row.context_id,
            agent: &row.agent,
            requester: owner,
        };
        let requests: &[Value] = batch.requests.as_array().map_or(&[], Vec::as_slice);
        let expires_at = batch.expires_at.as_deref();
        let since = batch.created_at.as_str();
        let audience = self.audience_of(&row.agent, requests, &to).await;
        let notifications: Vec<NewNotification> = match kind {
            BatchStepKind::Remind => self.notifications.for_event(
                NotificationKind::Reminded,
                &row.agent,
                &audience,
                |public_url| payload::reminded(&about, public_url, requests, expires_at, since),
            ),
            BatchStepKind::Escalate | BatchStepKind::Handover | BatchStepKind::Extend => {
                self.notifications.for_event(
                    NotificationKind::Escalated,
                    &row.agent,
                    &audience,
                    |public_url| {
                        payload::escalated(&about, public_url, requests, expires_at, since, &to)
                    },
                )
            }
        };
        let notifies = !notifications.is_empty();
        let step = BatchStep::ladder(kind, to.clone());
        let written = self
            .store
            .add_batch_step(&batch.task_id, batch.id, step, None, notifications)
            .await?;
        if written {
            let after = humantime::format_duration(after).to_string();
            match kind {
                BatchStepKind::Remind => {
                    tracing::info!(task = %batch.task_id, after, "a waiting batch reminded")
                }
                BatchStepKind::Escalate | BatchStepKind::Handover | BatchStepKind::Extend => {
                    tracing::info!(task = %batch.task_id, after, to = ?to, "a waiting batch escalated")
                }
            }
            self.after_commit(Committed {
                task_id: &batch.task_id,
                logged: None,
                entered: None,
                outbox: notifies,
            });
        }
        Ok(())
    }

    /// Pushes the deadline of the pending batch of `task_id` back `by` (a duration such as
    /// `15m`), for an eligible approver, as long as all extensions together stay within the
    /// calls' `max_extend`.
    pub(super) async fn extend_deadline(
        self: &Arc<Self>,
        who: &Decider,
        task_id: &str,
        by: &str,
        note: Option<String>,
    ) -> Result<DeadlineExtended> {
        let by_duration = extension_by(by)?;
        if note.as_ref().is_some_and(|note| note.len() > MAX_NOTE) {
            return Err(AgentError::InvalidParams(format!(
                "note: longer than {MAX_NOTE} bytes"
            )));
        }
        let row = self
            .store
            .task(task_id)
            .await?
            .ok_or_else(|| AgentError::TaskNotFound(task_id.to_owned()))?;
        let batch = self.store.pending_batch(task_id).await?;
        let steps = self.store.batch_steps(task_id).await?;
        let Some(batch) = batch else {
            // An approver late for a batch decided a moment ago learns that it was (as with a
            // late decision).
            let routes = self
                .agent_by_key(&row.agent)
                .is_some_and(|agent| agent.approvals.routes_to_approvers());
            if row.user_id == who.subject || routes {
                return Err(self.no_batch(task_id).await);
            }
            return Err(AgentError::Forbidden(task_id.to_owned()));
        };
        let requests = batch_requests(&batch);
        let handed = handed_to(&steps, batch.id);
        if !self
            .approvals
            .approvers()
            .eligible_for_batch(&row, &requests, &handed, who)
        {
            return Err(AgentError::Forbidden(task_id.to_owned()));
        }
        let Some(current) = batch.expires_at.clone() else {
            return Err(AgentError::InvalidParams(format!(
                "the batch of task {task_id} has no deadline to extend: its agent sets no \
                 approval_timeout"
            )));
        };
        let Some((max, max_text)) = self
            .approvals
            .approvers()
            .batch_ladder(&row.agent, &requests)
            .max_extend
        else {
            return Err(AgentError::InvalidParams(format!(
                "the batch of task {task_id} may not be extended: max_extend is not set for \
                 every one of its calls"
            )));
        };
        let extensions = steps
            .iter()
            .filter(|row| row.batch_id == batch.id && row.step.kind == BatchStepKind::Extend)
            .count();
        if extensions >= MAX_EXTENSIONS {
            return Err(AgentError::InvalidParams(format!(
                "the batch of task {task_id} was extended {extensions} times, the most one \
                 batch takes ({MAX_EXTENSIONS})"
            )));
        }
        // Refused before any arithmetic: a `by` past `max_extend` never reaches a date.
        if by_duration > max {
            return Err(AgentError::InvalidParams(format!(
                "by: {by} is more than max_extend = {max_text}, the most all extensions of the \
                 batch may add"
            )));
        }
        let first = first_deadline(&steps, batch.id, &current);
        let (Some(new), Some(limit)) = (later_by(&current, by_duration), later_by(&first, max))
        else {
            return Err(AgentError::InvalidParams(format!(
                "by: {by} moves the deadline {current} (first {first}) past the latest time \
                 this server writes"
            )));
        };
        if new > limit {
            return Err(AgentError::InvalidParams(format!(
                "by: {by} would move the deadline to {}, past max_extend = {max_text} after its \
                 first deadline {first}: it may move at most to {}",
                rfc3339(new),
                rfc3339(limit)
            )));
        }
        let expires_at = rfc3339(new);
        let raw: &[Value] = batch.requests.as_array().map_or(&[], Vec::as_slice);
        let notifications = self
            .extended_notifications(&row, raw, &expires_at, who, &current, note.as_deref())
            .await;
        let notifies = !notifications.is_empty();
        let step = BatchStep {
            kind: BatchStepKind::Extend,
            by: Some(who.subject.clone()),
            to: Vec::new(),
            note,
            expires_at: Some(expires_at.clone()),
        };
        let written = self
            .store
            .add_batch_step(task_id, batch.id, step, Some(current), notifications)
            .await?;
        if !written {
            return match self.store.pending_batch(task_id).await? {
                Some(_) => Err(AgentError::Conflict(
                    "the batch's deadline changed meanwhile; read it again and retry",
                )),
                None => Err(self.no_batch(task_id).await),
            };
        }
        self.after_commit(Committed {
            task_id,
            logged: None,
            entered: None,
            outbox: notifies,
        });
        self.watch_deadline(task_id, &expires_at);
        tracing::info!(task = %task_id, by = %who.subject, expires_at, "a batch's deadline extended");
        Ok(DeadlineExtended {
            task_id: task_id.to_owned(),
            expires_at,
            first_expires_at: first,
            max_extend: max_text,
        })
    }

    /// The `batch.extended` rows of an extension of `row`'s batch (its `requests`) by `who`
    /// from the deadline `previous` to `expires_at`, routed as its other events are.
    async fn extended_notifications(
        &self,
        row: &TaskRow,
        requests: &[Value],
        expires_at: &str,
        who: &Decider,
        previous: &str,
        note: Option<&str>,
    ) -> Vec<NewNotification> {
        if !self.notifies() {
            return Vec::new();
        }
        let about = About::task(row);
        let audience = self.audience_of(&row.agent, requests, &[]).await;
        self.notifications.for_event(
            NotificationKind::Extended,
            &row.agent,
            &audience,
            |public_url| {
                payload::extended(
                    &about,
                    public_url,
                    requests,
                    expires_at,
                    &who.subject,
                    previous,
                    note,
                )
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_extension_moves_a_deadline_at_least_a_minute() {
        assert_eq!(extension_by("15m").ok(), Some(Duration::from_secs(900)));
        assert_eq!(extension_by("1m").ok(), Some(MIN_EXTEND));
        for bad in ["1ms", "59s", "0s", "soon", ""] {
            assert!(
                matches!(extension_by(bad), Err(AgentError::InvalidParams(_))),
                "{bad:?}"
            );
        }
    }
}
