//! Request bodies must say they are JSON. Every body this server reads is JSON, and a browser
//! sends a body of another type (`text/plain`, a form) or of no type from any web page without
//! asking the server first (a CORS "simple" request): with `--auth none` such a page could make
//! an "always allow" policy, decide a batch or start a task. A JSON content type makes the
//! browser ask first (a preflight `OPTIONS`), which this server does not allow across origins.
//!
//! The one exception is the confirm page of a decision link (`/decide/…`, `links`): a plain
//! HTML form, whose POST is held to the same origin and a form token instead; and Slack's
//! interaction requests, forms that Slack signs.

use axum::extract::Request;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;

/// Slack's interaction requests: forms, each signed by Slack over its raw body (`slack`), which
/// no web page can forge.
const SLACK_INTERACTIONS: &str = "/api/slack/interactions";

/// Answers `415` to a request whose body is not empty and not declared JSON (a decision link's
/// confirm form aside).
pub async fn refuse_non_json_body(request: Request, next: axum::middleware::Next) -> Response {
    let path = request.uri().path();
    let exempt = path.starts_with("/decide/") || path == SLACK_INTERACTIONS;
    if has_body(request.headers()) && !exempt {
        let content_type = request
            .headers()
            .get(header::CONTENT_TYPE)
            .map(|value| String::from_utf8_lossy(value.as_bytes()).into_owned());
        if !content_type.as_deref().is_some_and(is_json) {
            let given = content_type.unwrap_or_else(|| "none".to_owned());
            let body = json!({"error": format!(
                "a request body must be JSON, sent with Content-Type: application/json (not {given:?})"
            )});
            return (StatusCode::UNSUPPORTED_MEDIA_TYPE, Json(body)).into_response();
        }
    }
    next.run(request).await
}

/// Whether the request declares a body: a length above zero, or a chunked one.
fn has_body(headers: &HeaderMap) -> bool {
    let length = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.trim().parse::<u64>().ok());
    length.is_some_and(|length| length > 0) || headers.contains_key(header::TRANSFER_ENCODING)
}

/// `application/json` or a `+json` type, with any parameters (`; charset=utf-8`).
fn is_json(content_type: &str) -> bool {
    let essence = content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    essence == "application/json"
        || essence
            .strip_prefix("application/")
            .is_some_and(|subtype| subtype.ends_with("+json"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_types_pass_and_the_types_a_page_may_send_unasked_do_not() {
        for json in [
            "application/json",
            "Application/JSON; charset=utf-8",
            "application/vnd.a2a+json",
        ] {
            assert!(is_json(json), "{json}");
        }
        for other in [
            "text/plain",
            "text/plain;charset=UTF-8",
            "application/x-www-form-urlencoded",
            "multipart/form-data; boundary=x",
            "",
            "application/jsonp",
        ] {
            assert!(!is_json(other), "{other}");
        }
    }
}
