//! Reading SSE answers: each event's `data:` as JSON, through the protocol crate's parser (the
//! one the UI uses), incrementally from a live response or at once from a whole body.

use std::collections::VecDeque;
use std::pin::Pin;

use bytes::Bytes;
use futures_util::{Stream, StreamExt};
use serde_json::Value;
use signoff_protocol::sse::{SseFrame, SseParser};

use super::wait::within;

/// Larger than any event a test makes or replays.
const MAX_EVENT_BYTES: usize = 1 << 24;

/// The JSON `data:` of each event among `frames`.
fn payloads(frames: Vec<SseFrame>) -> impl Iterator<Item = Value> {
    frames.into_iter().filter_map(|frame| match frame {
        SseFrame::Event(event) => Some(
            serde_json::from_str(&event.data)
                .unwrap_or_else(|err| panic!("an SSE event that is not JSON ({err}): {event:?}")),
        ),
        SseFrame::Done => None,
    })
}

/// The `data:` payloads of a whole SSE body, parsed.
pub fn sse_payloads(bytes: &[u8]) -> Vec<Value> {
    let mut parser = SseParser::new(MAX_EVENT_BYTES);
    let mut frames = parser.feed(bytes).unwrap();
    frames.extend(parser.finish().unwrap());
    payloads(frames).collect()
}

type Body = Pin<Box<dyn Stream<Item = reqwest::Result<Bytes>> + Send>>;

/// A live `text/event-stream` response, read one event at a time.
pub struct SseStream {
    body: Body,
    parser: SseParser,
    ready: VecDeque<Value>,
    ended: bool,
}

impl SseStream {
    /// Reads `response`, which must be a 200 `text/event-stream`.
    pub fn new(response: reqwest::Response) -> SseStream {
        assert_eq!(response.status(), 200, "a stream answers HTTP 200");
        let kind = response
            .headers()
            .get("content-type")
            .and_then(|value| value.to_str().ok())
            .unwrap_or_default();
        assert!(kind.starts_with("text/event-stream"), "content type {kind}");
        SseStream {
            body: Box::pin(response.bytes_stream()),
            parser: SseParser::new(MAX_EVENT_BYTES),
            ready: VecDeque::new(),
            ended: false,
        }
    }

    /// The next event's data, or `None` when the stream ends. Each event must come within
    /// [`super::PATIENCE`] of the one before.
    pub async fn next(&mut self) -> Option<Value> {
        loop {
            if let Some(event) = self.ready.pop_front() {
                return Some(event);
            }
            if self.ended {
                return None;
            }
            let frames = match within("the next SSE event", self.body.next()).await {
                Some(chunk) => self.parser.feed(&chunk.unwrap()).unwrap(),
                None => {
                    self.ended = true;
                    self.parser.finish().unwrap()
                }
            };
            self.ready.extend(payloads(frames));
        }
    }

    /// Every event until the stream ends.
    pub async fn collect(mut self) -> Vec<Value> {
        let mut events = Vec::new();
        while let Some(event) = self.next().await {
            events.push(event);
        }
        events
    }
}
