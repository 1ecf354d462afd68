//! The Slack app channel's posted messages in PostgreSQL.

use sqlx::postgres::PgRow;
use sqlx::Row;

use super::{Postgres, Result};
use crate::store::people::*;
use crate::store::slack::*;

fn message_from_row(row: &PgRow) -> Result<SlackMessageRow> {
    Ok(SlackMessageRow {
        slack_channel: row.try_get(0)?,
        ts: row.try_get(1)?,
        channel: row.try_get(2)?,
        task_id: row.try_get(3)?,
        batch_id: row.try_get(4)?,
        posted_at: row.try_get(5)?,
    })
}

impl Postgres {
    pub async fn put_slack_message(&self, message: SlackMessageRow) -> Result<()> {
        sqlx::query(
            "INSERT INTO slack_messages (slack_channel, ts, channel, task_id, batch_id, posted_at)
             VALUES ($1, $2, $3, $4, $5, $6)
             ON CONFLICT (slack_channel, ts) DO NOTHING",
        )
        .bind(&message.slack_channel)
        .bind(&message.ts)
        .bind(&message.channel)
        .bind(&message.task_id)
        .bind(message.batch_id)
        .bind(&message.posted_at)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    pub async fn slack_messages(&self, batch_id: i64) -> Result<Vec<SlackMessageRow>> {
        let rows = sqlx::query(&format!(
            "{SLACK_MESSAGE_SELECT} WHERE batch_id = $1 ORDER BY posted_at, ts"
        ))
        .bind(batch_id)
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(message_from_row).collect()
    }

    pub async fn person_by_email(&self, email: &str) -> Result<Option<PersonRow>> {
        let row = sqlx::query(&format!(
            "{PERSON_SELECT} WHERE lower(email) = lower($1)
             ORDER BY last_seen DESC, user_id LIMIT 1"
        ))
        .bind(email)
        .fetch_optional(&self.pool)
        .await?;
        row.as_ref().map(super::people::person_from_row).transpose()
    }
}
