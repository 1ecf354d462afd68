//! Which ACP session each chat had, kept in a file of the data folder, so a restarted server
//! loads a chat's session again (`session/load`) instead of starting afresh. The file is this
//! server's own: the agent's processes, and the history they keep, are on this machine.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Mutex;

/// The most chats remembered; past it, the file forgets the ones it holds first in order.
const MAX_CHATS: usize = 10_000;

/// The chats' ACP session ids, and the file they are kept in.
pub struct SessionIds {
    path: PathBuf,
    ids: Mutex<BTreeMap<String, String>>,
}

impl SessionIds {
    /// The ids kept at `path`; none when it does not exist yet or cannot be read (a chat
    /// then starts a new session, and says so).
    pub fn open(path: PathBuf) -> SessionIds {
        let ids = match std::fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes).unwrap_or_else(|err| {
                tracing::warn!(file = %path.display(), "ignoring an unreadable ACP sessions file: {err}");
                BTreeMap::new()
            }),
            Err(_) => BTreeMap::new(),
        };
        SessionIds {
            path,
            ids: Mutex::new(ids),
        }
    }

    /// The session the chat had.
    pub fn get(&self, chat: &str) -> Option<String> {
        self.ids.lock().ok()?.get(chat).cloned()
    }

    /// Keeps the chat's session, writing the file anew (a failure is logged: the chat goes on,
    /// and only a restart would cost it its session).
    pub fn set(&self, chat: &str, session: &str) {
        let Ok(mut ids) = self.ids.lock() else {
            return;
        };
        if ids.get(chat).map(String::as_str) == Some(session) {
            return;
        }
        ids.insert(chat.to_owned(), session.to_owned());
        while ids.len() > MAX_CHATS {
            ids.pop_first();
        }
        if let Err(err) = self.write(&ids) {
            tracing::warn!(file = %self.path.display(), "cannot keep the ACP sessions: {err}");
        }
    }

    fn write(&self, ids: &BTreeMap<String, String>) -> std::io::Result<()> {
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let fresh = self.path.with_extension("json.new");
        std::fs::write(&fresh, serde_json::to_vec(ids)?)?;
        std::fs::rename(&fresh, &self.path)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn ids_outlive_the_server_that_kept_them() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("acp/default.coder.json");
        let kept = SessionIds::open(path.clone());
        assert_eq!(kept.get("chat-1"), None);
        kept.set("chat-1", "s-1");
        let reopened = SessionIds::open(path.clone());
        assert_eq!(reopened.get("chat-1").as_deref(), Some("s-1"));
        std::fs::write(&path, "not json").unwrap();
        assert_eq!(SessionIds::open(path).get("chat-1"), None);
    }
}
