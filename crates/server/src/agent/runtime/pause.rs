//! The pause that ends a turn with held calls: ONE batch of action requests (a subagent's held
//! calls nested among them, `subagent`), the
//! `input-required` event that carries it (with its deadline, if the agent has an approval
//! timeout), and the commit that opens it (docs/wire.md, Approval interrupt).

use serde_json::Value;
use signoff_protocol::hitl::preview::preview_metadata;
use signoff_protocol::hitl::{self, ActionRequest, ApprovalInterrupt};
use signoff_protocol::{StreamEvent, TaskState};

use crate::agent::view;
use crate::store::{CallRow, Commit, Guard};

use super::{Agent, Runtime};

impl Runtime {
    /// The pause event and commit for `held`, and the batch's deadline (to watch once the
    /// commit is written). `usage` is the turn's tokens: the pause ends the turn's stream and
    /// carries them like any final event.
    pub(super) fn pause_step(
        agent: &Agent,
        task_id: &str,
        context_id: &str,
        held: &[CallRow],
        nested: &[ActionRequest],
        usage: (u64, u64),
    ) -> (StreamEvent, Commit, Option<String>) {
        let requests: Vec<ActionRequest> = held
            .iter()
            .map(|record| {
                let tool = agent.tools.get(&record.name);
                let mut metadata: signoff_protocol::Metadata = tool
                    .as_ref()
                    .and_then(|tool| tool.preview(&record.args))
                    .map(|(preview, base)| preview_metadata(&preview, base.as_deref()))
                    .unwrap_or_default();
                // Why it waits, with a policy's approvers and quorum: the decision's tally and
                // the approvers' inbox read them from the stored batch.
                if let Some(why) = &record.why {
                    metadata.insert(hitl::SIGNOFF_WHY.to_owned(), why.clone());
                }
                if tool.as_ref().is_some_and(|tool| !tool.takes_edits()) {
                    metadata.insert(hitl::keys::EDITABLE.to_owned(), Value::Bool(false));
                }
                ActionRequest {
                    id: record.call_id.clone(),
                    name: record.name.clone(),
                    args: record.args.clone(),
                    description: tool.as_ref().map(|tool| tool.spec.description.clone()),
                    server: tool.as_ref().map(|tool| tool.spec.source.clone()),
                    approval_id: None,
                    via: None,
                    metadata,
                }
            })
            .chain(nested.iter().cloned())
            .collect();
        let deadline = crate::agent::approvals::deadline_for(&agent.approvals);
        let (event, pause) =
            Self::pause_step_until(task_id, context_id, requests, deadline.clone(), usage);
        (event, pause, deadline)
    }

    /// The pause for `requests` as one batch that expires at `deadline`: its `input-required`
    /// event and its commit.
    pub(super) fn pause_step_until(
        task_id: &str,
        context_id: &str,
        requests: Vec<ActionRequest>,
        deadline: Option<String>,
        usage: (u64, u64),
    ) -> (StreamEvent, Commit) {
        let new_batch = Value::Array(requests.iter().map(ActionRequest::to_value).collect());
        let interrupt = ApprovalInterrupt::new(requests).expiring_at(deadline.clone());
        let message = view::agent_message(task_id, context_id, interrupt.to_parts());
        let mut metadata = hitl::interrupt_event_metadata();
        metadata.extend(view::usage_metadata(usage.0, usage.1));
        let event = view::status_event(
            task_id,
            context_id,
            TaskState::InputRequired,
            Some(message),
            Some(metadata),
        );
        let pause = Commit {
            state: Some(TaskState::InputRequired),
            new_batch: Some(new_batch),
            batch_deadline: deadline,
            guard: Some(Guard::NotTerminal),
            ..Commit::default()
        };
        (event, pause)
    }
}
