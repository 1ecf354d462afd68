//! `POST /api/slack/interactions`: Slack's interaction requests for the Slack app channel
//! (crates/server/README.md, Slack app). Each is verified before anything is read from it (the
//! signature over the raw body with a Slack app's signing secret, a timestamp at most five
//! minutes away: `agent::notify::slack_app`), so anyone else's request is `401` and changes
//! nothing. A button's click is acknowledged at once and handled after (Slack waits three
//! seconds); the Reject modal's submission is answered with its outcome when that comes in
//! time, so a refused one says why inside the modal.

use std::time::Duration;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use percent_encoding::percent_decode_str;
use serde_json::{json, Value};

use super::AppState;
use crate::agent::notify::slack::{REASON, REJECT_MODAL};
use crate::agent::notify::slack_app::Unsigned;
use crate::agent::{SlackAnswer, SlackClick, SlackRejection};

/// How long a modal's submission waits for its decision before it is answered anyway: within
/// Slack's three seconds.
const SUBMISSION_WAIT: Duration = Duration::from_millis(2500);

fn refused(status: StatusCode, message: String) -> Response {
    (status, Json(json!({"error": message}))).into_response()
}

/// The `payload` field of a form body, decoded.
fn payload_of(body: &[u8]) -> Option<Value> {
    let body = std::str::from_utf8(body).ok()?;
    let field = body
        .split('&')
        .find_map(|pair| pair.strip_prefix("payload="))?;
    let text = percent_decode_str(&field.replace('+', " "))
        .decode_utf8()
        .ok()?
        .into_owned();
    serde_json::from_str(&text).ok()
}

/// `POST /api/slack/interactions`.
pub async fn interactions(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let header = |name: &str| headers.get(name).and_then(|value| value.to_str().ok());
    let (timestamp, signature) = (
        header("x-slack-request-timestamp"),
        header("x-slack-signature"),
    );
    let apps = state.runtime.slack().apps();
    if apps.is_empty() {
        return refused(
            StatusCode::NOT_FOUND,
            "no Slack app channel is configured".into(),
        );
    }
    let now = chrono::Utc::now().timestamp();
    let mut why = Unsigned::Missing;
    let mut verified = None;
    for app in apps {
        match app.verify(timestamp, signature, &body, now) {
            Ok(()) => {
                verified = Some(app);
                break;
            }
            Err(err) => why = err,
        }
    }
    let Some(app) = verified else {
        return refused(StatusCode::UNAUTHORIZED, why.to_string());
    };
    let Some(payload) = payload_of(&body) else {
        return refused(
            StatusCode::BAD_REQUEST,
            "an interaction's body is a form with a JSON payload field".into(),
        );
    };
    let text = |pointer: &str| {
        payload
            .pointer(pointer)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    match payload["type"].as_str() {
        Some("block_actions") => {
            let click = SlackClick {
                user: text("/user/id"),
                action_id: text("/actions/0/action_id"),
                value: text("/actions/0/value"),
                response_url: text("/response_url"),
                trigger_id: text("/trigger_id"),
            };
            state.runtime.slack().on_click(app, click);
            StatusCode::OK.into_response()
        }
        Some("view_submission") if text("/view/callback_id") == REJECT_MODAL => {
            let value = text("/view/private_metadata");
            let reason = payload
                .pointer(&format!("/view/state/values/{REASON}/{REASON}/value"))
                .and_then(Value::as_str)
                .map(str::to_owned);
            let rejection = SlackRejection {
                user: text("/user/id"),
                value,
                reason,
            };
            let runtime = state.runtime.clone();
            let deciding =
                tokio::spawn(async move { runtime.slack().reject(&app, &rejection).await });
            match tokio::time::timeout(SUBMISSION_WAIT, deciding).await {
                Ok(Ok(SlackAnswer::Refused(why))) => Json(json!({
                    "response_action": "errors",
                    "errors": {REASON: why},
                }))
                .into_response(),
                // Decided; or still deciding, or failed: the modal closes, and every copy of the
                // batch says what became of it.
                Ok(Ok(SlackAnswer::Done(_))) | Ok(Err(_)) | Err(_) => {
                    StatusCode::OK.into_response()
                }
            }
        }
        // Other interactions (a modal closed, a shortcut) are Slack's to send and ours to
        // ignore.
        _ => StatusCode::OK.into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_payload_field_is_read_from_a_form_body() {
        let body = b"payload=%7B%22type%22%3A%22block_actions%22%2C%22a%22%3A%22b+c%22%7D&x=1";
        assert_eq!(
            payload_of(body),
            Some(json!({"type": "block_actions", "a": "b c"}))
        );
        assert_eq!(payload_of(b"nothing=1"), None);
        assert_eq!(payload_of(b"payload=%7B"), None);
    }
}
