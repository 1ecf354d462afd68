//! The split points: parts of the UI a fresh chat does not need, each in a wasm chunk of its own
//! that the browser fetches the first time the part is shown (`scripts/build-ui.sh` splits the
//! wasm; docs/toolchain.md, UI chunks). Outside wasm (the native tests) each is a plain call.
//!
//! A split function's body and everything only it reaches go into its chunk; what the chat uses
//! too stays in the main module. Each split function returns a plain function pointer (a view's
//! constructor, or the markdown renderer), kept in a signal that is no component's: the view is
//! built by the component's own reactive closure once the pointer is there, so a component
//! removed while its chunk loads builds nothing with its disposed signals.

use std::future::Future;
use std::thread::LocalKey;

use leptos::prelude::*;
use leptos::task::spawn_local;
use signoff_protocol::rest::{ApprovalRouting, CallQuorum};

use super::chat::shared::SharedPage;
use super::context::AppCtx;
use super::feedback::AnswerFeedback;
use super::inbox::{ApprovalsPage, LiveApprovals, QuorumLines, ReadOnlyNotice};
use super::share::ShareMenu;
use crate::state::compose::SendEffect;
use crate::state::PendingBatch;

/// A split point's result once its chunk has loaded; `Some(None)` while it loads.
pub(crate) type Slot<T> = ArcRwSignal<Option<Option<T>>>;

/// What a split function returns: every split point is `fallible`, since a chunk that cannot
/// be fetched would otherwise panic, and a panic aborts the whole app.
pub(crate) type Loaded<T> = Result<T, wasm_split_helpers::SplitLoaderError>;

/// What `load` returned, if its chunk has loaded; the first call starts the load. Reads the
/// slot, so the caller's reactive closure runs again when the chunk arrives.
pub(crate) fn loaded<T, F>(slot: &'static LocalKey<Slot<T>>, load: fn() -> F) -> Option<T>
where
    T: Copy + Send + Sync + 'static,
    F: Future<Output = Loaded<T>> + 'static,
{
    let slot = slot.with(Clone::clone);
    match slot.get() {
        Some(found) => found,
        None => {
            slot.set(Some(None));
            spawn_local(async move {
                let value = retrying(load).await;
                slot.set(Some(Some(value)));
            });
            None
        }
    }
}

/// `load`'s result once its chunk is there, loading it if no one has yet (the loader shares
/// one fetch between callers).
pub(crate) async fn ready<T, F>(slot: &'static LocalKey<Slot<T>>, load: fn() -> F) -> T
where
    T: Copy + Send + Sync + 'static,
    F: Future<Output = Loaded<T>> + 'static,
{
    let value = retrying(load).await;
    slot.with(Clone::clone).set(Some(Some(value)));
    value
}

/// Calls `load` until its chunk has been fetched: a chunk that cannot be fetched now (the
/// server restarting, the link down) is asked for again after a wait that doubles up to 8 s,
/// as the chat's stream reconnects, and the part shows once it comes.
async fn retrying<T, F>(load: fn() -> F) -> T
where
    F: Future<Output = Loaded<T>>,
{
    let mut wait_ms = 500;
    loop {
        match load().await {
            Ok(value) => return value,
            Err(_) => {
                super::util::wait_ms(wait_ms).await;
                wait_ms = (wait_ms * 2).min(8000);
            }
        }
    }
}

/// Runs `start` (a prefetch: `loaded` on a split point's slot) once the browser is idle, so
/// that the fetch never competes with what the first view needs; `requestIdleCallback`, or a
/// second's timer where the browser has none.
pub(crate) fn when_idle(start: impl FnOnce() + 'static) {
    let Some(window) = web_sys::window() else {
        return;
    };
    let callback = wasm_bindgen::closure::Closure::once_into_js(start);
    let function = wasm_bindgen::JsCast::unchecked_ref(&callback);
    if window.request_idle_callback(function).is_err() {
        let _ = window.set_timeout_with_callback_and_timeout_and_arguments_0(function, 1000);
    }
}

type Make = fn() -> AnyView;
/// The thumbs of an answer, given the ids of its messages.
type MakeFeedback = fn(Memo<Vec<String>>) -> AnyView;

/// The approvals chunk's views, from one split function: the Approvals page, and what only
/// batches routed to approvers show in a chat (whoever sees those has such a batch, which the
/// Approvals page lists too), so they cost the main module one split point, not three.
#[derive(Clone, Copy)]
pub(crate) struct ApprovalsViews {
    page: Make,
    /// A routed call's quorum lines, given where its quorum stands.
    quorum_lines: fn(CallQuorum) -> AnyView,
    /// An approver's notice in place of the composer, given whose chat it is.
    read_only: fn(String) -> AnyView,
    /// The status line of a routed batch (`state::routing::routed_status`).
    status: fn(&PendingBatch, &ApprovalRouting, Option<&str>) -> String,
    /// The composer's words, not sent, for a requester who may not approve
    /// (`state::routing::requester_reply`).
    reply: fn(&SendEffect, &str, &ApprovalRouting) -> Option<String>,
}

thread_local! {
    static APPROVALS: Slot<ApprovalsViews> = ArcRwSignal::new(None);
    static SHARE: Slot<Make> = ArcRwSignal::new(None);
    static SHARED: Slot<fn(String) -> AnyView> = ArcRwSignal::new(None);
    static FEEDBACK: Slot<MakeFeedback> = ArcRwSignal::new(None);
    static MARKDOWN: Slot<fn(&str) -> String> = ArcRwSignal::new(None);
    static STREAM: Slot<FollowApprovals> = ArcRwSignal::new(None);
}

/// Follows the approvals stream into the tab's inbox, given when the page opened.
type FollowApprovals = fn(AppCtx, LiveApprovals, f64);

#[wasm_split_helpers::wasm_split(stream, fallible)]
fn approvals_stream_follower() -> Loaded<FollowApprovals> {
    Ok(super::inbox::follow)
}

/// The approvals stream's follower (`inbox::follow`), once its chunk has loaded: the sharing
/// between tabs, the stream's reading and the browser notifications it raises.
pub(crate) async fn approvals_stream() -> FollowApprovals {
    ready(&STREAM, approvals_stream_follower).await
}

#[wasm_split_helpers::wasm_split(approvals, fallible)]
fn approvals_views() -> Loaded<ApprovalsViews> {
    Ok(ApprovalsViews {
        page: || view! { <ApprovalsPage /> }.into_any(),
        quorum_lines: |call| view! { <QuorumLines call=call /> }.into_any(),
        read_only: |requested_by| view! { <ReadOnlyNotice requested_by=requested_by /> }.into_any(),
        status: crate::state::routing::routed_status,
        reply: crate::state::routing::requester_reply,
    })
}

/// The Approvals page (`/approvals`).
pub fn approvals_page() -> impl IntoView {
    move || loaded(&APPROVALS, approvals_views).map(|views| (views.page)())
}

/// A routed call's card: whom it waits for and how far its quorum has come.
pub fn quorum_lines(call: CallQuorum) -> impl IntoView {
    move || loaded(&APPROVALS, approvals_views).map(|views| (views.quorum_lines)(call.clone()))
}

/// In place of the composer when an approver reads `requested_by`'s chat.
pub fn read_only_notice(requested_by: String) -> impl IntoView {
    move || loaded(&APPROVALS, approvals_views).map(|views| (views.read_only)(requested_by.clone()))
}

/// What the status line says while a routed batch waits, once the approvals chunk is here.
pub fn routed_status(
    batch: &PendingBatch,
    routing: &ApprovalRouting,
    me: Option<&str>,
) -> Option<String> {
    loaded(&APPROVALS, approvals_views).map(|views| (views.status)(batch, routing, me))
}

/// What the composer says, without sending, to a requester who may not approve a routed
/// batch; `None` where its own words stand, and until the chunk is here.
pub fn requester_reply(
    effect: &SendEffect,
    text: &str,
    routing: &ApprovalRouting,
) -> Option<String> {
    loaded(&APPROVALS, approvals_views).and_then(|views| (views.reply)(effect, text, routing))
}

#[wasm_split_helpers::wasm_split(shared, fallible)]
fn shared_page_view() -> Loaded<fn(String) -> AnyView> {
    Ok(|token| view! { <SharedPage token=token /> }.into_any())
}

/// The read-only page a share link opens.
pub fn shared_page(token: String) -> impl IntoView {
    move || loaded(&SHARED, shared_page_view).map(|make| make(token.clone()))
}

#[wasm_split_helpers::wasm_split(share, fallible)]
fn share_menu_view() -> Loaded<Make> {
    Ok(|| view! { <ShareMenu /> }.into_any())
}

/// The chat header's Share menu.
pub fn share_menu() -> impl IntoView {
    move || loaded(&SHARE, share_menu_view).map(|make| make())
}

// An agent answer's parts: its markdown and its thumbs, in one chunk.
#[wasm_split_helpers::wasm_split(answer, fallible)]
fn answer_feedback_view() -> Loaded<MakeFeedback> {
    Ok(|items| view! { <AnswerFeedback items=items /> }.into_any())
}

/// The thumbs under an agent answer.
pub fn answer_feedback(items: Memo<Vec<String>>) -> impl IntoView {
    move || loaded(&FEEDBACK, answer_feedback_view).map(|make| make(items))
}

#[wasm_split_helpers::wasm_split(answer, fallible)]
fn markdown_renderer() -> Loaded<fn(&str) -> String> {
    Ok(crate::markdown::to_html)
}

/// `text` rendered as markdown (`crate::markdown::to_html`). Until the parser's chunk has
/// loaded (the first agent text asks for it) the text is shown escaped in a paragraph, as
/// written; the caller renders again when it arrives, since this reads a signal.
pub fn markdown_html(text: &str) -> String {
    if let Some(render) = loaded(&MARKDOWN, markdown_renderer) {
        return render(text);
    }
    let mut html = String::from("<p>");
    // Writing to a String cannot fail.
    let _ = pulldown_cmark_escape::escape_html(pulldown_cmark_escape::FmtWriter(&mut html), text);
    html.push_str("</p>");
    html
}
