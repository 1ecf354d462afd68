//! In a chat: the notice that its waiting batch was decided (or expired, or canceled) in
//! another tab or by another person, shown as soon as the approvals stream says so, while the
//! chat follows the turn that goes on; and bringing a batch's card into view when a
//! notification was clicked.

use leptos::prelude::*;
use wasm_bindgen::JsCast;

use crate::components::context::LiveApprovals;
use crate::components::controller::ChatCtl;
use crate::state::inbox::elsewhere_text;

#[component]
pub fn DecidedElsewhere() -> impl IntoView {
    let ctl = expect_context::<ChatCtl>();
    let live = expect_context::<LiveApprovals>();
    let notice = RwSignal::new(None::<String>);
    let pending_task = Memo::new(move |_| {
        ctl.view
            .with(|view| view.pending.as_ref().map(|batch| batch.task_id.clone()))
    });
    // A memo: the effect below runs once per new `decided` event, not on every inbox change
    // (a task that pauses again must not hear of its previous batch's decision).
    let last_decided = Memo::new(move |_| live.inbox.with(|inbox| inbox.last_decided.clone()));
    Effect::new(move |_| {
        let Some(decided) = last_decided.get() else {
            return;
        };
        // This tab's own decision clears the batch here before (or while) it is sent.
        if ctl.deciding.get_untracked()
            || pending_task.get_untracked().as_deref() != Some(decided.task_id.as_str())
        {
            return;
        }
        let earlier = live
            .inbox
            .with_untracked(|inbox| inbox.last_approvers.clone());
        notice.set(Some(elsewhere_text(&decided, &earlier)));
        ctl.catch_up(decided.task_id.clone());
    });
    // The notice is of one batch: a later batch of the chat takes it down, so it never stays
    // pinned over turns it does not speak of.
    Effect::new(move |shown_for: Option<Option<String>>| {
        let now = pending_task.get();
        if now.is_some() && shown_for.flatten() != now {
            notice.set(None);
        }
        now
    });
    // A notification's click: the card of its batch, once this chat shows it.
    Effect::new(move |_| {
        let Some(task) = live.focus_task.get() else {
            return;
        };
        if pending_task.get().as_deref() != Some(task.as_str()) {
            return;
        }
        live.focus_task.set(None);
        request_animation_frame(focus_waiting_card);
    });
    view! {
        {move || notice.get().map(|text| view! {
            <div class="elsewhere-note" role="status" data-testid="decided-elsewhere">
                <span>{text}</span>
                <button type="button" class="icon-button" aria-label="Dismiss"
                    on:click=move |_| notice.set(None)>"✕"</button>
            </div>
        })}
    }
}

/// Scrolls to the waiting batch's first decision control and focuses it.
fn focus_waiting_card() {
    let Some(document) = web_sys::window().and_then(|window| window.document()) else {
        return;
    };
    let target = document
        .query_selector(".chat [data-testid=\"batch-bar\"], .chat [data-testid=\"approve-button\"]")
        .ok()
        .flatten();
    if let Some(element) =
        target.and_then(|element| element.dyn_into::<web_sys::HtmlElement>().ok())
    {
        element.scroll_into_view();
        let _ = element.focus();
    }
}
