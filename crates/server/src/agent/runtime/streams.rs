//! A request's stream of a task (docs/wire.md, A turn on the wire): how it opens (the events the
//! request itself committed, or the task's snapshot), then the task's live events. This is the
//! one place that knows their order: the committed events go first, the follower subscribed
//! before the runner started follows on from them without reading the log again, and the
//! runner starts only once that follower is spawned ([`PendingRunner`] says why).

use std::sync::Arc;

use futures_util::stream::{self, Stream, StreamExt};
use signoff_protocol::{Message, ProtocolVersion, PushConfig, Task};

use super::{Agent, Decider, EarlyWatch, LoggedEvent, PendingRunner, Result, Runtime, StreamEnd};

/// How the stream of a message opens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Opening {
    /// With the events the message committed, as written (`submitted` or `working` first):
    /// A2A v0.3's `message/stream`.
    Committed,
    /// With a snapshot of the task that includes the first event the message committed (a
    /// message queued for a working task commits none): A2A v1.0's `SendStreamingMessage`.
    Snapshot,
}

/// The stream a request opened on a task: [`TaskStream::snapshot`], if it opens with one, then
/// [`TaskStream::events`].
#[must_use = "a message's runner starts when its stream's events are taken (or it is dropped)"]
pub struct TaskStream {
    /// The task the stream opens with, if it opens with a snapshot.
    pub snapshot: Option<Task>,
    runtime: Arc<Runtime>,
    task_id: String,
    /// Events the request itself committed, sent before the follower's.
    committed: Vec<LoggedEvent>,
    /// The follower starts after this event.
    after: i64,
    /// Subscribed before the runner started: good for following on from everything the request
    /// committed, not from an earlier point.
    early: Option<EarlyWatch>,
    /// The runner, started once the follower is spawned.
    runner: Option<PendingRunner>,
    end: StreamEnd,
}

impl Runtime {
    /// Accepts `message` for `agent` (as [`Runtime::send`] does, with the push config the
    /// client gave with it, if any) and opens its stream.
    pub async fn stream_message(
        self: &Arc<Self>,
        who: &Decider,
        agent: &Arc<Agent>,
        message: Message,
        push: Option<(ProtocolVersion, PushConfig)>,
        opening: Opening,
    ) -> Result<TaskStream> {
        let mut accepted = self.send_for_stream(who, agent, message, push).await?;
        match opening {
            Opening::Committed => Ok(TaskStream {
                snapshot: None,
                runtime: self.clone(),
                after: accepted.after_seq + accepted.committed.len() as i64,
                committed: std::mem::take(&mut accepted.committed),
                early: accepted.watch.take(),
                runner: accepted.runner.take(),
                task_id: accepted.task_id,
                end: StreamEnd::Final,
            }),
            Opening::Snapshot => {
                // The snapshot is read up to a fixed event, so the runner need not wait for it.
                accepted.start_runner();
                let upto = accepted.after_seq + accepted.committed.len().min(1) as i64;
                let (task, _) = self.snapshot(&accepted.task_id, Some(upto)).await?;
                Ok(TaskStream {
                    snapshot: Some(task),
                    runtime: self.clone(),
                    committed: Vec::new(),
                    after: upto,
                    early: None,
                    runner: None,
                    task_id: accepted.task_id,
                    end: StreamEnd::Final,
                })
            }
        }
    }

    /// A user's task as it is now, then its events from there until `end` (a resubscription).
    pub async fn subscribe(
        self: &Arc<Self>,
        who: &Decider,
        task_id: &str,
        end: StreamEnd,
    ) -> Result<TaskStream> {
        let (task, seq, _) = self.readable_snapshot(who, task_id).await?;
        Ok(TaskStream {
            snapshot: Some(task),
            runtime: self.clone(),
            task_id: task_id.to_owned(),
            committed: Vec::new(),
            after: seq,
            early: None,
            runner: None,
            end,
        })
    }
}

impl TaskStream {
    /// The task streamed.
    pub fn task_id(&self) -> &str {
        &self.task_id
    }

    /// The events after the opening snapshot, in order: those the request committed, then the
    /// task's live events up to the stream's end. The follower is spawned here, then the
    /// message's runner is started. A request whose own events already ended the stream (an
    /// approval short of its quorum: its final `status-update` says the task still waits)
    /// follows nothing more.
    pub fn events(self) -> impl Stream<Item = Result<LoggedEvent>> + Send + 'static {
        let end = self.end;
        let ended = (self.committed.iter()).any(|event| event.is_final && end.ends_at(event));
        let follower = (!ended).then(|| {
            self.runtime
                .log
                .follow_from(&self.task_id, self.after, self.early, self.end)
        });
        drop(self.runner);
        stream::iter(self.committed.into_iter().map(Ok)).chain(stream::iter(follower).flatten())
    }
}
