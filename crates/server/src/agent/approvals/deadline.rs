//! A batch's deadline as its agent's approval timeout sets it, and how an expired call's result
//! names that timeout. The watchers that expire batches are the runtime's (`runtime::expiry`).

use crate::agent::policy::AgentApprovals;

/// How a person reads a timeout when the agent that set it is gone.
pub const SOME_TIMEOUT: &str = "its approval timeout";

/// The deadline of a batch an agent with `approvals` opens now (RFC 3339), if it has a timeout.
pub fn deadline_for(approvals: &AgentApprovals) -> Option<String> {
    let (timeout, _) = approvals.timeout.as_ref()?;
    let timeout = chrono::Duration::from_std(*timeout).ok()?;
    let at = chrono::Utc::now().checked_add_signed(timeout)?;
    Some(at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true))
}

/// What an expired call's result says, for the runner: the timeout as the agent wrote it.
pub fn expired_after(approvals: &AgentApprovals) -> String {
    approvals
        .timeout
        .as_ref()
        .map_or(SOME_TIMEOUT.to_owned(), |(_, text)| text.clone())
}
