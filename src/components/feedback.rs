//! Thumbs up or down under each finished answer (kagent's feedback, docs/rest.md, Feedback):
//! thumbs down asks for an optional reason, and the chosen rating stays shown. Not in a
//! read-only shared view. The thumbs come from the chunk of the split point `answer`, with the
//! markdown renderer (`chat::transcript`): [`answer_feedback`].

use leptos::html::Input;
use leptos::prelude::*;
use leptos::task::spawn_local;
use signoff_protocol::rest::NewFeedback;

use super::context::SharedView;
use super::lazy::{loaded, Loaded, Slot};
use crate::api;
use crate::components::controller::ChatCtl;
use crate::state::feedback::{rateable_task, Rating};

/// The rating buttons of one transcript row (its `items`), when it holds a finished answer.
#[component]
pub fn AnswerFeedback(items: Memo<Vec<String>>) -> impl IntoView {
    let shared = use_context::<SharedView>().is_some();
    let ctl = expect_context::<ChatCtl>();
    let task = Memo::new(move |_| {
        if shared {
            return None;
        }
        items.with(|items| ctl.view.with(|view| rateable_task(view, items)))
    });
    let chosen = Memo::new(move |_| {
        let task = task.get()?;
        ctl.view.with(|view| view.ratings.get(&task).copied())
    });
    let asking = RwSignal::new(false);
    let reason = RwSignal::new(String::new());
    let sending = RwSignal::new(false);
    let reason_box = NodeRef::<Input>::new();
    Effect::new(move |_| {
        if asking.get() {
            if let Some(input) = reason_box.get() {
                let _ = input.focus();
            }
        }
    });
    let send = move |rating: Rating| {
        let (Some(task_id), Some(context_id)) = (
            task.get_untracked(),
            ctl.view.with_untracked(|view| view.context_id.clone()),
        ) else {
            return;
        };
        let text = reason.get_untracked();
        let new = NewFeedback {
            task_id: task_id.clone(),
            context_id,
            rating,
            reason: (rating == Rating::Down && !text.trim().is_empty()).then_some(text),
        };
        sending.set(true);
        spawn_local(async move {
            match api::shares::give_feedback(&new).await {
                Ok(()) => {
                    ctl.view.update(|view| {
                        view.ratings.insert(task_id, rating);
                    });
                    asking.set(false);
                    reason.set(String::new());
                }
                Err(err) => ctl
                    .app()
                    .toast(format!("Could not send your feedback: {err}")),
            }
            sending.set(false);
        });
    };
    let pressed = move |rating: Rating| (chosen.get() == Some(rating)).to_string();
    view! {
        <Show when=move || task.with(Option::is_some)>
            <div class="feedback" role="group" aria-label="Rate this answer" data-testid="feedback">
                <button
                    type="button"
                    class="feedback-button"
                    aria-label="Good answer"
                    aria-pressed=move || pressed(Rating::Up)
                    data-testid="feedback-up"
                    disabled=move || sending.get()
                    on:click=move |_| send(Rating::Up)
                >
                    <Thumb />
                </button>
                <button
                    type="button"
                    class="feedback-button"
                    aria-label="Bad answer (you can say why)"
                    aria-pressed=move || pressed(Rating::Down)
                    aria-expanded=move || asking.get().to_string()
                    data-testid="feedback-down"
                    disabled=move || sending.get()
                    on:click=move |_| asking.update(|open| *open = !*open)
                >
                    <Thumb />
                </button>
                <Show when=move || chosen.get().is_some() && !asking.get()>
                    <span class="feedback-done" role="status" data-testid="feedback-done">
                        {move || match chosen.get() {
                            Some(Rating::Down) => "Thanks: rated not helpful",
                            _ => "Thanks: rated helpful",
                        }}
                    </span>
                </Show>
                <Show when=move || asking.get()>
                    <form
                        class="feedback-reason"
                        on:submit=move |event| {
                            event.prevent_default();
                            send(Rating::Down);
                        }
                        on:keydown=move |event: web_sys::KeyboardEvent| {
                            if event.key() == "Escape" {
                                asking.set(false);
                            }
                        }
                    >
                        <input
                            type="text"
                            node_ref=reason_box
                            aria-label="What was wrong? (optional)"
                            placeholder="What was wrong? (optional)"
                            data-testid="feedback-reason"
                            prop:value=move || reason.get()
                            on:input=move |event| reason.set(event_target_value(&event))
                        />
                        <button type="submit" class="button small primary" data-testid="feedback-send" disabled=move || sending.get()>
                            "Send"
                        </button>
                    </form>
                </Show>
            </div>
        </Show>
    }
}

/// A thumb icon (drawn here: emoji need a font the system may lack); CSS turns it down.
#[component]
fn Thumb() -> impl IntoView {
    view! {
        <svg class="thumb" viewBox="0 0 24 24" width="14" height="14" aria-hidden="true">
            <path d="M2 10h4v11H2zm6 11h9.2a2 2 0 0 0 2-1.6l1.7-7.2A2 2 0 0 0 19 10h-5.5l.8-4.3A2 2 0 0 0 12.3 3h-.6L8 10z" />
        </svg>
    }
}

/// The thumbs of an answer, given the ids of its messages.
type MakeFeedback = fn(Memo<Vec<String>>) -> AnyView;

thread_local! {
    static FEEDBACK: Slot<MakeFeedback> = ArcRwSignal::new(None);
}

// An agent answer's parts: its markdown (`chat::transcript`) and its thumbs, in one chunk.
#[wasm_split_helpers::wasm_split(answer, fallible)]
fn answer_feedback_view() -> Loaded<MakeFeedback> {
    Ok(|items| view! { <AnswerFeedback items=items /> }.into_any())
}

/// The thumbs under an agent answer ([`AnswerFeedback`]), from their chunk.
pub fn answer_feedback(items: Memo<Vec<String>>) -> impl IntoView {
    move || loaded(&FEEDBACK, answer_feedback_view).map(|make| make(items))
}
