//! A card's "Why?": a button (with `aria-expanded`) that opens, under the card's header, what
//! let the call run, made it wait or refused it, in plain words (`state::why`): the policy and
//! its file, the argument rule, the grant and what was left of it, or the agent's
//! `require_approval` setting. Opened low on the page, it scrolls into view; the focus stays.

use leptos::prelude::*;

use super::model::CardModel;
use crate::components::util::reveal_on_open;
use crate::state::why::{explain, review_line};

/// `at` (RFC 3339) as the person's clock and calendar say it: "1 Dec 2026, 23:25".
fn local_time(at: &str) -> String {
    let date = js_sys::Date::new(&at.into());
    if date.get_time().is_nan() {
        return at.to_owned();
    }
    let options = js_sys::Object::new();
    let _ = js_sys::Reflect::set(&options, &"dateStyle".into(), &"medium".into());
    let _ = js_sys::Reflect::set(&options, &"timeStyle".into(), &"short".into());
    date.to_locale_string("default", &options).into()
}

/// "Why?" and, once opened, its lines; nothing for a call the server said nothing about (a
/// remote agent's) or a question, which always waits for its answers. Above it, on the card
/// itself, the agent's reviewer's verdict, risk and reason, where a live reviewer looked.
#[component]
pub(super) fn WhyLine(model: CardModel) -> impl IntoView {
    let open = RwSignal::new(false);
    let lines = Memo::new(move |_| {
        if model.is_question() {
            return None;
        }
        model.card.with(|card| {
            let card = card.as_ref()?;
            let waiting = card.status == crate::state::ToolStatus::PendingApproval;
            let why = card.why.as_ref()?;
            Some((
                explain(why, &card.name, waiting, &local_time)?,
                review_line(why),
            ))
        })
    });
    // The panel's id, for the button's aria-controls: the card key, made a safe id.
    let panel_id = move || {
        let key = model
            .card
            .with(|card| card.as_ref().map(|card| card.key.clone()))
            .unwrap_or_default();
        let safe: String = key
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
            .collect();
        format!("why-{safe}")
    };
    move || {
        lines.get().map(|(lines, review)| {
            view! {
                {review.map(|line| view! { <p class="hint" data-testid="review-line">{line}</p> })}
                <div class="why">
                    <button type="button" class="link-button why-button" data-testid="why-button"
                        aria-expanded=move || if open.get() { "true" } else { "false" }
                        aria-controls=panel_id
                        on:click=move |_| open.update(|open| *open = !*open)>
                        "Why?"
                    </button>
                    <Show when=move || open.get()>
                        <div class="why-text" id=panel_id data-testid="why-text" node_ref=reveal_on_open()>
                            {lines.iter().map(|line| view! { <p>{line.clone()}</p> }).collect_view()}
                        </div>
                    </Show>
                </div>
            }
        })
    }
}
