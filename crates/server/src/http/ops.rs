//! The operations endpoints, for load balancers, orchestrators and Prometheus: `GET /healthz`
//! (the process answers), `GET /readyz` (it can take work) and `GET /metrics`. They need no
//! user: they show counts, never a task's content.

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;

use super::{AppState, HttpError};
use crate::agent::metrics::CONTENT_TYPE;

/// The process is up and serving HTTP; nothing else is checked, so a slow database never gets
/// a live process restarted.
pub async fn healthz() -> Json<serde_json::Value> {
    Json(json!({"status": "ok"}))
}

/// 200 when the server can take work; 503 with the reason when it is shutting down, its
/// database does not answer, or the database's schema is not this binary's.
pub async fn readyz(State(state): State<AppState>) -> Response {
    match state.runtime.check_ready().await {
        Ok(()) => Json(json!({"status": "ready"})).into_response(),
        Err(reason) => (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(json!({"status": "not ready", "reason": reason.to_string()})),
        )
            .into_response(),
    }
}

/// The metrics in Prometheus's text format (OpenMetrics).
pub async fn metrics(State(state): State<AppState>) -> Result<Response, HttpError> {
    let text = state.runtime.metrics_text().await?;
    Ok(([(header::CONTENT_TYPE, CONTENT_TYPE)], text).into_response())
}
