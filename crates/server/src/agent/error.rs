//! What goes wrong in the agent layer, as one enum: the runtime and the approval workflow
//! (`approvals`) both answer with it, so it lives below both of them.

use signoff_protocol::hitl::DecisionError;

use crate::store::StoreError;

/// What goes wrong in the runtime; the HTTP layer maps each to a JSON-RPC code or a status.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    #[error("no agent {0}")]
    AgentNotFound(String),
    #[error("task {0} not found")]
    TaskNotFound(String),
    /// The task exists but belongs to someone else (A2A answers "not found"; REST 403).
    #[error("task {0} belongs to another user")]
    Forbidden(String),
    #[error("session {0} not found")]
    SessionNotFound(String),
    /// No policy of the caller's has that id (another user's does not exist for them).
    #[error("policy {0} not found")]
    GrantNotFound(String),
    /// No live share link of that chat has that id (or that token).
    #[error("share link {0} not found")]
    ShareNotFound(String),
    /// No device of the caller's has that id, or Web Push is not on: why.
    #[error("{0}")]
    PushNotFound(String),
    #[error("{0}")]
    InvalidParams(String),
    /// A decision by someone the agents file's approvers do not let give it: what it needs.
    #[error("{0}")]
    NotEligible(String),
    /// A second approval of the same arguments by the same person: it counts once.
    #[error("{0}")]
    AlreadyApproved(String),
    /// The task is not waiting for a decision, or its batch was already decided.
    #[error("{0}")]
    NotPaused(String),
    /// A message to a task that has ended (A2A v1.0 answers it as an unsupported operation).
    #[error("{0}")]
    Terminal(String),
    #[error("task {id} is {state} and cannot be canceled")]
    NotCancelable { id: String, state: String },
    /// A chat that may not be deleted now: it holds a subagent's task whose parent goes on.
    #[error("{0}")]
    ChatInUse(String),
    #[error("{0}")]
    Decision(#[from] DecisionError),
    /// A write the store refused because something changed under it (the task ended while a
    /// runner worked on it, another replica took its lease, a call of the batch is no longer
    /// held): the store's reason, as the client reads it.
    #[error("{0}")]
    Conflict(&'static str),
    /// The task was deleted (with its session) while someone followed it.
    #[error("task {0} was deleted")]
    TaskDeleted(String),
    /// A remote agent did not take what was forwarded to it (unreachable, refused, no longer
    /// in the agents file).
    #[error("{0}")]
    Remote(String),
    /// The receipt signing key could not be read, made or written.
    #[error("{0}")]
    Receipts(String),
    #[error("server is shutting down")]
    ShuttingDown,
    #[error("store: {0}")]
    Store(StoreError),
    #[error("internal: {0}")]
    Internal(String),
}

impl From<StoreError> for AgentError {
    fn from(err: StoreError) -> Self {
        match err {
            StoreError::Conflict(reason) => AgentError::Conflict(reason),
            StoreError::Db(_)
            | StoreError::MessagesWaiting
            | StoreError::Postgres(_)
            | StoreError::UnsupportedUrl(_)
            | StoreError::Json(_)
            | StoreError::Corrupt(_)
            | StoreError::NotFound
            | StoreError::Commit(_)
            | StoreError::Closed
            | StoreError::Schema { .. } => AgentError::Store(err),
        }
    }
}

pub type Result<T, E = AgentError> = std::result::Result<T, E>;
