//! Subagent tasks: which task an agent-tool call of a parent task started (docs/wire.md,
//! Subagents).

use rusqlite::params;

use super::tasks::collect;
use super::{ChildChat, Result, Sqlite, StoreError, SubagentLink};
use crate::store::columns::{subagent_from_row, SUBAGENT_SELECT};

impl Sqlite {
    /// Records a subagent task, and a local one's chat; an agent-tool call starts one at most
    /// ([`StoreError::Conflict`] for a second).
    pub async fn insert_subagent(&self, link: SubagentLink, chat: Option<ChildChat>) -> Result<()> {
        self.write(move |connection| {
            let inserted = connection
                .prepare_cached(
                    "INSERT INTO subagent_tasks (parent_task_id, parent_call_id, agent,
                         child_task_id, child_context_id, remote, depth, created_at)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
                     ON CONFLICT (parent_task_id, parent_call_id) DO NOTHING",
                )?
                .execute(params![
                    link.parent_task_id,
                    link.parent_call_id,
                    link.agent,
                    link.child_task_id,
                    link.child_context_id,
                    i64::from(link.remote),
                    link.depth,
                    link.created_at
                ])?;
            if inserted != 1 {
                return Err(StoreError::Conflict(
                    "the call already started a subagent task",
                ));
            }
            if let Some(chat) = &chat {
                connection
                    .prepare_cached(
                        "INSERT INTO sessions (id, user_id, agent, title, created_at, updated_at)
                         VALUES (?1, ?2, ?3, ?4, ?5, ?5)",
                    )?
                    .execute(params![
                        link.child_context_id,
                        chat.user_id,
                        link.agent,
                        chat.title,
                        link.created_at
                    ])?;
            }
            Ok(())
        })
        .await
    }

    /// The subagent tasks a parent task started, oldest first.
    pub async fn subagents_of(&self, parent_task_id: &str) -> Result<Vec<SubagentLink>> {
        self.read(|connection| {
            let mut statement = connection.prepare_cached(&format!(
                "{SUBAGENT_SELECT} WHERE parent_task_id = ?1 ORDER BY created_at, parent_call_id"
            ))?;
            let rows = statement.query([parent_task_id])?;
            collect(rows, |row| subagent_from_row(row))
        })
    }

    /// The link that made a local task a subagent's task, if one did.
    pub async fn subagent_parent(&self, child_task_id: &str) -> Result<Option<SubagentLink>> {
        self.read(|connection| {
            let mut statement = connection.prepare_cached(&format!(
                "{SUBAGENT_SELECT} WHERE child_task_id = ?1 AND remote = 0"
            ))?;
            let rows = statement.query([child_task_id])?;
            Ok(collect(rows, |row| subagent_from_row(row))?.pop())
        })
    }
}
