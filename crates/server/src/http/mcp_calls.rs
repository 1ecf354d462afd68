//! The MCP endpoint's waiting calls on this replica: which task each client request waits on,
//! so a client's `notifications/cancelled` cancels it, and which waiting call a repeated one
//! joins (its twin: the same caller, agent, tool and arguments) instead of asking twice. Each
//! task counts the requests that wait on it: it is canceled only when the last of them goes
//! away unanswered. A request and its cancel, or two twins, that reach different replicas are
//! not joined: each replica knows its own requests.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use serde_json::Value;

use crate::agent::approvals::args_sha256;

/// One client request that waits on a task.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Request {
    /// The caller's subject.
    caller: String,
    /// `namespace/name`.
    agent: String,
    /// The JSON-RPC id, as JSON text (a number and a string of its digits differ).
    id: String,
}

impl Request {
    pub fn new(caller: &str, agent: &str, id: &Value) -> Request {
        Request {
            caller: caller.to_owned(),
            agent: agent.to_owned(),
            id: id.to_string(),
        }
    }
}

/// What makes two calls twins: who asks, of which agent, which tool with which arguments.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Twin {
    caller: String,
    agent: String,
    tool: String,
    args_sha256: String,
}

impl Twin {
    pub fn new(caller: &str, agent: &str, tool: &str, args: &Value) -> Twin {
        Twin {
            caller: caller.to_owned(),
            agent: agent.to_owned(),
            tool: tool.to_owned(),
            args_sha256: args_sha256(args),
        }
    }
}

/// Whether a request that left was the last one waiting on its task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Left {
    /// It was: nobody waits on the task any more.
    Last,
    /// Other requests still wait on the task.
    Others,
    /// It had left already (its cancel came first).
    Already,
}

#[derive(Default)]
pub struct McpCalls {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    /// Each waiting request's task and twin.
    requests: HashMap<Request, (String, Twin)>,
    /// The waiting task of each twin.
    twins: HashMap<Twin, String>,
    /// How many requests wait on each task.
    waiters: HashMap<String, usize>,
}

impl McpCalls {
    /// Whether any call waits here (else no call has a twin to join).
    pub fn any_waiting(&self) -> bool {
        !self.lock().twins.is_empty()
    }

    /// The task a twin of this call waits on, if one does.
    pub fn twin_of(&self, twin: &Twin) -> Option<String> {
        self.lock().twins.get(twin).cloned()
    }

    /// `request` waits on `task_id` now, as a call whose twins are `twin`.
    pub fn enter(&self, request: Request, twin: Twin, task_id: &str) {
        let mut inner = self.lock();
        inner
            .twins
            .entry(twin.clone())
            .or_insert_with(|| task_id.to_owned());
        *inner.waiters.entry(task_id.to_owned()).or_default() += 1;
        inner.requests.insert(request, (task_id.to_owned(), twin));
    }

    /// `request` stops waiting (answered, gone, or canceled by its client): its task, and
    /// whether it was the last request waiting on it.
    pub fn leave(&self, request: &Request) -> (Option<String>, Left) {
        let mut inner = self.lock();
        let Some((task_id, twin)) = inner.requests.remove(request) else {
            return (None, Left::Already);
        };
        let count = inner.waiters.entry(task_id.clone()).or_default();
        *count = count.saturating_sub(1);
        if *count > 0 {
            return (Some(task_id), Left::Others);
        }
        inner.waiters.remove(&task_id);
        if inner.twins.get(&twin) == Some(&task_id) {
            inner.twins.remove(&twin);
        }
        (Some(task_id), Left::Last)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // Every change above is whole before the guard drops: a panic leaves no half-change.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_task_is_left_by_its_last_request_only_and_a_twin_finds_it_until_then() {
        let calls = McpCalls::default();
        let twin = Twin::new(
            "alice",
            "default/files",
            "write_file",
            &json!({"a": 1, "b": 2}),
        );
        let same = Twin::new(
            "alice",
            "default/files",
            "write_file",
            &json!({"b": 2, "a": 1}),
        );
        let bob = Twin::new(
            "bob",
            "default/files",
            "write_file",
            &json!({"a": 1, "b": 2}),
        );
        let (one, two) = (
            Request::new("alice", "default/files", &json!(1)),
            Request::new("alice", "default/files", &json!(2)),
        );
        calls.enter(one.clone(), twin.clone(), "t-1");
        assert_eq!(calls.twin_of(&same).as_deref(), Some("t-1"));
        assert_eq!(
            calls.twin_of(&bob),
            None,
            "another caller's call is not a twin"
        );
        calls.enter(two.clone(), same, "t-1");
        assert_eq!(calls.leave(&one), (Some("t-1".to_owned()), Left::Others));
        assert_eq!(calls.leave(&one), (None, Left::Already));
        assert_eq!(calls.twin_of(&twin).as_deref(), Some("t-1"));
        assert_eq!(calls.leave(&two), (Some("t-1".to_owned()), Left::Last));
        assert_eq!(calls.twin_of(&twin), None);
    }

    #[test]
    fn a_number_id_and_a_string_id_are_two_requests() {
        let calls = McpCalls::default();
        let twin = Twin::new("alice", "a/b", "t", &json!({}));
        calls.enter(Request::new("alice", "a/b", &json!(1)), twin, "t-1");
        let text = Request::new("alice", "a/b", &json!("1"));
        assert_eq!(calls.leave(&text), (None, Left::Already));
    }
}
