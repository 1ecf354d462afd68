//! The one decision function of the gate: the deployment's Cedar policies, the agent's argument
//! rules, the tool's `require_approval` and a person's "always allow" grants meet here, in the
//! order docs/policies.md states, so every call has one answer to "why did it run, wait or get
//! refused" (a [`Why`]).

use signoff_protocol::hitl::{GateOutcome, Why, WhyKind};

use super::cedar::CedarOutcome;
use super::config::RuleAction;
use super::policy::{Grant, Rule};

/// What the gate decided about one call, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decided {
    pub why: Why,
    /// An ask a person's grant may answer (an ask of a rule or of `require_approval`; never a
    /// policy's ask or an evaluation error, which the deployment, not the person, set).
    pub grantable: bool,
}

impl Decided {
    pub fn outcome(&self) -> GateOutcome {
        self.why.outcome
    }
}

fn why(by: WhyKind, id: &str, outcome: GateOutcome, summary: String) -> Why {
    Why {
        by,
        id: id.to_owned(),
        outcome,
        summary,
        approvers: Vec::new(),
        quorum: None,
        risk: None,
        reason: None,
        file: None,
        requester_may_approve: None,
        review: None,
    }
}

/// Decides one call. The first that applies decides:
/// 1. a Cedar `forbid` (deny), 2. a `deny` rule (deny), 3. a policy that could not be
///    evaluated (ask), 4. a Cedar permit with `@ask` (ask, with its approvers),
/// 5. an `ask` rule (ask), 6. an `allow` rule (allow), 7. a Cedar permit (allow),
/// 8. the tool's `require_approval` (ask, else allow).
///
/// So a refusal beats an ask, and an ask beats an allow. An ask of 5 or 8 is then answered by
/// `grant`, the first of the person's grants that approves the call, if there is one; one that
/// no grant answers (`grantable`) goes next to the agent's first reviewer, whose verdict
/// becomes the call's why (`WhyKind::Reviewer`, `runtime::reviewing`).
pub fn decide(
    cedar: &CedarOutcome,
    rule: Option<&Rule>,
    requires_approval: bool,
    grant: Option<&Grant>,
) -> Decided {
    let rule_action = rule.map(|rule| (rule.action, rule.label.as_str()));
    let fixed = |why: Why| Decided {
        why,
        grantable: false,
    };
    if let CedarOutcome::Deny { policy, reason } = cedar {
        let mut why = why(
            WhyKind::Policy,
            policy,
            GateOutcome::Deny,
            format!("Denied by policy {policy}"),
        );
        why.reason = reason.clone();
        return fixed(why);
    }
    if let Some((RuleAction::Deny, label)) = rule_action {
        return fixed(why(
            WhyKind::Rule,
            label,
            GateOutcome::Deny,
            format!("Denied by rule {label}"),
        ));
    }
    if let CedarOutcome::Error { message } = cedar {
        let mut why = why(
            WhyKind::PolicyError,
            "policy-error",
            GateOutcome::Ask,
            "A policy could not be evaluated, so the call waits for you".into(),
        );
        why.reason = Some(message.clone());
        return fixed(why);
    }
    if let CedarOutcome::Ask(spec) = cedar {
        let mut why = why(
            WhyKind::Policy,
            &spec.policy,
            GateOutcome::Ask,
            format!("Policy {} asks for a decision", spec.policy),
        );
        why.approvers = spec.approvers.clone();
        why.quorum = spec.quorum;
        why.risk = spec.risk.map(|risk| risk.as_str().to_owned());
        why.reason = spec.reason.clone();
        why.requester_may_approve = spec.requester_may_approve;
        return fixed(why);
    }
    let asked = match rule_action {
        Some((RuleAction::Ask, label)) => Some(why(
            WhyKind::Rule,
            label,
            GateOutcome::Ask,
            format!("Rule {label} asks"),
        )),
        Some((RuleAction::Allow, label)) => {
            return fixed(why(
                WhyKind::Rule,
                label,
                GateOutcome::Allow,
                format!("Allowed by rule {label}"),
            ))
        }
        Some((RuleAction::Deny, _)) | None => None,
    };
    let asked = match (asked, cedar) {
        (Some(asked), _) => asked,
        (None, CedarOutcome::Allow { policy }) => {
            return fixed(why(
                WhyKind::Policy,
                policy,
                GateOutcome::Allow,
                format!("Allowed by policy {policy}"),
            ))
        }
        (None, _) if requires_approval => why(
            WhyKind::Default,
            "require_approval",
            GateOutcome::Ask,
            "The tool requires approval".into(),
        ),
        (None, _) => {
            return fixed(why(
                WhyKind::Default,
                "require_approval",
                GateOutcome::Allow,
                "The tool does not require approval".into(),
            ))
        }
    };
    match grant {
        Some(grant) => fixed(why(
            WhyKind::Grant,
            &grant.row.id,
            GateOutcome::Allow,
            grant.summary(),
        )),
        None => Decided {
            why: asked,
            grantable: true,
        },
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::agent::cedar::{AskSpec, Risk};
    use crate::agent::config::AgentsFile;
    use crate::agent::policy::AgentApprovals;
    use crate::store::{GrantRow, GrantScope};
    use serde_json::json;

    fn rules(action: &str) -> AgentApprovals {
        let file = AgentsFile::parse(&format!(
            "[[agents]]\nname = \"a\"\n[[agents.tools]]\nkind = \"builtin_files\"\n\
             [[agents.rules]]\ntool = \"write_file\"\naction = \"{action}\"\n"
        ))
        .unwrap();
        AgentApprovals::from_spec("agents[0]", &file.agents[0]).unwrap()
    }

    fn grant() -> Grant {
        Grant::compile(GrantRow {
            id: "g1".into(),
            user_id: "u".into(),
            agent: "default/a".into(),
            tool: "write_file".into(),
            scope: GrantScope::Agent,
            context_id: None,
            args: None,
            created_by: "u".into(),
            created_at: "t".into(),
            revoked_at: None,
            expires_at: None,
            uses_left: None,
        })
        .unwrap()
    }

    fn ask() -> CedarOutcome {
        CedarOutcome::Ask(AskSpec {
            policy: "oncall".into(),
            approvers: vec!["group:sre".into()],
            quorum: Some(2),
            risk: Some(Risk::High),
            reason: Some("prod".into()),
            requester_may_approve: None,
            narrower: Default::default(),
        })
    }

    #[test]
    fn a_refusal_beats_an_ask_and_an_ask_beats_an_allow() {
        let args = json!({"path": "a"});
        let deny_rule = rules("deny");
        let allow_rule = rules("allow");
        let ask_rule = rules("ask");
        let rule = |approvals: &AgentApprovals| approvals.rule_for("write_file", &args).cloned();
        let forbid = CedarOutcome::Deny {
            policy: "etc".into(),
            reason: Some("no".into()),
        };
        let permit = CedarOutcome::Allow {
            policy: "reads".into(),
        };
        let error = CedarOutcome::Error {
            message: "no attribute path".into(),
        };
        let g = grant();
        let case = |cedar: &CedarOutcome,
                    rule: Option<Rule>,
                    grant: Option<&crate::agent::policy::Grant>| {
            let decided = decide(cedar, rule.as_ref(), true, grant);
            (decided.why.by, decided.why.id, decided.why.outcome)
        };
        use GateOutcome::{Allow, Ask, Deny};
        use WhyKind::{Default, Grant, Policy, PolicyError};
        // A forbid wins over an allow rule and a grant.
        assert_eq!(
            case(&forbid, rule(&allow_rule), Some(&g)),
            (Policy, "etc".into(), Deny)
        );
        // A deny rule wins over a permit.
        assert_eq!(
            case(&permit, rule(&deny_rule), Some(&g)).2,
            Deny,
            "deny rule over permit"
        );
        // An evaluation error never allows, not even through a grant or an allow rule.
        assert_eq!(
            case(&error, rule(&allow_rule), Some(&g)),
            (PolicyError, "policy-error".into(), Ask)
        );
        // A policy's ask is the deployment's: a grant does not answer it.
        let decided = decide(&ask(), rule(&allow_rule).as_ref(), false, Some(&g));
        assert_eq!(decided.why.outcome, Ask);
        assert_eq!(decided.why.approvers, vec!["group:sre".to_owned()]);
        assert_eq!(decided.why.quorum, Some(2));
        assert_eq!(decided.why.risk.as_deref(), Some("high"));
        assert!(!decided.grantable);
        // An ask rule beats a permit; a grant answers it.
        assert_eq!(
            case(&permit, rule(&ask_rule), None),
            (WhyKind::Rule, rule(&ask_rule).unwrap().label, Ask)
        );
        assert_eq!(
            case(&permit, rule(&ask_rule), Some(&g)),
            (Grant, "g1".into(), Allow)
        );
        // An allow rule is named before a permit; a permit allows a tool that requires approval.
        assert_eq!(case(&permit, rule(&allow_rule), None).0, WhyKind::Rule);
        assert_eq!(case(&permit, None, None), (Policy, "reads".into(), Allow));
        // Nothing applies: the tool's setting, which a grant answers.
        assert_eq!(
            case(&CedarOutcome::NoOpinion, None, None),
            (Default, "require_approval".into(), Ask)
        );
        assert_eq!(case(&CedarOutcome::NoOpinion, None, Some(&g)).0, Grant);
        let free = decide(&CedarOutcome::NoOpinion, None, false, None);
        assert_eq!(free.outcome(), Allow);
    }
}
