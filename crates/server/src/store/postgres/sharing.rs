//! Share links and feedback in PostgreSQL.

use super::tasks::map_rows;
use super::{Postgres, Result};
use crate::store::sharing::*;

impl Postgres {
    pub async fn insert_share(&self, share: ShareRow) -> Result<()> {
        sqlx::query(
            "INSERT INTO shares (id, context_id, user_id, token_sha256, created_at)
             VALUES ($1, $2, $3, $4, $5)",
        )
        .bind(&share.id)
        .bind(&share.context_id)
        .bind(&share.user_id)
        .bind(&share.token_sha256)
        .bind(&share.created_at)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    pub async fn shares(&self, context_id: &str) -> Result<Vec<ShareRow>> {
        let rows = sqlx::query(&format!(
            "{SHARE_SELECT} WHERE context_id = $1 AND revoked_at IS NULL ORDER BY created_at, seq"
        ))
        .bind(context_id)
        .fetch_all(&self.pool)
        .await?;
        map_rows(rows, share_from_row)
    }

    pub async fn live_share(&self, token_sha256: &str) -> Result<Option<ShareRow>> {
        let rows = sqlx::query(&format!(
            "{SHARE_SELECT} WHERE token_sha256 = $1 AND revoked_at IS NULL"
        ))
        .bind(token_sha256)
        .fetch_all(&self.pool)
        .await?;
        Ok(map_rows(rows, share_from_row)?.pop())
    }

    pub async fn revoke_share(&self, context_id: &str, id: &str, now: &str) -> Result<bool> {
        let changed = sqlx::query(
            "UPDATE shares SET revoked_at = $1
             WHERE id = $2 AND context_id = $3 AND revoked_at IS NULL",
        )
        .bind(now)
        .bind(id)
        .bind(context_id)
        .execute(&self.pool)
        .await?
        .rows_affected();
        Ok(changed == 1)
    }

    pub async fn insert_feedback(&self, feedback: FeedbackRow) -> Result<()> {
        sqlx::query(
            "INSERT INTO feedback (id, user_id, context_id, task_id, message_id, rating, reason,
                                   created_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
        )
        .bind(&feedback.id)
        .bind(&feedback.user_id)
        .bind(&feedback.context_id)
        .bind(&feedback.task_id)
        .bind(feedback.message_id.as_deref())
        .bind(&feedback.rating)
        .bind(feedback.reason.as_deref())
        .bind(&feedback.created_at)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    pub async fn user_feedback(&self, user_id: &str) -> Result<Vec<FeedbackRow>> {
        let rows = sqlx::query(&format!(
            "{FEEDBACK_SELECT} WHERE user_id = $1 ORDER BY created_at, seq"
        ))
        .bind(user_id)
        .fetch_all(&self.pool)
        .await?;
        map_rows(rows, feedback_from_row)
    }

    pub async fn context_feedback(&self, context_id: &str) -> Result<Vec<FeedbackRow>> {
        let rows = sqlx::query(&format!(
            "{FEEDBACK_SELECT} WHERE context_id = $1 ORDER BY created_at, seq"
        ))
        .bind(context_id)
        .fetch_all(&self.pool)
        .await?;
        map_rows(rows, feedback_from_row)
    }
}
