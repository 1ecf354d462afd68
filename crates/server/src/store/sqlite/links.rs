//! Decision links in SQLite.

use rusqlite::{params, Connection};

use super::tasks::collect;
use super::{Result, Sqlite, StoreError};
use crate::store::links::*;

/// Marks the link `token_sha256` of batch `batch_id` used at `now`, inside a decision's
/// transaction: a link already used, expired or of another batch fails the whole decision.
pub(super) fn use_link(
    connection: &Connection,
    token_sha256: &str,
    batch_id: i64,
    now: &str,
) -> Result<()> {
    let used = connection
        .prepare_cached(
            "UPDATE decision_links SET used_at = ?1
             WHERE token_sha256 = ?2 AND batch_id = ?3 AND used_at IS NULL AND expires_at > ?1",
        )?
        .execute(params![now, token_sha256, batch_id])?;
    if used != 1 {
        return Err(StoreError::Conflict(
            "the decision link was already used or has expired",
        ));
    }
    Ok(())
}

impl Sqlite {
    pub async fn insert_decision_links(&self, links: Vec<DecisionLinkRow>) -> Result<()> {
        self.write(move |connection| {
            let mut insert = connection.prepare_cached(
                "INSERT INTO decision_links (token_sha256, task_id, batch_id, user_id, action,
                                             created_at, expires_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            )?;
            for link in &links {
                insert.execute(params![
                    link.token_sha256,
                    link.task_id,
                    link.batch_id,
                    link.user_id,
                    link.action,
                    link.created_at,
                    link.expires_at
                ])?;
            }
            Ok(())
        })
        .await
    }

    pub async fn decision_link(&self, token_sha256: &str) -> Result<Option<DecisionLinkRow>> {
        self.read(|connection| {
            let mut statement =
                connection.prepare_cached(&format!("{LINK_SELECT} WHERE token_sha256 = ?1"))?;
            let mut rows = collect(statement.query([token_sha256])?, |row| link_from_row(row))?;
            Ok(rows.pop())
        })
    }
}
