//! The approvals stream (docs/rest.md, Approvals stream), read as it comes: each event with its
//! id, for the one stream a browser keeps open: its leading tab follows it and passes each event to
//! the other tabs (`components::inbox`); where Web Locks are missing, each tab follows its own.

use gloo_net::http::Request;

use super::http::{self, Abort};
use super::ApiError;
use crate::state::inbox::Sent;

/// Heartbeats come every 15 s; a stream silent for three of them is taken for dead.
const IDLE_SECS: u32 = 45;

/// Far above any batch the inbox shows.
const MAX_EVENT_BYTES: usize = 4 << 20;

/// Follows the caller's approvals stream after `last_id` (from the batches waiting now without
/// one), handing each event to `on_event`, until the server ends it, it breaks, or
/// `abort` stops it.
pub async fn follow(
    last_id: Option<i64>,
    abort: &Abort,
    on_event: &mut dyn FnMut(Sent),
) -> Result<(), ApiError> {
    let signal = abort.signal();
    let mut request = Request::get("/api/approvals/stream")
        .header("Accept", "text/event-stream")
        .abort_signal(signal.as_ref());
    if let Some(id) = last_id {
        request = request.header("Last-Event-ID", &id.to_string());
    }
    let response = http::send(request, None).await?;
    http::read_sse(&response, IDLE_SECS, MAX_EVENT_BYTES, abort, &mut |event| {
        let id = event
            .id
            .as_deref()
            .and_then(|id| id.parse::<i64>().ok())
            .ok_or_else(|| {
                ApiError::Decode(format!("an approvals event without an id: {event:?}"))
            })?;
        let name = event.event.as_deref().unwrap_or("message");
        on_event(Sent::read(id, name, event.data).map_err(ApiError::Decode)?);
        Ok(())
    })
    .await
}
