//! Coding agents spoken to over the Agent Client Protocol (JSON-RPC over stdio): an agent of
//! the agents file with `acp = { … }` ([`crate::agent::config::AcpSpec`]) is run by Signoff in
//! place of a model and tools. [`AcpModel`] is its model: each chat (A2A context) is one ACP
//! session in a process of its own ([`session`]); the agent's message chunks are the streamed
//! answer, the calls it runs without asking and its thoughts are shown beside it
//! (`ModelEvent::Ran`, `ModelEvent::Thought`), and each `session/request_permission` ends the
//! model turn with one call ([`calls`]), which the runtime screens, holds, decides and audits as
//! any call. The decision
//! comes back as the call's result in the transcript; the next turn answers the agent with the
//! matching option it offered, and goes on passing on what it says: how an allowed call went
//! is that call's own result (`ModelEvent::Reported`). A call is one call under one id whether
//! the agent runs it or asks first ([`Model::reports_its_calls`]).
//!
//! A session lives as long as the server's process and its agent's. A chat whose session has
//! gone (a restart, a crash of the agent) has it loaded again where the agent offers
//! `session/load` ([`ids`] keeps each chat's session id), and otherwise gets a new one and is
//! told so. A decision that comes after its session went is recorded, and the chat says it never
//! reached the agent (the permission it answered went with the process).

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use futures_util::StreamExt;
use tokio_stream::wrappers::ReceiverStream;
use tokio_util::sync::CancellationToken;

pub mod calls;
mod ids;
mod process;
mod session;
pub mod wire;

use super::config::AcpLaunch;
use super::model::{ChatMessage, Model, ModelError, ModelEvent, ModelRequest, ModelStream};
use ids::SessionIds;
use session::{Session, TurnStart};

/// Events of a turn buffered ahead of the runtime.
const TURN_BUFFER: usize = 64;

/// The model of an ACP agent: its live sessions, by chat.
pub struct AcpModel {
    inner: Arc<Sessions>,
}

struct Sessions {
    /// `namespace/name`, in the log.
    label: String,
    launch: AcpLaunch,
    live: Mutex<Live>,
    /// Each chat's session id, to load it again after a restart.
    ids: SessionIds,
    /// Sessions being started (not yet in `live`).
    starting: AtomicUsize,
}

/// A slot taken by a session being started, given back once it is in `live` or failed.
struct Starting<'a>(&'a AtomicUsize);

impl Drop for Starting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The live sessions, by chat.
type Live = HashMap<String, Arc<tokio::sync::Mutex<Session>>>;

impl AcpModel {
    /// The model of the agent `label` (`namespace/name`); the chats' session ids are kept in
    /// the file `sessions`.
    pub fn new(label: String, launch: AcpLaunch, sessions: std::path::PathBuf) -> AcpModel {
        AcpModel {
            inner: Arc::new(Sessions {
                label,
                launch,
                live: Mutex::new(HashMap::new()),
                ids: SessionIds::open(sessions),
                starting: AtomicUsize::new(0),
            }),
        }
    }
}

impl Model for AcpModel {
    fn turn(&self, request: ModelRequest) -> ModelStream {
        let (events, receiver) = tokio::sync::mpsc::channel(TURN_BUFFER);
        let cancel = CancellationToken::new();
        let guard = cancel.clone().drop_guard();
        let sessions = self.inner.clone();
        tokio::spawn(async move {
            let Some(start) = turn_start(&request.messages) else {
                return;
            };
            let live = match sessions.live_session(&request.context_id) {
                Ok(live) => live,
                Err(why) => {
                    let _ = events.send(Err(ModelError::Failed(why))).await;
                    return;
                }
            };
            if live.is_none() && matches!(start, TurnStart::Decided { .. }) {
                // A decision for a session that has gone: no new agent could act on it.
                let _ = events
                    .send(Ok(ModelEvent::Text(session::UNDELIVERED.into())))
                    .await;
                return;
            }
            let found = match live {
                Some(live) => Ok((live, false)),
                None => sessions.start(&request.context_id).await,
            };
            let (session, fresh) = match found {
                Ok(found) => found,
                Err(why) => {
                    let _ = events.send(Err(ModelError::Failed(why))).await;
                    return;
                }
            };
            let mut session = session.lock().await;
            let earlier = request
                .messages
                .iter()
                .filter(|message| matches!(message, ChatMessage::User { .. }))
                .count()
                > 1;
            if fresh && earlier && matches!(start, TurnStart::Prompt(_)) {
                let told = "(The coding agent's earlier session of this chat has ended; this is a \
                            new session, which does not remember what came before.)\n\n";
                let _ = events.send(Ok(ModelEvent::Text(told.into()))).await;
            }
            session.turn(start, &events, &cancel).await;
        });
        // Dropping the stream (a cancel, a timeout) cancels the turn.
        ReceiverStream::new(receiver)
            .map(move |event| {
                let _ = &guard;
                event
            })
            .boxed()
    }

    fn cancelled(&self, context_id: &str) {
        self.cancel_chat(context_id);
    }

    fn reports_its_calls(&self) -> bool {
        true
    }
}

impl AcpModel {
    /// Cancels what the chat's session waits on: its permission request answers "cancelled",
    /// and its prompt gets `session/cancel`.
    fn cancel_chat(&self, chat: &str) {
        let Ok(Some(session)) = self.inner.live_session(chat) else {
            return;
        };
        tokio::spawn(async move {
            if let Err(why) = session.lock().await.cancel_now().await {
                tracing::warn!("cannot cancel the coding agent's prompt: {why}");
            }
        });
    }
}

/// What the transcript's last entry asks of the agent: the person's message, or the decision
/// on its pending permission. Anything else asks nothing.
fn turn_start(messages: &[ChatMessage]) -> Option<TurnStart> {
    match messages.last()? {
        ChatMessage::User { text, .. } => Some(TurnStart::Prompt(text.clone())),
        ChatMessage::Tool {
            call_id, response, ..
        } => Some(TurnStart::Decided {
            call_id: call_id.clone(),
            response: response.clone(),
        }),
        ChatMessage::Assistant { .. } => None,
    }
}

impl Sessions {
    /// A session for the chat once there is room for it: its earlier one loaded again, or a new
    /// one (`true`).
    async fn start(&self, chat: &str) -> Result<(Arc<tokio::sync::Mutex<Session>>, bool), String> {
        let _slot = self.make_room()?;
        let earlier = self.ids.get(chat);
        let (started, loaded) = Session::start(&self.launch, &self.label, earlier.as_deref())
            .await
            .map_err(|why| format!("The coding agent could not be started: {why}"))?;
        self.ids.set(chat, started.id());
        let session = Arc::new(tokio::sync::Mutex::new(started));
        self.lock()?.insert(chat.to_owned(), session.clone());
        Ok((session, !loaded))
    }

    fn lock(&self) -> Result<std::sync::MutexGuard<'_, Live>, String> {
        self.live
            .lock()
            .map_err(|_| "the coding agent's sessions are poisoned".to_owned())
    }

    /// The chat's session if it is still alive (one whose agent ended is dropped).
    fn live_session(&self, chat: &str) -> Result<Option<Arc<tokio::sync::Mutex<Session>>>, String> {
        let mut live = self.lock()?;
        let Some(session) = live.get(chat).cloned() else {
            return Ok(None);
        };
        // A session in a turn is alive; one that is not is checked for its end.
        let ended = session
            .try_lock()
            .map(|session| session.ended.is_some())
            .unwrap_or(false);
        if ended {
            live.remove(chat);
            return Ok(None);
        }
        Ok(Some(session))
    }

    /// Takes a slot for a session about to start, ending the longest-unused idle session when
    /// the agent runs (or is starting) as many as it may. Sessions still starting count, so
    /// chats that start together cannot overshoot the cap.
    fn make_room(&self) -> Result<Starting<'_>, String> {
        let mut live = self.lock()?;
        live.retain(|_, session| {
            session
                .try_lock()
                .map(|session| session.ended.is_none())
                .unwrap_or(true)
        });
        let slot = || {
            self.starting.fetch_add(1, Ordering::SeqCst);
            Starting(&self.starting)
        };
        if live.len() + self.starting.load(Ordering::SeqCst) < self.launch.max_sessions {
            return Ok(slot());
        }
        let oldest_idle = live
            .iter()
            .filter_map(|(chat, session)| {
                let session = session.try_lock().ok()?;
                session.idle().then(|| (session.last_used, chat.clone()))
            })
            .min()
            .map(|(_, chat)| chat);
        match oldest_idle {
            Some(chat) => {
                live.remove(&chat);
                Ok(slot())
            }
            None => Err(format!(
                "{} already runs {} chats, each waiting on the agent; try again once one ends.",
                self.label, self.launch.max_sessions
            )),
        }
    }
}
