//! Tasks of chats relayed to remote agents (the `remote` column): created marked, and told
//! apart from our own, so no replica's runner ever resumes them.

use super::{NewEvent, Postgres, Result, TaskRow};

impl Postgres {
    /// [`Postgres::create_task`] for a task a remote agent drives.
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
        let remote: Option<bool> = sqlx::query_scalar("SELECT remote FROM tasks WHERE id = $1")
            .bind(task_id)
            .fetch_optional(&self.pool)
            .await?;
        Ok(remote.unwrap_or(false))
    }
}
