//! A waiting card's decision buttons (Approve, or Override for a call the reviewer denied;
//! Reject, Always allow…, Edit), the hint in their
//! place on a call that runs with its batch's answers, and once chosen here, the choice with
//! its Change button until the batch's Submit sends it.

use leptos::prelude::*;

use super::model::{CardModel, Panel};
use super::quorum::quorum_lines;

/// The hint a call shows when it cannot be decided alone, or the buttons that decide it; above
/// them, for a call routed to approvers, whom it waits for and how far its quorum has come.
#[component]
pub(super) fn DecisionButtons(model: CardModel) -> impl IntoView {
    let disabled = move || model.disabled();
    let name = move || model.name();
    // The reviewer denied it: approving it here is the Override of this one call.
    let overrides = move || {
        model.card.with(|card| {
            card.as_ref()
                .and_then(|card| card.why.as_ref())
                .is_some_and(crate::state::why::reviewer_denied)
        })
    };
    view! {
        {move || model.quorum().map(|(call, _)| quorum_lines(call))}
        <Show when=move || model.waiting() && model.runs_with_answers()>
            <p class="hint" data-testid="runs-with-answers">"Runs when the question is answered (this agent cannot reject it alone); Reject all stops it."</p>
        </Show>
        <Show when=move || model.waiting() && !model.is_question() && !model.runs_with_answers()>
            <div class="tool-actions">
                <button
                    type="button"
                    class="button primary"
                    data-testid="approve-button"
                    hidden=move || !model.may_approve()
                    aria-label=move || match model.url_to_open() {
                        Some(url) => format!("Open {url} in a new tab"),
                        None if overrides() => format!("Override the reviewer: approve {}", name()),
                        None => format!("Approve {} (A)", name()),
                    }
                    disabled=disabled
                    on:click=move |_| match model.url_to_open() {
                        Some(_) => model.open_url(),
                        None => model.approve(),
                    }
                >
                    {move || match (model.url_to_open().is_some(), overrides()) {
                        (true, _) => "Open",
                        (false, true) => "Override",
                        (false, false) => "Approve",
                    }}
                </button>
                <button
                    type="button"
                    class="button danger-outline"
                    data-testid="reject-button"
                    aria-label=move || format!("Reject {} (R)", name())
                    disabled=disabled
                    on:click=move |_| match model.url_to_open() {
                        Some(_) => model.decline_url(),
                        None => model.open_reject(),
                    }
                >
                    {move || if model.url_to_open().is_some() { "Decline" } else { "Reject" }}
                </button>
                <Show when=move || model.can_allow() && model.quorum().is_none()>
                    <button
                        type="button"
                        class="button"
                        data-testid="always-allow-button"
                        aria-label=move || format!("Approve {} and always allow such calls", name())
                        disabled=disabled
                        on:click=move |_| model.panel.set(Panel::Always)
                    >
                        "Always allow…"
                    </button>
                </Show>
                <button
                    type="button"
                    class="button"
                    data-testid="edit-button"
                    hidden=move || !model.can_edit() || !model.may_approve()
                    aria-label=move || format!("Edit the arguments of {}", name())
                    disabled=disabled
                    on:click=move |_| model.open_editor()
                >
                    "Edit"
                </button>
            </div>
        </Show>
    }
}

/// The choice made on this card of a batch, not sent yet, with the button that takes it back.
#[component]
pub(super) fn ChosenHere(model: CardModel) -> impl IntoView {
    let choice = model.choice;
    view! {
        <Show when=move || !model.waiting() && choice.with(Option::is_some) && model.batch.with(Option::is_some)>
            <div class="tool-actions">
                <span class="hint">
                    {move || {
                        let reason = choice.get().and_then(|choice| choice.reason);
                        let reason = reason.map(|reason| format!("Reason: \"{reason}\". "));
                        format!("{}Decided here; sent with Submit.", reason.unwrap_or_default())
                    }}
                </span>
                <button
                    type="button"
                    class="button"
                    data-testid="undo-button"
                    aria-label=move || format!("Change the decision on {}", model.name())
                    disabled=move || model.disabled()
                    on:click=move |_| model.undo()
                >
                    "Change"
                </button>
            </div>
        </Show>
    }
}
