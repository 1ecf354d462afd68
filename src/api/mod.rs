//! The only code that talks to the server: REST reads, JSON-RPC calls over gloo-net (the
//! browser's `fetch`), and SSE streams read from the response body. Components call these and
//! feed what comes back to the reducer in [`crate::state`]; nothing else fetches.

pub mod approvals;
pub mod batches;
pub mod http;
pub mod policies;
pub mod push;
pub mod rpc;
pub mod sessions;
pub mod shares;
pub mod tools;

pub use http::{caller_key, Abort};

use signoff_protocol::rest::{AgentList, Me};

use crate::state::account::Holder;
use crate::state::agents::{agents_of, AgentInfo};

/// Why a call to the server failed, worded for a toast.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ApiError {
    #[error("cannot reach the server: {0}")]
    Network(String),
    /// A non-2xx answer; `message` is the server's own words when it sent any.
    #[error("{message}")]
    Http { status: u16, message: String },
    #[error("the server sent something unreadable: {0}")]
    Decode(String),
    /// A JSON-RPC error object, as the agent worded it.
    #[error("{message}")]
    Rpc { code: i64, message: String },
    #[error("no answer from the agent for {0} seconds; the request was stopped")]
    Timeout(u32),
    #[error("the request was stopped")]
    Aborted,
}

/// `GET /api/agents`.
pub async fn list_agents() -> Result<Vec<AgentInfo>, ApiError> {
    let list: AgentList = http::get("/api/agents").await?;
    Ok(agents_of(list))
}

/// `GET /api/me`: who this browser is signed in as, for the account menu.
pub async fn me() -> Result<Me, ApiError> {
    http::get("/api/me").await
}

/// `POST /auth/logout` (`--auth oidc`): ends the session; where to go next (the provider's
/// logout, or the signed-out page).
pub async fn sign_out() -> Result<String, ApiError> {
    let answer: serde_json::Value = http::post("/auth/logout", "{}".to_owned()).await?;
    Ok(answer
        .get("next")
        .and_then(serde_json::Value::as_str)
        .unwrap_or("/auth/signed-out")
        .to_owned())
}

/// `GET /api/me`: whose `token` is (`None`: the saved one); a token the server refuses (`401`)
/// is [`Holder::Unknown`], any other failure an error.
pub async fn holder_of(token: Option<&str>) -> Result<Holder, ApiError> {
    let token = token.map(str::to_owned).or_else(http::saved_token);
    match http::get_as::<Me>("/api/me", token).await {
        Ok(me) => Ok(Holder::User(me.user)),
        Err(ApiError::Http { status: 401, .. }) => Ok(Holder::Unknown),
        Err(err) => Err(err),
    }
}
