//! `GET /api/notifications/failed`: the notifications that exhausted their retries, for an
//! operator to look into (the receiver's last answer, how many attempts). Operators only: the
//! rows name tasks and what their calls asked. With `--auth none` the one local user is the
//! operator; otherwise a caller in one of the `--operator-groups`.

use axum::extract::{Query, State};
use axum::Json;
use serde::Deserialize;
use serde_json::{json, Value};

use super::{AppState, Caller, HttpError};

/// The most rows one answer lists.
const MAX_LIMIT: i64 = 1000;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FailedParams {
    limit: Option<i64>,
}

pub async fn failed(
    State(state): State<AppState>,
    caller: Caller,
    Query(params): Query<FailedParams>,
) -> Result<Json<Value>, HttpError> {
    if !state.is_operator(&caller) {
        return Err(HttpError::Forbidden(
            "only operators (a member of one of --operator-groups) read the failed notifications"
                .into(),
        ));
    }
    let limit = params.limit.unwrap_or(100);
    if !(1..=MAX_LIMIT).contains(&limit) {
        return Err(HttpError::BadRequest(format!(
            "limit must be between 1 and {MAX_LIMIT}"
        )));
    }
    let rows = state.runtime.failed_notifications(limit).await?;
    let failed: Vec<Value> = rows
        .iter()
        .map(|row| {
            json!({
                "id": row.id,
                "channel": row.channel,
                "type": row.kind.as_str(),
                "task_id": row.task_id,
                "batch_id": row.batch_id,
                "attempts": row.attempts,
                "last_error": row.last_error,
                "created_at": row.created_at,
                "failed_at": row.failed_at,
                "data": row.payload,
            })
        })
        .collect();
    Ok(Json(json!({ "failed": failed })))
}
