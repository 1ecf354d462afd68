//! A card's header line: the tool's name, the call id, the server it runs on, the countdown to
//! its batch's deadline, the status badge, and the chip of the decision behind a finished call.

use leptos::prelude::*;

use super::model::CardModel;
use crate::components::tools::allow::Countdown;
use signoff_protocol::hitl::Verdict;

use crate::state::ToolStatus;

/// The badge's sign for each status (beside its word, hidden from screen readers).
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

/// The badge's word: a question is answered or declined, never "approved".
fn status_word(status: ToolStatus, question: bool) -> &'static str {
    if !question {
        return status.label();
    }
    match status {
        ToolStatus::PendingApproval => "Waiting for your answer",
        ToolStatus::Approved | ToolStatus::Completed => "Answered",
        ToolStatus::Rejected => "Declined",
        ToolStatus::Requested
        | ToolStatus::Executing
        | ToolStatus::Failed
        | ToolStatus::NotRun
        | ToolStatus::Denied
        | ToolStatus::Expired => status.label(),
    }
}

/// A choice made on the card and not yet sent says so, and how it goes out: "Approve chosen ·
/// not sent" until Submit, "Sending…" while the server answers.
fn staged_label(model: CardModel) -> Option<&'static str> {
    let verdict = model.staged()?;
    Some(match (model.ctl.deciding.get(), verdict) {
        (true, _) => "Sending…",
        (false, Verdict::Approve) if model.is_question() => "Answered · not sent",
        (false, Verdict::Approve) => "Approve chosen · not sent",
        (false, Verdict::Deny) => "Reject chosen · not sent",
    })
}

/// The header: what the call is, and where it stands.
#[component]
pub(super) fn CardHead(model: CardModel) -> impl IntoView {
    let ctl = model.ctl;
    view! {
        <div class="tool-head">
            <span class="tool-name" data-testid="tool-name">{move || model.name()}</span>
            <span class="tool-id">{move || model.call_id()}</span>
            {move || model.source().map(|server| view! { <span class="tool-server">{server}</span> })}
            {move || model.expires_at().map(|at| {
                let task = model.batch.with_untracked(|batch| batch.as_ref().map(|batch| batch.task_id.clone())).unwrap_or_default();
                view! { <Countdown expires_at=at on_due=Callback::new(move |()| ctl.watch_expiry(task.clone())) /> }
            })}
            <span
                class="badge"
                class:staged=move || model.staged().is_some()
                data-testid="tool-status"
                data-staged=move || model.staged().map(|_| "true")
            >
                <span aria-hidden="true">{move || match model.staged() {
                    Some(_) => Some("◐"),
                    None => model.outcome().map(|(status, _)| badge_icon(status)),
                }}</span>
                {move || staged_label(model).or_else(|| {
                    model.outcome().map(|(status, _)| status_word(status, model.is_question()))
                })}
            </span>
            // The decision behind a finished call ("Approved" beside "Completed"); a question's
            // badge already says it was answered or declined.
            {move || model.outcome().and_then(|(_, decision)| decision).filter(|_| !model.is_question()).map(|decision| view! {
                <span class="decision-chip" data-testid="decision-chip">{decision.label()}</span>
            })}
        </div>
    }
}
