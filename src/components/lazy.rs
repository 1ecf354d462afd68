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

use super::chat::shared::SharedPage;
use super::feedback::AnswerFeedback;
use super::inbox::ApprovalsPage;
use super::share::ShareMenu;

/// A split point's result once its chunk has loaded; `Some(None)` while it loads.
pub(crate) type Slot<T> = ArcRwSignal<Option<Option<T>>>;

/// What `load` returned, if its chunk has loaded; the first call starts the load. Reads the
/// slot, so the caller's reactive closure runs again when the chunk arrives.
pub(crate) fn loaded<T, F>(slot: &'static LocalKey<Slot<T>>, load: fn() -> F) -> Option<T>
where
    T: Copy + Send + Sync + 'static,
    F: Future<Output = T> + 'static,
{
    let slot = slot.with(Clone::clone);
    match slot.get() {
        Some(found) => found,
        None => {
            slot.set(Some(None));
            spawn_local(async move {
                let value = load().await;
                slot.set(Some(Some(value)));
            });
            None
        }
    }
}

type Make = fn() -> AnyView;
/// The thumbs of an answer, given the ids of its messages.
type MakeFeedback = fn(Memo<Vec<String>>) -> AnyView;

thread_local! {
    static APPROVALS: Slot<Make> = ArcRwSignal::new(None);
    static SHARE: Slot<Make> = ArcRwSignal::new(None);
    static SHARED: Slot<fn(String) -> AnyView> = ArcRwSignal::new(None);
    static FEEDBACK: Slot<MakeFeedback> = ArcRwSignal::new(None);
    static MARKDOWN: Slot<fn(&str) -> String> = ArcRwSignal::new(None);
}

#[wasm_split_helpers::wasm_split(approvals)]
fn approvals_page_view() -> Make {
    || view! { <ApprovalsPage /> }.into_any()
}

/// The Approvals page (`/approvals`).
pub fn approvals_page() -> impl IntoView {
    move || loaded(&APPROVALS, approvals_page_view).map(|make| make())
}

#[wasm_split_helpers::wasm_split(shared)]
fn shared_page_view() -> fn(String) -> AnyView {
    |token| view! { <SharedPage token=token /> }.into_any()
}

/// The read-only page a share link opens.
pub fn shared_page(token: String) -> impl IntoView {
    move || loaded(&SHARED, shared_page_view).map(|make| make(token.clone()))
}

#[wasm_split_helpers::wasm_split(share)]
fn share_menu_view() -> Make {
    || view! { <ShareMenu /> }.into_any()
}

/// The chat header's Share menu.
pub fn share_menu() -> impl IntoView {
    move || loaded(&SHARE, share_menu_view).map(|make| make())
}

// An agent answer's parts: its markdown and its thumbs, in one chunk.
#[wasm_split_helpers::wasm_split(answer)]
fn answer_feedback_view() -> fn(Memo<Vec<String>>) -> AnyView {
    |items| view! { <AnswerFeedback items=items /> }.into_any()
}

/// The thumbs under an agent answer.
pub fn answer_feedback(items: Memo<Vec<String>>) -> impl IntoView {
    move || loaded(&FEEDBACK, answer_feedback_view).map(|make| make(items))
}

#[wasm_split_helpers::wasm_split(answer)]
fn markdown_renderer() -> fn(&str) -> String {
    crate::markdown::to_html
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
