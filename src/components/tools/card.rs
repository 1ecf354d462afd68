//! One tool call's card (kagent's ToolDisplay): name, call id, source, status badge,
//! arguments, result; and while its call waits, Approve / Reject (with reason) / Edit, or for a
//! question call the questions to answer (`question`), and for the only call of its batch Ask…
//! and Extend (`steps`). Its parts: the `head`er, the `body`
//! (arguments and result), the decision buttons (`actions`), the `panels` they open, and the
//! `nested` cards of a subagent's calls, "Why?" (`why`: what decided the call), and a routed
//! call's `quorum` lines, over one `model` of the card's state and intents.

mod actions;
mod body;
mod head;
mod model;
mod nested;
mod panels;
mod quorum;
mod why;

use leptos::html::Div;
use leptos::prelude::*;

use self::actions::{ChosenHere, DecisionButtons};
use self::body::CardBody;
use self::head::CardHead;
use self::model::CardModel;
use self::nested::NestedCards;
use self::panels::CardPanel;
use self::why::WhyLine;
use super::question::question_form;
use super::steps::BatchSteps;
use crate::components::controller::ChatCtl;
use crate::state::ToolStatus;

/// The card of the call `card_key` (a slot of the chat's view).
#[component]
pub fn ToolCard(card_key: String) -> impl IntoView {
    let model = CardModel::new(expect_context::<ChatCtl>(), &card_key);
    let (card, batch) = (model.card, model.batch);
    let node = NodeRef::<Div>::new();
    model.reveal_when_it_decides(node);
    model.track_editing();
    let outcome_slug = move || {
        model
            .outcome()
            .map(|(status, _)| status.slug())
            .unwrap_or("requested")
    };

    view! {
        <div
            class=move || format!("tool-card status-{}", outcome_slug())
            data-testid="tool-card"
            data-call-id=move || model.call_id()
            data-tool=move || model.name()
            data-status=move || model.shown().map(ToolStatus::slug).unwrap_or("requested")
            data-outcome=outcome_slug
            tabindex="-1"
            node_ref=node
            role="group"
            aria-label=move || format!("Tool call {}", model.name())
            on:keydown=move |event| model.on_keydown(event)
        >
            <CardHead model=model />
            <WhyLine model=model />
            {move || card.get().map(|card| {
                // The held request, for its preview (docs/wire.md, Previews).
                let request = batch.with(|batch| {
                    batch.as_ref().and_then(|batch| batch.requests.iter().find(|request| request.id == card.id).cloned())
                });
                view! { <CardBody card=card draft_args=model.draft_args pending=batch.with(Option::is_some) question=model.is_question() request=request /> }
            })}
            {move || {
                let questions = model.questions.get()?;
                batch.with(Option::is_some).then(|| question_form(model.call_id(), questions, batch))
            }}
            <DecisionButtons model=model />
            // A batch of two or more is handed on and extended from its bar.
            {move || model.lone().then(|| view! { <BatchSteps /> })}
            <ChosenHere model=model />
            {move || model.refused.get().map(|error| view! { <p class="field-error" role="alert" data-testid="decision-error">"Not accepted: "{error}</p> })}
            <CardPanel model=model />
            {view! { <NestedCards parent_key=card_key.clone() /> }.into_any()}
        </div>
    }
}
