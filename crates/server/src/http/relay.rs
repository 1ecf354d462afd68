//! Remote agents: an agents-file entry with `remote = { url = … }` is listed with our own agents
//! and reached through this server. JSON-RPC calls, SSE streams (byte for byte, as they come)
//! and the agent card (its URLs pointing back at us) are relayed unchanged, with the caller's
//! user id added as `X-User-Id`, except that a v0.3 call to a remote offering only v1.0 is
//! translated both ways (`translate`). The browser so talks to one origin, kagent agents included,
//! as kagent's UI does through its own server.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{Path, Query, RawQuery, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use futures_util::future::join_all;
use futures_util::stream;
use serde_json::{json, Value};
use signoff_protocol::codec::{self, Method};
use signoff_protocol::jsonrpc::{ErrorCode, Id, Response as RpcResponse};
use signoff_protocol::rest::AgentList;
use signoff_protocol::sse::encode_data;
use signoff_protocol::ProtocolVersion;
use tokio_util::sync::CancellationToken;

use super::a2a::request_version;
use super::{a2a, card, origin, rest, AppState, Person, User};
use crate::agent::remote::{RemoteAgents, RemoteClient, RemoteError};
use crate::agent::{AgentsFile, ConfigError};
use listing::rewrite_card;
use record::Recording;

pub use chats::{decide, session};

/// Request headers passed on to the remote; everything else (cookies, our bearer token) stays.
/// The extension headers (v1.0 `A2A-Extensions`, v0.3 `X-A2A-Extensions`) activate extensions
/// such as kagent's HITL extension, and travel back as the remote's echo of what it activated.
const FORWARDED: [&str; 5] = [
    "content-type",
    "accept",
    "a2a-version",
    "a2a-extensions",
    "x-a2a-extensions",
];
/// Response headers passed back from the remote: the extensions it activated.
const ECHOED: [&str; 2] = ["a2a-extensions", "x-a2a-extensions"];

/// The remote agents of the agents file.
#[derive(Default)]
pub struct Remotes {
    agents: Vec<Arc<RemoteAgent>>,
    /// Cancelled at shutdown: relayed streams end, so the graceful HTTP shutdown need not wait
    /// for remote tasks to finish.
    shutdown: CancellationToken,
}

/// A remote agent as the relay knows it: reached through its one client (shared with remote
/// subagents), listed under its name, and what its relayed answers taught.
struct RemoteAgent {
    namespace: String,
    name: String,
    /// From the agents file; when empty the remote card's description is shown.
    description: String,
    client: Arc<RemoteClient>,
    /// Whether it can cancel a task: from the agents file, else `false` once a relayed
    /// `tasks/cancel` was refused (`record`), else unknown.
    cancel: Option<bool>,
    cancel_refused: std::sync::atomic::AtomicBool,
    /// The tasks whose relayed answers are being recorded now, with how many: a reload does
    /// not ask the remote about them, their stream is the news (`record`).
    live: Mutex<HashMap<String, usize>>,
}

impl Remotes {
    /// The remote entries of a (checked) agents file, each reached through its client in
    /// `clients` (the runtime's, so remote subagents share it).
    pub fn new(file: &AgentsFile, clients: &RemoteAgents) -> Result<Remotes, ConfigError> {
        let mut agents = Vec::new();
        for (index, spec) in file.agents.iter().enumerate() {
            let Some(remote) = &spec.remote else { continue };
            let key = format!("{}/{}", spec.namespace, spec.name);
            let client = clients.client(&key, remote).map_err(|err| {
                let (path, message) = match err {
                    RemoteError::Invalid { field, message } => {
                        (format!("agents[{index}].remote.{field}"), message)
                    }
                    err @ RemoteError::Client(_) => {
                        (format!("agents[{index}].remote"), err.to_string())
                    }
                };
                ConfigError::Invalid { path, message }
            })?;
            agents.push(Arc::new(RemoteAgent {
                namespace: spec.namespace.clone(),
                name: spec.name.clone(),
                description: spec.description.clone(),
                client,
                cancel: remote.cancel,
                cancel_refused: std::sync::atomic::AtomicBool::new(false),
                live: Mutex::new(HashMap::new()),
            }));
        }
        Ok(Remotes {
            agents,
            shutdown: CancellationToken::new(),
        })
    }

    /// Ends the relayed streams (they would hold the graceful shutdown open).
    pub fn begin_shutdown(&self) {
        self.shutdown.cancel();
    }

    /// The remote agent `namespace/name`, as sessions and tasks name their agent.
    fn by_key(&self, key: &str) -> Option<Arc<RemoteAgent>> {
        let (namespace, name) = key.split_once('/')?;
        self.get(namespace, name)
    }

    fn get(&self, namespace: &str, name: &str) -> Option<Arc<RemoteAgent>> {
        self.agents
            .iter()
            .find(|agent| agent.namespace == namespace && agent.name == name)
            .cloned()
    }
}

// ---- handlers (each falls back to the local agents) --------------------------------------------

/// `POST /api/a2a/{namespace}/{agent}`: relayed for a remote agent, served here otherwise.
pub async fn a2a(
    State(state): State<AppState>,
    Path((namespace, name)): Path<(String, String)>,
    Query(query): Query<HashMap<String, String>>,
    RawQuery(raw_query): RawQuery,
    who: Person,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if let Some(refused) = a2a::refuse_duplicate_keys(&body, &headers, &query) {
        return refused;
    }
    match state.remotes.get(&namespace, &name) {
        Some(remote) => {
            let version = request_version(&headers, &query).unwrap_or(ProtocolVersion::V0_3);
            // A task we hold is reached only as a local task would be, before anything is sent.
            for asked in access::asks(&body, version) {
                let checked = state
                    .runtime
                    .relay()
                    .check(&who.0, &remote.key(), &asked)
                    .await;
                if let Err(err) = checked {
                    return RpcCall::of(&body, version).refusal(&err);
                }
            }
            let user = User(who.0.subject.clone(), who.1);
            let shutdown = state.remotes.shutdown.clone();
            if request_version(&headers, &query) == Ok(ProtocolVersion::V0_3)
                && remote.offers_only_v10().await
            {
                let query = raw_query.as_deref();
                return translate::relay(&state, &remote, &who.0, &headers, query, &body, shutdown)
                    .await;
            }
            let recording = Recording::start(&state.runtime, &remote, &who.0, &body, version);
            let call = RpcCall::of(&body, version);
            remote
                .forward(
                    &user.0,
                    &headers,
                    raw_query.as_deref(),
                    body,
                    call,
                    Passing {
                        shutdown,
                        recording,
                        translation: None,
                    },
                )
                .await
        }
        None => {
            a2a::handle(
                State(state),
                Path((namespace, name)),
                Query(query),
                who,
                headers,
                body,
            )
            .await
        }
    }
}

/// The agent card: the remote's own, its URLs pointing at our relay, or a local agent's.
pub async fn agent_card(
    State(state): State<AppState>,
    Path((namespace, name)): Path<(String, String)>,
    Query(query): Query<HashMap<String, String>>,
    headers: HeaderMap,
) -> Response {
    let Some(remote) = state.remotes.get(&namespace, &name) else {
        return card::agent_card(State(state), Path((namespace, name)), Query(query), headers)
            .await;
    };
    let version = headers.get("a2a-version").cloned().or_else(|| {
        query
            .get("A2A-Version")
            .and_then(|value| HeaderValue::from_str(value).ok())
    });
    match remote.client.fetch_card(version).await {
        Ok(mut card) => {
            let relay_url = format!(
                "{}{}",
                origin(&headers, state.trust_proxy),
                remote.endpoint()
            );
            rewrite_card(&mut card, &relay_url);
            let asked_v10 = request_version(&headers, &query) == Ok(ProtocolVersion::V1_0);
            translate::offer_v03(&mut card, &relay_url, asked_v10);
            Json(card).into_response()
        }
        Err(message) => {
            (StatusCode::BAD_GATEWAY, Json(json!({ "error": message }))).into_response()
        }
    }
}

/// `GET /api/agents`: our agents, then the remote ones (their descriptions from their cards).
pub async fn agents(State(state): State<AppState>, user: User) -> Json<AgentList> {
    let Json(mut listed) = rest::agents(State(state.clone()), user).await;
    let remotes = join_all(
        state
            .remotes
            .agents
            .iter()
            .map(|remote| remote.list_entry()),
    )
    .await;
    listed.agents.extend(remotes);
    Json(listed)
}

// ---- one remote -------------------------------------------------------------------------------

impl RemoteAgent {
    /// Our relay path for this agent.
    fn endpoint(&self) -> String {
        format!("/api/a2a/{}/{}", self.namespace, self.name)
    }

    async fn forward(
        &self,
        user: &str,
        headers: &HeaderMap,
        raw_query: Option<&str>,
        body: Bytes,
        call: RpcCall,
        Passing {
            shutdown,
            recording,
            translation,
        }: Passing,
    ) -> Response {
        let (host, idle_timeout) = (self.client.host(), self.client.idle_timeout());
        let mut request = self.client.post(user, raw_query);
        for name in FORWARDED {
            if let Some(value) = headers.get(name) {
                request = request.header(name, value);
            }
        }
        if !headers.contains_key(header::CONTENT_TYPE) {
            request = request.header(header::CONTENT_TYPE, "application/json");
        }
        let response = match tokio::time::timeout(idle_timeout, request.body(body).send()).await {
            Err(_elapsed) => {
                return call.error_response(format!(
                    "the remote agent at {host} did not answer within {} s",
                    idle_timeout.as_secs()
                ))
            }
            Ok(Err(err)) => {
                tracing::warn!(remote = %host, error = %err, "cannot reach a remote agent");
                return call.error_response(format!("the remote agent at {host} is unreachable"));
            }
            Ok(Ok(response)) => response,
        };
        let status = response.status();
        if !status.is_success() {
            tracing::warn!(remote = %host, status = status.as_u16(), "a remote agent refused a call");
            return call.error_response(format!(
                "the remote agent at {host} answered HTTP {}",
                status.as_u16()
            ));
        }
        let content_type = response.headers().get(header::CONTENT_TYPE).cloned();
        let is_sse = content_type
            .as_ref()
            .and_then(|value| value.to_str().ok())
            .is_some_and(|value| value.starts_with("text/event-stream"));
        let echoed: Vec<(&str, HeaderValue)> = ECHOED
            .into_iter()
            .filter_map(|name| Some((name, response.headers().get(name)?.clone())))
            .map(|(name, value)| match translation {
                Some(_) => (translate::echoed_name(name), value),
                None => (name, value),
            })
            .collect();
        let id = call.id.clone();
        let relayed = RelayedBody {
            response,
            idle_timeout,
            host: host.to_owned(),
            sse_call: is_sse.then_some(call),
            shutdown,
            tail: Vec::new(),
            ended: false,
            recording,
        };
        let (body, content_type, is_sse) = match translation {
            Some(translation) => {
                let (body, content_type, is_sse) = translation.body(relayed, id, is_sse);
                (body, Some(content_type), is_sse)
            }
            None => {
                let body = Body::from_stream(stream::unfold(relayed, |mut relayed| async move {
                    let item = relayed.next_chunk().await?;
                    Some((item, relayed))
                }));
                (body, content_type, is_sse)
            }
        };
        let mut builder = Response::builder().status(status);
        for (name, value) in echoed {
            builder = builder.header(name, value);
        }
        if let Some(content_type) = content_type {
            builder = builder.header(header::CONTENT_TYPE, content_type);
        }
        if is_sse {
            // Proxies in front of us must not hold the stream back either.
            builder = builder
                .header(header::CACHE_CONTROL, "no-cache")
                .header("x-accel-buffering", "no");
        }
        builder.body(body).unwrap_or_else(|err| {
            tracing::error!(error = %err, "cannot build a relayed response");
            StatusCode::INTERNAL_SERVER_ERROR.into_response()
        })
    }
}

/// What a relayed answer is passed on with: the shutdown that ends it, the recording that
/// keeps a copy for the store (`record`), and for a v0.3 caller of a v1.0 remote its
/// translation (`translate`).
struct Passing {
    shutdown: CancellationToken,
    recording: Option<Recording>,
    translation: Option<translate::Translation>,
}

/// What the relay knows of a call: enough to answer it with an error of the right shape.
struct RpcCall {
    id: Id,
    version: ProtocolVersion,
    /// A streaming method gets its error as an SSE event, as its client reads SSE.
    streaming: bool,
}

impl RpcCall {
    fn of(body: &[u8], version: ProtocolVersion) -> RpcCall {
        let value: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
        let id = value
            .get("id")
            .and_then(|id| serde_json::from_value::<Id>(id.clone()).ok())
            .unwrap_or(Id::Null);
        let streaming = value
            .get("method")
            .and_then(Value::as_str)
            .and_then(|name| Method::from_name(version, name))
            .is_some_and(Method::is_streaming);
        RpcCall {
            id,
            version,
            streaming,
        }
    }

    /// `-32603` with a message that names the remote and nothing of its internals.
    fn error_value(&self, message: &str) -> Value {
        RpcResponse::error(
            self.id.clone(),
            codec::error_object(self.version, ErrorCode::InternalError, message),
        )
        .to_value()
    }

    fn error_response(&self, message: String) -> Response {
        let error = self.error_value(&message);
        if self.streaming {
            (
                [(header::CONTENT_TYPE, "text/event-stream")],
                encode_data(&error.to_string()),
            )
                .into_response()
        } else {
            Json(error).into_response()
        }
    }
}

/// A remote's response body passed on chunk by chunk, with the inactivity timeout.
struct RelayedBody {
    response: reqwest::Response,
    idle_timeout: Duration,
    host: String,
    /// For SSE: the call, so a stream that breaks off between events ends with an error event.
    sse_call: Option<RpcCall>,
    shutdown: CancellationToken,
    /// The last bytes passed on, to tell whether the stream stands between two events.
    tail: Vec<u8>,
    ended: bool,
    /// A copy of what passes, for the store (`record`).
    recording: Option<Recording>,
}

impl RelayedBody {
    async fn next_chunk(&mut self) -> Option<Result<Bytes, std::io::Error>> {
        if self.ended {
            return None;
        }
        let next = tokio::select! {
            _ = self.shutdown.cancelled() => {
                return self.break_off("the server is shutting down".to_owned());
            }
            next = tokio::time::timeout(self.idle_timeout, self.response.chunk()) => next,
        };
        match next {
            Ok(Ok(Some(bytes))) => {
                if let Some(recording) = &self.recording {
                    recording.chunk(&bytes);
                }
                self.tail.extend_from_slice(&bytes);
                let keep = self.tail.len().saturating_sub(4);
                self.tail.drain(..keep);
                Some(Ok(bytes))
            }
            Ok(Ok(None)) => {
                self.ended = true;
                if let Some(recording) = &self.recording {
                    recording.end();
                }
                None
            }
            Ok(Err(err)) => {
                tracing::warn!(remote = %self.host, error = %err, "a remote agent's stream broke off");
                self.break_off(format!(
                    "the remote agent at {} broke off the stream",
                    self.host
                ))
            }
            Err(_elapsed) => self.break_off(format!(
                "the remote agent at {} sent nothing for {} s",
                self.host,
                self.idle_timeout.as_secs()
            )),
        }
    }

    /// Ends the body: with an error event when that can be told apart from the remote's bytes,
    /// else by failing the body (the client sees the connection end mid-answer).
    fn break_off(&mut self, message: String) -> Option<Result<Bytes, std::io::Error>> {
        self.ended = true;
        match &self.sse_call {
            Some(call) if between_events(&self.tail) => Some(Ok(Bytes::from(encode_data(
                &call.error_value(&message).to_string(),
            )))),
            Some(_) | None => Some(Err(std::io::Error::other(message))),
        }
    }
}

/// Whether an SSE stream ending in `tail` stands between events: nothing yet, or a blank line.
fn between_events(tail: &[u8]) -> bool {
    fn strip_line_end(bytes: &[u8]) -> Option<&[u8]> {
        bytes
            .strip_suffix(b"\r\n")
            .or_else(|| bytes.strip_suffix(b"\n"))
            .or_else(|| bytes.strip_suffix(b"\r"))
    }
    tail.is_empty() || strip_line_end(tail).and_then(strip_line_end).is_some()
}

mod access;
mod chats;
mod listing;
mod record;
#[cfg(test)]
mod tests;
mod translate;
