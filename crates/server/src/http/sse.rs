//! The SSE body of a streaming call: one `data:` event per JSON-RPC response, keep-alive
//! comments while idle, and the error event that ends a stream silent for
//! `--stream-idle-timeout` (docs/wire.md, SSE framing).

use std::convert::Infallible;
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use futures_util::stream::{self, BoxStream};
use futures_util::{FutureExt, StreamExt};
use signoff_protocol::codec;
use signoff_protocol::jsonrpc::{ErrorCode, Id, Response as RpcResponse};
use signoff_protocol::ProtocolVersion;

use crate::agent::metrics::OpenStream;

/// How long an idle stream waits before a `: keep-alive` comment.
const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// The most events one write carries.
const EVENTS_PER_WRITE: usize = 64;

/// How long a stream may send no event, and the error event that ends it then.
pub(super) struct IdleLimit {
    after: Duration,
    /// The JSON-RPC error response sent as the stream's last event.
    event: String,
}

impl IdleLimit {
    pub(super) fn new(after: Duration, id: Id, version: ProtocolVersion) -> IdleLimit {
        let message = format!(
            "the agent sent nothing for {}, so the stream was closed; the task goes on \
             (reload the chat, or resubscribe, to follow it)",
            spoken(after)
        );
        let error = codec::error_object(version, ErrorCode::InternalError, message);
        IdleLimit {
            after,
            event: RpcResponse::error(id, error).to_json(),
        }
    }
}

/// `after` as a person says it: "30 minutes", "1 second".
fn spoken(after: Duration) -> String {
    let secs = after.as_secs();
    let (count, unit) = if secs >= 60 && secs % 60 == 0 {
        (secs / 60, "minute")
    } else {
        (secs, "second")
    };
    let plural = if count == 1 { "" } else { "s" };
    format!("{count} {unit}{plural}")
}

/// What the SSE body's unfold carries from one write to the next.
struct SseState {
    items: BoxStream<'static, String>,
    /// Held, not read: dropping it counts the stream closed.
    _open: OpenStream,
    idle: IdleLimit,
    last_event: Instant,
    ended: bool,
}

/// SSE: each item is one complete JSON-RPC response, one `data:` event. Events that are ready
/// together (a commit's worth) go out in one write rather than one system call each; an idle
/// stream gets `: keep-alive` comments, and one that sent no event for `idle.after` ends with
/// `idle.event` (keep-alives do not count: they only keep proxies from closing the
/// connection). `open` counts the stream while its body lives.
pub(super) fn sse(
    items: BoxStream<'static, String>,
    open: OpenStream,
    idle: IdleLimit,
) -> Response {
    let state = SseState {
        items,
        _open: open,
        idle,
        last_event: Instant::now(),
        ended: false,
    };
    let frames = stream::unfold(state, |mut state| async move {
        if state.ended {
            return None;
        }
        let left = state.idle.after.saturating_sub(state.last_event.elapsed());
        let first = match tokio::time::timeout(KEEP_ALIVE.min(left), state.items.next()).await {
            Ok(Some(first)) => first,
            Ok(None) => return None,
            Err(_quiet) if state.last_event.elapsed() >= state.idle.after => {
                state.ended = true;
                let mut frame = String::new();
                push_event(&mut frame, &state.idle.event);
                return Some((Ok(Bytes::from(frame)), state));
            }
            Err(_quiet) => return Some((Ok(Bytes::from_static(b": keep-alive\n\n")), state)),
        };
        state.last_event = Instant::now();
        let mut frame = String::with_capacity(first.len() + 8);
        push_event(&mut frame, &first);
        for _ in 1..EVENTS_PER_WRITE {
            match state.items.next().now_or_never() {
                Some(Some(next)) => push_event(&mut frame, &next),
                Some(None) | None => break,
            }
        }
        Some((Ok::<Bytes, Infallible>(Bytes::from(frame)), state))
    });
    (
        [
            (header::CONTENT_TYPE, "text/event-stream"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        Body::from_stream(frames),
    )
        .into_response()
}

/// One SSE event whose data is `json` (serde_json never writes a raw line break, so one
/// `data:` line holds it).
fn push_event(frame: &mut String, json: &str) {
    frame.push_str("data: ");
    frame.push_str(json);
    frame.push_str("\n\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idle_limits_are_spoken_in_minutes_when_whole() {
        assert_eq!(spoken(Duration::from_secs(1800)), "30 minutes");
        assert_eq!(spoken(Duration::from_secs(60)), "1 minute");
        assert_eq!(spoken(Duration::from_secs(90)), "90 seconds");
        assert_eq!(spoken(Duration::from_secs(1)), "1 second");
    }
}
