//! Read-only share links of a chat, which only its owner makes, lists and revokes, and whose
//! token reads that chat and nothing else; and people's feedback (thumbs up or down) on an
//! agent's answers (docs/rest.md, Share links and Feedback).

use base64::Engine;
use sha2::{Digest, Sha256};
use signoff_protocol::hitl;
use signoff_protocol::rest::{Feedback, NewFeedback, Rating, Share};
use signoff_protocol::{Role, Task};

use crate::store::{self, FeedbackRow, SessionRow, ShareRow};

use super::{AgentError, Result, Runtime};

/// What a live share token lets its bearer read: one chat, as its owner sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShareGrant {
    pub context_id: String,
    pub owner: String,
}

/// A share link just made: its token is known only now (the store keeps its hash).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreatedShare {
    pub id: String,
    pub token: String,
    /// The chat's agent, `namespace/name`, for the link's page URL.
    pub agent: String,
}

/// Random bytes in a share or decision-link token: 256 bits, so a token cannot be guessed.
const TOKEN_BYTES: usize = 32;

/// The hex SHA-256 of a token: what the store keeps and looks tokens up by.
pub(super) fn token_hash(token: &str) -> String {
    Sha256::digest(token.as_bytes())
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

/// A new random token, URL-safe base64.
pub(super) fn new_token() -> Result<String> {
    let mut bytes = [0u8; TOKEN_BYTES];
    getrandom::fill(&mut bytes)
        .map_err(|err| AgentError::Internal(format!("no random bytes for a token: {err}")))?;
    Ok(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes))
}

/// The id of a task's answer: its last agent message, or, for an answer that came as an
/// artifact (streamed text), the last artifact's id.
fn answer_message_id(task: &Task) -> Option<String> {
    task.status
        .message
        .iter()
        .chain(task.history.iter().rev())
        .find(|message| message.role == Role::Agent)
        .map(|message| message.message_id.clone())
        .or_else(|| {
            task.artifacts
                .last()
                .map(|artifact| artifact.artifact_id.clone())
        })
}

fn feedback_of(row: FeedbackRow) -> Result<Feedback> {
    let rating = Rating::parse(&row.rating)
        .ok_or_else(|| store::StoreError::Corrupt(format!("unknown rating {:?}", row.rating)))?;
    Ok(Feedback {
        id: row.id,
        task_id: row.task_id,
        context_id: row.context_id,
        message_id: row.message_id,
        rating,
        reason: row.reason,
        created_by: row.user_id,
        created_at: row.created_at,
    })
}

/// Share links and feedback, read and written through the runtime's store: what
/// [`Runtime::sharing`] lends.
pub struct Sharing<'a> {
    runtime: &'a Runtime,
}

impl Runtime {
    /// A chat's share links and the feedback on its answers.
    pub fn sharing(&self) -> Sharing<'_> {
        Sharing { runtime: self }
    }
}

impl Sharing<'_> {
    /// The session `id`, if `user` owns it; another user's is "not found" (docs/rest.md, Users).
    async fn owned_session(&self, user: &str, id: &str) -> Result<SessionRow> {
        self.runtime
            .store
            .session(id)
            .await?
            .filter(|row| row.user_id == user)
            .ok_or_else(|| AgentError::SessionNotFound(id.to_owned()))
    }

    // ---- share links -----------------------------------------------------------------------

    /// Makes a share link of `user`'s chat.
    pub async fn create(&self, user: &str, context_id: &str) -> Result<CreatedShare> {
        let session = self.owned_session(user, context_id).await?;
        let token = new_token()?;
        let id = uuid::Uuid::new_v4().to_string();
        self.runtime
            .store
            .insert_share(ShareRow {
                id: id.clone(),
                context_id: session.id,
                user_id: session.user_id,
                token_sha256: token_hash(&token),
                created_at: store::now(),
                revoked_at: None,
            })
            .await?;
        Ok(CreatedShare {
            id,
            token,
            agent: session.agent,
        })
    }

    /// The live share links of `user`'s chat, oldest first.
    pub async fn list(&self, user: &str, context_id: &str) -> Result<Vec<Share>> {
        self.owned_session(user, context_id).await?;
        Ok(self
            .runtime
            .store
            .shares(context_id)
            .await?
            .into_iter()
            .map(|row| Share {
                id: row.id,
                created_at: row.created_at,
            })
            .collect())
    }

    /// Revokes a share link of `user`'s chat: its token reads nothing from now on.
    pub async fn revoke(&self, user: &str, context_id: &str, id: &str) -> Result<()> {
        self.owned_session(user, context_id).await?;
        if !self
            .runtime
            .store
            .revoke_share(context_id, id, &store::now())
            .await?
        {
            return Err(AgentError::ShareNotFound(id.to_owned()));
        }
        Ok(())
    }

    /// What a share token grants; an unknown or revoked token (or one whose chat is gone) is
    /// [`AgentError::ShareNotFound`].
    pub async fn grant(&self, token: &str) -> Result<ShareGrant> {
        let share = self
            .runtime
            .store
            .live_share(&token_hash(token))
            .await?
            .ok_or_else(|| AgentError::ShareNotFound("for this token".to_owned()))?;
        Ok(ShareGrant {
            context_id: share.context_id,
            owner: share.user_id,
        })
    }

    // ---- feedback --------------------------------------------------------------------------

    /// Stores `user`'s rating of the answer of a task in one of their chats. The chat must be
    /// theirs, the task must be in it, and the reason is capped like a rejection reason.
    pub async fn give_feedback(&self, user: &str, new: NewFeedback) -> Result<Feedback> {
        self.owned_session(user, &new.context_id).await?;
        let task = self
            .runtime
            .store
            .task(&new.task_id)
            .await?
            .filter(|row| row.user_id == user)
            .ok_or_else(|| AgentError::TaskNotFound(new.task_id.clone()))?;
        if task.context_id != new.context_id {
            return Err(AgentError::InvalidParams(format!(
                "task_id: task {} is not in chat {}",
                new.task_id, new.context_id
            )));
        }
        let reason = new
            .reason
            .map(|reason| reason.trim().to_owned())
            .filter(|reason| !reason.is_empty());
        if let Some(reason) = &reason {
            if reason.len() > self.runtime.limits.max_reason_bytes {
                return Err(AgentError::InvalidParams(format!(
                    "reason: {} bytes; the limit is {} bytes",
                    reason.len(),
                    self.runtime.limits.max_reason_bytes
                )));
            }
        }
        let (snapshot, _) = self.runtime.snapshot(&task.id, None).await?;
        let row = FeedbackRow {
            id: uuid::Uuid::new_v4().to_string(),
            user_id: user.to_owned(),
            context_id: task.context_id,
            task_id: task.id,
            message_id: answer_message_id(&snapshot),
            rating: new.rating.as_str().to_owned(),
            reason,
            created_at: store::now(),
        };
        self.runtime.store.insert_feedback(row.clone()).await?;
        feedback_of(row)
    }

    /// `user`'s ratings, oldest first.
    pub async fn feedback(&self, user: &str) -> Result<Vec<Feedback>> {
        self.runtime
            .store
            .user_feedback(user)
            .await?
            .into_iter()
            .map(feedback_of)
            .collect()
    }

    /// Puts each task's ratings in its `metadata.signoff_feedback`, beside its audit trail,
    /// when a chat is read.
    pub(super) async fn attach_feedback(&self, context_id: &str, tasks: &mut [Task]) -> Result<()> {
        let ratings = self.runtime.store.context_feedback(context_id).await?;
        if ratings.is_empty() {
            return Ok(());
        }
        for task in tasks {
            let mine: Vec<Feedback> = ratings
                .iter()
                .filter(|row| row.task_id == task.id)
                .cloned()
                .map(feedback_of)
                .collect::<Result<_>>()?;
            if mine.is_empty() {
                continue;
            }
            let value =
                serde_json::to_value(&mine).map_err(|err| AgentError::Internal(err.to_string()))?;
            task.metadata
                .get_or_insert_with(Default::default)
                .insert(hitl::keys::SIGNOFF_FEEDBACK.to_owned(), value);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_long_random_and_only_their_hash_is_kept() {
        let first = new_token().unwrap();
        let second = new_token().unwrap();
        assert_ne!(first, second);
        assert_eq!(first.len(), 43, "32 bytes in unpadded base64url");
        assert!(first
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || byte == b'-' || byte == b'_'));
        let hash = token_hash(&first);
        assert_eq!(hash.len(), 64);
        assert!(!hash.contains(&first));
        assert_eq!(hash, token_hash(&first));
    }

    #[test]
    fn the_answer_is_the_last_agent_message() {
        let mut task = crate::agent::view::empty_task("t-1", "s-1");
        assert_eq!(answer_message_id(&task), None);
        for (id, role) in [
            ("m-1", Role::User),
            ("m-2", Role::Agent),
            ("m-3", Role::User),
        ] {
            task.history
                .push(signoff_protocol::Message::new(id, role, Vec::new()));
        }
        assert_eq!(answer_message_id(&task).as_deref(), Some("m-2"));
    }
}
