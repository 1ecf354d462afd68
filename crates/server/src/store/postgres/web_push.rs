//! Web Push subscriptions in PostgreSQL.

use sqlx::postgres::PgRow;
use sqlx::Row;

use super::{Postgres, Result};
use crate::store::web_push::*;

fn subscription_from_row(row: &PgRow) -> Result<PushSubscriptionRow> {
    Ok(PushSubscriptionRow {
        id: row.try_get(0)?,
        user_id: row.try_get(1)?,
        device: row.try_get(2)?,
        endpoint: row.try_get(3)?,
        p256dh: row.try_get(4)?,
        auth: row.try_get(5)?,
        created_at: row.try_get(6)?,
    })
}

impl Postgres {
    pub async fn put_push_subscription(
        &self,
        row: PushSubscriptionRow,
        cap: usize,
    ) -> Result<bool> {
        let mut transaction = self.pool.begin().await?;
        // One enrolment of a person's at a time, so the cap holds.
        sqlx::query("SELECT pg_advisory_xact_lock(hashtext('push_subscriptions:' || $1))")
            .bind(&row.user_id)
            .execute(&mut *transaction)
            .await?;
        let held: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM push_subscriptions WHERE user_id = $1 AND endpoint <> $2",
        )
        .bind(&row.user_id)
        .bind(&row.endpoint)
        .fetch_one(&mut *transaction)
        .await?;
        if held >= cap as i64 {
            return Ok(false);
        }
        // The endpoint is the browser's: enrolled again (by anyone), it is that enrolment.
        sqlx::query("DELETE FROM push_subscriptions WHERE endpoint = $1")
            .bind(&row.endpoint)
            .execute(&mut *transaction)
            .await?;
        sqlx::query(
            "INSERT INTO push_subscriptions (id, user_id, device, endpoint, p256dh, auth, created_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7)",
        )
        .bind(&row.id)
        .bind(&row.user_id)
        .bind(&row.device)
        .bind(&row.endpoint)
        .bind(&row.p256dh)
        .bind(&row.auth)
        .bind(&row.created_at)
        .execute(&mut *transaction)
        .await?;
        transaction.commit().await?;
        Ok(true)
    }

    pub async fn push_subscriptions(&self, user_id: &str) -> Result<Vec<PushSubscriptionRow>> {
        let rows = sqlx::query(&format!(
            "{PUSH_SUBSCRIPTION_SELECT} WHERE user_id = $1 ORDER BY created_at, id"
        ))
        .bind(user_id)
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(subscription_from_row).collect()
    }

    pub async fn delete_push_subscription(&self, user_id: &str, id: &str) -> Result<bool> {
        let done = sqlx::query("DELETE FROM push_subscriptions WHERE user_id = $1 AND id = $2")
            .bind(user_id)
            .bind(id)
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected() > 0)
    }
}
