//! `GET /api/approvals/stream`: the caller's approval events as SSE (docs/rest.md, Approvals
//! stream). Each event has an `id:` (resume with `Last-Event-ID`), an `event:` of `pending` or
//! `decided` and one `data:` line of JSON; a quiet stream gets `: heartbeat` comments. A user
//! with `--approvals-streams-per-user` streams open gets 429 for one more.

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{header, HeaderMap};
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt;

use super::{AppState, HttpError, Person};
use crate::agent::runtime::ApprovalsItem;

/// The `Last-Event-ID` a client resumes after: a whole number, or none (absent or empty).
fn last_event_id(headers: &HeaderMap) -> Result<Option<i64>, HttpError> {
    let Some(value) = headers.get("last-event-id") else {
        return Ok(None);
    };
    let text = value.to_str().unwrap_or("\u{fffd}").trim();
    if text.is_empty() {
        return Ok(None);
    }
    match text.parse::<i64>() {
        Ok(id) if id >= 0 => Ok(Some(id)),
        _ => Err(HttpError::BadRequest(format!(
            "Last-Event-ID must be a whole number of 0 or more, not {text:?}"
        ))),
    }
}

/// One SSE frame of an item.
fn frame(item: ApprovalsItem) -> Bytes {
    match item {
        ApprovalsItem::Event(id, event) => Bytes::from(format!(
            "id: {id}\nevent: {}\ndata: {}\n\n",
            event.name(),
            event.data()
        )),
        ApprovalsItem::Heartbeat => Bytes::from_static(b": heartbeat\n\n"),
    }
}

pub async fn stream(
    State(state): State<AppState>,
    headers: HeaderMap,
    who: Person,
) -> Result<Response, HttpError> {
    let after = last_event_id(&headers)?;
    let at_most = state.approvals_streams_per_user;
    let items = state
        .runtime
        .approvals_stream(&who.0, after, state.approvals_heartbeat, at_most)
        .ok_or_else(|| {
            HttpError::TooManyRequests(format!(
                "you have {at_most} approvals streams open, the most one user may; close one \
                 (one per browser is enough: its tabs share it)"
            ))
        })?;
    // `retry:` first: how long an EventSource waits before it reconnects.
    let start = futures_util::stream::once(async { Bytes::from_static(b"retry: 1000\n\n") });
    let frames = start
        .chain(items.map(frame))
        .map(Ok::<Bytes, std::convert::Infallible>);
    Ok((
        [
            (header::CONTENT_TYPE, "text/event-stream"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        Body::from_stream(frames),
    )
        .into_response())
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    #[test]
    fn last_event_id_is_a_whole_number_or_nothing() {
        let mut headers = HeaderMap::new();
        assert_eq!(last_event_id(&headers).unwrap(), None);
        headers.insert("last-event-id", HeaderValue::from_static(""));
        assert_eq!(last_event_id(&headers).unwrap(), None);
        headers.insert("last-event-id", HeaderValue::from_static("42"));
        assert_eq!(last_event_id(&headers).unwrap(), Some(42));
        for bad in ["-1", "4x", "1.5"] {
            headers.insert("last-event-id", HeaderValue::from_static(bad));
            let err = last_event_id(&headers).unwrap_err();
            assert_eq!(
                err.to_string(),
                format!("Last-Event-ID must be a whole number of 0 or more, not {bad:?}")
            );
        }
    }
}
