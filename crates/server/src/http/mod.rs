//! The HTTP edge: routes, users, errors. The only layer that knows axum; it turns requests into
//! runtime calls and runtime results into JSON-RPC, SSE and REST answers.

mod a2a;
mod approvals;
mod audit;
pub mod auth;
mod card;
mod feedback;
mod host;
mod json_body;
mod json_errors;
mod links;
mod mcp;
mod mcp_calls;
mod mcp_clients;
mod mcp_revision;
mod notifications;
mod ops;
pub mod relay;
mod rest;
mod sealed;
pub mod serve;
mod shares;
mod slack;
mod sse;
mod tools;
mod ui;
mod web_push;

pub use ui::source as ui_source;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::json;
use tower_http::catch_panic::CatchPanicLayer;

use crate::agent::{AgentError, Decider, Runtime, ShareGrant};

pub use auth::{Auth, Caller, Identity};

/// The user id in `--auth none` mode.
pub const LOCAL_USER: &str = "local";

/// What every handler reads.
#[derive(Clone)]
pub struct AppState {
    pub runtime: Arc<Runtime>,
    pub auth: Arc<Auth>,
    /// A built UI's folder (trunk's `dist/`) to serve instead of the copy inside the binary.
    pub ui_dir: Option<PathBuf>,
    /// Requests with larger bodies get HTTP 413 before any handler runs.
    pub body_limit: usize,
    /// Agents-file entries served by a remote A2A agent, reached through `relay`.
    pub remotes: Arc<relay::Remotes>,
    /// Whether `X-Forwarded-Host` and `X-Forwarded-Proto` come from a proxy we trust
    /// (`--trust-proxy`); otherwise anyone could choose the URLs our agent cards advertise.
    pub trust_proxy: bool,
    /// Where people reach this server (`--public-url`), for the links it hands out; none: the
    /// origin the request came to.
    pub public_url: Option<String>,
    /// How long a decision link works (`--decision-link-ttl`).
    pub decision_link_ttl: Duration,
    /// An SSE stream that sends no event for this long is ended with an error event
    /// (`--stream-idle-timeout`).
    pub stream_idle_timeout: Duration,
    /// How long an approvals stream stays quiet before a heartbeat comment
    /// (`--approvals-heartbeat`).
    pub approvals_heartbeat: Duration,
    /// How many approvals streams one user may have open at once
    /// (`--approvals-streams-per-user`); one more gets 429.
    pub approvals_streams_per_user: usize,
    /// The agent (`namespace/name`) whose card is at the origin's
    /// `/.well-known/agent-card.json`; none: the first agent.
    pub origin_agent: Option<String>,
    /// When the agents' cards last changed: the start of this process, which read the agents
    /// file (to the second, as HTTP dates go). Their `Last-Modified`.
    pub cards_since: chrono::DateTime<chrono::Utc>,
    /// Answer only requests for a loopback `Host` (`--auth none` on a loopback address; see
    /// `host`).
    pub loopback_only: bool,
    /// The groups whose members are operators (`--operator-groups`): they read the failed
    /// notifications and approve changed tool definitions.
    pub operator_groups: Arc<Vec<String>>,
    /// The MCP endpoint's waiting calls on this replica (their cancels and twins).
    pub mcp_calls: Arc<mcp_calls::McpCalls>,
    /// The MCP endpoint's clients that answer questions themselves (their sessions, the
    /// requests put to them).
    pub mcp_clients: Arc<mcp_clients::McpClients>,
}

impl AppState {
    /// Whether `caller` is an operator: with `--auth none` the one local user is; otherwise a
    /// member of one of the `--operator-groups`.
    pub fn is_operator(&self, caller: &Caller) -> bool {
        matches!(*self.auth, Auth::None)
            || caller
                .identity
                .groups
                .iter()
                .any(|group| self.operator_groups.contains(group))
    }
}

/// `scheme://host` as the caller reached us, for absolute URLs in agent cards. The forwarded
/// headers count only behind a trusted proxy.
pub fn origin(headers: &HeaderMap, trust_proxy: bool) -> String {
    let forwarded = |name: &str| {
        trust_proxy
            .then(|| headers.get(name))
            .flatten()
            .and_then(|value| value.to_str().ok())
            .filter(|value| !value.is_empty())
    };
    let host = forwarded("x-forwarded-host")
        .or_else(|| {
            headers
                .get(header::HOST)
                .and_then(|value| value.to_str().ok())
        })
        .unwrap_or("localhost");
    let scheme = match forwarded("x-forwarded-proto") {
        Some("https") => "https",
        Some(_) | None => "http",
    };
    format!("{scheme}://{host}")
}

/// Answers 413 as soon as a request declares a body over the limit, before reading any of it
/// (a client that declares 10 GB and sends one byte must not hold a connection for minutes).
async fn refuse_declared_oversize(
    axum::extract::State(limit): axum::extract::State<usize>,
    request: Request,
    next: axum::middleware::Next,
) -> Response {
    let declared = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.trim().parse::<u64>().ok());
    if declared.is_some_and(|length| length > limit as u64) {
        let body = json!({"error": format!("request body over the limit of {limit} bytes")});
        return (StatusCode::PAYLOAD_TOO_LARGE, Json(body)).into_response();
    }
    next.run(request).await
}

/// Tells the browser to send no `Referer` from anything this server answers: a share page's
/// address holds its token (`?share=`), and neither it nor a chat's address may reach the site
/// of a link the person follows. Browsers' default policy already trims a cross-site `Referer`
/// to the origin, but that is each browser's choice; this makes it ours, on every answer.
async fn no_referrer(request: Request, next: axum::middleware::Next) -> Response {
    let mut response = next.run(request).await;
    response.headers_mut().insert(
        header::REFERRER_POLICY,
        header::HeaderValue::from_static("no-referrer"),
    );
    response
}

/// The caller's subject (`auth`: whichever `--auth` mode names it), and how it was
/// authenticated (`None`: a share link, which reads as the chat's owner and decides nothing).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct User(pub String, pub Option<signoff_protocol::rest::DeciderAuth>);

impl FromRequestParts<AppState> for User {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Response> {
        // A share request that `shares::guard` let through reads as the chat's owner.
        if let Some(grant) = parts.extensions.get::<ShareGrant>() {
            return Ok(User(grant.owner.clone(), None));
        }
        let caller = auth::caller(parts, state)
            .await
            .map_err(IntoResponse::into_response)?;
        Ok(User(
            caller.identity.subject,
            Some(caller.via.decider_auth()),
        ))
    }
}

/// The caller as a decision sees them: their subject, email and groups (what the agents file's
/// `approvers` may name), and how they were authenticated (`None`: a share link), which the
/// decider carries too (`Decider::auth`), into the audit of a decision they make.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Person(pub Decider, pub Option<signoff_protocol::rest::DeciderAuth>);

impl From<&auth::Identity> for Decider {
    fn from(identity: &auth::Identity) -> Decider {
        Decider {
            subject: identity.subject.clone(),
            email: identity.email.clone(),
            groups: identity.groups.clone(),
            auth: None,
        }
    }
}

impl FromRequestParts<AppState> for Person {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Response> {
        // A share request that `shares::guard` let through reads as the chat's owner.
        if let Some(grant) = parts.extensions.get::<ShareGrant>() {
            return Ok(Person(Decider::subject(grant.owner.clone()), None));
        }
        let caller = auth::caller(parts, state)
            .await
            .map_err(IntoResponse::into_response)?;
        let auth = Some(caller.via.decider_auth());
        let decider = Decider {
            auth,
            ..Decider::from(&caller.identity)
        };
        Ok(Person(decider, auth))
    }
}

/// REST errors: a status and a short message; internals are logged, never sent.
#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    #[error("missing or unknown bearer token")]
    Unauthorized,
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    Forbidden(String),
    #[error("{0}")]
    Conflict(String),
    #[error("{0}")]
    BadRequest(String),
    /// The caller holds as many of something as one caller may (open streams).
    #[error("{0}")]
    TooManyRequests(String),
    /// A remote agent did not take what was forwarded to it.
    #[error("{0}")]
    BadGateway(String),
    #[error("internal error")]
    Internal,
}

impl HttpError {
    /// The same answer (its status), with `text` for words.
    pub fn reworded(self, text: String) -> HttpError {
        match self {
            HttpError::NotFound(_) => HttpError::NotFound(text),
            HttpError::Forbidden(_) => HttpError::Forbidden(text),
            HttpError::Conflict(_) => HttpError::Conflict(text),
            HttpError::BadRequest(_) => HttpError::BadRequest(text),
            HttpError::TooManyRequests(_) => HttpError::TooManyRequests(text),
            HttpError::BadGateway(_) => HttpError::BadGateway(text),
            HttpError::Unauthorized | HttpError::Internal => self,
        }
    }
}

impl From<AgentError> for HttpError {
    fn from(err: AgentError) -> Self {
        match err {
            AgentError::AgentNotFound(_)
            | AgentError::TaskNotFound(_)
            | AgentError::SessionNotFound(_)
            | AgentError::GrantNotFound(_)
            | AgentError::ShareNotFound(_)
            | AgentError::PushNotFound(_)
            | AgentError::TaskDeleted(_) => HttpError::NotFound(err.to_string()),
            AgentError::Forbidden(_) | AgentError::NotEligible(_) => {
                HttpError::Forbidden(err.to_string())
            }
            AgentError::NotPaused(_)
            | AgentError::AlreadyApproved(_)
            | AgentError::Conflict(_)
            | AgentError::Terminal(_)
            | AgentError::NotCancelable { .. }
            | AgentError::ChatInUse(_) => HttpError::Conflict(err.to_string()),
            AgentError::InvalidParams(_) | AgentError::Decision(_) => {
                HttpError::BadRequest(err.to_string())
            }
            AgentError::Remote(message) => HttpError::BadGateway(message),
            AgentError::ShuttingDown
            | AgentError::Store(_)
            | AgentError::Internal(_)
            | AgentError::Receipts(_) => {
                tracing::error!(error = %err, "request failed");
                HttpError::Internal
            }
        }
    }
}

impl IntoResponse for HttpError {
    fn into_response(self) -> Response {
        let status = match self {
            HttpError::Unauthorized => StatusCode::UNAUTHORIZED,
            HttpError::NotFound(_) => StatusCode::NOT_FOUND,
            HttpError::Forbidden(_) => StatusCode::FORBIDDEN,
            HttpError::Conflict(_) => StatusCode::CONFLICT,
            HttpError::BadRequest(_) => StatusCode::BAD_REQUEST,
            HttpError::TooManyRequests(_) => StatusCode::TOO_MANY_REQUESTS,
            HttpError::BadGateway(_) => StatusCode::BAD_GATEWAY,
            HttpError::Internal => StatusCode::INTERNAL_SERVER_ERROR,
        };
        let mut response = (status, Json(json!({"error": self.to_string()}))).into_response();
        if status == StatusCode::UNAUTHORIZED {
            // RFC 6750 §3: a 401 names the scheme the client should use.
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                header::HeaderValue::from_static("Bearer"),
            );
        }
        response
    }
}

/// A panic in a handler answers a JSON-RPC internal error (HTTP 200, `id: null`) and is logged;
/// the process goes on.
fn panic_response(panic: Box<dyn std::any::Any + Send + 'static>) -> Response {
    let detail = panic
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| panic.downcast_ref::<&str>().copied())
        .unwrap_or("(no message)");
    tracing::error!(panic = detail, "a handler panicked");
    Json(json!({"jsonrpc": "2.0", "id": null,
                "error": {"code": -32603, "message": "internal error"}}))
    .into_response()
}

async fn api_not_found(request: Request) -> HttpError {
    HttpError::NotFound(format!("no such endpoint: {}", request.uri().path()))
}

/// Every route of the server.
/// gzip for the JSON reads that grow with use (a stored chat's history, the inbox, the lists),
/// for browsers that ask for it: a chat of 200 messages is about 150 KB of JSON, most of a
/// second on a slow link, and a tenth of that gzipped. Only these reads: streams, decisions
/// and the UI's files (precompressed, `ui.rs`) are sent as they are.
fn compressed() -> tower_http::compression::CompressionLayer {
    tower_http::compression::CompressionLayer::new()
}

pub fn router(state: AppState) -> Router {
    let a2a_routes = Router::new()
        .route("/api/a2a/{namespace}/{agent}", post(relay::a2a))
        .route("/api/a2a/{namespace}/{agent}/", post(relay::a2a))
        .route(
            "/api/a2a/{namespace}/{agent}/.well-known/agent-card.json",
            get(relay::agent_card),
        )
        .route(
            "/.well-known/agent-card.json",
            get(card::default_agent_card),
        )
        .route("/.well-known/jwks.json", get(card::jwks))
        .route("/healthz", get(ops::healthz))
        .route("/readyz", get(ops::readyz))
        .route("/metrics", get(ops::metrics))
        .route("/api/agents", get(relay::agents).layer(compressed()))
        .route("/api/me", get(rest::me))
        .route("/api/sessions", get(rest::sessions).layer(compressed()))
        .route(
            "/api/sessions/{id}",
            get(relay::session)
                .layer(compressed())
                .delete(rest::delete_session),
        )
        .route(
            "/api/sessions/{id}/shares",
            get(shares::list).post(shares::create),
        )
        .route(
            "/api/sessions/{id}/shares/{share_id}",
            axum::routing::delete(shares::revoke),
        )
        .route("/api/feedback", get(feedback::list).post(feedback::give))
        .route("/api/approvals", get(rest::approvals).layer(compressed()))
        .route("/api/approvals/stream", get(approvals::stream))
        .route("/api/approvals/requests", post(rest::ask))
        .route("/api/approvals/requests/{task_id}", get(rest::asked))
        .route(
            "/api/mcp/{namespace}/{agent}",
            post(mcp::post)
                .get(mcp::not_offered)
                .delete(mcp::not_offered),
        )
        .route(
            "/.well-known/oauth-protected-resource/api/mcp/{namespace}/{agent}",
            get(mcp::resource_metadata),
        )
        .route("/api/approvals/{task_id}", post(relay::decide))
        .route("/api/approvals/{task_id}/handover", post(rest::handover))
        .route("/api/approvals/{task_id}/extend", post(rest::extend))
        .route("/api/approvals/{task_id}/links", post(links::create))
        .route("/decide/{token}", get(links::page).post(links::confirm))
        .route("/api/policies", get(rest::grants).post(rest::create_grant))
        .route(
            "/api/policies/{id}",
            axum::routing::delete(rest::revoke_grant),
        )
        .route("/api/notifications/failed", get(notifications::failed))
        .route("/api/slack/interactions", post(slack::interactions))
        .route("/api/push/vapid", get(web_push::vapid))
        .route("/api/push/approvals/{task_id}", post(web_push::decide))
        .route(
            "/api/push/subscriptions",
            get(web_push::list).post(web_push::enrol),
        )
        .route(
            "/api/push/subscriptions/{id}",
            axum::routing::delete(web_push::revoke),
        )
        .route("/api/tools/changes", get(tools::changes))
        .route("/api/audit/keys", get(audit::keys))
        .route("/api/audit/receipts", get(audit::export))
        .route("/api/tools/changes/approve", post(tools::approve))
        .route("/api/{*rest}", axum::routing::any(api_not_found))
        .route("/auth/login", get(auth::oidc::login))
        .route("/auth/callback", get(auth::oidc::callback))
        .route("/auth/logout", post(auth::oidc::logout))
        .route("/auth/signed-out", get(auth::oidc::signed_out));
    let router = a2a_routes.merge(ui::routes(state.ui_dir.as_deref()));
    let limit = state.body_limit;
    router
        .layer(axum::extract::DefaultBodyLimit::max(limit))
        .layer(axum::middleware::from_fn(json_body::refuse_non_json_body))
        .layer(axum::middleware::from_fn_with_state(
            limit,
            refuse_declared_oversize,
        ))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            shares::guard,
        ))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            auth::oidc::require_sign_in,
        ))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            host::refuse_foreign_host,
        ))
        .layer(axum::middleware::from_fn(json_errors::json_errors))
        .layer(CatchPanicLayer::custom(panic_response))
        .layer(axum::middleware::from_fn(no_referrer))
        .with_state(state)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_panicking_handler_answers_internal_error_and_the_server_lives_on() {
        async fn boom() -> &'static str {
            panic!("a bug in a handler")
        }
        async fn fine() -> &'static str {
            "ok"
        }
        let app = Router::new()
            .route("/boom", post(boom))
            .route("/fine", get(fine))
            .layer(CatchPanicLayer::custom(panic_response));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        let client = reqwest::Client::new();
        let response = client.post(format!("{base}/boom")).send().await.unwrap();
        assert_eq!(response.status(), 200);
        let body: serde_json::Value = response.json().await.unwrap();
        assert_eq!(
            body,
            json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32603, "message": "internal error"}})
        );
        let again = client.get(format!("{base}/fine")).send().await.unwrap();
        assert_eq!(again.text().await.unwrap(), "ok");
    }
}
