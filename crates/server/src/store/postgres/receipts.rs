//! Signed decision receipts in PostgreSQL: the chain's reads and the public keys (the appends
//! are shared, `store::receipts`).

use sqlx::Row;

use super::tasks::map_rows;
use super::{Postgres, Result};
use crate::store::receipts::*;

impl Postgres {
    pub async fn receipts_after(&self, after: i64, limit: i64) -> Result<Vec<ReceiptRow>> {
        let rows = sqlx::query(&format!(
            "{RECEIPT_SELECT} WHERE seq > $1 ORDER BY seq LIMIT $2"
        ))
        .bind(after)
        .bind(limit)
        .fetch_all(&self.pool)
        .await?;
        map_rows(rows, |row| {
            Ok(ReceiptRow {
                seq: row.try_get(0)?,
                body: row.try_get(1)?,
                kid: row.try_get(2)?,
                sig: row.try_get(3)?,
            })
        })
    }

    pub async fn receipt_keys(&self) -> Result<Vec<ReceiptKeyRow>> {
        let rows = sqlx::query(RECEIPT_KEY_SELECT)
            .fetch_all(&self.pool)
            .await?;
        map_rows(rows, |row| {
            Ok(ReceiptKeyRow {
                kid: row.try_get(0)?,
                public_key: row.try_get(1)?,
                created_at: row.try_get(2)?,
            })
        })
    }

    pub async fn record_receipt_key(&self, key: ReceiptKeyRow) -> Result<()> {
        sqlx::query(RECEIPT_KEY_INSERT)
            .bind(key.kid)
            .bind(key.public_key)
            .bind(key.created_at)
            .execute(&self.pool)
            .await?;
        Ok(())
    }
}
