//! Calls settled at once, in PostgreSQL.

use super::tasks::{map_rows, PgTransaction};
use super::{Postgres, Result};
use crate::store::receipts::Sealer;
use crate::store::settled::*;

impl Postgres {
    pub async fn insert_settled_call(
        &self,
        row: SettledCallRow,
        seal: Option<Sealer>,
    ) -> Result<()> {
        let mut transaction = self.pool.begin().await?;
        let mut shared = PgTransaction {
            connection: &mut transaction,
            replica: &self.replica,
        };
        insert_settled(&mut shared, &row, seal.as_ref()).await?;
        transaction.commit().await?;
        Ok(())
    }

    pub async fn settled_call(&self, user_id: &str, id: &str) -> Result<Option<SettledCallRow>> {
        let rows = sqlx::query(&format!("{SETTLED_SELECT} WHERE id = $1 AND user_id = $2"))
            .bind(id)
            .bind(user_id)
            .fetch_all(&self.pool)
            .await?;
        Ok(map_rows(rows, settled_from_row)?.pop())
    }

    pub async fn settled_calls(&self, user_id: &str, limit: i64) -> Result<Vec<SettledCallRow>> {
        let rows = sqlx::query(&format!(
            "{SETTLED_SELECT} WHERE user_id = $1 ORDER BY settled_at DESC, id LIMIT $2"
        ))
        .bind(user_id)
        .bind(limit)
        .fetch_all(&self.pool)
        .await?;
        map_rows(rows, settled_from_row)
    }

    pub async fn settled_since(&self, since: &str) -> Result<Vec<SettledCallRow>> {
        let rows = sqlx::query(&format!(
            "{SETTLED_SELECT} WHERE settled_at >= $1 ORDER BY settled_at, id"
        ))
        .bind(since)
        .fetch_all(&self.pool)
        .await?;
        map_rows(rows, settled_from_row)
    }
}
