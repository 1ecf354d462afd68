//! Tools held back because their server changed their definition (docs/rest.md, Tool
//! definitions): the sidebar's notice under the Approvals link, for operators only (its count
//! is `AppCtx::held_back`, asked by the approvals stream's chunk and 0 for anyone else), and its
//! Review, a dialog that reads the changes and offers an Approve for each tool. Both come from
//! the chunk of the split point `held_back` (`notice`, `review`), fetched only once something
//! is held back: the main module keeps just the gate below.

mod notice;
mod review;

use leptos::prelude::*;

use super::context::AppCtx;
use super::lazy::{loaded, Loaded, Slot};

/// The notice while a tool is held back, and the review while it is open (it outlives the
/// notice: approving the last change hides the notice, and the review says so).
#[component]
pub fn HeldBackNotice() -> impl IntoView {
    let app = expect_context::<AppCtx>();
    let open = RwSignal::new(false);
    // A bool, so that a count that changes while the review is open does not build it anew.
    let shown = Memo::new(move |_| app.held_back.get() > 0 || open.get());
    move || {
        shown
            .get()
            .then(|| loaded(&NOTICE, notice_view).map(|make| make(open)))
            .flatten()
    }
}

/// The notice and its review, given the signal that keeps the review open.
type MakeNotice = fn(RwSignal<bool>) -> AnyView;

thread_local! {
    static NOTICE: Slot<MakeNotice> = ArcRwSignal::new(None);
}

#[wasm_split_helpers::wasm_split(held_back, fallible)]
fn notice_view() -> Loaded<MakeNotice> {
    Ok(|open| view! { <notice::Notice open=open /> }.into_any())
}
