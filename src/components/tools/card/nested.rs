//! A subagent's calls inside the card of the agent-tool call they ask through, under a line
//! that says who asks through whom (docs/wire.md, Subagents). Each is a full card: decided on
//! its own, or with the rest of the batch by the batch bar's Approve all.

use leptos::prelude::*;

use super::ToolCard;
use crate::components::controller::ChatCtl;
use crate::state::nesting::{nested_keys, nested_label};

/// The cards of the calls a subagent makes through the call `parent_key`, if it made any.
#[component]
pub(super) fn NestedCards(parent_key: String) -> impl IntoView {
    let ctl = expect_context::<ChatCtl>();
    let lookup = parent_key.clone();
    let keys = Memo::new(move |_| {
        ctl.view.with(|view| {
            view.tool(&lookup)
                .map(|parent| nested_keys(view, parent))
                .unwrap_or_default()
        })
    });
    let label = Memo::new(move |_| {
        let chat = ctl.key();
        let agent = format!("{}/{}", chat.namespace, chat.agent);
        ctl.view
            .with(|view| nested_label(view, &parent_key, &agent))
            .unwrap_or_default()
    });
    view! {
        <Show when=move || !keys.with(Vec::is_empty)>
            <div class="tool-nested" data-testid="tool-nested">
                <div class="tool-nested-label" data-testid="tool-nested-label">
                    {move || label.get()}
                </div>
                <For each=move || keys.get() key=|key| key.clone() let:key>
                    {view! { <ToolCard card_key=key /> }.into_any()}
                </For>
            </div>
        </Show>
    }
}
