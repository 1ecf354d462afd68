//! Approval deadlines and people's "always allow" policies. (The audit of calls decided without
//! asking is written with the calls, by the shared commit in `store::write`.)

use super::rows::json_text;
use super::tasks::map_rows;
use super::{
    BatchRow, BatchState, Deadline, GrantInsert, GrantRow, GrantScope, Postgres, ReplayCall, Result,
};
use crate::store::columns::*;

/// The first key of the advisory lock that one user's policy creations take, the second being
/// a hash of the user ("poli" in ASCII; the two-key locks are a space apart from the one-key
/// locks of the approvals and migrations).
const POLICIES_LOCK: i32 = 0x706f_6c69;

impl Postgres {
    pub async fn pending_deadlines(&self) -> Result<Vec<Deadline>> {
        let rows = sqlx::query(
            "SELECT task_id, id, expires_at FROM batches
             WHERE state = $1 AND expires_at IS NOT NULL ORDER BY expires_at",
        )
        .bind(BatchState::Pending.as_str())
        .fetch_all(&self.pool)
        .await?;
        map_rows(rows, deadline_from_row)
    }

    pub async fn pending_deadlines_of(&self, task_ids: &[String]) -> Result<Vec<Deadline>> {
        let rows = sqlx::query(
            "SELECT task_id, id, expires_at FROM batches
             WHERE task_id = ANY($1) AND state = $2 AND expires_at IS NOT NULL",
        )
        .bind(task_ids)
        .bind(BatchState::Pending.as_str())
        .fetch_all(&self.pool)
        .await?;
        map_rows(rows, deadline_from_row)
    }

    pub async fn last_batch(&self, task_id: &str) -> Result<Option<BatchRow>> {
        let row = sqlx::query(&format!(
            "{BATCH_SELECT} WHERE task_id = $1 ORDER BY id DESC LIMIT 1"
        ))
        .bind(task_id)
        .fetch_optional(&self.pool)
        .await?;
        row.as_ref().map(batch_from_row).transpose()
    }

    /// Stores a new policy unless its user has `cap` in force or its chat is gone. The user's
    /// lock makes concurrent creations count one after the other; the chat's row is locked
    /// (shared), so a delete of the chat waits for this insert and then takes the policy along.
    pub async fn insert_grant(&self, policy: GrantRow, cap: usize) -> Result<GrantInsert> {
        let mut transaction = self.pool.begin().await?;
        sqlx::query("SELECT pg_advisory_xact_lock($1, hashtext($2))")
            .bind(POLICIES_LOCK)
            .bind(&policy.user_id)
            .execute(&mut *transaction)
            .await?;
        if let (GrantScope::Chat, Some(context_id)) = (policy.scope, &policy.context_id) {
            let chat = sqlx::query("SELECT 1 FROM sessions WHERE id = $1 FOR SHARE")
                .bind(context_id)
                .fetch_optional(&mut *transaction)
                .await?;
            if chat.is_none() {
                return Ok(GrantInsert::NoChat);
            }
        }
        let in_force: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM policies WHERE user_id = $1 AND revoked_at IS NULL
               AND (expires_at IS NULL OR expires_at > $2) AND (uses_left IS NULL OR uses_left > 0)",
        )
        .bind(&policy.user_id)
        .bind(crate::store::now())
        .fetch_one(&mut *transaction)
        .await?;
        if in_force >= i64::try_from(cap).unwrap_or(i64::MAX) {
            return Ok(GrantInsert::AtCap);
        }
        sqlx::query(
            "INSERT INTO policies (id, user_id, agent, tool, scope, context_id, args, created_by,
                                   created_at, expires_at, uses_left)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
        )
        .bind(&policy.id)
        .bind(&policy.user_id)
        .bind(&policy.agent)
        .bind(&policy.tool)
        .bind(policy.scope.as_str())
        .bind(policy.context_id.as_deref())
        .bind(policy.args.as_ref().map(json_text).transpose()?)
        .bind(&policy.created_by)
        .bind(&policy.created_at)
        .bind(policy.expires_at.as_deref())
        .bind(policy.uses_left)
        .execute(&mut *transaction)
        .await?;
        transaction.commit().await?;
        Ok(GrantInsert::Inserted)
    }

    pub async fn grants(&self, user_id: &str) -> Result<Vec<GrantRow>> {
        let rows = sqlx::query(&format!(
            "{POLICY_SELECT} WHERE user_id = $1 AND revoked_at IS NULL
               AND (expires_at IS NULL OR expires_at > $2) AND (uses_left IS NULL OR uses_left > 0)
             ORDER BY created_at, id"
        ))
        .bind(user_id)
        .bind(crate::store::now())
        .fetch_all(&self.pool)
        .await?;
        map_rows(rows, grant_from_row)
    }

    pub async fn applicable_grants(
        &self,
        user_id: &str,
        agent: &str,
        context_id: &str,
    ) -> Result<Vec<GrantRow>> {
        let rows = sqlx::query(&format!(
            "{POLICY_SELECT} WHERE user_id = $1 AND agent = $2 AND revoked_at IS NULL
               AND (scope = $3 OR (scope = $4 AND context_id = $5))
               AND (expires_at IS NULL OR expires_at > $6) AND (uses_left IS NULL OR uses_left > 0)
             ORDER BY created_at, id"
        ))
        .bind(user_id)
        .bind(agent)
        .bind(GrantScope::Agent.as_str())
        .bind(GrantScope::Chat.as_str())
        .bind(context_id)
        .bind(crate::store::now())
        .fetch_all(&self.pool)
        .await?;
        map_rows(rows, grant_from_row)
    }

    pub async fn replay_calls(&self, since: &str) -> Result<Vec<ReplayCall>> {
        let rows = sqlx::query(REPLAY_SELECT)
            .bind(since)
            .fetch_all(&self.pool)
            .await?;
        map_rows(rows, replay_from_row)
    }

    pub async fn use_grant(&self, id: &str, now: &str) -> Result<bool> {
        // One statement: PostgreSQL re-checks the WHERE on the row it locked, so of racing
        // calls only as many as the grant has uses left change it.
        let changed = sqlx::query(
            "UPDATE policies SET uses_left = uses_left - 1
             WHERE id = $1 AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > $2)
               AND (uses_left IS NULL OR uses_left > 0)",
        )
        .bind(id)
        .bind(now)
        .execute(&self.pool)
        .await?
        .rows_affected();
        Ok(changed == 1)
    }

    pub async fn revoke_grant(&self, user_id: &str, id: &str, now: &str) -> Result<bool> {
        let changed = sqlx::query(
            "UPDATE policies SET revoked_at = $1
             WHERE id = $2 AND user_id = $3 AND revoked_at IS NULL",
        )
        .bind(now)
        .bind(id)
        .bind(user_id)
        .execute(&self.pool)
        .await?
        .rows_affected();
        Ok(changed == 1)
    }
}
