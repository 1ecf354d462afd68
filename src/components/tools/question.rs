//! A question card's body (kagent's `ask_user`, and Signoff's own): each question with its
//! choices as radio buttons or checkboxes, a text box where it takes free text, and one Submit
//! for the whole pause; once answered, the answers as the result gives them.

use leptos::prelude::*;
use signoff_protocol::hitl::question::{answers_from_result, AnswerKind, Question};

use crate::components::controller::ChatCtl;
use crate::components::lazy::{loaded, Loaded, Slot};
use crate::state::draft::{reject_all, BatchDraft};
use crate::state::PendingBatch;

/// What a person must know before Submit when a question waits with calls to approve.
pub(super) fn gated_notice(batch: &PendingBatch) -> Option<String> {
    let gated: Vec<&str> = batch
        .requests
        .iter()
        .filter(|request| request.questions().is_none())
        .map(|request| request.name.as_str())
        .collect();
    if gated.is_empty() || gated.len() == batch.requests.len() {
        return None;
    }
    let names = gated.join(", ");
    Some(if batch.dialect.answers_approve_every_call() {
        format!(
            "Submit also runs {names}: this agent (kagent) takes answers as approval of every \
             waiting call and cannot reject one while answering. To stop {names}, use Reject all \
             (the question is then cancelled)."
        )
    } else {
        format!("Decide {names} on its card; Submit sends the answers and the decisions together.")
    })
}

/// The draft a question form writes its answers into: its batch's, and the error of the last
/// Submit (cleared by the next answer). Copy: only arena handles.
#[derive(Clone, Copy)]
struct Answering {
    ctl: ChatCtl,
    batch: Memo<Option<PendingBatch>>,
    error: RwSignal<Option<String>>,
}

impl Answering {
    /// Changes the draft; a stale one (of another task) is replaced before the first answer.
    fn update(self, change: impl FnOnce(&mut BatchDraft)) {
        let Some(task) = self
            .batch
            .with_untracked(|batch| batch.as_ref().map(|b| b.task_id.clone()))
        else {
            return;
        };
        self.ctl.draft.update(|draft| {
            if draft.task_id != task {
                *draft = BatchDraft::new(&task);
            }
            change(draft);
        });
        self.error.set(None);
    }

    /// Sends the answers with the batch's other decisions, or says what is missing.
    fn submit(self) {
        let Some(batch) = self.batch.get_untracked() else {
            return;
        };
        let decision = self.ctl.draft.with_untracked(|draft| {
            if draft.task_id == batch.task_id {
                draft.submit(&batch)
            } else {
                BatchDraft::new(&batch.task_id).submit(&batch)
            }
        });
        match decision {
            Ok(decision) => self.ctl.decide(batch, decision),
            Err(err) => self.error.set(Some(err.to_string())),
        }
    }

    /// Rejects the whole batch (the question is cancelled).
    fn reject(self) {
        if let Some(batch) = self.batch.get_untracked() {
            self.ctl.decide(batch, reject_all(None));
        }
    }
}

/// The questions of a waiting call, as inputs bound to the batch's draft.
#[component]
fn QuestionForm(
    call_id: String,
    questions: Vec<Question>,
    batch: Memo<Option<PendingBatch>>,
) -> impl IntoView {
    let ctl = expect_context::<ChatCtl>();
    let count = questions.len();
    let form = Answering {
        ctl,
        batch,
        error: RwSignal::new(None),
    };
    let notice = move || batch.with(|batch| batch.as_ref().and_then(gated_notice));
    let disabled = move || ctl.deciding.get();
    // kagent's HITL extension has no rejection of a lone question.
    let can_reject = move || {
        batch.with(|batch| {
            batch.as_ref().is_some_and(|batch| {
                batch.dialect.can_reject_a_lone_question() || batch.requests.len() > 1
            })
        })
    };
    // The batch is this one question: declining it is the whole decision.
    let lone = move || {
        batch.with(|batch| {
            batch
                .as_ref()
                .is_some_and(|batch| batch.requests.len() == 1)
        })
    };
    let fields = questions
        .into_iter()
        .enumerate()
        .map(|(at, question)| {
            view! { <QuestionField form=form call_id=call_id.clone() at=at count=count question=question /> }
        })
        .collect_view();
    view! {
        <div class="question-form" data-testid="question-form">
            {fields}
            {move || notice().map(|notice| view! { <p class="question-notice" data-testid="question-notice">{notice}</p> })}
            {move || form.error.get().map(|error| view! { <p class="field-error" role="alert" data-testid="question-error">{error}</p> })}
            <div class="tool-actions">
                <button type="button" class="button primary" data-testid="question-submit"
                    disabled=disabled on:click=move |_| form.submit()>
                    "Submit"
                </button>
                <button type="button" class="button danger-outline" data-testid="question-reject"
                    hidden=move || !can_reject() disabled=disabled on:click=move |_| form.reject()>
                    {move || match lone() {
                        true => "Decline to answer",
                        false => "Reject all",
                    }}
                </button>
            </div>
        </div>
    }
}

/// Question `at` (of `count`) of call `call_id`: a text box where it takes free text, else its
/// choices as radio buttons, or checkboxes when it takes several.
#[component]
fn QuestionField(
    form: Answering,
    call_id: String,
    at: usize,
    count: usize,
    question: Question,
) -> impl IntoView {
    let ctl = form.ctl;
    let id = call_id;
    let group = format!("q-{id}-{at}");
    let input = if question.is_free_text() {
        let current = {
            let id = id.clone();
            move || {
                ctl.draft
                    .with(|draft| draft.answer(&id, at).first().cloned().unwrap_or_default())
            }
        };
        let on_input = move |event: leptos::ev::Event| {
            let text = event_target_value(&event);
            form.update(|draft| draft.write(&id, at, count, &text));
        };
        match typed_input(&question.kind) {
            // A form field's typed value: one line, the browser's own input for its type.
            Some(typed) => view! {
                <input
                    id=group.clone()
                    class="question-text"
                    data-testid="question-text"
                    type=typed.kind
                    inputmode=typed.mode
                    placeholder=typed.example
                    prop:value=current
                    on:input=on_input
                />
            }
            .into_any(),
            None => view! {
                <textarea
                    id=group.clone()
                    class="question-text"
                    data-testid="question-text"
                    rows="2"
                    prop:value=current
                    on:input=on_input
                ></textarea>
            }
            .into_any(),
        }
    } else {
        let multiple = question.multiple;
        let kind = if multiple { "checkbox" } else { "radio" };
        question
            .choices
            .into_iter()
            .map(|choice| {
                let (id, group) = (id.clone(), group.clone());
                let (check_id, value) = (id.clone(), choice.clone());
                let checked =
                    move || ctl.draft.with(|draft| draft.answer(&check_id, at).contains(&value));
                let option = choice.clone();
                view! {
                    <label class="question-choice">
                        <input
                            type=kind
                            name=group
                            value=choice.clone()
                            data-testid="question-choice"
                            prop:checked=checked
                            on:change=move |event| {
                                let on = event_target_checked(&event);
                                form.update(|draft| draft.pick(&id, at, count, &option, multiple, on));
                            }
                        />
                        <span>{choice}</span>
                    </label>
                }
            })
            .collect_view()
            .into_any()
    };
    let pick = if question.multiple { " (pick any)" } else { "" };
    let optional = question
        .optional
        .then_some(view! { <span class="hint">" (optional)"</span> });
    let about = question
        .hint
        .map(|hint| view! { <p class="hint question-hint">{hint}</p> });
    view! {
        <fieldset class="question" data-testid="question">
            <legend class="field-label">{question.question}{pick}{optional}</legend>
            {about}
            {input}
        </fieldset>
    }
}

/// How a typed form field is typed in: the input's type, its keyboard, an example. Numbers
/// are text with a numeric keyboard, so a wrong one gets the form's own words, not a blank.
struct TypedInput {
    kind: &'static str,
    mode: Option<&'static str>,
    example: Option<&'static str>,
}

/// The input for a typed answer; `None` for free text, which gets a text box.
fn typed_input(kind: &AnswerKind) -> Option<TypedInput> {
    let typed = |kind, mode, example| TypedInput {
        kind,
        mode,
        example,
    };
    Some(match kind {
        AnswerKind::Text | AnswerKind::Bounded { .. } | AnswerKind::Boolean => return None,
        AnswerKind::Email => typed("email", None, Some("name@example.com")),
        AnswerKind::Uri => typed("url", None, Some("https://example.com/page")),
        AnswerKind::Date => typed("date", None, None),
        AnswerKind::DateTime => typed("text", None, Some("2026-12-31T09:30:00Z")),
        AnswerKind::Number { integer: true, .. } => typed("text", Some("numeric"), None),
        AnswerKind::Number { integer: false, .. } => typed("text", Some("decimal"), None),
    })
}

/// The answers a question call's result gives, each under its question.
#[component]
fn Answers(result: serde_json::Value) -> impl IntoView {
    answers_from_result(&result).map(|pairs| {
        view! {
            <dl class="answers" data-testid="answers">
                {pairs
                    .into_iter()
                    .map(|(question, answer)| {
                        let shown = if answer.is_empty() { "(no answer)".to_owned() } else { answer.join(", ") };
                        view! {
                            <dt>{question}</dt>
                            <dd data-testid="answer">{shown}</dd>
                        }
                    })
                    .collect_view()}
            </dl>
        }
    })
}

type MakeForm = fn(String, Vec<Question>, Memo<Option<PendingBatch>>) -> AnyView;

thread_local! {
    static FORM: Slot<MakeForm> = ArcRwSignal::new(None);
    static ANSWERS: Slot<fn(serde_json::Value) -> AnyView> = ArcRwSignal::new(None);
}

#[wasm_split_helpers::wasm_split(questions, fallible)]
fn question_form_view() -> Loaded<MakeForm> {
    Ok(|call_id, questions, batch| {
        view! { <QuestionForm call_id=call_id questions=questions batch=batch /> }.into_any()
    })
}

/// [`QuestionForm`], from the chunk of the question cards (loaded when the first one shows).
pub(super) fn question_form(
    call_id: String,
    questions: Vec<Question>,
    batch: Memo<Option<PendingBatch>>,
) -> impl IntoView {
    move || {
        loaded(&FORM, question_form_view)
            .map(|make| make(call_id.clone(), questions.clone(), batch))
    }
}

#[wasm_split_helpers::wasm_split(questions, fallible)]
fn answers_view() -> Loaded<fn(serde_json::Value) -> AnyView> {
    Ok(|result| view! { <Answers result=result /> }.into_any())
}

/// [`Answers`], from the chunk of the question cards.
pub(super) fn answers(result: serde_json::Value) -> impl IntoView {
    move || loaded(&ANSWERS, answers_view).map(|make| make(result.clone()))
}
