//! Web Push (docs/rest.md, Web Push): Signoff's VAPID key, the caller's own devices,
//! enrolled, listed and revoked, and the decisions of a notification's actions. Sending is the
//! runtime's (`runtime::web_push`).

use std::collections::HashMap;

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::Json;
use signoff_protocol::rest::{DecideResponse, Device, DeviceList, NewDevice, VapidKey};

use super::rest::{actor_on, batch_pin, decide_as, strict_body};
use super::{AppState, HttpError, Person, User};
use crate::agent::approvals::Channel;

/// `GET /api/push/vapid`: the key a browser subscribes with; `404` when Web Push is off.
pub async fn vapid(State(state): State<AppState>) -> Result<Json<VapidKey>, HttpError> {
    let public_key = state.runtime.web_push().vapid_key()?;
    Ok(Json(VapidKey { public_key }))
}

/// `GET /api/push/subscriptions`: the caller's devices, oldest first.
pub async fn list(
    State(state): State<AppState>,
    user: User,
) -> Result<Json<DeviceList>, HttpError> {
    let devices = state.runtime.web_push().devices(&user.0).await?;
    Ok(Json(DeviceList { devices }))
}

/// `POST /api/push/subscriptions`: enrols the caller's device: `201` with it.
pub async fn enrol(
    State(state): State<AppState>,
    user: User,
    body: axum::body::Bytes,
) -> Result<(StatusCode, Json<Device>), HttpError> {
    let new: NewDevice = strict_body(&body, "device")?;
    let device = state
        .runtime
        .web_push()
        .enrol(&user.0, &new.device, new.subscription)
        .await?;
    Ok((StatusCode::CREATED, Json(device)))
}

/// `DELETE /api/push/subscriptions/{id}`: revokes one of the caller's devices: `204`.
pub async fn revoke(
    State(state): State<AppState>,
    Path(id): Path<String>,
    user: User,
) -> Result<StatusCode, HttpError> {
    state.runtime.web_push().revoke(&user.0, &id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// `POST /api/push/approvals/{taskId}?batch=ID`: a notification's Approve or Reject, as the
/// service worker sends it with its person's session: the decision of
/// `POST /api/approvals/{taskId}`, on channel `web_push`, for the batch the notification
/// showed and no other (a batch decided elsewhere meanwhile is `409`).
pub async fn decide(
    State(state): State<AppState>,
    Path(task_id): Path<String>,
    Query(query): Query<HashMap<String, String>>,
    who: Person,
    body: axum::body::Bytes,
) -> Result<Json<DecideResponse>, HttpError> {
    let pin = batch_pin(&query)?.ok_or_else(|| {
        HttpError::BadRequest("a notification's decision names its batch: ?batch=ID".into())
    })?;
    let actor = actor_on(Channel::WebPush, &who);
    decide_as(&state, &task_id, &actor, Some(pin), &who, &body).await
}
