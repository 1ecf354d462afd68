//! Remote A2A agents, reached through one client each by everything that calls them: the relay
//! (`http::relay`) and remote subagents (`runtime::subagent_remote`). The clients share one
//! pooled HTTP client per connect timeout, keep the agent card as its HTTP cache headers allow
//! (`card`), and speak the version the card offers (v0.3, or v1.0 to a remote that offers only
//! v1.0) through the protocol crate's codecs; kagent's HITL extension is activated when the
//! card declares it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::StreamExt;
use serde_json::Value;
use signoff_protocol::codec::{self, Method};
use signoff_protocol::hitl::extension;
use signoff_protocol::jsonrpc::{Id, Request, Response};
use signoff_protocol::sse::{SseFrame, SseParser};
use signoff_protocol::{
    Message, ProtocolVersion, SendMessageParams, StreamEvent, Task, TaskIdParams, TaskQueryParams,
};

use super::config::RemoteSpec;

mod card;

pub use card::{offers_only_v10, CARD_TIMEOUT};

/// The header that names the user on whose behalf the relay and subagent calls speak (kagent
/// scopes sessions by it).
pub const USER_HEADER: &str = "x-user-id";
/// The largest SSE event read from a remote agent.
const MAX_EVENT_BYTES: usize = 4 * 1024 * 1024;
const DEFAULT_CONNECT_TIMEOUT_SECS: u64 = 5;
const DEFAULT_IDLE_TIMEOUT_SECS: u64 = 300;
/// The longest a streamed message may last in all (a silence is cut sooner, by the idle
/// timeout).
const LONGEST_STREAM: Duration = Duration::from_secs(24 * 3600);

/// Why a remote agent's client cannot be made.
#[derive(Debug, thiserror::Error)]
pub enum RemoteError {
    /// A field of its `remote` spec (`url`, `card_url`) is not usable.
    #[error("{field}: {message}")]
    Invalid {
        field: &'static str,
        message: String,
    },
    #[error("cannot set up an HTTP client: {0}")]
    Client(String),
}

/// The clients of the remote agents, by `namespace/name`: one per agent for every caller.
#[derive(Default)]
pub struct RemoteAgents {
    clients: Mutex<HashMap<String, Arc<RemoteClient>>>,
    /// The pooled HTTP clients, by connect timeout in seconds (the one setting they differ in).
    pools: Mutex<HashMap<u64, reqwest::Client>>,
}

impl RemoteAgents {
    /// The client of the remote agent `key` (`namespace/name`) that `spec` describes: the one
    /// made before for the same spec, else a new one.
    pub fn client(&self, key: &str, spec: &RemoteSpec) -> Result<Arc<RemoteClient>, RemoteError> {
        let mut clients = self
            .clients
            .lock()
            .map_err(|_| RemoteError::Client("the remote agents' clients are poisoned".into()))?;
        if let Some(client) = clients.get(key).filter(|client| client.spec == *spec) {
            return Ok(client.clone());
        }
        let connect = spec
            .connect_timeout_secs
            .unwrap_or(DEFAULT_CONNECT_TIMEOUT_SECS)
            .max(1);
        let client = Arc::new(RemoteClient::new(spec, self.pool(connect)?)?);
        clients.insert(key.to_owned(), client.clone());
        Ok(client)
    }

    fn pool(&self, connect_secs: u64) -> Result<reqwest::Client, RemoteError> {
        let mut pools = self
            .pools
            .lock()
            .map_err(|_| RemoteError::Client("the HTTP clients are poisoned".into()))?;
        if let Some(pool) = pools.get(&connect_secs) {
            return Ok(pool.clone());
        }
        // No overall timeout: streams last as long as a task; silences are cut per call.
        let pool = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(connect_secs))
            .build()
            .map_err(|err| RemoteError::Client(err.to_string()))?;
        pools.insert(connect_secs, pool.clone());
        Ok(pool)
    }
}

/// One remote agent's client.
pub struct RemoteClient {
    spec: RemoteSpec,
    /// Pooled, shared with the other remotes of the same connect timeout.
    http: reqwest::Client,
    url: reqwest::Url,
    card_url: reqwest::Url,
    /// `host:port` of the remote: the only part of its address that errors show.
    host: String,
    /// The longest the remote may stay silent, before its answer and within a stream.
    idle_timeout: Duration,
    card: Mutex<card::CardCache>,
    /// Held while the card is fetched, so callers that come meanwhile wait for that fetch.
    fetching: tokio::sync::Mutex<()>,
}

impl RemoteClient {
    fn new(spec: &RemoteSpec, http: reqwest::Client) -> Result<RemoteClient, RemoteError> {
        let parse = |field: &'static str, raw: &str| {
            reqwest::Url::parse(raw).map_err(|err| RemoteError::Invalid {
                field,
                message: format!("{raw:?} is not a URL: {err}"),
            })
        };
        let url = parse("url", &spec.url)?;
        let card_url = match &spec.card_url {
            Some(card_url) => parse("card_url", card_url)?,
            None => parse(
                "url",
                &format!(
                    "{}/.well-known/agent-card.json",
                    spec.url.trim_end_matches('/')
                ),
            )?,
        };
        let host = match (url.host_str(), url.port_or_known_default()) {
            (Some(host), Some(port)) => format!("{host}:{port}"),
            (Some(host), None) => host.to_owned(),
            (None, _) => {
                return Err(RemoteError::Invalid {
                    field: "url",
                    message: format!("{:?} has no host", spec.url),
                })
            }
        };
        let idle_secs = spec
            .idle_timeout_secs
            .unwrap_or(DEFAULT_IDLE_TIMEOUT_SECS)
            .max(1);
        Ok(RemoteClient {
            spec: spec.clone(),
            http,
            url,
            card_url,
            host,
            idle_timeout: Duration::from_secs(idle_secs),
            card: Mutex::default(),
            fetching: tokio::sync::Mutex::new(()),
        })
    }

    /// `host:port` of the remote, for messages and logs.
    pub fn host(&self) -> &str {
        &self.host
    }

    /// The longest the remote may stay silent.
    pub fn idle_timeout(&self) -> Duration {
        self.idle_timeout
    }

    /// A `POST` to the remote's endpoint (`extra_query` added to its own query) on behalf of
    /// `user`.
    pub fn post(&self, user: &str, extra_query: Option<&str>) -> reqwest::RequestBuilder {
        let mut url = self.url.clone();
        if let Some(extra) = extra_query.filter(|query| !query.is_empty()) {
            let query = match url.query() {
                Some(own) => format!("{own}&{extra}"),
                None => extra.to_owned(),
            };
            url.set_query(Some(&query));
        }
        self.http.post(url).header(USER_HEADER, user)
    }

    /// A JSON-RPC call of ours in `version`, ready to send, and its body (for a recording).
    /// `extension`: kagent's HITL extension is activated.
    pub fn call(
        &self,
        user: &str,
        version: ProtocolVersion,
        method: Method,
        params: Value,
        extension: bool,
    ) -> (reqwest::RequestBuilder, String) {
        let id = Id::String(crate::agent::view::new_id());
        let body = Request::new(id, method.name(version), params);
        let body = serde_json::to_string(&body).unwrap_or_default();
        let accept = if method.is_streaming() {
            "text/event-stream"
        } else {
            "application/json"
        };
        let mut request = self
            .post(user, None)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .header(reqwest::header::ACCEPT, accept)
            .header("a2a-version", version.as_str());
        if extension {
            request = request.header(extension::activation_header(version), extension::URI);
        }
        (request.body(body.clone()), body)
    }

    /// Streams `message` in the remote's version and returns its events up to the first final
    /// one (or the stream's end).
    pub async fn stream(&self, user: &str, message: &Message) -> Result<Vec<StreamEvent>, String> {
        let version = self.version().await;
        let params = SendMessageParams {
            message: message.clone(),
            configuration: None,
            metadata: None,
        };
        let params = codec::encode_send_params(version, &params);
        let extension = self.speaks_extension().await;
        let (request, _) = self.call(
            user,
            version,
            Method::SendStreamingMessage,
            params,
            extension,
        );
        let response =
            tokio::time::timeout(self.idle_timeout, request.timeout(LONGEST_STREAM).send())
                .await
                .map_err(|_| "the agent stayed silent too long".to_owned())?
                .map_err(|err| format!("the agent could not be reached: {err}"))?;
        if !response.status().is_success() {
            return Err(format!("the agent answered HTTP {}", response.status()));
        }
        self.read_stream(version, response).await
    }

    /// The events of a streamed answer, up to the first final one. A stream answered with
    /// plain JSON (an error before it opened) is read as its one event.
    async fn read_stream(
        &self,
        version: ProtocolVersion,
        response: reqwest::Response,
    ) -> Result<Vec<StreamEvent>, String> {
        let is_sse = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .is_some_and(|value| value.starts_with("text/event-stream"));
        if !is_sse {
            let text = tokio::time::timeout(self.idle_timeout, response.text())
                .await
                .map_err(|_| "the agent stayed silent too long".to_owned())?
                .map_err(|err| format!("the agent's answer could not be read: {err}"))?;
            return decode_event(version, &text).map(|event| vec![event]);
        }
        let mut body = response.bytes_stream();
        let mut parser = SseParser::new(MAX_EVENT_BYTES);
        let mut events = Vec::new();
        loop {
            let chunk = match tokio::time::timeout(self.idle_timeout, body.next()).await {
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
                let event = decode_event(version, &event.data)?;
                let last = is_final(&event);
                events.push(event);
                if last {
                    return Ok(events);
                }
            }
        }
    }

    /// The remote task as `tasks/get` shows it, asked in the remote's version and answered
    /// within `timeout`.
    pub async fn get_task(
        &self,
        user: &str,
        task_id: &str,
        timeout: Duration,
    ) -> Result<Task, String> {
        let version = self.version().await;
        let params = codec::encode_task_query(
            version,
            &TaskQueryParams {
                id: task_id.to_owned(),
                history_length: None,
                metadata: None,
            },
        );
        let result = self
            .unary(user, version, Method::GetTask, params, timeout)
            .await?;
        codec::decode_task(version, &result)
            .map_err(|err| format!("the agent's task could not be read: {err}"))
    }

    /// Cancels the remote task.
    pub async fn cancel(&self, user: &str, task_id: &str) -> Result<(), String> {
        let version = self.version().await;
        let params = codec::encode_task_id_params(
            version,
            &TaskIdParams {
                id: task_id.to_owned(),
                metadata: None,
            },
        );
        self.unary(user, version, Method::CancelTask, params, self.idle_timeout)
            .await
            .map(|_| ())
    }

    async fn unary(
        &self,
        user: &str,
        version: ProtocolVersion,
        method: Method,
        params: Value,
        timeout: Duration,
    ) -> Result<Value, String> {
        let extension = self.speaks_extension().await;
        let (request, _) = self.call(user, version, method, params, extension);
        let response = request
            .timeout(timeout)
            .send()
            .await
            .map_err(|err| format!("the agent could not be reached: {err}"))?
            .error_for_status()
            .map_err(|err| format!("the agent refused the call: {err}"))?;
        let value: Value = response
            .json()
            .await
            .map_err(|err| format!("the agent's answer could not be read: {err}"))?;
        let response = Response::from_value(value)
            .map_err(|err| format!("the agent's answer is not JSON-RPC: {}", err.0))?;
        response.outcome.map_err(|error| {
            format!(
                "the agent refused {}: {}",
                method.name(version),
                error.message
            )
        })
    }
}

/// One streamed answer: its event, or the remote's error as a refusal.
fn decode_event(version: ProtocolVersion, data: &str) -> Result<StreamEvent, String> {
    codec::decode_stream_response(version, data)
        .map_err(|err| format!("the agent sent an event that could not be read: {err}"))?
        .map_err(|error| format!("the agent refused: {}", error.message))
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
