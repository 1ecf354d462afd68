//! The notifications outbox in SQLite (`store::outbox`): the sender's claims, outcomes and the
//! operator's list of failures. One process owns the file, so a claim needs no row lock: the
//! writer runs one write at a time.

use rusqlite::params;

use super::tasks::collect;
use super::{Result, Sqlite};
use crate::store::outbox::*;

impl Sqlite {
    pub async fn claim_notifications(
        &self,
        owner: &str,
        now_ms: i64,
        lease_ms: i64,
        limit: i64,
    ) -> Result<Vec<NotificationRow>> {
        let owner = owner.to_owned();
        self.write(move |connection| {
            let mut statement = connection.prepare_cached(&format!(
                "UPDATE notifications SET lease_owner = ?1, lease_until_ms = ?2
                 WHERE id IN (SELECT id FROM notifications
                              WHERE state = 'pending' AND next_attempt_ms <= ?3
                                AND (lease_until_ms IS NULL OR lease_until_ms < ?3)
                              ORDER BY next_attempt_ms LIMIT ?4)
                 RETURNING {NOTIFICATION_COLUMNS}"
            ))?;
            let rows = statement.query(params![owner, now_ms + lease_ms, now_ms, limit])?;
            collect(rows, |row| notification_from_row(row))
        })
        .await
    }

    pub async fn notification_delivered(&self, id: &str) -> Result<()> {
        let id = id.to_owned();
        self.write(move |connection| {
            connection
                .prepare_cached("DELETE FROM notifications WHERE id = ?1")?
                .execute([&id])?;
            Ok(())
        })
        .await
    }

    pub async fn notification_attempt_failed(
        &self,
        owner: &str,
        id: &str,
        error: &str,
        outcome: AttemptFailed,
    ) -> Result<()> {
        let (owner, id, error) = (owner.to_owned(), id.to_owned(), error.to_owned());
        let now = crate::store::now();
        self.write(move |connection| {
            let (state, next, failed_at) = match outcome {
                AttemptFailed::RetryAt(at) => (PENDING, at, None),
                AttemptFailed::GiveUp => (FAILED, now_ms(), Some(now.as_str())),
            };
            connection
                .prepare_cached(
                    "UPDATE notifications SET attempts = attempts + 1, last_error = ?1,
                         state = ?2, next_attempt_ms = ?3, failed_at = ?4,
                         lease_owner = NULL, lease_until_ms = NULL
                     WHERE id = ?5 AND lease_owner = ?6",
                )?
                .execute(params![error, state, next, failed_at, id, owner])?;
            Ok(())
        })
        .await
    }

    pub async fn failed_notifications(&self, limit: i64) -> Result<Vec<NotificationRow>> {
        self.read(|connection| {
            let mut statement = connection.prepare_cached(&format!(
                "SELECT {NOTIFICATION_COLUMNS} FROM notifications
                 WHERE state = 'failed' ORDER BY failed_at DESC LIMIT ?1"
            ))?;
            let rows = statement.query([limit])?;
            collect(rows, |row| notification_from_row(row))
        })
    }

    pub async fn outbox_depth(&self) -> Result<OutboxDepth> {
        self.read(|connection| {
            let mut statement = connection.prepare_cached(
                "SELECT COUNT(*), MIN(created_at) FROM notifications WHERE state = 'pending'",
            )?;
            Ok(statement.query_row([], |row| {
                Ok(OutboxDepth {
                    queued: row.get(0)?,
                    oldest_created_at: row.get(1)?,
                })
            })?)
        })
    }
}
