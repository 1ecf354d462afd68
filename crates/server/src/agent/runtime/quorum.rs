//! Who may decide a batch's calls, and the quorum each call needs (crates/server/README.md,
//! Approvers). A person's decision is tallied against the votes already cast on the batch,
//! inside the decision's store write (so racing approvers, on any replica, are counted one
//! after the other): every call ends rejected (any eligible rejection) or approved (its quorum
//! of distinct eligible people approved the same arguments), and then the batch is decided as
//! ever; or some call still waits, and only the votes (and an `input-required` event saying
//! how far each call has come) are written. With no approvers configured the requester is the
//! only eligible person and the quorum is one: the requester decides alone.

use serde_json::Value;
use signoff_protocol::hitl::{ActionRequest, ResolvedCall, Verdict, Why};
use signoff_protocol::rest::{CallQuorum, DeciderAuth};

use crate::agent::config::ApproverEntry;
use crate::agent::policy::CallApprovers;
use crate::store::{
    BatchRow, CallStatus, CallVerdict, CallVote, Handed, TaskRow, Verdict as StoredVerdict,
};

use super::audit::args_sha256;
use super::decide::DecisionInput;
use super::{Agent, AgentError, Result, Runtime};

/// The entry a requester is eligible by when nobody else is configured.
pub const REQUESTER: &str = "requester";

/// The person a decision is made by: their subject, what the agents file's `approvers` may
/// name (their email and groups), as the HTTP layer's identity says, and how the request that
/// carries them was authenticated, for the audit of a decision it makes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decider {
    pub subject: String,
    pub email: Option<String>,
    pub groups: Vec<String>,
    /// How they signed in for this request; `None` when no request of theirs decides (a
    /// cancel or expiry for a task's owner, a share link, the runtime's own work).
    pub auth: Option<DeciderAuth>,
}

impl Decider {
    /// A person known only by their subject (no email, no groups).
    pub fn subject(subject: impl Into<String>) -> Decider {
        Decider {
            subject: subject.into(),
            email: None,
            groups: Vec::new(),
            auth: None,
        }
    }

    /// Whether `entry` names this person. Subjects and emails are kept apart: `user:` with an
    /// `@` is an email and matches only the verified email `--auth` vouches for (without regard
    /// to ASCII case), never a subject shaped like it; any other `user:` matches the subject,
    /// byte for byte. A group matches byte for byte.
    fn matches(&self, entry: &ApproverEntry) -> bool {
        match entry {
            ApproverEntry::Group(group) => self.groups.iter().any(|own| own == group),
            ApproverEntry::User(user) if user.contains('@') => self
                .email
                .as_deref()
                .is_some_and(|email| email.eq_ignore_ascii_case(user)),
            ApproverEntry::User(user) => self.subject == *user,
        }
    }

    /// Whether this person and the one who cast `vote` are one: the same subject, or the same
    /// verified email (a proxy's `Zed` and `zed` with one address are one person).
    fn is_voter(&self, vote: &CallVote) -> bool {
        same_person(&self.subject, self.email.as_deref(), vote)
    }
}

/// Whether `subject` with verified `email` cast `vote`.
fn same_person(subject: &str, email: Option<&str>, vote: &CallVote) -> bool {
    vote.user_id == subject
        || email
            .zip(vote.email.as_deref())
            .is_some_and(|(email, theirs)| email.eq_ignore_ascii_case(theirs))
}

/// What lets `who` approve a call under `approvers` of a chat `requester` started: the entries
/// that name them, or [`REQUESTER`]; empty: they may not approve it. Only [`eligible_with`]
/// asks it.
fn eligible_by(approvers: &CallApprovers, who: &Decider, requester: &str) -> Vec<String> {
    let is_requester = who.subject == requester;
    if approvers.entries.is_empty() {
        return if is_requester {
            vec![REQUESTER.to_owned()]
        } else {
            Vec::new()
        };
    }
    if is_requester && !approvers.requester_may_approve {
        return Vec::new();
    }
    approvers
        .entries
        .iter()
        .filter(|entry| who.matches(entry))
        .map(ApproverEntry::label)
        .collect()
}

/// What lets `who` approve a call: [`eligible_by`] the agents file, and the entries of the
/// batch's escalations (the agents file's own `escalate_to`) and, where the approvers let a
/// hand-over widen them ([`CallApprovers::handover_widens`]), of its hand-overs (`handed`)
/// that name `who`; never the requester under a two-person rule. Every question of who may
/// approve (a decision on any channel, the inbox, the approvals stream, an approver's read of
/// the chat, a hand-over, an extension, a decision link) comes here through
/// [`Runtime::eligibility`].
fn eligible_with(
    approvers: &CallApprovers,
    handed: &Handed,
    who: &Decider,
    requester: &str,
) -> Vec<String> {
    let mut eligible = eligible_by(approvers, who, requester);
    if who.subject == requester && !approvers.requester_may_approve {
        return eligible;
    }
    let handed_over: &[String] = match approvers.handover_widens() {
        true => &handed.handed_over,
        false => &[],
    };
    for label in handed.escalated.iter().chain(handed_over) {
        if names(label, who) && !eligible.contains(label) {
            eligible.push(label.clone());
        }
    }
    eligible
}

/// Whether the entry `label` (`user:ID`, `group:NAME`) names `who`.
fn names(label: &str, who: &Decider) -> bool {
    ApproverEntry::parse(label).is_ok_and(|entry| who.matches(&entry))
}

/// Whether a hand-over of the batch named `who`: then they may read it, whether or not they
/// may approve it.
pub(super) fn handed_over_to(handed: &Handed, who: &Decider) -> bool {
    handed.handed_over.iter().any(|label| names(label, who))
}

/// A person's decision counted against a batch's earlier votes.
#[derive(Debug, Clone)]
pub(super) struct Tally {
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

impl Runtime {
    /// Who may approve `request` of task `row`: its asking agent's most specific settings (a
    /// subagent's nested call is its own agent's), under the approvers and quorum of the Cedar
    /// policy that asked for it, if one did (the `signoff_why` this server stored with the
    /// batch).
    pub(super) fn call_approvers(&self, row: &TaskRow, request: &ActionRequest) -> CallApprovers {
        self.call_approvers_of(&row.agent, request)
    }

    /// [`Runtime::call_approvers`] of a call of a task of `agent` (`namespace/name`).
    pub(super) fn call_approvers_of(&self, agent: &str, request: &ActionRequest) -> CallApprovers {
        let asker = match &request.via {
            Some(via) => via.asker.as_str(),
            None => agent,
        };
        self.approvers_of(asker, request)
    }

    /// Who may approve `request`, asked by the agent `asker` (`namespace/name`).
    pub(super) fn approvers_of(&self, asker: &str, request: &ActionRequest) -> CallApprovers {
        let Some(agent) = self.agent_by_key(asker) else {
            return CallApprovers::requester_alone();
        };
        let server = request.server.as_deref();
        match Why::from_metadata(&request.metadata).filter(Why::is_policy_ask) {
            Some(why) => agent
                .approvals
                .approvers_for_policy(&request.name, server, &why),
            None => agent
                .approvals
                .approvers_for(&request.name, server, &request.args),
        }
    }

    /// Whether some call of `agent` may be routed to approvers besides its requester: by the
    /// agents file, or by a live Cedar policy that names approvers.
    pub(super) fn agent_routes(&self, agent: &Agent) -> bool {
        agent.approvals.routes_to_approvers() || self.gate.live.routes_to_approvers()
    }

    /// The one answer to "may `who` approve `request`", of a task of `agent` that `requester`
    /// started, with the entries hand-overs and escalations added to its batch (`handed`): the
    /// call's approvers, and what makes `who` eligible (empty: nothing).
    pub(super) fn eligibility(
        &self,
        agent: &str,
        requester: &str,
        request: &ActionRequest,
        handed: &Handed,
        who: &Decider,
    ) -> (CallApprovers, Vec<String>) {
        let approvers = self.call_approvers_of(agent, request);
        let eligible = eligible_with(&approvers, handed, who, requester);
        (approvers, eligible)
    }

    /// Whether `who` may approve some call of `requests` (a batch of task `row`, with the
    /// entries `handed` to it).
    pub(super) fn eligible_for_batch(
        &self,
        row: &TaskRow,
        requests: &[ActionRequest],
        handed: &Handed,
        who: &Decider,
    ) -> bool {
        requests.iter().any(|request| {
            !self
                .eligibility(&row.agent, &row.user_id, request, handed, who)
                .1
                .is_empty()
        })
    }

    /// Counts `by`'s verdicts on `resolved` (the batch's calls, in order) against the votes
    /// already cast on `batch`: refused when they may not give one of them, else the votes to
    /// record and, if every call is now decided, each call's verdict. Pure: it runs inside the
    /// store's write.
    pub(super) fn tally(
        &self,
        row: &TaskRow,
        batch: &BatchRow,
        by: &DecisionInput,
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
                            "you have already approved call {id} ({}) with these arguments; it \
                             waits for {} more of: {}",
                            call.request.name,
                            approvers.quorum.saturating_sub(approved.len() as u32),
                            approvers.requirement()
                        )));
                    }
                    approved.push(who.subject.clone());
                    vote.verdict = StoredVerdict::Approve;
                    vote.args_sha256 = sha.clone();
                    vote.run_args = Some(run_args.clone());
                    tally.votes.push(vote);
                    let outcome = if approved.len() as u32 >= approvers.quorum {
                        Outcome::Approved(run_args)
                    } else {
                        Outcome::Waiting
                    };
                    (outcome, Some(sha), approved, voided)
                }
            };
            tally.progress.push(CallQuorum {
                call_id: id.clone(),
                approvers: approvers.entries.iter().map(ApproverEntry::label).collect(),
                requester_may_approve: approvers.requester_may_approve,
                quorum: approvers.quorum,
                approved_by: approved,
                voided,
                args_sha256: sha,
                requirement: approvers.requirement(),
                may_approve: None,
            });
            outcomes.push((id.clone(), outcome));
        }
        tally.verdicts = final_verdicts(outcomes);
        Ok(tally)
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn approvers(entries: &[&str], requester_may_approve: bool, quorum: u32) -> CallApprovers {
        CallApprovers {
            entries: entries
                .iter()
                .filter_map(|entry| ApproverEntry::parse(entry).ok())
                .collect(),
            requester_may_approve,
            quorum,
            handover_may_widen: false,
            ladder: Default::default(),
        }
    }

    fn person(subject: &str, email: Option<&str>, groups: &[&str]) -> Decider {
        Decider {
            subject: subject.to_owned(),
            email: email.map(str::to_owned),
            groups: groups.iter().map(|group| (*group).to_owned()).collect(),
            auth: None,
        }
    }

    #[test]
    fn without_approvers_only_the_requester_is_eligible() {
        let alone = CallApprovers::requester_alone();
        assert_eq!(
            eligible_by(&alone, &person("carol", None, &[]), "carol"),
            [REQUESTER]
        );
        assert!(eligible_by(&alone, &person("bob", None, &["sre"]), "carol").is_empty());
    }

    #[test]
    fn groups_and_users_make_people_eligible_and_the_two_person_rule_excludes_the_requester() {
        let rule = approvers(&["group:sre", "user:alice@example.com"], false, 2);
        let bob = person("bob", None, &["oncall", "sre"]);
        assert_eq!(eligible_by(&rule, &bob, "carol"), ["group:sre"]);
        let alice = person("a-123", Some("Alice@Example.com"), &[]);
        assert_eq!(
            eligible_by(&rule, &alice, "carol"),
            ["user:alice@example.com"]
        );
        assert!(eligible_by(&rule, &person("dave", None, &["dev"]), "carol").is_empty());
        // The requester is in the group, but the rule wants a second person.
        let carol = person("carol", None, &["sre"]);
        assert!(eligible_by(&rule, &carol, "carol").is_empty());
        let listed = approvers(&["group:sre"], true, 1);
        assert_eq!(eligible_by(&listed, &carol, "carol"), ["group:sre"]);
    }

    #[test]
    fn subjects_and_emails_are_kept_apart() {
        let rule = approvers(&["user:carol@example.com", "user:alice"], true, 1);
        // A subject shaped like carol's address is not carol; her verified email is.
        let shaped = person("carol@example.com", None, &[]);
        assert!(eligible_by(&rule, &shaped, "dave").is_empty());
        let carol = person("c-7", Some("Carol@example.com"), &[]);
        assert_eq!(
            eligible_by(&rule, &carol, "dave"),
            ["user:carol@example.com"]
        );
        // A name without `@` is a subject, byte for byte: never an email, never another case.
        let mailbox_alice = person("a-1", Some("alice"), &[]);
        assert!(eligible_by(&rule, &mailbox_alice, "dave").is_empty());
        assert!(eligible_by(&rule, &person("Alice", None, &[]), "dave").is_empty());
        assert_eq!(
            eligible_by(&rule, &person("alice", None, &[]), "dave"),
            ["user:alice"]
        );
        let grouped = approvers(&["group:sre"], true, 1);
        assert!(eligible_by(&grouped, &person("bob", None, &["SRE"]), "dave").is_empty());
    }

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
    fn a_hand_over_never_widens_the_approvers_unless_the_agents_file_lets_it() {
        let handed = Handed {
            escalated: vec!["group:dba".into()],
            handed_over: vec!["user:erin".into(), "group:sre".into()],
        };
        let rule = approvers(&["group:sre"], false, 2);
        let erin = person("erin", None, &["dev"]);
        assert!(eligible_with(&rule, &handed, &erin, "carol").is_empty());
        assert!(handed_over_to(&handed, &erin), "erin may still read it");
        // An approver a hand-over names stays eligible by their own entry.
        let bob = person("bob", None, &["sre"]);
        assert_eq!(eligible_with(&rule, &handed, &bob, "carol"), ["group:sre"]);
        // An escalation is the agents file's word: it widens.
        let dana = person("dana", None, &["dba"]);
        assert_eq!(eligible_with(&rule, &handed, &dana, "carol"), ["group:dba"]);
        let widening = CallApprovers {
            handover_may_widen: true,
            ..rule.clone()
        };
        assert_eq!(
            eligible_with(&widening, &handed, &erin, "carol"),
            ["user:erin"]
        );
        // Never the requester under a two-person rule, widening or not.
        let carol = person("carol", None, &["sre"]);
        assert!(eligible_with(&widening, &handed, &carol, "carol").is_empty());
        // Without approvers the requester decides alone, and passes that on.
        let alone = CallApprovers::requester_alone();
        assert_eq!(
            eligible_with(&alone, &handed, &erin, "carol"),
            ["user:erin"]
        );
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
}
