//! A waiting batch's steps besides deciding it (docs/rest.md, Hand-over and Deadline ladder):
//! "Ask…" hands it to a person or a group, who may then decide it too, and "Extend" pushes its
//! deadline back within its agent's `max_extend`. Each says what the server answered ("Asked
//! alice"), or its refusal in its own words. Shown on a lone call's card and on the batch bar,
//! in the chat and in the inbox alike; built in the cards chunk.

use leptos::html::Input;
use leptos::prelude::*;
use leptos::task::spawn_local;
use signoff_protocol::hitl::Dialect;

use crate::api;
use crate::components::controller::ChatCtl;
use crate::state::ladder::{allowance_ms, extended_text, handed_text, handover_target, offered};

/// What the last step's request came back with.
#[derive(Debug, Clone, PartialEq)]
enum Said {
    Done(String),
    Refused(String),
}

/// The steps' state and intents. Copy: only arena handles, cheap to move into closures.
#[derive(Clone, Copy)]
struct Steps {
    ctl: ChatCtl,
    /// The waiting batch's task, when the batch is this server's own (a relayed peer's batch
    /// is decided at the peer, which knows no hand-over).
    task: Memo<Option<String>>,
    asking: RwSignal<bool>,
    /// The name typed into "Ask…"; apart from `asking` so typing never re-renders the box.
    to_text: RwSignal<String>,
    busy: RwSignal<bool>,
    asked: RwSignal<Option<Said>>,
    extended: RwSignal<Option<Said>>,
}

/// The deadline of the batch of `task`: the later of the chat's (from its interrupt) and the
/// approvals stream's, which an extension moves (its `pending` event is said again with it).
pub(crate) fn deadline(ctl: ChatCtl, task: &str, own: Option<String>) -> Option<String> {
    let streamed = ctl.live.and_then(|live| {
        live.inbox
            .with(|inbox| inbox.batch(task).and_then(|batch| batch.expires_at.clone()))
    });
    match (own, streamed) {
        (Some(own), Some(streamed)) => {
            if js_sys::Date::parse(&streamed) > js_sys::Date::parse(&own) {
                Some(streamed)
            } else {
                Some(own)
            }
        }
        (own, streamed) => own.or(streamed),
    }
}

impl Steps {
    fn new(ctl: ChatCtl) -> Self {
        Steps {
            ctl,
            task: Memo::new(move |_| {
                ctl.view.with(|view| {
                    view.pending
                        .as_ref()
                        .filter(|batch| batch.dialect == Dialect::Native)
                        .map(|batch| batch.task_id.clone())
                })
            }),
            asking: RwSignal::new(false),
            to_text: RwSignal::new(String::new()),
            busy: RwSignal::new(false),
            asked: RwSignal::new(None),
            extended: RwSignal::new(None),
        }
    }

    /// Whether the reader may approve the batch: `None` while it is not routed (then its
    /// requester decides it, and only they read the chat with a composer).
    fn eligible(self) -> Option<bool> {
        let task = self.task.get()?;
        let live = self.ctl.live?;
        live.inbox.with(|inbox| {
            inbox
                .routing(&task)
                .map(|routing| !routing.eligible_by.is_empty())
        })
    }

    /// The reader owns the chat (on the Approvals page every batch is read as its chat is).
    fn owner(self) -> bool {
        self.ctl.requested_by.with(Option::is_none)
    }

    /// The requester or an eligible approver may hand the batch on.
    fn may_ask(self) -> bool {
        self.task.with(Option::is_some) && (self.owner() || self.eligible() == Some(true))
    }

    /// An eligible approver (the requester of a batch not routed) may extend a deadline.
    fn may_extend(self) -> bool {
        let Some(task) = self.task.get() else {
            return false;
        };
        let own = self.ctl.view.with(|view| {
            view.pending
                .as_ref()
                .and_then(|batch| batch.expires_at.clone())
        });
        deadline(self.ctl, &task, own).is_some() && self.eligible().unwrap_or_else(|| self.owner())
    }

    /// The extensions that fit the limit the batch's `ladder` says on the approvals stream
    /// (from the start, and again after each extension), or all of them while it says none.
    fn offered(self) -> Vec<(&'static str, &'static str)> {
        let allowance = self.task.get().and_then(|task| {
            self.ctl.live?.inbox.with(|inbox| {
                let batch = inbox.batch(&task)?;
                let ladder = batch.ladder.as_deref()?;
                allowance_ms(
                    js_sys::Date::parse(ladder.first_expires_at.as_deref()?),
                    ladder.max_extend.as_deref()?,
                    js_sys::Date::parse(batch.expires_at.as_deref()?),
                )
            })
        });
        offered(allowance)
    }

    /// Hands the batch to whom the box names.
    fn ask(self) {
        let Some(task) = self.task.get_untracked() else {
            return;
        };
        let to = match handover_target(&self.to_text.get_untracked()) {
            Ok(to) => to,
            Err(err) => return self.asked.set(Some(Said::Refused(err))),
        };
        self.busy.set(true);
        spawn_local(async move {
            let said = match api::batches::hand_over(&task, &to).await {
                Ok(handed) => {
                    self.asking.try_set(false);
                    self.to_text.try_set(String::new());
                    Said::Done(handed_text(&handed))
                }
                Err(err) => Said::Refused(err.to_string()),
            };
            self.asked.try_set(Some(said));
            self.busy.try_set(false);
        });
    }

    /// Pushes the deadline back `by` (`label` as the button said it).
    fn extend(self, by: &'static str, label: &'static str) {
        let Some(task) = self.task.get_untracked() else {
            return;
        };
        self.busy.set(true);
        spawn_local(async move {
            match api::batches::extend(&task, by).await {
                Ok(extended) => {
                    let text = extended_text(label, &extended.max_extend);
                    self.extended.try_set(Some(Said::Done(text)));
                }
                Err(err) => {
                    self.extended.try_set(Some(Said::Refused(err.to_string())));
                }
            }
            self.busy.try_set(false);
        });
    }
}

/// "Ask…" and "Extend" for the waiting batch of the [`ChatCtl`] in context, to whoever may
/// take them, with what the server said.
#[component]
pub(crate) fn BatchSteps() -> impl IntoView {
    let steps = Steps::new(expect_context::<ChatCtl>());
    view! {
        <Show when=move || steps.may_ask() || steps.may_extend()>
            <div class="tool-actions batch-steps" data-testid="batch-steps">
                <Show when=move || steps.may_ask()>
                    <button
                        type="button"
                        class="button"
                        data-testid="ask-button"
                        aria-expanded=move || steps.asking.get().to_string()
                        aria-label="Ask someone else to decide this batch"
                        on:click=move |_| steps.asking.update(|open| *open = !*open)
                    >
                        "Ask…"
                    </button>
                </Show>
                <Show when=move || steps.may_extend()>
                    <ExtendChoices steps=steps />
                </Show>
            </div>
            {move || steps.asking.get().then(|| view! { <AskPanel steps=steps /> })}
            {move || steps.asked.get().map(|said| said_line(said, "handover", "Not asked: "))}
            {move || steps.extended.get().map(|said| said_line(said, "extend", "Not extended: "))}
        </Show>
    }
}

/// The extensions on offer, or that the deadline is as late as the agent allows.
#[component]
fn ExtendChoices(steps: Steps) -> impl IntoView {
    view! {
        <span class="hint">"Extend the deadline:"</span>
        {move || {
            let choices = steps.offered();
            if choices.is_empty() {
                return view! {
                    <span class="hint" data-testid="extend-none">"as late as its agent allows"</span>
                }
                    .into_any();
            }
            choices
                .into_iter()
                .map(|(by, label)| {
                    view! {
                        <button
                            type="button"
                            class="button"
                            data-testid="extend-button"
                            data-by=by
                            aria-label=format!("Extend the deadline by {}", label.trim_start_matches('+'))
                            disabled=move || steps.busy.get()
                            on:click=move |_| steps.extend(by, label)
                        >
                            {label}
                        </button>
                    }
                })
                .collect_view()
                .into_any()
        }}
    }
}

/// The box that names whom to ask, with Ask and Cancel.
#[component]
fn AskPanel(steps: Steps) -> impl IntoView {
    let id = format!("ask-to-{}", steps.task.get_untracked().unwrap_or_default());
    let input = NodeRef::<Input>::new();
    input.on_load(|element: web_sys::HtmlInputElement| {
        let _ = element.focus();
    });
    view! {
        <form
            class="panel ask-panel"
            on:submit=move |event| {
                event.prevent_default();
                steps.ask();
            }
        >
            <label class="field-label" for=id.clone()>
                "Ask a person or a group to decide it too (alice, group:sre)"
            </label>
            <input
                id=id
                type="text"
                data-testid="ask-to"
                autocomplete="off"
                node_ref=input
                prop:value=move || steps.to_text.get()
                on:input=move |event| steps.to_text.set(event_target_value(&event))
            />
            <div class="tool-actions">
                <button
                    type="submit"
                    class="button primary"
                    data-testid="ask-confirm"
                    disabled=move || steps.busy.get()
                >
                    "Ask"
                </button>
                <button
                    type="button"
                    class="button"
                    data-testid="ask-cancel"
                    on:click=move |_| steps.asking.set(false)
                >
                    "Cancel"
                </button>
            </div>
        </form>
    }
}

/// What a step's request came back with: the answer as a status, a refusal as an alert.
fn said_line(said: Said, what: &'static str, refused: &'static str) -> AnyView {
    match said {
        Said::Done(text) => view! {
            <p class="hint step-done" role="status" data-testid=format!("{what}-result")>{text}</p>
        }
        .into_any(),
        Said::Refused(text) => view! {
            <p class="field-error" role="alert" data-testid=format!("{what}-error")>{refused}{text}</p>
        }
        .into_any(),
    }
}
