//! Calls decided before anyone is asked: the screening of a model turn's calls. Each call goes
//! through the checks in this order, in the one decision function (`agent::decision::decide`):
//! 1. the deployment's Cedar policies (`--policies`; the shadow set beside them, only logged and
//!    counted): a forbid denies, a permit allows, an ask holds the call with its approvers;
//! 2. the agent's argument rules (`agent::policy`), then the tool's `require_approval`;
//! 3. for a call that would then wait and that a grant may answer, the person's grants
//!    ("always allow", `grants`), read once per turn; a counted one is spent in the store.
//!
//! A person's edit of a waiting call goes through the same checks (`edits`).

use std::collections::HashMap;
use std::sync::Arc;

use signoff_protocol::hitl::{DecidedBy, GateOutcome, RecordedDecision, Why, WhyKind, ASK_USER};

use crate::agent::cedar::{CallCounts, CallFacts, CedarOutcome, ToolFacts};
use crate::agent::decision::{decide, Decided};
use crate::agent::model::ModelToolCall;
use crate::agent::policy::Grant;
use crate::agent::tools::ExposedTool;
use crate::store::{AutoDecision, Channel, CountWindows, Verdict};

use super::{Agent, Result, Runtime};

/// How one call of a turn is recorded.
pub(super) struct Screened {
    /// Waits for a person's decision.
    pub held: bool,
    /// Decided without asking (a policy or a grant allowed it, a rule or a policy denied it),
    /// with its audit row.
    pub auto: Option<AutoDecision>,
    /// Who decided, for the call's part metadata.
    pub decided_by: Option<DecidedBy>,
    /// The rule, grant or policy that decided (`decision::decide`), for the card and the audit.
    pub why: Option<Why>,
    /// It waits on an ask a grant could have answered (a rule's or `require_approval`'s, not
    /// a policy's or a question): the agent's reviewer, if it has one, is asked about it
    /// (`reviewing`).
    pub reviewable: bool,
}

/// Who the calls of a turn are made for, and where.
pub(super) struct Requester<'a> {
    pub user: &'a str,
    pub groups: &'a [String],
    pub context_id: &'a str,
    /// The task whose turn made the calls; `""` for a call outside a task (no counts then).
    pub task_id: &'a str,
    /// The turn is a subagent's task's.
    pub subagent: bool,
}

impl Runtime {
    /// Screens a model turn's calls: each goes through the one decision function
    /// ([`decide`]) with the deployment's policies, the agent's rules, the tool's setting and,
    /// for an ask a grant may answer, the person's grants. The grants are read from the store
    /// once per turn that needs them, so a revoke or an expiry counts from the next turn on, on
    /// every server that shares the store; a counted grant is spent in the store, one use per
    /// call it allows.
    pub(super) async fn screen_calls(
        &self,
        agent: &Agent,
        requester: &Requester<'_>,
        calls: &[ModelToolCall],
    ) -> Result<Vec<Screened>> {
        let user = requester.user;
        let mut grants: Option<Vec<Arc<Grant>>> = None;
        // Uses this turn took of each counted grant: what is left, for the call's why.
        let mut spent: HashMap<String, i64> = HashMap::new();
        let mut out = Vec::with_capacity(calls.len());
        let now = chrono::Utc::now();
        // Each tool's counts, read once per turn and raised by the calls this turn allows
        // (they are not in the store until the turn commits).
        let mut counts: HashMap<String, CallCounts> = HashMap::new();
        for call in calls {
            let Some(tool) = agent.tools.get(&call.name) else {
                // An unknown tool never runs: its call fails with "no tool named …".
                out.push(Screened {
                    held: false,
                    auto: None,
                    decided_by: None,
                    why: None,
                    reviewable: false,
                });
                continue;
            };
            if !counts.contains_key(&call.name) {
                if let Some(read) = self.read_counts(requester, &call.name, now).await? {
                    counts.insert(call.name.clone(), read);
                }
            }
            let (cedar, mut decided) = self.gate(
                agent,
                requester,
                &tool,
                &call.args,
                now,
                counts.get(&call.name),
            );
            let rule = agent.approvals.rule_for(&call.name, &call.args);
            if decided.grantable {
                if grants.is_none() {
                    grants = Some(
                        self.grants()
                            .in_force(user, &agent.key(), requester.context_id)
                            .await?,
                    );
                }
                for grant in grants.iter().flatten() {
                    if !grant.approves(&call.name, &call.args) {
                        continue;
                    }
                    // A counted or time-boxed grant is checked and spent in one step, so it
                    // stops at once on every replica.
                    let limited = grant.row.uses_left.is_some() || grant.row.expires_at.is_some();
                    if limited
                        && !self
                            .store
                            .use_grant(&grant.row.id, &crate::store::now())
                            .await?
                    {
                        continue;
                    }
                    decided = decide(&cedar, rule, tool.requires_approval, Some(grant));
                    if let Some(uses) = grant.row.uses_left {
                        let taken = spent.entry(grant.row.id.clone()).or_insert(0);
                        *taken += 1;
                        decided.why.summary = grant.summary_with_uses(Some(uses - *taken));
                    }
                    break;
                }
            }
            if decided.why.by == WhyKind::Policy {
                decided.why.file = self.gate.live.file_of(&decided.why.id);
            }
            if let Some(count) = counts.get_mut(&call.name) {
                if decided.why.outcome == GateOutcome::Allow {
                    count.add_allowed(&call.args);
                }
            }
            let reviewable = decided.grantable
                && decided.why.outcome == GateOutcome::Ask
                && call.name != ASK_USER;
            let mut screened = screened(user, decided.why);
            screened.reviewable = reviewable;
            out.push(screened);
        }
        Ok(out)
    }

    /// What the task and its person have done with `tool` (`context.counts`), in one store
    /// read; `None`, without a read, when no policy (live or shadow) reads the counts or the
    /// call is outside a task.
    async fn read_counts(
        &self,
        requester: &Requester<'_>,
        tool: &str,
        now: chrono::DateTime<chrono::Utc>,
    ) -> Result<Option<CallCounts>> {
        let reads = self.gate.live.reads_counts()
            || self
                .gate
                .shadow
                .as_ref()
                .is_some_and(|set| set.reads_counts());
        if !reads || requester.task_id.is_empty() || tool == ASK_USER {
            return Ok(None);
        }
        let ago = |hours| {
            (now - chrono::Duration::hours(hours))
                .to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
        };
        let windows = CountWindows {
            hour: ago(1),
            day: ago(24),
        };
        Ok(Some(
            self.store
                .call_counts(requester.task_id, requester.user, tool, &windows)
                .await?,
        ))
    }

    /// The gate's answer for one call before any grant ([`decide`] of the deployment's
    /// policies, the agent's argument rules and the tool's `require_approval`), and what the
    /// policies said. A model's call is screened here, and so is a person's edit of a waiting
    /// call (`edits`), so both get the same answer for the same arguments.
    pub(super) fn gate(
        &self,
        agent: &Agent,
        requester: &Requester<'_>,
        tool: &ExposedTool,
        args: &serde_json::Value,
        now: chrono::DateTime<chrono::Utc>,
        counts: Option<&CallCounts>,
    ) -> (CedarOutcome, Decided) {
        let cedar = self.evaluate_policies(agent, requester, &tool.spec, args, now, counts);
        let rule = agent.approvals.rule_for(&tool.spec.name, args);
        let decided = decide(&cedar, rule, tool.requires_approval, None);
        (cedar, decided)
    }

    /// What the live policies say about one call (the shadow set is evaluated beside them, and
    /// a disagreement logged and counted). A question is never the policies' to answer.
    pub(super) fn evaluate_policies(
        &self,
        agent: &Agent,
        requester: &Requester<'_>,
        spec: &crate::agent::tools::ToolSpec,
        args: &serde_json::Value,
        now: chrono::DateTime<chrono::Utc>,
        counts: Option<&CallCounts>,
    ) -> CedarOutcome {
        if spec.name == ASK_USER {
            return CedarOutcome::NoOpinion;
        }
        let tool = ToolFacts {
            name: spec.name.clone(),
            source: spec.source.clone(),
            hints: spec.hints,
        };
        let key = agent.key();
        let facts = CallFacts {
            user: requester.user,
            groups: requester.groups,
            tool: &tool,
            args,
            agent: &key,
            subagent: requester.subagent,
            now,
            counts,
        };
        let live = self.gate.live.evaluate(&facts);
        if let CedarOutcome::Error { message } = &live {
            tracing::warn!(tool = %spec.name, agent = %key, error = %message,
                "a policy could not be evaluated: the call asks");
            self.metrics.policy_error();
        }
        if let Some(shadow) = &self.gate.shadow {
            let candidate = shadow.evaluate(&facts);
            if !same_outcome(&live, &candidate) {
                tracing::info!(tool = %spec.name, agent = %key, live = ?live,
                    shadow = ?candidate, "the shadow policies disagree");
                self.metrics.shadow_disagreement();
            }
        }
        live
    }
}

/// Whether two evaluations come to the same outcome (which policy decided aside).
fn same_outcome(live: &CedarOutcome, shadow: &CedarOutcome) -> bool {
    use CedarOutcome::*;
    matches!(
        (live, shadow),
        (NoOpinion, NoOpinion)
            | (Allow { .. }, Allow { .. })
            | (Deny { .. }, Deny { .. })
            | (Error { .. }, Error { .. })
    ) || matches!((live, shadow), (Ask(a), Ask(b)) if a.approvers == b.approvers && a.quorum == b.quorum)
}

/// What the asker of a denied call reads of who denied it: the rule, or the policy and its
/// reason.
pub(super) fn denial_label(why: &Why) -> String {
    match (&why.by, &why.reason) {
        (WhyKind::Rule, _) => why.id.clone(),
        (_, Some(reason)) => format!("policy {}: {reason}", why.id),
        (_, None) => format!("policy {}", why.id),
    }
}

/// How a decided call is recorded: held for an ask; for an allow or a deny that a policy, a
/// grant or a rule made, an audit row (a deny reaches the model as a rule's denial does).
pub(super) fn screened(user: &str, why: Why) -> Screened {
    let held = why.outcome == GateOutcome::Ask;
    let (auto, decided_by) = match (why.outcome, why.by) {
        (GateOutcome::Ask, _) => (None, None),
        (GateOutcome::Deny, _) => {
            let label = denial_label(&why);
            (
                Some(AutoDecision {
                    user_id: user.to_owned(),
                    channel: Channel::Rule,
                    verdict: Verdict::Deny,
                    reason: Some(label.clone()),
                    decision: RecordedDecision::Rule {
                        rule: label.clone(),
                    }
                    .to_value(),
                    summary: format!(
                        "Denied by {}",
                        if why.by == WhyKind::Rule {
                            format!("rule {label}")
                        } else {
                            label.clone()
                        }
                    ),
                }),
                Some(DecidedBy::Rule {
                    rule: label,
                    allowed: false,
                }),
            )
        }
        (GateOutcome::Allow, WhyKind::Policy | WhyKind::Grant) => (
            Some(AutoDecision {
                user_id: user.to_owned(),
                channel: Channel::Policy,
                verdict: Verdict::Approve,
                reason: None,
                decision: RecordedDecision::Policy {
                    policy_id: why.id.clone(),
                }
                .to_value(),
                // A grant reads as the person's policy, as the card and the audit named it.
                summary: if why.by == WhyKind::Grant {
                    format!("Allowed by your policy: {}", why.summary)
                } else {
                    why.summary.clone()
                },
            }),
            Some(DecidedBy::Policy {
                id: why.id.clone(),
                summary: why.summary.clone(),
            }),
        ),
        (GateOutcome::Allow, WhyKind::Rule) => (
            None,
            Some(DecidedBy::Rule {
                rule: why.id.clone(),
                allowed: true,
            }),
        ),
        // The gate never answers as the reviewer (`reviewing` applies its verdicts after).
        (GateOutcome::Allow, WhyKind::Default | WhyKind::PolicyError | WhyKind::Reviewer) => {
            (None, None)
        }
    };
    Screened {
        held,
        auto,
        decided_by,
        why: Some(why),
        reviewable: false,
    }
}
