//! Feedback on answers (docs/rest.md, Feedback): a person rates an agent's answer thumbs up or
//! down, with an optional reason, and reads their ratings back.

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use signoff_protocol::rest::{Feedback, FeedbackList, NewFeedback};

use super::{AppState, HttpError, User};

/// Stores the caller's rating: `201` with it as stored.
pub async fn give(
    State(state): State<AppState>,
    user: User,
    body: axum::body::Bytes,
) -> Result<(StatusCode, Json<Feedback>), HttpError> {
    signoff_protocol::json_keys::reject_duplicate_keys(&body)
        .map_err(|err| HttpError::BadRequest(err.to_string()))?;
    let mut reader = serde_json::Deserializer::from_slice(&body);
    let new: NewFeedback = serde_path_to_error::deserialize(&mut reader).map_err(|err| {
        let path = err.path().to_string();
        let inner = err.into_inner();
        if path == "." {
            HttpError::BadRequest(format!("invalid feedback: {inner}"))
        } else {
            HttpError::BadRequest(format!("invalid feedback: {path}: {inner}"))
        }
    })?;
    let feedback = state.runtime.sharing().give_feedback(&user.0, new).await?;
    Ok((StatusCode::CREATED, Json(feedback)))
}

/// The caller's ratings, oldest first.
pub async fn list(
    State(state): State<AppState>,
    user: User,
) -> Result<Json<FeedbackList>, HttpError> {
    let feedback = state.runtime.sharing().feedback(&user.0).await?;
    Ok(Json(FeedbackList { feedback }))
}
