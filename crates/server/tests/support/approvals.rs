//! Reading the approvals stream (`GET /api/approvals/stream`): each event with its `id:` and
//! `event:` name, and the heartbeat comments between them, as they come.

use std::collections::VecDeque;
use std::pin::Pin;

use bytes::Bytes;
use futures_util::{Stream, StreamExt};
use serde_json::Value;
use signoff_protocol::sse::{SseFrame, SseParser};

use super::app::TestApp;
use super::wait::within;

/// What the approvals stream sent.
#[derive(Debug, Clone, PartialEq)]
pub enum ApprovalsFrame {
    /// An event: its id, name (`pending` or `decided`) and data.
    Event { id: i64, name: String, data: Value },
    /// A `: heartbeat` comment.
    Heartbeat,
}

impl ApprovalsFrame {
    /// The event's id; panics on a heartbeat.
    pub fn id(&self) -> i64 {
        match self {
            ApprovalsFrame::Event { id, .. } => *id,
            ApprovalsFrame::Heartbeat => panic!("a heartbeat has no id"),
        }
    }

    /// `(name, taskId)` of an event; panics on a heartbeat.
    pub fn about(&self) -> (String, String) {
        match self {
            ApprovalsFrame::Event { name, data, .. } => (
                name.clone(),
                data["taskId"].as_str().unwrap_or_default().to_owned(),
            ),
            ApprovalsFrame::Heartbeat => panic!("a heartbeat is about no task"),
        }
    }

    pub fn data(&self) -> &Value {
        match self {
            ApprovalsFrame::Event { data, .. } => data,
            ApprovalsFrame::Heartbeat => panic!("a heartbeat has no data"),
        }
    }
}

type Body = Pin<Box<dyn Stream<Item = reqwest::Result<Bytes>> + Send>>;

/// A live approvals stream.
pub struct ApprovalsStream {
    body: Body,
    parser: SseParser,
    /// Text not yet split into whole frames (to see the comments, which the parser skips).
    pending_text: String,
    ready: VecDeque<ApprovalsFrame>,
}

/// Opens the approvals stream as the user of `token`, resuming after `last_event_id`.
pub async fn open_approvals(
    app: &TestApp,
    token: Option<&str>,
    last_event_id: Option<i64>,
) -> ApprovalsStream {
    let mut request = app.client.get(app.url("/api/approvals/stream"));
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    if let Some(id) = last_event_id {
        request = request.header("Last-Event-ID", id.to_string());
    }
    let response = request.send().await.unwrap();
    assert_eq!(response.status(), 200, "the approvals stream answers 200");
    let kind = response
        .headers()
        .get("content-type")
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    assert_eq!(kind, "text/event-stream");
    ApprovalsStream {
        body: Box::pin(response.bytes_stream()),
        parser: SseParser::new(1 << 20),
        pending_text: String::new(),
        ready: VecDeque::new(),
    }
}

impl ApprovalsStream {
    /// The next event or heartbeat (panics if the stream ends or stays silent too long).
    pub async fn next(&mut self) -> ApprovalsFrame {
        loop {
            if let Some(frame) = self.ready.pop_front() {
                return frame;
            }
            let chunk = within("the next approvals frame", self.body.next())
                .await
                .expect("the approvals stream ended")
                .unwrap();
            self.pending_text
                .push_str(std::str::from_utf8(&chunk).unwrap());
            let events = self.parser.feed(&chunk).unwrap();
            let mut events = events.into_iter().filter_map(|frame| match frame {
                SseFrame::Event(event) => Some(event),
                SseFrame::Done => None,
            });
            // Frames in the order they came: whole blocks of text, each an event or a comment.
            while let Some(end) = self.pending_text.find("\n\n") {
                let block: String = self.pending_text.drain(..end + 2).collect();
                if block.starts_with(": heartbeat") {
                    self.ready.push_back(ApprovalsFrame::Heartbeat);
                } else if block.starts_with("id: ") {
                    let event = events
                        .next()
                        .expect("an event block the parser did not see");
                    self.ready.push_back(ApprovalsFrame::Event {
                        id: event.id.as_deref().unwrap().parse().unwrap(),
                        name: event.event.clone().unwrap(),
                        data: serde_json::from_str(&event.data).unwrap(),
                    });
                }
            }
        }
    }

    /// The next event, skipping heartbeats.
    pub async fn next_event(&mut self) -> ApprovalsFrame {
        loop {
            let frame = self.next().await;
            if frame != ApprovalsFrame::Heartbeat {
                return frame;
            }
        }
    }

    /// The events up to the next heartbeat: everything the server had to say, since a
    /// heartbeat comes only after a quiet spell with nothing to send.
    pub async fn events_until_heartbeat(&mut self) -> Vec<ApprovalsFrame> {
        let mut events = Vec::new();
        loop {
            match self.next().await {
                ApprovalsFrame::Heartbeat => return events,
                event => events.push(event),
            }
        }
    }
}
