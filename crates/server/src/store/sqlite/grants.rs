//! "Always allow" policies (a person's standing approvals). A call a policy approved is written
//! with a decided batch of its own and a decision row by the shared commit (`store::write`), so
//! the audit trail lists it like any other decision.

use rusqlite::params;

use super::rows::json_text;
use super::tasks::collect;
use super::{GrantInsert, GrantRow, GrantScope, ReplayCall, Result, Sqlite};
use crate::store::columns::*;

/// A policy in force: not revoked, not expired at `?2`, not used up.
const IN_FORCE: &str = "revoked_at IS NULL AND (expires_at IS NULL OR expires_at > ?2)
                        AND (uses_left IS NULL OR uses_left > 0)";

/// Takes one use of a grant in force (`?1` its id, `?2` now).
const USE_POLICY: &str = "UPDATE policies SET uses_left = uses_left - 1
     WHERE id = ?1 AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > ?2)
       AND (uses_left IS NULL OR uses_left > 0)";

impl Sqlite {
    /// Stores a new policy unless its user has `cap` in force or its chat is gone (one writer:
    /// the checks and the insert are one step).
    pub async fn insert_grant(&self, policy: GrantRow, cap: usize) -> Result<GrantInsert> {
        let cap = i64::try_from(cap).unwrap_or(i64::MAX);
        self.write(move |connection| {
            if let (GrantScope::Chat, Some(context_id)) = (policy.scope, &policy.context_id) {
                let chat = connection
                    .prepare_cached("SELECT 1 FROM sessions WHERE id = ?1")?
                    .exists([context_id])?;
                if !chat {
                    return Ok(GrantInsert::NoChat);
                }
            }
            let in_force: i64 = connection
                .prepare_cached(&format!(
                    "SELECT COUNT(*) FROM policies WHERE user_id = ?1 AND {IN_FORCE}"
                ))?
                .query_row(params![&policy.user_id, crate::store::now()], |row| {
                    row.get(0)
                })?;
            if in_force >= cap {
                return Ok(GrantInsert::AtCap);
            }
            connection
                .prepare_cached(
                    "INSERT INTO policies (id, user_id, agent, tool, scope, context_id, args,
                                           created_by, created_at, expires_at, uses_left)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
                )?
                .execute(params![
                    policy.id,
                    policy.user_id,
                    policy.agent,
                    policy.tool,
                    policy.scope.as_str(),
                    policy.context_id,
                    policy.args.as_ref().map(json_text).transpose()?,
                    policy.created_by,
                    policy.created_at,
                    policy.expires_at,
                    policy.uses_left
                ])?;
            Ok(GrantInsert::Inserted)
        })
        .await
    }

    pub async fn replay_calls(&self, since: &str) -> Result<Vec<ReplayCall>> {
        self.read(|connection| {
            let mut statement = connection.prepare_cached(&REPLAY_SELECT.replace("$1", "?1"))?;
            let rows = statement.query([since])?;
            collect(rows, |row| replay_from_row(row))
        })
    }

    /// A user's policies in force, oldest first.
    pub async fn grants(&self, user_id: &str) -> Result<Vec<GrantRow>> {
        self.read(|connection| {
            let mut statement = connection.prepare_cached(&format!(
                "{POLICY_SELECT} WHERE user_id = ?1 AND {IN_FORCE} ORDER BY created_at, id"
            ))?;
            let rows = statement.query(params![user_id, crate::store::now()])?;
            let policies = collect(rows, |row| grant_from_row(row))?;
            Ok(policies)
        })
    }

    /// The policies in force that may approve a call of `agent` in chat `context_id` for
    /// `user_id`: the agent's, and the chat's. Read for every call, so a revoke counts at once.
    pub async fn applicable_grants(
        &self,
        user_id: &str,
        agent: &str,
        context_id: &str,
    ) -> Result<Vec<GrantRow>> {
        self.read(|connection| {
            let mut statement = connection.prepare_cached(&format!(
                "{POLICY_SELECT} WHERE user_id = ?1 AND agent = ?2
                   AND (scope = ?3 OR (scope = ?4 AND context_id = ?5))
                   AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > ?6)
                   AND (uses_left IS NULL OR uses_left > 0)
                 ORDER BY created_at, id"
            ))?;
            let rows = statement.query(params![
                user_id,
                agent,
                GrantScope::Agent.as_str(),
                GrantScope::Chat.as_str(),
                context_id,
                crate::store::now()
            ])?;
            let policies = collect(rows, |row| grant_from_row(row))?;
            Ok(policies)
        })
    }

    /// Uses grant `id` once, if it is still in force at `now`: a grant with uses left loses one
    /// in the same statement that checks it, so racing calls cannot spend more than it has.
    pub async fn use_grant(&self, id: &str, now: &str) -> Result<bool> {
        let (id, now) = (id.to_owned(), now.to_owned());
        self.write(move |connection| {
            let changed = connection
                .prepare_cached(USE_POLICY)?
                .execute(params![id, now])?;
            Ok(changed == 1)
        })
        .await
    }

    /// Revokes `user_id`'s policy `id`; whether it was in force.
    pub async fn revoke_grant(&self, user_id: &str, id: &str, now: &str) -> Result<bool> {
        let (user_id, id, now) = (user_id.to_owned(), id.to_owned(), now.to_owned());
        self.write(move |connection| {
            let changed = connection
                .prepare_cached(
                    "UPDATE policies SET revoked_at = ?1
                     WHERE id = ?2 AND user_id = ?3 AND revoked_at IS NULL",
                )?
                .execute(params![now, id, user_id])?;
            Ok(changed == 1)
        })
        .await
    }
}
