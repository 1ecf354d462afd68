//! A person's decision on a batch, planned: pure, no store (it runs inside the decision's store
//! write, perhaps twice). A person's decision is tallied against the votes already cast on the batch,
//! inside the decision's store write (so racing approvers, on any replica, are counted one
//! after the other): every call ends rejected (any eligible rejection) or approved (its quorum
//! of distinct eligible people approved the same arguments), and then the batch is decided as
//! ever; or some call still waits, and only the votes (and an `input-required` event saying
//! how far each call has come) are written. With no approvers configured the requester is the
//! only eligible person and the quorum is one: the requester decides alone.

use serde_json::Value;
use signoff_protocol::hitl::{
    self, ApprovalInterrupt, Decision, RecordedDecision, ResolvedCall, Verdict,
};
use signoff_protocol::rest::CallQuorum;
use signoff_protocol::{Message, StreamEvent, TaskState};

use crate::agent::config::ApproverEntry;
use crate::agent::error::{AgentError, Result};
use crate::agent::view;
use crate::store::{
    BatchRow, BatchState, CallStatus, CallVerdict, CallVote, TaskRow, Verdict as StoredVerdict,
};

use super::eligibility::{same_person, REQUESTER};
use super::{args_sha256, batch_requests, Actor, Approvers, Decider};
use crate::agent::policy::CallApprovers;

/// A person's decision counted against a batch's earlier votes.
#[derive(Debug, Clone)]
pub struct Tally {
    /// The votes this decision adds.
    pub votes: Vec<CallVote>,
    /// Each call's final verdict once every call is decided; `None`: some call still waits.
    pub verdicts: Option<Vec<CallVerdict>>,
    /// Where each call stands after this decision.
    pub progress: Vec<CallQuorum>,
}

/// Where one call ends up after a decision.
enum Outcome {
    Rejected(Option<String>),
    Approved(Value),
    Waiting,
}

/// The approvals of one call's arguments: who approved `sha` (in order, each person once: by
/// subject or verified email), and whose approvals of other arguments an edit voided.
fn approvals_of(earlier: &[CallVote], call_id: &str, sha: &str) -> (Vec<String>, Vec<String>) {
    let approvals: Vec<&CallVote> = earlier
        .iter()
        .filter(|vote| vote.call_id == call_id && vote.verdict == StoredVerdict::Approve)
        .collect();
    let mut approved: Vec<&CallVote> = Vec::new();
    let mut other: Vec<&CallVote> = Vec::new();
    for vote in approvals {
        let list = if vote.args_sha256 == sha {
            &mut approved
        } else {
            &mut other
        };
        if !list
            .iter()
            .any(|seen| same_person(&seen.user_id, seen.email.as_deref(), vote))
        {
            list.push(vote);
        }
    }
    other.retain(|voided| {
        !approved
            .iter()
            .any(|seen| same_person(&seen.user_id, seen.email.as_deref(), voided))
    });
    let subjects = |votes: Vec<&CallVote>| -> Vec<String> {
        votes.iter().map(|vote| vote.user_id.clone()).collect()
    };
    (subjects(approved), subjects(other))
}

/// What let each of `approved` approve `sha` of the call, in their order: the entries of
/// their vote among `votes`, so a card tells a named approver or one a hand-over added from
/// the group's members.
fn routes_of(
    votes: &[&CallVote],
    call_id: &str,
    sha: Option<&str>,
    approved: &[String],
) -> Vec<Vec<String>> {
    approved
        .iter()
        .map(|who| {
            votes
                .iter()
                .find(|vote| {
                    vote.call_id == call_id
                        && vote.verdict == StoredVerdict::Approve
                        && Some(vote.args_sha256.as_str()) == sha
                        && vote.user_id == *who
                })
                .map(|vote| vote.eligible_by.clone())
                .unwrap_or_default()
        })
        .collect()
}

impl Approvers {
    /// Counts `by`'s verdicts on `resolved` (the batch's calls, in order) against the votes
    /// already cast on `batch`: refused when they may not give one of them, else the votes to
    /// record and, if every call is now decided, each call's verdict. Pure: it runs inside the
    /// store's write.
    pub fn tally(
        &self,
        row: &TaskRow,
        batch: &BatchRow,
        by: &Actor,
        resolved: &[ResolvedCall],
    ) -> Result<Tally> {
        let who = &by.decider;
        let mut tally = Tally {
            votes: Vec::new(),
            verdicts: None,
            progress: Vec::new(),
        };
        let mut outcomes = Vec::with_capacity(resolved.len());
        for call in resolved {
            let (approvers, eligible) = self.eligibility(
                &row.agent,
                &row.user_id,
                &call.request,
                &batch.handed_to,
                who,
            );
            let id = &call.request.id;
            let refused = || {
                AgentError::NotEligible(format!(
                    "call {id} ({}) {}",
                    call.request.name,
                    approvers.requirement()
                ))
            };
            let rejected_before = batch
                .votes
                .iter()
                .find(|vote| vote.call_id == *id && vote.verdict == StoredVerdict::Deny);
            let mut vote = CallVote {
                call_id: id.clone(),
                user_id: who.subject.clone(),
                email: who.email.clone(),
                verdict: StoredVerdict::Deny,
                reason: None,
                run_args: None,
                args_sha256: args_sha256(&call.request.args),
                eligible_by: eligible.clone(),
                channel: by.channel,
                voted_at: String::new(),
            };
            let (outcome, sha, approved, voided) = match call.verdict {
                // The requester may always reject their own calls.
                Verdict::Deny if eligible.is_empty() && who.subject != row.user_id => {
                    return Err(refused())
                }
                Verdict::Deny => {
                    if vote.eligible_by.is_empty() {
                        vote.eligible_by.push(REQUESTER.to_owned());
                    }
                    vote.reason = call.reason.clone();
                    tally.votes.push(vote);
                    (
                        Outcome::Rejected(call.reason.clone()),
                        None,
                        Vec::new(),
                        Vec::new(),
                    )
                }
                Verdict::Approve if eligible.is_empty() => return Err(refused()),
                // Someone eligible rejected it already: it stays rejected.
                Verdict::Approve if rejected_before.is_some() => (
                    Outcome::Rejected(rejected_before.and_then(|vote| vote.reason.clone())),
                    None,
                    Vec::new(),
                    Vec::new(),
                ),
                Verdict::Approve => {
                    let counted = count_approval(batch, who, call, &approvers, vote)?;
                    tally.votes.push(counted.vote);
                    let Approval {
                        outcome,
                        sha,
                        approved,
                        voided,
                        ..
                    } = counted;
                    (outcome, Some(sha), approved, voided)
                }
            };
            let votes: Vec<&CallVote> = batch.votes.iter().chain(&tally.votes).collect();
            let approved_via = routes_of(&votes, id, sha.as_deref(), &approved);
            let progress = CallQuorum {
                approved_by: approved,
                approved_via,
                voided,
                args_sha256: sha,
                ..call_quorum(id, &approvers, batch)
            };
            tally.progress.push(progress);
            outcomes.push((id.clone(), outcome));
        }
        tally.verdicts = final_verdicts(outcomes);
        Ok(tally)
    }
}

/// Where call `id` stands before anyone approved it: whom it waits for, how many, and the
/// entries its batch escalated to.
fn call_quorum(id: &str, approvers: &CallApprovers, batch: &BatchRow) -> CallQuorum {
    CallQuorum {
        call_id: id.to_owned(),
        approvers: approvers.entries.iter().map(ApproverEntry::label).collect(),
        requester_may_approve: approvers.requester_may_approve,
        quorum: approvers.quorum,
        approved_by: Vec::new(),
        approved_via: Vec::new(),
        escalated_to: batch.handed_to.escalated.clone(),
        voided: Vec::new(),
        args_sha256: None,
        requirement: approvers.requirement(),
        may_approve: None,
    }
}

/// A person's approval of a call, as [`count_approval`] counts it.
struct Approval {
    /// Approved once the quorum is met, else waiting.
    outcome: Outcome,
    /// The digest of the arguments approved.
    sha: String,
    /// Who approved those arguments so far, this person last.
    approved: Vec<String>,
    /// Whose approvals of other arguments no longer count.
    voided: Vec<String>,
    /// The person's vote, to store.
    vote: CallVote,
}

/// A person's approval of `call`, counted with the batch's earlier approvals of the same
/// arguments (the arguments that run: edited ones, if edited): the call's outcome (approved
/// once the quorum is met), the digest of those arguments, who approved them so far, whose
/// approvals of other arguments are voided, and the person's vote. Approving the same
/// arguments twice is refused.
fn count_approval(
    batch: &BatchRow,
    who: &Decider,
    call: &ResolvedCall,
    approvers: &CallApprovers,
    mut vote: CallVote,
) -> Result<Approval> {
    let id = &call.request.id;
    let run_args = call.run_args().unwrap_or_else(|| call.request.args.clone());
    let sha = args_sha256(&run_args);
    let (mut approved, voided) = approvals_of(&batch.votes, id, &sha);
    let approved_before = batch.votes.iter().any(|vote| {
        vote.call_id == *id
            && vote.verdict == StoredVerdict::Approve
            && vote.args_sha256 == sha
            && who.is_voter(vote)
    });
    if approved_before {
        return Err(AgentError::AlreadyApproved(format!(
            "you have already approved call {id} ({}) with these arguments; it waits for {} \
             more of: {}",
            call.request.name,
            approvers.quorum.saturating_sub(approved.len() as u32),
            approvers.requirement()
        )));
    }
    approved.push(who.subject.clone());
    vote.verdict = StoredVerdict::Approve;
    vote.args_sha256 = sha.clone();
    vote.run_args = Some(run_args.clone());
    let outcome = if approved.len() as u32 >= approvers.quorum {
        Outcome::Approved(run_args)
    } else {
        Outcome::Waiting
    };
    Ok(Approval {
        outcome,
        sha,
        approved,
        voided,
        vote,
    })
}

/// Each call's verdict once every call of the batch is decided; `None` while one still waits
/// for its quorum.
fn final_verdicts(outcomes: Vec<(String, Outcome)>) -> Option<Vec<CallVerdict>> {
    if outcomes
        .iter()
        .any(|(_, outcome)| matches!(outcome, Outcome::Waiting))
    {
        return None;
    }
    let verdicts = outcomes
        .into_iter()
        .map(|(call_id, outcome)| match outcome {
            Outcome::Approved(run_args) => CallVerdict {
                call_id,
                status: CallStatus::Approved,
                verdict: StoredVerdict::Approve,
                reason: None,
                run_args_sha256: Some(args_sha256(&run_args)),
                run_args: Some(run_args),
            },
            Outcome::Rejected(reason) => CallVerdict {
                call_id,
                status: CallStatus::Rejected,
                verdict: StoredVerdict::Deny,
                reason,
                run_args: None,
                run_args_sha256: None,
            },
            // Not reached: a waiting call returned above.
            Outcome::Waiting => CallVerdict {
                call_id,
                status: CallStatus::Rejected,
                verdict: StoredVerdict::Deny,
                reason: None,
                run_args: None,
                run_args_sha256: None,
            },
        })
        .collect();
    Some(verdicts)
}

/// A decision on one pending batch, planned: what the store writes, and what is counted and
/// announced once it has committed.
#[derive(Debug, Clone)]
pub struct PlannedDecision {
    pub by: Actor,
    pub batch_id: i64,
    pub decision: RecordedDecision,
    pub summary: String,
    pub verdicts: Vec<CallVerdict>,
    /// `Decided`, `Canceled` or `Expired`.
    pub batch_state: BatchState,
    pub task_state: TaskState,
    /// The events written with it, in order.
    pub events: Vec<StreamEvent>,
    /// When the batch paused (RFC 3339), for the time to a decision; `None`: not timed.
    pub paused_at: Option<String>,
    /// Each person's verdict on each call it records (`quorum`); none for a cancel or expiry.
    pub votes: Vec<CallVote>,
    /// An approval that left some call short of its quorum (`batch_state` is then `Pending`):
    /// where each call stands.
    pub quorum: Option<Vec<CallQuorum>>,
    /// The hex SHA-256 of the decision link it comes through, used in the same write.
    pub uses_link: Option<String>,
}

impl PlannedDecision {
    /// A plan that writes this decision if its batch still waits, and nothing if another
    /// decision (or a cancel, or an expiry) came first.
    pub fn if_pending(
        self,
    ) -> impl FnMut(Option<&TaskRow>, Option<&BatchRow>) -> Result<(Option<PlannedDecision>, ())>
           + Send
           + 'static {
        move |_, batch| {
            let waits = batch.is_some_and(|batch| batch.id == self.batch_id);
            Ok((waits.then(|| self.clone()), ()))
        }
    }
}

/// A person's decision on a pending batch once the decision rules resolved it: each call's
/// verdict (one mapping for local and relayed chats) and the task working again.
pub fn person_decision(
    by: Actor,
    batch: &BatchRow,
    decision: &Decision,
    resolved: &[ResolvedCall],
    events: Vec<StreamEvent>,
) -> PlannedDecision {
    PlannedDecision {
        by,
        batch_id: batch.id,
        decision: RecordedDecision::Person(decision.clone()),
        summary: decision.summary(),
        verdicts: call_verdicts(resolved),
        batch_state: BatchState::Decided,
        task_state: TaskState::Working,
        events,
        paused_at: Some(batch.created_at.clone()),
        votes: Vec::new(),
        quorum: None,
        uses_link: None,
    }
}

/// Each resolved call's verdict as stored, with the arguments an approved call runs with (a
/// question's answers added, or the person's edits; [`ResolvedCall::run_args`]).
pub fn call_verdicts(resolved: &[ResolvedCall]) -> Vec<CallVerdict> {
    resolved
        .iter()
        .map(|call| {
            let run_args = call.run_args();
            let (status, verdict) = match call.verdict {
                Verdict::Approve => (CallStatus::Approved, StoredVerdict::Approve),
                Verdict::Deny => (CallStatus::Rejected, StoredVerdict::Deny),
            };
            CallVerdict {
                call_id: call.request.id.clone(),
                status,
                verdict,
                reason: call.reason.clone(),
                run_args_sha256: run_args.as_ref().map(args_sha256),
                run_args,
            }
        })
        .collect()
}

/// Whether a decision is counted against the batch's votes (a person's), or was counted
/// already (a parent's decision forwarded to its subagent's task).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Count {
    Votes,
    Counted,
}

/// THE plan of a person's decision on the task `row`'s pending `batch`, once the decision rules
/// resolved it (`resolved`), counted against the batch's votes ([`Approvers::tally`]): the
/// batch's write (each call's verdict, or the votes and the interrupt again while some call
/// waits for its quorum) and the events it logs, with `echo` (the decision message) in the
/// `working` status it moves the task to. Pure: no store, so it runs inside the decision's
/// write and in a unit test alike.
pub fn plan(
    approvers: &Approvers,
    by: Actor,
    row: &TaskRow,
    batch: &BatchRow,
    decision: &Decision,
    resolved: &[ResolvedCall],
    echo: Message,
) -> Result<PlannedDecision> {
    let tally = approvers.tally(row, batch, &by, resolved)?;
    match tally.verdicts {
        Some(verdicts) => {
            let working = working_event(row, echo);
            let mut planned = person_decision(by, batch, decision, resolved, vec![working]);
            planned.verdicts = verdicts;
            planned.votes = tally.votes;
            Ok(planned)
        }
        None => Ok(short_of_quorum(by, row, batch, decision, tally)),
    }
}

/// The `working` status a decision moves the task to, with its `echo` (the decision).
pub fn working_event(row: &TaskRow, echo: Message) -> StreamEvent {
    view::status_event(
        &row.id,
        &row.context_id,
        TaskState::Working,
        Some(echo),
        None,
    )
}

/// Approvals that leave some call short of its quorum: the votes, and the batch's interrupt
/// again (the task still waits) with where each call stands in its `quorum` metadata.
fn short_of_quorum(
    by: Actor,
    row: &TaskRow,
    batch: &BatchRow,
    decision: &Decision,
    tally: Tally,
) -> PlannedDecision {
    let interrupt =
        ApprovalInterrupt::new(batch_requests(batch)).expiring_at(batch.expires_at.clone());
    let message = view::agent_message(&row.id, &row.context_id, interrupt.to_parts());
    let waiting = view::status_event(
        &row.id,
        &row.context_id,
        TaskState::InputRequired,
        Some(message),
        Some(hitl::quorum_event_metadata(&tally.progress)),
    );
    PlannedDecision {
        by,
        batch_id: batch.id,
        decision: RecordedDecision::Person(decision.clone()),
        summary: decision.summary(),
        verdicts: Vec::new(),
        batch_state: BatchState::Pending,
        task_state: TaskState::InputRequired,
        events: vec![waiting],
        paused_at: Some(batch.created_at.clone()),
        votes: tally.votes,
        quorum: Some(tally.progress),
        uses_link: None,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::agent::approvals::eligibility::tests::person;

    #[test]
    fn one_person_by_subject_or_verified_email_counts_once() {
        let vote = |user: &str, email: Option<&str>| CallVote {
            call_id: "c1".into(),
            user_id: user.into(),
            email: email.map(str::to_owned),
            verdict: StoredVerdict::Approve,
            reason: None,
            run_args: None,
            args_sha256: "a".into(),
            eligible_by: vec!["group:sre".into()],
            channel: crate::store::Channel::Rest,
            voted_at: String::new(),
        };
        let earlier = [
            vote("Zed", Some("zed@example.com")),
            vote("zed", Some("ZED@example.com")),
            vote("amy", None),
            vote("bo", None),
        ];
        let (approved, _) = approvals_of(&earlier, "c1", "a");
        assert_eq!(approved, ["Zed", "amy", "bo"]);
        let zed = person("zed", Some("zed@example.com"), &["sre"]);
        assert!(zed.is_voter(&earlier[0]));
        assert!(!person("zed", None, &[]).is_voter(&earlier[0]));
        assert!(!person("ann", Some("amy@example.com"), &[]).is_voter(&earlier[2]));
    }

    #[test]
    fn an_edit_voids_the_approvals_of_other_arguments() {
        let vote = |user: &str, sha: &str| CallVote {
            call_id: "c1".into(),
            user_id: user.into(),
            email: None,
            verdict: StoredVerdict::Approve,
            reason: None,
            run_args: None,
            args_sha256: sha.into(),
            eligible_by: vec!["group:sre".into()],
            channel: crate::store::Channel::Rest,
            voted_at: String::new(),
        };
        let earlier = [vote("bob", "a"), vote("alice", "b"), vote("bob", "b")];
        let (approved, voided) = approvals_of(&earlier, "c1", "b");
        assert_eq!(approved, ["alice", "bob"]);
        assert!(voided.is_empty(), "bob approved b too");
        let (approved, voided) = approvals_of(&earlier, "c1", "c");
        assert!(approved.is_empty());
        assert_eq!(voided, ["bob", "alice"]);
    }

    #[test]
    fn each_approval_keeps_the_route_that_let_its_voter_approve() {
        let vote = |user: &str, sha: &str, by: &str| CallVote {
            call_id: "c1".into(),
            user_id: user.into(),
            email: None,
            verdict: StoredVerdict::Approve,
            reason: None,
            run_args: None,
            args_sha256: sha.into(),
            eligible_by: vec![by.into()],
            channel: crate::store::Channel::Rest,
            voted_at: String::new(),
        };
        let earlier = [
            vote("bob", "a", "group:sre"),
            vote("dave", "b", "user:dave"),
            vote("bob", "b", "group:sre"),
        ];
        let votes: Vec<&CallVote> = earlier.iter().collect();
        let (approved, _) = approvals_of(&earlier, "c1", "b");
        assert_eq!(approved, ["dave", "bob"]);
        let routes = routes_of(&votes, "c1", Some("b"), &approved);
        assert_eq!(
            routes,
            [vec!["user:dave".to_owned()], vec!["group:sre".to_owned()]]
        );
    }

    fn decide(approvers: &Approvers, who: &str, decision: Decision) -> Result<PlannedDecision> {
        let row = TaskRow::new(
            "t-1".into(),
            "ctx".into(),
            "carol".into(),
            "default/demo".into(),
            TaskState::InputRequired,
            "[]".into(),
        );
        let request = signoff_protocol::hitl::ActionRequest {
            id: "call_1".into(),
            name: "write_file".into(),
            args: serde_json::json!({"path": "notes/a.md"}),
            description: None,
            server: None,
            approval_id: None,
            via: None,
            metadata: Default::default(),
        };
        let batch = BatchRow {
            id: 7,
            task_id: "t-1".into(),
            state: BatchState::Pending,
            requests: Value::Array(vec![request.to_value()]),
            created_at: crate::store::now(),
            decided_at: None,
            expires_at: None,
            votes: Vec::new(),
            handed_to: Default::default(),
        };
        let resolved = hitl::resolve(&batch_requests(&batch), &decision).unwrap();
        let by = Actor {
            channel: crate::store::Channel::Rest,
            decider: person(who, None, &[]),
            auth: None,
        };
        let echo = Message::new(
            "m",
            signoff_protocol::Role::User,
            decision.to_parts(hitl::Dialect::Native),
        );
        plan(approvers, by, &row, &batch, &decision, &resolved, echo)
    }

    #[test]
    fn without_approvers_the_requesters_decision_is_the_batchs_write() {
        let approvers = Approvers::new([("default/demo".to_owned(), Default::default())]);
        let approved = decide(&approvers, "carol", Decision::approve_all()).unwrap();
        assert_eq!(approved.batch_id, 7);
        assert_eq!(approved.batch_state, BatchState::Decided);
        assert_eq!(approved.task_state, TaskState::Working);
        assert_eq!(approved.verdicts.len(), 1);
        assert_eq!(approved.verdicts[0].status, CallStatus::Approved);
        assert_eq!(approved.votes[0].eligible_by, [REQUESTER]);
        assert!(approved.quorum.is_none());
        let rejected = decide(
            &approvers,
            "carol",
            Decision::deny_all(Some("not now".into())),
        )
        .unwrap();
        assert_eq!(rejected.verdicts[0].status, CallStatus::Rejected);
        assert_eq!(rejected.verdicts[0].reason.as_deref(), Some("not now"));
    }

    #[test]
    fn someone_the_approvers_do_not_name_is_refused_before_anything_is_written() {
        let approvers = Approvers::new([("default/demo".to_owned(), Default::default())]);
        let refused = decide(&approvers, "mallory", Decision::approve_all());
        assert!(
            matches!(refused, Err(AgentError::NotEligible(_))),
            "{refused:?}"
        );
    }
}
