//! A card's body: the arguments (and the arguments the person edited), what the call will
//! change, who decided it, why it was rejected or never ran, and its result; for a question
//! call, its answers.

use leptos::prelude::*;
use signoff_protocol::hitl::elicitation::{url_parts, UrlParts, ELICITATION};
use signoff_protocol::hitl::{ActionRequest, DecidedBy, Preview};

use crate::components::clamp::{is_long, ShowMore};
use crate::components::tools::allow::DecidedByLine;
use crate::components::tools::fields::pretty;
use crate::components::tools::preview::CallPreview;
use crate::components::tools::question::answers as answers_view;
use crate::components::util::copy_to_clipboard;
use crate::state::preview::edited_preview;
use crate::state::{ToolCallView, ToolStatus};

/// Arguments (expanded while pending), edited arguments, and the result or error.
#[component]
pub(super) fn CardBody(
    card: ToolCallView,
    draft_args: Memo<Option<serde_json::Value>>,
    pending: bool,
    question: bool,
    request: Option<ActionRequest>,
) -> impl IntoView {
    let preview = request
        .as_ref()
        .and_then(ActionRequest::preview)
        .or_else(|| card.preview.as_ref().and_then(Preview::from_value));
    // A question's arguments are its questions, shown as the form or the answers instead.
    let args_open = !question && (pending || card.status == ToolStatus::PendingApproval);
    let answers = card.result.clone().filter(|_| question);
    let result = card.result.clone();
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
    let readable = (!question)
        .then(|| crate::state::readable::readable(&card.args))
        .flatten();
    let url = asked_url(&card);
    let asked = server_message(&card);
    view! {
        {asked.map(|message| view! { <p class="asked-message" data-testid="asked-message">{message}</p> })}
        {url.map(|parts| view! { <UrlToOpen parts=parts /> })}
        {readable.map(|readable| view! {
            <div class="tool-section" data-testid="tool-readable">
                <div class="section-title">{readable.title}</div>
                <pre class="json readable">{readable.text}</pre>
            </div>
        })}
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
        {answers.map(answers_view)}
        {decided_by.map(|decided_by| view! { <DecidedByLine decided_by=decided_by /> })}
        {card.ran.then(|| view! { <p class="decided-by" data-testid="ran-unasked">"Run by the agent without asking"</p> })}
        {card.no_result_reported().then(|| view! {
            <p class="decided-by" data-testid="no-result">"No result reported: the task completed without sending this call's result."</p>
        })}
        {(card.status == ToolStatus::Expired).then(|| view! {
            <p class="decided-by expired-note" data-testid="expired-note">"Nobody decided in time; it did not run."</p>
        })}
        {reason.map(|reason| view! {
            <blockquote class="tool-reason" data-testid="tool-reason">{format!("Reason: {reason}")}</blockquote>
        })}
        {result.map(|result| view! { <ResultSection result=result is_error=card.is_error /> })}
    }
}

/// What a tool's server asks (an `elicitation` call's message), said as its server's.
fn server_message(card: &ToolCallView) -> Option<String> {
    if card.name != ELICITATION {
        return None;
    }
    let text = |key: &str| card.args.get(key).and_then(|value| value.as_str());
    Some(format!(
        "{} asks, while {} runs: {}",
        text("server")?,
        text("tool")?,
        text("message")?
    ))
}

/// A tool server's URL question: the link split so its host stands out.
fn asked_url(card: &ToolCallView) -> Option<UrlParts> {
    if card.name != ELICITATION || card.args.get("mode")?.as_str()? != "url" {
        return None;
    }
    url_parts(card.args.get("url")?.as_str()?).ok()
}

/// The link a tool's server asks the person to open, never opened or fetched until they
/// choose Open: the full URL with its host highlighted, and what to check before opening it.
#[component]
fn UrlToOpen(parts: UrlParts) -> impl IntoView {
    let UrlParts {
        before_host,
        host,
        after_host,
        warnings,
    } = parts;
    view! {
        <div class="tool-section" data-testid="tool-url">
            <p class="url-shown" data-testid="url-shown">
                {before_host}<strong class="url-host" data-testid="url-host">{host}</strong>{after_host}
            </p>
            {warnings.into_iter().map(|warning| view! {
                <p class="field-error" role="note" data-testid="url-warning">{warning}</p>
            }).collect_view()}
        </div>
    }
}

/// The call's result (or error), folded when long, with a Copy button.
#[component]
fn ResultSection(result: serde_json::Value, is_error: bool) -> impl IntoView {
    let title = if is_error { "Error" } else { "Result" };
    let text = pretty(&result);
    let copy = text.clone();
    let long = Signal::stored(is_long(&text));
    let open = RwSignal::new(false);
    view! {
        <details class="tool-section" class:error=is_error data-testid="tool-result">
            <summary>{title}</summary>
            <button type="button" class="button small copy-result" aria-label="Copy the result"
                on:click=move |_| copy_to_clipboard(&copy)>
                "Copy"
            </button>
            <pre class="json" class:long=long class:clamped=move || long.get() && !open.get()>{text}</pre>
            <ShowMore long=long open=open />
        </details>
    }
}
