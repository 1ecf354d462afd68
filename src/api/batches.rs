//! A waiting batch's steps besides its decision (docs/rest.md, Hand-over and Deadline ladder):
//! handing it to someone who may then decide it too, and pushing its deadline back.

use signoff_protocol::rest::{DeadlineExtended, ExtendRequest, HandedOver, HandoverRequest};

use super::{http, ApiError};
use crate::state::route::encode;

/// `POST /api/approvals/{task}/handover`: `to` is `user:ID` or `group:NAME`.
pub async fn hand_over(task_id: &str, to: &str) -> Result<HandedOver, ApiError> {
    let body = HandoverRequest {
        to: to.to_owned(),
        note: None,
    };
    let body = serde_json::to_string(&body).map_err(|err| ApiError::Decode(err.to_string()))?;
    http::post(
        &format!("/api/approvals/{}/handover", encode(task_id)),
        body,
    )
    .await
}

/// `POST /api/approvals/{task}/extend`: `by` is a duration (`15m`).
pub async fn extend(task_id: &str, by: &str) -> Result<DeadlineExtended, ApiError> {
    let body = ExtendRequest {
        by: by.to_owned(),
        note: None,
    };
    let body = serde_json::to_string(&body).map_err(|err| ApiError::Decode(err.to_string()))?;
    http::post(&format!("/api/approvals/{}/extend", encode(task_id)), body).await
}
