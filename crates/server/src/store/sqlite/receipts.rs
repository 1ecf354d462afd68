//! Signed decision receipts in SQLite: the chain's reads and the public keys (the appends are
//! shared, `store::receipts`).

use rusqlite::params;

use super::tasks::collect;
use super::{Result, Sqlite};
use crate::store::receipts::*;
use crate::store::write::sqlite_dialect;

impl Sqlite {
    pub async fn receipts_after(&self, after: i64, limit: i64) -> Result<Vec<ReceiptRow>> {
        self.read(|connection| {
            let mut statement = connection.prepare_cached(&format!(
                "{RECEIPT_SELECT} WHERE seq > ?1 ORDER BY seq LIMIT ?2"
            ))?;
            let rows = statement.query(params![after, limit])?;
            collect(rows, |row| {
                Ok(ReceiptRow {
                    seq: row.get(0)?,
                    body: row.get(1)?,
                    kid: row.get(2)?,
                    sig: row.get(3)?,
                })
            })
        })
    }

    pub async fn receipt_keys(&self) -> Result<Vec<ReceiptKeyRow>> {
        self.read(|connection| {
            let mut statement = connection.prepare_cached(RECEIPT_KEY_SELECT)?;
            let rows = statement.query([])?;
            collect(rows, |row| {
                Ok(ReceiptKeyRow {
                    kid: row.get(0)?,
                    public_key: row.get(1)?,
                    created_at: row.get(2)?,
                })
            })
        })
    }

    pub async fn record_receipt_key(&self, key: ReceiptKeyRow) -> Result<()> {
        self.write(move |connection| {
            connection
                .prepare_cached(&sqlite_dialect(RECEIPT_KEY_INSERT))?
                .execute(params![key.kid, key.public_key, key.created_at])?;
            Ok(())
        })
        .await
    }
}
