//! The approvals stream of one user (docs/rest.md, Approvals stream): the batches that start
//! and stop waiting, read from the store's numbered approval events, so a stream resumed after
//! an event id goes on exactly where it stopped (nothing lost, nothing twice), on any replica.
//!
//! A stream without an id starts with the batches that wait now (each with the id of the event
//! that opened it), then follows from the last id of all. It reads again whenever the store
//! says an approval event of its user was written (here, or on another replica; another
//! user's events do not wake it), and at every heartbeat, so a missed wake costs a heartbeat's
//! delay, never an event. A user may have a bounded number of streams open at once.
//!
//! A batch routed to approvers (crates/server/README.md, Approvers) is on the stream of every
//! person who may approve one of its calls, with its `routing`, as `GET /api/approvals` lists
//! it; approvals short of a quorum send it again, further along; its `decided` event follows.
//! Who may approve depends on the reader's groups, so those streams read every routing agent's
//! events (and those of batches handed over or escalated), keep the reader's, and wake on any
//! approval event. A hand-over, a reminder, an escalation or an extension sends the batch
//! again, with the ladder's marks (`ladder`).

use std::collections::{HashSet, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use futures_util::stream::{self, Stream};
use signoff_protocol::rest::{ApprovalDecided, ApprovalEvent, PendingApproval};
use tokio::sync::watch;

use super::{Result, Runtime};
use crate::agent::approvals::Decider;
use crate::store::{ApprovalEventKind, ApprovalEventRow};

/// The most events one read of the store takes.
const PAGE: i64 = 200;

/// What an approvals stream sends next.
#[derive(Debug, Clone, PartialEq)]
pub enum ApprovalsItem {
    /// An event with its id (boxed: a batch is far larger than a heartbeat).
    Event(i64, Box<ApprovalEvent>),
    /// Nothing happened for a heartbeat's time.
    Heartbeat,
}

/// A batch waiting as a row shows it (without its routing).
fn pending(row: &ApprovalEventRow) -> Option<PendingApproval> {
    let waiting = row.waiting.as_ref()?;
    Some(PendingApproval {
        task_id: row.task_id.clone(),
        context_id: row.context_id.clone(),
        batch_id: row.batch_id,
        agent: waiting.agent.clone(),
        title: waiting.title.clone(),
        since: waiting.since.clone(),
        calls: waiting.requests.as_array().cloned().unwrap_or_default(),
        expires_at: waiting.expires_at.clone(),
        routing: None,
        ladder: None,
    })
}

fn decided(row: ApprovalEventRow) -> ApprovalEvent {
    ApprovalEvent::Decided(ApprovalDecided {
        task_id: row.task_id,
        context_id: row.context_id,
        outcome: row.outcome.unwrap_or_default(),
        decided_by: row.decided_by,
        decided_at: row.created_at,
    })
}

/// What one approvals stream carries from one item to the next.
struct Follow {
    runtime: Arc<Runtime>,
    who: Decider,
    /// The agents that route batches to approvers (`namespace/name`), as the stream started.
    routing_agents: Vec<String>,
    /// The tasks of others whose batches this stream showed: their `decided` events follow
    /// even when the batch is gone with its chat.
    shown: HashSet<String>,
    /// The last event id read; `None` until the stream has started.
    cursor: Option<i64>,
    ready: VecDeque<(i64, ApprovalEvent)>,
    wakes: watch::Receiver<u64>,
    /// Every approval event's signal, when some agent routes batches to approvers.
    routed: Option<watch::Receiver<u64>>,
    heartbeat: Duration,
}

impl Follow {
    /// Reads what came after the cursor (or, first, what waits now) into `ready`.
    async fn read(&mut self) -> Result<()> {
        // Seen before the read: a write after it changes the watch again.
        self.wakes.borrow_and_update();
        if let Some(routed) = self.routed.as_mut() {
            routed.borrow_and_update();
        }
        let rows = match self.cursor {
            None => {
                let (horizon, rows) = self
                    .runtime
                    .store
                    .waiting_approval_events(&self.who.subject, &self.routing_agents)
                    .await?;
                self.cursor = Some(horizon);
                rows
            }
            Some(after) => {
                let rows = self
                    .runtime
                    .store
                    .approval_events(&self.who.subject, &self.routing_agents, after, PAGE)
                    .await?;
                if let Some(last) = rows.last() {
                    self.cursor = Some(last.seq);
                }
                rows
            }
        };
        for row in rows {
            let seq = row.seq;
            if let Some(event) = self.stream_event(row).await? {
                self.ready.push_back((seq, event));
            }
        }
        Ok(())
    }

    /// The event a row is on this reader's stream; `None` for a batch of someone else's they
    /// may not approve, and for a `pending` event whose batch is gone (its chat was deleted:
    /// the `decided` event that says so follows).
    async fn stream_event(&mut self, row: ApprovalEventRow) -> Result<Option<ApprovalEvent>> {
        let own = row.owner == self.who.subject;
        if own && row.kind == ApprovalEventKind::Decided {
            return Ok(Some(decided(row)));
        }
        // Another person's event is read only when its agent routes batches to approvers or
        // its batch was handed over or escalated (the store's filter).
        let routed = !own
            || row
                .waiting
                .as_ref()
                .is_some_and(|waiting| self.routing_agents.contains(&waiting.agent));
        if !routed {
            // A batch of the reader's that no approvers share, or one gone with its chat.
            return Ok(match row.kind {
                ApprovalEventKind::Decided if self.shown.remove(&row.task_id) => Some(decided(row)),
                ApprovalEventKind::Decided => None,
                ApprovalEventKind::Pending | ApprovalEventKind::Progress => match pending(&row) {
                    Some(mut batch) => {
                        self.mark(&mut batch, row.batch_id).await?;
                        Some(ApprovalEvent::Pending(batch))
                    }
                    None => None,
                },
            });
        }
        let Some(mut batch) = pending(&row) else {
            return Ok(
                if row.kind == ApprovalEventKind::Decided && self.shown.remove(&row.task_id) {
                    Some(decided(row))
                } else {
                    None
                },
            );
        };
        let (routing, handed_to_reader) = self
            .runtime
            .event_routing(&batch, &row.owner, row.batch_id, &self.who)
            .await?;
        if !own && routing.eligible_by.is_empty() && !handed_to_reader {
            return Ok(None);
        }
        if row.kind == ApprovalEventKind::Decided {
            self.shown.remove(&row.task_id);
            return Ok(Some(decided(row)));
        }
        if !own {
            self.shown.insert(row.task_id.clone());
        }
        batch.routing = Some(Box::new(routing));
        self.mark(&mut batch, row.batch_id).await?;
        Ok(Some(ApprovalEvent::Pending(batch)))
    }

    /// Sets the deadline ladder's marks and `max_extend` of `batch` (the stored batch
    /// `batch_id`): a reminder, an escalation or an extension sends the batch again with them.
    async fn mark(&self, batch: &mut PendingApproval, batch_id: i64) -> Result<()> {
        let steps = self.runtime.store.batch_steps(&batch.task_id).await?;
        batch.ladder = self
            .runtime
            .approvals
            .approvers()
            .batch_marks(batch, &steps, batch_id);
        Ok(())
    }

    async fn next(mut self) -> Option<(ApprovalsItem, Follow)> {
        loop {
            if let Some((id, event)) = self.ready.pop_front() {
                return Some((ApprovalsItem::Event(id, Box::new(event)), self));
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
            let routed = async {
                match self.routed.as_mut() {
                    Some(routed) => routed.changed().await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                _ = shutdown.cancelled() => return None,
                changed = self.wakes.changed() => {
                    if changed.is_err() {
                        return None;
                    }
                }
                changed = routed => {
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
    /// The approvals stream of `who`: after event `last_event_id`, or, without one, the
    /// batches waiting now and then what follows (their own, and those routed to them). A heartbeat comes after `heartbeat` of quiet.
    /// It ends at shutdown or when the store fails (the client resumes from its last id).
    /// `None` when the user already has `at_most` streams open (a stream counts until it is
    /// dropped).
    pub fn approvals_stream(
        self: &Arc<Self>,
        who: &Decider,
        last_event_id: Option<i64>,
        heartbeat: Duration,
        at_most: usize,
    ) -> Option<impl Stream<Item = ApprovalsItem> + Send + 'static> {
        let routing_agents = self.routing_agents();
        // Any batch may be handed over to the reader: every stream follows every event.
        let routed = Some(self.store.routed_approval_wakes());
        let follow = Follow {
            runtime: self.clone(),
            who: who.clone(),
            routing_agents,
            shown: HashSet::new(),
            cursor: last_event_id,
            ready: VecDeque::new(),
            wakes: self.store.approval_wakes(&who.subject, at_most)?,
            routed,
            heartbeat,
        };
        Some(stream::unfold(follow, Follow::next))
    }
}
