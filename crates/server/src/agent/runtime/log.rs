//! The task log: every transition is persisted, then announced; snapshots fold a task from
//! its events, followers read the log (not a channel), so nothing is missed or sent twice.

use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use signoff_protocol::codec;
use signoff_protocol::{StreamEvent, Task};
use tokio::sync::watch;
use tokio_stream::wrappers::ReceiverStream;

use crate::agent::view;
use crate::store::{Commit, NewEvent, EVENT_LOG_VERSION};

use super::{AgentError, Result, Runtime, DELETED};

/// An event of the log, as announced.
fn decode_stored(text: &str) -> Result<StreamEvent> {
    let value: serde_json::Value = serde_json::from_str(text)
        .map_err(|err| AgentError::Internal(format!("stored event: {err}")))?;
    codec::decode_event(EVENT_LOG_VERSION, &value)
        .map_err(|err| AgentError::Internal(format!("stored event: {err}")))
}

impl Runtime {
    // ---- the event log ---------------------------------------------------------------------

    pub(super) fn encode(event: &StreamEvent) -> NewEvent {
        let is_final = match event {
            StreamEvent::StatusUpdate(update) => update.is_final,
            StreamEvent::Task(_) | StreamEvent::Message(_) | StreamEvent::ArtifactUpdate(_) => {
                false
            }
        };
        NewEvent {
            event: codec::encode_event(EVENT_LOG_VERSION, event).to_string(),
            is_final,
        }
    }

    /// Writes `events` with `commit` in one transaction, then wakes the task's followers
    /// (persist, then announce).
    pub(super) async fn commit(
        &self,
        task_id: &str,
        events: &[StreamEvent],
        mut commit: Commit,
    ) -> Result<i64> {
        commit.events = events.iter().map(Self::encode).collect();
        let seq = self.store.commit(task_id, commit).await?;
        self.notify(task_id, seq);
        Ok(seq)
    }

    pub(super) fn notify(&self, task_id: &str, seq: i64) {
        if let Ok(mut hub) = self.hub.lock() {
            if let Some(sender) = hub.get(task_id) {
                sender.send_replace(seq);
                if sender.receiver_count() == 0 {
                    hub.remove(task_id);
                }
            }
        }
    }

    pub(super) fn watch(&self, task_id: &str) -> watch::Receiver<i64> {
        match self.hub.lock() {
            Ok(mut hub) => hub
                .entry(task_id.to_owned())
                .or_insert_with(|| watch::channel(0).0)
                .subscribe(),
            // A poisoned hub only loses wake-ups; followers also poll.
            Err(_) => watch::channel(0).1,
        }
    }

    /// The task as of event `upto` (or now), folded from its log, with its audit trail.
    pub async fn snapshot(&self, task_id: &str, upto: Option<i64>) -> Result<(Task, i64)> {
        let row = self
            .store
            .task(task_id)
            .await?
            .ok_or_else(|| AgentError::TaskNotFound(task_id.to_owned()))?;
        let mut task = view::empty_task(&row.id, &row.context_id);
        let mut seq = 0;
        loop {
            let events = self.store.events(task_id, seq, upto, 1000).await?;
            let Some(last) = events.last() else { break };
            seq = last.seq;
            for event in &events {
                view::apply(&mut task, &decode_stored(&event.event)?);
            }
        }
        let audit = self.audit(&row).await?;
        if !audit.is_empty() {
            let audit = serde_json::to_value(&audit)
                .map_err(|err| AgentError::Internal(err.to_string()))?;
            task.metadata = Some(view::metadata_with("signoff_audit", audit));
        }
        Ok((task, seq))
    }

    /// Streams a task's events after `after`, from the store, until a final event (or
    /// shutdown). Reading the log rather than a channel means nothing is sent twice or missed,
    /// whoever wrote the events.
    pub fn follow(
        self: &Arc<Self>,
        task_id: &str,
        after: i64,
    ) -> ReceiverStream<Result<StreamEvent>> {
        let (sender, receiver) = tokio::sync::mpsc::channel(64);
        let runtime = self.clone();
        let task_id = task_id.to_owned();
        tokio::spawn(async move {
            let mut wake = runtime.watch(&task_id);
            let mut seq = after;
            loop {
                let events = match runtime.store.events(&task_id, seq, None, 500).await {
                    Ok(events) => events,
                    Err(err) => {
                        let _ = sender.send(Err(err.into())).await;
                        return;
                    }
                };
                let full_page = events.len() == 500;
                for event in events {
                    seq = event.seq;
                    let decoded = decode_stored(&event.event);
                    if sender.send(decoded).await.is_err() {
                        return;
                    }
                    if event.is_final {
                        return;
                    }
                }
                if full_page {
                    continue;
                }
                let woken = tokio::select! {
                    _ = runtime.shutdown.cancelled() => return,
                    _ = sender.closed() => return,
                    // Polling as well as waking: a write from another process still arrives.
                    changed = tokio::time::timeout(Duration::from_secs(2), wake.changed()) => {
                        matches!(changed, Ok(Ok(())))
                    }
                };
                // Deleted with its session: nothing more will come, so say so and end. (A poll
                // checks too: another process may have deleted it.)
                let deleted = *wake.borrow() == DELETED
                    || (!woken && matches!(runtime.store.task(&task_id).await, Ok(None)));
                if deleted {
                    let _ = sender
                        .send(Err(AgentError::TaskDeleted(task_id.clone())))
                        .await;
                    return;
                }
            }
        });
        ReceiverStream::new(receiver)
    }

    /// Waits until the task's stream after `after` reaches a final event.
    pub async fn wait_final(self: &Arc<Self>, task_id: &str, after: i64) -> Result<()> {
        let mut events = self.follow(task_id, after);
        while let Some(event) = events.next().await {
            event?;
        }
        Ok(())
    }
}
