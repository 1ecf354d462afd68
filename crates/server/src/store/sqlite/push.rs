//! A2A push configs and the server's signing keys in SQLite.

use rusqlite::{params, OptionalExtension, Row};

use super::{Result, Sqlite};
use crate::store::push::*;

fn push_from_row(row: &Row<'_>) -> rusqlite::Result<PushConfigRow> {
    Ok(PushConfigRow {
        task_id: row.get(0)?,
        id: row.get(1)?,
        user_id: row.get(2)?,
        version: row.get(3)?,
        url: row.get(4)?,
        token: row.get(5)?,
        auth_scheme: row.get(6)?,
        auth_credentials: row.get(7)?,
        created_at: row.get(8)?,
    })
}

impl Sqlite {
    /// Writes `config` (replacing the task's config of the same id) unless the task already has
    /// `cap` others.
    pub async fn put_push_config(&self, config: PushConfigRow, cap: usize) -> Result<PushPut> {
        let cap = i64::try_from(cap).unwrap_or(i64::MAX);
        self.write(move |connection| {
            let others: i64 = connection
                .prepare_cached(
                    "SELECT COUNT(*) FROM push_configs WHERE task_id = ?1 AND id <> ?2",
                )?
                .query_row([&config.task_id, &config.id], |row| row.get(0))?;
            if others >= cap {
                return Ok(PushPut::AtCap);
            }
            connection
                .prepare_cached(
                    "INSERT OR REPLACE INTO push_configs (task_id, id, user_id, version, url, token,
                         auth_scheme, auth_credentials, created_at)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
                )?
                .execute(params![
                    config.task_id,
                    config.id,
                    config.user_id,
                    config.version,
                    config.url,
                    config.token,
                    config.auth_scheme,
                    config.auth_credentials,
                    config.created_at
                ])?;
            Ok(PushPut::Written)
        })
        .await
    }

    /// A task's push configs, oldest first.
    pub async fn push_configs(&self, task_id: &str) -> Result<Vec<PushConfigRow>> {
        self.read(|connection| {
            let mut statement = connection.prepare_cached(&format!(
                "{PUSH_SELECT} WHERE task_id = ?1 ORDER BY created_at, id"
            ))?;
            let rows = statement.query_map([task_id], push_from_row)?;
            Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
        })
    }

    pub async fn delete_push_config(&self, task_id: &str, id: &str) -> Result<bool> {
        let (task_id, id) = (task_id.to_owned(), id.to_owned());
        self.write(move |connection| {
            let deleted = connection
                .prepare_cached("DELETE FROM push_configs WHERE task_id = ?1 AND id = ?2")?
                .execute([&task_id, &id])?;
            Ok(deleted == 1)
        })
        .await
    }

    /// The signing key named `name`: the stored one, or `candidate`, stored now, when there
    /// is none yet.
    pub async fn server_key(&self, name: &str, candidate: String) -> Result<String> {
        let name = name.to_owned();
        self.write(move |connection| {
            connection
                .prepare_cached(
                    "INSERT INTO server_keys (name, pkcs8, created_at) VALUES (?1, ?2, ?3)
                     ON CONFLICT (name) DO NOTHING",
                )?
                .execute(params![name, candidate, super::now()])?;
            let stored: Option<String> = connection
                .prepare_cached("SELECT pkcs8 FROM server_keys WHERE name = ?1")?
                .query_row([&name], |row| row.get(0))
                .optional()?;
            stored.ok_or(crate::store::StoreError::NotFound)
        })
        .await
    }
}
