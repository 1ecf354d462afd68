//! The REST routes that must know a relayed chat is a remote agent's (crates/server/README.md,
//! Relayed chats): a session's reload asks the remote for the state of its tasks that have not
//! ended, and a REST decision on a relayed task, once the runtime has checked it, is forwarded
//! to the remote agent in its dialect, its answer recorded as it comes. Everything else is our
//! own REST.

use std::collections::HashMap;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use axum::Json;
use futures_util::future::join_all;
use serde_json::Value;
use signoff_protocol::codec::{self, Method};
use signoff_protocol::hitl::Dialect;
use signoff_protocol::rest::{DecideResponse, Follow, FollowParams, SessionDetail};
use signoff_protocol::{Message, ProtocolVersion, SendMessageParams, StreamEvent};

use super::record::{self, Recording};
use super::RemoteAgent;
use crate::agent::{AgentError, Decider};
use crate::http::{rest, AppState, HttpError, Person};

/// `GET /api/sessions/{id}`: the stored session, after asking the remote agent where its open
/// relayed tasks stand (a stream that was cut, a batch decided elsewhere). A task whose relayed
/// answer is being recorded now is not asked about: that answer is the news, and a refresh
/// could overtake it.
pub async fn session(
    State(state): State<AppState>,
    Path(id): Path<String>,
    Query(query): Query<HashMap<String, String>>,
    headers: HeaderMap,
    who: Person,
) -> Result<Json<SessionDetail>, HttpError> {
    let open = state
        .runtime
        .relay()
        .tasks_to_refresh(&who.0.subject, &id)
        .await?;
    join_all(open.iter().filter_map(|task| {
        let remote = state
            .remotes
            .by_key(&task.agent)
            .filter(|remote| !remote.is_live(&task.id))?;
        let (runtime, user) = (state.runtime.clone(), who.0.subject.clone());
        Some(async move { record::refresh(&runtime, &remote, &user, &task.id).await })
    }))
    .await;
    rest::session(State(state), Path(id), Query(query), headers, who).await
}

/// `POST /api/approvals/{taskId}`: our own task's decision, or for a relayed task the same
/// decision, checked and forwarded to its remote agent by the runtime (`Relay::decide`). The
/// `?batch=` pin is our own batches': a relayed task's batch is its remote's.
pub async fn decide(
    State(state): State<AppState>,
    Path(task_id): Path<String>,
    Query(query): Query<HashMap<String, String>>,
    who: Person,
    body: Bytes,
) -> Result<Response, HttpError> {
    signoff_protocol::json_keys::reject_duplicate_keys(&body)
        .map_err(|err| HttpError::BadRequest(err.to_string()))?;
    let data: Value = serde_json::from_slice(&body)
        .map_err(|err| HttpError::BadRequest(format!("invalid JSON: {err}")))?;
    let runtime = &state.runtime;
    let remotes = &state.remotes;
    let send = async |agent: &str, message: Message, dialect: Dialect| {
        let Some(remote) = remotes.by_key(agent) else {
            return Err(AgentError::Remote(format!(
                "the remote agent {agent} is no longer configured here; the decision cannot reach it"
            )));
        };
        remote
            .send_decision(runtime, &who.0, message, dialect)
            .await
    };
    let Some(decided) = runtime
        .relay()
        .decide(&who.0, &task_id, &data, send)
        .await?
    else {
        return rest::decide(State(state), Path(task_id), Query(query), who, body)
            .await
            .map(IntoResponse::into_response);
    };
    let follow = state
        .remotes
        .by_key(&decided.agent)
        .map(|remote| remote.endpoint());
    Ok(Json(DecideResponse {
        task_id: task_id.clone(),
        state: decided.task.status.state,
        decision: decided.decision,
        quorum: None,
        follow: Follow {
            url: follow,
            method: Method::SubscribeToTask
                .name(ProtocolVersion::V0_3)
                .to_owned(),
            params: FollowParams { id: task_id },
        },
        task: codec::encode_send_result(ProtocolVersion::V0_3, &StreamEvent::Task(decided.task)),
    })
    .into_response())
}

impl RemoteAgent {
    /// Sends a decision message to the remote as `message/stream` (v1.0 `SendStreamingMessage`
    /// with the extension activated, for kagent's HITL extension, or to a remote that offers
    /// only v1.0) and records its answer to the end.
    async fn send_decision(
        self: &Arc<Self>,
        runtime: &Arc<crate::agent::Runtime>,
        who: &Decider,
        message: Message,
        dialect: Dialect,
    ) -> Result<(), AgentError> {
        let version = match dialect {
            Dialect::KagentExtension => ProtocolVersion::V1_0,
            Dialect::Native | Dialect::Kagent => self.own_calls_version().await,
        };
        let params = codec::encode_send_params(
            version,
            &SendMessageParams {
                message,
                configuration: None,
                metadata: None,
            },
        );
        let (request, body) = self.client.call(
            &who.subject,
            version,
            Method::SendStreamingMessage,
            params,
            dialect == Dialect::KagentExtension,
        );
        let recording = Recording::start_rest(runtime, self, who, body.as_bytes(), version);
        let unreachable = |what: &str| {
            AgentError::Remote(format!(
                "the remote agent at {} {what}; the decision was not delivered",
                self.client.host()
            ))
        };
        let idle_timeout = self.client.idle_timeout();
        let mut response = match tokio::time::timeout(idle_timeout, request.send()).await {
            Ok(Ok(response)) if response.status().is_success() => response,
            Ok(Ok(response)) => {
                return Err(unreachable(&format!(
                    "answered HTTP {}",
                    response.status().as_u16()
                )))
            }
            Ok(Err(_)) => return Err(unreachable("is unreachable")),
            Err(_) => return Err(unreachable("did not answer in time")),
        };
        loop {
            match tokio::time::timeout(idle_timeout, response.chunk()).await {
                Ok(Ok(Some(bytes))) => {
                    if let Some(recording) = &recording {
                        recording.chunk(&bytes);
                    }
                }
                Ok(Ok(None)) => {
                    if let Some(recording) = &recording {
                        recording.end();
                    }
                    break;
                }
                Ok(Err(_)) | Err(_) => break,
            }
        }
        if let Some(recording) = recording {
            recording.finished().await;
        }
        Ok(())
    }
}
