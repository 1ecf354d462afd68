//! Edited arguments go through the whole gate again (crates/server/README.md, Approvers): the
//! deployment's policies, the agent's argument rules and the tool's `require_approval`, as a
//! model's call does at pause time, and the routing that answer gives (approvers, two-person
//! rule, quorum) is held against the routing the batch waits under. An edit that needs no more
//! than the call as asked is tallied under the batch's routing as before; one that a rule or a
//! policy refuses, or that would need more (other people, more of them, or a two-person rule the
//! call as asked does not have), is refused before anything is stored, so what runs never
//! waited under a weaker routing than its own arguments call for. Where the tool's schema or an
//! asking policy says what narrower means (`agent::narrow`), an edit that asks for more than
//! the call as asked is refused first. Every channel's decision
//! passes here (`Runtime::check_decided_calls`, inside `plan_decision`).

use signoff_protocol::hitl::elicitation::ELICITATION;
use signoff_protocol::hitl::{GateOutcome, ResolvedCall, Verdict, Why, WhyKind};

use crate::agent::approvals::{approvers_by, no_stricter};
use crate::agent::cedar::CedarOutcome;
use crate::agent::narrow::Narrowing;
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
        if call.request.name == ELICITATION && *args != call.request.args {
            return Err(AgentError::InvalidParams(
                "a tool server's question is answered (or its link opened), not edited: \
                 approve or reject it as it was asked"
                    .to_owned(),
            ));
        }
        let Some(tool) = agent.tools.get(&call.request.name) else {
            return Ok(());
        };
        if !tool.takes_edits() && *args != call.request.args {
            return Err(AgentError::InvalidParams(format!(
                "{} runs its own tools and can only be told yes or no: approve or reject the \
                 call as it was asked",
                agent.key()
            )));
        }
        let requester = Requester {
            user: &row.user_id,
            groups: &row.requester_groups,
            context_id: &row.context_id,
            // An edit is checked without counts: a policy that reads them asks again.
            task_id: "",
            subagent: call.request.via.is_some(),
        };
        let now = chrono::Utc::now();
        let (id, name) = (&call.request.id, &call.request.name);
        // What narrower means for this call: its tool's schema, and the policies that ask
        // for it as asked. An edit that asks for more is refused before the gate is asked.
        let mut narrowing = Narrowing::of_schema(&tool.spec.input_schema);
        if let (CedarOutcome::Ask(asking), _) =
            self.gate(agent, &requester, &tool, &call.request.args, now, None)
        {
            narrowing.merge(&asking.narrower);
        }
        if let Err(why) = narrowing.check(&call.request.args, args) {
            return Err(AgentError::InvalidParams(format!(
                "modified_args for {id} ({name}) ask for more than the call as asked: {why}; \
                 the call keeps waiting (approve it as asked or narrower, or reject it)"
            )));
        }
        let (_, decided) = self.gate(agent, &requester, &tool, args, now, None);
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
            GateOutcome::Ask => approvers_by(
                &agent.approvals,
                &call.request,
                why.is_policy_ask().then_some(&why),
                args,
            ),
        };
        let asked = self
            .approvals
            .approvers()
            .call_approvers(row, &call.request);
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

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;
