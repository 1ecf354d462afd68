//! Sessions: one A2A contextId, talking to one agent, owned by one user.

use rusqlite::Connection;

use super::columns::{session_from_row, NOT_A_SUBAGENT_SESSION, SESSION_SELECT};
use super::tasks::collect;
use super::{GrantScope, Result, SessionRow, Sqlite};

fn session_on(connection: &Connection, id: &str) -> Result<Option<SessionRow>> {
    let mut statement = connection.prepare_cached(&format!("{SESSION_SELECT} WHERE id = ?1"))?;
    let rows = statement.query([id])?;
    Ok(collect(rows, |row| session_from_row(row))?.pop())
}

impl Sqlite {
    pub async fn session(&self, id: &str) -> Result<Option<SessionRow>> {
        self.read(|connection| session_on(connection, id))
    }

    /// The user's sessions, most recently active first.
    pub async fn sessions(&self, user_id: &str) -> Result<Vec<SessionRow>> {
        self.read(|connection| {
            let mut statement = connection.prepare_cached(&format!(
                "{SESSION_SELECT} WHERE user_id = ?1 AND {NOT_A_SUBAGENT_SESSION} ORDER BY updated_at DESC, id"
            ))?;
            let rows = statement.query([user_id])?;
            collect(rows, |row| session_from_row(row))
        })
    }

    /// Deletes a session with its tasks, events, batches, records and chat policies; whether it
    /// was there, and the user it wrote approval events for.
    pub(in crate::store) async fn delete_session(
        &self,
        id: &str,
    ) -> Result<(bool, Option<String>)> {
        let id = id.to_owned();
        self.write(move |connection| {
            // The inbox hears that its pending batches stop waiting.
            let approvals_of =
                super::approvals::record_session_deleted(connection, &id, &super::now())?;
            // Children first (foreign keys are not enforced, see `connect`).
            for child in [
                "decision_links",
                "decisions",
                "calls",
                "task_events",
                "batches",
                "queued_messages",
                "push_configs",
            ] {
                connection
                    .prepare_cached(&format!(
                        "DELETE FROM {child}
                         WHERE task_id IN (SELECT id FROM tasks WHERE context_id = ?1)"
                    ))?
                    .execute([&id])?;
            }
            for child in ["shares", "feedback"] {
                connection
                    .prepare_cached(&format!("DELETE FROM {child} WHERE context_id = ?1"))?
                    .execute([&id])?;
            }
            // A chat policy goes with its chat (an agent policy stays).
            connection
                .prepare_cached("DELETE FROM policies WHERE scope = ?1 AND context_id = ?2")?
                .execute([GrantScope::Chat.as_str(), id.as_str()])?;
            connection
                .prepare_cached(
                    "DELETE FROM subagent_tasks
                     WHERE parent_task_id IN (SELECT id FROM tasks WHERE context_id = ?1)",
                )?
                .execute([&id])?;
            connection
                .prepare_cached("DELETE FROM tasks WHERE context_id = ?1")?
                .execute([&id])?;
            let deleted = connection
                .prepare_cached("DELETE FROM sessions WHERE id = ?1")?
                .execute([&id])?;
            Ok((deleted > 0, approvals_of))
        })
        .await
    }
}
