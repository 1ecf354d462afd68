//! Why a decision from a copy of a batch (a Slack message, a notification) decided nothing, in
//! words for the person who clicked: who decided the batch, when it no longer waits, else the
//! refusal. One answer for every copy, so a late click on any of them reads the same.

use crate::agent::error::{AgentError, Result};
use crate::store::{DecisionRow, Store};

use super::Approvals;

impl Approvals {
    /// Why a decision for `task_id`'s batch `batch_id` was refused with `err`.
    pub async fn why_refused(&self, task_id: &str, batch_id: i64, err: &AgentError) -> String {
        let waits = matches!(
            self.store.pending_batch(task_id).await,
            Ok(Some(batch)) if batch.id == batch_id
        );
        if !waits {
            if let Ok(Some(decided)) = decision_of(&self.store, task_id, batch_id).await {
                return format!(
                    "Already decided by {} ({}): {}. Nothing changed.",
                    decided.user_id,
                    decided.channel.as_str(),
                    decided.summary
                );
            }
            return "This batch no longer waits for a decision. Nothing changed.".into();
        }
        // A task its person may not decide is one they may not see either: not found.
        if matches!(err, AgentError::TaskNotFound(_)) {
            return "You may not decide this batch: you are not among its approvers. Nothing \
                    changed."
                .into();
        }
        if matches!(err, AgentError::Forbidden(_) | AgentError::NotEligible(_)) {
            return format!("You may not decide this batch: {err}. Nothing changed.");
        }
        format!("Nothing was decided: {err}")
    }
}

/// The audit row of batch `batch_id`'s decision, if it has one.
pub async fn decision_of(
    store: &Store,
    task_id: &str,
    batch_id: i64,
) -> Result<Option<DecisionRow>> {
    Ok(store
        .task_decisions(task_id)
        .await?
        .into_iter()
        .find(|decision| decision.batch_id == batch_id))
}
