//! The rows of A2A push notifications: each task's push configs, and the server's signing keys
//! (shared by every replica through the store). Each backend's `push` writes and reads them.

/// One push config of a task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PushConfigRow {
    pub task_id: String,
    pub id: String,
    /// The task's owner, who set it.
    pub user_id: String,
    /// The A2A version it was set in ("0.3" or "1.0"): the shape of what its URL is posted.
    pub version: String,
    pub url: String,
    pub token: Option<String>,
    pub auth_scheme: Option<String>,
    pub auth_credentials: Option<String>,
    pub created_at: String,
}

/// What putting a push config did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PushPut {
    /// Written: a new config, or one with the same id replaced.
    Written,
    /// The task has as many configs as it may; nothing was written.
    AtCap,
}

pub(super) const PUSH_SELECT: &str = "SELECT task_id, id, user_id, version, url, token, \
     auth_scheme, auth_credentials, created_at FROM push_configs";
