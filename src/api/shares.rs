//! Share links and feedback (docs/rest.md, Share links and Feedback): the owner makes, lists
//! and revokes a chat's read-only links; a shared view reads its one chat with the token; a
//! person rates an answer.

use signoff_protocol::codec::v03_only;
use signoff_protocol::rest::{NewFeedback, NewShare, SessionDetail, Share, ShareList};
use signoff_protocol::Task;

use super::{http, ApiError};
use crate::state::route::encode;

fn shares_url(session: &str) -> String {
    format!("/api/sessions/{}/shares", encode(session))
}

/// `POST /api/sessions/{id}/shares`: the new link, its token and page URL.
pub async fn create(session: &str) -> Result<NewShare, ApiError> {
    http::post(&shares_url(session), "{}".to_owned()).await
}

/// `GET /api/sessions/{id}/shares`: the chat's live links.
pub async fn list(session: &str) -> Result<Vec<Share>, ApiError> {
    let list: ShareList = http::get(&shares_url(session)).await?;
    Ok(list.shares)
}

/// `DELETE /api/sessions/{id}/shares/{shareId}`.
pub async fn revoke(session: &str, id: &str) -> Result<(), ApiError> {
    http::delete(&format!("{}/{}", shares_url(session), encode(id))).await
}

/// `GET /api/sessions/{id}?share=TOKEN`: the shared chat's tasks, oldest first.
pub async fn load_shared(session: &str, token: &str) -> Result<Vec<Task>, ApiError> {
    let url = format!("/api/sessions/{}?share={}", encode(session), encode(token));
    let detail: SessionDetail = http::get(&url).await?;
    detail
        .tasks
        .iter()
        .map(|task| {
            v03_only::decode_task(task).map_err(|err| ApiError::Decode(format!("{url}: {err}")))
        })
        .collect()
}

/// `POST /api/feedback`; the stored rating it answers with is not read (the view knows it).
pub async fn give_feedback(feedback: &NewFeedback) -> Result<(), ApiError> {
    let body = serde_json::to_string(feedback).map_err(|err| ApiError::Decode(err.to_string()))?;
    http::post_ignoring_answer("/api/feedback", body).await
}
