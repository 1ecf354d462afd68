//! Tasks of chats relayed to remote agents (the `remote` column): created marked, and told
//! apart from our own, so no runner of ours ever resumes them.

use rusqlite::OptionalExtension;

use super::{NewEvent, Result, Sqlite, TaskRow};

impl Sqlite {
    /// [`Sqlite::create_task`] for a task a remote agent drives.
    pub async fn create_relayed_task(
        &self,
        task: &TaskRow,
        title: &str,
        events: Vec<NewEvent>,
    ) -> Result<bool> {
        self.insert_task(task, title, events, None, true).await
    }

    /// Whether the task exists and a remote agent drives it.
    pub async fn is_relayed(&self, task_id: &str) -> Result<bool> {
        self.read(|connection| {
            let remote: Option<bool> = connection
                .prepare_cached("SELECT remote FROM tasks WHERE id = ?1")?
                .query_row([task_id], |row| row.get(0))
                .optional()?;
            Ok(remote.unwrap_or(false))
        })
    }
}
