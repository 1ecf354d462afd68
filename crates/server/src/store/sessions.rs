//! Sessions: one A2A contextId, talking to one agent, owned by one user.

use rusqlite::{params, Connection, OptionalExtension, Row};

use super::{now, Result, SessionRow, Store, StoreError};

const SESSION_SELECT: &str =
    "SELECT id, user_id, agent, title, created_at, updated_at FROM sessions";

fn session_from_row(row: &Row<'_>) -> rusqlite::Result<SessionRow> {
    Ok(SessionRow {
        id: row.get(0)?,
        user_id: row.get(1)?,
        agent: row.get(2)?,
        title: row.get(3)?,
        created_at: row.get(4)?,
        updated_at: row.get(5)?,
    })
}

fn session_on(connection: &Connection, id: &str) -> Result<Option<SessionRow>> {
    Ok(connection
        .prepare_cached(&format!("{SESSION_SELECT} WHERE id = ?1"))?
        .query_row([id], session_from_row)
        .optional()?)
}

impl Store {
    /// Returns the session `id`, creating it for `user_id` and `agent` if it does not exist.
    pub async fn ensure_session(
        &self,
        id: &str,
        user_id: &str,
        agent: &str,
        title: &str,
    ) -> Result<SessionRow> {
        let (id, user_id, agent, title) = (
            id.to_owned(),
            user_id.to_owned(),
            agent.to_owned(),
            title.to_owned(),
        );
        self.write(move |connection| {
            let now = now();
            connection
                .prepare_cached(
                    "INSERT INTO sessions (id, user_id, agent, title, created_at, updated_at)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?5) ON CONFLICT (id) DO NOTHING",
                )?
                .execute(params![id, user_id, agent, title, now])?;
            session_on(connection, &id)?.ok_or(StoreError::NotFound)
        })
        .await
    }

    pub async fn session(&self, id: &str) -> Result<Option<SessionRow>> {
        self.read(|connection| session_on(connection, id))
    }

    /// The user's sessions, most recently active first.
    pub async fn sessions(&self, user_id: &str) -> Result<Vec<SessionRow>> {
        self.read(|connection| {
            let mut statement = connection.prepare_cached(&format!(
                "{SESSION_SELECT} WHERE user_id = ?1 ORDER BY updated_at DESC, id"
            ))?;
            let rows = statement.query_map([user_id], session_from_row)?;
            Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
        })
    }

    /// Deletes a session with its tasks, events, batches and records.
    pub async fn delete_session(&self, id: &str) -> Result<bool> {
        let id = id.to_owned();
        self.write(move |connection| {
            let deleted = connection
                .prepare_cached("DELETE FROM sessions WHERE id = ?1")?
                .execute([id])?;
            Ok(deleted > 0)
        })
        .await
    }
}
