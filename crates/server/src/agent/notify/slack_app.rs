//! The Slack app channel (`kind = "slack_app"`): a bot that posts each waiting batch with
//! `chat.postMessage` (Approve, Reject and Open buttons), opens a modal for a rejection's
//! reason (`views.open`), and updates every posted copy (`chat.update`) once the batch no
//! longer waits; the runtime drives it (`runtime::slack`). Slack's interaction requests are
//! verified here ([`SlackApp::verify`]): `v0=` HMAC-SHA256 over `v0:{timestamp}:{raw body}`
//! with the app's signing secret, compared in constant time, older than five minutes refused.

use std::collections::BTreeMap;

use hmac::{Hmac, Mac};
use serde_json::{json, Value};
use sha2::Sha256;

use super::config::{self, SlackAppSpec};

/// How far a request's timestamp may be from now, in seconds: Slack's advice against replays.
pub const MAX_SKEW_SECS: i64 = 5 * 60;

/// Why an interaction request is not Slack's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unsigned {
    #[error("X-Slack-Request-Timestamp and X-Slack-Signature are required")]
    Missing,
    #[error("the request's timestamp is more than five minutes from now")]
    Stale,
    #[error("the request's signature does not verify")]
    BadSignature,
}

/// A configured Slack app: its bot token, signing secret, Slack channel and user mapping.
pub struct SlackApp {
    /// The notifications channel's name.
    pub name: String,
    token: String,
    signing_secret: String,
    /// Slack's channel id the messages are posted in.
    pub slack_channel: String,
    api_url: String,
    users: BTreeMap<String, String>,
    client: reqwest::Client,
}

impl std::fmt::Debug for SlackApp {
    // The token and the secret are never printed.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SlackApp")
            .field("name", &self.name)
            .field("slack_channel", &self.slack_channel)
            .field("users", &self.users.len())
            .finish_non_exhaustive()
    }
}

impl SlackApp {
    /// The app of `[channels.slack]`: each secret read; a bad value is `(field, why)`, never
    /// naming a secret.
    pub fn load(
        name: &str,
        spec: &SlackAppSpec,
        client: reqwest::Client,
    ) -> Result<SlackApp, (String, String)> {
        let field = |name: &str| format!("slack.{name}");
        let token = config::secret(
            "the bot token",
            spec.bot_token_env.as_deref(),
            spec.bot_token_file.as_deref(),
            None,
        )
        .map_err(|message| (field("bot_token_file"), message))?
        .ok_or_else(|| {
            (
                field("bot_token_file"),
                "a Slack app needs its bot token: bot_token_file or bot_token_env".to_owned(),
            )
        })?;
        let signing_secret = config::secret(
            "the signing secret",
            spec.signing_secret_env.as_deref(),
            spec.signing_secret_file.as_deref(),
            None,
        )
        .map_err(|message| (field("signing_secret_file"), message))?
        .ok_or_else(|| {
            (
                field("signing_secret_file"),
                "a Slack app needs its signing secret: signing_secret_file or signing_secret_env"
                    .to_owned(),
            )
        })?;
        let channel = spec.channel.trim();
        if channel.is_empty() || !channel.chars().all(|c| c.is_ascii_alphanumeric()) {
            return Err((
                field("channel"),
                format!("{channel:?} is not a Slack channel id (C0123ABCD)"),
            ));
        }
        let api_url = spec.api_url.trim().trim_end_matches('/').to_owned();
        if reqwest::Url::parse(&api_url)
            .map_or(true, |url| !matches!(url.scheme(), "http" | "https"))
        {
            return Err((field("api_url"), "not an http:// or https:// URL".into()));
        }
        if let Some((user, _)) = spec
            .users
            .iter()
            .find(|(user, person)| user.trim().is_empty() || person.trim().is_empty())
        {
            return Err((
                field("users"),
                format!("{user:?}: each entry maps a Slack user id to a Signoff user id"),
            ));
        }
        Ok(SlackApp {
            name: name.to_owned(),
            token,
            signing_secret,
            slack_channel: channel.to_owned(),
            api_url,
            users: spec.users.clone(),
            client,
        })
    }

    /// Whether Slack signed `body` sent at `timestamp` (its header's text) with `signature`
    /// (`v0=` and hex), `now` being the Unix time in seconds.
    pub fn verify(
        &self,
        timestamp: Option<&str>,
        signature: Option<&str>,
        body: &[u8],
        now: i64,
    ) -> Result<(), Unsigned> {
        let (Some(timestamp), Some(signature)) = (timestamp, signature) else {
            return Err(Unsigned::Missing);
        };
        let at: i64 = timestamp.trim().parse().map_err(|_| Unsigned::Stale)?;
        if (now - at).abs() > MAX_SKEW_SECS {
            return Err(Unsigned::Stale);
        }
        let given = signature
            .strip_prefix("v0=")
            .and_then(hex_bytes)
            .ok_or(Unsigned::BadSignature)?;
        let mut mac = Hmac::<Sha256>::new_from_slice(self.signing_secret.as_bytes())
            .map_err(|_| Unsigned::BadSignature)?;
        mac.update(format!("v0:{timestamp}:").as_bytes());
        mac.update(body);
        // `verify_slice` compares in constant time.
        mac.verify_slice(&given).map_err(|_| Unsigned::BadSignature)
    }

    /// The Signoff user the operator mapped Slack user `user` to, if any.
    pub fn mapped(&self, user: &str) -> Option<&str> {
        self.users.get(user).map(String::as_str)
    }

    /// Calls Web API `method` with a JSON body; its answer when Slack says `ok`, else why not.
    async fn call(&self, method: &str, body: &Value) -> Result<Value, String> {
        let response = self
            .client
            .post(format!("{}/{method}", self.api_url))
            .bearer_auth(&self.token)
            .json(body)
            .send()
            .await
            .map_err(|err| format!("{method}: {}", super::send::describe(&err)))?;
        answer(method, response).await
    }

    /// Posts `message` (`text` and `blocks`) in the app's channel: where and as which `ts`.
    pub async fn post_message(&self, message: &Value) -> Result<(String, String), String> {
        let mut body = message.clone();
        body["channel"] = json!(self.slack_channel);
        let answer = self.call("chat.postMessage", &body).await?;
        let channel = answer["channel"].as_str().unwrap_or(&self.slack_channel);
        let ts = answer["ts"]
            .as_str()
            .ok_or("chat.postMessage answered without a ts")?;
        Ok((channel.to_owned(), ts.to_owned()))
    }

    /// Replaces the message `ts` of `channel` with `message`.
    pub async fn update(&self, channel: &str, ts: &str, message: &Value) -> Result<(), String> {
        let mut body = message.clone();
        body["channel"] = json!(channel);
        body["ts"] = json!(ts);
        self.call("chat.update", &body).await.map(drop)
    }

    /// Opens `view` (a modal) for the interaction of `trigger_id`.
    pub async fn open_view(&self, trigger_id: &str, view: &Value) -> Result<(), String> {
        let body = json!({"trigger_id": trigger_id, "view": view});
        self.call("views.open", &body).await.map(drop)
    }

    /// The email Slack gives for user `user` (`users.info`; needs `users:read.email`).
    pub async fn user_email(&self, user: &str) -> Result<Option<String>, String> {
        let mut url = reqwest::Url::parse(&format!("{}/users.info", self.api_url))
            .map_err(|err| format!("users.info: {err}"))?;
        url.query_pairs_mut().append_pair("user", user);
        let response = self
            .client
            .get(url)
            .bearer_auth(&self.token)
            .send()
            .await
            .map_err(|err| format!("users.info: {}", super::send::describe(&err)))?;
        let answer = answer("users.info", response).await?;
        Ok(answer["user"]["profile"]["email"]
            .as_str()
            .filter(|email| !email.trim().is_empty())
            .map(str::to_owned))
    }

    /// Tells the person who clicked `text`, only them (an ephemeral message to the
    /// interaction's `response_url`, which Slack signed into the request).
    pub async fn tell(&self, response_url: &str, text: &str) -> Result<(), String> {
        let body = json!({
            "response_type": "ephemeral",
            "replace_original": false,
            "text": text,
        });
        let response = self
            .client
            .post(response_url)
            .json(&body)
            .send()
            .await
            .map_err(|err| format!("response_url: {}", super::send::describe(&err)))?;
        if response.status().is_success() {
            Ok(())
        } else {
            Err(format!("response_url: HTTP {}", response.status()))
        }
    }
}

/// A Web API answer: its JSON when `ok`, else Slack's `error` (or the HTTP status).
async fn answer(method: &str, response: reqwest::Response) -> Result<Value, String> {
    let status = response.status();
    let text = response
        .text()
        .await
        .map_err(|err| format!("{method}: {}", super::send::describe(&err)))?;
    let value: Value = serde_json::from_str(&text)
        .map_err(|_| format!("{method}: HTTP {status}, an answer that is not JSON"))?;
    if value["ok"] == json!(true) {
        return Ok(value);
    }
    let error = value["error"].as_str().unwrap_or("no error given");
    Err(format!(
        "{method}: HTTP {status}: {}",
        signoff_protocol::redact::shorten_text(error, 200)
    ))
}

/// Lowercase or uppercase hex as bytes, if it is hex.
fn hex_bytes(text: &str) -> Option<Vec<u8>> {
    if text.len() % 2 != 0 {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|at| u8::from_str_radix(text.get(at..at + 2)?, 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn app() -> SlackApp {
        SlackApp {
            name: "slack".into(),
            token: "xoxb-test".into(),
            signing_secret: "8f742231b10e8888abcd99yyyzzz85a5".into(),
            slack_channel: "C1".into(),
            api_url: "http://127.0.0.1:9".into(),
            users: BTreeMap::new(),
            client: reqwest::Client::new(),
        }
    }

    // Slack's own example (docs.slack.dev/authentication/verifying-requests-from-slack).
    const BODY: &str = "token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c";
    const SIGNATURE: &str = "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503";

    #[test]
    fn slacks_example_verifies_and_a_change_of_any_part_does_not() {
        let app = app();
        let at = 1531420618;
        assert_eq!(
            app.verify(Some("1531420618"), Some(SIGNATURE), BODY.as_bytes(), at),
            Ok(())
        );
        let changed = BODY.replace("roadrunner", "coyote");
        assert_eq!(
            app.verify(Some("1531420618"), Some(SIGNATURE), changed.as_bytes(), at),
            Err(Unsigned::BadSignature)
        );
        assert_eq!(
            app.verify(Some("1531420619"), Some(SIGNATURE), BODY.as_bytes(), at),
            Err(Unsigned::BadSignature)
        );
        assert_eq!(
            app.verify(Some("1531420618"), Some("v0=zz"), BODY.as_bytes(), at),
            Err(Unsigned::BadSignature)
        );
        assert_eq!(
            app.verify(
                Some("1531420618"),
                Some(SIGNATURE),
                BODY.as_bytes(),
                at + 301
            ),
            Err(Unsigned::Stale)
        );
        assert_eq!(
            app.verify(None, Some(SIGNATURE), BODY.as_bytes(), at),
            Err(Unsigned::Missing)
        );
    }
}
