//! Decision links in SQLite.

use rusqlite::params;

use super::tasks::collect;
use super::{Result, Sqlite};
use crate::store::links::*;

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
