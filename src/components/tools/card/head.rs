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
                {move || staged_label(model).or_else(|| match model.outcome().map(|(status, _)| status) {
                    Some(ToolStatus::PendingApproval) if model.is_question() => Some("Waiting for your answer"),
                    // A question is answered or declined, never "approved".
                    Some(ToolStatus::Approved | ToolStatus::Completed) if model.is_question() => Some("Answered"),
                    Some(ToolStatus::Rejected) if model.is_question() => Some("Declined"),
                    status => status.map(ToolStatus::label),
                })}
            </span>
            {move || model.outcome().and_then(|(_, decision)| decision).map(|decision| view! {
                <span class="decision-chip" data-testid="decision-chip">{decision.label()}</span>
            })}
        </div>
    }
}
