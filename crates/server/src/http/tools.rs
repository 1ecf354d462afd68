//! Pinned tool definitions over REST (docs/rest.md, Tool definitions): `GET /api/tools/changes`
//! lists the tools held back because their server now describes them otherwise than approved,
//! with what changed; `POST /api/tools/changes/approve` approves one change, named by the
//! digest of the definition read. Operators only: approving a definition decides what every
//! agent's model reads and may call.

use axum::extract::State;
use axum::Json;
use signoff_protocol::rest::{ApproveToolChange, ToolChange, ToolChanges};

use super::rest::strict_body;
use super::{AppState, Caller, HttpError};

pub async fn changes(
    State(state): State<AppState>,
    caller: Caller,
) -> Result<Json<ToolChanges>, HttpError> {
    operator_only(&state, &caller, "read the changed tool definitions")?;
    let changes = state.runtime.tool_pins().changes().await?;
    Ok(Json(ToolChanges { changes }))
}

pub async fn approve(
    State(state): State<AppState>,
    caller: Caller,
    body: axum::body::Bytes,
) -> Result<Json<ToolChange>, HttpError> {
    operator_only(&state, &caller, "approve a changed tool definition")?;
    let approve: ApproveToolChange = strict_body(&body, "tool change approval")?;
    let approved = state
        .runtime
        .tool_pins()
        .approve(&caller.identity.subject, &approve)
        .await?;
    Ok(Json(approved))
}

/// Refuses a caller who is not an operator (`AppState::is_operator`) `403`, saying what only
/// operators may do.
pub(super) fn operator_only(
    state: &AppState,
    caller: &Caller,
    what: &str,
) -> Result<(), HttpError> {
    match state.is_operator(caller) {
        true => Ok(()),
        false => Err(HttpError::Forbidden(format!(
            "only operators (a member of one of --operator-groups) {what}"
        ))),
    }
}
