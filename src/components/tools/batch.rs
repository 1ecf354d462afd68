//! The bar above a batch of two or more pending calls: Approve all (N), Reject all with one
//! reason, or Submit once every card is decided; and Ask… and Extend for the batch (`steps`).

use leptos::html::Div;
use leptos::prelude::*;
use signoff_protocol::hitl::Verdict;

use super::fields::focus_on_open;
use super::steps::BatchSteps;
use crate::components::controller::ChatCtl;
use crate::components::util::{reveal, shortcut_applies};
use crate::state::draft::{reject_all, BatchDraft};
use crate::state::PendingBatch;

/// The bar's state and intents. Copy: only arena handles, cheap to move into closures.
#[derive(Clone, Copy)]
struct Bar {
    ctl: ChatCtl,
    batch: Memo<Option<PendingBatch>>,
    /// The reason box is open; its text lives apart so typing never re-renders it.
    rejecting: RwSignal<bool>,
    reason_text: RwSignal<String>,
}

impl Bar {
    fn new(ctl: ChatCtl) -> Self {
        Bar {
            ctl,
            batch: Memo::new(move |_| ctl.view.with(|view| view.pending.clone())),
            rejecting: RwSignal::new(false),
            reason_text: RwSignal::new(String::new()),
        }
    }

    /// How many calls the batch holds.
    fn count(self) -> usize {
        self.batch
            .with(|batch| batch.as_ref().map_or(0, |batch| batch.requests.len()))
    }

    /// How many of them the person decided on their cards.
    fn decided(self) -> usize {
        self.batch.with(|batch| {
            let Some(batch) = batch else {
                return 0;
            };
            self.ctl.draft.with(|draft| {
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
    }

    /// Once every card is decided, Submit is the step left, and Approve all (which would
    /// override those choices) steps back.
    fn all_decided(self) -> bool {
        self.count() > 0 && self.decided() == self.count()
    }

    /// The tools of the batch's calls, in order.
    fn names(self) -> Vec<String> {
        self.batch.with(|batch| {
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
    }

    /// Why the reader may approve none of the batch's calls, as the approvals stream last said
    /// (the requester under a two-person rule, or an approver who already approved); `None`
    /// when they may approve some, or the batch is not routed.
    fn cannot_approve(self) -> Option<String> {
        let live = self.ctl.live?;
        let task = self
            .batch
            .with(|batch| batch.as_ref().map(|batch| batch.task_id.clone()))?;
        let me = live.me.get();
        live.inbox.with(|inbox| {
            crate::state::routing::cannot_approve_text(inbox.routing(&task)?, me.as_deref())
        })
    }

    /// The reader may approve some call: Approve all is offered (and the A key works) only then.
    fn may_approve(self) -> bool {
        self.cannot_approve().is_none()
    }

    /// How many calls Approve all would approve: those not yet decided on their cards.
    fn undecided(self) -> usize {
        self.count() - self.decided()
    }

    /// A decision is on its way: the buttons wait for the server's answer.
    fn disabled(self) -> bool {
        self.ctl.deciding.get()
    }

    /// The batch with its draft (a fresh one when the draft is another task's).
    fn draft_for(self) -> Option<(PendingBatch, BatchDraft)> {
        let batch = self.batch.get_untracked()?;
        let draft = self.ctl.draft.get_untracked();
        let draft = if draft.task_id == batch.task_id {
            draft
        } else {
            BatchDraft::new(&batch.task_id)
        };
        Some((batch, draft))
    }

    /// Approves every call still undecided, with any arguments edited on the cards, and sends
    /// it: a call already rejected on its card stays rejected.
    fn approve_all(self) {
        let Some((batch, draft)) = self.draft_for() else {
            return;
        };
        if self.ctl.deciding.get_untracked() || !self.may_approve() {
            return;
        }
        match draft.approve_rest(&batch) {
            Ok((draft, decision)) => {
                self.ctl.draft.set(draft);
                self.ctl.decide(batch, decision);
            }
            Err(err) => self.ctl.app().toast(err.to_string()),
        }
    }

    /// Opens the reason box, empty.
    fn open_reject(self) {
        self.reason_text.set(String::new());
        self.rejecting.set(true);
    }

    /// Rejects every call with the reason typed, and sends it.
    fn confirm_reject_all(self) {
        let Some((batch, mut draft)) = self.draft_for() else {
            return;
        };
        let reason = self.reason_text.get_untracked();
        if self.ctl.deciding.get_untracked() {
            return;
        }
        for request in &batch.requests {
            draft.choose(&request.id, Verdict::Deny, Some(&reason));
        }
        self.ctl.draft.set(draft);
        self.rejecting.set(false);
        self.ctl.decide(batch, reject_all(Some(&reason)));
    }

    /// Sends the decisions made on each card.
    fn submit(self) {
        let Some((batch, draft)) = self.draft_for() else {
            return;
        };
        match draft.decision(&batch) {
            Ok(decision) => self.ctl.decide(batch, decision),
            Err(err) => self.ctl.app().toast(err.to_string()),
        }
    }

    /// The bar's keys: A approves all, R opens the reason box.
    fn on_keydown(self, event: web_sys::KeyboardEvent) {
        if !shortcut_applies(&event) {
            return;
        }
        match event.key().as_str() {
            "a" | "A" if self.may_approve() && !self.all_decided() => {
                event.prevent_default();
                self.approve_all();
            }
            "r" | "R" => {
                event.prevent_default();
                self.open_reject();
            }
            _ => {}
        }
    }
}

/// The bar of the chat's pending batch.
#[component]
pub fn BatchBar() -> impl IntoView {
    let bar = Bar::new(expect_context::<ChatCtl>());
    let node = NodeRef::<Div>::new();
    // The batch comes into view when it arrives; the focus stays where the person types, so
    // A and R act only once they move to the bar themselves.
    Effect::new(move |_| {
        if let Some(element) = node.get() {
            if !bar.ctl.on_approvals_page() {
                reveal(&element);
            }
        }
    });
    view! {
        <div
            class="batch-bar"
            data-testid="batch-bar"
            role="region"
            aria-label="Pending tool calls"
            tabindex="-1"
            node_ref=node
            on:keydown=move |event| bar.on_keydown(event)
        >
            <BatchSummary bar=bar />
            <BatchButtons bar=bar />
            <BatchSteps />
            {move || bar.rejecting.get().then(|| view! { <RejectAllPanel bar=bar /> })}
        </div>
    }
}

/// How many calls wait, how many are decided, and which tools they are.
#[component]
fn BatchSummary(bar: Bar) -> impl IntoView {
    view! {
        <div class="batch-summary">
            <strong>{move || match bar.may_approve() {
                true => format!("{} tool calls wait for your decision", bar.count()),
                false => format!("{} tool calls wait for approval", bar.count()),
            }}</strong>
            // How many the reader decided on the cards; one who may approve none (she asked
            // under a two-person rule, or already approved) decides none there, and reads why.
            <Show when=move || bar.may_approve()>
                <span class="hint" data-testid="batch-progress">
                    {move || format!("{} of {} decided", bar.decided(), bar.count())}
                    // Keyboard hints: hidden on a touch screen, which has no keys to press.
                    <span class="key-hint">" · A approves the rest, R rejects all"</span>
                </span>
            </Show>
            {move || bar.cannot_approve().map(|why| view! {
                <p class="batch-why-not" data-testid="batch-why-not">{why}</p>
            })}
        </div>
        <ul class="batch-calls" aria-label="Calls in this batch">
            {move || bar.names().into_iter().map(|name| view! { <li>{name}</li> }).collect_view()}
        </ul>
    }
}

/// Approve all (N), Reject all, and Submit.
#[component]
fn BatchButtons(bar: Bar) -> impl IntoView {
    let disabled = move || bar.disabled();
    view! {
        <div class="tool-actions">
            <Show when=move || bar.may_approve() && !bar.all_decided()>
                <button
                    type="button"
                    class="button primary"
                    data-testid="approve-all"
                    aria-label=move || approve_all_label(bar)
                    disabled=disabled
                    on:click=move |_| bar.approve_all()
                >
                    {move || match bar.decided() {
                        0 => format!("Approve all ({})", bar.count()),
                        _ => format!("Approve the rest ({})", bar.undecided()),
                    }}
                </button>
            </Show>
            <button
                type="button"
                class="button danger-outline"
                data-testid="reject-all"
                aria-label="Reject all calls"
                disabled=disabled
                on:click=move |_| bar.open_reject()
            >
                "Reject all"
            </button>
            <button
                type="button"
                class="button"
                class:primary=move || bar.all_decided()
                data-testid="submit-decisions"
                aria-label="Submit the decisions made on each card"
                disabled=move || disabled() || bar.decided() < bar.count()
                on:click=move |_| bar.submit()
            >
                "Submit"
            </button>
        </div>
    }
}

/// What Approve all does, for a screen reader: it names what it approves, and that choices
/// made on the cards stand.
fn approve_all_label(bar: Bar) -> String {
    match bar.decided() {
        0 => format!(
            "Approve all {} calls: {}",
            bar.count(),
            bar.names().join(", ")
        ),
        decided => format!(
            "Approve the {} undecided calls; the {decided} decided on their cards stay as chosen",
            bar.undecided()
        ),
    }
}

/// The one reason for rejecting every call, and Confirm rejection.
#[component]
fn RejectAllPanel(bar: Bar) -> impl IntoView {
    let reason_text = bar.reason_text;
    view! {
        <div class="panel reject-panel">
            <label class="field-label" for="reject-all-reason">
                "Reason for rejecting all (optional, the agent reads it)"
            </label>
            <textarea
                id="reject-all-reason"
                data-testid="reject-all-reason"
                node_ref=focus_on_open()
                rows="2"
                prop:value=move || reason_text.get()
                on:input=move |event| reason_text.set(event_target_value(&event))
            ></textarea>
            <div class="tool-actions">
                <button type="button" class="button danger" data-testid="reject-all-confirm"
                    disabled=move || bar.disabled() on:click=move |_| bar.confirm_reject_all()>
                    "Confirm rejection"
                </button>
                <button type="button" class="button" data-testid="reject-all-cancel"
                    on:click=move |_| bar.rejecting.set(false)>
                    "Cancel"
                </button>
            </div>
        </div>
    }
}
