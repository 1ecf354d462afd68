//! A2A push notifications in the runtime: each task's push configs (set, read, listed and
//! deleted by the task's owner only: another user's task does not exist for them), and the
//! post of a task's update to them when it enters a state its owner waits for (input-required
//! above all, and the end states), through [`crate::notify::Notifier`].

use std::sync::Arc;

use signoff_protocol::{
    ProtocolVersion, PushAuthentication, PushConfig, PushConfigQuery, Task, TaskPushConfig,
    TaskState,
};

use crate::notify::Notifier;
use crate::store::{PushConfigRow, PushPut, TaskRow};

use super::{Accepted, Agent, AgentError, Result, Runtime};

/// Whether entering `state` is posted to a task's push receivers.
fn notifies(state: TaskState) -> bool {
    match state {
        TaskState::InputRequired
        | TaskState::AuthRequired
        | TaskState::Completed
        | TaskState::Failed
        | TaskState::Canceled
        | TaskState::Rejected => true,
        TaskState::Submitted | TaskState::Working => false,
    }
}

fn to_config(row: &PushConfigRow) -> TaskPushConfig {
    TaskPushConfig {
        task_id: row.task_id.clone(),
        config: PushConfig {
            id: Some(row.id.clone()),
            url: row.url.clone(),
            token: row.token.clone(),
            authentication: row.auth_scheme.as_ref().map(|scheme| PushAuthentication {
                scheme: scheme.clone(),
                credentials: row.auth_credentials.clone(),
            }),
        },
    }
}

impl Runtime {
    /// The push sender, once the server has set it up.
    fn notifier(&self) -> Result<&Arc<Notifier>> {
        self.notifier.get().ok_or_else(|| {
            AgentError::InvalidParams("push notifications are not set up on this server".into())
        })
    }

    /// The public key push notifications are signed with, as a JWKS.
    pub fn push_jwks(&self) -> Option<serde_json::Value> {
        self.notifier.get().map(|notifier| notifier.jwks())
    }

    /// Sets the push sender (once, at start).
    pub fn set_notifier(&self, notifier: Arc<Notifier>) {
        let _ = self.notifier.set(notifier);
    }

    /// The task row, if `user` owns it and it is `agent`'s: anything else does not exist.
    async fn push_task(&self, user: &str, agent: &Agent, task_id: &str) -> Result<TaskRow> {
        match self.store.task(task_id).await? {
            Some(row) if row.user_id == user && row.agent == agent.key() => Ok(row),
            _ => Err(AgentError::TaskNotFound(task_id.to_owned())),
        }
    }

    /// Checks `config` and writes it for the task (replacing the task's config of the same id).
    async fn put_push(
        &self,
        user: &str,
        task_id: &str,
        version: ProtocolVersion,
        config: PushConfig,
    ) -> Result<TaskPushConfig> {
        self.notifier()?
            .check(&config)
            .await
            .map_err(|refused| AgentError::InvalidParams(refused.0))?;
        let row = PushConfigRow {
            task_id: task_id.to_owned(),
            id: config
                .id
                .unwrap_or_else(|| uuid::Uuid::new_v4().to_string()),
            user_id: user.to_owned(),
            version: version.as_str().to_owned(),
            url: config.url,
            token: config.token,
            auth_scheme: config.authentication.as_ref().map(|a| a.scheme.clone()),
            auth_credentials: config.authentication.and_then(|a| a.credentials),
            created_at: crate::store::now(),
        };
        let cap = self.limits.max_push_configs_per_task;
        match self.store.put_push_config(row.clone(), cap).await? {
            PushPut::Written => Ok(to_config(&row)),
            PushPut::AtCap => Err(AgentError::InvalidParams(format!(
                "task {task_id} has {cap} push notification configs, the most it may have; \
                 delete one first"
            ))),
        }
    }

    /// `tasks/pushNotificationConfig/set` (v1.0 `CreateTaskPushNotificationConfig`).
    pub async fn set_push_config(
        &self,
        user: &str,
        agent: &Agent,
        version: ProtocolVersion,
        config: TaskPushConfig,
    ) -> Result<TaskPushConfig> {
        let row = self.push_task(user, agent, &config.task_id).await?;
        let stored = self.put_push(user, &row.id, version, config.config).await?;
        Ok(stored)
    }

    /// A task's push configs, oldest first.
    pub async fn push_configs(
        &self,
        user: &str,
        agent: &Agent,
        task_id: &str,
    ) -> Result<Vec<TaskPushConfig>> {
        self.push_task(user, agent, task_id).await?;
        let rows = self.store.push_configs(task_id).await?;
        Ok(rows.iter().map(to_config).collect())
    }

    /// One push config of a task: the one named, or, when none is named, its first.
    pub async fn push_config(
        &self,
        user: &str,
        agent: &Agent,
        query: &PushConfigQuery,
    ) -> Result<TaskPushConfig> {
        let configs = self.push_configs(user, agent, &query.task_id).await?;
        let found = match &query.config_id {
            Some(id) => configs
                .into_iter()
                .find(|c| c.config.id.as_ref() == Some(id)),
            None => configs.into_iter().next(),
        };
        found.ok_or_else(|| no_config(query))
    }

    /// Deletes one push config of a task.
    pub async fn delete_push_config(
        &self,
        user: &str,
        agent: &Agent,
        query: &PushConfigQuery,
    ) -> Result<()> {
        self.push_task(user, agent, &query.task_id).await?;
        let Some(id) = &query.config_id else {
            return Err(AgentError::InvalidParams(
                "name the push notification config to delete".into(),
            ));
        };
        if self.store.delete_push_config(&query.task_id, id).await? {
            Ok(())
        } else {
            Err(no_config(query))
        }
    }

    /// `message/send` with a push config: the config is checked before anything is sent, and
    /// written before the task's runner starts, so no update of the task is missed.
    pub async fn send_with_push(
        self: &Arc<Self>,
        user: &str,
        agent: &Arc<Agent>,
        message: signoff_protocol::Message,
        push: Option<(ProtocolVersion, PushConfig)>,
    ) -> Result<Accepted> {
        let Some((version, config)) = push else {
            return self.send(user, agent, message).await;
        };
        self.notifier()?
            .check(&config)
            .await
            .map_err(|refused| AgentError::InvalidParams(refused.0))?;
        let mut accepted = self.send_for_stream(user, agent, message).await?;
        let task_id = accepted.task_id.clone();
        let stored = self.put_push(user, &task_id, version, config).await;
        accepted.start_runner();
        stored?;
        Ok(accepted)
    }

    /// A stream's push config, written once the stream is open: if the task has already
    /// reached a state its receivers hear of, that state is posted now.
    pub async fn stream_push(
        &self,
        user: &str,
        task_id: &str,
        version: ProtocolVersion,
        config: PushConfig,
    ) -> Result<()> {
        let stored = self.put_push(user, task_id, version, config).await?;
        if let Some(row) = self.store.task(task_id).await? {
            if notifies(row.state) {
                let configs = self.store.push_configs(task_id).await?;
                let only: Vec<PushConfigRow> = configs
                    .into_iter()
                    .filter(|c| Some(&c.id) == stored.config.id.as_ref())
                    .collect();
                let (task, _) = self.snapshot(task_id, None).await?;
                self.post_pushes(only, task);
            }
        }
        Ok(())
    }

    /// After a commit that put the task in `state` (its event number `seq`): posts the task
    /// as of that event to its push receivers, if the state is one they hear of. A failure is
    /// logged; the commit stands.
    pub(super) async fn push_state(&self, task_id: &str, state: TaskState, seq: i64) {
        if !notifies(state) || self.notifier.get().is_none() {
            return;
        }
        let configs = match self.store.push_configs(task_id).await {
            Ok(configs) if configs.is_empty() => return,
            Ok(configs) => configs,
            Err(err) => {
                tracing::warn!(task = %task_id, error = %err, "push configs unreadable");
                return;
            }
        };
        match self.snapshot(task_id, Some(seq)).await {
            Ok((task, _)) => self.post_pushes(configs, task),
            Err(err) => tracing::warn!(task = %task_id, error = %err, "push snapshot failed"),
        }
    }

    /// Posts `task` to each config's receiver in the background.
    fn post_pushes(&self, configs: Vec<PushConfigRow>, task: Task) {
        let Some(notifier) = self.notifier.get().cloned() else {
            return;
        };
        let task = Arc::new(task);
        for config in configs {
            let (notifier, task) = (notifier.clone(), task.clone());
            tokio::spawn(async move {
                match notifier.deliver(&config, &task).await {
                    Ok(()) => {
                        tracing::info!(task = %task.id, config = %config.id, "push notification sent")
                    }
                    Err(err) => {
                        tracing::warn!(task = %task.id, config = %config.id, error = %err, "push notification not delivered")
                    }
                }
            });
        }
    }
}

fn no_config(query: &PushConfigQuery) -> AgentError {
    match &query.config_id {
        Some(id) => AgentError::InvalidParams(format!(
            "task {} has no push notification config {id:?}",
            query.task_id
        )),
        None => AgentError::InvalidParams(format!(
            "task {} has no push notification config",
            query.task_id
        )),
    }
}
