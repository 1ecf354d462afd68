//! Read-only share links of a chat and feedback on answers (docs/rest.md, Share links and
//! Feedback). Like policies, their keys are snake_case in requests and answers.

use serde::{Deserialize, Serialize};

use super::nullable;

/// `POST /api/sessions/{id}/shares` answers `201` with this; the token is shown only here.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewShare {
    pub id: String,
    pub token: String,
    /// The chat's page with `?share=TOKEN`, absolute.
    pub url: String,
}

/// One live share link of a chat, without its token (the server keeps only a hash of it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Share {
    pub id: String,
    pub created_at: String,
}

/// `GET /api/sessions/{id}/shares`: the chat's live links, oldest first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShareList {
    pub shares: Vec<Share>,
}

/// Thumbs up or down.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Rating {
    Up,
    Down,
}

impl Rating {
    pub fn as_str(self) -> &'static str {
        match self {
            Rating::Up => "up",
            Rating::Down => "down",
        }
    }

    pub fn parse(text: &str) -> Option<Rating> {
        match text {
            "up" => Some(Rating::Up),
            "down" => Some(Rating::Down),
            _ => None,
        }
    }
}

/// `POST /api/feedback`: a rating of the answer of task `task_id` in chat `context_id`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewFeedback {
    pub task_id: String,
    pub context_id: String,
    pub rating: Rating,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// One stored rating, as `POST /api/feedback` answers it and `GET /api/feedback` lists it
/// (also in each task's `metadata.signoff_feedback` in `GET /api/sessions/{id}`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Feedback {
    pub id: String,
    pub task_id: String,
    pub context_id: String,
    /// The answer: the task's last agent message, else its last artifact; `null` when none.
    #[serde(deserialize_with = "nullable")]
    pub message_id: Option<String>,
    pub rating: Rating,
    #[serde(deserialize_with = "nullable")]
    pub reason: Option<String>,
    pub created_by: String,
    pub created_at: String,
}

/// `GET /api/feedback`: the caller's ratings, oldest first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FeedbackList {
    pub feedback: Vec<Feedback>,
}

/// `POST /api/approvals/{taskId}/links` answers `201` with this: the caller's Approve and
/// Reject links of the task's pending batch (docs/notifications.md). Each opens a confirm page;
/// only that page's form decides.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewDecisionLinks {
    /// Absent for a requester who may not approve the batch (a two-person rule): she may only
    /// reject it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approve_url: Option<String>,
    pub reject_url: String,
    /// RFC 3339; the links work until then, once, while the batch waits.
    pub expires_at: String,
}
