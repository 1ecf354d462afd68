//! The runtime's side of notifications (`agent::notify`): the rows of a pause or a decision,
//! built for its commit, and the sender that delivers the outbox (`store::outbox`): the
//! operator's channels' rows and the A2A push notifications' (`runtime::push`) alike.
//!
//! The sender: every replica runs one. Woken by a commit, it lets the commit's request answer
//! first ([`SETTLE`]), then claims due rows with a lease ([`Delivery::lease`]), so one replica
//! sends a given row at a time, delivers them concurrently and independently (a bounded number
//! in flight, claiming more as each ends), and deletes each delivered row; a failed attempt is
//! retried with exponential backoff and jitter until `retry_for` after the event, then kept as
//! failed (`GET /api/notifications/failed`). A row whose sender died is claimed again once its
//! lease lapses, by any replica (or the same one after a restart): at least once, with the same
//! `webhook-id`.

use std::sync::Arc;

use serde_json::Value;
use tokio::task::JoinSet;

use crate::agent::config::ApproverEntry;
use crate::agent::notify::payload::{self, About};
use crate::agent::notify::Audience;
use crate::store::{now_ms, AttemptFailed, NewNotification, NotificationKind, NotificationRow};

/// How one attempt at a notification ended.
pub(super) enum Attempt {
    Delivered,
    /// Nothing is left to send (a push whose config or task was deleted): the row goes.
    Moot(&'static str),
    /// Not delivered; tried again later, until its retries run out.
    Failed(String),
    /// Not delivered, and another try would not be either (an address refused, a redirect, a
    /// client error): kept as failed at once.
    Refused(String),
}

use super::{Result, Runtime};

/// The most rows one claim takes.
const CLAIM: i64 = 128;

/// How many deliveries one sender runs at once.
const CONCURRENT: usize = 64;

/// How long the sender, woken by a commit, waits before it claims: the commit's request (a
/// pause, a decision) answers first, since sending is no part of it (working beside it, the
/// sender added about half a millisecond to a pause on two cores), and the rows of commits
/// made meanwhile are claimed together.
const SETTLE: std::time::Duration = std::time::Duration::from_millis(5);

impl Runtime {
    /// Whether events are notified: some channel is configured. A local subagent's task is not
    /// (its calls wait, and are notified, in its parent's batch): the store's write skips its
    /// rows, in the same statement, so no read is made here.
    pub(super) fn notifies(&self) -> bool {
        self.notifications.is_active()
    }

    /// Who hears of a batch of `agent`'s with `requests`: the calls' approvers (as
    /// `routing::audience` reads them), the approver entries `adds` (an escalation's or a
    /// hand-over's), and the directory's members of them, for the email channels that write to
    /// approvers. The one place it is worked out; nothing when no channel routes by approvers.
    pub(super) async fn audience_of(
        &self,
        agent: &str,
        requests: &[Value],
        adds: &[String],
    ) -> Audience {
        if !self.notifications.needs_audience() {
            return Audience::default();
        }
        let mut audience = super::routing::audience(self.agents(), agent, requests);
        for entry in adds
            .iter()
            .filter_map(|entry| ApproverEntry::parse(entry).ok())
        {
            super::routing::add_to_audience(&mut audience, entry);
        }
        self.directory().add_members(&mut audience).await;
        audience
    }

    /// The rows of a pause of `about`'s task with the batch `requests` (the commit's
    /// `new_batch`), expiring at `expires_at`.
    pub(super) async fn pause_notifications(
        &self,
        about: &About<'_>,
        requests: Option<&Value>,
        expires_at: Option<&str>,
    ) -> Vec<NewNotification> {
        let requests: &[Value] = requests
            .and_then(Value::as_array)
            .map_or(&[], Vec::as_slice);
        let audience = self.audience_of(about.agent, requests, &[]).await;
        self.notifications.for_event(
            NotificationKind::Pending,
            about.agent,
            &audience,
            |public_url| payload::pending(about, public_url, requests, expires_at),
        )
    }

    /// Wakes this replica's sender: rows were just committed.
    pub(super) fn wake_sender(&self) {
        self.outbox_wake.notify_one();
    }

    /// Starts the sender when a channel is configured or push notifications are on.
    pub(super) fn start_sender(self: &Arc<Self>) {
        if !self.notifications.is_active() && !self.pushes().on() {
            return;
        }
        let sender = Sender {
            runtime: self.clone(),
        };
        self.tracker.spawn(sender.run());
    }

    /// The notifications that failed for good, most recent first (for an operator).
    pub async fn failed_notifications(&self, limit: i64) -> Result<Vec<NotificationRow>> {
        Ok(self.store.failed_notifications(limit).await?)
    }
}

/// This replica's sender of the outbox (see the module's docs).
#[derive(Clone)]
pub(super) struct Sender {
    pub(super) runtime: Arc<Runtime>,
}

impl Sender {
    /// Claims due rows while fewer than [`CONCURRENT`] deliveries run, and runs each on its
    /// own: a slow receiver holds one slot, never the others' notifications, and a freed slot
    /// is filled at once.
    async fn run(self) {
        // A name of its own for the leases: a restarted process takes its old rows over as any
        // other replica would, once their lease lapses.
        let owner: Arc<str> = uuid::Uuid::new_v4().to_string().into();
        let lease = self.runtime.notifications.delivery.lease().as_millis() as i64;
        let poll = self.runtime.notifications.delivery.poll;
        let mut running: JoinSet<()> = JoinSet::new();
        loop {
            if self.runtime.shutdown.is_cancelled() {
                break;
            }
            let free = CONCURRENT.saturating_sub(running.len()) as i64;
            let mut claimed = 0;
            if free > 0 {
                let rows = match self
                    .runtime
                    .store
                    .claim_notifications(&owner, now_ms(), lease, free.min(CLAIM))
                    .await
                {
                    Ok(rows) => rows,
                    Err(err) => {
                        tracing::warn!(error = %err, "could not claim notifications");
                        Vec::new()
                    }
                };
                claimed = rows.len() as i64;
                for row in rows {
                    let (sender, owner) = (self.clone(), owner.clone());
                    running.spawn(async move { sender.send_one(&owner, row).await });
                }
            }
            // Every slot taken, or nothing more is due: wait for a slot, new rows or a tick.
            if free == 0 || claimed < free.min(CLAIM) {
                tokio::select! {
                    _ = self.runtime.shutdown.cancelled() => break,
                    Some(_) = running.join_next(), if !running.is_empty() => {}
                    _ = self.runtime.outbox_wake.notified() => tokio::time::sleep(SETTLE).await,
                    _ = tokio::time::sleep(poll) => {}
                }
            }
            // Reap the deliveries that ended meanwhile, so their slots count as free.
            while running.try_join_next().is_some() {}
        }
        // Attempts still under way are dropped rather than waited for (a receiver may hold one
        // up to the timeout): their rows' leases lapse and they are sent again, at least once.
        running.shutdown().await;
    }

    /// One attempt at `row`, and its outcome written and counted (a push under its own
    /// channel, [`crate::store::PUSH_CHANNEL`]).
    async fn send_one(&self, owner: &str, row: NotificationRow) {
        let attempt = match row.kind {
            NotificationKind::Push => self.runtime.pushes().deliver(&row).await,
            NotificationKind::Pending
            | NotificationKind::Decided
            | NotificationKind::Canceled
            | NotificationKind::Expired
            | NotificationKind::Reminded
            | NotificationKind::Escalated
            | NotificationKind::Extended
            | NotificationKind::Counted => {
                let notifications = &self.runtime.notifications;
                let sent = match (
                    notifications.email(&row.channel),
                    notifications.slack_app(&row.channel),
                    notifications.web_push(&row.channel),
                ) {
                    (Some(email), _, _) => self.deliver_email(&email, &row).await,
                    (None, Some(app), _) => self.deliver_slack(&app, &row).await,
                    (None, None, Some(push)) => self.deliver_web_push(&push, &row).await,
                    (None, None, None) => notifications.deliver(&row).await,
                };
                match sent {
                    Ok(()) => Attempt::Delivered,
                    Err(error) => Attempt::Failed(error),
                }
            }
        };
        let (outcome, error, next) = match attempt {
            Attempt::Delivered => ("delivered", None, None),
            Attempt::Moot(why) => {
                tracing::info!(notification = %row.id, channel = %row.channel, "a notification dropped: {why}");
                ("dropped", None, None)
            }
            Attempt::Refused(error) => ("failed", Some(error), Some(AttemptFailed::GiveUp)),
            Attempt::Failed(error) => {
                let created_ms = chrono::DateTime::parse_from_rfc3339(&row.created_at)
                    .map_or_else(|_| now_ms(), |at| at.timestamp_millis());
                let next = self.runtime.notifications.delivery.after_failure(
                    row.attempts + 1,
                    created_ms,
                    now_ms(),
                    jitter(),
                );
                let outcome = match next {
                    AttemptFailed::GiveUp => "failed",
                    AttemptFailed::RetryAt(_) => "retry",
                };
                (outcome, Some(error), Some(next))
            }
        };
        self.runtime.metrics.notification(&row.channel, outcome);
        let written = match (error, next) {
            (Some(error), Some(next)) => {
                if next == AttemptFailed::GiveUp {
                    tracing::warn!(notification = %row.id, channel = %row.channel, attempts = row.attempts + 1, error = %error, "a notification failed for good");
                } else {
                    tracing::info!(notification = %row.id, channel = %row.channel, attempt = row.attempts + 1, error = %error, "a notification will be retried");
                }
                self.runtime
                    .store
                    .notification_attempt_failed(owner, &row.id, &error, next)
                    .await
            }
            _ => self.runtime.store.notification_delivered(&row.id).await,
        };
        if let Err(err) = written {
            // The lease lapses and the row is sent again: at least once.
            tracing::warn!(notification = %row.id, error = %err, "could not record a notification's attempt");
        }
    }
}

/// A number in [0, 1) from the operating system's random source (0.5 if it fails).
fn jitter() -> f64 {
    let mut bytes = [0u8; 8];
    match getrandom::fill(&mut bytes) {
        Ok(()) => (u64::from_le_bytes(bytes) >> 11) as f64 / (1u64 << 53) as f64,
        Err(_) => 0.5,
    }
}
