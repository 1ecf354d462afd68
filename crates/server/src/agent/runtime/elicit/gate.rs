//! A server's approval (Codex's command or patch, `Mode::Approval`) meets the gate a tool call
//! meets before anyone is asked (`agent::decision::decide`): as a call named `elicitation` of
//! the asking server, its arguments the card's (`command`, `cwd`, `changes`, …). A Cedar forbid
//! or a `deny` rule refuses it, a permit or an `allow` rule approves it, each recorded as a
//! decided call of its own (a refusal, and a policy's approval, with an audit row, as a tool
//! call's); an ask waits for a person as any question does, with the policy's or rule's
//! approvers. A form or a URL is only the person's to answer: it always waits.

use serde_json::json;
use signoff_protocol::hitl::elicitation::{Elicitation, Mode, Reply, ELICITATION};
use signoff_protocol::hitl::{GateOutcome, ToolCall, Why};
use signoff_protocol::TaskState;

use crate::agent::approvals::args_sha256;
use crate::agent::cedar::ToolHints;
use crate::agent::decision::decide;
use crate::agent::tools::{text_result, ToolSpec};
use crate::agent::view;
use crate::store::{Commit, Guard, NewCall, Verdict};

use super::super::screening::{screened, Requester};
use super::super::Result;
use super::AskerState;

/// What the gate made of a question before anyone is asked.
pub(super) enum Gated {
    /// It waits for a person; an approval's why (the rule or policy that asks, or the
    /// default ask) goes with its card.
    Waits(Option<Why>),
    /// Decided without asking: what the server is told.
    Decided(Reply),
}

/// Screens `question` (asked as call `id`): an approval through the gate, anything else
/// straight to its card.
pub(super) async fn gate(state: &AskerState, id: &str, question: &Elicitation) -> Result<Gated> {
    if !matches!(question.mode, Mode::Approval(_)) {
        return Ok(Gated::Waits(None));
    }
    let args = question.to_args(&state.asked_by);
    let spec = ToolSpec {
        name: ELICITATION.to_owned(),
        description: question.message.clone(),
        input_schema: json!({"type": "object"}),
        source: state.asked_by.server.clone(),
        hints: ToolHints::default(),
    };
    let requester = Requester {
        user: &state.user_id,
        groups: &state.groups,
        context_id: &state.context_id,
        task_id: &state.task_id,
        subagent: state.subagent,
    };
    let now = chrono::Utc::now();
    let runtime = &state.runtime;
    let cedar = runtime.evaluate_policies(&state.agent, &requester, &spec, &args, now, None);
    let rule = state.agent.approvals.rule_for(ELICITATION, &args);
    let decided = decide(&cedar, rule, true, None);
    if decided.outcome() == GateOutcome::Ask {
        return Ok(Gated::Waits(Some(decided.why)));
    }
    let screened = screened(&state.user_id, decided.why);
    let refused = screened.why.as_ref().map(|why| why.outcome) == Some(GateOutcome::Deny)
        || screened
            .auto
            .as_ref()
            .is_some_and(|auto| auto.verdict == Verdict::Deny);
    let mut part = ToolCall {
        id: id.to_owned(),
        name: ELICITATION.to_owned(),
        args: args.clone(),
    }
    .to_part();
    if let Some(by) = &screened.decided_by {
        part = by.mark(part);
    }
    if let Some(why) = &screened.why {
        part = why.mark(part);
    }
    let summary = screened.why.as_ref().map(|why| why.summary.clone());
    let message = view::agent_message(&state.task_id, &state.context_id, vec![part]);
    let event = view::status_event(
        &state.task_id,
        &state.context_id,
        TaskState::Working,
        Some(message),
        None,
    );
    let commit = Commit {
        new_calls: vec![NewCall {
            call_id: id.to_owned(),
            name: ELICITATION.to_owned(),
            source: state.asked_by.server.clone(),
            args_sha256: args_sha256(&args),
            args,
            held: false,
            auto: screened.auto,
            why: screened.why.as_ref().map(Why::to_value),
        }],
        guard: Some(Guard::NotTerminal),
        ..Commit::default()
    };
    runtime.commit(&state.task_id, vec![event], commit).await?;
    let server = &state.asked_by.server;
    tracing::info!(task = %state.task_id, call = %id, server = %server, refused,
        "a server's approval was decided without asking");
    if refused {
        return Ok(Gated::Decided(Reply::Decline));
    }
    let told = format!(
        "{}: the MCP server {server} was told to go ahead, once.",
        summary.unwrap_or_else(|| "Approved".to_owned())
    );
    state.record_sent(id, text_result(told)).await?;
    Ok(Gated::Decided(Reply::Accept(None)))
}
