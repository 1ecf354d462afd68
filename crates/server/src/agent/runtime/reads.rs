//! Reads: a user's tasks, sessions and task lists, with ownership checks.

use std::sync::Arc;

use signoff_protocol::{ListTasksParams, ListTasksResult, Task};

use crate::agent::view::{self};
use crate::store::{Store, TaskRow};

use super::{AgentError, Result, Runtime};
use crate::agent::approvals::Decider;

/// A session as the API lists it: the REST contract's type (docs/rest.md, Sessions).
pub use signoff_protocol::rest::Session;

impl Runtime {
    // ---- access ----------------------------------------------------------------------------

    /// The task row, if `who` may read it: its owner, or an approver of its batch (one that
    /// waits for them, or one they voted on), who may read it but not write to it.
    pub(super) async fn readable_task(&self, who: &Decider, task_id: &str) -> Result<TaskRow> {
        let row = self
            .store
            .task(task_id)
            .await?
            .ok_or_else(|| AgentError::TaskNotFound(task_id.to_owned()))?;
        if row.user_id == who.subject || self.approvals.approves_in(&row, who).await? {
            return Ok(row);
        }
        Err(AgentError::Forbidden(task_id.to_owned()))
    }

    /// A task `who` may read (theirs, or one they approve) with at most `history_length`
    /// history messages.
    pub async fn task(
        &self,
        who: &Decider,
        task_id: &str,
        history_length: Option<u32>,
    ) -> Result<Task> {
        self.readable_task(who, task_id).await?;
        let (mut task, _) = self.snapshot(task_id, None).await?;
        view::trim_history(&mut task, history_length);
        Ok(task)
    }

    /// A task `who` may read and its last event's number, and its agent (`namespace/name`).
    pub async fn readable_snapshot(
        &self,
        who: &Decider,
        task_id: &str,
    ) -> Result<(Task, i64, String)> {
        let row = self.readable_task(who, task_id).await?;
        let (task, seq) = self.snapshot(task_id, None).await?;
        Ok((task, seq, row.agent))
    }

    /// A user's task and its last event's number, after checking ownership.
    pub async fn owned_snapshot(&self, user: &str, task_id: &str) -> Result<(Task, i64)> {
        owned_task(&self.store, user, task_id).await?;
        self.snapshot(task_id, None).await
    }

    /// v1.0 `ListTasks`: the user's tasks, newest first, a page at a time.
    pub async fn list_tasks(
        &self,
        user: &str,
        params: &ListTasksParams,
    ) -> Result<ListTasksResult> {
        let page_size = params.page_size.unwrap_or(50).clamp(1, 100);
        let offset: i64 = match params.page_token.as_deref() {
            None | Some("") => 0,
            Some(token) => token.parse().map_err(|_| {
                AgentError::InvalidParams(format!("pageToken {token:?} is not one we issued"))
            })?,
        };
        let (rows, total) = self
            .store
            .list_tasks(
                user,
                params.context_id.as_deref(),
                params.status,
                offset,
                i64::from(page_size),
            )
            .await?;
        let mut tasks = Vec::new();
        for row in &rows {
            let (mut task, _) = self.snapshot(&row.id, None).await?;
            view::trim_history(&mut task, params.history_length);
            if params.include_artifacts != Some(true) {
                task.artifacts.clear();
            }
            tasks.push(task);
        }
        let next = offset + rows.len() as i64;
        Ok(ListTasksResult {
            tasks,
            next_page_token: if next < total {
                next.to_string()
            } else {
                String::new()
            },
            page_size,
            total_size: u32::try_from(total).unwrap_or(u32::MAX),
        })
    }

    pub async fn sessions(&self, user: &str) -> Result<Vec<Session>> {
        Ok(self
            .store
            .sessions(user)
            .await?
            .into_iter()
            .map(|row| Session {
                id: row.id,
                agent: row.agent,
                title: row.title,
                created_at: row.created_at,
                updated_at: row.updated_at,
            })
            .collect())
    }

    /// A session with its tasks, in order: the owner's whole chat, or for an approver of a
    /// batch routed to them (docs/rest.md, Approvers) only the tasks they may read, with whose
    /// chat it is. Anyone else gets "not found", as for a chat that does not exist.
    pub async fn session(
        &self,
        who: &Decider,
        id: &str,
    ) -> Result<(Session, Vec<Task>, Option<String>)> {
        let row = self
            .store
            .session(id)
            .await?
            .ok_or_else(|| AgentError::SessionNotFound(id.to_owned()))?;
        let owner = row.user_id == who.subject;
        let mut tasks = Vec::new();
        for task in self.store.session_tasks(id).await? {
            if owner || self.approvals.approves_in(&task, who).await? {
                tasks.push(self.snapshot(&task.id, None).await?.0);
            }
        }
        if !owner && tasks.is_empty() {
            return Err(AgentError::SessionNotFound(id.to_owned()));
        }
        self.sharing().attach_feedback(id, &mut tasks).await?;
        let requested_by = (!owner).then(|| row.user_id.clone());
        let session = Session {
            id: row.id,
            agent: row.agent,
            title: row.title,
            created_at: row.created_at,
            updated_at: row.updated_at,
        };
        Ok((session, tasks, requested_by))
    }

    /// Deletes a user's session; its running tasks are stopped first, and the subagent tasks
    /// they started end with them (docs/rest.md, Sessions). A chat that holds a subagent's task
    /// whose parent goes on is refused: its calls wait in the parent's batch.
    pub async fn delete_session(self: &Arc<Self>, user: &str, id: &str) -> Result<()> {
        self.store
            .session(id)
            .await?
            .filter(|row| row.user_id == user)
            .ok_or_else(|| AgentError::SessionNotFound(id.to_owned()))?;
        let tasks = self.store.session_tasks(id).await?;
        for task in &tasks {
            super::subagent::refuse_driven_chat(&self.store, id, &task.id).await?;
        }
        for task in &tasks {
            self.stop_runner(&task.id);
        }
        // Stopped first, so no runner of theirs goes on with a subagent's answer meanwhile.
        self.subagents().end_subagents_of(user, &tasks).await;
        self.store.delete_session(id).await?;
        // Ends the streams and blocking requests that follow these tasks.
        for task in &tasks {
            self.log.hub.deleted(&task.id);
        }
        Ok(())
    }
}

/// The task row, if `user` owns it.
pub(super) async fn owned_task(store: &Store, user: &str, task_id: &str) -> Result<TaskRow> {
    let row = store
        .task(task_id)
        .await?
        .ok_or_else(|| AgentError::TaskNotFound(task_id.to_owned()))?;
    if row.user_id != user {
        return Err(AgentError::Forbidden(task_id.to_owned()));
    }
    Ok(row)
}
