//! The composer's Stop. Stop cancels the task; an agent that cannot cancel (kagent 0.10
//! answers `tasks/cancel` with "Cancellation is not supported", and the agents list says so)
//! gets, while a batch waits, "Reject all and stop": every pending call rejected with a reason,
//! so the agent wraps up; while it works, a disabled Stop whose tip says why. It comes from the
//! chunk of the split point `stop` (a fresh chat has nothing to stop), fetched while a loaded
//! chat is idle.

use leptos::prelude::*;
use signoff_protocol::hitl::Decision;

use crate::components::context::AppCtx;
use crate::components::controller::ChatCtl;
use crate::components::lazy::{loaded, Loaded, Slot};

/// The reason the agent's model reads for calls rejected by "Reject all and stop".
const STOP_REASON: &str = "The person stopped this task: do not run these calls, and finish now.";

#[component]
fn StopButton() -> impl IntoView {
    let ctl = expect_context::<ChatCtl>();
    let app = expect_context::<AppCtx>();
    let agent = Memo::new(move |_| app.current_agent());
    let cancelable =
        move || agent.with(|agent| agent.as_ref().is_none_or(|agent| agent.cancelable));
    let agent_name = move || {
        agent.with(|agent| {
            agent
                .as_ref()
                .map(|agent| agent.reference())
                .unwrap_or_default()
        })
    };
    let waiting = move || ctl.view.with(|view| view.pending.is_some());
    let reject_all = move |_| {
        if let Some(batch) = ctl.view.with_untracked(|view| view.pending.clone()) {
            ctl.decide(batch, Decision::deny_all(Some(STOP_REASON.to_owned())));
        }
    };
    view! {
        {move || {
            if cancelable() {
                view! {
                    <button
                        type="button"
                        class="button danger"
                        data-testid="stop-button"
                        aria-label="Stop the agent"
                        on:click=move |_| ctl.stop()
                    >
                        "Stop"
                    </button>
                }
                    .into_any()
            } else if waiting() {
                let tip = format!(
                    "{} cannot cancel a task. This rejects every pending call, telling the agent \
                     to stop, and it wraps up.",
                    agent_name()
                );
                let title = tip.clone();
                view! {
                    <button
                        type="button"
                        class="button danger"
                        data-testid="reject-and-stop"
                        title=title
                        aria-label=tip
                        disabled=move || ctl.deciding.get()
                        on:click=reject_all
                    >
                        "Reject all and stop"
                    </button>
                }
                    .into_any()
            } else {
                let tip = format!(
                    "{} cannot cancel a running task. Wait for its answer, or reject its calls \
                     when it asks.",
                    agent_name()
                );
                // A disabled button gets no pointer events in some browsers: the tip is on a
                // wrapper, and on the button for screen readers.
                let title = tip.clone();
                view! {
                    <span class="stop-unsupported" title=title data-testid="stop-unsupported">
                        <button
                            type="button"
                            class="button danger"
                            data-testid="stop-button"
                            aria-label=tip
                            disabled=true
                        >
                            "Stop"
                        </button>
                    </span>
                }
                    .into_any()
            }
        }}
    }
}

thread_local! {
    static STOP: Slot<fn() -> AnyView> = ArcRwSignal::new(None);
}

#[wasm_split_helpers::wasm_split(stop, fallible)]
fn stop_button_view() -> Loaded<fn() -> AnyView> {
    Ok(|| view! { <StopButton /> }.into_any())
}

/// [`StopButton`], from the chunk of the split point `stop`.
pub fn stop_button() -> impl IntoView {
    move || loaded(&STOP, stop_button_view).map(|make| make())
}

/// Starts fetching Stop's chunk.
pub fn prefetch() {
    let _ = loaded(&STOP, stop_button_view);
}
