//! Notifications: a batch waiting for sign-off reaches people outside the browser, and so do
//! its decision, cancel and expiry. The operator configures channels (`--notifications FILE`:
//! `config`); a webhook signed as Standard Webhooks (`webhook`) or a Slack incoming webhook
//! (`slack`), each with a route (which agents' batches) and the events it takes.
//!
//! A2A push notifications go through the same outbox to the URLs clients set on their tasks
//! (`push`: the [`Notifier`] that posts them), kept off non-public addresses (`outbound`, with
//! `--push-allow`) and signed with the server's Ed25519 key (`signer`, its JWKS served at
//! `/.well-known/jwks.json`). Their rows are written by the runtime (`runtime::push`).
//!
//! The runtime asks [`Notifications::for_event`] for the rows of an event and puts them in the
//! event's own commit (`store::outbox`); the sender (`runtime::notify`) delivers them through
//! [`Notifications::deliver`] at least once, retried on the schedule of [`Delivery`].
//!
//! Adding an event: a `NotificationKind` variant, its payload (`payload`), and a call to
//! `for_event` where its commit is built. Adding a channel: a `ChannelKind` variant, its
//! `kind` in the file (`config::ChannelKindSpec`) and its arm in `deliver`.
//!
//! Web Push (`web_push`) is a channel too: one row per person who may decide, sent by the
//! runtime to each device they enrolled (`runtime::web_push`).

mod config;
pub mod email;
pub mod outbound;
pub mod payload;
pub mod push;
mod send;
pub mod signer;
pub mod slack;
pub mod slack_app;
pub mod web_push;
mod webhook;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use http::header::{HeaderName, HeaderValue};

pub use config::NotifyConfigError;
pub use outbound::{AllowList, Outbound, OutboundError};
pub use push::{Notifier, Refused};
pub use signer::{Signer, SignerError};
pub use slack_app::{SlackApp, Unsigned};
pub use webhook::SigningKey;

use crate::store::{
    AttemptFailed, NewNotification, NotificationKind, NotificationRow, PUSH_CHANNEL,
};

/// What kind of receiver a channel is.
#[derive(Debug, Clone)]
pub enum ChannelKind {
    Webhook {
        key: SigningKey,
    },
    Slack,
    /// Sent by the runtime (`runtime::notify`), which makes each person's decision links.
    Email(Arc<email::EmailChannel>),
    /// A Slack app: sent by the runtime (`runtime::slack`), which records each posted copy.
    SlackApp(Arc<SlackApp>),
    /// Web Push: sent by the runtime (`runtime::web_push`) to each person's devices.
    WebPush(Arc<web_push::WebPushChannel>),
}

/// One configured channel.
#[derive(Clone)]
pub struct Channel {
    pub name: String,
    pub kind: ChannelKind,
    url: String,
    events: Vec<NotificationKind>,
    /// `None`: every agent.
    agents: Option<Vec<String>>,
    /// `None`: whoever may decide; else the batches some call of which these approver groups
    /// may approve.
    groups: Option<Vec<String>>,
}

impl std::fmt::Debug for Channel {
    // The URL may be the secret (a Slack webhook's): never printed.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Channel")
            .field("name", &self.name)
            .field("kind", &self.kind)
            .field("events", &self.events)
            .field("agents", &self.agents)
            .field("groups", &self.groups)
            .finish_non_exhaustive()
    }
}

impl Channel {
    /// Whether this channel hears of `kind` events of `agent`'s batches routed to `audience`.
    fn takes(&self, kind: NotificationKind, agent: &str, audience: &Audience) -> bool {
        self.events.contains(&kind)
            && self
                .agents
                .as_ref()
                .is_none_or(|agents| agents.iter().any(|wanted| wanted == agent))
            && self.groups.as_ref().is_none_or(|groups| {
                groups
                    .iter()
                    .any(|wanted| audience.groups.iter().any(|group| group == wanted))
            })
    }
}

/// Who may decide a batch besides its requester, as the agents file's `approvers` name them
/// over all its calls: the groups (`sre` of `group:sre`) and the users (`alice@example.com` of
/// `user:alice@example.com`). Empty: the requester decides alone.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Audience {
    pub groups: Vec<String>,
    pub users: Vec<String>,
    /// The directory's members of `groups` who have an email (`store::people`): filled in only
    /// when an email channel writes to approvers.
    pub members: Vec<Member>,
}

/// A member of an approver group, as the directory of people knows them.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Member {
    /// Their user id (the subject their links decide as).
    pub id: String,
    /// The email their latest recorded sign-in gave.
    pub email: String,
}

/// Whom one email row goes to (`recipient` in its payload): one row per person, so a retry
/// re-sends only to those whose message was not yet accepted.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Recipient {
    /// The requester (user id), with their decision links while the batch waits.
    Requester(String),
    /// A fixed address of the channel's `to`.
    Address(String),
    /// An approver named by user (`user:ID`), without links.
    Approver(String),
    /// A member of an approver group (the directory's), at the address worked out when the
    /// row was written, with their own decision links while the batch waits.
    Member(Member),
}

/// The key of an email row's payload that holds its [`Recipient`].
pub const RECIPIENT: &str = "recipient";

/// The retry schedule and the receivers' time limits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivery {
    pub retry_base: Duration,
    pub retry_max: Duration,
    pub retry_for: Duration,
    pub poll: Duration,
    pub connect_timeout: Duration,
    pub timeout: Duration,
}

impl Default for Delivery {
    fn default() -> Self {
        Delivery {
            retry_base: Duration::from_secs(5),
            retry_max: Duration::from_secs(3600),
            retry_for: Duration::from_secs(24 * 3600),
            poll: Duration::from_secs(1),
            connect_timeout: Duration::from_secs(5),
            timeout: Duration::from_secs(10),
        }
    }
}

impl Delivery {
    /// How long a sender holds a claimed notification: past the longest attempt, so a live
    /// sender's row is never taken by another, and a dead one's is retried soon after.
    pub fn lease(&self) -> Duration {
        self.timeout * 2 + Duration::from_secs(1)
    }

    /// After attempt number `attempt` (1 for the first) of a notification written at
    /// `created_ms` failed at `now_ms`: when to try again (exponential, with jitter: between
    /// half and all of `retry_base * 2^(attempt-1)`, at most `retry_max`), or give up once that
    /// would be past `retry_for` after the event.
    pub fn after_failure(
        &self,
        attempt: i64,
        created_ms: i64,
        now_ms: i64,
        jitter: f64,
    ) -> AttemptFailed {
        let doubling = 2f64.powi(attempt.clamp(1, 40) as i32 - 1);
        let full = (self.retry_base.as_secs_f64() * doubling).min(self.retry_max.as_secs_f64());
        let wait_ms = (full * (0.5 + 0.5 * jitter.clamp(0.0, 1.0)) * 1000.0) as i64;
        let next = now_ms + wait_ms.max(1);
        if next > created_ms + self.retry_for.as_millis() as i64 {
            AttemptFailed::GiveUp
        } else {
            AttemptFailed::RetryAt(next)
        }
    }
}

/// The operator's channels, where the links point, and the schedule.
pub struct Notifications {
    channels: Vec<Channel>,
    /// Where people reach this server (`--public-url`), for links to a batch.
    public_url: String,
    pub delivery: Delivery,
    client: reqwest::Client,
}

impl std::fmt::Debug for Notifications {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Notifications")
            .field("channels", &self.channels)
            .field("delivery", &self.delivery)
            .finish_non_exhaustive()
    }
}

impl Notifications {
    /// No channels: nothing is written or sent.
    pub fn none() -> Notifications {
        Notifications {
            channels: Vec::new(),
            public_url: String::new(),
            delivery: Delivery::default(),
            client: reqwest::Client::new(),
        }
    }

    /// The channels of the notifications file at `path`, linking to `public_url`; every value
    /// checked (each secret read and parsed), so a bad file stops the start, naming the field.
    pub fn load(path: &Path, public_url: Option<&str>) -> Result<Notifications, NotifyConfigError> {
        let file = config::read(path)?;
        let fail = |at: String, message: String| NotifyConfigError {
            file: path.display().to_string(),
            path: at,
            message,
        };
        let public_url = public_url
            .map(str::trim)
            .filter(|url| url.starts_with("http://") || url.starts_with("https://"))
            .ok_or_else(|| {
                fail(
                    "(file)".into(),
                    "notifications link to the batch: --public-url (http:// or https://) is needed"
                        .into(),
                )
            })?
            .trim_end_matches('/')
            .to_owned();
        let spec = &file.delivery;
        let duration = |field: &str, text: &str| {
            config::duration(field, text)
                .map_err(|message| fail(format!("delivery.{field}"), message))
        };
        let delivery = Delivery {
            retry_base: duration("retry_base", &spec.retry_base)?,
            retry_max: duration("retry_max", &spec.retry_max)?,
            retry_for: duration("retry_for", &spec.retry_for)?,
            poll: duration("poll", &spec.poll)?,
            connect_timeout: duration("connect_timeout", &spec.connect_timeout)?,
            timeout: duration("timeout", &spec.timeout)?,
        };
        let client = send::client(delivery.connect_timeout, delivery.timeout)
            .map_err(|message| fail("delivery".into(), message))?;
        let mut channels: Vec<Channel> = Vec::new();
        for (index, spec) in file.channels.iter().enumerate() {
            let at = |field: &str| format!("channels[{index}].{field}");
            if spec.name.trim().is_empty()
                || spec.name == PUSH_CHANNEL
                || channels.iter().any(|c| c.name == spec.name)
            {
                return Err(fail(
                    at("name"),
                    format!(
                        "{:?}: each channel needs a name of its own (and {PUSH_CHANNEL:?} is \
                         the A2A push notifications')",
                        spec.name
                    ),
                ));
            }
            if spec.web_push.is_some() && spec.kind != config::ChannelKindSpec::WebPush {
                return Err(fail(
                    at("web_push"),
                    "only a channel of kind \"web_push\" takes [web_push]".into(),
                ));
            }
            let (kind, url) = match spec.kind {
                config::ChannelKindSpec::WebPush => (web_push_channel(spec), String::new()),
                config::ChannelKindSpec::Email => (email_channel(spec, &delivery), String::new()),
                config::ChannelKindSpec::SlackApp => (
                    slack_app(spec, &client).map(|app| ChannelKind::SlackApp(Arc::new(app))),
                    String::new(),
                ),
                config::ChannelKindSpec::Webhook | config::ChannelKindSpec::Slack => {
                    match url_channel(spec) {
                        Ok((kind, url)) => (Ok(kind), url),
                        Err(err) => (Err(err), String::new()),
                    }
                }
            };
            let kind = kind.map_err(|(field, message)| fail(at(&field), message))?;
            let events = events(spec).map_err(|(field, message)| fail(at(&field), message))?;
            channels.push(Channel {
                name: spec.name.clone(),
                kind,
                url,
                events,
                agents: spec.route.agents.clone(),
                groups: groups(spec).map_err(|message| fail(at("route.groups"), message))?,
            });
        }
        Ok(Notifications {
            channels,
            public_url,
            delivery,
            client,
        })
    }

    /// Whether any channel is configured.
    pub fn is_active(&self) -> bool {
        !self.channels.is_empty()
    }

    /// The email channel named `name`, if it is one: the runtime sends its messages.
    pub fn email(&self, name: &str) -> Option<Arc<email::EmailChannel>> {
        self.channels
            .iter()
            .find(|channel| channel.name == name)
            .and_then(|channel| match &channel.kind {
                ChannelKind::Email(email) => Some(email.clone()),
                ChannelKind::Webhook { .. }
                | ChannelKind::Slack
                | ChannelKind::SlackApp(_)
                | ChannelKind::WebPush(_) => None,
            })
    }

    /// The Web Push channel named `name`, if it is one: the runtime sends its pushes.
    pub fn web_push(&self, name: &str) -> Option<Arc<web_push::WebPushChannel>> {
        self.channels
            .iter()
            .find(|channel| channel.name == name)
            .and_then(|channel| match &channel.kind {
                ChannelKind::WebPush(push) => Some(push.clone()),
                ChannelKind::Webhook { .. }
                | ChannelKind::Slack
                | ChannelKind::Email(_)
                | ChannelKind::SlackApp(_) => None,
            })
    }

    /// Whether some channel is Web Push: then people may enrol devices.
    pub fn pushes_to_devices(&self) -> bool {
        self.channels
            .iter()
            .any(|channel| matches!(channel.kind, ChannelKind::WebPush(_)))
    }

    /// The Slack app channel named `name`, if it is one: the runtime sends its messages.
    pub fn slack_app(&self, name: &str) -> Option<Arc<SlackApp>> {
        self.slack_apps().find(|app| app.name == name)
    }

    /// The Slack app channels, which Slack's interaction requests are verified against.
    pub fn slack_apps(&self) -> impl Iterator<Item = Arc<SlackApp>> + '_ {
        self.channels
            .iter()
            .filter_map(|channel| match &channel.kind {
                ChannelKind::SlackApp(app) => Some(app.clone()),
                ChannelKind::Webhook { .. }
                | ChannelKind::Slack
                | ChannelKind::Email(_)
                | ChannelKind::WebPush(_) => None,
            })
    }

    /// The channels' names.
    pub fn channel_names(&self) -> impl Iterator<Item = &str> {
        self.channels.iter().map(|channel| channel.name.as_str())
    }

    pub fn public_url(&self) -> &str {
        &self.public_url
    }

    /// Whether some email channel writes to approvers (`to_approvers`): then a batch's
    /// [`Audience`] lists the directory's members of its approver groups.
    pub fn mails_approvers(&self) -> bool {
        self.channels
            .iter()
            .any(|channel| matches!(&channel.kind, ChannelKind::Email(email) if email.to_approvers))
    }

    /// Whether a batch's [`Audience`] lists the directory's members of its approver groups:
    /// some email channel writes to approvers, or some channel pushes to their devices.
    pub fn needs_members(&self) -> bool {
        self.mails_approvers() || self.pushes_to_devices()
    }

    /// Whether some channel needs a batch's [`Audience`] (a `groups` route, or an email
    /// channel that writes to approvers): else it is not worked out for an event.
    pub fn needs_audience(&self) -> bool {
        self.channels.iter().any(|channel| {
            channel.groups.is_some()
                || matches!(&channel.kind, ChannelKind::Email(email) if email.to_approvers)
                || matches!(&channel.kind, ChannelKind::WebPush(_))
        })
    }

    /// The rows to write with a `kind` event of `agent`'s batch that `audience` may decide:
    /// one per channel that takes it (an email channel's: one per recipient), each with a
    /// fresh delivery id, all with `notice` (an email row with its one recipient). None when no
    /// channel takes it.
    pub fn for_event(
        &self,
        kind: NotificationKind,
        agent: &str,
        audience: &Audience,
        notice: impl FnOnce(&str) -> payload::Notice,
    ) -> Vec<NewNotification> {
        let mut takers = self
            .channels
            .iter()
            .filter(|channel| channel.takes(kind, agent, audience))
            .peekable();
        if takers.peek().is_none() {
            return Vec::new();
        }
        let notice = notice(&self.public_url);
        let row = |channel: &Channel, notice: &payload::Notice| NewNotification {
            id: format!("msg_{}", uuid::Uuid::new_v4().simple()),
            channel: channel.name.clone(),
            kind,
            payload: notice.to_value(),
        };
        let mut rows = Vec::new();
        for channel in takers {
            let recipients = match &channel.kind {
                ChannelKind::Email(email) => email.recipients(&notice.requester, audience),
                ChannelKind::WebPush(_) => deciders(&notice.requester, audience),
                ChannelKind::Webhook { .. } | ChannelKind::Slack | ChannelKind::SlackApp(_) => {
                    rows.push(row(channel, &notice));
                    continue;
                }
            };
            for recipient in recipients {
                let mut theirs = notice.clone();
                theirs.recipient = Some(recipient);
                rows.push(row(channel, &theirs));
            }
        }
        rows
    }

    /// One attempt at delivering `row` to its channel.
    pub async fn deliver(&self, row: &NotificationRow) -> Result<(), String> {
        let channel = self
            .channels
            .iter()
            .find(|channel| channel.name == row.channel)
            .ok_or_else(|| format!("no channel {:?} is configured any more", row.channel))?;
        match &channel.kind {
            ChannelKind::Webhook { key } => {
                let body = webhook::body(row);
                let timestamp = chrono::Utc::now().timestamp();
                let signature = key.sign(&row.id, timestamp, &body);
                let header = |value: &str| {
                    HeaderValue::from_str(value)
                        .map_err(|_| "a header value that HTTP cannot carry".to_owned())
                };
                let headers = vec![
                    (HeaderName::from_static("webhook-id"), header(&row.id)?),
                    (
                        HeaderName::from_static("webhook-timestamp"),
                        header(&timestamp.to_string())?,
                    ),
                    (
                        HeaderName::from_static("webhook-signature"),
                        header(&signature)?,
                    ),
                ];
                send::post(&self.client, &channel.url, headers, body).await
            }
            ChannelKind::Slack => {
                let body = slack::message(row)?.to_string().into_bytes();
                send::post(&self.client, &channel.url, Vec::new(), body).await
            }
            ChannelKind::Email(_) => {
                Err("an email channel's messages are sent by the runtime, with their links".into())
            }
            ChannelKind::SlackApp(_) => Err(
                "a Slack app channel's messages are sent by the runtime, which records them".into(),
            ),
            ChannelKind::WebPush(_) => Err(
                "a Web Push channel's pushes are sent by the runtime, to each person's devices"
                    .into(),
            ),
        }
    }
}

/// The events a channel takes: those it names, or all. Counted approvals (`batch.counted`) go
/// by default only to a Slack app, whose copies show them in place; a webhook may name them;
/// an email, a Web Push or a Slack incoming webhook would send a message per vote, so naming
/// them there is refused. A bad name is `(field, why)`.
fn events(spec: &config::ChannelSpec) -> Result<Vec<NotificationKind>, (String, String)> {
    let slack_app = matches!(spec.kind, config::ChannelKindSpec::SlackApp);
    let takes_counted = matches!(
        spec.kind,
        config::ChannelKindSpec::SlackApp | config::ChannelKindSpec::Webhook
    );
    let Some(names) = &spec.events else {
        let all = NotificationKind::ALL.into_iter();
        return Ok(all
            .filter(|kind| slack_app || *kind != NotificationKind::Counted)
            .collect());
    };
    names
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let field = || format!("events[{i}]");
            let kind = config::event_kind(name).map_err(|message| (field(), message))?;
            if kind == NotificationKind::Counted && !takes_counted {
                return Err((
                    field(),
                    "batch.counted (each approval short of a quorum) goes to a slack_app or a \
                     webhook channel only"
                        .to_owned(),
                ));
            }
            Ok(kind)
        })
        .collect()
}

/// Whom a Web Push row goes to: the requester, the approvers named by user and the members of
/// the approver groups, each once (a person's row reaches all their devices).
fn deciders(requester: &str, audience: &Audience) -> Vec<Recipient> {
    let mut ids: Vec<&str> = Vec::new();
    let mut all = Vec::new();
    if !requester.is_empty() {
        ids.push(requester);
        all.push(Recipient::Requester(requester.to_owned()));
    }
    for user in &audience.users {
        if !ids.contains(&user.as_str()) {
            ids.push(user);
            all.push(Recipient::Approver(user.clone()));
        }
    }
    for member in &audience.members {
        if !ids.contains(&member.id.as_str()) {
            ids.push(&member.id);
            all.push(Recipient::Member(member.clone()));
        }
    }
    all
}

/// A webhook or Slack webhook channel: its URL (from the file or a secret), and a webhook's
/// signing secret; else `(field, why)`.
fn url_channel(spec: &config::ChannelSpec) -> Result<(ChannelKind, String), (String, String)> {
    if spec.slack.is_some() {
        return Err((
            "slack".into(),
            "only a channel of kind \"slack_app\" takes [slack]".into(),
        ));
    }
    if spec.email.is_some() {
        return Err((
            "email".into(),
            "only a channel of kind \"email\" takes [email]".into(),
        ));
    }
    let url = config::secret(
        "url",
        spec.url_env.as_deref(),
        spec.url_file.as_deref(),
        spec.url.as_deref(),
    )
    .map_err(|message| ("url".to_owned(), message))?
    .ok_or_else(|| ("url".to_owned(), "give url, url_env or url_file".to_owned()))?;
    if reqwest::Url::parse(&url).map_or(true, |url| !matches!(url.scheme(), "http" | "https")) {
        return Err(("url".into(), "not an http:// or https:// URL".into()));
    }
    let secret = config::secret(
        "the signing secret",
        spec.secret_env.as_deref(),
        spec.secret_file.as_deref(),
        None,
    )
    .map_err(|message| ("secret_file".to_owned(), message))?;
    let kind = match (spec.kind, secret) {
        (config::ChannelKindSpec::Webhook, Some(secret)) => ChannelKind::Webhook {
            key: SigningKey::parse(&secret)
                .map_err(|message| ("secret_file".to_owned(), message))?,
        },
        (config::ChannelKindSpec::Webhook, None) => {
            return Err((
                "secret_file".into(),
                "a webhook needs its signing secret: secret_file or secret_env".into(),
            ))
        }
        (config::ChannelKindSpec::Slack, None) => ChannelKind::Slack,
        (config::ChannelKindSpec::Slack, Some(_)) => {
            return Err((
                "secret_file".into(),
                "a Slack webhook takes no signing secret (its URL is the secret: url_env or \
                 url_file)"
                    .into(),
            ))
        }
        (
            config::ChannelKindSpec::Email
            | config::ChannelKindSpec::SlackApp
            | config::ChannelKindSpec::WebPush,
            _,
        ) => {
            return Err((
                "kind".into(),
                "an email, Slack app or Web Push channel has no URL of its own".into(),
            ))
        }
    };
    Ok((kind, url))
}

/// A Web Push channel from its optional `[web_push]` table: it takes no URL and no secret.
fn web_push_channel(spec: &config::ChannelSpec) -> Result<ChannelKind, (String, String)> {
    if spec.url.is_some() || spec.url_env.is_some() || spec.url_file.is_some() {
        return Err((
            "url".into(),
            "a Web Push channel takes no url: each device's push service is where".into(),
        ));
    }
    if spec.secret_env.is_some() || spec.secret_file.is_some() {
        return Err((
            "secret_file".into(),
            "a Web Push channel takes no secret: Signoff keeps its own VAPID key".into(),
        ));
    }
    if spec.email.is_some() || spec.slack.is_some() {
        return Err((
            "kind".into(),
            "a Web Push channel takes neither [email] nor [slack]".into(),
        ));
    }
    let detail = spec
        .web_push
        .as_ref()
        .map(|options| options.detail)
        .unwrap_or_default();
    Ok(ChannelKind::WebPush(Arc::new(web_push::WebPushChannel {
        name: spec.name.clone(),
        detail,
    })))
}

/// A channel's `route.groups`, each named.
fn groups(spec: &config::ChannelSpec) -> Result<Option<Vec<String>>, String> {
    let Some(groups) = &spec.route.groups else {
        return Ok(None);
    };
    if groups.is_empty() {
        return Err("lists no group: name at least one, or leave it out".into());
    }
    if let Some(bad) = groups
        .iter()
        .find(|group| group.trim().is_empty() || group.contains(':'))
    {
        return Err(format!(
            "{bad:?} is not a group's name (write sre for the agents file's group:sre)"
        ));
    }
    Ok(Some(groups.clone()))
}

/// A Slack app channel from its `[slack]` table: its secrets read. A bad value is
/// `(field, why)`, never naming a secret.
fn slack_app(
    spec: &config::ChannelSpec,
    client: &reqwest::Client,
) -> Result<SlackApp, (String, String)> {
    if spec.url.is_some() || spec.url_env.is_some() || spec.url_file.is_some() {
        return Err((
            "url".into(),
            "a Slack app channel takes no url: [slack] says where (api_url, channel)".into(),
        ));
    }
    if spec.secret_env.is_some() || spec.secret_file.is_some() || spec.email.is_some() {
        return Err((
            "secret_file".into(),
            "a Slack app channel takes its secrets in [slack]: bot_token_file, \
             signing_secret_file"
                .into(),
        ));
    }
    let slack = spec.slack.as_ref().ok_or_else(|| {
        (
            "slack".to_owned(),
            "a Slack app channel needs its [slack] table".to_owned(),
        )
    })?;
    SlackApp::load(&spec.name, slack, client.clone())
}

/// An email channel from its `[email]` table: every address parsed, the password read. A bad
/// value is `(field, why)`, never naming the password.
fn email_channel(
    spec: &config::ChannelSpec,
    delivery: &Delivery,
) -> Result<ChannelKind, (String, String)> {
    let field = |name: &str| format!("email.{name}");
    if spec.url.is_some() || spec.url_env.is_some() || spec.url_file.is_some() {
        return Err((
            "url".into(),
            "an email channel takes no url: [email] says where".into(),
        ));
    }
    if spec.secret_env.is_some() || spec.secret_file.is_some() {
        return Err((
            "secret_file".into(),
            "an email channel takes no signing secret".into(),
        ));
    }
    if spec.slack.is_some() {
        return Err((
            "slack".into(),
            "only a channel of kind \"slack_app\" takes [slack]".into(),
        ));
    }
    let email = spec.email.as_ref().ok_or_else(|| {
        (
            "email".to_owned(),
            "an email channel needs its [email] table".to_owned(),
        )
    })?;
    let tls = email::SmtpTls::parse(&email.tls).map_err(|message| (field("tls"), message))?;
    let password = config::secret(
        "the SMTP password",
        email.password_env.as_deref(),
        email.password_file.as_deref(),
        None,
    )
    .map_err(|message| (field("password_file"), message))?;
    let credentials = match (&email.username, password) {
        (Some(user), Some(password)) => Some((user.clone(), password)),
        (None, None) => None,
        (Some(_), None) => {
            return Err((
                field("password_file"),
                "a username needs its password: password_file or password_env".into(),
            ))
        }
        (None, Some(_)) => return Err((field("username"), "a password needs its username".into())),
    };
    let from = email::mailbox(&email.from).map_err(|message| (field("from"), message))?;
    let to = email
        .to
        .iter()
        .enumerate()
        .map(|(i, to)| email::mailbox(to).map_err(|message| (field(&format!("to[{i}]")), message)))
        .collect::<Result<Vec<_>, _>>()?;
    let people = email
        .people
        .iter()
        .map(|(person, address)| {
            email::mailbox(address)
                .map(|mailbox| (person.clone(), mailbox))
                .map_err(|message| (field(&format!("people.{person}")), message))
        })
        .collect::<Result<_, _>>()?;
    if to.is_empty() && !email.to_requester && !email.to_approvers {
        return Err((
            field("to"),
            "no one gets this channel's messages: give to, or turn to_requester or \
             to_approvers on"
                .into(),
        ));
    }
    let smtp = email::SmtpSettings {
        host: email.smtp_host.clone(),
        port: email.smtp_port,
        tls,
        credentials,
        timeout: delivery.timeout,
    };
    let recipients = email::Recipients {
        to,
        to_requester: email.to_requester,
        to_approvers: email.to_approvers,
        people,
    };
    let channel = email::EmailChannel::new(smtp, from, recipients)
        .map_err(|message| (field("smtp_host"), message))?;
    Ok(ChannelKind::Email(Arc::new(channel)))
}

#[cfg(test)]
mod tests;
