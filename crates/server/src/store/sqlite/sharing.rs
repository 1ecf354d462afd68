//! Share links and feedback in SQLite.

use rusqlite::params;

use super::tasks::collect;
use super::{Result, Sqlite};
use crate::store::sharing::*;

impl Sqlite {
    pub async fn insert_share(&self, share: ShareRow) -> Result<()> {
        self.write(move |connection| {
            connection
                .prepare_cached(
                    "INSERT INTO shares (id, context_id, user_id, token_sha256, created_at)
                     VALUES (?1, ?2, ?3, ?4, ?5)",
                )?
                .execute(params![
                    share.id,
                    share.context_id,
                    share.user_id,
                    share.token_sha256,
                    share.created_at
                ])?;
            Ok(())
        })
        .await
    }

    pub async fn shares(&self, context_id: &str) -> Result<Vec<ShareRow>> {
        self.read(|connection| {
            let mut statement = connection.prepare_cached(&format!(
                "{SHARE_SELECT} WHERE context_id = ?1 AND revoked_at IS NULL
                 ORDER BY created_at, rowid"
            ))?;
            let rows = collect(statement.query([context_id])?, |row| share_from_row(row))?;
            Ok(rows)
        })
    }

    pub async fn live_share(&self, token_sha256: &str) -> Result<Option<ShareRow>> {
        self.read(|connection| {
            let mut statement = connection.prepare_cached(&format!(
                "{SHARE_SELECT} WHERE token_sha256 = ?1 AND revoked_at IS NULL"
            ))?;
            let mut rows = collect(statement.query([token_sha256])?, |row| share_from_row(row))?;
            Ok(rows.pop())
        })
    }

    pub async fn revoke_share(&self, context_id: &str, id: &str, now: &str) -> Result<bool> {
        let (context_id, id, now) = (context_id.to_owned(), id.to_owned(), now.to_owned());
        self.write(move |connection| {
            let changed = connection
                .prepare_cached(
                    "UPDATE shares SET revoked_at = ?1
                     WHERE id = ?2 AND context_id = ?3 AND revoked_at IS NULL",
                )?
                .execute(params![now, id, context_id])?;
            Ok(changed == 1)
        })
        .await
    }

    pub async fn insert_feedback(&self, feedback: FeedbackRow) -> Result<()> {
        self.write(move |connection| {
            connection
                .prepare_cached(
                    "INSERT INTO feedback (id, user_id, context_id, task_id, message_id, rating,
                                           reason, created_at)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                )?
                .execute(params![
                    feedback.id,
                    feedback.user_id,
                    feedback.context_id,
                    feedback.task_id,
                    feedback.message_id,
                    feedback.rating,
                    feedback.reason,
                    feedback.created_at
                ])?;
            Ok(())
        })
        .await
    }

    pub async fn user_feedback(&self, user_id: &str) -> Result<Vec<FeedbackRow>> {
        self.read(|connection| {
            let mut statement = connection.prepare_cached(&format!(
                "{FEEDBACK_SELECT} WHERE user_id = ?1 ORDER BY created_at, rowid"
            ))?;
            let rows = collect(statement.query([user_id])?, |row| feedback_from_row(row))?;
            Ok(rows)
        })
    }

    pub async fn context_feedback(&self, context_id: &str) -> Result<Vec<FeedbackRow>> {
        self.read(|connection| {
            let mut statement = connection.prepare_cached(&format!(
                "{FEEDBACK_SELECT} WHERE context_id = ?1 ORDER BY created_at, rowid"
            ))?;
            let rows = collect(statement.query([context_id])?, |row| feedback_from_row(row))?;
            Ok(rows)
        })
    }
}
