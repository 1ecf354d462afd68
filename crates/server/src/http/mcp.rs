//! An agent's tools served over MCP's streamable HTTP transport at `/api/mcp/NAMESPACE/NAME`
//! (agents with `serve_mcp = true`; docs/gateway.md). Every `tools/call` is a call asked for
//! from outside (`agent::asked`): screened by the agent's rules, grants and policies, held for
//! whoever may approve it, and answered once it is settled. An agent with a
//! `permission_prompts` source also serves `approve`, the shape Claude Code's
//! `--permission-prompt-tool` asks with (`{tool_name, input, tool_use_id}`, answered with
//! `{"behavior": "allow", "updatedInput": …}` or `{"behavior": "deny", "message": …}`).
//!
//! It speaks the handshake revisions and the stateless 2026-07-28 one (`mcp_revision`: its
//! `server/discover`, the envelope in each request's `_meta`, the routing headers checked
//! against the body, `resultType` on results).
//!
//! The server keeps no state between requests: each POST carries one JSON-RPC message. Only a
//! handshake client that offered elicitation gets an `Mcp-Session-Id`, a signed record of what
//! it offered (`mcp_clients`): the questions an upstream server asks while that client's held
//! call runs go to it too, as `elicitation/create` requests on the call's event stream, and its
//! answers come back as POSTed responses (`asked::client`: the first answer, the client's or a
//! person's in the inbox, wins; the other copy is closed). A 2026-07-28 client has no back
//! channel: it says what it offers in each request's envelope, and a question is its call's
//! `input_required` answer, whose retry brings the answer and waits on the call again. A call
//! the gate allows at once runs
//! in its request, with no task and no inbox copy: its server's questions go to such a client
//! alone, and are declined for any other. A held
//! call is answered as an event stream, so the client's request stays open while a person
//! decides (progress notifications, or comments, keep it alive); a client that accepts only
//! JSON gets its answer when the call settles. A client that goes away, or sends
//! `notifications/cancelled` for its request, cancels its waiting call: it is audited as
//! canceled and never runs. A call repeated while its twin waits joins it (`mcp_calls`).

use std::sync::Arc;

use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Value};
use signoff_protocol::rest::{ApprovalRequestState, RequestStatus};

use super::mcp_calls::{Left, McpCalls, Request, Twin};
use super::mcp_clients::McpClients;

mod stream;
use super::mcp_revision::{self, Era};
use super::{origin, AppState, Person};
use crate::agent::approvals::{args_sha256, Actor, Channel, Command};
use crate::agent::asked::client::{ClientAsking, Offered};
use crate::agent::asked::AskedCall;
use crate::agent::tools::{error_result, text_result};
use crate::agent::{Agent, AgentError, Asking, Decider, Runtime};
use stream::{OpenAsks, Phase, Stream};

/// What the server tells a client it is for (`initialize`, `server/discover`).
const INSTRUCTIONS: &str =
    "Calls that need a person's sign-off wait until it is given, then answer.";

/// The transport's session header: set on `initialize` for a client that answers questions.
const SESSION_HEADER: &str = "mcp-session-id";

/// The key of the one question in a 2026-07-28 `input_required` answer, and of its answer in
/// the retry's `inputResponses`.
const INPUT_KEY: &str = "question";

/// The permission tool's name.
pub const APPROVE_TOOL: &str = "approve";

/// How often a held call's stream says it is still waiting (a client's idle timeout must not
/// end a request a person is still deciding).
const STILL_WAITING: Duration = Duration::from_secs(10);

/// JSON-RPC error codes this endpoint answers with.
const PARSE_ERROR: i64 = -32700;
const INVALID_REQUEST: i64 = -32600;
const METHOD_NOT_FOUND: i64 = -32601;
const INVALID_PARAMS: i64 = -32602;
const INTERNAL_ERROR: i64 = -32603;

/// `POST /api/mcp/{namespace}/{agent}`: one JSON-RPC message of an MCP client.
pub async fn post(
    State(state): State<AppState>,
    Path((namespace, name)): Path<(String, String)>,
    who: Result<Person, Response>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let agent = match served_agent(&state, &namespace, &name, &headers) {
        Ok(agent) => agent,
        Err((status, why)) => return (status, Json(json!({"error": why}))).into_response(),
    };
    let who = match who {
        Ok(who) => who,
        Err(refused) => return with_resource_metadata(refused, &state, &headers, &agent),
    };
    let message: Value = match serde_json::from_slice(&body) {
        Ok(message) => message,
        Err(err) => {
            let error = rpc_error(Value::Null, PARSE_ERROR, &format!("not JSON: {err}"));
            return (StatusCode::BAD_REQUEST, Json(error)).into_response();
        }
    };
    let Some(object) = message.as_object() else {
        let why = "one JSON-RPC message per request (batches are not part of this revision)";
        return (
            StatusCode::BAD_REQUEST,
            Json(rpc_error(Value::Null, INVALID_REQUEST, why)),
        )
            .into_response();
    };
    let method = object.get("method").and_then(Value::as_str).unwrap_or("");
    if !object.contains_key("method")
        && (object.contains_key("result") || object.contains_key("error"))
    {
        // A client's answer to a question put to it on a call's stream (`mcp_clients`).
        let id = object.get("id").unwrap_or(&Value::Null);
        let result = object.get("result").cloned();
        if !state.mcp_clients.answered(&who.0.subject, id, result) {
            tracing::debug!(id = %id, "an MCP client answered a request that no longer waits");
        }
        return StatusCode::ACCEPTED.into_response();
    }
    let Some(id) = object.get("id").cloned() else {
        // A notification (`notifications/initialized`, `notifications/cancelled`) or a
        // response, in either revision (neither gives them an envelope): accepted, nothing to
        // answer.
        if method == "notifications/cancelled" {
            let request_id = object
                .get("params")
                .and_then(|params| params.get("requestId"));
            if let Some(request_id) = request_id {
                let request = Request::new(&who.0.subject, &agent.key(), request_id);
                let (task_id, left) = state.mcp_calls.leave(&request);
                if let (Some(task_id), Left::Last) = (task_id, left) {
                    cancel_waiting(state.runtime.clone(), who.0.clone(), task_id, "canceled it");
                }
            }
        }
        return StatusCode::ACCEPTED.into_response();
    };
    let era = match mcp_revision::classify(&headers, object) {
        Ok(era) => era,
        Err(refused) => {
            let mut error = rpc_error(id, refused.code, &refused.message);
            if let Some(data) = refused.data {
                error["error"]["data"] = data;
            }
            let status = Era::Stateless.error_status(refused.code);
            return (status, Json(error)).into_response();
        }
    };
    let params = object.get("params").cloned().unwrap_or(Value::Null);
    if (era, method) == (Era::Handshake, "initialize") {
        return initialized(&state, &who.0.subject, id, &params).await;
    }
    // A 2026-07-28 request says what it offers in its envelope; a handshake client said it in
    // `initialize`, and its session carries it.
    let offered = match era {
        Era::Stateless => Offered::from_capabilities(mcp_revision::client_capabilities(&params)),
        Era::Handshake => match session_offered(&state, &who.0.subject, &headers).await {
            Ok(offered) => offered,
            Err(refused) => return refused,
        },
    };
    let answer = match (era, method) {
        (Era::Handshake, "ping") => Ok(json!({})),
        (Era::Stateless, "server/discover") => Ok(mcp_revision::discover(INSTRUCTIONS)),
        (Era::Handshake, "server/discover") => Err((
            INVALID_PARAMS,
            "server/discover is of the 2026-07-28 revision: its params._meta must carry the \
             protocol version and the client's capabilities"
                .to_owned(),
        )),
        (_, "tools/list") => Ok(era.listing(json!({"tools": tool_list(&agent)}))),
        (_, "tools/call") => {
            let wants_stream = accepts_stream(&headers);
            let asked = Ask {
                who: who.0,
                agent,
                id,
                params,
                era,
                offered,
            };
            return call(&state, asked, wants_stream).await;
        }
        (_, "") => Err((INVALID_REQUEST, "a request needs a method".to_owned())),
        (_, other) => Err((
            METHOD_NOT_FOUND,
            format!("no method {other} on this server"),
        )),
    };
    match answer {
        Ok(result) => Json(json!({"jsonrpc": "2.0", "id": id, "result": result})).into_response(),
        Err((code, message)) => {
            (era.error_status(code), Json(rpc_error(id, code, &message))).into_response()
        }
    }
}

/// `GET /.well-known/oauth-protected-resource/api/mcp/{namespace}/{agent}`: the MCP
/// authorization spec's protected-resource metadata (RFC 9728), naming the OpenID provider whose
/// JWTs the endpoint takes when `--auth oidc` is on.
pub async fn resource_metadata(
    State(state): State<AppState>,
    Path((namespace, name)): Path<(String, String)>,
    headers: HeaderMap,
) -> Response {
    let agent = match served_agent(&state, &namespace, &name, &headers) {
        Ok(agent) => agent,
        Err((status, why)) => return (status, Json(json!({"error": why}))).into_response(),
    };
    let mut metadata = json!({
        "resource": resource_url(&state, &headers, &agent),
        "bearer_methods_supported": ["header"],
        "resource_name": format!("Signoff: {}", agent.key()),
    });
    if let crate::http::auth::Auth::Oidc(oidc) = state.auth.as_ref() {
        metadata["authorization_servers"] = json!([oidc.issuer()]);
    }
    Json(metadata).into_response()
}

/// The endpoint's own URL, as its clients reach it.
fn resource_url(state: &AppState, headers: &HeaderMap, agent: &Agent) -> String {
    let base = match &state.public_url {
        Some(url) => url.trim_end_matches('/').to_owned(),
        None => origin(headers, state.trust_proxy),
    };
    format!("{base}/api/mcp/{}/{}", agent.namespace, agent.name)
}

/// A refused sign-in, with the `WWW-Authenticate` that points an MCP client at the endpoint's
/// protected-resource metadata (the MCP authorization spec).
fn with_resource_metadata(
    mut refused: Response,
    state: &AppState,
    headers: &HeaderMap,
    agent: &Agent,
) -> Response {
    if refused.status() == StatusCode::UNAUTHORIZED {
        let url = resource_url(state, headers, agent).replacen(
            "/api/mcp/",
            "/.well-known/oauth-protected-resource/api/mcp/",
            1,
        );
        if let Ok(value) =
            header::HeaderValue::from_str(&format!("Bearer resource_metadata=\"{url}\""))
        {
            refused
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, value);
        }
    }
    refused
}

/// `GET` and `DELETE`: this server opens no stream of its own (a client's questions come on its
/// call's stream), and a session is a signed record, not state to delete.
pub async fn not_offered() -> Response {
    let body =
        json!({"error": "this MCP endpoint is stateless: POST one JSON-RPC message per request"});
    (
        StatusCode::METHOD_NOT_ALLOWED,
        [(header::ALLOW, "POST")],
        Json(body),
    )
        .into_response()
}

/// The agent served at this path, if it is served over MCP and the request may reach it (an
/// `Origin` must be this server's own: the transport's defence against DNS rebinding); else the
/// status and error to answer with.
fn served_agent(
    state: &AppState,
    namespace: &str,
    name: &str,
    headers: &HeaderMap,
) -> Result<Arc<Agent>, (StatusCode, String)> {
    if let Some(from) = headers.get(header::ORIGIN) {
        let own = origin(headers, state.trust_proxy);
        let public = state
            .public_url
            .as_deref()
            .map(|url| url.trim_end_matches('/'));
        let from = String::from_utf8_lossy(from.as_bytes());
        if from != own && Some(from.as_ref()) != public {
            let why = format!("requests from the origin {from} are refused");
            return Err((StatusCode::FORBIDDEN, why));
        }
    }
    match state.runtime.agent(namespace, name) {
        Some(agent) if agent.serve_mcp => Ok(agent),
        Some(_) | None => Err((
            StatusCode::NOT_FOUND,
            format!(
                "no agent {namespace}/{name} is served over MCP (set serve_mcp = true in the agents file)"
            ),
        )),
    }
}

/// `initialize`: its answer, with a session id (`mcp_clients`) for a client that offered
/// elicitation, so its calls later say what it answers.
async fn initialized(state: &AppState, caller: &str, id: Value, params: &Value) -> Response {
    let body = Json(json!({"jsonrpc": "2.0", "id": id, "result": initialize(params)}));
    let offered = Offered::from_capabilities(params.get("capabilities").unwrap_or(&Value::Null));
    if !offered.any() {
        return body.into_response();
    }
    let runtime = &state.runtime;
    match state
        .mcp_clients
        .open_session(runtime, caller, offered)
        .await
    {
        Ok(session) => ([(SESSION_HEADER, session)], body).into_response(),
        Err(why) => {
            // The client is served without: its servers' questions go to the inbox alone.
            tracing::warn!(error = %why, "an MCP client's session could not be made");
            body.into_response()
        }
    }
}

/// What the request's client answers itself: its session's elicitation (handshake revisions;
/// none without a session). A session id that is not ours, or not the caller's, is `404`, as
/// the transport answers an unknown session (the client then initializes again).
async fn session_offered(
    state: &AppState,
    caller: &str,
    headers: &HeaderMap,
) -> Result<Offered, Response> {
    let session = headers
        .get(SESSION_HEADER)
        .and_then(|value| value.to_str().ok());
    let Some(session) = session else {
        return Ok(Offered::default());
    };
    match state
        .mcp_clients
        .offered(&state.runtime, caller, session)
        .await
    {
        Ok(Some(offered)) => Ok(offered),
        Ok(None) => Err((
            StatusCode::NOT_FOUND,
            Json(rpc_error(
                Value::Null,
                INVALID_REQUEST,
                "no such session here: initialize again",
            )),
        )
            .into_response()),
        Err(why) => {
            tracing::warn!(error = %why, "an MCP client's session could not be read");
            Ok(Offered::default())
        }
    }
}

/// The answer to `initialize`: the client's revision if this server speaks it, else the newest
/// handshake revision.
fn initialize(params: &Value) -> Value {
    let asked = params.get("protocolVersion").and_then(Value::as_str);
    let revision = asked
        .filter(|asked| mcp_revision::HANDSHAKE.contains(asked))
        .unwrap_or(mcp_revision::HANDSHAKE[0]);
    json!({
        "protocolVersion": revision,
        "capabilities": {"tools": {"listChanged": false}},
        "serverInfo": {"name": "signoff", "version": env!("CARGO_PKG_VERSION")},
        "instructions": INSTRUCTIONS,
    })
}

/// The agent's tools as its model sees them, and `approve` when it answers permission prompts.
fn tool_list(agent: &Agent) -> Vec<Value> {
    let mut tools: Vec<Value> = agent
        .tools
        .specs()
        .into_iter()
        .map(|spec| {
            json!({"name": spec.name, "description": spec.description, "inputSchema": spec.input_schema})
        })
        .collect();
    if agent.tools.answers_any_name() {
        tools.push(json!({
            "name": APPROVE_TOOL,
            "description": "Asks Signoff whether a tool call may run; a person or a rule decides.",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "tool_name": {"type": "string"},
                    "input": {"type": "object"},
                    "tool_use_id": {"type": "string"}
                },
                "required": ["tool_name", "input"]
            }
        }));
    }
    tools
}

/// What a `tools/call` asks for, and how its answer is told.
enum Asked {
    /// A permission prompt: the answer is the verdict, in Claude Code's shape.
    Permission(AskedCall),
    /// A call of the agent's own tool: the answer is the tool's result.
    Tool(AskedCall),
}

impl Asked {
    fn read(agent: &Agent, params: &Value) -> Result<Asked, String> {
        let name = params.get("name").and_then(Value::as_str).unwrap_or("");
        let arguments = params.get("arguments").cloned().unwrap_or(json!({}));
        if name == APPROVE_TOOL && agent.tools.answers_any_name() {
            let tool = arguments.get("tool_name").and_then(Value::as_str);
            let input = arguments.get("input").cloned().unwrap_or(json!({}));
            let asker_id = arguments
                .get("tool_use_id")
                .and_then(Value::as_str)
                .map(str::to_owned);
            let tool = tool.ok_or("approve: tool_name is missing")?;
            return AskedCall::checked(tool, input, asker_id)
                .map(Asked::Permission)
                .map_err(|why| format!("approve: {why}"));
        }
        if let Some(why) = agent.tools.held_back(name) {
            return Err(why);
        }
        if !agent.tools.lists(name) {
            return Err(format!("no tool named {name:?} on this server"));
        }
        AskedCall::checked(name, arguments, None).map(Asked::Tool)
    }

    fn call(&self) -> &AskedCall {
        match self {
            Asked::Permission(call) | Asked::Tool(call) => call,
        }
    }

    /// The `CallToolResult` the client gets for a settled call.
    fn answer(&self, state: &ApprovalRequestState) -> Value {
        let reason = state.reason.clone().unwrap_or_default();
        match (self, state.status) {
            (Asked::Permission(_), RequestStatus::Allowed) => {
                let input = state.arguments.clone().unwrap_or(json!({}));
                text_result(json!({"behavior": "allow", "updatedInput": input}).to_string())
            }
            (
                Asked::Permission(_),
                RequestStatus::Rejected | RequestStatus::Ended | RequestStatus::Waiting,
            ) => text_result(json!({"behavior": "deny", "message": reason}).to_string()),
            (Asked::Tool(_), RequestStatus::Allowed) => {
                state.result.clone().unwrap_or_else(|| text_result(""))
            }
            (Asked::Tool(call), RequestStatus::Rejected) => {
                error_result(format!("{} was rejected: {reason}", call.name))
            }
            (Asked::Tool(call), RequestStatus::Ended | RequestStatus::Waiting) => {
                error_result(format!("{} did not run: {reason}", call.name))
            }
        }
    }
}

/// `tools/call`: asks for the call, then answers once it is settled, as an event stream when
/// the client accepts one. A client that answers questions itself is also asked what the
/// call's upstream server asks (`asked::client`): on that stream in a handshake revision; in
/// 2026-07-28, by answering the call `input_required`, whose retry (with `requestState`)
/// brings the answer and waits on the same call again.
async fn call(state: &AppState, ask: Ask, wants_stream: bool) -> Response {
    let Ask {
        who,
        agent,
        id,
        params,
        era,
        offered,
    } = ask;
    let runtime = state.runtime.clone();
    let refuse = |id: Value, code: i64, why: &str| {
        (era.error_status(code), Json(rpc_error(id, code, why))).into_response()
    };
    let asked = match Asked::read(&agent, &params) {
        Ok(asked) => asked,
        Err(why) => return refuse(id, INVALID_PARAMS, &why),
    };
    let (call, agent_key) = (asked.call(), agent.key());
    let resumed = match resume(state, &who, call, era, &params).await {
        Ok(resumed) => resumed,
        Err(why) => return refuse(id, INVALID_PARAMS, &why),
    };
    // A call repeated while its twin waits joins it: one batch, one run, both answered. Only
    // while some call waits can there be a twin (hashing the arguments is a good part of a
    // call that needs nobody).
    let twin_of = || Twin::new(&who.subject, &agent_key, &call.name, &call.args);
    let twin = state.mcp_calls.any_waiting().then(twin_of);
    let joined = twin.as_ref().and_then(|twin| state.mcp_calls.twin_of(twin));
    // A joined twin's questions go to the request that opened it.
    let asks_client = offered.any()
        && (wants_stream || era == Era::Stateless)
        && (resumed.is_some() || joined.is_none());
    let (client, questions) = if asks_client {
        let (client, questions) = ClientAsking::new(who.clone(), offered);
        (Some(client), Some(questions))
    } else {
        (None, None)
    };
    let progress = params
        .get("_meta")
        .and_then(|meta| meta.get("progressToken"))
        .cloned();
    let asks = OpenAsks {
        clients: state.mcp_clients.clone(),
        caller: who.subject.clone(),
        open: Vec::new(),
    };
    let task_id = if let Some(resumed) = resumed {
        // The client is back for its call's questions before its answer lets the call go on.
        if let Some(client) = client {
            runtime.asked().client_back(&resumed.task, client);
        }
        resumed.deliver(&state.mcp_clients, &who.subject)
    } else if let Some(task_id) = joined {
        task_id
    } else {
        let title = match &asked {
            Asked::Permission(call) => format!("Permission to run {}", call.gist()),
            Asked::Tool(call) => format!("MCP client calls {}", call.gist()),
        };
        let asking = runtime.asked();
        match asking
            .ask(&who, &agent, call.clone(), &title, client.clone())
            .await
        {
            Ok(Asking::Opened(accepted)) => accepted.task_id,
            Ok(Asking::Settled(settled)) => {
                return Json(answered(id, era, &asked, Ok(settled))).into_response()
            }
            // The gate needed nobody: the call runs in this request, with no task to wait
            // on. Its server's questions go to a handshake client that answers them, on the
            // call's event stream (a 2026-07-28 retry could not find a call that runs in a
            // request that ended).
            Ok(Asking::Allowed(allowed)) => match client.filter(|_| era == Era::Handshake) {
                Some(client) => {
                    let running = Phase::Running(Box::pin(allowed.run(Some(client))));
                    let stream = Stream::new(running, asked, id, era, progress, questions, asks);
                    return event_stream(stream);
                }
                None => {
                    let settled = allowed.run(None).await;
                    return Json(answered(id, era, &asked, Ok(settled))).into_response();
                }
            },
            Err(err) => return refuse(id, code_of(&err), &err.to_string()),
        }
    };
    let twin = twin.unwrap_or_else(twin_of);
    let request = Request::new(&who.subject, &agent_key, &id);
    state.mcp_calls.enter(request.clone(), twin, &task_id);
    let waiting = Phase::Waiting(Waiting {
        runtime,
        calls: state.mcp_calls.clone(),
        request,
        who,
        task_id,
        settled: false,
        asks_client,
    });
    let mut stream = Stream::new(waiting, asked, id, era, progress, questions, asks);
    if wants_stream {
        return event_stream(stream);
    }
    // The handler's future is dropped if the client goes away: `Waiting` cancels then.
    Json(stream.last_message().await).into_response()
}

/// A 2026-07-28 retry's resumed call: the task it waits on, and the answer it brings to the
/// question this server put to the client.
struct Resumed {
    task: String,
    question: Value,
    answer: Option<Value>,
}

impl Resumed {
    /// Gives the answer to its question; the task to wait on. An answer that reaches no
    /// waiting question (answered in Signoff meanwhile, or put on another replica) is dropped,
    /// and the call is waited on all the same.
    fn deliver(self, clients: &McpClients, caller: &str) -> String {
        if let Some(answer) = self.answer {
            if !clients.answered(caller, &self.question, Some(answer)) {
                tracing::info!(task = %self.task, "a 2026-07-28 client's answer reached no waiting question");
            }
        }
        self.task
    }
}

/// The call a 2026-07-28 retry resumes (its `requestState`, given with a question this server
/// put to the client, and its answer in `inputResponses`); `None` for a call that resumes
/// nothing.
async fn resume(
    state: &AppState,
    who: &Decider,
    call: &AskedCall,
    era: Era,
    params: &Value,
) -> Result<Option<Resumed>, String> {
    let Some(request_state) = params.get("requestState").filter(|_| era == Era::Stateless) else {
        return Ok(None);
    };
    let refused = || "requestState is not one this server gave you for this call".to_owned();
    let request_state = request_state.as_str().ok_or_else(refused)?;
    let resume = state
        .mcp_clients
        .open_resume(&state.runtime, &who.subject, request_state)
        .await?
        .filter(|resume| resume.tool == call.name && resume.args_sha256 == args_sha256(&call.args))
        .ok_or_else(refused)?;
    Ok(Some(Resumed {
        task: resume.task,
        question: Value::String(resume.question),
        answer: params
            .get("inputResponses")
            .and_then(|responses| responses.get(INPUT_KEY))
            .cloned(),
    }))
}

/// The call's answer as an event stream: signs of life and questions while it waits, then the
/// answer.
fn event_stream(stream: Stream) -> Response {
    let events = futures_util::stream::unfold(Some(stream), |stream| async move {
        let mut stream = stream?;
        let (event, done) = stream.next_event().await;
        Some((
            Ok::<_, std::convert::Infallible>(event.sse()),
            (!done).then_some(stream),
        ))
    });
    Response::builder()
        .header(header::CONTENT_TYPE, "text/event-stream")
        .header(header::CACHE_CONTROL, "no-cache")
        .body(Body::from_stream(events))
        .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}

/// A `tools/call` request: who calls which agent, and in which revision.
struct Ask {
    who: Decider,
    agent: Arc<Agent>,
    id: Value,
    params: Value,
    era: Era,
    /// The questions the client answers itself (its session's, or its 2026-07-28 envelope's,
    /// elicitation capability).
    offered: Offered,
}

/// An asked call its client waits for: dropped before it settled (the client went away), it
/// cancels the task, so the call never runs, unless a twin's request still waits on it.
struct Waiting {
    runtime: Arc<Runtime>,
    calls: Arc<McpCalls>,
    request: Request,
    who: Decider,
    task_id: String,
    settled: bool,
    /// Whether its client answers the call's questions (and must be let go of).
    asks_client: bool,
}

impl Waiting {
    /// Where the call stands after waiting up to `wait` for it to settle.
    async fn settle(&mut self, wait: Duration) -> Result<ApprovalRequestState, AgentError> {
        let state = self
            .runtime
            .asked()
            .state(&self.who, &self.task_id, wait)
            .await?;
        self.settled = state.status != RequestStatus::Waiting;
        Ok(state)
    }
}

impl Drop for Waiting {
    fn drop(&mut self) {
        if self.asks_client {
            self.runtime.asked().client_left(&self.task_id);
        }
        let (_, left) = self.calls.leave(&self.request);
        if self.settled || left != Left::Last {
            return;
        }
        let (runtime, who) = (self.runtime.clone(), self.who.clone());
        cancel_waiting(runtime, who, self.task_id.clone(), "went away");
    }
}

/// Cancels the waiting call `task_id` whose last client `why` (went away, canceled it): it is
/// audited as canceled and never runs; one that ended meanwhile is left as it is.
fn cancel_waiting(runtime: Arc<Runtime>, who: Decider, task_id: String, why: &'static str) {
    let actor = Actor {
        channel: Channel::Cancel,
        auth: who.auth,
        decider: who,
    };
    tokio::spawn(async move {
        match runtime.apply(&task_id, &actor, Command::Cancel).await {
            Ok(_) => {
                tracing::info!(task = %task_id, "the MCP client {why}; its waiting call was canceled")
            }
            // It ended meanwhile (decided, run, or canceled by someone else).
            Err(AgentError::NotCancelable { .. }) => {}
            Err(err) => {
                tracing::warn!(task = %task_id, error = %err, "could not cancel the call of an MCP client that {why}")
            }
        }
    });
}

/// The JSON-RPC response to a `tools/call`.
fn answered(
    id: Value,
    era: Era,
    asked: &Asked,
    answer: Result<ApprovalRequestState, AgentError>,
) -> Value {
    match answer {
        Ok(state) => {
            json!({"jsonrpc": "2.0", "id": id, "result": era.result(asked.answer(&state))})
        }
        Err(err) => rpc_error(id, code_of(&err), &err.to_string()),
    }
}

fn accepts_stream(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .any(|value| value.contains("text/event-stream"))
}

fn rpc_error(id: Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

/// The JSON-RPC code of a runtime error: the caller's mistake, or ours.
fn code_of(err: &AgentError) -> i64 {
    if matches!(
        err,
        AgentError::InvalidParams(_) | AgentError::TaskNotFound(_)
    ) {
        INVALID_PARAMS
    } else {
        INTERNAL_ERROR
    }
}
