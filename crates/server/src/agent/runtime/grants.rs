//! A person's grants ("always allow"): creating, listing and revoking them (docs/rest.md,
//! Policies: the REST paths and the stored table keep the older name), and the ones in force for
//! a chat, compiled, as the screening (`screening`) reads them.

use std::sync::Arc;

use serde_json::Value;
use signoff_protocol::hitl::ASK_USER;
use signoff_protocol::rest::{NewPolicy, Policy, PolicyScope as WireScope};

use crate::agent::policy::{CompiledGrant, Grant};
use crate::agent::view;
use crate::store::{GrantInsert, GrantRow, GrantScope};

use super::{AgentError, Result, Runtime};

/// The longest a time-boxed grant may run: a year (longer is "until revoked").
const MAX_GRANT_SECS: i64 = 366 * 24 * 3600;

/// A person's grants, kept in the runtime's store and compiled in its cache: what
/// [`Runtime::grants`] lends.
pub struct Grants<'a> {
    runtime: &'a Runtime,
}

impl Runtime {
    /// The people's grants ("always allow").
    pub fn grants(&self) -> Grants<'_> {
        Grants { runtime: self }
    }
}

impl Grants<'_> {
    /// The user's policies that apply in this chat, compiled (from the cache); a stored one
    /// that no longer compiles is skipped (and logged), never taken as "allow everything".
    pub(super) async fn in_force(
        &self,
        user: &str,
        agent: &str,
        context_id: &str,
    ) -> Result<Vec<Arc<Grant>>> {
        let rows = self
            .runtime
            .store
            .applicable_grants(user, agent, context_id)
            .await?;
        let compiled = self
            .runtime
            .grants
            .compile(rows)
            .await
            .map_err(AgentError::Internal)?;
        Ok(compiled
            .into_iter()
            .filter_map(|entry| match entry {
                CompiledGrant::Ready(policy) => Some(policy),
                CompiledGrant::Broken { row, error } => {
                    tracing::warn!(policy = %row.id, %error, "skipping a policy");
                    None
                }
            })
            .collect())
    }

    /// `POST /api/policies`: checks and stores a new policy of `user`.
    pub async fn create(&self, user: &str, new: NewPolicy) -> Result<Policy> {
        let agent = self
            .runtime
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
        let scope = self.scope_of(user, &new).await?;
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
        let row = GrantRow {
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
        let policy = tokio::task::spawn_blocking(move || Grant::compile(row))
            .await
            .map_err(|err| AgentError::Internal(format!("compiling a policy: {err}")))?
            .map_err(AgentError::InvalidParams)?;
        let cap = self.runtime.limits.max_grants_per_user;
        match self
            .runtime
            .store
            .insert_grant(policy.row.clone(), cap)
            .await?
        {
            GrantInsert::Inserted => {}
            GrantInsert::AtCap => {
                return Err(AgentError::InvalidParams(format!(
                    "you have {cap} policies in force, the most one person may have \
                     (--max-policies); revoke one you no longer need first"
                )))
            }
            GrantInsert::NoChat => {
                return Err(AgentError::InvalidParams(format!(
                    "context_id: {} was deleted",
                    new.context_id.unwrap_or_default()
                )))
            }
        }
        tracing::info!(user, policy = %policy.row.id, summary = %policy.summary(), "policy created");
        let rest = policy.to_rest();
        self.runtime
            .grants
            .remember(CompiledGrant::Ready(Arc::new(policy)));
        Ok(rest)
    }

    /// Where a new grant applies: a chat of `user`'s with its agent, or every chat with it.
    async fn scope_of(&self, user: &str, new: &NewPolicy) -> Result<GrantScope> {
        Ok(match (new.scope, &new.context_id) {
            (WireScope::Chat, Some(context_id)) => {
                let session = self.runtime.store.session(context_id).await?;
                if !session
                    .is_some_and(|session| session.user_id == user && session.agent == new.agent)
                {
                    return Err(AgentError::InvalidParams(format!(
                        "context_id: {context_id} is not one of your chats with {}",
                        new.agent
                    )));
                }
                GrantScope::Chat
            }
            (WireScope::Chat, None) => {
                return Err(AgentError::InvalidParams(
                    "context_id: a chat policy names its chat".into(),
                ))
            }
            (WireScope::Agent, None) => GrantScope::Agent,
            (WireScope::Agent, Some(_)) => {
                return Err(AgentError::InvalidParams(
                    "context_id: an agent policy applies to every chat; leave context_id out"
                        .into(),
                ))
            }
        })
    }

    /// `GET /api/policies`: the user's policies in force (one stored before a limit it now
    /// breaks says in its summary that it approves nothing, so its owner can revoke it).
    pub async fn list(&self, user: &str) -> Result<Vec<Policy>> {
        let rows = self.runtime.store.grants(user).await?;
        let compiled = self
            .runtime
            .grants
            .compile(rows)
            .await
            .map_err(AgentError::Internal)?;
        Ok(compiled.iter().map(CompiledGrant::to_rest).collect())
    }

    /// `DELETE /api/policies/{id}`: revokes one of the user's policies.
    pub async fn revoke(&self, user: &str, id: &str) -> Result<()> {
        if !self
            .runtime
            .store
            .revoke_grant(user, id, &crate::store::now())
            .await?
        {
            return Err(AgentError::GrantNotFound(id.to_owned()));
        }
        self.runtime.grants.forget(id);
        tracing::info!(user, policy = %id, "policy revoked");
        Ok(())
    }
}
