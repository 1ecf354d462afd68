//! The sessions REST surface (docs/rest.md, Sessions): list, one session with its tasks, delete.

use serde_json::Value;
use signoff_protocol::codec;
use signoff_protocol::{ProtocolVersion, Task};

use super::{http, ApiError};
use crate::state::route::encode;
use crate::state::sessions::{parse_session, parse_sessions, SessionInfo};

/// `GET /api/sessions`.
pub async fn list() -> Result<Vec<SessionInfo>, ApiError> {
    Ok(parse_sessions(&http::get_json("/api/sessions").await?))
}

/// `GET /api/sessions/{id}`: the session and its tasks, oldest first (read as v0.3, the
/// server's default encoding).
pub async fn load(id: &str) -> Result<(Option<SessionInfo>, Vec<Task>), ApiError> {
    let body = http::get_json(&format!("/api/sessions/{}", encode(id))).await?;
    let session = body.get("session").and_then(parse_session);
    let tasks = body
        .get("tasks")
        .and_then(Value::as_array)
        .map(|tasks| {
            tasks
                .iter()
                .map(|task| codec::decode_task(ProtocolVersion::V0_3, task))
                .collect::<Result<Vec<_>, _>>()
        })
        .transpose()
        .map_err(|err| ApiError::Decode(err.to_string()))?
        .unwrap_or_default();
    Ok((session, tasks))
}

/// `DELETE /api/sessions/{id}`.
pub async fn delete(id: &str) -> Result<(), ApiError> {
    http::delete(&format!("/api/sessions/{}", encode(id))).await
}
