//! Browser sign-ins in SQLite.

use rusqlite::{params, Row};

use super::{Result, Sqlite};
use crate::store::logins::*;

fn login_from_row(row: &Row<'_>) -> Result<LoginRow> {
    Ok(LoginRow {
        id_sha256: row.get(0)?,
        subject: row.get(1)?,
        name: row.get(2)?,
        email: row.get(3)?,
        groups: groups_from_json(&row.get::<_, String>(4)?)?,
        refresh_token: row.get(5)?,
        id_token: row.get(6)?,
        expires_at: row.get(7)?,
        created_at: row.get(8)?,
    })
}

impl Sqlite {
    pub async fn put_login(&self, login: LoginRow) -> Result<()> {
        let groups = groups_json(&login.groups)?;
        self.write(move |connection| {
            connection
                .prepare_cached(
                    "INSERT OR REPLACE INTO logins (id_sha256, subject, name, email, groups_json,
                         refresh_token, id_token, expires_at, created_at)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
                )?
                .execute(params![
                    login.id_sha256,
                    login.subject,
                    login.name,
                    login.email,
                    groups,
                    login.refresh_token,
                    login.id_token,
                    login.expires_at,
                    login.created_at
                ])?;
            Ok(())
        })
        .await
    }

    pub async fn login(&self, id_sha256: &str) -> Result<Option<LoginRow>> {
        self.read(|connection| {
            let mut statement =
                connection.prepare_cached(&format!("{LOGIN_SELECT} WHERE id_sha256 = ?1"))?;
            let mut rows = statement.query([id_sha256])?;
            match rows.next()? {
                Some(row) => Ok(Some(login_from_row(row)?)),
                None => Ok(None),
            }
        })
    }

    pub async fn login_email(&self, subject: &str) -> Result<Option<String>> {
        self.read(|connection| {
            let mut statement = connection.prepare_cached(
                "SELECT email FROM logins WHERE subject = ?1 AND email IS NOT NULL
                 ORDER BY created_at DESC LIMIT 1",
            )?;
            let mut rows = statement.query([subject])?;
            match rows.next()? {
                Some(row) => Ok(Some(row.get(0)?)),
                None => Ok(None),
            }
        })
    }

    pub async fn delete_login(&self, id_sha256: &str) -> Result<bool> {
        let id_sha256 = id_sha256.to_owned();
        self.write(move |connection| {
            let deleted = connection
                .prepare_cached("DELETE FROM logins WHERE id_sha256 = ?1")?
                .execute([&id_sha256])?;
            Ok(deleted == 1)
        })
        .await
    }

    pub async fn sweep_logins(
        &self,
        expired_before: &str,
        idle_before: &str,
        attempts_before: &str,
    ) -> Result<(u64, u64)> {
        let (expired, idle, started) = (
            expired_before.to_owned(),
            idle_before.to_owned(),
            attempts_before.to_owned(),
        );
        self.write(move |connection| {
            let sessions = connection
                .prepare_cached(&sweep_sessions_sql("?1", "?2"))?
                .execute(params![expired, idle])?;
            let attempts = connection
                .prepare_cached("DELETE FROM login_attempts WHERE created_at < ?1")?
                .execute([&started])?;
            Ok((sessions as u64, attempts as u64))
        })
        .await
    }
}
