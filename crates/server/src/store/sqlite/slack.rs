//! The Slack app channel's posted messages in SQLite.

use rusqlite::{params, Row};

use super::{Result, Sqlite};
use crate::store::people::*;
use crate::store::slack::*;

fn message_from_row(row: &Row<'_>) -> Result<SlackMessageRow> {
    Ok(SlackMessageRow {
        slack_channel: row.get(0)?,
        ts: row.get(1)?,
        channel: row.get(2)?,
        task_id: row.get(3)?,
        batch_id: row.get(4)?,
        posted_at: row.get(5)?,
    })
}

impl Sqlite {
    pub async fn put_slack_message(&self, message: SlackMessageRow) -> Result<()> {
        self.write(move |connection| {
            connection
                .prepare_cached(
                    "INSERT INTO slack_messages (slack_channel, ts, channel, task_id, batch_id,
                                                 posted_at)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6)
                     ON CONFLICT (slack_channel, ts) DO NOTHING",
                )?
                .execute(params![
                    message.slack_channel,
                    message.ts,
                    message.channel,
                    message.task_id,
                    message.batch_id,
                    message.posted_at
                ])?;
            Ok(())
        })
        .await
    }

    pub async fn slack_messages(&self, batch_id: i64) -> Result<Vec<SlackMessageRow>> {
        self.read(|connection| {
            let mut statement = connection.prepare_cached(&format!(
                "{SLACK_MESSAGE_SELECT} WHERE batch_id = ?1 ORDER BY posted_at, ts"
            ))?;
            let mut rows = statement.query([batch_id])?;
            let mut messages = Vec::new();
            while let Some(row) = rows.next()? {
                messages.push(message_from_row(row)?);
            }
            Ok(messages)
        })
    }

    pub async fn person_by_email(&self, email: &str) -> Result<Option<PersonRow>> {
        self.read(|connection| {
            let mut statement = connection.prepare_cached(&format!(
                "{PERSON_SELECT} WHERE lower(email) = lower(?1)
                 ORDER BY last_seen DESC, user_id LIMIT 1"
            ))?;
            let mut rows = statement.query([email])?;
            match rows.next()? {
                Some(row) => Ok(Some(super::people::person_from_row(row)?)),
                None => Ok(None),
            }
        })
    }
}
