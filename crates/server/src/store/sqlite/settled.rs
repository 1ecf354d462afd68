//! Calls settled at once, in SQLite.

use rusqlite::params;

use super::tasks::{collect, run_now, SqliteTransaction};
use super::{Result, Sqlite};
use crate::store::receipts::Sealer;
use crate::store::settled::*;

impl Sqlite {
    pub async fn insert_settled_call(
        &self,
        row: SettledCallRow,
        seal: Option<Sealer>,
    ) -> Result<()> {
        self.write(move |connection| {
            run_now(insert_settled(
                &mut SqliteTransaction(connection),
                &row,
                seal.as_ref(),
            ))
        })
        .await
    }

    pub async fn settled_call(&self, user_id: &str, id: &str) -> Result<Option<SettledCallRow>> {
        self.read(|connection| {
            let mut statement = connection
                .prepare_cached(&format!("{SETTLED_SELECT} WHERE id = ?1 AND user_id = ?2"))?;
            let rows = statement.query(params![id, user_id])?;
            Ok(collect(rows, |row| settled_from_row(row))?.pop())
        })
    }

    pub async fn settled_calls(&self, user_id: &str, limit: i64) -> Result<Vec<SettledCallRow>> {
        self.read(|connection| {
            let mut statement = connection.prepare_cached(&format!(
                "{SETTLED_SELECT} WHERE user_id = ?1 ORDER BY settled_at DESC, id LIMIT ?2"
            ))?;
            let rows = statement.query(params![user_id, limit])?;
            collect(rows, |row| settled_from_row(row))
        })
    }

    pub async fn settled_since(&self, since: &str) -> Result<Vec<SettledCallRow>> {
        self.read(|connection| {
            let mut statement = connection.prepare_cached(&format!(
                "{SETTLED_SELECT} WHERE settled_at >= ?1 ORDER BY settled_at, id"
            ))?;
            let rows = statement.query([since])?;
            collect(rows, |row| settled_from_row(row))
        })
    }
}
