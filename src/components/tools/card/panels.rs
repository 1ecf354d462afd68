//! The panel a waiting card opens under its buttons: the reason box of a rejection, the
//! arguments editor, or "Always allow…" (the policy to make before approving).

use leptos::prelude::*;

use super::model::{CardModel, Panel};
use crate::components::tools::allow::{always_allow, AllowPanel};
use crate::components::tools::fields::focus_on_open;

/// Whichever panel is open, if one is.
#[component]
pub(super) fn CardPanel(model: CardModel) -> impl IntoView {
    move || match model.panel.get() {
        Panel::None => ().into_any(),
        Panel::Reject => view! { <RejectPanel model=model /> }.into_any(),
        Panel::Always => view! { <AlwaysPanel model=model /> }.into_any(),
        Panel::Edit => view! { <EditPanel model=model /> }.into_any(),
    }
}

/// The reason box and Confirm rejection.
#[component]
fn RejectPanel(model: CardModel) -> impl IntoView {
    let reason_text = model.reason_text;
    view! {
        <div class="panel reject-panel">
            <label class="field-label" for=move || format!("reason-{}", model.call_id())>
                "Reason (optional, the agent reads it)"
            </label>
            <textarea
                id=move || format!("reason-{}", model.call_id())
                data-testid="reject-reason"
                node_ref=focus_on_open()
                rows="2"
                prop:value=move || reason_text.get()
                on:input=move |event| reason_text.set(event_target_value(&event))
            ></textarea>
            <div class="tool-actions">
                <button type="button" class="button danger" data-testid="reject-confirm"
                    disabled=move || model.disabled() on:click=move |_| model.confirm_reject()>
                    "Confirm rejection"
                </button>
                <button type="button" class="button" data-testid="reject-cancel"
                    on:click=move |_| model.panel.set(Panel::None)>
                    "Cancel"
                </button>
            </div>
        </div>
    }
}

/// The policy to make for this tool in this agent; once made, the call is approved.
#[component]
fn AlwaysPanel(model: CardModel) -> impl IntoView {
    let ctl = model.ctl;
    let key = ctl.key();
    let (tool, args) = model.card.with_untracked(|card| {
        card.as_ref()
            .map(|card| (card.name.clone(), card.args.clone()))
            .unwrap_or_default()
    });
    always_allow(AllowPanel {
        agent: format!("{}/{}", key.namespace, key.agent),
        tool,
        args,
        context_id: ctl.view.with_untracked(|view| view.context_id.clone()),
        on_allowed: Callback::new(move |()| {
            model.panel.set(Panel::None);
            model.approve();
        }),
        on_close: Callback::new(move |()| model.panel.set(Panel::None)),
        disabled: Signal::derive(move || model.disabled()),
    })
}

/// The arguments as JSON to edit, with why they cannot be approved when they do not parse.
#[component]
fn EditPanel(model: CardModel) -> impl IntoView {
    let (args_text, args_error) = (model.args_text, model.args_error);
    view! {
        <div class="panel edit-panel">
            <label class="field-label" for=move || format!("args-{}", model.call_id())>
                "Arguments (JSON)"
            </label>
            <textarea
                id=move || format!("args-{}", model.call_id())
                class="code-input"
                data-testid="args-editor"
                node_ref=focus_on_open()
                rows="6"
                spellcheck="false"
                prop:value=move || args_text.get()
                on:input=move |event| {
                    args_text.set(event_target_value(&event));
                    args_error.set(None);
                }
            ></textarea>
            {move || args_error.get().map(|error| view! { <p class="field-error" role="alert" data-testid="args-error">{error}</p> })}
            <div class="tool-actions">
                <button type="button" class="button" data-testid="edit-save"
                    on:click=move |_| { model.save_edit(); }>
                    "Save"
                </button>
                <button type="button" class="button" data-testid="edit-cancel"
                    on:click=move |_| model.panel.set(Panel::None)>
                    "Cancel"
                </button>
            </div>
        </div>
    }
}
