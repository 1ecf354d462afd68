//! Tool calls in the transcript (a port of kagent's ToolCallDisplay): the cards an item
//! introduced, folded into groups when finished, with the batch bar above a pending batch. The
//! cards and the bar come from the chunk of the split point `cards` (a fresh chat draws none),
//! fetched while the page is idle once the person starts writing ([`prefetch_cards`]), or with
//! a stored or shared chat's messages ([`cards_ready`]).

mod allow;
pub(crate) use self::allow::policy_rows;
mod batch;
mod card;
mod fields;
pub mod pending;
mod preview;
mod question;
mod steps;

use leptos::prelude::*;

use self::batch::BatchBar;
use self::card::ToolCard;
use crate::components::controller::ChatCtl;
use crate::components::lazy::{loaded, ready, Loaded, Slot};
use crate::state::group::{segments, Segment};
use crate::state::nesting::is_nested;

/// The cards of one transcript row (an item and the tool-only items that joined it).
#[component]
pub fn ToolList(owners: Memo<Vec<String>>) -> impl IntoView {
    let ctl = expect_context::<ChatCtl>();
    let parts = Memo::new(move |_| {
        owners.with(|owners| {
            ctl.view.with(|view| {
                let tools: Vec<_> = owners
                    .iter()
                    .filter_map(|owner| view.item(owner))
                    .flat_map(|item| item.tool_keys.iter().filter_map(|key| view.tool(key)))
                    // A subagent's calls show inside the card of the call they ask through.
                    .filter(|tool| !is_nested(view, tool))
                    .collect();
                segments(&tools)
            })
        })
    });
    // The batch bar shows above the cards of the item that holds the batch's first call; a
    // batch with a question is decided from the question card's one Submit instead.
    let batch_here = Memo::new(move |_| {
        ctl.view.with(|view| {
            view.pending.as_ref().is_some_and(|batch| {
                batch.has_bar()
                    && batch
                        .keys
                        .first()
                        .and_then(|key| view.tool(key))
                        .is_some_and(|tool| owners.with(|owners| owners.contains(&tool.owner)))
            })
        })
    });
    view! {
        <Show when=move || !parts.with(Vec::is_empty)>
            <div class="tool-list" data-testid="tool-list">
                <Show when=move || batch_here.get()>
                    {batch_bar()}
                </Show>
                <For each=move || parts.get() key=|segment| segment.clone() let:segment>
                    {match segment {
                        Segment::Card(key) => tool_card(key).into_any(),
                        Segment::Group { keys, label } => {
                            view! {
                                <details class="tool-group" data-testid="tool-group">
                                    <summary data-testid="tool-group-summary">{label}</summary>
                                    <div class="tool-group-body">
                                        {keys
                                            .into_iter()
                                            .map(tool_card)
                                            .collect_view()}
                                    </div>
                                </details>
                            }
                                .into_any()
                        }
                    }}
                </For>
            </div>
        </Show>
    }
}

thread_local! {
    static CARD: Slot<fn(String) -> AnyView> = ArcRwSignal::new(None);
    static BAR: Slot<fn() -> AnyView> = ArcRwSignal::new(None);
}

#[wasm_split_helpers::wasm_split(cards, fallible)]
fn tool_card_view() -> Loaded<fn(String) -> AnyView> {
    Ok(|card_key| view! { <ToolCard card_key=card_key /> }.into_any())
}

/// [`ToolCard`], from the chunk of the cards.
pub(crate) fn tool_card(card_key: String) -> impl IntoView {
    move || loaded(&CARD, tool_card_view).map(|make| make(card_key.clone()))
}

#[wasm_split_helpers::wasm_split(cards, fallible)]
fn batch_bar_view() -> Loaded<fn() -> AnyView> {
    Ok(|| view! { <BatchBar /> }.into_any())
}

/// [`BatchBar`], from the chunk of the cards.
pub(crate) fn batch_bar() -> impl IntoView {
    move || loaded(&BAR, batch_bar_view).map(|make| make())
}

/// Starts fetching the cards' chunk, so that the first card an agent's call brings (and its
/// decision panels) shows as at once as the rest of the chat.
pub(crate) fn prefetch_cards() {
    let _ = loaded(&CARD, tool_card_view);
    let _ = loaded(&BAR, batch_bar_view);
}

/// Waits for the cards' chunk (fetching it if no one has yet): a chat that opens on cards,
/// stored or shared, shows them with its messages, as in one module.
pub(crate) async fn cards_ready() {
    ready(&CARD, tool_card_view).await;
}
