//! Rows of read-only share links and of feedback on answers, with the SELECTs both backends
//! run and the mapping of their rows (as `columns` does for the other tables).

use super::columns::Columns;
use super::Result;

/// A read-only link to one chat; only the SHA-256 of its token is stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShareRow {
    pub id: String,
    pub context_id: String,
    /// The chat's owner, who made the link.
    pub user_id: String,
    /// Hex SHA-256 of the token.
    pub token_sha256: String,
    pub created_at: String,
    pub revoked_at: Option<String>,
}

/// A person's rating of an agent's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FeedbackRow {
    pub id: String,
    pub user_id: String,
    pub context_id: String,
    pub task_id: String,
    /// The answer's message id; `None` when the task had no agent message.
    pub message_id: Option<String>,
    /// `up` or `down` (checked by the runtime before it is written).
    pub rating: String,
    pub reason: Option<String>,
    pub created_at: String,
}

pub(super) const SHARE_SELECT: &str =
    "SELECT id, context_id, user_id, token_sha256, created_at, revoked_at FROM shares";

pub(super) fn share_from_row(row: &impl Columns) -> Result<ShareRow> {
    Ok(ShareRow {
        id: row.text(0)?,
        context_id: row.text(1)?,
        user_id: row.text(2)?,
        token_sha256: row.text(3)?,
        created_at: row.text(4)?,
        revoked_at: row.optional_text(5)?,
    })
}

pub(super) const FEEDBACK_SELECT: &str =
    "SELECT id, user_id, context_id, task_id, message_id, rating, reason, created_at
     FROM feedback";

pub(super) fn feedback_from_row(row: &impl Columns) -> Result<FeedbackRow> {
    Ok(FeedbackRow {
        id: row.text(0)?,
        user_id: row.text(1)?,
        context_id: row.text(2)?,
        task_id: row.text(3)?,
        message_id: row.optional_text(4)?,
        rating: row.text(5)?,
        reason: row.optional_text(6)?,
        created_at: row.text(7)?,
    })
}
