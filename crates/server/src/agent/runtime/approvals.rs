//! The approvals stream of one user (docs/rest.md, Approvals stream): the batches that start
//! and stop waiting, read from the store's numbered approval events, so a stream resumed after
//! an event id goes on exactly where it stopped (nothing lost, nothing twice), on any replica.
//!
//! A stream without an id starts with the batches that wait now (each with the id of the event
//! that opened it), then follows from the last id of all. It reads again whenever the store
//! says an approval event of its user was written (here, or on another replica; another
//! user's events do not wake it), and at every heartbeat, so a missed wake costs a heartbeat's
//! delay, never an event. A user may have a bounded number of streams open at once.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use futures_util::stream::{self, Stream};
use signoff_protocol::rest::{ApprovalDecided, ApprovalEvent, PendingApproval};
use tokio::sync::watch;

use super::{Result, Runtime};
use crate::store::{ApprovalEventKind, ApprovalEventRow};

/// The most events one read of the store takes.
const PAGE: i64 = 200;

/// What an approvals stream sends next.
#[derive(Debug, Clone, PartialEq)]
pub enum ApprovalsItem {
    /// An event with its id.
    Event(i64, ApprovalEvent),
    /// Nothing happened for a heartbeat's time.
    Heartbeat,
}

/// The event a row is on the stream; `None` for a `pending` event whose batch is gone (its chat
/// was deleted: the `decided` event that says so follows).
fn stream_event(row: ApprovalEventRow) -> Option<(i64, ApprovalEvent)> {
    let event = match row.kind {
        ApprovalEventKind::Pending => {
            let waiting = row.waiting?;
            ApprovalEvent::Pending(PendingApproval {
                task_id: row.task_id,
                context_id: row.context_id,
                agent: waiting.agent,
                title: waiting.title,
                since: waiting.since,
                calls: waiting.requests.as_array().cloned().unwrap_or_default(),
                expires_at: waiting.expires_at,
                routing: None,
            })
        }
        ApprovalEventKind::Decided => ApprovalEvent::Decided(ApprovalDecided {
            task_id: row.task_id,
            context_id: row.context_id,
            outcome: row.outcome.unwrap_or_default(),
            decided_by: row.decided_by,
            decided_at: row.created_at,
        }),
    };
    Some((row.seq, event))
}

/// What one approvals stream carries from one item to the next.
struct Follow {
    runtime: Arc<Runtime>,
    user: String,
    /// The last event id read; `None` until the stream has started.
    cursor: Option<i64>,
    ready: VecDeque<(i64, ApprovalEvent)>,
    wakes: watch::Receiver<u64>,
    heartbeat: Duration,
}

impl Follow {
    /// Reads what came after the cursor (or, first, what waits now) into `ready`.
    async fn read(&mut self) -> Result<()> {
        // Seen before the read: a write after it changes the watch again.
        self.wakes.borrow_and_update();
        match self.cursor {
            None => {
                let (horizon, rows) = self
                    .runtime
                    .store
                    .waiting_approval_events(&self.user)
                    .await?;
                self.cursor = Some(horizon);
                self.ready.extend(rows.into_iter().filter_map(stream_event));
            }
            Some(after) => {
                let rows = self
                    .runtime
                    .store
                    .approval_events(&self.user, after, PAGE)
                    .await?;
                if let Some(last) = rows.last() {
                    self.cursor = Some(last.seq);
                }
                self.ready.extend(rows.into_iter().filter_map(stream_event));
            }
        }
        Ok(())
    }

    async fn next(mut self) -> Option<(ApprovalsItem, Follow)> {
        loop {
            if let Some((id, event)) = self.ready.pop_front() {
                return Some((ApprovalsItem::Event(id, event), self));
            }
            if self.runtime.shutdown.is_cancelled() {
                return None;
            }
            let before = self.cursor;
            if let Err(err) = self.read().await {
                // The client resumes from its last id when it reconnects.
                tracing::warn!(error = %err, "could not read the approval events; ending the stream");
                return None;
            }
            if !self.ready.is_empty() || self.cursor != before {
                continue;
            }
            let shutdown = self.runtime.shutdown.clone();
            tokio::select! {
                _ = shutdown.cancelled() => return None,
                changed = self.wakes.changed() => {
                    if changed.is_err() {
                        return None;
                    }
                }
                _ = tokio::time::sleep(self.heartbeat) => {
                    return Some((ApprovalsItem::Heartbeat, self));
                }
            }
        }
    }
}

impl Runtime {
    /// The approvals stream of `user`: after event `last_event_id`, or, without one, the
    /// batches waiting now and then what follows. A heartbeat comes after `heartbeat` of quiet.
    /// It ends at shutdown or when the store fails (the client resumes from its last id).
    /// `None` when the user already has `at_most` streams open (a stream counts until it is
    /// dropped).
    pub fn approvals_stream(
        self: &Arc<Self>,
        user: &str,
        last_event_id: Option<i64>,
        heartbeat: Duration,
        at_most: usize,
    ) -> Option<impl Stream<Item = ApprovalsItem> + Send + 'static> {
        let follow = Follow {
            runtime: self.clone(),
            user: user.to_owned(),
            cursor: last_event_id,
            ready: VecDeque::new(),
            wakes: self.store.approval_wakes(user, at_most)?,
            heartbeat,
        };
        Some(stream::unfold(follow, Follow::next))
    }
}
