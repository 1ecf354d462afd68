//! What the MCP endpoint keeps of the clients that answer questions themselves
//! (`agent::asked::client`): their sessions, and the requests put to them.
//!
//! **Sessions.** A handshake client says what it offers only in `initialize`; the endpoint
//! keeps no state, so a client that offered elicitation gets an `Mcp-Session-Id` that carries
//! it: who the client signed in as and the modes it offered, MACed (HMAC-SHA256) with a key in
//! the store, so any replica reads it back and none keeps a table of sessions.
//!
//! **Requests.** An upstream's question goes to the client as an `elicitation/create` request
//! on its `tools/call`'s event stream; the client answers with a JSON-RPC response in a POST of
//! its own, which finds the waiting question here by its caller and id. A 2026-07-28 client has
//! no back channel: its call is answered `input_required` with the question and a MACed
//! `requestState` ([`Resume`]), and its retry brings the answer, which finds the question the
//! same way. A request and its
//! answer reach the same replica only when the balancer keeps a session on one (sticky on
//! `Mcp-Session-Id`); an answer that reaches another finds nothing, and the inbox copy stands.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::{oneshot, OnceCell};

use crate::agent::asked::client::Offered;
use crate::agent::Runtime;
use crate::http::sealed;

/// The store's name for the key sessions are MACed with.
const KEY_NAME: &str = "mcp-session-hmac-sha256";

/// What the MAC covers besides the session: a MAC of this key for anything else is no session.
const CONTEXT: &[u8] = b"signoff mcp session\n";

/// What the MAC of a 2026-07-28 `requestState` covers besides the state.
const RESUME_CONTEXT: &[u8] = b"signoff mcp request state\n";

/// What a 2026-07-28 `requestState` carries: the call it resumes and the question it answers.
/// The client echoes it unchanged with its answer, so any replica reads it back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Resume {
    /// The caller it was given to: it resumes no one else's call.
    pub sub: String,
    /// The task the call waits on.
    pub task: String,
    /// The question's request id, which its answer finds (`McpClients::answered`).
    pub question: String,
    /// The call it is for: the retry must be the same call.
    pub tool: String,
    pub args_sha256: String,
    /// When it was given, in seconds since the epoch.
    pub iat: i64,
}

/// What a session id carries.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Session {
    /// The subject the client signed in as: the id is no one else's.
    sub: String,
    form: bool,
    url: bool,
    /// When it was made, in seconds since the epoch.
    iat: i64,
}

#[derive(Default)]
pub struct McpClients {
    key: OnceCell<Vec<u8>>,
    /// The questions put to clients, by caller and request id, waiting for their answers.
    asked: Mutex<HashMap<(String, String), oneshot::Sender<Value>>>,
}

impl McpClients {
    /// A session id for `subject`'s client that offered `offered`.
    pub async fn open_session(
        &self,
        runtime: &Runtime,
        subject: &str,
        offered: Offered,
    ) -> Result<String, String> {
        seal(self.key(runtime).await?, subject, offered)
    }

    /// What the client of session id `value` offered, if the id is ours and `subject`'s.
    pub async fn offered(
        &self,
        runtime: &Runtime,
        subject: &str,
        value: &str,
    ) -> Result<Option<Offered>, String> {
        Ok(open(self.key(runtime).await?, subject, value))
    }

    /// The `requestState` of a question put to a 2026-07-28 client.
    pub async fn seal_resume(&self, runtime: &Runtime, resume: &Resume) -> Result<String, String> {
        sealed::seal(self.key(runtime).await?, RESUME_CONTEXT, resume)
    }

    /// What a `requestState` resumes, if it is ours and `subject`'s.
    pub async fn open_resume(
        &self,
        runtime: &Runtime,
        subject: &str,
        value: &str,
    ) -> Result<Option<Resume>, String> {
        let resume: Option<Resume> = sealed::open(self.key(runtime).await?, RESUME_CONTEXT, value);
        Ok(resume.filter(|resume| resume.sub == subject))
    }

    /// The key, the store's (the first replica to need one makes it), read once.
    async fn key(&self, runtime: &Runtime) -> Result<&[u8], String> {
        let key = self
            .key
            .get_or_try_init(|| async {
                let mut fresh = [0u8; 32];
                getrandom::fill(&mut fresh).map_err(|err| format!("random bytes: {err}"))?;
                let stored = runtime
                    .store()
                    .server_key(KEY_NAME, URL_SAFE_NO_PAD.encode(fresh))
                    .await
                    .map_err(|err| format!("reading the MCP session key: {err}"))?;
                URL_SAFE_NO_PAD
                    .decode(stored)
                    .map_err(|err| format!("the stored MCP session key is not base64: {err}"))
            })
            .await?;
        Ok(key)
    }

    /// `caller`'s request `id` waits for its answer, which goes to `answer`.
    pub fn ask(&self, caller: &str, id: &str, answer: oneshot::Sender<Value>) {
        self.lock()
            .insert((caller.to_owned(), id.to_owned()), answer);
    }

    /// `caller`'s client answered its request `id` (`None`: with an error); whether a request
    /// waited for it.
    pub fn answered(&self, caller: &str, id: &Value, result: Option<Value>) -> bool {
        let Some(id) = id.as_str() else {
            return false;
        };
        let waiting = self.lock().remove(&(caller.to_owned(), id.to_owned()));
        match (waiting, result) {
            (Some(answer), Some(result)) => {
                // The question may have ended meanwhile: then the answer goes nowhere.
                let _ = answer.send(result);
                true
            }
            // An error answer drops the sender: the question waits for the inbox alone.
            (Some(_), None) => true,
            (None, _) => false,
        }
    }

    /// `caller`'s request `id` is no longer wanted; whether it still waited (so the client
    /// must be told).
    pub fn forget(&self, caller: &str, id: &str) -> bool {
        self.lock()
            .remove(&(caller.to_owned(), id.to_owned()))
            .is_some()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<(String, String), oneshot::Sender<Value>>> {
        // Each change is one insert or remove: a panic leaves no half-change.
        self.asked.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A session id: the session's JSON and its MAC, each base64url, joined by a dot.
fn seal(key: &[u8], subject: &str, offered: Offered) -> Result<String, String> {
    let session = Session {
        sub: subject.to_owned(),
        form: offered.form,
        url: offered.url,
        iat: chrono::Utc::now().timestamp(),
    };
    sealed::seal(key, CONTEXT, &session)
}

/// What session id `value` says its client offered, if its MAC is ours (checked in constant
/// time) and it is `subject`'s.
fn open(key: &[u8], subject: &str, value: &str) -> Option<Offered> {
    let session: Session = sealed::open(key, CONTEXT, value)?;
    (session.sub == subject).then_some(Offered {
        form: session.form,
        url: session.url,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_session_id_opens_with_its_key_for_its_subject_only() {
        let (key, other) = ([7u8; 32], [8u8; 32]);
        let offered = Offered {
            form: true,
            url: false,
        };
        let id = seal(&key, "alice", offered).unwrap();
        assert_eq!(open(&key, "alice", &id), Some(offered));
        assert_eq!(open(&key, "bob", &id), None, "another caller's");
        assert_eq!(open(&other, "alice", &id), None, "another key's");
        // A session that claims more than was offered is no session.
        let (_, tag) = id.split_once('.').unwrap();
        let forged = URL_SAFE_NO_PAD.encode(br#"{"sub":"alice","form":true,"url":true,"iat":0}"#);
        assert_eq!(open(&key, "alice", &format!("{forged}.{tag}")), None);
        assert_eq!(open(&key, "alice", "not-a-session"), None);
    }

    #[test]
    fn an_answer_reaches_its_callers_waiting_request_once() {
        let clients = McpClients::default();
        let (answer, mut answered) = oneshot::channel();
        clients.ask("alice", "q-1", answer);
        let id = Value::from("q-1");
        assert!(
            !clients.answered("bob", &id, Some(Value::Null)),
            "not bob's"
        );
        assert!(clients.answered("alice", &id, Some(serde_json::json!({"action": "decline"}))));
        assert_eq!(answered.try_recv().unwrap()["action"], "decline");
        assert!(
            !clients.answered("alice", &id, Some(Value::Null)),
            "answered once"
        );
        assert!(!clients.forget("alice", "q-1"));
    }
}
