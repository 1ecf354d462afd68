//! The Slack app channel (`agent::notify::slack_app`), as the runtime drives it.
//!
//! Sending (from the outbox's one `Sender`, so nothing is lost): a waiting batch's message is
//! posted with `chat.postMessage` and its copy recorded (`store::slack`); an approval counted
//! short of its quorum is shown on every copy, its buttons kept; once the batch is
//! decided, canceled or expired, every recorded copy is updated (`chat.update`) to say what
//! happened, by whom and how, with no buttons left; a hand-over or an escalation closes the
//! copies so and posts a new one. A copy posted after its batch stopped waiting (its row sent
//! after the decision's) is closed at once, from the audit.
//!
//! Deciding: a click on Approve, or the Reject modal's submission, is Slack's signed request
//! (verified in the HTTP layer). Its Slack user is mapped to a person (the channel's `users`,
//! else the email `users.info` gives, looked up in the directory), and the decision goes
//! through [`Runtime::apply`] as that person, on channel `slack`, for the batch the button
//! carried: eligibility, the two-person rule and quorum are checked then, at click time, as on
//! every channel. A click that decides nothing (unmapped, ineligible, a batch no longer
//! waiting) is told why, to that person only.

use std::sync::Arc;

use serde_json::Value;
use signoff_protocol::hitl::{Decision, Preview};
use signoff_protocol::redact::display_args;
use signoff_protocol::rest::DeciderAuth;

use crate::agent::approvals::{batch_requests, decision_of, Actor, Command, Decide, Decider};
use crate::agent::notify::payload::{Notice, NoticeEvent};
use crate::agent::notify::slack;
use crate::agent::notify::slack_app::SlackApp;
use crate::store::{self, Channel, NotificationKind, NotificationRow, SlackMessageRow};

use super::notify::Sender;
use super::Runtime;

/// The longest preview shown, in characters (a section holds 3000 UTF-16 units).
const PREVIEW_CHARS: usize = 2500;

/// A click on a message's button, as Slack's `block_actions` payload gives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlackClick {
    /// The Slack user who clicked (`U…`).
    pub user: String,
    pub action_id: String,
    /// The button's value: `{batch_id}:{task_id}`.
    pub value: String,
    /// Where to tell the person how it went.
    pub response_url: String,
    /// Lets a modal open, for three seconds.
    pub trigger_id: String,
}

/// A Reject modal's submission.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlackRejection {
    pub user: String,
    /// The batch, as the button carried it: `{batch_id}:{task_id}`.
    pub value: String,
    pub reason: Option<String>,
}

/// What a decision from Slack came to, in words for the person.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SlackAnswer {
    /// Decided (or counted, short of quorum): what to tell them.
    Done(String),
    /// Nothing was decided, and why.
    Refused(String),
}

impl SlackAnswer {
    pub fn text(&self) -> &str {
        match self {
            SlackAnswer::Done(text) | SlackAnswer::Refused(text) => text,
        }
    }
}

/// `{batch_id}:{task_id}` read back.
fn batch_of(value: &str) -> Option<(i64, &str)> {
    let (batch, task) = value.split_once(':')?;
    (!task.is_empty()).then_some(())?;
    Some((batch.parse().ok()?, task))
}

/// Decisions from Slack's buttons and modals: what [`Runtime::slack`] lends.
pub struct SlackDecisions<'a> {
    runtime: &'a Arc<Runtime>,
}

impl Runtime {
    /// Decisions from the Slack app channels.
    pub fn slack(self: &Arc<Self>) -> SlackDecisions<'_> {
        SlackDecisions { runtime: self }
    }
}

impl SlackDecisions<'_> {
    /// The Slack app channels, which Slack's interaction requests are verified against.
    pub fn apps(&self) -> Vec<Arc<SlackApp>> {
        self.runtime.notifications.slack_apps().collect()
    }

    /// Handles a click on a Slack message's button, after the HTTP layer acknowledged it
    /// (Slack wants an answer within three seconds): Approve decides, Reject opens the modal
    /// for a reason, Open (a link) does nothing here. The person hears how it went unless it
    /// decided (then every copy says so).
    pub fn on_click(&self, app: Arc<SlackApp>, click: SlackClick) {
        let runtime = self.runtime.clone();
        self.runtime.tracker.spawn(async move {
            let slack = runtime.slack();
            let answer = match click.action_id.as_str() {
                slack::APPROVE => {
                    slack
                        .decide(&app, &click.user, &click.value, Decision::approve_all())
                        .await
                }
                slack::REJECT => slack.open_reject_modal(&app, &click).await,
                _ => return,
            };
            let text = match &answer {
                Some(SlackAnswer::Refused(text)) | Some(SlackAnswer::Done(text)) => text,
                None => return,
            };
            if let Err(err) = app.tell(&click.response_url, text).await {
                tracing::warn!(channel = %app.name, error = %err, "could not answer a Slack click");
            }
        });
    }

    /// Opens the Reject modal for a person who is mapped (an unmapped one is told why at
    /// once); whether they may reject is checked when they submit it.
    async fn open_reject_modal(&self, app: &SlackApp, click: &SlackClick) -> Option<SlackAnswer> {
        if let Err(why) = self.person(app, &click.user).await {
            return Some(SlackAnswer::Refused(why));
        }
        let view = slack::reject_modal(&click.value);
        match app.open_view(&click.trigger_id, &view).await {
            Ok(()) => None,
            Err(err) => {
                tracing::warn!(channel = %app.name, error = %err, "could not open the Reject modal");
                Some(SlackAnswer::Refused(format!(
                    "Signoff could not open the form for a reason ({err}); reject in Signoff."
                )))
            }
        }
    }

    /// Decides the batch of a Reject modal's submission, with its reason.
    pub async fn reject(&self, app: &SlackApp, rejection: &SlackRejection) -> SlackAnswer {
        let reason = rejection
            .reason
            .as_deref()
            .map(str::trim)
            .filter(|reason| !reason.is_empty())
            .map(str::to_owned);
        self.decide(
            app,
            &rejection.user,
            &rejection.value,
            Decision::deny_all(reason),
        )
        .await
        .unwrap_or_else(|| SlackAnswer::Refused("Nothing was decided.".into()))
    }

    /// Decides the batch `value` names as the person Slack user `user` is, on channel `slack`,
    /// through the one write of every decision.
    async fn decide(
        &self,
        app: &SlackApp,
        user: &str,
        value: &str,
        decision: Decision,
    ) -> Option<SlackAnswer> {
        let Some((batch_id, task_id)) = batch_of(value) else {
            return Some(SlackAnswer::Refused(
                "This button names no batch Signoff knows.".into(),
            ));
        };
        let decider = match self.person(app, user).await {
            Ok(decider) => decider,
            Err(why) => return Some(SlackAnswer::Refused(why)),
        };
        let actor = Actor {
            channel: Channel::Slack,
            decider,
            auth: Some(DeciderAuth::Slack),
        };
        let decide = Decide {
            decision,
            batch_id: Some(batch_id),
            message: None,
            link: None,
        };
        let outcome = self
            .runtime
            .apply(task_id, &actor, Command::Decide(Box::new(decide)))
            .await
            .and_then(super::Outcome::into_decided);
        Some(match outcome {
            Ok((_, _, Some(_))) => SlackAnswer::Done(
                "Your approval is counted; the batch waits for more approvals.".into(),
            ),
            Ok((_, _, None)) => SlackAnswer::Done("Decided.".into()),
            Err(err) => SlackAnswer::Refused(
                self.runtime
                    .approvals()
                    .why_refused(task_id, batch_id, &err)
                    .await,
            ),
        })
    }

    /// The person Slack user `user` is: the channel's mapping, else the email Slack gives for
    /// them, in the directory; with the email and groups the directory holds now. Else why not.
    async fn person(&self, app: &SlackApp, user: &str) -> Result<Decider, String> {
        let person = match app.mapped(user) {
            Some(person) => person.to_owned(),
            None => {
                let email = app.user_email(user).await.map_err(|err| {
                    format!("Signoff could not ask Slack who you are ({err}). Nothing changed.")
                })?;
                let Some(email) = email else {
                    return Err(
                        "Slack gives no email for you, and Signoff has no mapping of your \
                                Slack account: nothing changed. Ask the operator to map it."
                            .into(),
                    );
                };
                let found = self
                    .runtime
                    .store
                    .person_by_email(&email)
                    .await
                    .map_err(|err| {
                        format!("Signoff could not read its directory ({err}). Nothing changed.")
                    })?;
                found.map(|person| person.user_id).ok_or_else(|| {
                    format!(
                        "No Signoff person has the email {email} that Slack gives for you: sign \
                         in to Signoff once, or ask the operator to map your Slack account. \
                         Nothing changed."
                    )
                })?
            }
        };
        let mut decider = self
            .runtime
            .directory()
            .decider(&person)
            .await
            .map_err(|err| {
                format!("Signoff could not read its directory ({err}). Nothing changed.")
            })?;
        decider.auth = Some(DeciderAuth::Slack);
        Ok(decider)
    }
}

impl Sender {
    /// One attempt at a Slack app row: a waiting batch posted (and its copy recorded), its
    /// copies updated with an approval counted short of its quorum, or every copy closed. Each Web API call is safe to repeat except a post, which is
    /// recorded as soon as Slack answers (a retry after a lost answer posts again: at least
    /// once).
    pub(super) async fn deliver_slack(
        &self,
        app: &SlackApp,
        row: &NotificationRow,
    ) -> Result<(), String> {
        let notice = Notice::of(row)?;
        let batch_id = row
            .batch_id
            .ok_or("a Slack app message needs its batch, and this row has none")?;
        match row.kind {
            NotificationKind::Pending | NotificationKind::Reminded | NotificationKind::Extended => {
                self.post_copy(app, row, &notice, batch_id).await
            }
            NotificationKind::Escalated => {
                let closed = slack::handed_over_message(&notice);
                self.update_copies(app, batch_id, &closed).await?;
                self.post_copy(app, row, &notice, batch_id).await
            }
            NotificationKind::Counted => {
                self.update_waiting_copies(app, row, &notice, batch_id)
                    .await
            }
            NotificationKind::Decided | NotificationKind::Canceled | NotificationKind::Expired => {
                let closed = slack::closed_message(row.kind, &notice);
                self.update_copies(app, batch_id, &closed).await
            }
            NotificationKind::Push => Err("an A2A push is not a Slack message".into()),
        }
    }

    /// Updates every recorded copy of `batch_id` to `message`.
    async fn update_copies(
        &self,
        app: &SlackApp,
        batch_id: i64,
        message: &Value,
    ) -> Result<(), String> {
        let copies = self
            .runtime
            .store
            .slack_messages(batch_id)
            .await
            .map_err(|err| format!("reading the posted Slack messages: {err}"))?;
        for copy in copies.iter().filter(|copy| copy.channel == app.name) {
            app.update(&copy.slack_channel, &copy.ts, message).await?;
        }
        Ok(())
    }

    /// Posts a copy of the waiting batch and records it; a batch that no longer waits is not
    /// posted, and one that stopped waiting meanwhile has its new copy closed at once.
    async fn post_copy(
        &self,
        app: &SlackApp,
        row: &NotificationRow,
        notice: &Notice,
        batch_id: i64,
    ) -> Result<(), String> {
        let store = &self.runtime.store;
        let Some(previews) = self.waiting_previews(&row.task_id, batch_id).await? else {
            return Ok(());
        };
        let message = slack::app_message(row.kind, notice, batch_id, &previews);
        let (slack_channel, ts) = app.post_message(&message).await?;
        store
            .put_slack_message(SlackMessageRow {
                slack_channel: slack_channel.clone(),
                ts: ts.clone(),
                channel: app.name.clone(),
                task_id: row.task_id.clone(),
                batch_id,
                posted_at: store::now(),
            })
            .await
            .map_err(|err| format!("recording the posted Slack message: {err}"))?;
        // Decided while it was being posted: its decision's row may have closed the copies
        // before this one was recorded, so this one is closed here.
        if let Some(closed) = self.closed_if_decided(row, notice, batch_id).await? {
            app.update(&slack_channel, &ts, &closed).await?;
        }
        Ok(())
    }

    /// Shows an approval counted short of its quorum on every copy of the waiting batch, its
    /// buttons kept. A batch that stopped waiting meanwhile has its copies closed again: its
    /// decision's row may have closed them before this update reopened them.
    async fn update_waiting_copies(
        &self,
        app: &SlackApp,
        row: &NotificationRow,
        notice: &Notice,
        batch_id: i64,
    ) -> Result<(), String> {
        let Some(previews) = self.waiting_previews(&row.task_id, batch_id).await? else {
            return Ok(());
        };
        let message = slack::app_message(row.kind, notice, batch_id, &previews);
        self.update_copies(app, batch_id, &message).await?;
        if let Some(closed) = self.closed_if_decided(row, notice, batch_id).await? {
            self.update_copies(app, batch_id, &closed).await?;
        }
        Ok(())
    }

    /// The previews of batch `batch_id`'s calls in words, by call id, if it still waits.
    async fn waiting_previews(
        &self,
        task_id: &str,
        batch_id: i64,
    ) -> Result<Option<Vec<(String, String)>>, String> {
        let batch = self
            .runtime
            .store
            .pending_batch(task_id)
            .await
            .map_err(|err| format!("reading the batch: {err}"))?;
        Ok(batch.filter(|batch| batch.id == batch_id).map(|batch| {
            batch_requests(&batch)
                .iter()
                .filter_map(|call| Some((call.id.clone(), preview_text(&call.preview()?))))
                .collect()
        }))
    }

    /// After a write to Slack: if batch `batch_id` stopped waiting meanwhile, its closed copy
    /// (`None` while it waits).
    async fn closed_if_decided(
        &self,
        row: &NotificationRow,
        notice: &Notice,
        batch_id: i64,
    ) -> Result<Option<Value>, String> {
        let waits = self
            .runtime
            .store
            .pending_batch(&row.task_id)
            .await
            .map_err(|err| format!("reading the batch: {err}"))?
            .is_some_and(|batch| batch.id == batch_id);
        match waits {
            true => Ok(None),
            false => self.closed_from_audit(row, notice, batch_id).await,
        }
    }

    /// A closed copy of batch `batch_id`, which no longer waits, from its decision in the
    /// audit (`None` if none is recorded yet: its own row closes the copies then).
    async fn closed_from_audit(
        &self,
        row: &NotificationRow,
        notice: &Notice,
        batch_id: i64,
    ) -> Result<Option<Value>, String> {
        let Some(decided) = decision_of(&self.runtime.store, &row.task_id, batch_id)
            .await
            .map_err(|err| format!("reading the batch's decision: {err}"))?
        else {
            return Ok(None);
        };
        let kind = match decided.channel {
            Channel::Cancel => NotificationKind::Canceled,
            Channel::Expiry => NotificationKind::Expired,
            Channel::A2a
            | Channel::Text
            | Channel::Rest
            | Channel::Policy
            | Channel::Rule
            | Channel::Link
            | Channel::Slack
            | Channel::Reviewer
            | Channel::WebPush
            | Channel::McpClient => NotificationKind::Decided,
        };
        let closing = Notice {
            event: NoticeEvent::Decided {
                decided_by: decided.user_id,
                channel: decided.channel.as_str().to_owned(),
                summary: decided.summary,
                verdicts: Vec::new(),
            },
            ..notice.clone()
        };
        Ok(Some(slack::closed_message(kind, &closing)))
    }
}

/// A call's preview in words, secrets masked and cut as arguments are.
fn preview_text(preview: &Preview) -> String {
    let text = match preview {
        Preview::Diff(diff) => diff.clone(),
        Preview::NewFile { size } => format!("a new file of {size} bytes"),
        Preview::Unchanged { size } => format!("the file's content as it is ({size} bytes)"),
        Preview::Delete {
            size, first_lines, ..
        } => format!("deletes a file of {size} bytes, which starts:\n{first_lines}"),
        Preview::Missing => "deletes nothing: no file is there".to_owned(),
        Preview::Binary { size } => format!("a binary file of {size} bytes"),
        Preview::TooLarge { size } => format!("a file too large to compare ({size} bytes)"),
        Preview::Unavailable(why) => format!("no preview: {why}"),
    };
    display_args(&Value::String(text), PREVIEW_CHARS)
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_buttons_value_names_its_batch_and_task_or_nothing() {
        assert_eq!(batch_of("7:task-1"), Some((7, "task-1")));
        assert_eq!(batch_of("7:a:b"), Some((7, "a:b")));
        assert_eq!(batch_of("x:task"), None);
        assert_eq!(batch_of("7:"), None);
        assert_eq!(batch_of("7"), None);
    }
}
