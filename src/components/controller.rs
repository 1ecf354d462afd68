//! The chat's intents (send, stop, decide, load) wired to the network module and the reducer.
//! Views call these; only this glue touches [`crate::api`], and every event it receives goes
//! through [`ChatView::apply`]. It imports no view: what a chat's load waits for (the cards'
//! chunk) its caller names, and the words to a requester who may not approve come from the
//! approvals chunk through the split point here ([`requester_reply`]).

mod guard;

use leptos::prelude::*;
use leptos::task::spawn_local;
use signoff_protocol::hitl::Decision;
use signoff_protocol::jsonrpc::ErrorCode;
use signoff_protocol::rest::ApprovalRouting;
use signoff_protocol::{Message, Part, Role, StreamEvent, TaskState};

use crate::api::rpc::{self, Endpoint};
use crate::api::{self, Abort, ApiError};
use crate::components::context::{AppCtx, ChatKey, LiveApprovals};
use crate::components::lazy::{loaded, Loaded, Slot};
use crate::components::util::new_id;
use crate::state::compose::{self, SendEffect};
use crate::state::draft::{self, BatchDraft};
use crate::state::{ChatStatus, ChatView, PendingBatch};

/// The rows a stored chat opens on (more than a tall screen holds); the transcript adds the
/// older history while the page is idle.
const FIRST_ROWS: usize = 16;

/// One chat's live state and the handles its requests need. Copy: all fields are arena handles.
#[derive(Clone, Copy)]
pub struct ChatCtl {
    pub view: RwSignal<ChatView>,
    /// The person's choices on the pending batch, before they are sent.
    pub draft: RwSignal<BatchDraft>,
    /// A decision is on its way: every decision control waits for the server's answer.
    pub deciding: RwSignal<bool>,
    /// The chat is loading a stored session.
    pub loading: RwSignal<bool>,
    /// How many of the chat's last rows the transcript shows: a stored chat opens on its last
    /// screenful, and the transcript adds the older rows while the page is idle.
    pub shown_rows: RwSignal<usize>,
    /// The server knows no chat with this session id (deleted, or a wrong link).
    pub missing: RwSignal<bool>,
    pub composer: RwSignal<String>,
    /// Whose chat this is, when the reader is an approver of a batch routed to them: they read
    /// it and decide its cards, but write nothing else to it.
    pub requested_by: RwSignal<Option<String>>,
    /// Why the composer is disabled, for the placeholder.
    key: StoredValue<ChatKey>,
    endpoint: RwSignal<Option<Endpoint>>,
    /// The open stream; dropping it aborts the request (on cleanup, or when replaced).
    stream: StoredValue<Option<Abort>, LocalStorage>,
    /// The task whose batch passed its deadline and is being looked at (once per task).
    expiring: StoredValue<Option<String>>,
    app: AppCtx,
    /// The tab's approvals: where a routed batch's quorum stands (`state::routing`).
    pub live: Option<LiveApprovals>,
}

impl ChatCtl {
    pub fn new(key: ChatKey, app: AppCtx) -> Self {
        let ctl = ChatCtl {
            view: RwSignal::new(ChatView::default()),
            draft: RwSignal::new(BatchDraft::default()),
            deciding: RwSignal::new(false),
            loading: RwSignal::new(key.session.is_some()),
            shown_rows: RwSignal::new(usize::MAX),
            missing: RwSignal::new(false),
            composer: RwSignal::new(String::new()),
            requested_by: RwSignal::new(None),
            key: StoredValue::new(key),
            endpoint: RwSignal::new(None),
            stream: StoredValue::new_local(None),
            expiring: StoredValue::new(None),
            app,
            live: use_context::<LiveApprovals>(),
        };
        on_cleanup(move || ctl.stream.set_value(None));
        ctl
    }

    /// The chat's cards show on the Approvals page, among other batches (not in their chat):
    /// there a batch that arrives is not scrolled to, the page keeps its place.
    pub fn on_approvals_page(self) -> bool {
        self.app
            .route
            .with_untracked(|route| *route == crate::state::route::Route::Approvals)
    }

    pub fn app(self) -> AppCtx {
        self.app
    }

    pub fn key(self) -> ChatKey {
        self.key.get_value()
    }

    /// This chat's agent as the agents list has it (the chat on screen's, or on the Approvals
    /// page a waiting batch's).
    pub fn agent(self) -> Option<crate::state::agents::AgentInfo> {
        let key = self.key();
        self.app.agents.with(|agents| match agents {
            Some(Ok(list)) => list
                .iter()
                .find(|agent| agent.namespace == key.namespace && agent.name == key.agent)
                .cloned(),
            Some(Err(_)) | None => None,
        })
    }

    async fn endpoint(self) -> Endpoint {
        if let Some(endpoint) = self.endpoint.get_untracked() {
            return endpoint;
        }
        let key = self.key();
        let endpoint = rpc::endpoint(&key.namespace, &key.agent).await;
        self.endpoint.set(Some(endpoint.clone()));
        endpoint
    }

    fn new_abort(self) -> Abort {
        let abort = Abort::new();
        // Keep a twin that aborts the same controller when the chat goes away.
        self.stream.set_value(Some(abort.clone()));
        abort
    }

    /// Applies a streamed event, and lets the URL follow a new chat's session.
    fn on_event(self, event: &StreamEvent) {
        self.view.update(|view| view.apply(event));
        let key = self.key();
        if key.session.is_none() {
            if let Some(context) = event.context_id() {
                self.key
                    .update_value(|key| key.session = Some(context.to_owned()));
                self.app.adopt_session(&key.namespace, &key.agent, context);
                self.app.reload_sessions();
            }
        }
    }

    /// Loads a stored chat and follows its last task if it is still running. A stored chat may
    /// open on cards: `prefetch_cards` starts fetching their chunk while its messages load, and
    /// a chat that has cards shows once `cards_ready` says the chunk is there, with them
    /// (`tools::prefetch_cards` and `tools::cards_ready`: the views are the caller's to name).
    pub fn load<F>(self, prefetch_cards: fn(), cards_ready: fn() -> F)
    where
        F: std::future::Future<Output = ()> + 'static,
    {
        let Some(session) = self.key().session else {
            return;
        };
        prefetch_cards();
        spawn_local(async move {
            let loaded = api::sessions::load_started(&session).await;
            let replayed = loaded
                .as_ref()
                .ok()
                .map(|(_, tasks, _)| crate::state::replay(tasks));
            if replayed.as_ref().is_some_and(|view| !view.tools.is_empty()) {
                cards_ready().await;
            }
            self.loading.set(false);
            if let Some(live) = self.live {
                live.chat_loaded.set(true);
            }
            let tasks = match loaded {
                Ok((_, tasks, requested_by)) => {
                    self.requested_by.set(requested_by);
                    tasks
                }
                Err(ApiError::Http { status: 404, .. }) => {
                    self.missing.set(true);
                    return;
                }
                Err(err) => {
                    self.app.toast(format!("Could not load this chat: {err}"));
                    return;
                }
            };
            self.shown_rows.set(FIRST_ROWS);
            self.view.set(replayed.unwrap_or_default());
            if let Some(last) = tasks.last() {
                if matches!(last.status.state, TaskState::Submitted | TaskState::Working) {
                    self.follow(last.id.clone());
                }
            }
        });
    }

    /// Resubscribes to a running task and applies the rest of its turn.
    fn follow(self, task_id: String) {
        self.view.update(|view| view.status = ChatStatus::Working);
        spawn_local(async move {
            let endpoint = self.endpoint().await;
            let abort = self.new_abort();
            let result = rpc::resubscribe(&endpoint, &task_id, &abort, &mut |event| {
                self.on_event(&event)
            })
            .await;
            self.finish_stream(result, None);
        });
    }

    /// Reads the rest of a task whose batch was decided elsewhere (another tab, another
    /// person, its deadline): follows its turn while it runs, or reads the task as it ended (a
    /// quick turn may be over before this look, and an ended task takes no resubscribe).
    pub fn catch_up(self, task_id: String) {
        spawn_local(async move {
            let result = self.follow_or_read(&task_id).await;
            self.finish_stream(result, None);
        });
    }

    /// Follows the rest of `task_id`'s turn, or reads the task as it ended (an ended task
    /// takes no resubscribe).
    async fn follow_or_read(self, task_id: &str) -> Result<(), ApiError> {
        let endpoint = self.endpoint().await;
        let abort = self.new_abort();
        let result = rpc::resubscribe(&endpoint, task_id, &abort, &mut |event| {
            self.on_event(&event)
        })
        .await;
        match result {
            Err(ApiError::Rpc { .. }) => rpc::get_task(&endpoint, task_id)
                .await
                .map(|task| self.on_event(&StreamEvent::Task(task))),
            other => other,
        }
    }

    /// The pending batch of `task_id` passed its deadline: the server expires it then, but a
    /// paused task has no open stream, so look at the task (a resubscribe, which also follows
    /// the turn the expiry starts) until the batch is no longer pending here. Bounded: after
    /// half a minute the card keeps saying "Expiring…" and a reload shows the rest.
    pub fn watch_expiry(self, task_id: String) {
        if self.expiring.get_value().as_ref() == Some(&task_id) {
            return;
        }
        self.expiring.set_value(Some(task_id.clone()));
        spawn_local(async move {
            let endpoint = self.endpoint().await;
            for _ in 0..30 {
                let abort = self.new_abort();
                let result = rpc::resubscribe(&endpoint, &task_id, &abort, &mut |event| {
                    self.on_event(&event)
                })
                .await;
                // The expiry's turn may end the task before this look: a v1.0 agent behind
                // the relay refuses to subscribe to an ended task (-32004, passed on in v0.3).
                // Then read the task as it ended.
                let result = match result {
                    Err(ApiError::Rpc { code, .. })
                        if code == ErrorCode::UnsupportedOperation.code() =>
                    {
                        rpc::get_task(&endpoint, &task_id).await.map(|task| {
                            self.on_event(&StreamEvent::Task(task));
                        })
                    }
                    other => other,
                };
                let waiting = self.view.with_untracked(|view| {
                    view.pending
                        .as_ref()
                        .is_some_and(|batch| batch.task_id == task_id)
                });
                if !waiting || result.is_err() {
                    self.finish_stream(result, None);
                    return;
                }
                crate::components::util::wait_ms(1000).await;
            }
        });
    }

    fn finish_stream(self, result: Result<(), ApiError>, restore: Option<(ChatView, String)>) {
        let broke = matches!(result, Ok(()) | Err(ApiError::Network(_)));
        if broke && restore.is_none() {
            if let Some(task_id) = self.view.try_update(ChatView::stream_lost).flatten() {
                self.reconnect(task_id);
                return;
            }
        }
        match result {
            Ok(()) => self.view.update(ChatView::stream_closed),
            Err(ApiError::Aborted) => self.view.update(ChatView::stream_closed),
            Err(err) => {
                let message = err.to_string();
                match restore {
                    // Refused before anything happened: undo the optimistic bubble, give the
                    // text back, and say why.
                    Some((before, text)) => {
                        self.view.set(before);
                        // Not over what the person typed since.
                        if self.composer.with_untracked(String::is_empty) {
                            self.composer.set(text);
                        }
                    }
                    None => self.view.update(|view| view.fail(&message)),
                }
                self.app.toast(message);
            }
        }
        self.app.reload_sessions();
    }

    /// Resubscribes to `task_id` after its stream broke mid-turn, waiting longer after each
    /// failed try (up to 8 s), until the server answers: then the chat follows the task again,
    /// or reads it as it ended. Stops when the chat is closed or the task stopped meanwhile.
    fn reconnect(self, task_id: String) {
        spawn_local(async move {
            let mut wait = 500;
            loop {
                crate::components::util::wait_ms(wait).await;
                wait = (wait * 2).min(8000);
                let reconnecting = self
                    .view
                    .try_with_untracked(|view| view.status == ChatStatus::Reconnecting);
                if reconnecting != Some(true) {
                    return;
                }
                let result = self.follow_or_read(&task_id).await;
                let broke = matches!(result, Ok(()) | Err(ApiError::Network(_)));
                let lost = broke
                    && self
                        .view
                        .try_update(ChatView::stream_lost)
                        .flatten()
                        .is_some();
                if !lost {
                    self.finish_stream(result, None);
                    return;
                }
            }
        });
    }

    /// Sends the composer's text: a new turn, a message queued for the working task, or a reply
    /// to the paused task (which decides its batch), as [`compose::send_effect`] says. Each
    /// shows at once, and the cross-tab guard (`guard`) looks at the chat on the server before
    /// anything goes out.
    pub fn send(self) {
        let text = self.composer.get_untracked();
        if text.trim().is_empty() {
            return;
        }
        let effect = untrack(|| self.send_effect(&text));
        if !effect.can_send() {
            return;
        }
        match effect {
            SendEffect::NewTurn => self.send_new_turn(text),
            SendEffect::Queue { task_id } => self.send_queued(task_id, text),
            SendEffect::Reply { task_id, .. } => self.send_reply(task_id, text),
            SendEffect::Wait | SendEffect::Refused(_) => {}
        }
    }

    /// What sending `text` would do now (`compose::send_effect`); a requester who may not
    /// approve a batch routed to approvers is refused a reply that would approve or decides
    /// nothing, in the approvals chunk's words (none until it is here).
    pub fn send_effect(self, text: &str) -> SendEffect {
        let effect = self.view.with(|view| compose::send_effect(view, text));
        let SendEffect::Reply { task_id, .. } = &effect else {
            return effect;
        };
        let refused = self.live.and_then(|live| {
            live.inbox.with(|inbox| {
                let routing = inbox.routing(task_id)?;
                requester_reply(&effect, text, routing)
            })
        });
        refused.map_or(effect, SendEffect::Refused)
    }

    /// A user message of the composer's text, in this chat.
    fn user_message(self, text: &str, task_id: Option<String>) -> Message {
        let mut message = Message::new(new_id(), Role::User, vec![Part::text(text)]);
        message.context_id = self.view.with_untracked(|view| view.context_id.clone());
        message.task_id = task_id;
        message
    }

    /// A new turn.
    fn send_new_turn(self, text: String) {
        let before = self.view.get_untracked();
        // An agent that asked a question (input-required without a batch) continues its task.
        let task_id = (before.task_state() == Some(TaskState::InputRequired)
            && before.pending.is_none())
        .then(|| before.task_id.clone())
        .flatten();
        let message = self.user_message(&text, task_id);
        self.composer.set(String::new());
        self.view.update(|view| view.send(&message));
        spawn_local(async move {
            if self.held_back(&before, &text).await {
                return;
            }
            let endpoint = self.endpoint().await;
            let abort = self.new_abort();
            let mut started = false;
            let result = rpc::send_streaming(&endpoint, &message, &abort, &mut |event| {
                started = true;
                self.on_event(&event);
            })
            .await;
            self.finish_stream(result, (!started).then_some((before, text)));
        });
    }

    /// A message for the working task: shown as queued at once; the turn's open stream shows
    /// it delivered. A refusal takes the bubble back and gives the text back.
    fn send_queued(self, task_id: String, text: String) {
        let message = self.user_message(&text, Some(task_id));
        let seen = self.view.get_untracked();
        self.composer.set(String::new());
        self.view.update(|view| view.queue(&message));
        spawn_local(async move {
            if self.held_back(&seen, &text).await {
                return;
            }
            let endpoint = self.endpoint().await;
            if let Err(err) = rpc::send_queued(&endpoint, &message).await {
                self.view.update(|view| view.unqueue(&message.message_id));
                if self.composer.with_untracked(String::is_empty) {
                    self.composer.set(text);
                }
                self.app.toast(err.to_string());
            }
        });
    }

    /// A reply to the paused task: it decides the pending batch (text that is not a decision
    /// rejects every pending call with the text as the reason), then the turn goes on.
    fn send_reply(self, task_id: String, text: String) {
        if self.deciding.get_untracked() {
            return;
        }
        let message = self.user_message(&text, Some(task_id));
        let seen = self.view.get_untracked();
        self.composer.set(String::new());
        self.deciding.set(true);
        spawn_local(async move {
            if self.held_back(&seen, &text).await {
                self.deciding.set(false);
                return;
            }
            self.send_decision(message, move |err| {
                self.composer.set(text);
                self.app.toast(err.to_string());
            });
        });
    }

    /// Stop: cancels the task on the server (so it really ends `canceled`), then closes the
    /// stream. Before the task has an id, only the request can be dropped.
    pub fn stop(self) {
        let task = self.view.with_untracked(|view| view.task_id.clone());
        let busy = self
            .view
            .with_untracked(|view| view.status.is_busy() || view.pending.is_some());
        if !busy {
            return;
        }
        let Some(task) = task else {
            self.stream.set_value(None);
            return;
        };
        spawn_local(async move {
            let endpoint = self.endpoint().await;
            match rpc::cancel(&endpoint, &task).await {
                Ok(task) => self
                    .view
                    .update(|view| view.apply(&StreamEvent::Task(task))),
                Err(err) => self.app.toast(format!("Could not stop the task: {err}")),
            }
        });
    }

    /// Sends a decision on the pending batch. The decision shows in the transcript once the
    /// server accepted it; until it answers, every decision control is disabled.
    pub fn decide(self, batch: PendingBatch, decision: Decision) {
        if self.deciding.get_untracked() {
            return;
        }
        let message = match draft::decision_message(&batch, &decision, new_id()) {
            Ok(message) => message,
            Err(err) => return self.app.toast(err.to_string()),
        };
        self.send_decision(message, move |err| {
            // Refused: the batch stays decidable with the person's choices kept; a refusal that
            // names one call shows on that call's card.
            let message = err.to_string();
            let mut shown_on_card = None;
            self.draft
                .update(|draft| shown_on_card = draft.refuse(&batch, &message));
            if shown_on_card.is_none() {
                self.app.toast(message);
            }
        });
    }

    /// Sends `message`, which decides the pending batch, and follows the turn it resumes. The
    /// decision shows once the server accepted it; until it answers, every decision control is
    /// disabled. `refused` hears why when the server took nothing.
    fn send_decision(self, message: Message, refused: impl FnOnce(ApiError) + 'static) {
        self.deciding.set(true);
        spawn_local(async move {
            let endpoint = self.endpoint().await;
            let abort = self.new_abort();
            let mut accepted = false;
            let result = rpc::send_streaming(&endpoint, &message, &abort, &mut |event| {
                if !accepted {
                    accepted = true;
                    self.view.update(|view| view.send(&message));
                    self.deciding.set(false);
                    // Once the decided card or bar has gone, the focus returns to the composer.
                    crate::components::util::after(
                        0,
                        crate::components::util::refocus_composer_if_lost,
                    );
                }
                self.on_event(&event);
            })
            .await;
            self.deciding.set(false);
            if accepted {
                self.draft.set(BatchDraft::default());
                self.finish_stream(result, None);
            } else if let Err(err) = result {
                // Aborted: the view went away (a batch on the Approvals page is gone once
                // decided); nobody is left to tell.
                if err != ApiError::Aborted {
                    refused(err);
                }
            }
        });
    }
}

/// The composer's words, not sent, for a requester who may not approve
/// (`state::routing::requester_reply`).
type Reply = fn(&SendEffect, &str, &ApprovalRouting) -> Option<String>;

thread_local! {
    static REPLY: Slot<Reply> = ArcRwSignal::new(None);
}

#[wasm_split_helpers::wasm_split(approvals, fallible)]
fn requester_reply_words() -> Loaded<Reply> {
    Ok(crate::state::routing::requester_reply)
}

/// What the composer says, without sending, to a requester who may not approve a routed
/// batch; `None` where its own words stand, and until the approvals chunk is here.
fn requester_reply(effect: &SendEffect, text: &str, routing: &ApprovalRouting) -> Option<String> {
    loaded(&REPLY, requester_reply_words).and_then(|reply| reply(effect, text, routing))
}
