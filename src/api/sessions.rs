//! The sessions REST surface (docs/rest.md, Sessions): list, one session with its tasks, delete.

use signoff_protocol::codec::v03_only;
use signoff_protocol::rest::{SessionDetail, SessionList};
use signoff_protocol::Task;

use super::{http, ApiError};
use crate::state::route::encode;
use crate::state::sessions::{sessions_of, SessionInfo};

/// `GET /api/sessions`.
pub async fn list() -> Result<Vec<SessionInfo>, ApiError> {
    let list: SessionList = http::get("/api/sessions").await?;
    Ok(sessions_of(list))
}

/// `GET /api/sessions/{id}`: the session and its tasks, oldest first (read as v0.3, the
/// server's default encoding), and whose chat it is when the reader is an approver, not its
/// owner (docs/rest.md, Approvers).
pub async fn load(id: &str) -> Result<(SessionInfo, Vec<Task>, Option<String>), ApiError> {
    let url = format!("/api/sessions/{}", encode(id));
    let detail: SessionDetail = http::get(&url).await?;
    let tasks = decode_tasks(&url, &detail.tasks)?;
    Ok((detail.session.into(), tasks, detail.requested_by))
}

/// A session detail's tasks, decoded as v0.3. One loop for the chat and the shared page: each
/// `collect` into a `Result` is its own adapter in the download.
pub(super) fn decode_tasks(url: &str, tasks: &[serde_json::Value]) -> Result<Vec<Task>, ApiError> {
    let mut decoded = Vec::with_capacity(tasks.len());
    for (index, task) in tasks.iter().enumerate() {
        let task = v03_only::decode_task(task)
            .map_err(|err| ApiError::Decode(format!("{url}: task {index}: {err}")))?;
        decoded.push(task);
    }
    Ok(decoded)
}

/// `DELETE /api/sessions/{id}`.
pub async fn delete(id: &str) -> Result<(), ApiError> {
    http::delete(&format!("/api/sessions/{}", encode(id))).await
}
