//! Signed decision receipts over REST (docs/rest.md, Audit): `GET /api/audit/keys`, every
//! public key receipts were signed with (current and rotated out), for anyone who checks an
//! export; `GET /api/audit/receipts`, the whole chain as `signoff audit export` writes it
//! (`?format=jsonl`, the default, or `ocsf`). Operators only: the chain names every person's
//! decisions on every task.

use axum::extract::{Query, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Deserialize;
use signoff_protocol::receipt::ReceiptKeys;

use super::tools::operator_only;
use super::{AppState, Caller, HttpError};
use crate::agent::receipts::{self, ExportFormat};

pub async fn keys(State(state): State<AppState>) -> Result<Json<ReceiptKeys>, HttpError> {
    Ok(Json(receipts::keys(state.runtime.store()).await?))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExportQuery {
    format: Option<String>,
}

pub async fn export(
    State(state): State<AppState>,
    caller: Caller,
    Query(query): Query<ExportQuery>,
) -> Result<Response, HttpError> {
    operator_only(&state, &caller, "export the decision receipts")?;
    let format = query.format.as_deref().unwrap_or("jsonl");
    let format = ExportFormat::parse(format).ok_or_else(|| {
        HttpError::BadRequest(format!("format {format:?}: expected jsonl or ocsf"))
    })?;
    let body = receipts::export(state.runtime.store(), format).await?;
    Ok(([(header::CONTENT_TYPE, "application/x-ndjson")], body).into_response())
}
