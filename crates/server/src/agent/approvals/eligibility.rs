//! Who may approve a call (crates/server/README.md, Approvers): the one answer for every
//! question of it (a decision on any channel, the inbox, the approvals stream, an approver's
//! read of the chat, a hand-over, an extension, a decision link, an edit's routing). A call's
//! approvers come from its asking agent's most specific settings, or from the Cedar policy that
//! asked for it; hand-overs and escalations of its batch add entries; the two-person rule keeps
//! the requester out.

use serde_json::Value;
use signoff_protocol::hitl::{ActionRequest, Why};
use signoff_protocol::rest::DeciderAuth;

use crate::agent::config::ApproverEntry;
use crate::agent::policy::{AgentApprovals, CallApprovers};
use crate::store::{CallVote, Handed, TaskRow};

use std::collections::HashMap;

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
    pub(super) fn is_voter(&self, vote: &CallVote) -> bool {
        same_person(&self.subject, self.email.as_deref(), vote)
    }
}

/// Whether `subject` with verified `email` cast `vote`.
pub(super) fn same_person(subject: &str, email: Option<&str>, vote: &CallVote) -> bool {
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
/// [`Approvers::eligibility`].
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
pub fn handed_over_to(handed: &Handed, who: &Decider) -> bool {
    handed.handed_over.iter().any(|label| names(label, who))
}

/// Who approves a call of `request`'s tool with `args` under an agent's `approvals`: a Cedar
/// policy's ask (`why`) routes by its annotations, any other ask by the agents file (its `ask`
/// rule that matches `args`, the tool, its source, the agent). One answer for a stored call and
/// for a person's edit of one (`args` as edited), so the two never disagree.
pub fn approvers_by(
    approvals: &AgentApprovals,
    request: &ActionRequest,
    why: Option<&Why>,
    args: &Value,
) -> CallApprovers {
    let (name, server) = (&request.name, request.server.as_deref());
    match why {
        Some(why) => approvals.approvers_for_policy(name, server, why),
        None => approvals.approvers_for(name, server, args),
    }
}

/// Whether every set of approvals that satisfies `asked` (the routing the batch waits under)
/// also satisfies `edited`, whatever hand-overs or escalations add to both: whoever is eligible
/// under `asked` is under `edited`, and `edited` needs no more approvals. Decided on the
/// entries as written (a user who is also in a named group is not taken to be that group), so
/// it may refuse an edit that is in fact no stricter, never the other way round.
/// `requester`/`groups` are the task's requester and the groups their sign-in named.
pub fn no_stricter(
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

/// Who may approve the calls of each agent: its approval settings (by `namespace/name`), from
/// which every call's approvers are read. No store: a plan reads it inside its write.
#[derive(Debug, Clone, Default)]
pub struct Approvers {
    agents: HashMap<String, AgentApprovals>,
}

impl Approvers {
    /// The approvers of these agents (`namespace/name` and its approval settings).
    pub fn new(agents: impl IntoIterator<Item = (String, AgentApprovals)>) -> Approvers {
        Approvers {
            agents: agents.into_iter().collect(),
        }
    }

    /// Who may approve `request` of task `row`: its asking agent's most specific settings (a
    /// subagent's nested call is its own agent's), under the approvers and quorum of the Cedar
    /// policy that asked for it, if one did (the `signoff_why` this server stored with the
    /// batch).
    pub fn call_approvers(&self, row: &TaskRow, request: &ActionRequest) -> CallApprovers {
        self.call_approvers_of(&row.agent, request)
    }

    /// [`Approvers::call_approvers`] of a call of a task of `agent` (`namespace/name`).
    pub fn call_approvers_of(&self, agent: &str, request: &ActionRequest) -> CallApprovers {
        let asker = match &request.via {
            Some(via) => via.asker.as_str(),
            None => agent,
        };
        self.approvers_of(asker, request)
    }

    /// Who may approve `request`, asked by the agent `asker` (`namespace/name`).
    pub fn approvers_of(&self, asker: &str, request: &ActionRequest) -> CallApprovers {
        let Some(approvals) = self.agents.get(asker) else {
            return CallApprovers::requester_alone();
        };
        let why = Why::from_metadata(&request.metadata).filter(Why::is_policy_ask);
        approvers_by(approvals, request, why.as_ref(), &request.args)
    }

    /// The one answer to "may `who` approve `request`", of a task of `agent` that `requester`
    /// started, with the entries hand-overs and escalations added to its batch (`handed`): the
    /// call's approvers, and what makes `who` eligible (empty: nothing).
    pub fn eligibility(
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
    pub fn eligible_for_batch(
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
}

#[cfg(test)]
pub(super) mod tests {
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

    /// A person for tests: a subject, maybe a verified email, and groups.
    pub(in crate::agent::approvals) fn person(
        subject: &str,
        email: Option<&str>,
        groups: &[&str],
    ) -> Decider {
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
}
