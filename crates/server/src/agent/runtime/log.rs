//! The task log: every transition is persisted, then announced with its events; snapshots fold
//! a task from its events. A follower sends on the announced events when they follow on from
//! what it sent, and reads the log otherwise (at the start, after a gap, on a poll), so nothing
//! is missed or sent twice.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::StreamExt;
use signoff_protocol::{codec, hitl};
use signoff_protocol::{StreamEvent, Task};
use tokio::sync::watch;
use tokio_stream::wrappers::ReceiverStream;

use crate::agent::view;
use crate::store::{Commit, NewEvent, Store, EVENT_LOG_VERSION};
use tokio_util::sync::CancellationToken;

use super::{AgentError, Result, Runtime};

/// How many events a follower reads from the log at once.
const PAGE: i64 = 500;

/// How many recent events a task's announcement keeps for followers that fell behind.
const RECENT: usize = 64;

/// A subscription to a task's announcements taken before its runner started (see
/// [`TaskLog::follow_from`]).
#[derive(Debug)]
pub struct EarlyWatch(watch::Receiver<Arc<Announcement>>);

/// One event of a task's log as followers get it: its number, its text as stored (JSON in
/// [`EVENT_LOG_VERSION`], which a follower in that version sends on as is), and the event
/// itself when the writer had it at hand (else it is decoded from the text on demand).
#[derive(Debug, Clone)]
pub struct LoggedEvent {
    pub seq: i64,
    pub stored: Arc<str>,
    pub is_final: bool,
    decoded: Option<Arc<StreamEvent>>,
}

impl LoggedEvent {
    /// Event number `seq`, as stored and as the writer had it.
    pub(super) fn committed(seq: i64, event: StreamEvent, stored: &NewEvent) -> LoggedEvent {
        LoggedEvent {
            seq,
            stored: stored.event.clone(),
            is_final: stored.is_final,
            decoded: Some(Arc::new(event)),
        }
    }

    /// `events`, stored as `stored`, the last of them numbered `last`.
    pub(super) fn numbered(
        last: i64,
        events: Vec<StreamEvent>,
        stored: &[NewEvent],
    ) -> Vec<LoggedEvent> {
        let first = last - events.len() as i64 + 1;
        events
            .into_iter()
            .zip(stored)
            .enumerate()
            .map(|(index, (event, stored))| {
                LoggedEvent::committed(first + index as i64, event, stored)
            })
            .collect()
    }

    /// The event, decoded from its stored text if it did not come with it.
    pub fn event(&self) -> Result<StreamEvent> {
        match &self.decoded {
            Some(event) => Ok(event.as_ref().clone()),
            None => decode_stored(&self.stored),
        }
    }
}

/// Where a follower's stream ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamEnd {
    /// At the first final event: the task ended or paused (input-required).
    Final,
    /// Only when the task ends (v1.0 `SubscribeToTask` follows a task through its pauses).
    Terminal,
}

impl StreamEnd {
    /// Whether the final event `event` ends a stream of this kind.
    pub(super) fn ends_at(self, event: &LoggedEvent) -> bool {
        match self {
            StreamEnd::Final => true,
            StreamEnd::Terminal => match event.event() {
                Ok(StreamEvent::StatusUpdate(update)) => update.status.state.is_terminal(),
                Ok(StreamEvent::Task(task)) => task.status.state.is_terminal(),
                Ok(StreamEvent::Message(_) | StreamEvent::ArtifactUpdate(_)) => false,
                // An event that cannot be read ends the stream rather than hang it.
                Err(_) => true,
            },
        }
    }
}

/// What a commit tells the task's followers: the events it wrote, numbered, so a follower that
/// has everything before them sends them on without reading the log. (A watch channel keeps
/// only the latest announcement; a follower that missed one reads the log instead.)
#[derive(Debug, Default)]
pub(super) struct Announcement {
    events: Vec<LoggedEvent>,
    deleted: bool,
}

impl Announcement {
    fn committed(events: Vec<LoggedEvent>) -> Announcement {
        Announcement {
            events,
            deleted: false,
        }
    }

    /// This announcement with the recent events of `previous` before it, when they follow on
    /// without a gap (at most [`RECENT`] events in all): a follower that missed an
    /// announcement or two still finds what it lacks here instead of in the store.
    fn after_recent(mut self, previous: &Announcement) -> Announcement {
        let (Some(first), Some(last_before)) = (self.events.first(), previous.events.last()) else {
            return self;
        };
        if self.deleted || previous.deleted || last_before.seq + 1 != first.seq {
            return self;
        }
        let room = RECENT.saturating_sub(self.events.len());
        let keep = previous.events.len().min(room);
        let mut events = previous.events[previous.events.len() - keep..].to_vec();
        events.append(&mut self.events);
        self.events = events;
        self
    }

    fn deleted() -> Announcement {
        Announcement {
            deleted: true,
            ..Announcement::default()
        }
    }

    /// The announced events after `seq`, if they follow on from it without a gap.
    fn after(&self, seq: i64) -> Option<Vec<LoggedEvent>> {
        let first = self.events.first()?.seq;
        if seq + 1 < first {
            return None; // a gap: read the log
        }
        Some(
            self.events
                .iter()
                .filter(|event| event.seq > seq)
                .cloned()
                .collect(),
        )
    }
}

/// The task log as followers read it: the store's events and each followed task's
/// announcements, shared by the runtime (which commits and announces) and every stream.
pub struct TaskLog {
    store: Store,
    pub(super) hub: Hub,
    /// The runtime's: streams end at shutdown.
    shutdown: CancellationToken,
}

impl TaskLog {
    pub(super) fn new(store: Store, shutdown: CancellationToken) -> Arc<TaskLog> {
        Arc::new(TaskLog {
            store,
            hub: Hub::default(),
            shutdown,
        })
    }

    /// Subscribes to the task's announcements before its runner starts, so the stream of the
    /// request that started it need not read the log first (see [`TaskLog::follow_from`]).
    pub(super) fn watch_early(&self, task_id: &str) -> EarlyWatch {
        EarlyWatch(self.hub.watch(task_id))
    }

    /// Streams a task's events after `after` until a final event (or shutdown): the announced
    /// events when they follow on from the last one sent, else read from the log, so nothing is
    /// sent twice or missed, whoever wrote the events.
    pub fn follow(
        self: &Arc<Self>,
        task_id: &str,
        after: i64,
    ) -> ReceiverStream<Result<LoggedEvent>> {
        self.follow_from(task_id, after, None, StreamEnd::Final)
    }

    /// [`TaskLog::follow`] for the request that committed everything up to `after` and
    /// subscribed with `early` before anything else could commit: an announcement with no
    /// events then means nothing came since, and the first read of the log is skipped.
    pub fn follow_from(
        self: &Arc<Self>,
        task_id: &str,
        after: i64,
        early: Option<EarlyWatch>,
        end: StreamEnd,
    ) -> ReceiverStream<Result<LoggedEvent>> {
        let (sender, receiver) = tokio::sync::mpsc::channel(64);
        let log = self.clone();
        let task_id = task_id.to_owned();
        tokio::spawn(async move {
            let subscribed_early = early.is_some();
            let mut wake = match early {
                Some(EarlyWatch(wake)) => wake,
                None => log.hub.watch(&task_id),
            };
            // The loop returns when the stream ends; then the task's watch is let go.
            async {
                let mut seq = after;
                // The first read is from the log (unless subscribed early); later ones from the
                // announcement that woke us, when it follows on from what was sent (else from
                // the log again).
                let mut woken = subscribed_early;
                let mut first = true;
                loop {
                    let announced = wake.borrow_and_update().clone();
                    // Subscribed before anything after `after` could commit, and no commit
                    // announced since: nothing to send yet.
                    let quiet = first && subscribed_early && announced.events.is_empty();
                    first = false;
                    if announced.deleted {
                        let _ = sender
                            .send(Err(AgentError::TaskDeleted(task_id.clone())))
                            .await;
                        return;
                    }
                    let from_announcement = if quiet {
                        Some(Vec::new())
                    } else {
                        woken.then(|| announced.after(seq)).flatten()
                    };
                    let (events, more) = match from_announcement {
                        Some(events) => (events, false),
                        None => match log.store.events(&task_id, seq, None, PAGE).await {
                            Ok(rows) => {
                                let more = rows.len() as i64 == PAGE;
                                let events = rows
                                    .into_iter()
                                    .map(|row| LoggedEvent {
                                        seq: row.seq,
                                        stored: Arc::from(row.event),
                                        is_final: row.is_final,
                                        decoded: None,
                                    })
                                    .collect();
                                (events, more)
                            }
                            Err(err) => {
                                let _ = sender.send(Err(err.into())).await;
                                return;
                            }
                        },
                    };
                    for event in events {
                        seq = event.seq;
                        let ends = event.is_final && end.ends_at(&event);
                        if sender.send(Ok(event)).await.is_err() || ends {
                            return;
                        }
                    }
                    if more {
                        woken = false;
                        continue;
                    }
                    woken = tokio::select! {
                        _ = log.shutdown.cancelled() => return,
                        _ = sender.closed() => return,
                        // Polling as well as waking: a write from another process still arrives.
                        changed = tokio::time::timeout(Duration::from_secs(2), wake.changed()) => {
                            matches!(changed, Ok(Ok(())))
                        }
                    };
                    // A poll also checks that the task is still there: another process may have
                    // deleted it, and nothing more would ever come.
                    if !woken && matches!(log.store.task(&task_id).await, Ok(None)) {
                        let _ = sender
                            .send(Err(AgentError::TaskDeleted(task_id.clone())))
                            .await;
                        return;
                    }
                }
            }
            .await;
            drop(wake);
            log.hub.release(&task_id);
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

/// Each followed task's latest announcement, which wakes its followers after a commit. A task
/// is here only while someone follows it.
#[derive(Default)]
pub(super) struct Hub(Mutex<HashMap<String, watch::Sender<Arc<Announcement>>>>);

impl Hub {
    /// Wakes the task's followers with the events just committed, so they need not read them
    /// back from the store.
    pub(super) fn committed(&self, task_id: &str, events: Vec<LoggedEvent>) {
        self.announce(task_id, Announcement::committed(events));
    }

    /// Wakes the task's followers to read the log: another replica committed to it.
    pub(super) fn changed(&self, task_id: &str) {
        self.announce(task_id, Announcement::default());
    }

    /// Tells the task's followers it was deleted.
    pub(super) fn deleted(&self, task_id: &str) {
        self.announce(task_id, Announcement::deleted());
    }

    fn announce(&self, task_id: &str, announcement: Announcement) {
        if let Ok(mut hub) = self.0.lock() {
            if let Some(sender) = hub.get(task_id) {
                let announcement = announcement.after_recent(&sender.borrow());
                sender.send_replace(Arc::new(announcement));
                if sender.receiver_count() == 0 {
                    hub.remove(task_id);
                }
            }
        }
    }

    /// Forgets the task's watch once no follower holds it, so a paused task keeps nothing in
    /// memory (its next commit makes a new one if someone follows again).
    pub(super) fn release(&self, task_id: &str) {
        if let Ok(mut hub) = self.0.lock() {
            if hub
                .get(task_id)
                .is_some_and(|sender| sender.receiver_count() == 0)
            {
                hub.remove(task_id);
            }
        }
    }

    pub(super) fn watch(&self, task_id: &str) -> watch::Receiver<Arc<Announcement>> {
        let quiet = || watch::channel(Arc::new(Announcement::default()));
        match self.0.lock() {
            Ok(mut hub) => hub
                .entry(task_id.to_owned())
                .or_insert_with(|| quiet().0)
                .subscribe(),
            // A poisoned hub only loses wake-ups; followers also poll.
            Err(_) => quiet().1,
        }
    }
}

fn event_is_final(event: &StreamEvent) -> bool {
    match event {
        StreamEvent::StatusUpdate(update) => update.is_final,
        StreamEvent::Task(_) | StreamEvent::Message(_) | StreamEvent::ArtifactUpdate(_) => false,
    }
}

/// An event of the log, as announced.
fn decode_stored(text: &str) -> Result<StreamEvent> {
    let value: serde_json::Value = serde_json::from_str(text)
        .map_err(|err| AgentError::Internal(format!("stored event: {err}")))?;
    codec::decode_event(EVENT_LOG_VERSION, &value)
        .map_err(|err| AgentError::Internal(format!("stored event: {err}")))
}

/// What a write just committed, for [`Runtime::after_commit`].
pub(super) struct Committed<'a> {
    pub task_id: &'a str,
    /// The events it logged, for the task's followers; `None`: it logged none and wakes no one.
    pub logged: Option<Vec<LoggedEvent>>,
    /// The state the task entered, to count.
    pub entered: Option<signoff_protocol::TaskState>,
    /// Whether it queued outbox rows (notifications, pushes).
    pub outbox: bool,
}

impl Runtime {
    // ---- the event log ---------------------------------------------------------------------

    pub(super) fn encode(event: &StreamEvent) -> NewEvent {
        NewEvent {
            event: Arc::from(codec::encode_event(EVENT_LOG_VERSION, event).to_string()),
            is_final: event_is_final(event),
        }
    }

    /// A step of the task's runner: writes `events` with `commit` in one transaction, then
    /// wakes the task's followers (persist, then announce). On a shared database it writes only
    /// while this replica holds the task's lease.
    pub(super) async fn commit(
        &self,
        task_id: &str,
        events: Vec<StreamEvent>,
        commit: Commit,
    ) -> Result<i64> {
        let commit = Commit {
            leased: true,
            ..commit
        };
        self.commit_any(task_id, events, commit).await
    }

    /// [`Runtime::commit`] for a write that is not the runner's (a cancel, from any replica).
    pub(super) async fn commit_any(
        &self,
        task_id: &str,
        events: Vec<StreamEvent>,
        mut commit: Commit,
    ) -> Result<i64> {
        let stored: Vec<NewEvent> = events.iter().map(Self::encode).collect();
        commit.events = stored.clone();
        let entered = commit.state;
        // The push receivers' rows go in this commit, so a push is never lost nor sent for a
        // state that did not commit.
        commit.push |= self.pushes().on() && entered.is_some_and(super::push::pushed_state);
        let pushes = commit.push;
        // A pause's notifications go in this commit too: the sender wakes for them as for
        // the pushes.
        let outbox = pushes || !commit.notifications.is_empty();
        let seq = self.store.commit(task_id, commit).await?;
        self.after_commit(Committed {
            task_id,
            logged: Some(LoggedEvent::numbered(seq, events, &stored)),
            entered,
            outbox,
        });
        Ok(seq)
    }

    /// What every write does once it has committed, in this order: count the state the task
    /// entered, announce the events to the task's followers (so whoever sees an event sees it
    /// counted), and wake this replica's outbox sender when the write queued rows for it. The
    /// one place the sender is woken, so no write forgets it or wakes it for nothing.
    pub(super) fn after_commit(&self, done: Committed<'_>) {
        if let Some(state) = done.entered {
            self.metrics.task_entered(state);
        }
        if let Some(logged) = done.logged {
            self.log.hub.committed(done.task_id, logged);
        }
        if done.outbox {
            self.wake_sender();
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
        let audit = self.approvals.audit(&row).await?;
        if !audit.is_empty() {
            let audit = serde_json::to_value(&audit)
                .map_err(|err| AgentError::Internal(err.to_string()))?;
            // Beside what the fold left there: the current status's token counts wait in the
            // task's metadata, and a reload counts them as the stream did.
            task.metadata
                .get_or_insert_with(Default::default)
                .insert(hitl::keys::SIGNOFF_AUDIT.to_owned(), audit);
        }
        Ok((task, seq))
    }
}

#[cfg(test)]
mod tests {
    use signoff_protocol::{Part, TaskState};

    use super::*;

    fn event(text: &str, state: TaskState, is_final: bool) -> StreamEvent {
        let message = view::agent_message("t", "c", vec![Part::text(text)]);
        let mut event = view::status_event("t", "c", state, Some(message), None);
        if let StreamEvent::StatusUpdate(update) = &mut event {
            update.is_final = is_final;
        }
        event
    }

    fn numbers(events: Option<Vec<LoggedEvent>>) -> Option<Vec<i64>> {
        events.map(|events| events.into_iter().map(|event| event.seq).collect())
    }

    #[test]
    fn an_announcement_serves_only_followers_without_a_gap() {
        let events = [
            event("a", TaskState::Working, false),
            event("b", TaskState::Working, false),
            event("c", TaskState::Completed, true),
        ];
        // Events 5, 6 and 7.
        let stored: Vec<NewEvent> = events.iter().map(Runtime::encode).collect();
        let announced = Announcement::committed(LoggedEvent::numbered(7, events.to_vec(), &stored));
        assert_eq!(numbers(announced.after(4)), Some(vec![5, 6, 7]));
        assert_eq!(numbers(announced.after(5)), Some(vec![6, 7]));
        assert_eq!(numbers(announced.after(7)), Some(vec![]));
        assert_eq!(numbers(announced.after(3)), None, "event 4 was missed");
        assert_eq!(numbers(Announcement::default().after(0)), None);
        let last = announced.after(6).unwrap().pop().unwrap();
        assert!(last.is_final, "the final flag travels with the event");
        assert_eq!(last.event().unwrap(), events[2]);
        assert_eq!(decode_stored(&last.stored).unwrap(), events[2]);
        assert!(Announcement::deleted().deleted);
    }

    #[test]
    fn an_announcement_keeps_the_recent_events_that_lead_up_to_it() {
        let events: Vec<StreamEvent> = (0..RECENT + 2)
            .map(|n| event(&format!("e{n}"), TaskState::Working, false))
            .collect();
        let stored: Vec<NewEvent> = events.iter().map(Runtime::encode).collect();
        let announce = |last: i64, range: std::ops::Range<usize>| {
            Announcement::committed(LoggedEvent::numbered(
                last,
                events[range.clone()].to_vec(),
                &stored[range],
            ))
        };
        // Events 1-3, then 4-5: a follower at 1 finds 2-5 in the second announcement.
        let merged = announce(5, 3..5).after_recent(&announce(3, 0..3));
        assert_eq!(numbers(merged.after(1)), Some(vec![2, 3, 4, 5]));
        // After a gap (events 1-3, then 6-7) only the new ones are kept.
        let gapped = announce(7, 5..7).after_recent(&announce(3, 0..3));
        assert_eq!(numbers(gapped.after(5)), Some(vec![6, 7]));
        assert_eq!(numbers(gapped.after(3)), None);
        // At most RECENT events are kept.
        let long = announce(RECENT as i64 + 2, RECENT..RECENT + 2)
            .after_recent(&announce(RECENT as i64, 0..RECENT));
        assert_eq!(long.events.len(), RECENT);
        assert_eq!(long.events.first().unwrap().seq, 3);
    }
}
