//! The message box: Enter sends, Shift+Enter breaks the line. It stays usable while the agent
//! works (the message is queued for its next step) and while a batch waits (the message is a
//! reply that decides it), and says which before the person sends. Stop cancels the task
//! (`stop`: or says up front that the agent cannot).

use leptos::prelude::*;

use super::stop;
use crate::components::controller::ChatCtl;
use crate::components::lazy;
use crate::components::tools::prefetch_cards;
use crate::state::compose::SendEffect;
use crate::state::ChatStatus;

#[component]
pub fn Composer() -> impl IntoView {
    let ctl = expect_context::<ChatCtl>();
    let status = Memo::new(move |_| ctl.view.with(|view| view.status.clone()));
    let loading = ctl.loading;
    let effect = Memo::new(move |_| ctl.send_effect(&ctl.composer.get()));
    // The box itself is disabled only while the chat loads: disabling it while the turn has no
    // task yet (nothing can be sent then; Send and Enter wait) would take the focus from the
    // person typing their next words.
    let disabled = move || loading.get();
    // Once the person starts writing in a loaded chat, the chunks of the cards and of Stop come
    // while the page is idle: the first call an agent makes (after a send), the Reject or Edit
    // a person clicks on it, and Stop while the agent works never wait for a fetch, and a chat
    // left for the Approvals page does not share the link with them. Once started, the effect
    // reads nothing, so it never runs again.
    Effect::new(move |started: Option<bool>| {
        if started == Some(true) {
            return true;
        }
        let start = !loading.get() && ctl.composer.with(|text| !text.is_empty());
        if start {
            lazy::when_idle(prefetch);
        }
        start
    });
    let placeholder = move || match status.get() {
        _ if loading.get() => "Loading the chat…",
        ChatStatus::AwaitingApproval
            if effect.with(|effect| matches!(effect, SendEffect::Refused(_))) =>
        {
            "Reject the pending calls above, or say what to do instead"
        }
        ChatStatus::AwaitingApproval
            if effect.with(|effect| matches!(effect, SendEffect::Reply { question: true, .. })) =>
        {
            "Answer the question above, or say what to do instead"
        }
        ChatStatus::AwaitingApproval => "Decide the pending calls above, or say what to do instead",
        ChatStatus::Thinking => "The agent is starting… (Stop to interrupt)",
        ChatStatus::Reconnecting => "Reconnecting to the server…",
        ChatStatus::Working | ChatStatus::ExecutingTools => {
            "The agent is working: a message now waits for its next step (Stop to interrupt)"
        }
        ChatStatus::Ready | ChatStatus::Error(_) => {
            "Send a message (Enter sends, Shift+Enter adds a line)"
        }
    };
    let stoppable = move || {
        ctl.view
            .with(|view| view.status.is_busy() || view.pending.is_some())
    };
    let on_keydown = move |event: web_sys::KeyboardEvent| {
        if event.key() == "Enter" && !event.shift_key() && !event.is_composing() {
            event.prevent_default();
            ctl.send();
        }
    };
    view! {
        <form
            class="composer"
            on:submit=move |event| {
                event.prevent_default();
                ctl.send();
            }
        >
            <label class="visually-hidden" for="composer-input">
                "Message"
            </label>
            <textarea
                id="composer-input"
                data-testid="composer-input"
                rows="2"
                placeholder=placeholder
                disabled=disabled
                prop:value=move || ctl.composer.get()
                on:input=move |event| ctl.composer.set(event_target_value(&event))
                on:keydown=on_keydown
            ></textarea>
            <Show when=move || effect.with(|effect| effect.hint().is_some())>
                <p class="composer-hint" data-testid="composer-hint" aria-live="polite">
                    {move || effect.with(|effect| effect.hint().unwrap_or_default())}
                </p>
            </Show>
            <div class="composer-actions">
                <Show when=stoppable>
                    {stop::stop_button()}
                </Show>
                <button
                    type="submit"
                    class="button primary"
                    data-testid="send-button"
                    aria-label="Send message"
                    disabled=move || {
                        disabled()
                            || !effect.with(SendEffect::can_send)
                            || ctl.composer.with(|text| text.trim().is_empty())
                    }
                >
                    "Send"
                </button>
            </div>
        </form>
    }
}

/// Starts fetching what a chat shows once its agent works (`lazy::when_idle`).
fn prefetch() {
    prefetch_cards();
    stop::prefetch();
}
