//! What only batches routed to approvers show in a chat: the notice in place of the composer
//! when the reader is an approver, not the chat's owner, and the status line's words while a
//! routed batch waits. Built in the approvals chunk (the split point `approvals`, whose other
//! parts are the Approvals page, a routed call's quorum lines and the composer's words to a
//! requester): a chat without routed batches never loads them, and whoever sees them has such
//! a batch, which the Approvals page lists too.

use leptos::prelude::*;
use signoff_protocol::rest::ApprovalRouting;

use crate::components::lazy::{loaded, Loaded, Slot};
use crate::state::PendingBatch;

/// In place of the composer for an approver: whose chat it is, and that they only decide its
/// calls here.
#[component]
fn ReadOnlyNotice(requested_by: String) -> impl IntoView {
    view! {
        <p class="hint read-only" data-testid="read-only">
            {format!("{requested_by}'s chat, routed to you to decide its calls: read only.")}
        </p>
    }
}

/// The chat's parts of the approvals chunk, from one split function, so they cost the main
/// module one split point, not two.
#[derive(Clone, Copy)]
struct RoutedViews {
    /// An approver's notice in place of the composer, given whose chat it is.
    read_only: fn(String) -> AnyView,
    /// The status line of a routed batch (`state::routing::routed_status`).
    status: fn(&PendingBatch, &ApprovalRouting, Option<&str>) -> String,
}

thread_local! {
    static ROUTED: Slot<RoutedViews> = ArcRwSignal::new(None);
}

#[wasm_split_helpers::wasm_split(approvals, fallible)]
fn routed_views() -> Loaded<RoutedViews> {
    Ok(RoutedViews {
        read_only: |requested_by| view! { <ReadOnlyNotice requested_by=requested_by /> }.into_any(),
        status: crate::state::routing::routed_status,
    })
}

/// In place of the composer when an approver reads `requested_by`'s chat.
pub(super) fn read_only_notice(requested_by: String) -> impl IntoView {
    move || loaded(&ROUTED, routed_views).map(|views| (views.read_only)(requested_by.clone()))
}

/// What the status line says while a routed batch waits, once the approvals chunk is here.
pub(super) fn routed_status(
    batch: &PendingBatch,
    routing: &ApprovalRouting,
    me: Option<&str>,
) -> Option<String> {
    loaded(&ROUTED, routed_views).map(|views| (views.status)(batch, routing, me))
}
