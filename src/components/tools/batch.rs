//! The bar above a batch of two or more pending calls: Approve all (N), Reject all with one
//! reason, or Submit once every card is decided.

use leptos::html::Div;
use leptos::prelude::*;

use crate::components::controller::ChatCtl;
use crate::components::util::typing_in_field;
use crate::state::draft::{reject_all, BatchDraft};

#[component]
pub fn BatchBar() -> impl IntoView {
    let ctl = expect_context::<ChatCtl>();
    let batch = Memo::new(move |_| ctl.view.with(|view| view.pending.clone()));
    let node = NodeRef::<Div>::new();
    // The reason box is open; its text lives apart so typing never re-renders it.
    let rejecting = RwSignal::new(false);
    let reason_text = RwSignal::new(String::new());
    let count = move || batch.with(|batch| batch.as_ref().map_or(0, |batch| batch.requests.len()));
    let draft_for = move || {
        let batch = batch.get_untracked()?;
        let draft = ctl.draft.get_untracked();
        let draft = if draft.task_id == batch.task_id {
            draft
        } else {
            BatchDraft::new(&batch.task_id)
        };
        Some((batch, draft))
    };
    let decided = move || {
        batch.with(|batch| {
            let Some(batch) = batch else {
                return 0;
            };
            ctl.draft.with(|draft| {
                if draft.task_id != batch.task_id {
                    return 0;
                }
                batch
                    .requests
                    .iter()
                    .filter(|request| draft.choices.contains_key(&request.id))
                    .count()
            })
        })
    };
    let approve_all = move || {
        let Some((batch, mut draft)) = draft_for() else {
            return;
        };
        if ctl.deciding.get_untracked() {
            return;
        }
        let decision = match draft.approve_all(&batch) {
            Ok(decision) => decision,
            Err(err) => return ctl.app().toast(err.to_string()),
        };
        for request in &batch.requests {
            draft.choose(&request.id, signoff_protocol::hitl::Verdict::Approve, None);
        }
        ctl.draft.set(draft);
        ctl.decide(batch, decision);
    };
    let confirm_reject_all = move || {
        let Some((batch, mut draft)) = draft_for() else {
            return;
        };
        let reason = reason_text.get_untracked();
        if ctl.deciding.get_untracked() {
            return;
        }
        for request in &batch.requests {
            draft.choose(
                &request.id,
                signoff_protocol::hitl::Verdict::Deny,
                Some(&reason),
            );
        }
        ctl.draft.set(draft);
        rejecting.set(false);
        ctl.decide(batch, reject_all(Some(&reason)));
    };
    let submit = move || {
        let Some((batch, draft)) = draft_for() else {
            return;
        };
        match draft.decision(&batch) {
            Ok(decision) => ctl.decide(batch, decision),
            Err(err) => ctl.app().toast(err.to_string()),
        }
    };
    // Focus moves to the batch when it arrives, so A / R work at once.
    Effect::new(move |_| {
        if let Some(element) = node.get() {
            let _ = element.focus();
        }
    });
    let on_keydown = move |event: web_sys::KeyboardEvent| {
        if typing_in_field(&event) || event.ctrl_key() || event.meta_key() || event.alt_key() {
            return;
        }
        match event.key().as_str() {
            "a" | "A" => {
                event.prevent_default();
                approve_all();
            }
            "r" | "R" => {
                event.prevent_default();
                reason_text.set(String::new());
                rejecting.set(true);
            }
            _ => {}
        }
    };
    let disabled = move || ctl.deciding.get();
    // Once every card is decided, Submit is the step left, and Approve all (which would
    // override those choices) steps back.
    let all_decided = move || count() > 0 && decided() == count();
    let names = move || {
        batch.with(|batch| {
            batch
                .as_ref()
                .map(|batch| {
                    batch
                        .requests
                        .iter()
                        .map(|request| request.name.clone())
                        .collect::<Vec<_>>()
                })
                .unwrap_or_default()
        })
    };
    view! {
        <div
            class="batch-bar"
            data-testid="batch-bar"
            role="region"
            aria-label="Pending tool calls"
            tabindex="-1"
            node_ref=node
            on:keydown=on_keydown
        >
            <div class="batch-summary">
                <strong>{move || format!("{} tool calls wait for your decision", count())}</strong>
                <span class="hint" data-testid="batch-progress">
                    {move || format!("{} of {} decided · A approves all, R rejects all", decided(), count())}
                </span>
            </div>
            <ul class="batch-calls" aria-label="Calls in this batch">
                {move || names().into_iter().map(|name| view! { <li>{name}</li> }).collect_view()}
            </ul>
            <div class="tool-actions">
                <button
                    type="button"
                    class="button"
                    class:primary=move || !all_decided()
                    data-testid="approve-all"
                    aria-label=move || format!("Approve all {} calls: {}", count(), names().join(", "))
                    disabled=disabled
                    on:click=move |_| approve_all()
                >
                    {move || format!("Approve all ({})", count())}
                </button>
                <button
                    type="button"
                    class="button danger-outline"
                    data-testid="reject-all"
                    aria-label="Reject all calls"
                    disabled=disabled
                    on:click=move |_| { reason_text.set(String::new()); rejecting.set(true) }
                >
                    "Reject all"
                </button>
                <button
                    type="button"
                    class="button"
                    class:primary=all_decided
                    data-testid="submit-decisions"
                    aria-label="Submit the decisions made on each card"
                    disabled=move || disabled() || decided() < count()
                    on:click=move |_| submit()
                >
                    "Submit"
                </button>
            </div>
            {move || rejecting.get().then(|| view! {
                <div class="panel reject-panel">
                    <label class="field-label" for="reject-all-reason">
                        "Reason for rejecting all (optional, the agent reads it)"
                    </label>
                    <textarea
                        id="reject-all-reason"
                        data-testid="reject-all-reason"
                        node_ref=super::card::focus_on_open()
                        rows="2"
                        prop:value=move || reason_text.get()
                        on:input=move |event| reason_text.set(event_target_value(&event))
                    ></textarea>
                    <div class="tool-actions">
                        <button type="button" class="button danger" data-testid="reject-all-confirm"
                            disabled=disabled on:click=move |_| confirm_reject_all()>
                            "Confirm rejection"
                        </button>
                        <button type="button" class="button" data-testid="reject-all-cancel"
                            on:click=move |_| rejecting.set(false)>
                            "Cancel"
                        </button>
                    </div>
                </div>
            })}
        </div>
    }
}
