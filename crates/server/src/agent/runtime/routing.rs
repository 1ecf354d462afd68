//! The approvals inbox of batches routed to approvers (docs/rest.md, Approvers): the batches a
//! person may decide besides their own, and for every routed batch who asked, why the reader is
//! asked and how far each call's quorum has come.

use std::sync::Arc;

use serde_json::Value;
use signoff_protocol::hitl::ActionRequest;
use signoff_protocol::rest::{ApprovalRouting, CallQuorum, PendingApproval};

use crate::agent::config::ApproverEntry;
use crate::agent::notify::Audience;
use crate::store::{handed_to, CallVote, Handed, Verdict};

use super::{Agent, Result, Runtime};
use crate::agent::approvals::args_sha256;
use crate::agent::approvals::{handed_over_to, Approvals, Decider};

impl Runtime {
    /// Whether some call of `agent` may be routed to approvers besides its requester: by the
    /// agents file, or by a live Cedar policy that names approvers.
    pub(super) fn agent_routes(&self, agent: &Agent) -> bool {
        agent.approvals.routes_to_approvers() || self.gate.live.routes_to_approvers()
    }

    /// Every batch `who` may decide, oldest first: their own, and those of others routed to
    /// them (a routed batch carries its `routing`).
    pub async fn approvals_for(&self, who: &Decider) -> Result<Vec<PendingApproval>> {
        let mut own = self.approvals.pending_approvals(&who.subject).await?;
        self.mark_ladder(&mut own).await?;
        let routing_agents = self.routing_agents();
        let mut routed = match routing_agents.is_empty() {
            true => Vec::new(),
            false => {
                self.store
                    .pending_batches_of_agents(&routing_agents)
                    .await?
            }
        };
        // Batches handed over (or escalated) to others, whatever their agent's approvers.
        for (row, owner) in self.store.pending_batches_handed_over().await? {
            if !routed
                .iter()
                .any(|(known, _)| known.batch.id == row.batch.id)
            {
                routed.push((row, owner));
            }
        }
        let mut others = Vec::new();
        for (row, owner) in routed {
            let steps = self.store.batch_steps(&row.batch.task_id).await?;
            let handed = handed_to(&steps, row.batch.id);
            let votes = self.store.task_votes(&row.batch.task_id).await?;
            let votes: Vec<CallVote> = votes
                .into_iter()
                .filter(|(batch, _)| *batch == row.batch.id)
                .map(|(_, vote)| vote)
                .collect();
            let requests = row.batch.requests.as_array().cloned().unwrap_or_default();
            let routing = routing(
                &self.approvals,
                &row.agent,
                &owner,
                &requests,
                &votes,
                &handed,
                who,
            );
            if owner == who.subject {
                if let Some(mine) = own.iter_mut().find(|p| p.task_id == row.batch.task_id) {
                    mine.routing = Some(Box::new(routing));
                }
                continue;
            }
            // A person a hand-over named reads the batch even when they may not approve it
            // (`eligibleBy` empty says so).
            if routing.eligible_by.is_empty() && !handed_over_to(&handed, who) {
                continue;
            }
            let mut approval = PendingApproval {
                task_id: row.batch.task_id.clone(),
                context_id: row.context_id,
                batch_id: row.batch.id,
                agent: row.agent,
                title: row.title,
                since: row.batch.created_at.clone(),
                calls: row.batch.requests.as_array().cloned().unwrap_or_default(),
                expires_at: row.batch.expires_at.clone(),
                routing: Some(Box::new(routing)),
                ladder: None,
            };
            approval.ladder =
                self.approvals
                    .approvers()
                    .batch_marks(&approval, &steps, row.batch.id);
            others.push(approval);
        }
        own.extend(others);
        own.sort_by(|a, b| a.since.cmp(&b.since));
        Ok(own)
    }

    /// The agents that route batches to approvers (`namespace/name`).
    pub(super) fn routing_agents(&self) -> Vec<String> {
        self.agents()
            .iter()
            .filter(|agent| self.agent_routes(agent))
            .map(|agent| agent.key())
            .collect()
    }

    /// The routing of the batch `batch_id` that `owner`'s task shows as `batch`, as `who`
    /// reads it now, and whether a hand-over named `who` (who then reads it even when they
    /// may not approve it): for the approvals stream.
    pub(super) async fn event_routing(
        &self,
        batch: &PendingApproval,
        owner: &str,
        batch_id: i64,
        who: &Decider,
    ) -> Result<(ApprovalRouting, bool)> {
        let votes: Vec<CallVote> = self
            .store
            .task_votes(&batch.task_id)
            .await?
            .into_iter()
            .filter(|(batch, _)| *batch == batch_id)
            .map(|(_, vote)| vote)
            .collect();
        let steps = self.store.batch_steps(&batch.task_id).await?;
        let handed = handed_to(&steps, batch_id);
        let routing = routing(
            &self.approvals,
            &batch.agent,
            owner,
            &batch.calls,
            &votes,
            &handed,
            who,
        );
        Ok((routing, handed_over_to(&handed, who)))
    }
}

/// Who asked, why `who` is asked, and each call's quorum so far.
fn routing(
    approvals: &Approvals,
    agent: &str,
    owner: &str,
    requests: &[Value],
    votes: &[CallVote],
    handed: &Handed,
    who: &Decider,
) -> ApprovalRouting {
    let mut reader_eligible: Vec<String> = Vec::new();
    let mut calls = Vec::new();
    for request in requests.iter().filter_map(ActionRequest::from_value) {
        let (approvers, eligible) = approvals
            .approvers()
            .eligibility(agent, owner, &request, handed, who);
        let may_approve = !eligible.is_empty();
        for entry in eligible {
            if !reader_eligible.contains(&entry) {
                reader_eligible.push(entry);
            }
        }
        // The arguments the latest approval is for, and who approved them.
        let mine: Vec<&CallVote> = votes
            .iter()
            .filter(|vote| vote.call_id == request.id && vote.verdict == Verdict::Approve)
            .collect();
        let current = mine.last().map_or_else(
            || args_sha256(&request.args),
            |vote| vote.args_sha256.clone(),
        );
        let mut approved_by: Vec<String> = Vec::new();
        let mut approved_via: Vec<Vec<String>> = Vec::new();
        let mut voided: Vec<String> = Vec::new();
        for vote in &mine {
            let list = match vote.args_sha256 == current {
                true => &mut approved_by,
                false => &mut voided,
            };
            if !list.contains(&vote.user_id) {
                list.push(vote.user_id.clone());
                if vote.args_sha256 == current {
                    approved_via.push(vote.eligible_by.clone());
                }
            }
        }
        voided.retain(|user| !approved_by.contains(user));
        calls.push(CallQuorum {
            call_id: request.id.clone(),
            approvers: approvers.entries.iter().map(ApproverEntry::label).collect(),
            requester_may_approve: approvers.requester_may_approve,
            quorum: approvers.quorum,
            approved_by,
            approved_via,
            escalated_to: handed.escalated.clone(),
            voided,
            args_sha256: mine.last().map(|_| current),
            requirement: approvers.requirement(),
            may_approve: Some(may_approve),
        });
    }
    ApprovalRouting {
        requested_by: owner.to_owned(),
        eligible_by: reader_eligible,
        calls,
    }
}

/// Who may decide a batch of `agent`'s with `requests` besides its requester, by each call's
/// approvers (its asker's settings, as [`routing`] reads them): for the notification
/// channels routed by approver group, and the email channels that write to approvers.
pub(super) fn audience(agents: &[Arc<Agent>], agent: &str, requests: &[Value]) -> Audience {
    let mut audience = Audience::default();
    if agents.is_empty() {
        return audience;
    }
    let by_key = |key: &str| agents.iter().find(|agent| agent.key() == key);
    for request in requests.iter().filter_map(ActionRequest::from_value) {
        let asker = match &request.via {
            Some(via) => by_key(&via.asker),
            None => by_key(agent),
        };
        let Some(asker) = asker else { continue };
        let approvers =
            asker
                .approvals
                .approvers_for(&request.name, request.server.as_deref(), &request.args);
        for entry in approvers.entries {
            add_to_audience(&mut audience, entry);
        }
    }
    audience
}

/// Adds one approver entry to `audience`, once.
pub(super) fn add_to_audience(audience: &mut Audience, entry: ApproverEntry) {
    let (list, name) = match entry {
        ApproverEntry::Group(group) => (&mut audience.groups, group),
        ApproverEntry::User(user) => (&mut audience.users, user),
    };
    if !list.contains(&name) {
        list.push(name);
    }
}
