//! The A2A JSON-RPC endpoint: both protocol versions on one URL, chosen by `A2A-Version`
//! (absent means 0.3). Decoding and encoding go through `signoff_protocol::codec`; this file
//! only routes methods to the runtime and maps errors to codes (docs/wire.md, Error codes).

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderMap};
use axum::response::{IntoResponse, Response};
use futures_util::stream::{self, BoxStream};
use futures_util::StreamExt;
use serde_json::Value;
use signoff_protocol::codec::{self, Method, PushMethod};
use signoff_protocol::jsonrpc::{self, ErrorCode, ErrorObject, Id, Response as RpcResponse};
use signoff_protocol::{json_keys, ProtocolVersion, Role, StreamEvent, Task, TaskState};

use super::sse::{sse, IdleLimit};
use super::{AppState, Person};
use crate::agent::approvals::{Actor, Channel, Command};
use crate::agent::runtime::{Opening, StreamEnd};
use crate::agent::{Agent, AgentError, Decider, Runtime};
use crate::store::EVENT_LOG_VERSION;

/// The request's A2A version: the `A2A-Version` header, or the `A2A-Version` query parameter;
/// neither means 0.3. `Err` holds a value we do not speak.
pub fn request_version(
    headers: &HeaderMap,
    query: &std::collections::HashMap<String, String>,
) -> Result<ProtocolVersion, String> {
    // A header value that is not visible ASCII is a version we do not speak, not a missing one.
    let raw = match headers.get("a2a-version") {
        Some(value) => Some(
            value
                .to_str()
                .map(str::to_owned)
                .unwrap_or_else(|_| String::from_utf8_lossy(value.as_bytes()).into_owned()),
        ),
        None => query.get("A2A-Version").cloned(),
    };
    match raw {
        None => Ok(ProtocolVersion::V0_3),
        Some(raw) if raw.trim().is_empty() => Ok(ProtocolVersion::V0_3),
        Some(raw) => ProtocolVersion::from_header(&raw).ok_or(raw),
    }
}

/// The extended agent card methods of either version: known, not offered, `-32004`.
const UNSUPPORTED: [&str; 2] = ["agent/getAuthenticatedExtendedCard", "GetExtendedAgentCard"];

/// A JSON-RPC error code and message for a runtime error in the request's version; internals
/// are logged, not sent.
pub(super) fn rpc_error(version: ProtocolVersion, err: &AgentError) -> (ErrorCode, String) {
    match err {
        // v1.0 names a message to an ended task an unsupported operation; v0.3 has no such
        // rule, and its SDKs answer invalid params.
        AgentError::Terminal(_) => match version {
            ProtocolVersion::V0_3 => (ErrorCode::InvalidParams, err.to_string()),
            ProtocolVersion::V1_0 => (ErrorCode::UnsupportedOperation, err.to_string()),
        },
        AgentError::TaskNotFound(id) | AgentError::Forbidden(id) => {
            (ErrorCode::TaskNotFound, format!("task {id} not found"))
        }
        AgentError::TaskDeleted(_) => (ErrorCode::TaskNotFound, err.to_string()),
        AgentError::AgentNotFound(_)
        | AgentError::SessionNotFound(_)
        | AgentError::GrantNotFound(_)
        | AgentError::ShareNotFound(_)
        | AgentError::PushNotFound(_) => (ErrorCode::InvalidParams, err.to_string()),
        AgentError::InvalidParams(_)
        | AgentError::NotEligible(_)
        | AgentError::AlreadyApproved(_)
        | AgentError::NotPaused(_)
        | AgentError::Decision(_)
        | AgentError::ChatInUse(_)
        | AgentError::Conflict(_) => (ErrorCode::InvalidParams, err.to_string()),
        AgentError::NotCancelable { .. } => (ErrorCode::TaskNotCancelable, err.to_string()),
        AgentError::ShuttingDown | AgentError::Remote(_) => {
            (ErrorCode::InternalError, err.to_string())
        }
        AgentError::Store(_) | AgentError::Internal(_) | AgentError::Receipts(_) => {
            tracing::error!(error = %err, "internal error");
            (ErrorCode::InternalError, "internal error".to_owned())
        }
    }
}

/// One decoded call, ready to run.
struct Call {
    id: Id,
    version: ProtocolVersion,
    method: Method,
    params: Value,
    user: String,
    /// The caller with their email and groups, and how they were authenticated, for the
    /// decisions the call makes.
    who: Decider,
    agent: Arc<Agent>,
    runtime: Arc<Runtime>,
}

impl Call {
    fn error(&self, code: ErrorCode, message: impl Into<String>) -> RpcResponse {
        RpcResponse::error(
            self.id.clone(),
            codec::error_object(self.version, code, message),
        )
    }

    fn agent_error(&self, err: &AgentError) -> RpcResponse {
        let (code, message) = rpc_error(self.version, err);
        self.error(code, message)
    }

    fn decode_error(&self, err: &codec::DecodeError) -> RpcResponse {
        self.error(ErrorCode::InvalidParams, err.to_string())
    }

    fn success(&self, result: Value) -> RpcResponse {
        RpcResponse::success(self.id.clone(), result)
    }
}

/// A JSON-RPC response as an HTTP body (the id written back exactly as the caller sent it).
fn json_response(response: &RpcResponse) -> Response {
    (
        [(header::CONTENT_TYPE, "application/json")],
        response.to_json(),
    )
        .into_response()
}

fn plain_error(id: Id, version: ProtocolVersion, code: ErrorCode, message: &str) -> Response {
    let error: ErrorObject = codec::error_object(version, code, message);
    json_response(&RpcResponse::error(id, error))
}

/// A JSON-RPC error for a body that repeats a key in any object, or `None` for a body without
/// repeats (or that is not JSON, which the caller reports). Parsers disagree on which repeat
/// wins, so a decision object that gives its type twice, deny then approve, could read as a
/// rejection to a proxy or a log and as an approval here: such a body is refused, never guessed
/// at.
pub fn refuse_duplicate_keys(
    body: &[u8],
    headers: &HeaderMap,
    query: &std::collections::HashMap<String, String>,
) -> Option<Response> {
    match json_keys::reject_duplicate_keys(body) {
        Err(err @ json_keys::KeyError::Duplicate { .. }) => {
            let version = request_version(headers, query).unwrap_or(ProtocolVersion::V0_3);
            let id = jsonrpc::request_id(body).unwrap_or(Id::Null);
            Some(plain_error(
                id,
                version,
                ErrorCode::InvalidParams,
                &err.to_string(),
            ))
        }
        Ok(()) | Err(json_keys::KeyError::Syntax(_)) => None,
    }
}

pub async fn handle(
    State(state): State<AppState>,
    Path((namespace, name)): Path<(String, String)>,
    Query(query): Query<std::collections::HashMap<String, String>>,
    who: Person,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let Some(agent) = state.runtime.agent(&namespace, &name) else {
        return super::HttpError::NotFound(format!("no agent {namespace}/{name}")).into_response();
    };
    // Parse first, so even a version error can echo the request's id.
    let value: Value = match serde_json::from_slice(&body) {
        Ok(value) => value,
        Err(err) => {
            return plain_error(
                Id::Null,
                ProtocolVersion::V0_3,
                ErrorCode::ParseError,
                &format!("invalid JSON: {err}"),
            )
        }
    };
    let id = jsonrpc::request_id(&body).unwrap_or(Id::Null);
    let version = match request_version(&headers, &query) {
        Ok(version) => version,
        Err(raw) => {
            return plain_error(
                id,
                ProtocolVersion::V1_0,
                ErrorCode::VersionNotSupported,
                &format!("A2A version {raw:?} is not supported; use 0.3 or 1.0"),
            )
        }
    };
    let Some(object) = value.as_object() else {
        return plain_error(
            id,
            version,
            ErrorCode::InvalidRequest,
            "a request must be one JSON-RPC object (batches are not supported)",
        );
    };
    if object.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return plain_error(
            id,
            version,
            ErrorCode::InvalidRequest,
            "jsonrpc must be \"2.0\"",
        );
    }
    let valid_id = matches!(
        object.get("id"),
        None | Some(Value::Null | Value::String(_) | Value::Number(_))
    );
    if !valid_id {
        return plain_error(
            id,
            version,
            ErrorCode::InvalidRequest,
            "id must be a string, a number or null",
        );
    }
    let Some(method_name) = object.get("method").and_then(Value::as_str) else {
        return plain_error(
            id,
            version,
            ErrorCode::InvalidRequest,
            "method must be a string",
        );
    };
    if UNSUPPORTED.contains(&method_name) {
        return plain_error(
            id,
            version,
            ErrorCode::UnsupportedOperation,
            &format!("{method_name}: extended agent cards are not supported by this server"),
        );
    }
    if let Some(push) = PushMethod::from_name(version, method_name) {
        let params = object.get("params").cloned().unwrap_or(Value::Null);
        let call = PushCall {
            id,
            version,
            params,
            user: who.0.subject.clone(),
            agent,
            runtime: state.runtime.clone(),
        };
        return json_response(&push_call(push, call).await);
    }
    let Some(method) = Method::from_name(version, method_name) else {
        return plain_error(
            id,
            version,
            ErrorCode::MethodNotFound,
            &format!(
                "method {method_name:?} not found in A2A {}",
                version.as_str()
            ),
        );
    };
    let params = object.get("params").cloned().unwrap_or(Value::Null);
    let call = Call {
        id,
        version,
        method,
        params,
        user: who.0.subject.clone(),
        who: who.0,
        agent,
        runtime: state.runtime.clone(),
    };
    tracing::debug!(method = method_name, version = version.as_str(), "a2a call");
    if method.is_streaming() {
        let open = state.runtime.metrics().stream_opened();
        let idle = IdleLimit::new(state.stream_idle_timeout, call.id.clone(), version);
        match stream_call(call).await {
            Ok(items) => sse(items, open, idle),
            // v1.0: an error found before the stream opens is the call's one JSON-RPC response,
            // as for a unary method (a client then need not read a stream to learn of it).
            Err(response) if version == ProtocolVersion::V1_0 => json_response(&response),
            Err(response) => sse(stream::iter([response.to_json()]).boxed(), open, idle),
        }
    } else {
        json_response(&unary_call(call).await)
    }
}

/// What a send answers: the task, or the agent's message when the task completed with its whole
/// answer as one message and nothing else (no artifact: `ModelEvent::Message`).
fn send_result(task: Task) -> StreamEvent {
    let answered_by_message =
        task.status.state == TaskState::Completed && task.artifacts.is_empty();
    match task.status.message {
        Some(message) if answered_by_message && message.role == Role::Agent => {
            StreamEvent::Message(message)
        }
        _ => StreamEvent::Task(task),
    }
}

async fn unary_call(call: Call) -> RpcResponse {
    let runtime = call.runtime.clone();
    match call.method {
        Method::SendMessage => {
            let params = match codec::decode_send_params(call.version, &call.params) {
                Ok(params) => params,
                Err(err) => return call.decode_error(&err),
            };
            let mut configuration = params.configuration.clone().unwrap_or_default();
            let push = configuration.push.take().map(|push| (call.version, push));
            let sent = runtime.send_with_push(&call.who, &call.agent, params.message, push);
            let accepted = match sent.await {
                Ok(accepted) => accepted,
                Err(err) => return call.agent_error(&err),
            };
            if configuration.blocking != Some(false) {
                if let Err(err) = runtime
                    .log()
                    .wait_final(&accepted.task_id, accepted.after_seq)
                    .await
                {
                    return call.agent_error(&err);
                }
            }
            match runtime
                .task(&call.who, &accepted.task_id, configuration.history_length)
                .await
            {
                Ok(task) => {
                    call.success(codec::encode_send_result(call.version, &send_result(task)))
                }
                Err(err) => call.agent_error(&err),
            }
        }
        Method::GetTask => {
            let query = match codec::decode_task_query(call.version, &call.params) {
                Ok(query) => query,
                Err(err) => return call.decode_error(&err),
            };
            match runtime
                .task(&call.who, &query.id, query.history_length)
                .await
            {
                Ok(task) => call.success(codec::encode_task(call.version, &task)),
                Err(err) => call.agent_error(&err),
            }
        }
        Method::CancelTask => {
            let params = match codec::decode_task_id_params(call.version, &call.params) {
                Ok(params) => params,
                Err(err) => return call.decode_error(&err),
            };
            let actor = Actor {
                channel: Channel::Cancel,
                decider: call.who.clone(),
                auth: call.who.auth,
            };
            let canceled = match runtime.apply(&params.id, &actor, Command::Cancel).await {
                Ok(outcome) => outcome.into_canceled(),
                Err(err) => Err(err),
            };
            match canceled {
                Ok(task) => call.success(codec::encode_task(call.version, &task)),
                Err(err) => call.agent_error(&err),
            }
        }
        Method::ListTasks => {
            let params = match codec::decode_list_tasks_params(&call.params) {
                Ok(params) => params,
                Err(err) => return call.decode_error(&err),
            };
            match runtime.list_tasks(&call.user, &params).await {
                Ok(result) => call.success(codec::encode_list_tasks_result(&result)),
                Err(err) => call.agent_error(&err),
            }
        }
        Method::SendStreamingMessage | Method::SubscribeToTask => call.error(
            ErrorCode::InternalError,
            "a streaming method reached the unary path",
        ),
    }
}

/// The items of a streaming call: events as JSON-RPC responses; `Err` for an error found before
/// the stream opens. The runtime's [`crate::agent::runtime::TaskStream`] owns the order of
/// the events; this encodes them in the call's version.
async fn stream_call(call: Call) -> Result<BoxStream<'static, String>, RpcResponse> {
    let runtime = call.runtime.clone();
    let resubscribe = call.method == Method::SubscribeToTask;
    let opened = match call.method {
        Method::SendStreamingMessage => {
            let params = match codec::decode_send_params(call.version, &call.params) {
                Ok(params) => params,
                Err(err) => return Err(call.decode_error(&err)),
            };
            let opening = match call.version {
                // v0.3 replays the turn's events as written, `submitted` (or `working`) first.
                ProtocolVersion::V0_3 => Opening::Committed,
                // v1.0 opens with a task snapshot.
                ProtocolVersion::V1_0 => Opening::Snapshot,
            };
            let push = params
                .configuration
                .and_then(|config| config.push)
                .map(|push| (call.version, push));
            runtime
                .stream_message(&call.who, &call.agent, params.message, push, opening)
                .await
        }
        Method::SubscribeToTask => {
            let params = match codec::decode_task_id_params(call.version, &call.params) {
                Ok(params) => params,
                Err(err) => return Err(call.decode_error(&err)),
            };
            // v0.3's resubscribe ends at the next pause; v1.0's follows the task on through its
            // pauses until it ends.
            let end = match call.version {
                ProtocolVersion::V0_3 => StreamEnd::Final,
                ProtocolVersion::V1_0 => StreamEnd::Terminal,
            };
            runtime.subscribe(&call.who, &params.id, end).await
        }
        Method::SendMessage | Method::GetTask | Method::CancelTask | Method::ListTasks => {
            return Err(call.error(
                ErrorCode::InternalError,
                "a unary method reached the streaming path",
            ))
        }
    };
    let mut opened = opened.map_err(|err| call.agent_error(&err))?;
    let mut first = Vec::new();
    if let Some(task) = opened.snapshot.take() {
        let ended = task.status.state.ends_stream();
        // v1.0: subscribing to a task that has ended is an unsupported operation; v0.3 sends the
        // task and closes.
        if resubscribe && task.status.state.is_terminal() && call.version == ProtocolVersion::V1_0 {
            let err = AgentError::Terminal(format!(
                "task {} is {} and has nothing more to stream; read it with GetTask",
                task.id,
                codec::state_name(ProtocolVersion::V0_3, task.status.state)
            ));
            return Err(call.agent_error(&err));
        }
        first.push(
            call.success(codec::encode_event(call.version, &StreamEvent::Task(task)))
                .to_json(),
        );
        // v0.3's resubscribe ends with a paused task's snapshot.
        if resubscribe && ended && call.version == ProtocolVersion::V0_3 {
            return Ok(stream::iter(first).boxed());
        }
    }
    let (version, id) = (call.version, call.id.clone());
    let events = opened.events().map(move |item| {
        let event = match item {
            // Stored in this very version: sent on as stored, not decoded and encoded again.
            Ok(logged) if version == EVENT_LOG_VERSION => {
                return RpcResponse::success_json_with_raw_result(&id, &logged.stored)
            }
            Ok(logged) => logged.event(),
            Err(err) => Err(err),
        };
        match event {
            Ok(event) => {
                RpcResponse::success(id.clone(), codec::encode_event(version, &event)).to_json()
            }
            Err(err) => {
                let (code, message) = rpc_error(version, &err);
                RpcResponse::error(id.clone(), codec::error_object(version, code, message))
                    .to_json()
            }
        }
    });
    Ok(stream::iter(first).chain(events).boxed())
}

/// One push-config call, ready to run.
struct PushCall {
    id: Id,
    version: ProtocolVersion,
    params: Value,
    user: String,
    agent: Arc<Agent>,
    runtime: Arc<Runtime>,
}

/// Runs a push-config method: set, get, list or delete one of a task's push configs.
async fn push_call(method: PushMethod, call: PushCall) -> RpcResponse {
    let (runtime, user, agent, version) = (&call.runtime, &call.user, &call.agent, call.version);
    let query = || codec::decode_push_query(version, &call.params);
    let outcome: Result<Result<Value, AgentError>, codec::DecodeError> = match method {
        PushMethod::Set => match codec::decode_push_set(version, &call.params) {
            Ok(config) => Ok(runtime
                .pushes()
                .set(user, agent, version, config)
                .await
                .map(|stored| codec::encode_task_push_config(version, &stored))),
            Err(err) => Err(err),
        },
        PushMethod::Get => match query() {
            Ok(query) => Ok(runtime
                .pushes()
                .get(user, agent, &query)
                .await
                .map(|config| codec::encode_task_push_config(version, &config))),
            Err(err) => Err(err),
        },
        PushMethod::List => match query() {
            Ok(query) => Ok(runtime
                .pushes()
                .list(user, agent, &query.task_id)
                .await
                .map(|configs| codec::encode_push_config_list(version, &configs))),
            Err(err) => Err(err),
        },
        PushMethod::Delete => match query() {
            Ok(query) => Ok(runtime
                .pushes()
                .delete(user, agent, &query)
                .await
                .map(|()| Value::Null)),
            Err(err) => Err(err),
        },
    };
    let (code, message) = match outcome {
        Ok(Ok(result)) => return RpcResponse::success(call.id, result),
        Ok(Err(err)) => rpc_error(version, &err),
        Err(err) => (ErrorCode::InvalidParams, err.to_string()),
    };
    RpcResponse::error(call.id, codec::error_object(version, code, message))
}
