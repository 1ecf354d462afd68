//! Messages to a task that is still working (docs/wire.md, Methods): accepted at once, kept in
//! the store's queue (so a restart, or the replica that drives the task, delivers them), and
//! delivered by the task's runner before its next model turn, when they join the transcript
//! and the event log in the commit that takes them off the queue (so the log shows each where
//! the model read it). A step that would complete the task is refused while messages wait, and
//! the runner takes another turn for them; a message that comes after the completion is
//! refused like a message to an ended task.

use signoff_protocol::{codec, Message, TaskState};

use crate::agent::model::ChatMessage;
use crate::agent::view;
use crate::store::{Commit, EVENT_LOG_VERSION};

use super::transcript::transcript_value;
use super::{Accepted, AgentError, Result, Runtime};

impl Runtime {
    /// Queues `message` (already checked: the caller's, this agent's, the task's context) for
    /// the working task `task_id`, whose log ended at `last_seq`.
    pub(super) async fn queue_message(
        &self,
        task_id: &str,
        last_seq: i64,
        message: Message,
    ) -> Result<Accepted> {
        let stored = codec::encode_message(EVENT_LOG_VERSION, &message).to_string();
        if !self.store.queue_message(task_id, stored).await? {
            // It stopped working a moment ago: paused for a decision, or ended.
            let state = self.store.task(task_id).await?.map(|row| row.state);
            return Err(match state {
                Some(TaskState::InputRequired) => AgentError::InvalidParams(format!(
                    "task {task_id} has just paused for a decision on its tool calls; send \
                     your message again to reply to it"
                )),
                _ => AgentError::Terminal(format!(
                    "task {task_id} has finished working and takes no more messages; send a \
                     message without taskId to start a new task"
                )),
            });
        }
        tracing::info!(task = %task_id, "message queued for a working task");
        Ok(Accepted {
            task_id: task_id.to_owned(),
            after_seq: last_seq,
            committed: Vec::new(),
            watch: None,
            runner: None,
        })
    }

    /// Moves the task's queued messages into `transcript` and the log (one commit, which takes
    /// them off the queue); the runner calls it before each model turn.
    pub(super) async fn deliver_queued(
        &self,
        task_id: &str,
        context_id: &str,
        transcript: &mut Vec<ChatMessage>,
    ) -> Result<()> {
        let queued = self.store.queued_messages(task_id).await?;
        if queued.is_empty() {
            return Ok(());
        }
        let mut events = Vec::with_capacity(queued.len());
        for entry in &queued {
            let message = serde_json::from_str(&entry.message)
                .ok()
                .and_then(|value| codec::decode_message(EVENT_LOG_VERSION, &value).ok())
                .ok_or_else(|| {
                    AgentError::Internal(format!("queued message {} is not a message", entry.id))
                })?;
            transcript.push(ChatMessage::User {
                text: message.text(),
                message_id: Some(message.message_id.clone()),
                asked: None,
            });
            events.push(view::status_event(
                task_id,
                context_id,
                TaskState::Working,
                Some(message),
                None,
            ));
        }
        let commit = Commit {
            transcript: Some(transcript_value(transcript)?),
            guard: Some(crate::store::Guard::NotTerminal),
            delivered: queued.iter().map(|entry| entry.id).collect(),
            ..Commit::default()
        };
        self.commit(task_id, events, commit).await?;
        Ok(())
    }
}
