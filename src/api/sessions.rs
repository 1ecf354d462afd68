//! The sessions REST surface (docs/rest.md, Sessions): list, one session with its tasks (asked
//! for early when the page opens on it), delete.

use std::cell::RefCell;
use std::rc::Rc;
use std::task::{Poll, Waker};

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
pub async fn load(id: &str) -> Loaded {
    let url = format!("/api/sessions/{}", encode(id));
    let detail: SessionDetail = http::get(&url).await?;
    let tasks = decode_tasks(&url, &detail.tasks)?;
    Ok((detail.session.into(), tasks, detail.requested_by))
}

/// What [`load`] answers.
type Loaded = Result<(SessionInfo, Vec<Task>, Option<String>), ApiError>;

/// Where an early [`load`] leaves its answer: waiting for it (and who waits), or answered.
enum Early {
    Waiting(Option<Waker>),
    Answered(Loaded),
}

thread_local! {
    /// The session whose load [`load_early`] started, and where its answer comes.
    static EARLY: RefCell<Option<(String, Rc<RefCell<Early>>)>> = const { RefCell::new(None) };
}

/// Starts [`load`] of session `id` now, beside the requests that open the app: a page that
/// opens on a stored chat mounts it only once the agents are listed, and its messages need not
/// wait for that. The chat takes the answer with [`load_started`]. (A hand-made one-shot: a
/// shared future from futures-util cost the first download 2 KB.)
pub fn load_early(id: &str) {
    let slot = Rc::new(RefCell::new(Early::Waiting(None)));
    EARLY.with(|early| *early.borrow_mut() = Some((id.to_owned(), slot.clone())));
    let session = id.to_owned();
    wasm_bindgen_futures::spawn_local(async move {
        let answer = load(&session).await;
        let before = std::mem::replace(&mut *slot.borrow_mut(), Early::Answered(answer));
        if let Early::Waiting(Some(waker)) = before {
            waker.wake();
        }
    });
}

/// [`load`] of session `id`, from the answer [`load_early`] started for it if there is one and
/// it succeeded (one refused before a sign-in is asked again); any early answer is dropped, so
/// a chat opened later never reads an old one.
pub async fn load_started(id: &str) -> Loaded {
    let early = EARLY.with(|early| early.borrow_mut().take());
    if let Some((_, slot)) = early.filter(|(session, _)| session == id) {
        let answer = std::future::poll_fn(|cx| {
            let mut slot = slot.borrow_mut();
            match std::mem::replace(&mut *slot, Early::Waiting(Some(cx.waker().clone()))) {
                Early::Answered(answer) => Poll::Ready(answer),
                Early::Waiting(_) => Poll::Pending,
            }
        })
        .await;
        if answer.is_ok() {
            return answer;
        }
    }
    load(id).await
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
