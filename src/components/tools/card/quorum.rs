//! A routed call's quorum lines on its card: whom it waits for and how far its quorum has come,
//! and whose approvals an edit of its arguments voided. Built in the approvals chunk (the split
//! point `approvals`, with the Approvals page and the chat's routed words): a chat without
//! routed batches never loads them.

use leptos::prelude::*;
use signoff_protocol::rest::CallQuorum;

use crate::components::lazy::{loaded, Loaded, Slot};
use crate::state::routing::{voided_text, waiting_for};

/// Whom a routed call waits for and how far its quorum has come, and whose approvals an edit
/// of its arguments voided.
#[component]
fn QuorumLines(call: CallQuorum) -> impl IntoView {
    view! {
        {waiting_for(&call).map(|text| view! { <p class="hint" data-testid="quorum">{text}</p> })}
        {voided_text(&call).map(|text| view! { <p class="hint" data-testid="quorum-voided">{text}</p> })}
    }
}

thread_local! {
    static QUORUM: Slot<fn(CallQuorum) -> AnyView> = ArcRwSignal::new(None);
}

#[wasm_split_helpers::wasm_split(approvals, fallible)]
fn quorum_lines_view() -> Loaded<fn(CallQuorum) -> AnyView> {
    Ok(|call| view! { <QuorumLines call=call /> }.into_any())
}

/// [`QuorumLines`], from the approvals chunk.
pub(super) fn quorum_lines(call: CallQuorum) -> impl IntoView {
    move || loaded(&QUORUM, quorum_lines_view).map(|make| make(call.clone()))
}
