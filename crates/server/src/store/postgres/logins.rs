//! Browser sign-ins in PostgreSQL.

use sqlx::postgres::PgRow;
use sqlx::Row;

use super::{Postgres, Result};
use crate::store::logins::*;

fn login_from_row(row: &PgRow) -> Result<LoginRow> {
    Ok(LoginRow {
        id_sha256: row.try_get(0)?,
        subject: row.try_get(1)?,
        name: row.try_get(2)?,
        email: row.try_get(3)?,
        groups: groups_from_json(&row.try_get::<String, _>(4)?)?,
        refresh_token: row.try_get(5)?,
        id_token: row.try_get(6)?,
        expires_at: row.try_get(7)?,
        created_at: row.try_get(8)?,
    })
}

impl Postgres {
    pub async fn put_login(&self, login: LoginRow) -> Result<()> {
        sqlx::query(
            "INSERT INTO logins (id_sha256, subject, name, email, groups_json, refresh_token,
                                 id_token, expires_at, created_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
             ON CONFLICT (id_sha256) DO UPDATE SET subject = $2, name = $3, email = $4,
                 groups_json = $5, refresh_token = $6, id_token = $7, expires_at = $8",
        )
        .bind(&login.id_sha256)
        .bind(&login.subject)
        .bind(login.name.as_deref())
        .bind(login.email.as_deref())
        .bind(groups_json(&login.groups)?)
        .bind(login.refresh_token.as_deref())
        .bind(login.id_token.as_deref())
        .bind(&login.expires_at)
        .bind(&login.created_at)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    pub async fn login(&self, id_sha256: &str) -> Result<Option<LoginRow>> {
        let row = sqlx::query(&format!("{LOGIN_SELECT} WHERE id_sha256 = $1"))
            .bind(id_sha256)
            .fetch_optional(&self.pool)
            .await?;
        row.as_ref().map(login_from_row).transpose()
    }

    pub async fn login_email(&self, subject: &str) -> Result<Option<String>> {
        let email: Option<(String,)> = sqlx::query_as(
            "SELECT email FROM logins WHERE subject = $1 AND email IS NOT NULL
             ORDER BY created_at DESC LIMIT 1",
        )
        .bind(subject)
        .fetch_optional(&self.pool)
        .await?;
        Ok(email.map(|(email,)| email))
    }

    pub async fn delete_login(&self, id_sha256: &str) -> Result<bool> {
        let deleted = sqlx::query("DELETE FROM logins WHERE id_sha256 = $1")
            .bind(id_sha256)
            .execute(&self.pool)
            .await?
            .rows_affected();
        Ok(deleted == 1)
    }

    pub async fn sweep_logins(
        &self,
        expired_before: &str,
        idle_before: &str,
        attempts_before: &str,
    ) -> Result<(u64, u64)> {
        let sessions = sqlx::query(&sweep_sessions_sql("$1", "$2"))
            .bind(expired_before)
            .bind(idle_before)
            .execute(&self.pool)
            .await?
            .rows_affected();
        let attempts = sqlx::query("DELETE FROM login_attempts WHERE created_at < $1")
            .bind(attempts_before)
            .execute(&self.pool)
            .await?
            .rows_affected();
        Ok((sessions, attempts))
    }
}
