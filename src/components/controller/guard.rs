//! The cross-tab guard: before a send goes out, one read of the chat as the server has it
//! (`GET /api/sessions/{id}`). If the chat moved on without this view (another tab or person
//! sent, decided, or a turn went on; see [`moved_on`]), nothing is sent: the chat is rebuilt
//! from what was read, the person's text goes back into the composer, and they are asked to
//! review the chat and send again.

use leptos::prelude::*;
use signoff_protocol::{Task, TaskState};

use super::ChatCtl;
use crate::api;
use crate::state::guard::moved_on;
use crate::state::ChatView;

/// What the person reads when the guard held their message back.
pub const MOVED_ON: &str = "This chat changed in another tab; review it, then send again";

impl ChatCtl {
    /// Whether the send of `text` is held back because the chat moved on without `seen` (this
    /// view as it was before the send). A chat with no session yet has nothing to compare, and
    /// a chat this server does not store (or a failed read) lets the send go on: the send says
    /// what is wrong, if anything.
    pub(super) async fn held_back(self, seen: &ChatView, text: &str) -> bool {
        let Some(session) = seen.context_id.clone() else {
            return false;
        };
        let Ok((_, tasks, _)) = api::sessions::load(&session).await else {
            return false;
        };
        if !moved_on(seen, &tasks) {
            return false;
        }
        self.show_as_stored(&tasks);
        if self.composer.with_untracked(String::is_empty) {
            self.composer.set(text.to_owned());
        }
        self.app.toast(MOVED_ON);
        true
    }

    /// Shows the chat as read, and follows its last task if it is still running.
    fn show_as_stored(self, tasks: &[Task]) {
        self.stream.set_value(None);
        self.view.set(crate::state::replay(tasks));
        if let Some(last) = tasks.last() {
            if matches!(last.status.state, TaskState::Submitted | TaskState::Working) {
                self.follow(last.id.clone());
            }
        }
        self.app.reload_sessions();
    }
}
