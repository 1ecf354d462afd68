//! One tool call's card (kagent's ToolDisplay): name, call id, source, status badge,
//! arguments, result; and while its call waits, Approve / Reject (with reason) / Edit, or for a
//! question call the questions to answer (`question`).

use leptos::html::Div;
use leptos::prelude::*;
use signoff_protocol::hitl::{ActionRequest, DecidedBy, Question, Verdict, ASK_USER};

use super::allow::{AlwaysAllow, Countdown, DecidedByLine};
use super::nested::NestedCards;
use super::pretty;
use super::preview::CallPreview;
use super::question::{Answers, QuestionForm};
use crate::components::clamp::{is_long, ShowMore};
use crate::components::controller::ChatCtl;
use crate::components::util::{copy_to_clipboard, typing_in_field};
use crate::state::draft::{parse_args, reject_all};
use crate::state::preview::edited_preview;
use crate::state::{PendingBatch, ToolCallView, ToolStatus};

/// What the card shows while its call waits: nothing open, the reason box, or the editor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Panel {
    None,
    Reject,
    Edit,
    /// "Always allow…": the policy's scope and matcher, before it takes effect.
    Always,
}

fn badge_icon(status: ToolStatus) -> &'static str {
    match status {
        ToolStatus::Requested => "○",
        ToolStatus::PendingApproval => "●",
        ToolStatus::Approved => "✓",
        ToolStatus::Rejected => "✕",
        ToolStatus::Executing => "…",
        ToolStatus::Completed => "✓",
        ToolStatus::Failed => "!",
        ToolStatus::NotRun => "–",
        ToolStatus::Denied => "⊘",
        ToolStatus::Expired => "⌛",
    }
}

#[component]
pub fn ToolCard(card_key: String) -> impl IntoView {
    let ctl = expect_context::<ChatCtl>();
    let lookup = card_key.clone();
    let card = Memo::new(move |_| ctl.view.with(|view| view.tool(&lookup).cloned()));
    let in_batch = card_key.clone();
    // The batch this card waits in, if it does.
    let batch = Memo::new(move |_| {
        ctl.view.with(|view| {
            view.pending
                .as_ref()
                .filter(|batch| batch.keys.contains(&in_batch))
                .cloned()
        })
    });
    let call_id = move || {
        card.with(|card| {
            card.as_ref()
                .map(|card| card.id.clone())
                .unwrap_or_default()
        })
    };
    let choice = Memo::new(move |_| {
        let id = call_id();
        let task = batch.with(|batch| batch.as_ref().map(|batch| batch.task_id.clone()));
        ctl.draft.with(|draft| {
            (Some(&draft.task_id) == task.as_ref())
                .then(|| draft.choices.get(&id).cloned())
                .flatten()
        })
    });
    let draft_args = Memo::new(move |_| {
        let id = call_id();
        let task = batch.with(|batch| batch.as_ref().map(|batch| batch.task_id.clone()));
        ctl.draft.with(|draft| {
            (Some(&draft.task_id) == task.as_ref())
                .then(|| draft.edited_args.get(&id).cloned())
                .flatten()
        })
    });
    let refused = Memo::new(move |_| {
        let id = call_id();
        let task = batch.with(|batch| batch.as_ref().map(|batch| batch.task_id.clone()));
        ctl.draft.with(|draft| {
            (Some(&draft.task_id) == task.as_ref())
                .then(|| draft.refused.get(&id).cloned())
                .flatten()
        })
    });
    // A question call is answered, not approved.
    let questions = Memo::new(move |_| {
        card.with(|card| {
            card.as_ref()
                .filter(|card| card.name == ASK_USER)
                .and_then(|card| Question::list_from_args(&card.args))
        })
    });
    let is_question = move || questions.with(Option::is_some);
    // A call that waits with a question at a peer whose answers approve every call (kagent
    // 0.10): it cannot be rejected alone, so it offers no choice of its own.
    let runs_with_answers = move || {
        !is_question()
            && batch.with(|batch| {
                batch.as_ref().is_some_and(|batch| {
                    batch.dialect.answers_approve_every_call()
                        && batch
                            .requests
                            .iter()
                            .any(|request| request.questions().is_some())
                })
            })
    };
    let panel = RwSignal::new(Panel::None);
    // The boxes' text lives apart from `panel`, so typing never re-renders the box.
    let reason_text = RwSignal::new(String::new());
    let args_text = RwSignal::new(String::new());
    let args_error = RwSignal::new(None::<String>);
    let node = NodeRef::<Div>::new();

    // The status shown: the person's choice shows at once, before the server answers.
    let shown = move || {
        let status = card.with(|card| card.as_ref().map(|card| card.status))?;
        Some(match (status, choice.get()) {
            (ToolStatus::PendingApproval, Some(choice)) => match choice.verdict {
                Verdict::Approve => ToolStatus::Approved,
                Verdict::Deny => ToolStatus::Rejected,
            },
            (status, _) => status,
        })
    };
    // What the badge says: an approved call with its result says Completed (or Failed), with
    // the decision beside it (`ToolCallView::outcome`).
    let outcome = move || {
        card.with(|card| card.as_ref().map(ToolCallView::outcome))
            .filter(|(_, decision)| decision.is_some())
            .or_else(|| shown().map(|status| (status, None)))
    };
    let lone = move || {
        batch.with(|batch| {
            batch
                .as_ref()
                .is_some_and(|batch| batch.requests.len() == 1)
        })
    };
    let waiting = move || batch.with(Option::is_some) && choice.with(Option::is_none);

    // Focus moves to a lone pending card when it arrives (a batch's bar takes it otherwise).
    Effect::new(move |_| {
        if lone() && waiting() {
            if let Some(element) = node.get() {
                let _ = element.focus();
            }
        }
    });

    let ensure_draft = move |batch: &PendingBatch| {
        if ctl
            .draft
            .with_untracked(|draft| draft.task_id != batch.task_id)
        {
            ctl.draft
                .set(crate::state::draft::BatchDraft::new(&batch.task_id));
        }
    };
    let edited_for_approval = move || -> Result<(), ()> {
        if panel.get_untracked() != Panel::Edit {
            return Ok(());
        }
        match parse_args(&args_text.get_untracked()) {
            Ok(args) => {
                // The edit belongs to this batch's draft (a stale one is replaced first).
                let Some(batch) = batch.get_untracked() else {
                    return Err(());
                };
                ensure_draft(&batch);
                let id = call_id();
                ctl.draft.update(|draft| draft.edit(&id, args));
                panel.set(Panel::None);
                Ok(())
            }
            Err(err) => {
                args_error.set(Some(format!("Cannot approve: {err}")));
                Err(())
            }
        }
    };
    let approve = move || {
        let Some(batch) = batch.get_untracked() else {
            return;
        };
        if ctl.deciding.get_untracked() || edited_for_approval().is_err() {
            return;
        }
        ensure_draft(&batch);
        let id = call_id();
        ctl.draft
            .update(|draft| draft.choose(&id, Verdict::Approve, None));
        if batch.requests.len() == 1 {
            match ctl.draft.with_untracked(|draft| draft.approve_all(&batch)) {
                Ok(decision) => ctl.decide(batch, decision),
                Err(err) => ctl.app().toast(err.to_string()),
            }
        }
    };
    let confirm_reject = move || {
        let Some(batch) = batch.get_untracked() else {
            return;
        };
        if panel.get_untracked() != Panel::Reject || ctl.deciding.get_untracked() {
            return;
        }
        let reason = reason_text.get_untracked();
        ensure_draft(&batch);
        let id = call_id();
        ctl.draft
            .update(|draft| draft.choose(&id, Verdict::Deny, Some(&reason)));
        panel.set(Panel::None);
        if batch.requests.len() == 1 {
            ctl.decide(batch, reject_all(Some(&reason)));
        }
    };
    let open_reject = move || {
        reason_text.set(String::new());
        panel.set(Panel::Reject);
    };
    // The draft knows which editors are open, so the batch's Approve all waits for them.
    Effect::new(move |_| {
        let open = panel.get() == Panel::Edit;
        let id = call_id();
        let Some(batch) = batch.get_untracked() else {
            return;
        };
        let known = ctl
            .draft
            .with_untracked(|draft| draft.task_id == batch.task_id && draft.editing.contains(&id));
        if known != open {
            ensure_draft(&batch);
            ctl.draft.update(|draft| draft.set_editing(&id, open));
        }
    });
    let open_editor = move || {
        let args = draft_args
            .get_untracked()
            .or_else(|| card.with_untracked(|card| card.as_ref().map(|card| card.args.clone())))
            .unwrap_or_default();
        args_text.set(pretty(&args));
        args_error.set(None);
        panel.set(Panel::Edit);
    };
    let on_keydown = move |event: web_sys::KeyboardEvent| {
        if typing_in_field(&event)
            || !waiting()
            || is_question()
            || runs_with_answers()
            || event.ctrl_key()
            || event.meta_key()
            || event.alt_key()
        {
            return;
        }
        match event.key().as_str() {
            "a" | "A" => {
                event.prevent_default();
                event.stop_propagation();
                approve();
            }
            "r" | "R" => {
                event.prevent_default();
                event.stop_propagation();
                open_reject();
            }
            _ => {}
        }
    };
    let disabled = move || ctl.deciding.get();
    // kagent's peers cannot take edited arguments (docs/wire.md, kagent dialect).
    let can_edit = move || {
        batch.with(|batch| {
            batch
                .as_ref()
                .is_some_and(|batch| batch.dialect.supports_modified_args())
        })
    };
    // Policies live on this server: offered for its own agents' calls, not for a kagent peer.
    let can_allow = move || {
        let tool = card.with(|card| card.as_ref().map(|card| card.name.clone()));
        batch.with(|batch| {
            batch
                .as_ref()
                .is_some_and(|batch| batch.dialect == signoff_protocol::hitl::Dialect::Native)
        }) && ctl.agent().is_some_and(|agent| {
            agent
                .tools
                .iter()
                .any(|known| Some(&known.name) == tool.as_ref())
        })
    };
    let expires_at =
        move || batch.with(|batch| batch.as_ref().and_then(|batch| batch.expires_at.clone()));
    let name = move || {
        card.with(|card| {
            card.as_ref()
                .map(|card| card.name.clone())
                .unwrap_or_default()
        })
    };

    view! {
        <div
            class=move || {
                format!("tool-card status-{}", outcome().map(|(status, _)| status.slug()).unwrap_or("requested"))
            }
            data-testid="tool-card"
            data-call-id=call_id
            data-tool=name
            data-status=move || shown().map(ToolStatus::slug).unwrap_or("requested")
            data-outcome=move || outcome().map(|(status, _)| status.slug()).unwrap_or("requested")
            tabindex="-1"
            node_ref=node
            role="group"
            aria-label=move || format!("Tool call {}", name())
            on:keydown=on_keydown
        >
            <div class="tool-head">
                <span class="tool-name" data-testid="tool-name">{name}</span>
                <span class="tool-id">{call_id}</span>
                {move || {
                    card.with(|card| card.as_ref().and_then(|card| card.server.clone()))
                        .map(|server| view! { <span class="tool-server">{server}</span> })
                }}
                {move || expires_at().map(|at| {
                    let task = batch.with_untracked(|batch| batch.as_ref().map(|batch| batch.task_id.clone())).unwrap_or_default();
                    view! { <Countdown expires_at=at on_due=Callback::new(move |()| ctl.watch_expiry(task.clone())) /> }
                })}
                <span
                    class="badge"
                    data-testid="tool-status"
                >
                    <span aria-hidden="true">{move || outcome().map(|(status, _)| badge_icon(status))}</span>
                    {move || match outcome().map(|(status, _)| status) {
                        Some(ToolStatus::PendingApproval) if is_question() => Some("Waiting for your answer"),
                        status => status.map(ToolStatus::label),
                    }}
                </span>
                {move || outcome().and_then(|(_, decision)| decision).map(|decision| view! {
                    <span class="decision-chip" data-testid="decision-chip">{decision.label()}</span>
                })}
            </div>
            {move || card.get().map(|card| {
                // The held request, for its preview (docs/wire.md, Previews).
                let request = batch.with(|batch| {
                    batch.as_ref().and_then(|batch| batch.requests.iter().find(|request| request.id == card.id).cloned())
                });
                view! { <CardBody card=card draft_args=draft_args pending=batch.with(Option::is_some) question=is_question() request=request /> }
            })}
            {move || {
                let questions = questions.get()?;
                batch.with(Option::is_some).then(|| view! { <QuestionForm call_id=call_id() questions=questions batch=batch /> })
            }}
            <Show when=move || waiting() && runs_with_answers()>
                <p class="hint" data-testid="runs-with-answers">"Runs when the question is answered (this agent cannot reject it alone); Reject all stops it."</p>
            </Show>
            <Show when=move || waiting() && !is_question() && !runs_with_answers()>
                <div class="tool-actions">
                    <button
                        type="button"
                        class="button primary"
                        data-testid="approve-button"
                        aria-label=move || format!("Approve {} (A)", name())
                        disabled=disabled
                        on:click=move |_| approve()
                    >
                        "Approve"
                    </button>
                    <button
                        type="button"
                        class="button danger-outline"
                        data-testid="reject-button"
                        aria-label=move || format!("Reject {} (R)", name())
                        disabled=disabled
                        on:click=move |_| open_reject()
                    >
                        "Reject"
                    </button>
                    <Show when=can_allow>
                        <button
                            type="button"
                            class="button"
                            data-testid="always-allow-button"
                            aria-label=move || format!("Approve {} and always allow such calls", name())
                            disabled=disabled
                            on:click=move |_| panel.set(Panel::Always)
                        >
                            "Always allow…"
                        </button>
                    </Show>
                    <button
                        type="button"
                        class="button"
                        data-testid="edit-button"
                        hidden=move || !can_edit()
                        aria-label=move || format!("Edit the arguments of {}", name())
                        disabled=disabled
                        on:click=move |_| open_editor()
                    >
                        "Edit"
                    </button>
                </div>
            </Show>
            <Show when=move || !waiting() && choice.with(Option::is_some) && batch.with(Option::is_some)>
                <div class="tool-actions">
                    <span class="hint">
                        {move || {
                            let reason = choice.get().and_then(|choice| choice.reason);
                            let reason = reason.map(|reason| format!("Reason: \"{reason}\". "));
                            format!("{}Decided here; sent with Submit.", reason.unwrap_or_default())
                        }}
                    </span>
                    <button
                        type="button"
                        class="button"
                        data-testid="undo-button"
                        aria-label=move || format!("Change the decision on {}", name())
                        disabled=disabled
                        on:click=move |_| {
                            let id = call_id();
                            ctl.draft.update(|draft| draft.undo(&id));
                        }
                    >
                        "Change"
                    </button>
                </div>
            </Show>
            {move || refused.get().map(|error| view! { <p class="field-error" role="alert" data-testid="decision-error">"Not accepted: "{error}</p> })}
            {move || match panel.get() {
                Panel::None => ().into_any(),
                Panel::Reject => view! {
                    <div class="panel reject-panel">
                        <label class="field-label" for=move || format!("reason-{}", call_id())>
                            "Reason (optional, the agent reads it)"
                        </label>
                        <textarea
                            id=move || format!("reason-{}", call_id())
                            data-testid="reject-reason"
                            node_ref=focus_on_open()
                            rows="2"
                            prop:value=move || reason_text.get()
                            on:input=move |event| reason_text.set(event_target_value(&event))
                        ></textarea>
                        <div class="tool-actions">
                            <button type="button" class="button danger" data-testid="reject-confirm"
                                disabled=disabled on:click=move |_| confirm_reject()>
                                "Confirm rejection"
                            </button>
                            <button type="button" class="button" data-testid="reject-cancel"
                                on:click=move |_| panel.set(Panel::None)>
                                "Cancel"
                            </button>
                        </div>
                    </div>
                }
                .into_any(),
                Panel::Always => {
                    let key = ctl.key();
                    let (tool, args) = card.with_untracked(|card| {
                        card.as_ref()
                            .map(|card| (card.name.clone(), card.args.clone()))
                            .unwrap_or_default()
                    });
                    view! {
                        <AlwaysAllow
                            agent=format!("{}/{}", key.namespace, key.agent)
                            tool=tool
                            args=args
                            context_id=ctl.view.with_untracked(|view| view.context_id.clone())
                            on_allowed=Callback::new(move |()| {
                                panel.set(Panel::None);
                                approve();
                            })
                            on_close=Callback::new(move |()| panel.set(Panel::None))
                            disabled=Signal::derive(disabled)
                        />
                    }
                    .into_any()
                }
                Panel::Edit => view! {
                    <div class="panel edit-panel">
                        <label class="field-label" for=move || format!("args-{}", call_id())>
                            "Arguments (JSON)"
                        </label>
                        <textarea
                            id=move || format!("args-{}", call_id())
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
                                on:click=move |_| { let _ = edited_for_approval(); }>
                                "Save"
                            </button>
                            <button type="button" class="button" data-testid="edit-cancel"
                                on:click=move |_| panel.set(Panel::None)>
                                "Cancel"
                            </button>
                        </div>
                    </div>
                }
                .into_any(),
            }}
            {view! { <NestedCards parent_key=card_key.clone() /> }.into_any()}
        </div>
    }
}

/// A box that takes the focus when it opens (scrolled into view): the reason or the arguments
/// a person opened it to type.
pub(super) fn focus_on_open() -> NodeRef<leptos::html::Textarea> {
    let node = NodeRef::new();
    node.on_load(|element: web_sys::HtmlTextAreaElement| {
        let _ = element.focus();
    });
    node
}

/// Arguments (expanded while pending), edited arguments, and the result or error.
#[component]
fn CardBody(
    card: ToolCallView,
    draft_args: Memo<Option<serde_json::Value>>,
    pending: bool,
    question: bool,
    request: Option<ActionRequest>,
) -> impl IntoView {
    let preview = request.as_ref().and_then(ActionRequest::preview);
    // A question's arguments are its questions, shown as the form or the answers instead.
    let args_open = !question && (pending || card.status == ToolStatus::PendingApproval);
    let answers = card.result.clone().filter(|_| question);
    let result = card.result.clone();
    let result_title = if card.is_error { "Error" } else { "Result" };
    let edited = card.edited_args.clone();
    let decided_by = card.decided_by.clone().or_else(|| {
        (card.status == ToolStatus::Denied).then(|| DecidedBy::Rule {
            rule: card.reason.clone().unwrap_or_default(),
            allowed: false,
        })
    });
    // A denied call's reason is its rule, which the line above says.
    let reason = card
        .reason
        .clone()
        .filter(|_| card.status != ToolStatus::Denied);
    view! {
        <details class="tool-section" open=args_open data-testid="tool-args">
            <summary>{if edited.is_some() { "Original arguments" } else { "Arguments" }}</summary>
            <pre class="json">{pretty(&card.args)}</pre>
        </details>
        {preview.map(|preview| view! { <CallPreview preview=preview title="Change" testid="tool-preview" /> })}
        {edited.map(|edited| view! {
            <div class="tool-section edited" data-testid="tool-edited-args">
                <div class="section-title">"Edited arguments (what ran)"</div>
                <pre class="json">{pretty(&edited)}</pre>
            </div>
        })}
        {move || draft_args.get().map(|args| view! {
            <div class="tool-section edited" data-testid="tool-draft-args">
                <div class="section-title">"Edited arguments (sent when approved)"</div>
                <pre class="json">{pretty(&args)}</pre>
            </div>
            {request.as_ref().and_then(|request| edited_preview(request, &args)).map(|edited| match edited {
                Ok(preview) => view! { <CallPreview preview=preview title="Change with your edit" testid="tool-edited-preview" /> }.into_any(),
                Err(why) => view! { <p class="hint" data-testid="tool-edited-preview">{why}</p> }.into_any(),
            })}
        })}
        {answers.map(|result| view! { <Answers result=result /> })}
        {decided_by.map(|decided_by| view! { <DecidedByLine decided_by=decided_by /> })}
        {card.no_result_reported().then(|| view! {
            <p class="decided-by" data-testid="no-result">"No result reported: the task completed without sending this call's result."</p>
        })}
        {(card.status == ToolStatus::Expired).then(|| view! {
            <p class="decided-by expired-note" data-testid="expired-note">"Nobody decided in time; it did not run."</p>
        })}
        {reason.map(|reason| view! {
            <blockquote class="tool-reason" data-testid="tool-reason">{format!("Reason: {reason}")}</blockquote>
        })}
        {result.map(|result| {
            let text = pretty(&result);
            let copy = text.clone();
            let long = Signal::stored(is_long(&text));
            let open = RwSignal::new(false);
            view! {
                <details class="tool-section" class:error=card.is_error data-testid="tool-result">
                    <summary>{result_title}</summary>
                    <button type="button" class="button small copy-result" aria-label="Copy the result"
                        on:click=move |_| copy_to_clipboard(&copy)>
                        "Copy"
                    </button>
                    <pre class="json" class:long=long class:clamped=move || long.get() && !open.get()>{text}</pre>
                    <ShowMore long=long open=open />
                </details>
            }
        })}
    }
}
