//! Messages to a task that is still working (docs/wire.md, Methods): accepted at once, held
//! here, and delivered by the task's runner before its next model turn, when they join the
//! transcript and the event log in one commit (so the log shows each where the model read it).
//! A task about to complete closes its inbox first; a message that finds it closed is refused
//! like a message to an ended task, and a message that arrives before the close gets a turn
//! of its own before the task completes.

use signoff_protocol::{Message, TaskState};

use crate::agent::model::ChatMessage;
use crate::agent::view;
use crate::store::Commit;

use super::transcript::transcript_value;
use super::{Accepted, AgentError, Result, Runtime};

/// One working task's messages not yet delivered to its model.
#[derive(Debug, Default)]
pub(super) struct Inbox {
    messages: Vec<Message>,
    /// The task is completing: nothing more is taken.
    closed: bool,
}

impl Runtime {
    /// Queues `message` (already checked: the caller's, this agent's, the task's context) for
    /// the working task `task_id`, whose log ends at `last_seq`.
    pub(super) fn queue_message(
        &self,
        task_id: &str,
        last_seq: i64,
        message: Message,
    ) -> Result<Accepted> {
        let mut inboxes = self
            .inbox
            .lock()
            .map_err(|_| AgentError::Internal("the inbox lock is poisoned".into()))?;
        let inbox = inboxes.entry(task_id.to_owned()).or_default();
        if inbox.closed {
            return Err(AgentError::Terminal(format!(
                "task {task_id} is completing and takes no more messages; send a message without \
                 taskId to start a new task"
            )));
        }
        inbox.messages.push(message);
        tracing::info!(task = %task_id, queued = inbox.messages.len(), "message queued for a working task");
        Ok(Accepted {
            task_id: task_id.to_owned(),
            after_seq: last_seq,
            committed: Vec::new(),
            watch: None,
        })
    }

    /// Moves the task's queued messages into `transcript` and the log (one commit); the runner
    /// calls it before each model turn.
    pub(super) async fn deliver_queued(
        &self,
        task_id: &str,
        context_id: &str,
        transcript: &mut Vec<ChatMessage>,
    ) -> Result<()> {
        let messages = match self.inbox.lock() {
            Ok(mut inboxes) => inboxes
                .get_mut(task_id)
                .map(|inbox| std::mem::take(&mut inbox.messages))
                .unwrap_or_default(),
            Err(_) => return Err(AgentError::Internal("the inbox lock is poisoned".into())),
        };
        if messages.is_empty() {
            return Ok(());
        }
        let events: Vec<_> = messages
            .into_iter()
            .map(|message| {
                transcript.push(ChatMessage::User {
                    text: message.text(),
                    message_id: Some(message.message_id.clone()),
                });
                view::status_event(task_id, context_id, TaskState::Working, Some(message), None)
            })
            .collect();
        let commit = Commit {
            transcript: Some(transcript_value(transcript)?),
            guard: Some(crate::store::Guard::NotTerminal),
            ..Commit::default()
        };
        self.commit(task_id, events, commit).await?;
        Ok(())
    }

    /// Closes the task's inbox before it completes; `false` when messages wait (the runner then
    /// takes another turn instead of completing).
    pub(super) fn close_inbox(&self, task_id: &str) -> bool {
        match self.inbox.lock() {
            Ok(mut inboxes) => {
                let inbox = inboxes.entry(task_id.to_owned()).or_default();
                if !inbox.messages.is_empty() {
                    return false;
                }
                inbox.closed = true;
                true
            }
            Err(_) => true,
        }
    }

    /// Forgets the inbox of a task that completed, failed or was canceled.
    pub(super) fn drop_inbox(&self, task_id: &str) {
        if let Ok(mut inboxes) = self.inbox.lock() {
            inboxes.remove(task_id);
        }
    }
}
