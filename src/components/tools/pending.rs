//! The cards of a chat's pending batch on their own, with the batch bar above two or more: how
//! the Approvals page shows a batch, with the same cards and decisions as the chat.

use leptos::prelude::*;

use super::{batch_bar, tool_card};
use crate::components::controller::ChatCtl;
use crate::state::PendingBatch;

/// The pending batch of the [`ChatCtl`] in context; "Loading…" until its chat has loaded.
#[component]
pub fn PendingCards() -> impl IntoView {
    let ctl = expect_context::<ChatCtl>();
    let keys = Memo::new(move |_| {
        ctl.view.with(|view| {
            view.pending
                .as_ref()
                .map(|batch| batch.keys.clone())
                .unwrap_or_default()
        })
    });
    let with_bar = Memo::new(move |_| {
        ctl.view
            .with(|view| view.pending.as_ref().is_some_and(PendingBatch::has_bar))
    });
    view! {
        <Show
            when=move || !keys.with(Vec::is_empty)
            fallback=move || view! { <p class="hint">"Loading the calls…"</p> }
        >
            <div class="tool-list" data-testid="tool-list">
                <Show when=move || with_bar.get()>
                    {batch_bar()}
                </Show>
                <For each=move || keys.get() key=|key| key.clone() let:key>
                    {tool_card(key)}
                </For>
            </div>
        </Show>
    }
}
