//! The notifications file (`--notifications FILE`, crates/server/README.md "Notifications"):
//! the operator's channels, where each one's events go, and the delivery schedule. Secrets (a
//! webhook's `whsec_` key, a Slack webhook URL) come from a file or the environment, never from
//! this file's text, and no error names their values.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use crate::store::NotificationKind;

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NotificationsFile {
    #[serde(default)]
    pub delivery: DeliverySpec,
    #[serde(default)]
    pub channels: Vec<ChannelSpec>,
}

/// When to retry and how long to wait for a receiver (humantime durations).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DeliverySpec {
    /// The wait before the first retry; each next one doubles it (with jitter).
    pub retry_base: String,
    /// The longest wait between two attempts.
    pub retry_max: String,
    /// How long after its event a notification is still retried; then it is failed.
    pub retry_for: String,
    /// How often a sender looks for due notifications (besides being woken by its own).
    pub poll: String,
    /// Longest wait to connect to a receiver.
    pub connect_timeout: String,
    /// Longest attempt, from connecting to the end of the answer.
    pub timeout: String,
}

impl Default for DeliverySpec {
    fn default() -> Self {
        DeliverySpec {
            retry_base: "5s".into(),
            retry_max: "1h".into(),
            retry_for: "24h".into(),
            poll: "1s".into(),
            connect_timeout: "5s".into(),
            timeout: "10s".into(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChannelKindSpec {
    /// A Standard Webhooks POST of the event's JSON, signed with a `whsec_` secret.
    Webhook,
    /// A Slack incoming webhook: a Block Kit message.
    Slack,
    /// Email over SMTP (`[channels.email]`), with decision links for the person who may decide.
    Email,
    /// A Slack app (`[channels.slack]`): messages posted with its bot token, whose Approve and
    /// Reject buttons decide (`POST /api/slack/interactions`, signed with its signing secret).
    SlackApp,
    /// Web Push to the devices people enrolled (`[channels.web_push]`, optional): Signoff's
    /// own VAPID key, nothing to set up.
    WebPush,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChannelSpec {
    /// The channel's name: in `/metrics`, logs and the failed list.
    pub name: String,
    pub kind: ChannelKindSpec,
    /// The receiver's URL, or (one of them) the variable or file holding it: a Slack webhook's
    /// URL is its secret.
    pub url: Option<String>,
    pub url_env: Option<String>,
    pub url_file: Option<PathBuf>,
    /// A webhook's signing secret (`whsec_` and base64): the variable or file holding it.
    pub secret_env: Option<String>,
    pub secret_file: Option<PathBuf>,
    /// The events it gets (`batch.pending`, `batch.decided`, `batch.canceled`,
    /// `batch.expired`, …, `batch.counted`); default: all but `batch.counted`, which only a
    /// Slack app takes by default.
    pub events: Option<Vec<String>>,
    /// Which batches it hears of; default: every batch.
    #[serde(default)]
    pub route: RouteSpec,
    /// An email channel's server, sender and recipients.
    pub email: Option<EmailSpec>,
    /// A Slack app channel's bot token, signing secret and Slack channel.
    pub slack: Option<SlackAppSpec>,
    /// A Web Push channel's options.
    pub web_push: Option<WebPushSpec>,
}

/// `[channels.web_push]`: how much a push says.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WebPushSpec {
    /// `generic` (the default: "deploy waits for your approval", fit for a locked screen) or
    /// `calls` (the calls' names too).
    #[serde(default)]
    pub detail: super::web_push::Detail,
}

/// `[channels.slack]`: where a Slack app channel posts, as which bot, and who its users are.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SlackAppSpec {
    /// The bot token (`xoxb-…`, scopes `chat:write`, `users:read`, `users:read.email`): the
    /// variable or file holding it.
    pub bot_token_env: Option<String>,
    pub bot_token_file: Option<PathBuf>,
    /// The app's signing secret, which Slack signs its interaction requests with: the variable
    /// or file holding it.
    pub signing_secret_env: Option<String>,
    pub signing_secret_file: Option<PathBuf>,
    /// The Slack channel's id (`C…`) the messages are posted in; the bot must be a member.
    pub channel: String,
    /// Slack's Web API (default `https://slack.com/api`).
    #[serde(default = "slack_api")]
    pub api_url: String,
    /// Slack user ids (`U…`) to Signoff user ids, read before the email Slack gives for a user
    /// (`users.info`), which is looked up in the directory of people.
    #[serde(default)]
    pub users: std::collections::BTreeMap<String, String>,
}

fn slack_api() -> String {
    "https://slack.com/api".into()
}

/// `[channels.email]`: where an email channel sends and to whom.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EmailSpec {
    pub smtp_host: String,
    /// Default: 587 for `starttls`, 465 for `tls`, 25 for `none`.
    pub smtp_port: Option<u16>,
    /// `starttls` (the default), `tls` or `none` (a relay on the same host only).
    #[serde(default = "starttls")]
    pub tls: String,
    /// The SMTP user; its password from `password_file` or `password_env`.
    pub username: Option<String>,
    pub password_env: Option<String>,
    pub password_file: Option<PathBuf>,
    /// The sender (`Signoff <signoff@example.com>`).
    pub from: String,
    /// Fixed addresses that hear of every batch the channel takes (no decision links).
    #[serde(default)]
    pub to: Vec<String>,
    /// Whether the requester gets the message with their decision links (default true): at the
    /// address of their latest sign-in (`--auth oidc`), else the one `people` gives.
    #[serde(default = "yes")]
    pub to_requester: bool,
    /// Whether the approvers named by user (`user:ID` in the agents file) who may decide a
    /// waiting batch get the message too (default false), each at the address `people` gives,
    /// else the entry itself when it is an address, else their latest sign-in's. Without
    /// decision links: those are the requester's; an approver decides in Signoff.
    #[serde(default)]
    pub to_approvers: bool,
    /// People's addresses by user id.
    #[serde(default)]
    pub people: std::collections::BTreeMap<String, String>,
}

fn starttls() -> String {
    "starttls".into()
}

fn yes() -> bool {
    true
}

/// A channel's filter. Each field given narrows it; a batch must pass all of them.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RouteSpec {
    /// Agents (`namespace/name`) whose batches it hears of.
    pub agents: Option<Vec<String>>,
    /// Approver groups (`sre` for `group:sre` in the agents file): it hears of the batches some
    /// call of which one of these groups may approve.
    pub groups: Option<Vec<String>>,
}

/// A field of the notifications file is wrong: `path` names it.
#[derive(Debug, thiserror::Error)]
#[error("notifications file {file}: {path}: {message}")]
pub struct NotifyConfigError {
    pub file: String,
    pub path: String,
    pub message: String,
}

/// Reads and parses the file; the checks of each value are the caller's (`Notifications::load`).
pub fn read(path: &Path) -> Result<NotificationsFile, NotifyConfigError> {
    let fail = |at: String, message: String| NotifyConfigError {
        file: path.display().to_string(),
        path: at,
        message,
    };
    let text = std::fs::read_to_string(path)
        .map_err(|err| fail("(file)".into(), format!("cannot read it: {err}")))?;
    let deserializer = toml::Deserializer::new(&text);
    serde_path_to_error::deserialize(deserializer).map_err(|err| {
        fail(
            err.path().to_string(),
            err.into_inner().message().to_owned(),
        )
    })
}

/// A humantime duration of field `field`.
pub fn duration(field: &str, text: &str) -> Result<Duration, String> {
    humantime::parse_duration(text).map_err(|err| format!("{field} = {text:?}: {err}"))
}

/// The event kind a name in `events` means.
pub fn event_kind(name: &str) -> Result<NotificationKind, String> {
    NotificationKind::ALL
        .into_iter()
        .find(|kind| kind.as_str() == name)
        .ok_or_else(|| {
            let known: Vec<&str> = NotificationKind::ALL.iter().map(|k| k.as_str()).collect();
            format!("{name:?} is not an event (known: {})", known.join(", "))
        })
}

/// A secret from the variable `env` or the file `file` (exactly one), trimmed. Errors name
/// where it should be, never what it holds.
pub fn secret(
    what: &str,
    env: Option<&str>,
    file: Option<&Path>,
    plain: Option<&str>,
) -> Result<Option<String>, String> {
    let given = [env.is_some(), file.is_some(), plain.is_some()];
    if given.iter().filter(|given| **given).count() > 1 {
        return Err(format!("give {what} one way only"));
    }
    if let Some(value) = plain {
        return Ok(Some(value.trim().to_owned()));
    }
    if let Some(name) = env {
        let value = std::env::var(name)
            .map_err(|_| format!("{what}: the environment variable {name} is not set"))?;
        return nonempty(what, value).map(Some);
    }
    if let Some(path) = file {
        let value = std::fs::read_to_string(path)
            .map_err(|err| format!("{what}: cannot read {}: {err}", path.display()))?;
        return nonempty(what, value).map(Some);
    }
    Ok(None)
}

fn nonempty(what: &str, value: String) -> Result<String, String> {
    let value = value.trim().to_owned();
    if value.is_empty() {
        return Err(format!("{what} is empty"));
    }
    Ok(value)
}
