//! A2A push configs and the server's signing keys in PostgreSQL.

use sqlx::postgres::PgRow;
use sqlx::Row;

use super::{Postgres, Result};
use crate::store::now;
use crate::store::push::*;

/// The advisory lock that orders the puts of one task's push configs (the cap's count).
const PUSH_LOCK: i32 = 0x7075_7368;

fn push_from_row(row: &PgRow) -> Result<PushConfigRow> {
    Ok(PushConfigRow {
        task_id: row.try_get(0)?,
        id: row.try_get(1)?,
        user_id: row.try_get(2)?,
        version: row.try_get(3)?,
        url: row.try_get(4)?,
        token: row.try_get(5)?,
        auth_scheme: row.try_get(6)?,
        auth_credentials: row.try_get(7)?,
        created_at: row.try_get(8)?,
    })
}

impl Postgres {
    /// Writes `config` (replacing the task's config of the same id) unless the task already has
    /// `cap` others; two replicas putting at once are ordered by a lock on the task.
    pub async fn put_push_config(&self, config: PushConfigRow, cap: usize) -> Result<PushPut> {
        let mut transaction = self.pool.begin().await?;
        sqlx::query("SELECT pg_advisory_xact_lock($1, hashtext($2))")
            .bind(PUSH_LOCK)
            .bind(&config.task_id)
            .execute(&mut *transaction)
            .await?;
        let others: i64 =
            sqlx::query_scalar("SELECT COUNT(*) FROM push_configs WHERE task_id = $1 AND id <> $2")
                .bind(&config.task_id)
                .bind(&config.id)
                .fetch_one(&mut *transaction)
                .await?;
        if others >= i64::try_from(cap).unwrap_or(i64::MAX) {
            return Ok(PushPut::AtCap);
        }
        sqlx::query(
            "INSERT INTO push_configs (task_id, id, user_id, version, url, token, auth_scheme,
                                       auth_credentials, created_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
             ON CONFLICT (task_id, id) DO UPDATE SET user_id = $3, version = $4, url = $5,
                 token = $6, auth_scheme = $7, auth_credentials = $8, created_at = $9",
        )
        .bind(&config.task_id)
        .bind(&config.id)
        .bind(&config.user_id)
        .bind(&config.version)
        .bind(&config.url)
        .bind(config.token.as_deref())
        .bind(config.auth_scheme.as_deref())
        .bind(config.auth_credentials.as_deref())
        .bind(&config.created_at)
        .execute(&mut *transaction)
        .await?;
        transaction.commit().await?;
        Ok(PushPut::Written)
    }

    /// A task's push configs, oldest first.
    pub async fn push_configs(&self, task_id: &str) -> Result<Vec<PushConfigRow>> {
        let rows = sqlx::query(&format!(
            "{PUSH_SELECT} WHERE task_id = $1 ORDER BY created_at, id"
        ))
        .bind(task_id)
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(push_from_row).collect()
    }

    pub async fn delete_push_config(&self, task_id: &str, id: &str) -> Result<bool> {
        let deleted = sqlx::query("DELETE FROM push_configs WHERE task_id = $1 AND id = $2")
            .bind(task_id)
            .bind(id)
            .execute(&self.pool)
            .await?
            .rows_affected();
        Ok(deleted == 1)
    }

    /// The signing key named `name`: the stored one, or `candidate`, stored now, when there
    /// is none yet (the first replica's key wins; the others read it).
    pub async fn server_key(&self, name: &str, candidate: String) -> Result<String> {
        sqlx::query(
            "INSERT INTO server_keys (name, pkcs8, created_at) VALUES ($1, $2, $3)
             ON CONFLICT (name) DO NOTHING",
        )
        .bind(name)
        .bind(&candidate)
        .bind(now())
        .execute(&self.pool)
        .await?;
        Ok(
            sqlx::query_scalar("SELECT pkcs8 FROM server_keys WHERE name = $1")
                .bind(name)
                .fetch_one(&self.pool)
                .await?,
        )
    }
}
