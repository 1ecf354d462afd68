//! Decision links in PostgreSQL.

use super::tasks::map_rows;
use super::{Postgres, Result};
use crate::store::links::*;

impl Postgres {
    pub async fn insert_decision_links(&self, links: Vec<DecisionLinkRow>) -> Result<()> {
        let mut transaction = self.pool.begin().await?;
        for link in &links {
            sqlx::query(
                "INSERT INTO decision_links (token_sha256, task_id, batch_id, user_id, action,
                                             created_at, expires_at)
                 VALUES ($1, $2, $3, $4, $5, $6, $7)",
            )
            .bind(&link.token_sha256)
            .bind(&link.task_id)
            .bind(link.batch_id)
            .bind(&link.user_id)
            .bind(&link.action)
            .bind(&link.created_at)
            .bind(&link.expires_at)
            .execute(&mut *transaction)
            .await?;
        }
        transaction.commit().await?;
        Ok(())
    }

    pub async fn decision_link(&self, token_sha256: &str) -> Result<Option<DecisionLinkRow>> {
        let rows = sqlx::query(&format!("{LINK_SELECT} WHERE token_sha256 = $1"))
            .bind(token_sha256)
            .fetch_all(&self.pool)
            .await?;
        Ok(map_rows(rows, link_from_row)?.pop())
    }
}
