//! What only approvers' batches show in a chat: a routed call's quorum lines on its card, and
//! the notice in place of the composer when the reader is an approver, not the chat's owner.
//! Built in the approvals chunk (`components::lazy`): a chat without routed batches never
//! loads them.

use leptos::prelude::*;
use signoff_protocol::rest::CallQuorum;

use crate::state::routing::{voided_text, waiting_for};

/// Whom a routed call waits for and how far its quorum has come, and whose approvals an edit
/// of its arguments voided.
#[component]
pub fn QuorumLines(call: CallQuorum) -> impl IntoView {
    view! {
        {waiting_for(&call).map(|text| view! { <p class="hint" data-testid="quorum">{text}</p> })}
        {voided_text(&call).map(|text| view! { <p class="hint" data-testid="quorum-voided">{text}</p> })}
    }
}

/// In place of the composer for an approver: whose chat it is, and that they only decide its
/// calls here.
#[component]
pub fn ReadOnlyNotice(requested_by: String) -> impl IntoView {
    view! {
        <p class="hint read-only" data-testid="read-only">
            {format!("{requested_by}'s chat, routed to you to decide its calls: read only.")}
        </p>
    }
}
