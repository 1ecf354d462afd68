//! Calls decided before anyone is asked, and the "always allow" policies behind them: the
//! screening of a model turn's calls (rules first; else the tool's `require_approval`; a call
//! that would then wait is checked against the person's policies), and creating, listing and revoking policies (docs/rest.md, Policies).

use std::sync::Arc;

use serde_json::Value;
use signoff_protocol::hitl::{DecidedBy, GateOutcome, RecordedDecision, Why, WhyKind, ASK_USER};
use signoff_protocol::rest::{NewPolicy, Policy, PolicyScope as WireScope};

use crate::agent::cedar::{CallFacts, CedarOutcome, ToolFacts};
use crate::agent::decision::{decide, Decided};
use crate::agent::model::ModelToolCall;
use crate::agent::policy::{CompiledPolicy, UserPolicy};
use crate::agent::tools::ExposedTool;
use crate::agent::view;
use crate::store::{AutoDecision, Channel, PolicyInsert, PolicyRow, PolicyScope, Verdict};

use super::{Agent, AgentError, Result, Runtime};

/// The longest a time-boxed grant may run: a year (longer is "until revoked").
const MAX_GRANT_SECS: i64 = 366 * 24 * 3600;

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
}

/// Who the calls of a turn are made for, and where.
pub(super) struct Requester<'a> {
    pub user: &'a str,
    pub groups: &'a [String],
    pub context_id: &'a str,
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
        let mut grants: Option<Vec<Arc<UserPolicy>>> = None;
        // Uses this turn took of each counted grant: what is left, for the call's why.
        let mut spent: std::collections::HashMap<String, i64> = std::collections::HashMap::new();
        let mut out = Vec::with_capacity(calls.len());
        let now = chrono::Utc::now();
        for call in calls {
            let Some(tool) = agent.tools.get(&call.name) else {
                // An unknown tool never runs: its call fails with "no tool named …".
                out.push(Screened {
                    held: false,
                    auto: None,
                    decided_by: None,
                    why: None,
                });
                continue;
            };
            let (cedar, mut decided) = self.gate(agent, requester, &tool, &call.args, now);
            let rule = agent.approvals.rule_for(&call.name, &call.args);
            if decided.grantable {
                if grants.is_none() {
                    grants = Some(
                        self.user_policies(user, &agent.key(), requester.context_id)
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
                            .use_policy(&grant.row.id, &crate::store::now())
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
            out.push(screened(user, decided.why));
        }
        Ok(out)
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
    ) -> (CedarOutcome, Decided) {
        let cedar = self.evaluate_policies(agent, requester, &tool.spec, args, now);
        let rule = agent.approvals.rule_for(&tool.spec.name, args);
        let decided = decide(&cedar, rule, tool.requires_approval, None);
        (cedar, decided)
    }

    /// What the live policies say about one call (the shadow set is evaluated beside them, and
    /// a disagreement logged and counted). A question is never the policies' to answer.
    fn evaluate_policies(
        &self,
        agent: &Agent,
        requester: &Requester<'_>,
        spec: &crate::agent::tools::ToolSpec,
        args: &serde_json::Value,
        now: chrono::DateTime<chrono::Utc>,
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

    /// The user's policies that apply in this chat, compiled (from the cache); a stored one
    /// that no longer compiles is skipped (and logged), never taken as "allow everything".
    async fn user_policies(
        &self,
        user: &str,
        agent: &str,
        context_id: &str,
    ) -> Result<Vec<Arc<UserPolicy>>> {
        let rows = self
            .store
            .applicable_policies(user, agent, context_id)
            .await?;
        let compiled = self
            .policies
            .compile(rows)
            .await
            .map_err(AgentError::Internal)?;
        Ok(compiled
            .into_iter()
            .filter_map(|entry| match entry {
                CompiledPolicy::Ready(policy) => Some(policy),
                CompiledPolicy::Broken { row, error } => {
                    tracing::warn!(policy = %row.id, %error, "skipping a policy");
                    None
                }
            })
            .collect())
    }

    /// `POST /api/policies`: checks and stores a new policy of `user`.
    pub async fn create_policy(&self, user: &str, new: NewPolicy) -> Result<Policy> {
        let agent = self
            .agent_by_key(&new.agent)
            .ok_or_else(|| AgentError::AgentNotFound(new.agent.clone()))?;
        if new.tool == ASK_USER {
            return Err(AgentError::InvalidParams(format!(
                "tool: {ASK_USER} asks you questions, which always wait for your answers; \
                 a policy cannot answer them"
            )));
        }
        let Some(tool) = agent.tools.get(&new.tool) else {
            let names: Vec<String> = agent
                .tools
                .tools()
                .into_iter()
                .map(|tool| tool.spec.name)
                .collect();
            return Err(AgentError::InvalidParams(format!(
                "tool: {:?} is not a tool of {} (its tools: {})",
                new.tool,
                new.agent,
                names.join(", ")
            )));
        };
        let scope = match (new.scope, &new.context_id) {
            (WireScope::Chat, Some(context_id)) => {
                let session = self.store.session(context_id).await?;
                if !session
                    .is_some_and(|session| session.user_id == user && session.agent == new.agent)
                {
                    return Err(AgentError::InvalidParams(format!(
                        "context_id: {context_id} is not one of your chats with {}",
                        new.agent
                    )));
                }
                PolicyScope::Chat
            }
            (WireScope::Chat, None) => {
                return Err(AgentError::InvalidParams(
                    "context_id: a chat policy names its chat".into(),
                ))
            }
            (WireScope::Agent, None) => PolicyScope::Agent,
            (WireScope::Agent, Some(_)) => {
                return Err(AgentError::InvalidParams(
                    "context_id: an agent policy applies to every chat; leave context_id out"
                        .into(),
                ))
            }
        };
        let args = match &new.args {
            Some(args) => {
                if let Some(known) = tool
                    .spec
                    .input_schema
                    .get("properties")
                    .and_then(Value::as_object)
                {
                    if let Some(unknown) = args.keys().find(|name| !known.contains_key(*name)) {
                        return Err(AgentError::InvalidParams(format!(
                            "args.{unknown}: {} has no argument {unknown:?}",
                            new.tool
                        )));
                    }
                }
                Some(
                    serde_json::to_value(args)
                        .map_err(|err| AgentError::Internal(err.to_string()))?,
                )
            }
            None => None,
        };
        // A time-boxed grant: for one hour, for N uses, or both (whichever ends first).
        if new.uses == Some(0) {
            return Err(AgentError::InvalidParams(
                "uses: a grant for 0 calls approves nothing; leave uses out for any number".into(),
            ));
        }
        let expires_at = match new.expires_in_secs {
            Some(0) => {
                return Err(AgentError::InvalidParams(
                    "expires_in_secs: a grant that ends now approves nothing; leave it out \
                     for a grant until revoked"
                        .into(),
                ))
            }
            Some(secs) => {
                let secs = i64::try_from(secs)
                    .ok()
                    .filter(|secs| *secs <= MAX_GRANT_SECS);
                let Some(secs) = secs else {
                    return Err(AgentError::InvalidParams(format!(
                        "expires_in_secs: at most {MAX_GRANT_SECS} (a year); leave it out for \
                         a grant until revoked"
                    )));
                };
                Some(
                    (chrono::Utc::now() + chrono::Duration::seconds(secs))
                        .to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
                )
            }
            None => None,
        };
        let row = PolicyRow {
            id: view::new_id(),
            user_id: user.to_owned(),
            agent: new.agent.clone(),
            tool: new.tool.clone(),
            scope,
            context_id: new.context_id.clone(),
            args,
            created_by: user.to_owned(),
            created_at: crate::store::now(),
            revoked_at: None,
            expires_at,
            uses_left: new.uses.map(i64::from),
        };
        // Off the async workers: a matcher compiles within its size limits, but not for free.
        let policy = tokio::task::spawn_blocking(move || UserPolicy::compile(row))
            .await
            .map_err(|err| AgentError::Internal(format!("compiling a policy: {err}")))?
            .map_err(AgentError::InvalidParams)?;
        let cap = self.limits.max_policies_per_user;
        match self.store.insert_policy(policy.row.clone(), cap).await? {
            PolicyInsert::Inserted => {}
            PolicyInsert::AtCap => {
                return Err(AgentError::InvalidParams(format!(
                    "you have {cap} policies in force, the most one person may have \
                     (--max-policies); revoke one you no longer need first"
                )))
            }
            PolicyInsert::NoChat => {
                return Err(AgentError::InvalidParams(format!(
                    "context_id: {} was deleted",
                    new.context_id.unwrap_or_default()
                )))
            }
        }
        tracing::info!(user, policy = %policy.row.id, summary = %policy.summary(), "policy created");
        let rest = policy.to_rest();
        self.policies
            .remember(CompiledPolicy::Ready(Arc::new(policy)));
        Ok(rest)
    }

    /// `GET /api/policies`: the user's policies in force (one stored before a limit it now
    /// breaks says in its summary that it approves nothing, so its owner can revoke it).
    pub async fn policies(&self, user: &str) -> Result<Vec<Policy>> {
        let rows = self.store.policies(user).await?;
        let compiled = self
            .policies
            .compile(rows)
            .await
            .map_err(AgentError::Internal)?;
        Ok(compiled.iter().map(CompiledPolicy::to_rest).collect())
    }

    /// `DELETE /api/policies/{id}`: revokes one of the user's policies.
    pub async fn revoke_policy(&self, user: &str, id: &str) -> Result<()> {
        if !self
            .store
            .revoke_policy(user, id, &crate::store::now())
            .await?
        {
            return Err(AgentError::PolicyNotFound(id.to_owned()));
        }
        self.policies.forget(id);
        tracing::info!(user, policy = %id, "policy revoked");
        Ok(())
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

/// How a decided call is recorded: held for an ask; for an allow or a deny that a policy, a
/// grant or a rule made, an audit row (a deny reaches the model as a rule's denial does).
fn screened(user: &str, why: Why) -> Screened {
    let held = why.outcome == GateOutcome::Ask;
    let (auto, decided_by) = match (why.outcome, why.by) {
        (GateOutcome::Ask, _) => (None, None),
        (GateOutcome::Deny, _) => {
            // The model reads the label: the rule, or the policy and its reason.
            let label = match (&why.by, &why.reason) {
                (WhyKind::Rule, _) => why.id.clone(),
                (_, Some(reason)) => format!("policy {}: {reason}", why.id),
                (_, None) => format!("policy {}", why.id),
            };
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
        (GateOutcome::Allow, WhyKind::Default | WhyKind::PolicyError) => (None, None),
    };
    Screened {
        held,
        auto,
        decided_by,
        why: Some(why),
    }
}
