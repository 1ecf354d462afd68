//! The email channel's deliveries (`agent::notify::email`): the runtime sends them, since a
//! message to the person who may decide a waiting batch carries that person's own decision
//! links (`links`), made at the attempt, so that the outbox holds no token. Each recipient has
//! an outbox row of their own (`recipient` in its payload), so a retry goes only to those whose
//! message was not accepted (at least once: a recipient may still get a message twice when the
//! server accepted it but the outcome was not recorded).

use lettre::message::Mailbox;

use crate::agent::notify::email::{self, DecisionLinks, EmailChannel};
use crate::agent::notify::payload::Notice;
use crate::agent::notify::Recipient;
use crate::store::{NotificationKind, NotificationRow};

use super::notify::Sender;
use super::{AgentError, IssuedLinks};

impl Sender {
    /// One attempt at an email notification: the message to its row's recipient. A row
    /// written before rows were per recipient goes to all of them, as it was then.
    pub(super) async fn deliver_email(
        &self,
        channel: &EmailChannel,
        row: &NotificationRow,
    ) -> Result<(), String> {
        let notice = Notice::of(row)?;
        let Some(recipient) = &notice.recipient else {
            return self.deliver_email_to_all(channel, row, &notice).await;
        };
        let (address, links) = match recipient {
            Recipient::Requester(person) => match self.address_of(channel, person).await? {
                Some(address) => (address, self.links_for(row, person).await?),
                None => {
                    tracing::info!(notification = %row.id, user = %person, "no email address is known for the requester");
                    return Ok(());
                }
            },
            Recipient::Address(address) => (email::mailbox(address)?, None),
            Recipient::Member(member) => (
                email::mailbox(&member.email)?,
                self.member_links(row, &member.id).await?,
            ),
            Recipient::Approver(user) => match self.address_of(channel, user).await? {
                Some(address) => (address, None),
                None => {
                    tracing::info!(notification = %row.id, user = %user, "no email address is known for the approver");
                    return Ok(());
                }
            },
        };
        channel
            .send(channel.message(&notice, address, links.as_ref())?)
            .await
    }

    /// A row without a recipient: the requester's message, then the fixed addresses'.
    async fn deliver_email_to_all(
        &self,
        channel: &EmailChannel,
        row: &NotificationRow,
        notice: &Notice,
    ) -> Result<(), String> {
        let requester = notice.requester.clone();
        if channel.to_requester {
            match self.address_of(channel, &requester).await? {
                Some(address) => {
                    let links = self.links_for(row, &requester).await?;
                    let message = channel.message(notice, address, links.as_ref())?;
                    channel.send(message).await?;
                }
                None => {
                    tracing::info!(notification = %row.id, user = %requester, "no email address is known for the requester");
                }
            }
        }
        for to in &channel.to {
            channel
                .send(channel.message(notice, to.clone(), None)?)
                .await?;
        }
        Ok(())
    }

    /// A person's address: the channel's `people` entry, else the directory's (their latest
    /// recorded sign-in, or a proxy's or JWT's naming), else their latest browser sign-in's.
    /// Never an id taken as an address: `user:someone@outside.example` in a hand-over is not a
    /// person this server knows, and mailing it would send the batch wherever a request says.
    async fn address_of(
        &self,
        channel: &EmailChannel,
        person: &str,
    ) -> Result<Option<Mailbox>, String> {
        if let Some(address) = channel.people.get(person) {
            return Ok(Some(address.clone()));
        }
        let listed = self
            .runtime
            .store
            .person(person)
            .await
            .map_err(|err| format!("reading {person} in the directory: {err}"))?
            .and_then(|listed| listed.email)
            .and_then(|address| email::mailbox(&address).ok());
        if listed.is_some() {
            return Ok(listed);
        }
        let known = self
            .runtime
            .store
            .login_email(person)
            .await
            .map_err(|err| format!("reading {person}'s email: {err}"))?;
        Ok(known.and_then(|address| email::mailbox(&address).ok()))
    }

    /// The requester's links of the row's batch, if the row is about a batch that still waits.
    async fn links_for(
        &self,
        row: &NotificationRow,
        person: &str,
    ) -> Result<Option<DecisionLinks>, String> {
        if row.kind != NotificationKind::Pending {
            return Ok(None);
        }
        let ttl = self.runtime.limits.decision_link_ttl;
        let issued = self
            .runtime
            .links()
            .create(person, &row.task_id, row.batch_id, ttl)
            .await;
        self.as_links(row, issued)
    }

    /// A group member's links of the row's batch, in every message about it while it waits
    /// (a member reached by an escalation or a hand-over first hears of it then), as the
    /// directory knows them now (their groups may have changed since the row was written):
    /// none once the batch no longer waits, or when they may no longer decide it.
    async fn member_links(
        &self,
        row: &NotificationRow,
        id: &str,
    ) -> Result<Option<DecisionLinks>, String> {
        if !about_a_waiting_batch(row.kind) {
            return Ok(None);
        }
        let who = self
            .runtime
            .directory()
            .decider(id)
            .await
            .map_err(|err| format!("reading {id} in the directory: {err}"))?;
        let ttl = self.runtime.limits.decision_link_ttl;
        let issued = self
            .runtime
            .links()
            .for_approver(&who, &row.task_id, row.batch_id, ttl)
            .await;
        self.as_links(row, issued)
    }

    /// Issued links as the message's URLs; none when the batch no longer waits or the person
    /// may not decide it (the message then only informs).
    fn as_links(
        &self,
        row: &NotificationRow,
        issued: Result<IssuedLinks, AgentError>,
    ) -> Result<Option<DecisionLinks>, String> {
        match issued {
            Ok(issued) => {
                let base = self.runtime.notifications.public_url();
                Ok(Some(DecisionLinks {
                    approve: issued.approve.map(|token| format!("{base}/decide/{token}")),
                    reject: format!("{base}/decide/{}", issued.reject),
                    expires_at: issued.expires_at,
                }))
            }
            // Decided meanwhile, or not this person's to decide: the message only informs.
            Err(
                AgentError::NotPaused(_) | AgentError::Forbidden(_) | AgentError::TaskNotFound(_),
            ) => {
                tracing::info!(notification = %row.id, task = %row.task_id, "the batch no longer waits; its message goes without links");
                Ok(None)
            }
            Err(err) => Err(format!("making decision links: {err}")),
        }
    }
}

/// Whether a notification of `kind` is about a batch that still waits for a decision.
fn about_a_waiting_batch(kind: NotificationKind) -> bool {
    match kind {
        NotificationKind::Pending
        | NotificationKind::Reminded
        | NotificationKind::Escalated
        | NotificationKind::Extended
        | NotificationKind::Counted => true,
        NotificationKind::Decided
        | NotificationKind::Canceled
        | NotificationKind::Expired
        | NotificationKind::Push => false,
    }
}
