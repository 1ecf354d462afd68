//! The approvals inbox of batches routed to approvers (docs/rest.md, Approvers): the batches a
//! person may decide besides their own, and for every routed batch who asked, why the reader is
//! asked and how far each call's quorum has come.

use serde_json::Value;
use signoff_protocol::hitl::ActionRequest;
use signoff_protocol::rest::{ApprovalRouting, CallQuorum, PendingApproval};

use crate::agent::config::ApproverEntry;
use crate::store::{CallVote, Verdict};

use super::audit::args_sha256;
use super::quorum::{eligible_by, Decider};
use super::{Result, Runtime};

impl Runtime {
    /// Every batch `who` may decide, oldest first: their own, and those of others routed to
    /// them (a routed batch carries its `routing`).
    pub async fn approvals_for(&self, who: &Decider) -> Result<Vec<PendingApproval>> {
        let mut own = self.pending_approvals(&who.subject).await?;
        let routing_agents = self.routing_agents();
        if routing_agents.is_empty() {
            return Ok(own);
        }
        let routed = self
            .store
            .pending_batches_of_agents(&routing_agents)
            .await?;
        let mut others = Vec::new();
        for (row, owner) in routed {
            let votes = self.store.task_votes(&row.batch.task_id).await?;
            let votes: Vec<CallVote> = votes
                .into_iter()
                .filter(|(batch, _)| *batch == row.batch.id)
                .map(|(_, vote)| vote)
                .collect();
            let requests = row.batch.requests.as_array().cloned().unwrap_or_default();
            let routing = self.routing(&row.agent, &owner, &requests, &votes, who);
            if owner == who.subject {
                if let Some(mine) = own.iter_mut().find(|p| p.task_id == row.batch.task_id) {
                    mine.routing = Some(Box::new(routing));
                }
                continue;
            }
            if routing.eligible_by.is_empty() {
                continue;
            }
            others.push(PendingApproval {
                task_id: row.batch.task_id.clone(),
                context_id: row.context_id,
                agent: row.agent,
                title: row.title,
                since: row.batch.created_at.clone(),
                calls: row.batch.requests.as_array().cloned().unwrap_or_default(),
                expires_at: row.batch.expires_at.clone(),
                routing: Some(Box::new(routing)),
            });
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
    /// reads it now: for the approvals stream.
    pub(super) async fn event_routing(
        &self,
        batch: &PendingApproval,
        owner: &str,
        batch_id: i64,
        who: &Decider,
    ) -> Result<ApprovalRouting> {
        let votes: Vec<CallVote> = self
            .store
            .task_votes(&batch.task_id)
            .await?
            .into_iter()
            .filter(|(batch, _)| *batch == batch_id)
            .map(|(_, vote)| vote)
            .collect();
        Ok(self.routing(&batch.agent, owner, &batch.calls, &votes, who))
    }

    /// Who asked, why `who` is asked, and each call's quorum so far.
    fn routing(
        &self,
        agent: &str,
        owner: &str,
        requests: &[Value],
        votes: &[CallVote],
        who: &Decider,
    ) -> ApprovalRouting {
        let mut reader_eligible: Vec<String> = Vec::new();
        let mut calls = Vec::new();
        for request in requests.iter().filter_map(ActionRequest::from_value) {
            let asker = match &request.via {
                Some(via) => via.asker.as_str(),
                None => agent,
            };
            let approvers = self.approvers_of(asker, &request);
            for entry in eligible_by(&approvers, who, owner) {
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
            let mut voided: Vec<String> = Vec::new();
            for vote in &mine {
                let list = match vote.args_sha256 == current {
                    true => &mut approved_by,
                    false => &mut voided,
                };
                if !list.contains(&vote.user_id) {
                    list.push(vote.user_id.clone());
                }
            }
            voided.retain(|user| !approved_by.contains(user));
            calls.push(CallQuorum {
                call_id: request.id.clone(),
                approvers: approvers.entries.iter().map(ApproverEntry::label).collect(),
                requester_may_approve: approvers.requester_may_approve,
                quorum: approvers.quorum,
                approved_by,
                voided,
                args_sha256: mine.last().map(|_| current),
                requirement: approvers.requirement(),
            });
        }
        ApprovalRouting {
            requested_by: owner.to_owned(),
            eligible_by: reader_eligible,
            calls,
        }
    }
}
