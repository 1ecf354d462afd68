//! Decision links (docs/notifications.md): an Approve and a Reject link of one pending batch for
//! one person, put in a message to them (an email). Each is a random token whose SHA-256 alone
//! is stored, bound to that person, that batch and that action; it decides once, until it
//! expires, and only while its batch still waits. Opening a link decides nothing: the HTTP layer
//! shows what it would decide, and only [`Runtime::decide_by_link`], called for the confirm
//! page's POST, decides, through [`Runtime::commit_decision`] with channel `link`, as the link's
//! person; the link is marked used in the decision's own write.

use std::sync::Arc;
use std::time::Duration;

use signoff_protocol::hitl::{ActionRequest, Decision};
use signoff_protocol::rest::DeciderAuth;

use super::sharing::{new_token, token_hash};

use crate::store::{self, handed_to, task_state_text, Channel, DecisionLinkRow};

use super::subagent::batch_requests;
use super::{AgentError, Decider, Result, Runtime};
use crate::agent::approvals::{Actor, Command, Decide};

/// What a link does to every call of its batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkAction {
    Approve,
    Reject,
}

impl LinkAction {
    pub fn as_str(self) -> &'static str {
        match self {
            LinkAction::Approve => "approve",
            LinkAction::Reject => "reject",
        }
    }

    fn parse(text: &str) -> Result<LinkAction> {
        match text {
            "approve" => Ok(LinkAction::Approve),
            "reject" => Ok(LinkAction::Reject),
            other => Err(AgentError::Store(store::StoreError::Corrupt(format!(
                "decision link action {other:?}"
            )))),
        }
    }
}

/// The two links of one batch for one person, just made: their tokens are known only now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IssuedLinks {
    pub task_id: String,
    pub batch_id: i64,
    pub person: String,
    /// `None`: the person may reject the batch but not approve it (its requester under a
    /// two-person rule, or approvers that do not name her), so she is offered no Approve link.
    pub approve: Option<String>,
    pub reject: String,
    /// RFC 3339.
    pub expires_at: String,
}

/// Who decided a batch, as its audit row says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecidedBy {
    pub user: String,
    pub channel: Channel,
    pub at: String,
    /// `Approved`, `Rejected: …`, as the audit trail words it.
    pub summary: String,
}

/// What a link's batch asks, for the confirm page and the email.
#[derive(Debug, Clone, PartialEq)]
pub struct BatchSummary {
    pub task_id: String,
    /// `namespace/name`.
    pub agent: String,
    /// The task's owner, who asked the agent.
    pub requester: String,
    /// The chat's title.
    pub title: String,
    pub calls: Vec<ActionRequest>,
}

/// What a link is now.
#[derive(Debug, Clone, PartialEq)]
pub enum LinkState {
    /// No link has this token (or its chat was deleted).
    Unknown,
    /// It decided its batch already (`decided`: the decision it made, when the audit has it).
    Used {
        used_at: String,
        decided: Option<DecidedBy>,
    },
    /// Its batch no longer waits: decided (or canceled, or expired) through another channel.
    Decided(Option<DecidedBy>),
    /// Past its time.
    Expired { expires_at: String },
    /// It can decide: what it would decide, and as whom.
    Live {
        action: LinkAction,
        person: String,
        expires_at: String,
        batch: BatchSummary,
    },
}

/// A decision made through a link.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkDecision {
    pub task_id: String,
    pub action: LinkAction,
    pub person: String,
}

/// `now + ttl` as the store writes times.
fn expiry_after(ttl: Duration) -> Result<String> {
    let ttl = chrono::TimeDelta::from_std(ttl)
        .map_err(|err| AgentError::InvalidParams(format!("decision link lifetime: {err}")))?;
    Ok((chrono::Utc::now() + ttl).to_rfc3339_opts(chrono::SecondsFormat::Millis, true))
}

/// The decision a link makes: every call approved, or every call rejected with `reason` (a
/// blank one is no reason). Built with the protocol's type, the one owner of its wire shape.
fn link_decision(action: LinkAction, reason: Option<&str>) -> Decision {
    match action {
        LinkAction::Approve => Decision::approve_all(),
        LinkAction::Reject => Decision::deny_all(
            reason
                .map(str::trim)
                .filter(|text| !text.is_empty())
                .map(str::to_owned),
        ),
    }
}

/// Decision links (an Approve and a Reject link a person's email carries): issued, and read
/// as a link's page shows them; what [`Runtime::links`] lends. Deciding by one is a
/// decision channel of the runtime's ([`Runtime::decide_by_link`]).
pub struct Links<'a> {
    runtime: &'a Runtime,
}

impl Runtime {
    /// The decision links.
    pub fn links(&self) -> Links<'_> {
        Links { runtime: self }
    }
}

impl Links<'_> {
    /// Makes an Approve and a Reject link of `task_id`'s pending batch (the batch `batch_id`,
    /// when given) for `person`, valid for `ttl`: for its task's owner only, the Approve link
    /// only when she may approve (as the directory knows her, as her link decides:
    /// `Links::decider`).
    pub async fn create(
        &self,
        person: &str,
        task_id: &str,
        batch_id: Option<i64>,
        ttl: Duration,
    ) -> Result<IssuedLinks> {
        let who = self.runtime.directory().decider(person).await?;
        self.issue(&who, false, task_id, batch_id, ttl).await
    }

    /// [`Links::create`] for `who`, the task's owner or an approver who may
    /// decide some call of the batch (a group member an email writes to).
    pub(super) async fn for_approver(
        &self,
        who: &Decider,
        task_id: &str,
        batch_id: Option<i64>,
        ttl: Duration,
    ) -> Result<IssuedLinks> {
        self.issue(who, true, task_id, batch_id, ttl).await
    }

    /// The links of `who`, refused unless they own the task or (`approvers`) may decide a call
    /// of its waiting batch; the Approve link only for a person who may approve a call of it.
    async fn issue(
        &self,
        who: &Decider,
        approvers: bool,
        task_id: &str,
        batch_id: Option<i64>,
        ttl: Duration,
    ) -> Result<IssuedLinks> {
        let person = who.subject.as_str();
        let row = self
            .runtime
            .store
            .task(task_id)
            .await?
            .ok_or_else(|| AgentError::TaskNotFound(task_id.to_owned()))?;
        let owner = row.user_id == person;
        if !owner && !approvers {
            return Err(AgentError::Forbidden(task_id.to_owned()));
        }
        if self.runtime.store.is_relayed(task_id).await? {
            return Err(AgentError::NotPaused(format!(
                "task {task_id} is a chat with a remote agent; decide it in its chat"
            )));
        }
        if let Some(link) = super::subagent::driving_parent(&self.runtime.store, task_id).await? {
            return Err(AgentError::NotPaused(format!(
                "task {task_id} is the subagent task of task {}: its calls wait in that task's \
                 batch",
                link.parent_task_id
            )));
        }
        let batch = self
            .runtime
            .store
            .pending_batch(task_id)
            .await?
            .filter(|batch| batch_id.is_none_or(|id| id == batch.id))
            .ok_or_else(|| {
                AgentError::NotPaused(format!(
                    "task {task_id} is {} and this batch waits for no decision",
                    task_state_text(row.state)
                ))
            })?;
        let steps = self.runtime.store.batch_steps(task_id).await?;
        let handed = handed_to(&steps, batch.id);
        let may_approve = self.runtime.approvals.approvers().eligible_for_batch(
            &row,
            &batch_requests(&batch),
            &handed,
            who,
        );
        if !owner && !may_approve {
            return Err(AgentError::Forbidden(task_id.to_owned()));
        }
        let approve = match may_approve {
            true => Some(new_token()?),
            false => None,
        };
        let reject = new_token()?;
        let (created_at, expires_at) = (store::now(), expiry_after(ttl)?);
        let link = |token: &str, action: LinkAction| DecisionLinkRow {
            token_sha256: token_hash(token),
            task_id: task_id.to_owned(),
            batch_id: batch.id,
            user_id: person.to_owned(),
            action: action.as_str().to_owned(),
            created_at: created_at.clone(),
            expires_at: expires_at.clone(),
            used_at: None,
        };
        let mut rows = vec![link(&reject, LinkAction::Reject)];
        if let Some(approve) = &approve {
            rows.insert(0, link(approve, LinkAction::Approve));
        }
        self.runtime.store.insert_decision_links(rows).await?;
        Ok(IssuedLinks {
            task_id: task_id.to_owned(),
            batch_id: batch.id,
            person: person.to_owned(),
            approve,
            reject,
            expires_at,
        })
    }

    /// What the link of `token` is now. Reads only: opening a link decides nothing.
    pub async fn state(&self, token: &str) -> Result<LinkState> {
        let Some(link) = self.runtime.store.decision_link(&token_hash(token)).await? else {
            return Ok(LinkState::Unknown);
        };
        let Some(row) = self.runtime.store.task(&link.task_id).await? else {
            return Ok(LinkState::Unknown);
        };
        if let Some(used_at) = &link.used_at {
            let decided = self.decided_by(&link).await?;
            let used_at = used_at.clone();
            return Ok(LinkState::Used { used_at, decided });
        }
        let batch = self.runtime.store.pending_batch(&link.task_id).await?;
        let Some(batch) = batch.filter(|batch| batch.id == link.batch_id) else {
            return Ok(LinkState::Decided(self.decided_by(&link).await?));
        };
        if link.expires_at <= store::now() {
            return Ok(LinkState::Expired {
                expires_at: link.expires_at,
            });
        }
        let title = self
            .runtime
            .store
            .session(&row.context_id)
            .await?
            .map(|session| session.title)
            .unwrap_or_default();
        Ok(LinkState::Live {
            action: LinkAction::parse(&link.action)?,
            person: link.user_id,
            expires_at: link.expires_at,
            batch: BatchSummary {
                task_id: row.id,
                agent: row.agent,
                requester: row.user_id,
                title,
                calls: batch_requests(&batch),
            },
        })
    }

    /// Whom a link decides as: its person with the email and groups the directory holds for
    /// them now, so a member who left the group decides nothing, and a requester whom the
    /// approvers name by group (with `requester_may_approve`) approves as she would signed in;
    /// the requester's own rules (the two-person rule) go by her subject.
    async fn decider(&self, link: &DecisionLinkRow) -> Result<Decider> {
        Ok(self.runtime.directory().decider(&link.user_id).await?)
    }

    /// The audit row of the decision on the link's batch, if there is one.
    async fn decided_by(&self, link: &DecisionLinkRow) -> Result<Option<DecidedBy>> {
        let decisions = self.runtime.store.task_decisions(&link.task_id).await?;
        Ok(decisions
            .into_iter()
            .find(|decision| decision.batch_id == link.batch_id)
            .map(|decision| DecidedBy {
                user: decision.user_id,
                channel: decision.channel,
                at: decision.decided_at,
                summary: decision.summary,
            }))
    }
}

impl Runtime {
    /// Decides the batch of the link of `token` as the link says (a rejection with `reason`),
    /// as the link's person, through channel `link`; the link is used in the same write. A
    /// link that cannot decide any more is refused ([`AgentError::NotPaused`] or
    /// [`AgentError::Conflict`]: [`Links::state`] then says which state it is in);
    /// an unknown one is [`AgentError::TaskNotFound`].
    #[tracing::instrument(name = "decision_link", skip_all)]
    pub async fn decide_by_link(
        self: &Arc<Self>,
        token: &str,
        reason: Option<&str>,
    ) -> Result<LinkDecision> {
        let hash = token_hash(token);
        let link = self
            .store
            .decision_link(&hash)
            .await?
            .ok_or_else(|| AgentError::TaskNotFound("of this link".to_owned()))?;
        let action = LinkAction::parse(&link.action)?;
        let actor = Actor {
            channel: Channel::Link,
            decider: self.links().decider(&link).await?,
            auth: Some(DeciderAuth::DecisionLink),
        };
        let decide = Decide {
            decision: link_decision(action, reason),
            batch_id: Some(link.batch_id),
            message: None,
            link: Some(hash),
        };
        self.apply(&link.task_id, &actor, Command::Decide(Box::new(decide)))
            .await?
            .into_decided()?;
        Ok(LinkDecision {
            task_id: link.task_id,
            action,
            person: link.user_id,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_long_random_and_only_their_hash_is_kept() {
        let (a, b) = (new_token().unwrap(), new_token().unwrap());
        assert_ne!(a, b);
        assert_eq!(a.len(), 43, "32 bytes, base64url without padding");
        assert_eq!(token_hash(&a).len(), 64);
        assert_ne!(token_hash(&a), a);
    }

    #[test]
    fn a_link_approves_every_call_or_rejects_them_with_the_reason() {
        let approve = link_decision(LinkAction::Approve, Some("ignored"));
        assert_eq!(approve.summary(), "Approved");
        let reject = link_decision(LinkAction::Reject, Some("  too risky "));
        assert_eq!(reject.summary(), "Rejected: too risky");
        let bare = link_decision(LinkAction::Reject, Some(" "));
        assert_eq!(bare.summary(), "Rejected");
    }
}
