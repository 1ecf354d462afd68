//! The REST surfaces: the agents list, sessions, approvals and policies (docs/rest.md); the
//! cards are in `card`.

use std::collections::HashMap;

use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::Value;
use signoff_protocol::codec::{self, Method};
use signoff_protocol::hitl::Decision;
use signoff_protocol::rest::{
    AgentEntry, AgentList, ApprovalRequest, ApprovalRequestState, DecideResponse, DecidedApprovals,
    Follow, FollowParams, Me, NewPolicy, PendingApprovals, Policy, PolicyList, SessionDetail,
    SessionList, SettledCalls, ToolEntry, UnavailableSource,
};
use signoff_protocol::{ProtocolVersion, StreamEvent};

use super::a2a::request_version;
use super::{AppState, HttpError, Person, User};
use crate::agent::approvals::{Actor, Channel, Command, Decide};
use crate::agent::asked::AskedCall;
use crate::agent::{Agent, AgentError, Asking};

pub(super) fn endpoint(agent: &Agent) -> String {
    format!("/api/a2a/{}/{}", agent.namespace, agent.name)
}

pub async fn agents(State(state): State<AppState>, _user: User) -> Json<AgentList> {
    let agents = state
        .runtime
        .agents()
        .iter()
        .map(|agent| {
            let tools = agent.tools.tools();
            AgentEntry {
                namespace: agent.namespace.clone(),
                name: agent.name.clone(),
                description: agent.description.clone(),
                url: endpoint(agent),
                card_url: format!("{}/.well-known/agent-card.json", endpoint(agent)),
                tools: tools
                    .iter()
                    .map(|tool| ToolEntry {
                        name: tool.spec.name.clone(),
                        description: tool.spec.description.clone(),
                        source: tool.spec.source.clone(),
                        requires_approval: tool.requires_approval,
                        approval: tool.requires_approval.then(|| {
                            agent
                                .approvals
                                .approvers_for(
                                    &tool.spec.name,
                                    Some(&tool.spec.source),
                                    &serde_json::Value::Object(serde_json::Map::new()),
                                )
                                .requirement()
                        }),
                    })
                    .collect(),
                require_approval: tools
                    .iter()
                    .filter(|tool| tool.requires_approval)
                    .map(|tool| tool.spec.name.clone())
                    .collect(),
                unavailable_sources: Some(
                    agent
                        .tools
                        .unavailable()
                        .into_iter()
                        .map(|(name, error)| UnavailableSource { name, error })
                        .collect(),
                ),
                remote: false,
                reachable: None,
                skills: None,
                cancelable: None,
                answers_prompts: agent.tools.answers_any_name().then_some(true),
            }
        })
        .collect();
    Json(AgentList { agents })
}

/// Who the caller is: the UI shows it before it lets a link switch accounts, and in its account
/// menu.
pub async fn me(State(state): State<AppState>, caller: super::Caller) -> Json<Me> {
    let identity = caller.identity;
    Json(Me {
        user: identity.subject,
        name: identity.name,
        email: identity.email,
        groups: identity.groups,
        auth: Some(state.auth.mode().to_owned()),
    })
}

pub async fn sessions(
    State(state): State<AppState>,
    user: User,
) -> Result<Json<SessionList>, HttpError> {
    let sessions = state.runtime.sessions(&user.0).await?;
    Ok(Json(SessionList { sessions }))
}

/// A session with its tasks, encoded in the caller's A2A version (default 0.3).
pub async fn session(
    State(state): State<AppState>,
    Path(id): Path<String>,
    Query(query): Query<HashMap<String, String>>,
    headers: HeaderMap,
    who: Person,
) -> Result<Json<SessionDetail>, HttpError> {
    let version = request_version(&headers, &query).unwrap_or(ProtocolVersion::V0_3);
    let (session, tasks, requested_by) = state.runtime.session(&who.0, &id).await?;
    let tasks = tasks
        .iter()
        .map(|task| codec::encode_task(version, task))
        .collect();
    Ok(Json(SessionDetail {
        session,
        tasks,
        requested_by,
    }))
}

pub async fn delete_session(
    State(state): State<AppState>,
    Path(id): Path<String>,
    user: User,
) -> Result<StatusCode, HttpError> {
    state.runtime.delete_session(&user.0, &id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Pending batches of the caller, or with `?state=decided` their recent decisions, or with
/// `?state=settled` their calls the rules settled at once.
pub async fn approvals(
    State(state): State<AppState>,
    Query(query): Query<HashMap<String, String>>,
    who: Person,
) -> Result<Response, HttpError> {
    let user = User(who.0.subject.clone(), who.1);
    match query.get("state").map(String::as_str) {
        None | Some("pending") => {
            let approvals = state.runtime.approvals_for(&who.0).await?;
            Ok(Json(PendingApprovals { approvals }).into_response())
        }
        Some("decided") => {
            let limit = list_limit(&query)?;
            let decisions = state
                .runtime
                .approvals()
                .recent_decisions(&user.0, limit)
                .await?;
            Ok(Json(DecidedApprovals { decisions }).into_response())
        }
        Some("settled") => {
            let limit = list_limit(&query)?;
            let calls = state.runtime.asked().settled(&who.0, limit).await?;
            Ok(Json(SettledCalls { calls }).into_response())
        }
        Some(other) => Err(HttpError::BadRequest(format!(
            "state must be pending, decided or settled, not {other:?}"
        ))),
    }
}

/// `?limit=` of an audit listing: 1 to 500, 50 when absent.
fn list_limit(query: &HashMap<String, String>) -> Result<i64, HttpError> {
    match query.get("limit") {
        None => Ok(50),
        Some(text) => match text.parse::<i64>() {
            Ok(limit) if (1..=500).contains(&limit) => Ok(limit),
            _ => Err(HttpError::BadRequest(format!(
                "limit must be a whole number from 1 to 500, not {text:?}"
            ))),
        },
    }
}

/// Decides a paused task's batch with the same object as the decision DataPart; answers with
/// each call's verdict and, once run, its result, plus where to follow the task. `?batch=ID`
/// pins the batch the caller saw: a decision for a batch that stopped waiting is refused with
/// `409`, never applied to the one that waits now.
pub async fn decide(
    State(state): State<AppState>,
    Path(task_id): Path<String>,
    Query(query): Query<HashMap<String, String>>,
    who: Person,
    body: axum::body::Bytes,
) -> Result<Json<DecideResponse>, HttpError> {
    let pin = batch_pin(&query)?;
    decide_as(&state, &task_id, &rest_actor(&who), pin, &who, &body).await
}

/// The `?batch=` pin of a decision, if given: a batch id.
pub(super) fn batch_pin(query: &HashMap<String, String>) -> Result<Option<i64>, HttpError> {
    match query.get("batch") {
        None => Ok(None),
        Some(text) => text.parse::<i64>().map(Some).map_err(|_| {
            HttpError::BadRequest(format!(
                "batch must be the id of the batch decided (a whole number), not {text:?}"
            ))
        }),
    }
}

/// Decides task `task_id`'s batch (the one pinned, if `pin`) as `actor`, with `body`, the same
/// object as the decision DataPart; the answer of `POST /api/approvals/{taskId}`.
pub(super) async fn decide_as(
    state: &AppState,
    task_id: &str,
    actor: &Actor,
    pin: Option<i64>,
    who: &Person,
    body: &[u8],
) -> Result<Json<DecideResponse>, HttpError> {
    signoff_protocol::json_keys::reject_duplicate_keys(body)
        .map_err(|err| HttpError::BadRequest(err.to_string()))?;
    let data: Value = serde_json::from_slice(body)
        .map_err(|err| HttpError::BadRequest(format!("invalid JSON: {err}")))?;
    let runtime = state.runtime.clone();
    let task_id = task_id.to_owned();
    // The channel reads its input into the protocol's typed decision first.
    let decision = Decision::from_data(&data).map_err(AgentError::from)?;
    let command = Command::Decide(Box::new(Decide {
        batch_id: pin,
        ..Decide::of(decision)
    }));
    let applied = runtime
        .apply(&task_id, actor, command)
        .await
        .and_then(crate::agent::runtime::Outcome::into_decided);
    let (accepted, batch_id, quorum) = match (applied, pin) {
        (Ok(decided), _) => decided,
        // A pinned decision (a copy's click) that decides nothing says who decided the batch.
        (Err(err), Some(pin)) => {
            let why = runtime.approvals().why_refused(&task_id, pin, &err).await;
            return Err(HttpError::from(err).reworded(why));
        }
        (Err(err), None) => return Err(err.into()),
    };
    // Approvals short of a quorum leave the batch waiting: nothing runs, nothing to wait for.
    let outcome = match quorum {
        Some(_) => None,
        None => {
            runtime
                .wait_batch(&task_id, batch_id, accepted.after_seq)
                .await?;
            runtime
                .approvals()
                .batch_outcome(&task_id, batch_id)
                .await?
        }
    };
    let (task, _, agent_key) = runtime.readable_snapshot(&who.0, &task_id).await?;
    let agent = runtime
        .agents()
        .iter()
        .find(|agent| agent.key() == agent_key)
        .map(|agent| endpoint(agent));
    Ok(Json(DecideResponse {
        task_id: task_id.clone(),
        state: task.status.state,
        decision: outcome,
        quorum,
        follow: Follow {
            url: agent,
            method: Method::SubscribeToTask
                .name(ProtocolVersion::V0_3)
                .to_owned(),
            params: FollowParams { id: task_id },
        },
        task: codec::encode_send_result(ProtocolVersion::V0_3, &StreamEvent::Task(task)),
    }))
}

/// The caller's "always allow" policies in force.
pub async fn grants(
    State(state): State<AppState>,
    user: User,
) -> Result<Json<PolicyList>, HttpError> {
    let policies = state.runtime.grants().list(&user.0).await?;
    Ok(Json(PolicyList { policies }))
}

/// Makes a policy of the caller's: `201` with it, its `id` included.
pub async fn create_grant(
    State(state): State<AppState>,
    user: User,
    body: axum::body::Bytes,
) -> Result<(StatusCode, Json<Policy>), HttpError> {
    signoff_protocol::json_keys::reject_duplicate_keys(&body)
        .map_err(|err| HttpError::BadRequest(err.to_string()))?;
    let mut reader = serde_json::Deserializer::from_slice(&body);
    let new: NewPolicy = serde_path_to_error::deserialize(&mut reader).map_err(|err| {
        let path = err.path().to_string();
        let inner = err.into_inner();
        if path == "." {
            HttpError::BadRequest(format!("invalid policy: {inner}"))
        } else {
            HttpError::BadRequest(format!("invalid policy: {path}: {inner}"))
        }
    })?;
    let policy = state.runtime.grants().create(&user.0, new).await?;
    Ok((StatusCode::CREATED, Json(policy)))
}

/// Revokes one of the caller's policies: `204`; the next call is screened without it.
pub async fn revoke_grant(
    State(state): State<AppState>,
    Path(id): Path<String>,
    user: User,
) -> Result<StatusCode, HttpError> {
    state.runtime.grants().revoke(&user.0, &id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Hands a pending batch to a person or group, who may then decide it too: `200` with who
/// handed it to whom.
pub async fn handover(
    State(state): State<AppState>,
    Path(task_id): Path<String>,
    who: Person,
    body: axum::body::Bytes,
) -> Result<Json<signoff_protocol::rest::HandedOver>, HttpError> {
    let request: signoff_protocol::rest::HandoverRequest = strict_body(&body, "hand-over")?;
    let command = Command::HandOver {
        to: request.to,
        note: request.note,
    };
    let crate::agent::LadderEvent::HandedOver { task_id, by, to } = state
        .runtime
        .apply(&task_id, &rest_actor(&who), command)
        .await?
        .into_handed_over()?;
    Ok(Json(signoff_protocol::rest::HandedOver { task_id, by, to }))
}

/// Pushes a pending batch's deadline back, within its calls' `max_extend`: `200` with the new
/// deadline.
pub async fn extend(
    State(state): State<AppState>,
    Path(task_id): Path<String>,
    who: Person,
    body: axum::body::Bytes,
) -> Result<Json<signoff_protocol::rest::DeadlineExtended>, HttpError> {
    let request: signoff_protocol::rest::ExtendRequest = strict_body(&body, "extension")?;
    let command = Command::Extend {
        by: request.by,
        note: request.note,
    };
    let extended = state
        .runtime
        .apply(&task_id, &rest_actor(&who), command)
        .await?
        .into_extended()?;
    Ok(Json(extended))
}

/// A person acting over REST, as their sign-in says.
fn rest_actor(who: &Person) -> Actor {
    actor_on(Channel::Rest, who)
}

/// A signed-in person acting through `channel` (REST, or a push notification's actions).
pub(super) fn actor_on(channel: Channel, who: &Person) -> Actor {
    Actor {
        channel,
        decider: who.0.clone(),
        auth: who.0.auth,
    }
}

/// A JSON body of type `T`, refused with a `400` naming `what` when it has a duplicate key, an
/// unknown field or a value that does not fit.
pub(super) fn strict_body<T: serde::de::DeserializeOwned>(
    body: &[u8],
    what: &str,
) -> Result<T, HttpError> {
    signoff_protocol::json_keys::reject_duplicate_keys(body)
        .map_err(|err| HttpError::BadRequest(err.to_string()))?;
    serde_json::from_slice(body)
        .map_err(|err| HttpError::BadRequest(format!("invalid {what}: {err}")))
}

/// The longest `?wait=` of an approval request, in seconds.
const MAX_REQUEST_WAIT_SECS: u64 = 60;

/// `POST /api/approvals/requests`: a program asks whether one call may run (docs/rest.md,
/// Approval requests). `201` with where it stands, after waiting up to `?wait=SECONDS` for it
/// to be settled.
pub async fn ask(
    State(state): State<AppState>,
    Query(query): Query<HashMap<String, String>>,
    who: Person,
    body: axum::body::Bytes,
) -> Result<(StatusCode, Json<ApprovalRequestState>), HttpError> {
    let request: ApprovalRequest = strict_body(&body, "approval request")?;
    let wait = request_wait(&query)?;
    let agent = served_agent(&state, &request.agent)?;
    let call = AskedCall::checked(&request.tool, request.arguments, request.call_id)
        .map_err(HttpError::BadRequest)?;
    let title = request.title.as_deref().unwrap_or("");
    let asking = state.runtime.asked();
    let asked = match asking.ask(&who.0, &agent, call, title, None).await? {
        Asking::Settled(settled) => settled,
        // A program asking over REST answers no server's questions.
        Asking::Allowed(allowed) => allowed.run(None).await,
        Asking::Opened(accepted) => asking.state(&who.0, &accepted.task_id, wait).await?,
    };
    Ok((StatusCode::CREATED, Json(asked)))
}

/// `GET /api/approvals/requests/{taskId}`: where the caller's approval request stands, after
/// waiting up to `?wait=SECONDS` for it to be settled.
pub async fn asked(
    State(state): State<AppState>,
    Path(task_id): Path<String>,
    Query(query): Query<HashMap<String, String>>,
    who: Person,
) -> Result<Json<ApprovalRequestState>, HttpError> {
    let wait = request_wait(&query)?;
    Ok(Json(
        state.runtime.asked().state(&who.0, &task_id, wait).await?,
    ))
}

/// The agent `namespace/name` if it takes calls from programs (`serve_mcp = true`).
fn served_agent(state: &AppState, key: &str) -> Result<std::sync::Arc<Agent>, HttpError> {
    let (namespace, name) = key
        .split_once('/')
        .ok_or_else(|| HttpError::BadRequest(format!("agent: {key:?} is not namespace/name")))?;
    match state.runtime.agent(namespace, name) {
        Some(agent) if agent.serve_mcp => Ok(agent),
        Some(_) => Err(HttpError::NotFound(format!(
            "the agent {key} takes no calls from programs (set serve_mcp = true in the agents file)"
        ))),
        None => Err(HttpError::NotFound(format!("no agent {key}"))),
    }
}

/// `?wait=SECONDS`, at most [`MAX_REQUEST_WAIT_SECS`]; none: do not wait.
fn request_wait(query: &HashMap<String, String>) -> Result<std::time::Duration, HttpError> {
    let Some(wait) = query.get("wait") else {
        return Ok(std::time::Duration::ZERO);
    };
    match wait.parse::<u64>() {
        Ok(secs) if secs <= MAX_REQUEST_WAIT_SECS => Ok(std::time::Duration::from_secs(secs)),
        Ok(_) | Err(_) => Err(HttpError::BadRequest(format!(
            "wait: {wait:?} is not a number of seconds from 0 to {MAX_REQUEST_WAIT_SECS}"
        ))),
    }
}
