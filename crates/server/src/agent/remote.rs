//! A small A2A v0.3 client for remote subagents (docs/wire.md, Subagents): a message streamed to
//! the remote agent and read up to its first final event, `tasks/get` and `tasks/cancel`. The
//! protocol crate's codecs read and write the wire; kagent's HITL extension is activated when
//! the agent's card declares it, as the relay does for the UI.

use std::time::Duration;

use futures_util::StreamExt;
use serde_json::Value;
use signoff_protocol::codec::{self, decode_card_extensions};
use signoff_protocol::hitl::extension;
use signoff_protocol::jsonrpc::{Id, Request, Response};
use signoff_protocol::sse::{SseFrame, SseParser};
use signoff_protocol::{
    Message, ProtocolVersion, SendMessageParams, StreamEvent, Task, TaskIdParams, TaskQueryParams,
};

use super::config::RemoteSpec;

/// The version spoken to remote subagents (kagent 0.10 speaks it).
const VERSION: ProtocolVersion = ProtocolVersion::V0_3;
/// The largest SSE event read from a remote agent.
const MAX_EVENT_BYTES: usize = 4 * 1024 * 1024;
/// The header that names the user on whose behalf the relay and subagent calls speak.
const USER_HEADER: &str = "x-user-id";

/// One remote agent, as a subagent's parent calls it.
pub struct RemoteClient {
    http: reqwest::Client,
    url: String,
    card_url: String,
    idle: Duration,
}

impl RemoteClient {
    pub fn new(spec: &RemoteSpec) -> Result<RemoteClient, String> {
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(spec.connect_timeout_secs.unwrap_or(5)))
            .build()
            .map_err(|err| format!("cannot build an HTTP client: {err}"))?;
        let card_url = spec.card_url.clone().unwrap_or_else(|| {
            format!(
                "{}/.well-known/agent-card.json",
                spec.url.trim_end_matches('/')
            )
        });
        Ok(RemoteClient {
            http,
            url: spec.url.clone(),
            card_url,
            idle: Duration::from_secs(spec.idle_timeout_secs.unwrap_or(300)),
        })
    }

    /// Whether the agent's card declares kagent's HITL extension (then every request activates
    /// it). A card that cannot be read declares nothing.
    async fn speaks_extension(&self) -> bool {
        let card = self
            .http
            .get(&self.card_url)
            .timeout(self.idle)
            .send()
            .await;
        let Ok(card) = card else { return false };
        match card.json::<Value>().await {
            Ok(card) => extension::is_declared(&decode_card_extensions(&card)),
            Err(_) => false,
        }
    }

    fn post(
        &self,
        user: &str,
        method: &str,
        params: Value,
        extension: bool,
    ) -> reqwest::RequestBuilder {
        let body = Request::new(Id::Number(1), method, params);
        let mut request = self
            .http
            .post(&self.url)
            .header("A2A-Version", "0.3")
            .header(USER_HEADER, user)
            .json(&body);
        if extension {
            request = request.header(extension::activation_header(VERSION), extension::URI);
        }
        request
    }

    /// Streams `message` and returns its events up to the first final one (or the stream's
    /// end).
    pub async fn stream(&self, user: &str, message: &Message) -> Result<Vec<StreamEvent>, String> {
        let params = SendMessageParams {
            message: message.clone(),
            configuration: None,
            metadata: None,
        };
        let params = codec::encode_send_params(VERSION, &params);
        let extension = self.speaks_extension().await;
        let response = self
            .post(user, "message/stream", params, extension)
            .header("Accept", "text/event-stream")
            .timeout(Duration::from_secs(24 * 3600))
            .send()
            .await
            .map_err(|err| format!("the agent could not be reached: {err}"))?;
        if !response.status().is_success() {
            return Err(format!("the agent answered HTTP {}", response.status()));
        }
        let mut body = response.bytes_stream();
        let mut parser = SseParser::new(MAX_EVENT_BYTES);
        let mut events = Vec::new();
        loop {
            let chunk = match tokio::time::timeout(self.idle, body.next()).await {
                Err(_) => return Err("the agent stayed silent too long".to_owned()),
                Ok(None) => return Ok(events),
                Ok(Some(Err(err))) => return Err(format!("the agent's stream broke: {err}")),
                Ok(Some(Ok(chunk))) => chunk,
            };
            let frames = parser
                .feed(&chunk)
                .map_err(|err| format!("the agent's stream could not be read: {err}"))?;
            for frame in frames {
                let SseFrame::Event(event) = frame else {
                    return Ok(events);
                };
                let event = codec::decode_stream_response(VERSION, &event.data)
                    .map_err(|err| {
                        format!("the agent sent an event that could not be read: {err}")
                    })?
                    .map_err(|error| format!("the agent refused: {}", error.message))?;
                let last = is_final(&event);
                events.push(event);
                if last {
                    return Ok(events);
                }
            }
        }
    }

    /// The remote task as `tasks/get` shows it.
    pub async fn get(&self, user: &str, task_id: &str) -> Result<Task, String> {
        let params = codec::encode_task_query(
            VERSION,
            &TaskQueryParams {
                id: task_id.to_owned(),
                history_length: None,
                metadata: None,
            },
        );
        let result = self.unary(user, "tasks/get", params).await?;
        codec::decode_task(VERSION, &result)
            .map_err(|err| format!("the agent's task could not be read: {err}"))
    }

    /// Cancels the remote task.
    pub async fn cancel(&self, user: &str, task_id: &str) -> Result<(), String> {
        let params = codec::encode_task_id_params(
            VERSION,
            &TaskIdParams {
                id: task_id.to_owned(),
                metadata: None,
            },
        );
        self.unary(user, "tasks/cancel", params).await.map(|_| ())
    }

    async fn unary(&self, user: &str, method: &str, params: Value) -> Result<Value, String> {
        let extension = self.speaks_extension().await;
        let response = self
            .post(user, method, params, extension)
            .timeout(self.idle)
            .send()
            .await
            .map_err(|err| format!("the agent could not be reached: {err}"))?;
        let value: Value = response
            .json()
            .await
            .map_err(|err| format!("the agent's answer could not be read: {err}"))?;
        let response = Response::from_value(value)
            .map_err(|err| format!("the agent's answer is not JSON-RPC: {}", err.0))?;
        response
            .outcome
            .map_err(|error| format!("the agent refused {method}: {}", error.message))
    }
}

/// Whether an event ends a stream: a final status (paused or ended), a whole task that is not
/// working, or a message answer.
fn is_final(event: &StreamEvent) -> bool {
    match event {
        StreamEvent::StatusUpdate(update) => update.is_final || update.status.state.ends_stream(),
        StreamEvent::Task(task) => task.status.state.ends_stream(),
        StreamEvent::Message(_) => true,
        StreamEvent::ArtifactUpdate(_) => false,
    }
}
