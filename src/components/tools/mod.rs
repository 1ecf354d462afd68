//! Tool calls in the transcript (a port of kagent's ToolCallDisplay): the cards an item
//! introduced, folded into groups when finished, with the batch bar above a pending batch.

mod allow;
mod batch;
mod card;
pub mod pending;
mod preview;
mod question;

use leptos::prelude::*;

use self::batch::BatchBar;
use self::card::ToolCard;
use crate::components::controller::ChatCtl;
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
                batch.keys.len() >= 2
                    && batch
                        .requests
                        .iter()
                        .all(|request| request.questions().is_none())
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
                    <BatchBar />
                </Show>
                <For each=move || parts.get() key=|segment| segment.clone() let:segment>
                    {match segment {
                        Segment::Card(key) => view! { <ToolCard card_key=key /> }.into_any(),
                        Segment::Group { keys, label } => {
                            view! {
                                <details class="tool-group" data-testid="tool-group">
                                    <summary data-testid="tool-group-summary">{label}</summary>
                                    <div class="tool-group-body">
                                        {keys
                                            .into_iter()
                                            .map(|key| view! { <ToolCard card_key=key /> })
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

/// Pretty JSON for the Arguments and Result sections and the arguments editor, with invisible
/// characters written as escapes, so what a person approves is what runs (`state::hidden`).
pub(crate) fn pretty(value: &serde_json::Value) -> String {
    crate::state::hidden::reveal(
        &serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string()),
    )
}

/// A box that takes the focus when it opens (scrolled into view): the reason or the arguments
/// a person opened it to type.
fn focus_on_open() -> NodeRef<leptos::html::Textarea> {
    let node = NodeRef::new();
    node.on_load(|element: web_sys::HtmlTextAreaElement| {
        let _ = element.focus();
    });
    node
}
