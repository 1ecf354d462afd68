//! The notifications outbox in PostgreSQL (`store::outbox`): the sender's claims (rows another
//! replica is claiming at the same moment are skipped, not waited for), outcomes and the
//! operator's list of failures.

use super::tasks::map_rows;
use super::{Postgres, Result};
use crate::store::outbox::*;

impl Postgres {
    pub async fn claim_notifications(
        &self,
        owner: &str,
        now_ms: i64,
        lease_ms: i64,
        limit: i64,
    ) -> Result<Vec<NotificationRow>> {
        let rows = sqlx::query(&format!(
            "UPDATE notifications SET lease_owner = $1, lease_until_ms = $2
             WHERE id IN (SELECT id FROM notifications
                          WHERE state = $5 AND next_attempt_ms <= $3
                            AND (lease_until_ms IS NULL OR lease_until_ms < $3)
                          ORDER BY next_attempt_ms LIMIT $4
                          FOR UPDATE SKIP LOCKED)
             RETURNING {NOTIFICATION_COLUMNS}"
        ))
        .bind(owner)
        .bind(now_ms + lease_ms)
        .bind(now_ms)
        .bind(limit)
        .bind(PENDING)
        .fetch_all(&self.pool)
        .await?;
        map_rows(rows, notification_from_row)
    }

    pub async fn notification_delivered(&self, id: &str) -> Result<()> {
        sqlx::query("DELETE FROM notifications WHERE id = $1")
            .bind(id)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    pub async fn notification_attempt_failed(
        &self,
        owner: &str,
        id: &str,
        error: &str,
        outcome: AttemptFailed,
    ) -> Result<()> {
        let now = crate::store::now();
        let (state, next, failed_at) = match outcome {
            AttemptFailed::RetryAt(at) => (PENDING, at, None),
            AttemptFailed::GiveUp => (FAILED, now_ms(), Some(now.as_str())),
        };
        sqlx::query(
            "UPDATE notifications SET attempts = attempts + 1, last_error = $1, state = $2,
                 next_attempt_ms = $3, failed_at = $4, lease_owner = NULL, lease_until_ms = NULL
             WHERE id = $5 AND lease_owner = $6",
        )
        .bind(error)
        .bind(state)
        .bind(next)
        .bind(failed_at)
        .bind(id)
        .bind(owner)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    pub async fn failed_notifications(&self, limit: i64) -> Result<Vec<NotificationRow>> {
        let rows = sqlx::query(&format!(
            "SELECT {NOTIFICATION_COLUMNS} FROM notifications
             WHERE state = $1 ORDER BY failed_at DESC LIMIT $2"
        ))
        .bind(FAILED)
        .bind(limit)
        .fetch_all(&self.pool)
        .await?;
        map_rows(rows, notification_from_row)
    }

    pub async fn outbox_depth(&self) -> Result<OutboxDepth> {
        let (queued, oldest_created_at): (i64, Option<String>) =
            sqlx::query_as("SELECT COUNT(*), MIN(created_at) FROM notifications WHERE state = $1")
                .bind(PENDING)
                .fetch_one(&self.pool)
                .await?;
        Ok(OutboxDepth {
            queued,
            oldest_created_at,
        })
    }
}
