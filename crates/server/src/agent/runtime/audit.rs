//! The audit trail: hashes of arguments, decision entries with each call's verdict and outcome,
//! pending approvals and recent decisions.

use serde::Serialize;
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::store::TaskRow;

use super::{Result, Runtime};

/// A pending batch as `GET /api/approvals` lists it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PendingApproval {
    pub task_id: String,
    pub context_id: String,
    pub agent: String,
    pub since: String,
    pub calls: Vec<Value>,
}

/// One call of an audited decision.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AuditCall {
    pub id: String,
    pub name: String,
    pub verdict: String,
    pub reason: Option<String>,
    /// sha256 of the arguments as the model proposed them.
    pub args_sha256: String,
    /// sha256 of the arguments as run (edited ones where given); none for a call that never ran.
    pub run_args_sha256: Option<String>,
    pub edited: bool,
    /// The call's result once it has run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
}

/// One decision of the audit trail.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AuditEntry {
    pub task_id: String,
    pub context_id: String,
    pub agent: String,
    pub decided_by: String,
    pub decided_at: String,
    pub channel: String,
    pub summary: String,
    pub decision: Value,
    pub calls: Vec<AuditCall>,
}

/// The sha256 of a JSON value (keys sorted, so equal arguments hash equally).
pub fn args_sha256(args: &Value) -> String {
    let digest = Sha256::digest(args.to_string().as_bytes());
    digest.iter().map(|byte| format!("{byte:02x}")).collect()
}

impl Runtime {
    // ---- approvals -------------------------------------------------------------------------

    pub async fn pending_approvals(&self, user: &str) -> Result<Vec<PendingApproval>> {
        Ok(self
            .store
            .pending_batches(user)
            .await?
            .into_iter()
            .map(|row| PendingApproval {
                task_id: row.batch.task_id,
                context_id: row.context_id,
                agent: row.agent,
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
            out.push(Self::audit_entry(&task, decision, &calls));
        }
        Ok(out)
    }

    pub(super) async fn audit(&self, row: &TaskRow) -> Result<Vec<AuditEntry>> {
        let decisions = self.store.task_decisions(&row.id).await?;
        if decisions.is_empty() {
            return Ok(Vec::new());
        }
        let calls = self.store.calls(&row.id).await?;
        Ok(decisions
            .into_iter()
            .map(|decision| Self::audit_entry(row, decision, &calls))
            .collect())
    }

    pub(super) fn audit_entry(
        task: &TaskRow,
        decision: crate::store::DecisionRow,
        calls: &[crate::store::CallRow],
    ) -> AuditEntry {
        AuditEntry {
            task_id: task.id.clone(),
            context_id: task.context_id.clone(),
            agent: task.agent.clone(),
            decided_by: decision.user_id,
            decided_at: decision.decided_at,
            channel: decision.channel,
            summary: decision.summary,
            decision: decision.decision,
            calls: calls
                .iter()
                .filter(|call| call.batch_id == Some(decision.batch_id))
                .map(|call| AuditCall {
                    id: call.call_id.clone(),
                    name: call.name.clone(),
                    verdict: call.verdict.clone().unwrap_or_default(),
                    reason: call.reason.clone(),
                    args_sha256: call.args_sha256.clone(),
                    run_args_sha256: call.run_args_sha256.clone(),
                    edited: call
                        .run_args_sha256
                        .as_ref()
                        .is_some_and(|hash| *hash != call.args_sha256),
                    result: call.result.clone(),
                })
                .collect(),
        }
    }

    /// The audit entry of one batch, with results of the calls that have finished.
    pub async fn batch_outcome(&self, task_id: &str, batch_id: i64) -> Result<Option<AuditEntry>> {
        let Some(row) = self.store.task(task_id).await? else {
            return Ok(None);
        };
        Ok(self
            .audit(&row)
            .await?
            .into_iter()
            .zip(self.store.task_decisions(task_id).await?)
            .find(|(_, decision)| decision.batch_id == batch_id)
            .map(|(entry, _)| entry))
    }
}
