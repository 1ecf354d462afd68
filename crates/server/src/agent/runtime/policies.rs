//! Calls decided before anyone is asked, and the "always allow" policies behind them: the
//! screening of a model turn's calls (rules first; else the tool's `require_approval`; a call
//! that would then wait is checked against the person's policies), and creating, listing and revoking policies (docs/rest.md, Policies).

use std::sync::Arc;

use serde_json::Value;
use signoff_protocol::hitl::{DecidedBy, RecordedDecision, ASK_USER};
use signoff_protocol::rest::{NewPolicy, Policy, PolicyScope as WireScope};

use crate::agent::config::RuleAction;
use crate::agent::model::ModelToolCall;
use crate::agent::policy::{CompiledPolicy, UserPolicy};
use crate::agent::view;
use crate::store::{AutoDecision, Channel, PolicyInsert, PolicyRow, PolicyScope, Verdict};

use super::{Agent, AgentError, Result, Runtime};

/// How one call of a turn is recorded.
pub(super) struct Screened {
    /// Waits for a person's decision.
    pub held: bool,
    /// Decided without asking (a policy approved it, a rule denied it), with its audit row.
    pub auto: Option<AutoDecision>,
    /// Who decided, for the call's part metadata.
    pub decided_by: Option<DecidedBy>,
}

impl Runtime {
    /// Screens a model turn's calls for `user` in chat `context_id`. The policies are read
    /// from the store once per turn that needs them, so a revoke counts from the next turn on,
    /// on every server that shares the store.
    pub(super) async fn screen_calls(
        &self,
        agent: &Agent,
        user: &str,
        context_id: &str,
        calls: &[ModelToolCall],
    ) -> Result<Vec<Screened>> {
        let mut policies: Option<Vec<Arc<UserPolicy>>> = None;
        let mut out = Vec::with_capacity(calls.len());
        for call in calls {
            let Some(tool) = agent.tools.get(&call.name) else {
                // An unknown tool never runs: its call fails with "no tool named …".
                out.push(Screened {
                    held: false,
                    auto: None,
                    decided_by: None,
                });
                continue;
            };
            let rule = agent.approvals.rule_for(&call.name, &call.args);
            let action = match rule {
                Some(rule) => rule.action,
                None if tool.requires_approval => RuleAction::Ask,
                None => RuleAction::Allow,
            };
            let screened = match (action, rule) {
                (RuleAction::Deny, Some(rule)) => Screened {
                    held: false,
                    auto: Some(AutoDecision {
                        user_id: user.to_owned(),
                        channel: Channel::Rule,
                        verdict: Verdict::Deny,
                        reason: Some(rule.label.clone()),
                        decision: RecordedDecision::Rule {
                            rule: rule.label.clone(),
                        }
                        .to_value(),
                        summary: format!("Denied by rule {}", rule.label),
                    }),
                    decided_by: Some(DecidedBy::Rule {
                        rule: rule.label.clone(),
                        allowed: false,
                    }),
                },
                (RuleAction::Allow, rule) => Screened {
                    held: false,
                    auto: None,
                    decided_by: rule.map(|rule| DecidedBy::Rule {
                        rule: rule.label.clone(),
                        allowed: true,
                    }),
                },
                (RuleAction::Ask | RuleAction::Deny, _) => {
                    if policies.is_none() {
                        policies = Some(self.user_policies(user, &agent.key(), context_id).await?);
                    }
                    let approving = policies
                        .iter()
                        .flatten()
                        .find(|policy| policy.approves(&call.name, &call.args));
                    match approving {
                        Some(policy) => {
                            let summary = policy.summary();
                            Screened {
                                held: false,
                                auto: Some(AutoDecision {
                                    user_id: user.to_owned(),
                                    channel: Channel::Policy,
                                    verdict: Verdict::Approve,
                                    reason: None,
                                    decision: RecordedDecision::Policy {
                                        policy_id: policy.row.id.clone(),
                                    }
                                    .to_value(),
                                    summary: format!("Allowed by your policy: {summary}"),
                                }),
                                decided_by: Some(DecidedBy::Policy {
                                    id: policy.row.id.clone(),
                                    summary,
                                }),
                            }
                        }
                        None => Screened {
                            held: true,
                            auto: None,
                            decided_by: None,
                        },
                    }
                }
            };
            out.push(screened);
        }
        Ok(out)
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
