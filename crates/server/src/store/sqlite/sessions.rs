//! Sessions: one A2A contextId, talking to one agent, owned by one user.

use rusqlite::{Connection, OptionalExtension, Row};

use super::{Result, SessionRow, Sqlite};

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

impl Sqlite {
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
            // Children first (foreign keys are not enforced, see `connect`).
            for child in [
                "decisions",
                "calls",
                "task_events",
                "batches",
                "queued_messages",
            ] {
                connection
                    .prepare_cached(&format!(
                        "DELETE FROM {child}
                         WHERE task_id IN (SELECT id FROM tasks WHERE context_id = ?1)"
                    ))?
                    .execute([&id])?;
            }
            connection
                .prepare_cached("DELETE FROM tasks WHERE context_id = ?1")?
                .execute([&id])?;
            let deleted = connection
                .prepare_cached("DELETE FROM sessions WHERE id = ?1")?
                .execute([&id])?;
            Ok(deleted > 0)
        })
        .await
    }
}
