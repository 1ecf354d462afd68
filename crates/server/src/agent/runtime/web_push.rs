//! Web Push (`agent::notify::web_push`) as the runtime lends it ([`Runtime::web_push`]): the
//! devices a person enrols, lists and revokes, Signoff's VAPID key, and the delivery of a Web
//! Push row from the outbox's one `Sender`, so nothing is lost.
//!
//! A row is one person's: a waiting batch is pushed to each of their devices with Approve (only
//! when they may approve a call of it, as the approval rules say now) and Reject; a batch that
//! no longer waits when its row is sent is not pushed. A decision, cancel or expiry is a
//! `close` push of the same tag, so the notification closes on every device. A push service's
//! 404 or 410 deletes that device's subscription. Pushes of one tag replace each other, so a
//! retried row shows nothing twice.

use std::sync::Arc;

use signoff_protocol::rest::{BrowserSubscription, Device};

use crate::agent::approvals::batch_requests;
use crate::agent::notify::payload::Notice;
use crate::agent::notify::web_push::{self, Pushed, WebPushChannel, WebPusher};
use crate::agent::notify::Recipient;
use crate::store::{self, handed_to, NotificationRow, PushSubscriptionRow};

use super::notify::Sender;
use super::{AgentError, Result, Runtime};

/// The most devices one person may enrol.
pub const MAX_DEVICES: usize = 20;

/// The longest device name, in characters.
pub const MAX_DEVICE_CHARS: usize = 80;

/// Web Push's devices and key; what [`Runtime::web_push`] lends.
pub struct WebPushes<'a> {
    runtime: &'a Runtime,
}

impl Runtime {
    /// Web Push: the devices people enrolled and Signoff's VAPID key.
    pub fn web_push(&self) -> WebPushes<'_> {
        WebPushes { runtime: self }
    }
}

impl WebPushes<'_> {
    /// Sets the sender (once, at start).
    pub fn set_pusher(&self, pusher: Arc<WebPusher>) {
        let _ = self.runtime.web_pusher.set(pusher);
    }

    /// The sender, when some notifications channel is Web Push; else people cannot enrol.
    fn pusher(&self) -> Result<&Arc<WebPusher>> {
        match self.runtime.web_pusher.get() {
            Some(pusher) if self.runtime.notifications.pushes_to_devices() => Ok(pusher),
            _ => Err(AgentError::PushNotFound(
                "Web Push is not on: the operator adds a channel of kind \"web_push\" to the \
                 notifications file"
                    .into(),
            )),
        }
    }

    /// The VAPID public key browsers subscribe with (base64url).
    pub fn vapid_key(&self) -> Result<String> {
        Ok(self.pusher()?.vapid().public_key().to_owned())
    }

    /// Enrols `person`'s device `device` with the browser's `subscription`: its keys checked
    /// (an encryption to them must work) and its endpoint kept public, as every client-chosen
    /// URL is (`outbound`).
    pub async fn enrol(
        &self,
        person: &str,
        device: &str,
        subscription: BrowserSubscription,
    ) -> Result<Device> {
        let pusher = self.pusher()?;
        let device = device.trim();
        if device.is_empty() || device.chars().count() > MAX_DEVICE_CHARS {
            return Err(AgentError::InvalidParams(format!(
                "device: a name of 1 to {MAX_DEVICE_CHARS} characters"
            )));
        }
        let keys = &subscription.keys;
        web_push::encrypt(&keys.p256dh, &keys.auth, b"{}")
            .map_err(|err| AgentError::InvalidParams(err.to_string()))?;
        let endpoint = crate::agent::notify::outbound::check_url(
            &subscription.endpoint,
            pusher.outbound().allow(),
        )
        .await
        .map_err(|err| AgentError::InvalidParams(format!("endpoint refused: {err}")))?;
        if endpoint.scheme() != "https" && pusher.outbound().allow().is_empty() {
            return Err(AgentError::InvalidParams(
                "endpoint refused: a push service is reached over https".into(),
            ));
        }
        let row = PushSubscriptionRow {
            id: format!("wps_{}", uuid::Uuid::new_v4().simple()),
            user_id: person.to_owned(),
            device: device.to_owned(),
            endpoint: subscription.endpoint.clone(),
            p256dh: keys.p256dh.clone(),
            auth: keys.auth.clone(),
            created_at: store::now(),
        };
        let shown = to_device(&row);
        if !self
            .runtime
            .store
            .put_push_subscription(row, MAX_DEVICES)
            .await?
        {
            return Err(AgentError::InvalidParams(format!(
                "you have {MAX_DEVICES} devices enrolled already: revoke one first"
            )));
        }
        Ok(shown)
    }

    /// `person`'s devices, oldest first.
    pub async fn devices(&self, person: &str) -> Result<Vec<Device>> {
        let rows = self.runtime.store.push_subscriptions(person).await?;
        Ok(rows.iter().map(to_device).collect())
    }

    /// Revokes one of `person`'s devices; another's does not exist for them.
    pub async fn revoke(&self, person: &str, id: &str) -> Result<()> {
        match self
            .runtime
            .store
            .delete_push_subscription(person, id)
            .await?
        {
            true => Ok(()),
            false => Err(AgentError::PushNotFound(format!("no device {id} of yours"))),
        }
    }

    /// Whether `person` may approve a call of `row`'s waiting batch `batch_id` (`None`: it no
    /// longer waits, or they may not decide it at all).
    async fn may_approve(
        &self,
        row: &NotificationRow,
        person: &str,
        batch_id: i64,
    ) -> Result<Option<bool>> {
        let store = &self.runtime.store;
        let Some(task) = store.task(&row.task_id).await? else {
            return Ok(None);
        };
        let Some(batch) = store
            .pending_batch(&row.task_id)
            .await?
            .filter(|batch| batch.id == batch_id)
        else {
            return Ok(None);
        };
        let steps = store.batch_steps(&row.task_id).await?;
        let who = self.runtime.directory().decider(person).await?;
        let eligible = self.runtime.approvals.approvers().eligible_for_batch(
            &task,
            &batch_requests(&batch),
            &handed_to(&steps, batch.id),
            &who,
        );
        Ok(match (eligible, task.user_id == person) {
            (true, _) => Some(true),
            (false, true) => Some(false),
            (false, false) => None,
        })
    }
}

/// A device as its person sees it: the push service's origin, never its URL.
fn to_device(row: &PushSubscriptionRow) -> Device {
    let service = reqwest::Url::parse(&row.endpoint)
        .map(|url| url.origin().ascii_serialization())
        .unwrap_or_default();
    Device {
        id: row.id.clone(),
        device: row.device.clone(),
        service,
        created_at: row.created_at.clone(),
    }
}

/// The person a Web Push row goes to.
fn person_of(notice: &Notice) -> Option<&str> {
    match notice.recipient.as_ref()? {
        Recipient::Requester(id) | Recipient::Approver(id) => Some(id),
        Recipient::Member(member) => Some(&member.id),
        Recipient::Address(_) => None,
    }
}

impl Sender {
    /// One attempt at a Web Push row: the push to each of its person's devices. A device whose
    /// push service no longer knows it is deleted; any other failure fails the row, retried
    /// whole (each device shows its tag's notification once, however often it is pushed).
    pub(super) async fn deliver_web_push(
        &self,
        channel: &WebPushChannel,
        row: &NotificationRow,
    ) -> std::result::Result<(), String> {
        let pusher = self
            .runtime
            .web_pusher
            .get()
            .ok_or("Web Push is not set up on this server")?;
        let notice = Notice::of(row)?;
        let batch_id = row
            .batch_id
            .ok_or("a push needs its batch, and this row has none")?;
        let person = person_of(&notice).ok_or("a push row names no person")?;
        let mut message = web_push::message(row.kind, &notice, batch_id, channel.detail);
        if message.kind == "pending" {
            let may = self
                .runtime
                .web_push()
                .may_approve(row, person, batch_id)
                .await
                .map_err(|err| format!("reading the batch: {err}"))?;
            match may {
                None => return Ok(()),
                Some(approve) => message.approve = approve,
            }
        }
        let store = &self.runtime.store;
        let devices = store
            .push_subscriptions(person)
            .await
            .map_err(|err| format!("reading the devices: {err}"))?;
        let mut failed = Vec::new();
        for device in &devices {
            match pusher.push(device, &message).await {
                Ok(Pushed::Accepted) => {}
                Ok(Pushed::Gone) => {
                    tracing::info!(device = %device.id, "a push service no longer knows a device: its subscription is deleted");
                    store
                        .delete_push_subscription(&device.user_id, &device.id)
                        .await
                        .map_err(|err| format!("deleting a gone device: {err}"))?;
                }
                Err(err) => failed.push(format!("{}: {err}", device.id)),
            }
        }
        if failed.is_empty() {
            Ok(())
        } else {
            Err(failed.join("; "))
        }
    }
}
