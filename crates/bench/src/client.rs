//! An A2A v0.3 client over loopback HTTP, as a browser or SDK would talk to the server:
//! `message/stream` read with the protocol crate's SSE parser and codec, and `message/send`.
//! Every event is stamped with the instant its bytes arrived.

use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use serde_json::{json, Value};
use signoff_protocol::codec;
use signoff_protocol::jsonrpc::{Id, Request, Response};
use signoff_protocol::sse::{SseFrame, SseParser};
use signoff_protocol::{
    Message, Part, ProtocolVersion, Role, SendMessageParams, StreamEvent, TaskIdParams, TaskState,
};
use tokio::time::Instant;

use crate::error::{BenchError, Result};

/// The longest the server may stay silent within one answer.
const IDLE_TIMEOUT: Duration = Duration::from_secs(120);
/// The largest SSE event accepted (a paused task's status is a few KiB).
const MAX_EVENT_BYTES: usize = 16 << 20;

/// One event of a stream and when its bytes arrived.
#[derive(Debug, Clone)]
pub struct Received {
    pub at: Instant,
    pub event: StreamEvent,
}

pub struct A2aClient {
    http: reqwest::Client,
    endpoint: String,
    next_id: AtomicI64,
    /// Sent as `Authorization: Bearer` when the server runs with `--auth tokens`.
    token: Option<String>,
}

impl A2aClient {
    pub fn new(http: reqwest::Client, endpoint: String) -> A2aClient {
        A2aClient {
            http,
            endpoint,
            next_id: AtomicI64::new(1),
            token: None,
        }
    }

    /// The same endpoint, speaking as the holder of `token`.
    pub fn with_token(mut self, token: &str) -> A2aClient {
        self.token = Some(token.to_owned());
        self
    }

    /// POSTs one JSON-RPC request; the response, refused unless its status is a success.
    async fn post_request(&self, method: &str, params: Value) -> Result<reqwest::Response> {
        self.post_versioned(ProtocolVersion::V0_3, method, params)
            .await
    }

    /// [`Self::post_request`] in `version` (its `A2A-Version` header; none for v0.3).
    async fn post_versioned(
        &self,
        version: ProtocolVersion,
        method: &str,
        params: Value,
    ) -> Result<reqwest::Response> {
        let id = Id::Number(self.next_id.fetch_add(1, Ordering::Relaxed));
        let body = serde_json::to_vec(&Request::new(id, method, params))?;
        let mut request = self
            .http
            .post(&self.endpoint)
            .header("content-type", "application/json")
            .body(body);
        if version == ProtocolVersion::V1_0 {
            request = request.header("a2a-version", "1.0");
        }
        if let Some(token) = &self.token {
            request = request.bearer_auth(token);
        }
        let response = request.send().await?;
        if !response.status().is_success() {
            return Err(BenchError::Status {
                status: response.status().as_u16(),
                url: self.endpoint.clone(),
            });
        }
        Ok(response)
    }

    async fn post(&self, method: &str, message: Message) -> Result<reqwest::Response> {
        let params = codec::encode_send_params(
            ProtocolVersion::V0_3,
            &SendMessageParams {
                message,
                configuration: None,
                metadata: None,
            },
        );
        self.post_request(method, params).await
    }

    /// `message/stream`, read to its end.
    pub async fn stream(&self, message: Message) -> Result<Vec<Received>> {
        let response = self.post("message/stream", message).await?;
        read_stream(response, ProtocolVersion::V0_3, None).await
    }

    /// `tasks/resubscribe` (what a decision's `follow` names), read to its end: a task that is
    /// still running streams on to its end; one that has stopped answers its snapshot.
    pub async fn resubscribe(&self, task_id: &str) -> Result<Vec<Received>> {
        let response = self
            .post_request("tasks/resubscribe", json!({"id": task_id}))
            .await?;
        read_stream(response, ProtocolVersion::V0_3, None).await
    }

    /// v1.0's `SubscribeToTask`, read to its end: the task's snapshot, then its events through
    /// its pauses until it ends (v0.3's resubscribe ends at a paused task's snapshot). `opened`
    /// hears when the snapshot arrived, so a decision can be sent once the follower listens.
    pub async fn follow_through(
        &self,
        task_id: &str,
        opened: tokio::sync::oneshot::Sender<Instant>,
    ) -> Result<Vec<Received>> {
        let response = self
            .post_versioned(
                ProtocolVersion::V1_0,
                "SubscribeToTask",
                codec::encode_task_id_params(
                    ProtocolVersion::V1_0,
                    &TaskIdParams {
                        id: task_id.to_owned(),
                        metadata: None,
                    },
                ),
            )
            .await?;
        read_stream(response, ProtocolVersion::V1_0, Some(opened)).await
    }

    /// `message/send` (blocking): the task as it ended its turn.
    pub async fn send(&self, message: Message) -> Result<StreamEvent> {
        let response = self.post("message/send", message).await?;
        let result = rpc_result(response).await?;
        codec::decode_send_result(ProtocolVersion::V0_3, &result)
            .map_err(|err| BenchError::Protocol(err.to_string()))
    }

    /// `tasks/get` with the whole history, as the JSON the server sent (the bench counts the
    /// tool results in it).
    pub async fn get_task(&self, task_id: &str) -> Result<Value> {
        let response = self
            .post_request("tasks/get", json!({"id": task_id}))
            .await?;
        rpc_result(response).await
    }
}

/// An SSE answer in `version` read to its end, each event stamped with when its bytes arrived;
/// `first` hears when the first event did.
async fn read_stream(
    mut response: reqwest::Response,
    version: ProtocolVersion,
    mut first: Option<tokio::sync::oneshot::Sender<Instant>>,
) -> Result<Vec<Received>> {
    let mut parser = SseParser::new(MAX_EVENT_BYTES);
    let mut out = Vec::new();
    loop {
        let chunk = tokio::time::timeout(IDLE_TIMEOUT, response.chunk())
            .await
            .map_err(|_| BenchError::Timeout("the stream stayed silent for 120 s".into()))??;
        let at = Instant::now();
        let frames = match &chunk {
            Some(bytes) => parser.feed(bytes),
            None => parser.finish(),
        }
        .map_err(|err| BenchError::Protocol(err.to_string()))?;
        for frame in frames {
            match frame {
                SseFrame::Event(event) => {
                    out.push(Received {
                        at,
                        event: decode(version, &event.data)?,
                    });
                    if let Some(first) = first.take() {
                        // The caller may have stopped waiting; the stream is read on regardless.
                        let _ = first.send(at);
                    }
                }
                SseFrame::Done => {}
            }
        }
        if chunk.is_none() {
            return Ok(out);
        }
    }
}

/// The `result` of a JSON-RPC response, or its error.
async fn rpc_result(response: reqwest::Response) -> Result<Value> {
    let bytes = response.bytes().await?;
    let value: Value = serde_json::from_slice(&bytes)?;
    let response =
        Response::from_value(value).map_err(|err| BenchError::Protocol(err.to_string()))?;
    response.outcome.map_err(|error| BenchError::Rpc {
        code: error.code,
        message: error.message,
    })
}

fn decode(version: ProtocolVersion, data: &str) -> Result<StreamEvent> {
    match codec::decode_stream_response(version, data) {
        Ok(Ok(event)) => Ok(event),
        Ok(Err(error)) => Err(BenchError::Rpc {
            code: error.code,
            message: error.message,
        }),
        Err(err) => Err(BenchError::Protocol(err.to_string())),
    }
}

/// A new chat's first message.
pub fn user_text(text: &str) -> Message {
    Message::new(new_id(), Role::User, vec![Part::text(text)])
}

/// Approve-all on a paused task (docs/wire.md, Decision message).
pub fn approve(task_id: &str, context_id: &str) -> Message {
    let mut message = Message::new(
        new_id(),
        Role::User,
        vec![
            Part::data(json!({"decision_type": "approve"})),
            Part::text("Approved"),
        ],
    );
    message.task_id = Some(task_id.to_owned());
    message.context_id = Some(context_id.to_owned());
    message
}

fn new_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// The task state an event reports, if it reports one.
pub fn state_of(event: &StreamEvent) -> Option<TaskState> {
    match event {
        StreamEvent::StatusUpdate(update) => Some(update.status.state),
        StreamEvent::Task(task) => Some(task.status.state),
        StreamEvent::Message(_) | StreamEvent::ArtifactUpdate(_) => None,
    }
}

/// The task and session ids a stream names.
pub fn ids_of(events: &[Received]) -> Option<(String, String)> {
    events.iter().find_map(|received| {
        Some((
            received.event.task_id()?.to_owned(),
            received.event.context_id()?.to_owned(),
        ))
    })
}

/// The last event of a stream, which must report `want`; its arrival instant.
pub fn ended_in(events: &[Received], want: TaskState) -> Result<Instant> {
    let last = events
        .last()
        .ok_or_else(|| BenchError::Unexpected("an empty stream".into()))?;
    match state_of(&last.event) {
        Some(state) if state == want => Ok(last.at),
        Some(state) => Err(BenchError::Unexpected(format!(
            "the stream ended {state:?}, not {want:?}{}",
            failure_text(&last.event)
        ))),
        None => Err(BenchError::Unexpected(format!(
            "the stream ended without a status, not {want:?}"
        ))),
    }
}

/// The words of a failed status, to say why in the error.
fn failure_text(event: &StreamEvent) -> String {
    match event {
        StreamEvent::StatusUpdate(update) => update
            .status
            .message
            .as_ref()
            .map(|message| format!(": {}", message.text()))
            .unwrap_or_default(),
        StreamEvent::Task(_) | StreamEvent::Message(_) | StreamEvent::ArtifactUpdate(_) => {
            String::new()
        }
    }
}
