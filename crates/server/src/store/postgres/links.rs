//! Decision links in PostgreSQL.

use sqlx::PgConnection;

use super::tasks::map_rows;
use super::{Postgres, Result, StoreError};
use crate::store::links::*;

/// Marks the link `token_sha256` of batch `batch_id` used at `now`, inside a decision's
/// transaction: a link already used, expired or of another batch fails the whole decision.
pub(super) async fn use_link(
    connection: &mut PgConnection,
    token_sha256: &str,
    batch_id: i64,
    now: &str,
) -> Result<()> {
    let used = sqlx::query(
        "UPDATE decision_links SET used_at = $1
         WHERE token_sha256 = $2 AND batch_id = $3 AND used_at IS NULL AND expires_at > $1",
    )
    .bind(now)
    .bind(token_sha256)
    .bind(batch_id)
    .execute(&mut *connection)
    .await?
    .rows_affected();
    if used != 1 {
        return Err(StoreError::Conflict(
            "the decision link was already used or has expired",
        ));
    }
    Ok(())
}

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
