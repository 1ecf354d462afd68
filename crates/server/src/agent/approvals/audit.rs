//! The audit trail: hashes of arguments, decision entries with each call's verdict and outcome,
//! pending approvals and recent decisions.

use signoff_protocol::hitl::question::answers_from_args;
use signoff_protocol::hitl::RecordedDecision;
use signoff_protocol::rest::{
    AuditVerdict, BatchStepEntry, CallVoteEntry, Decider, DeciderAuth, DecisionChannel,
};

use crate::store::{BatchStepRow, CallRow, CallVote, Channel, StoreError, TaskRow, Verdict};

use crate::agent::error::Result;

use super::Approvals;

/// Pending batches and audit entries as `GET /api/approvals` lists them: the REST contract's
/// types (docs/rest.md, Approvals).
pub use signoff_protocol::rest::{AuditCall, AuditEntry, AuditParent, PendingApproval};

/// A stored channel as the REST contract names it.
fn wire_channel(channel: Channel) -> DecisionChannel {
    match channel {
        Channel::A2a => DecisionChannel::A2a,
        Channel::Text => DecisionChannel::Text,
        Channel::Rest => DecisionChannel::Rest,
        Channel::Cancel => DecisionChannel::Cancel,
        Channel::Policy => DecisionChannel::Policy,
        Channel::Rule => DecisionChannel::Rule,
        Channel::Expiry => DecisionChannel::Expiry,
        Channel::Link => DecisionChannel::Link,
        Channel::Slack => DecisionChannel::Slack,
        Channel::Reviewer => DecisionChannel::Reviewer,
        Channel::WebPush => DecisionChannel::WebPush,
        Channel::McpClient => DecisionChannel::McpClient,
    }
}

/// A stored verdict as the REST contract names it.
pub fn wire_verdict(verdict: Verdict) -> AuditVerdict {
    match verdict {
        Verdict::Approve => AuditVerdict::Approve,
        Verdict::Deny => AuditVerdict::Deny,
        Verdict::Cancel => AuditVerdict::Cancel,
        Verdict::Expire => AuditVerdict::Expire,
    }
}

/// One person's vote on `call` as the audit shows it: counted when the call's outcome is the
/// vote's (an approval of the arguments that ran, or a rejection of a rejected call).
fn vote_entry(call: &CallRow, vote: &CallVote) -> CallVoteEntry {
    let counted = match vote.verdict {
        Verdict::Approve => call.run_args_sha256.as_deref() == Some(vote.args_sha256.as_str()),
        Verdict::Deny | Verdict::Cancel | Verdict::Expire => call.verdict == Some(vote.verdict),
    };
    CallVoteEntry {
        by: vote.user_id.clone(),
        email: vote.email.clone(),
        verdict: wire_verdict(vote.verdict),
        reason: vote.reason.clone(),
        eligible_by: vote.eligible_by.clone(),
        channel: wire_channel(vote.channel),
        at: vote.voted_at.clone(),
        args_sha256: vote.args_sha256.clone(),
        counted,
    }
}

/// The steps of batch `batch_id` among `steps`, as the audit shows them.
fn step_entries(steps: &[BatchStepRow], batch_id: i64) -> Vec<BatchStepEntry> {
    steps
        .iter()
        .filter(|row| row.batch_id == batch_id)
        .map(|row| BatchStepEntry {
            kind: row.step.kind.as_str().to_owned(),
            by: row.step.by.clone(),
            to: row.step.to.clone(),
            note: row.step.note.clone(),
            expires_at: row.step.expires_at.clone(),
            at: row.created_at.clone(),
        })
        .collect()
}

impl Approvals {
    // ---- approvals -------------------------------------------------------------------------

    pub async fn pending_approvals(&self, user: &str) -> Result<Vec<PendingApproval>> {
        // (A local subagent's batch is not listed: it is decided in its parent's, where its
        // calls are nested.)
        let batches = self.store.pending_batches(user).await?;
        let task_ids: Vec<String> = batches
            .iter()
            .map(|row| row.batch.task_id.clone())
            .collect();
        let deadlines = self.store.pending_deadlines_of(&task_ids).await?;
        Ok(batches
            .into_iter()
            .map(|row| PendingApproval {
                routing: None,
                ladder: None,
                expires_at: deadlines
                    .iter()
                    .find(|deadline| deadline.batch_id == row.batch.id)
                    .map(|deadline| deadline.expires_at.clone()),
                batch_id: row.batch.id,
                task_id: row.batch.task_id,
                context_id: row.context_id,
                agent: row.agent,
                title: row.title,
                since: row.batch.created_at,
                calls: row.batch.requests.as_array().cloned().unwrap_or_default(),
            })
            .collect())
    }

    pub async fn recent_decisions(&self, user: &str, limit: i64) -> Result<Vec<AuditEntry>> {
        let mut out = Vec::new();
        for decision in self.store.recent_decisions(user, limit).await? {
            let Some(task) = self.store.task(&decision.task_id).await? else {
                continue;
            };
            let calls = self.store.calls(&task.id).await?;
            let votes = self.store.task_votes(&task.id).await?;
            let steps = self.store.batch_steps(&task.id).await?;
            let batch_id = decision.batch_id;
            let mut entry = Self::audit_entry(&task, decision, &calls, &votes)?;
            entry.parent = self.audit_parent(&task).await?;
            entry.steps = step_entries(&steps, batch_id);
            out.push(entry);
        }
        Ok(out)
    }

    pub async fn audit(&self, row: &TaskRow) -> Result<Vec<AuditEntry>> {
        let decisions = self.store.task_decisions(&row.id).await?;
        if decisions.is_empty() {
            return Ok(Vec::new());
        }
        let calls = self.store.calls(&row.id).await?;
        let votes = self.store.task_votes(&row.id).await?;
        let steps = self.store.batch_steps(&row.id).await?;
        let parent = self.audit_parent(row).await?;
        decisions
            .into_iter()
            .map(|decision| {
                Ok(AuditEntry {
                    parent: parent.clone(),
                    steps: step_entries(&steps, decision.batch_id),
                    ..Self::audit_entry(row, decision, &calls, &votes)?
                })
            })
            .collect()
    }

    /// For a subagent's task: the parent task and agent-tool call that started it.
    pub async fn audit_parent(&self, task: &TaskRow) -> Result<Option<AuditParent>> {
        let link = self.store.subagent_parent(&task.id).await?;
        let mut parent = None;
        if let Some(link) = link {
            let agent = self
                .store
                .task(&link.parent_task_id)
                .await?
                .map(|row| row.agent)
                .unwrap_or_default();
            parent = Some(AuditParent {
                task_id: link.parent_task_id,
                call_id: link.parent_call_id,
                agent,
            });
        }
        Ok(parent)
    }

    /// One audit row as the REST contract types it. A stored decision that fits no kind of
    /// decision is a corrupt row, as unknown column text is.
    pub fn audit_entry(
        task: &TaskRow,
        decision: crate::store::DecisionRow,
        calls: &[crate::store::CallRow],
        votes: &[(i64, CallVote)],
    ) -> Result<AuditEntry> {
        let batch_id = decision.batch_id;
        let recorded = RecordedDecision::from_value(&decision.decision).map_err(|err| {
            StoreError::Corrupt(format!(
                "decision {} of task {}: {err}",
                decision.id, task.id
            ))
        })?;
        let decider_auth = match decision.decider_auth.as_deref() {
            None => None,
            Some(text) => Some(DeciderAuth::parse(text).ok_or_else(|| {
                StoreError::Corrupt(format!(
                    "decision {} of task {}: unknown authentication {text:?}",
                    decision.id, task.id
                ))
            })?),
        };
        Ok(AuditEntry {
            task_id: task.id.clone(),
            context_id: task.context_id.clone(),
            agent: task.agent.clone(),
            decided_by: Decider(decision.user_id),
            decider_auth,
            decided_at: decision.decided_at,
            channel: wire_channel(decision.channel),
            policy_id: recorded.policy_id().map(str::to_owned),
            summary: decision.summary,
            decision: recorded,
            calls: calls
                .iter()
                .filter(|call| call.batch_id == Some(decision.batch_id))
                // A call of the batch without a verdict was not decided in it.
                .filter_map(|call| Some((call, wire_verdict(call.verdict?))))
                .map(|(call, verdict)| AuditCall {
                    id: call.call_id.clone(),
                    name: call.name.clone(),
                    verdict,
                    reason: call.reason.clone(),
                    args_sha256: call.args_sha256.clone(),
                    run_args_sha256: call.run_args_sha256.clone(),
                    // A question call runs with its answers added to its arguments: no edit.
                    edited: call
                        .run_args_sha256
                        .as_ref()
                        .is_some_and(|hash| *hash != call.args_sha256)
                        && call
                            .run_args
                            .as_ref()
                            .is_none_or(|args| answers_from_args(args).is_none()),
                    result: call.result.clone(),
                    why: call
                        .why
                        .as_ref()
                        .and_then(signoff_protocol::hitl::Why::from_value),
                    votes: votes
                        .iter()
                        .filter(|(batch, vote)| *batch == batch_id && vote.call_id == call.call_id)
                        .map(|(_, vote)| vote_entry(call, vote))
                        .collect(),
                })
                .collect(),
            parent: None,
            steps: Vec::new(),
        })
    }

    /// The audit entry of one batch, with results of the calls that have finished.
    pub async fn batch_outcome(&self, task_id: &str, batch_id: i64) -> Result<Option<AuditEntry>> {
        let Some(row) = self.store.task(task_id).await? else {
            return Ok(None);
        };
        let decision = self
            .store
            .task_decisions(task_id)
            .await?
            .into_iter()
            .find(|decision| decision.batch_id == batch_id);
        let Some(decision) = decision else {
            return Ok(None);
        };
        let calls = self.store.calls(task_id).await?;
        let votes = self.store.task_votes(task_id).await?;
        let mut entry = Self::audit_entry(&row, decision, &calls, &votes)?;
        entry.parent = self.audit_parent(&row).await?;
        Ok(Some(entry))
    }
}
