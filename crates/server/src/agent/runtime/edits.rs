//! Edited arguments go through the whole gate again (crates/server/README.md, Approvers): the
//! deployment's policies, the agent's argument rules and the tool's `require_approval`, as a
//! model's call does at pause time, and the routing that answer gives (approvers, two-person
//! rule, quorum) is held against the routing the batch waits under. An edit that needs no more
//! than the call as asked is tallied under the batch's routing as before; one that a rule or a
//! policy refuses, or that would need more (other people, more of them, or a two-person rule the
//! call as asked does not have), is refused before anything is stored, so what runs never
//! waited under a weaker routing than its own arguments call for. Every channel's decision
//! passes here (`Runtime::check_decided_calls`, inside `plan_decision`).

use signoff_protocol::hitl::{GateOutcome, ResolvedCall, Verdict, Why, WhyKind};

use crate::agent::config::ApproverEntry;
use crate::agent::policy::CallApprovers;
use crate::store::TaskRow;

use super::screening::Requester;
use super::{Agent, AgentError, Result, Runtime};

impl Runtime {
    /// Checks an approved call's edited arguments (`modified_args`) against the gate and the
    /// batch's routing: refused (`InvalidParams`, nothing stored) when a rule or a policy
    /// denies them, or when their routing is stricter than the call's as asked. A call of an
    /// agent that is not ours (a relayed chat's) is the remote's to check.
    pub(super) fn check_edit(
        &self,
        row: &TaskRow,
        agent: &Agent,
        call: &ResolvedCall,
    ) -> Result<()> {
        let (Some(args), Verdict::Approve) = (&call.modified_args, call.verdict) else {
            return Ok(());
        };
        let Some(tool) = agent.tools.get(&call.request.name) else {
            return Ok(());
        };
        let requester = Requester {
            user: &row.user_id,
            groups: &row.requester_groups,
            context_id: &row.context_id,
            subagent: call.request.via.is_some(),
        };
        let (_, decided) = self.gate(agent, &requester, &tool, args, chrono::Utc::now());
        let (id, name) = (&call.request.id, &call.request.name);
        let why = decided.why;
        let edited = match why.outcome {
            GateOutcome::Deny => {
                return Err(AgentError::InvalidParams(format!(
                    "modified_args for {id} ({name}) are denied by {}; the call keeps waiting",
                    denial(&why)
                )))
            }
            // Arguments the gate lets run unasked need nothing beyond the batch's routing.
            GateOutcome::Allow => return Ok(()),
            GateOutcome::Ask => edited_approvers(agent, call, &why, args),
        };
        let asked = self.call_approvers(row, &call.request);
        if no_stricter(&asked, &edited, &row.user_id, &row.requester_groups) {
            return Ok(());
        }
        Err(AgentError::InvalidParams(format!(
            "modified_args for {id} ({name}) need more than the call as asked: as edited it {} \
             ({}), as asked it {}; the call keeps waiting (approve it as asked, or reject it)",
            edited.requirement(),
            why.summary,
            asked.requirement()
        )))
    }
}

/// How a refusal of edited arguments names what refused them, as the model reads a denial:
/// the rule, or the policy and its reason.
fn denial(why: &Why) -> String {
    match (&why.by, &why.reason) {
        (WhyKind::Rule, _) => format!("rule {}", why.id),
        (_, Some(reason)) => format!("policy {}: {reason}", why.id),
        (_, None) => format!("policy {}", why.id),
    }
}

/// Who would approve a call of these edited arguments had the model asked for them: a Cedar
/// policy's ask routes by its annotations, any other ask by the agents file (its `ask` rule that
/// matches `args`, the tool, its source, the agent), as `Runtime::approvers_of` routes a
/// stored call.
fn edited_approvers(
    agent: &Agent,
    call: &ResolvedCall,
    why: &Why,
    args: &serde_json::Value,
) -> CallApprovers {
    let (name, server) = (&call.request.name, call.request.server.as_deref());
    match why.is_policy_ask() {
        true => agent.approvals.approvers_for_policy(name, server, why),
        false => agent.approvals.approvers_for(name, server, args),
    }
}

/// Whether every set of approvals that satisfies `asked` (the routing the batch waits under)
/// also satisfies `edited`, whatever hand-overs or escalations add to both: whoever is eligible
/// under `asked` is under `edited`, and `edited` needs no more approvals. Decided on the
/// entries as written (a user who is also in a named group is not taken to be that group), so
/// it may refuse an edit that is in fact no stricter, never the other way round.
/// `requester`/`groups` are the task's requester and the groups their sign-in named.
pub(super) fn no_stricter(
    asked: &CallApprovers,
    edited: &CallApprovers,
    requester: &str,
    groups: &[String],
) -> bool {
    if edited.quorum > asked.quorum {
        return false;
    }
    // Everyone an entry as asked names is named as edited (nobody named as edited: the
    // requester alone, which admits nobody else).
    if !asked
        .entries
        .iter()
        .all(|entry| edited.entries.contains(entry))
    {
        return false;
    }
    // The requester, if they may approve as asked, must still be able to as edited.
    if !asked.entries.is_empty() && !asked.requester_may_approve {
        return true;
    }
    let names_requester = |entry: &ApproverEntry| match entry {
        ApproverEntry::Group(group) => groups.iter().any(|own| own == group),
        ApproverEntry::User(user) => user == requester,
    };
    edited.requester_may_approve
        && (edited.entries.is_empty()
            || !asked.entries.is_empty()
            || edited.entries.iter().any(names_requester))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;
