//! Rows of decision links (an Approve or a Reject link in a message to one person), with the
//! SELECT both backends run and the mapping of its row. A link is used in the decision's own
//! write ([`DecisionWrite::uses_link`](super::DecisionWrite)), so it decides once at most.

use super::columns::Columns;
use super::Result;

/// One decision link; only the SHA-256 of its token is stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecisionLinkRow {
    /// Hex SHA-256 of the token.
    pub token_sha256: String,
    pub task_id: String,
    /// The batch it decides; a link of a batch decided elsewhere decides nothing.
    pub batch_id: i64,
    /// The person it decides as.
    pub user_id: String,
    /// `approve` or `reject` (checked by the runtime before it is written).
    pub action: String,
    pub created_at: String,
    /// RFC 3339, as [`super::now`] writes it, so that text order is time order.
    pub expires_at: String,
    pub used_at: Option<String>,
}

pub(super) const LINK_SELECT: &str =
    "SELECT token_sha256, task_id, batch_id, user_id, action, created_at, expires_at, used_at
     FROM decision_links";

pub(super) fn link_from_row(row: &impl Columns) -> Result<DecisionLinkRow> {
    Ok(DecisionLinkRow {
        token_sha256: row.text(0)?,
        task_id: row.text(1)?,
        batch_id: row.int(2)?,
        user_id: row.text(3)?,
        action: row.text(4)?,
        created_at: row.text(5)?,
        expires_at: row.text(6)?,
        used_at: row.optional_text(7)?,
    })
}
