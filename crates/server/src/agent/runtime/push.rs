//! A2A push notifications in the runtime: each task's push configs (set, read, listed and
//! deleted by the task's owner only: another user's task does not exist for them), and the
//! push of a task's update to them when it enters a state its owner waits for (input-required
//! above all, and the end states). The commit that moves the task there writes one outbox row
//! per config (`store::outbox`, [`crate::store::Commit::push`]); the outbox's sender
//! (`runtime::notify`) delivers each through [`Notifier`], retried under the row's id.

use std::sync::Arc;

use signoff_protocol::{
    ProtocolVersion, PushAuthentication, PushConfig, PushConfigQuery, TaskPushConfig, TaskState,
};

use crate::agent::notify::Notifier;
use crate::store::{NotificationRow, PushConfigRow, PushPut, TaskRow};

use super::notify::Attempt;
use super::{Accepted, Agent, AgentError, Result, Runtime};

/// Whether entering `state` is posted to a task's push receivers.
pub(super) fn pushed_state(state: TaskState) -> bool {
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

/// A2A push notifications: a task owner's configs, and the delivery of a pushed update; what
/// [`Runtime::pushes`] lends.
pub struct Pushes<'a> {
    runtime: &'a Runtime,
}

impl Runtime {
    /// The push notifications' configs and deliveries.
    pub fn pushes(&self) -> Pushes<'_> {
        Pushes { runtime: self }
    }

    /// `message/send` (or `message/stream`) with a push config: the config is checked before
    /// anything is sent, and written before the task's runner can commit a step: a new task's
    /// with the task itself (no write of its own, and no race with a runner that pauses at
    /// once), an existing task's (its owner's only) before the message goes to it.
    pub(super) async fn send_with_push_for_stream(
        self: &Arc<Self>,
        who: &super::Decider,
        agent: &Arc<Agent>,
        message: signoff_protocol::Message,
        (version, config): (ProtocolVersion, PushConfig),
    ) -> Result<Accepted> {
        match message.task_id.clone() {
            None => {
                self.pushes().check(&config).await?;
                let task_id = crate::agent::view::new_id();
                let row = push_row(&who.subject, &task_id, version, config);
                self.send_as(who, agent, message, task_id, Some(row)).await
            }
            Some(task_id) => {
                self.pushes()
                    .owned_task(&who.subject, agent, &task_id)
                    .await?;
                self.pushes()
                    .put(&who.subject, &task_id, version, config)
                    .await?;
                self.send_as(who, agent, message, task_id, None).await
            }
        }
    }

    /// [`Runtime::send_with_push_for_stream`] whose runner starts at once (`message/send`).
    pub async fn send_with_push(
        self: &Arc<Self>,
        who: &super::Decider,
        agent: &Arc<Agent>,
        message: signoff_protocol::Message,
        push: Option<(ProtocolVersion, PushConfig)>,
    ) -> Result<Accepted> {
        let mut accepted = self.send_for_stream(who, agent, message, push).await?;
        accepted.start_runner();
        Ok(accepted)
    }
}

impl Pushes<'_> {
    /// Sets the push sender (once, at start).
    pub fn set_notifier(&self, notifier: Arc<Notifier>) {
        let _ = self.runtime.notifier.set(notifier);
    }

    /// The push sender, once the server has set it up.
    fn notifier(&self) -> Result<&Arc<Notifier>> {
        self.runtime.notifier.get().ok_or_else(|| {
            AgentError::InvalidParams("push notifications are not set up on this server".into())
        })
    }

    /// Whether push notifications are on (the server set up their sender).
    pub(super) fn on(&self) -> bool {
        self.runtime.notifier.get().is_some()
    }

    /// The public key push notifications are signed with, as a JWKS.
    pub fn jwks(&self) -> Option<serde_json::Value> {
        self.runtime.notifier.get().map(|notifier| notifier.jwks())
    }

    /// The task row, if `user` owns it and it is `agent`'s: anything else does not exist.
    pub(super) async fn owned_task(
        &self,
        user: &str,
        agent: &Agent,
        task_id: &str,
    ) -> Result<TaskRow> {
        match self.runtime.store.task(task_id).await? {
            Some(row) if row.user_id == user && row.agent == agent.key() => Ok(row),
            _ => Err(AgentError::TaskNotFound(task_id.to_owned())),
        }
    }

    /// Refuses a config a client gave unless push notifications are on and it passes
    /// [`Notifier::check`].
    pub(super) async fn check(&self, config: &PushConfig) -> Result<()> {
        self.notifier()?
            .check(config)
            .await
            .map_err(|refused| AgentError::InvalidParams(refused.0))
    }

    /// Checks `config` and writes it for the task (replacing the task's config of the same id).
    pub(super) async fn put(
        &self,
        user: &str,
        task_id: &str,
        version: ProtocolVersion,
        config: PushConfig,
    ) -> Result<TaskPushConfig> {
        self.check(&config).await?;
        let row = push_row(user, task_id, version, config);
        let cap = self.runtime.limits.max_push_configs_per_task;
        match self.runtime.store.put_push_config(row.clone(), cap).await? {
            PushPut::Written => Ok(to_config(&row)),
            PushPut::AtCap => Err(AgentError::InvalidParams(format!(
                "task {task_id} has {cap} push notification configs, the most it may have; \
                 delete one first"
            ))),
        }
    }

    /// `tasks/pushNotificationConfig/set` (v1.0 `CreateTaskPushNotificationConfig`).
    pub async fn set(
        &self,
        user: &str,
        agent: &Agent,
        version: ProtocolVersion,
        config: TaskPushConfig,
    ) -> Result<TaskPushConfig> {
        let row = self.owned_task(user, agent, &config.task_id).await?;
        let stored = self.put(user, &row.id, version, config.config).await?;
        Ok(stored)
    }

    /// A task's push configs, oldest first.
    pub async fn list(
        &self,
        user: &str,
        agent: &Agent,
        task_id: &str,
    ) -> Result<Vec<TaskPushConfig>> {
        self.owned_task(user, agent, task_id).await?;
        let rows = self.runtime.store.push_configs(task_id).await?;
        Ok(rows.iter().map(to_config).collect())
    }

    /// One push config of a task: the one named, or, when none is named, its first.
    pub async fn get(
        &self,
        user: &str,
        agent: &Agent,
        query: &PushConfigQuery,
    ) -> Result<TaskPushConfig> {
        let configs = self.list(user, agent, &query.task_id).await?;
        let found = match &query.config_id {
            Some(id) => configs
                .into_iter()
                .find(|c| c.config.id.as_ref() == Some(id)),
            None => configs.into_iter().next(),
        };
        found.ok_or_else(|| no_config(query))
    }

    /// Deletes one push config of a task.
    pub async fn delete(&self, user: &str, agent: &Agent, query: &PushConfigQuery) -> Result<()> {
        self.owned_task(user, agent, &query.task_id).await?;
        let Some(id) = &query.config_id else {
            return Err(AgentError::InvalidParams(
                "name the push notification config to delete".into(),
            ));
        };
        if self
            .runtime
            .store
            .delete_push_config(&query.task_id, id)
            .await?
        {
            Ok(())
        } else {
            Err(no_config(query))
        }
    }

    /// One attempt at a push row (`store::outbox`): the task as of the row's event, to its
    /// config as it is now. A config or task deleted since has nothing left to be told.
    pub(super) async fn deliver(&self, row: &NotificationRow) -> Attempt {
        let Some(notifier) = self.runtime.notifier.get() else {
            return Attempt::Failed("push notifications are not set up on this server".into());
        };
        let (Some(config_id), Some(seq)) = (
            row.payload["config_id"].as_str(),
            row.payload["seq"].as_i64(),
        ) else {
            return Attempt::Refused("the push names no config or event".into());
        };
        let config = match self.runtime.store.push_configs(&row.task_id).await {
            Ok(configs) => configs.into_iter().find(|config| config.id == config_id),
            Err(err) => return Attempt::Failed(format!("push configs unreadable: {err}")),
        };
        let Some(config) = config else {
            return Attempt::Moot("its push config was deleted");
        };
        let task = match self.runtime.snapshot(&row.task_id, Some(seq)).await {
            Ok((task, _)) => task,
            Err(AgentError::TaskNotFound(_)) => return Attempt::Moot("its task was deleted"),
            Err(err) => return Attempt::Failed(format!("the task's snapshot: {err}")),
        };
        match notifier.post(&config, &task, &row.id).await {
            Ok(()) => Attempt::Delivered,
            Err(err) if err.is_transient() => Attempt::Failed(err.to_string()),
            Err(err) => Attempt::Refused(err.to_string()),
        }
    }
}

/// The row of a config a client gave for `user`'s task `task_id` (its id, if it gave none, a
/// new UUID).
fn push_row(
    user: &str,
    task_id: &str,
    version: ProtocolVersion,
    config: PushConfig,
) -> PushConfigRow {
    PushConfigRow {
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
