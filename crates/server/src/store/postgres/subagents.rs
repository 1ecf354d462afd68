//! Subagent tasks: which task an agent-tool call of a parent task started (docs/wire.md,
//! Subagents).

use super::tasks::map_rows;
use super::{ChildChat, Postgres, Result, StoreError, SubagentLink};
use crate::store::columns::{subagent_from_row, SUBAGENT_SELECT};

impl Postgres {
    /// Records a subagent task; an agent-tool call starts one at most
    /// ([`StoreError::Conflict`] for a second).
    pub async fn insert_subagent(&self, link: SubagentLink, chat: Option<ChildChat>) -> Result<()> {
        let mut transaction = self.pool.begin().await?;
        let inserted = sqlx::query(
            "INSERT INTO subagent_tasks (parent_task_id, parent_call_id, agent, child_task_id,
                 child_context_id, remote, depth, created_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
             ON CONFLICT (parent_task_id, parent_call_id) DO NOTHING",
        )
        .bind(&link.parent_task_id)
        .bind(&link.parent_call_id)
        .bind(&link.agent)
        .bind(&link.child_task_id)
        .bind(&link.child_context_id)
        .bind(i64::from(link.remote))
        .bind(link.depth)
        .bind(&link.created_at)
        .execute(&mut *transaction)
        .await?
        .rows_affected();
        if inserted != 1 {
            return Err(StoreError::Conflict(
                "the call already started a subagent task",
            ));
        }
        if let Some(chat) = chat {
            sqlx::query(
                "INSERT INTO sessions (id, user_id, agent, title, created_at, updated_at)
                 VALUES ($1, $2, $3, $4, $5, $5)",
            )
            .bind(&link.child_context_id)
            .bind(&chat.user_id)
            .bind(&link.agent)
            .bind(&chat.title)
            .bind(&link.created_at)
            .execute(&mut *transaction)
            .await?;
        }
        transaction.commit().await?;
        Ok(())
    }

    /// The subagent tasks a parent task started, oldest first.
    pub async fn subagents_of(&self, parent_task_id: &str) -> Result<Vec<SubagentLink>> {
        let rows = sqlx::query(&format!(
            "{SUBAGENT_SELECT} WHERE parent_task_id = $1 ORDER BY created_at, parent_call_id"
        ))
        .bind(parent_task_id)
        .fetch_all(&self.pool)
        .await?;
        map_rows(rows, subagent_from_row)
    }

    /// The link that made a local task a subagent's task, if one did.
    pub async fn subagent_parent(&self, child_task_id: &str) -> Result<Option<SubagentLink>> {
        let row = sqlx::query(&format!(
            "{SUBAGENT_SELECT} WHERE child_task_id = $1 AND remote = 0"
        ))
        .bind(child_task_id)
        .fetch_optional(&self.pool)
        .await?;
        row.as_ref().map(subagent_from_row).transpose()
    }
}
