//! The app's shared state, provided as context to every view: the route, the chat on screen,
//! the agents, chats and policies loaded, the tools held back for an operator's review, the
//! toasts; the marker of a read-only shared view; and the tab's live approvals.

use leptos::prelude::*;
use leptos::task::spawn_local;
use signoff_protocol::rest::Policy;

use super::{nav, util};
use crate::api;
use crate::state::agents::AgentInfo;
use crate::state::inbox::Inbox;
use crate::state::route::Route;
use crate::state::sessions::SessionInfo;

/// Where the person's choice to show or hide the agent details is kept.
const DETAILS_KEY: &str = "signoff.details";

/// Which chat is on screen. It changes when the person navigates, not when a new chat's URL
/// catches up with the session its first message created (the chat must not restart then).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChatKey {
    pub namespace: String,
    pub agent: String,
    pub session: Option<String>,
    /// Bumped by "New chat" so that a second new chat restarts too.
    pub nonce: u32,
}

/// One toast message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Toast {
    pub id: u32,
    pub text: String,
}

/// App-wide state, provided as context. Only signals: cheap to copy into closures.
#[derive(Clone, Copy)]
pub struct AppCtx {
    pub route: RwSignal<Route>,
    pub chat: RwSignal<Option<ChatKey>>,
    /// `None` while loading; `Err` holds the message to show.
    pub agents: RwSignal<Option<Result<Vec<AgentInfo>, String>>>,
    pub sessions: RwSignal<Vec<SessionInfo>>,
    /// The person's "always allow" policies (docs/rest.md, Policies).
    pub policies: RwSignal<Vec<Policy>>,
    /// How many tools are held back because their server changed their definition
    /// (docs/rest.md, Tool definitions); always 0 for someone who is not an operator. A `u32`
    /// like `counter`: a signal of a type the app already has costs the download no new code.
    pub held_back: RwSignal<u32>,
    pub toasts: RwSignal<Vec<Toast>>,
    /// The server refused this browser's sign-in (none, or an unknown token): the page asks
    /// for one instead of showing every refusal.
    pub signed_out: RwSignal<bool>,
    /// The right-hand agent details panel.
    pub details_open: RwSignal<bool>,
    /// The sidebar on narrow screens.
    pub sidebar_open: RwSignal<bool>,
    counter: RwSignal<u32>,
}

impl AppCtx {
    /// The app's state at start: the route of the address bar, nothing loaded yet, the agent
    /// details as the person last left them.
    pub fn from_browser() -> Self {
        AppCtx {
            route: RwSignal::new(nav::current_route()),
            chat: RwSignal::new(None),
            agents: RwSignal::new(None),
            sessions: RwSignal::new(Vec::new()),
            policies: RwSignal::new(Vec::new()),
            held_back: RwSignal::new(0),
            toasts: RwSignal::new(Vec::new()),
            signed_out: RwSignal::new(false),
            details_open: RwSignal::new(
                api::http::stored(DETAILS_KEY).as_deref() != Some("closed"),
            ),
            sidebar_open: RwSignal::new(false),
            counter: RwSignal::new(0),
        }
    }

    fn next(self) -> u32 {
        self.counter.update(|counter| *counter += 1);
        self.counter.get_untracked()
    }

    /// Goes to `route`: writes the URL and opens the chat it names.
    pub fn navigate(self, route: Route) {
        nav::write_url(&route, false);
        self.open(route);
    }

    /// Opens the chat (or page) `route` names, as the address bar already says.
    pub fn open(self, route: Route) {
        self.route.set(route.clone());
        self.sidebar_open.set(false);
        match route {
            Route::Chat {
                namespace,
                agent,
                session,
            } => {
                let nonce = self.next();
                self.chat.set(Some(ChatKey {
                    namespace,
                    agent,
                    session,
                    nonce,
                }));
            }
            Route::Home => self.open_first_agent(),
            Route::Approvals | Route::NotFound => self.chat.set(None),
        }
    }

    fn open_first_agent(self) {
        let first = self.agents.with_untracked(|agents| match agents {
            Some(Ok(list)) => list
                .first()
                .map(|agent| (agent.namespace.clone(), agent.name.clone())),
            Some(Err(_)) | None => None,
        });
        if let Some((namespace, agent)) = first {
            let route = Route::chat(&namespace, &agent, None);
            nav::write_url(&route, true);
            self.open(route);
        }
    }

    /// The URL follows a new chat's session once it exists, without restarting the chat.
    pub fn adopt_session(self, namespace: &str, agent: &str, session: &str) {
        let route = Route::chat(namespace, agent, Some(session));
        if self.route.get_untracked() != route {
            nav::write_url(&route, false);
            self.route.set(route);
        }
        self.chat.update(|chat| {
            if let Some(chat) = chat {
                chat.session.get_or_insert_with(|| session.to_owned());
            }
        });
    }

    /// Shows or hides the agent details, as the person chose: kept in localStorage, so a
    /// reload keeps a wide window's panel closed once closed (a narrow one starts closed).
    pub fn show_details(self, open: bool) {
        self.details_open.set(open);
        api::http::store(DETAILS_KEY, if open { "open" } else { "closed" });
    }

    pub fn toast(self, text: impl Into<String>) {
        let text = text.into();
        // Also in the console, where browser tests and people debugging can read it later.
        web_sys::console::warn_1(&text.as_str().into());
        let id = self.next();
        self.toasts.update(|toasts| toasts.push(Toast { id, text }));
        util::after(8000, move || self.dismiss(id));
    }

    /// Says why a load failed; a refused sign-in is said once, by the sign-in page.
    pub fn failed(self, what: &str, err: &api::ApiError) {
        if matches!(err, api::ApiError::Http { status: 401, .. }) {
            self.signed_out.set(true);
        } else {
            self.toast(format!("{what}: {err}"));
        }
    }

    pub fn dismiss(self, id: u32) {
        self.toasts
            .update(|toasts| toasts.retain(|toast| toast.id != id));
    }

    pub fn reload_sessions(self) {
        spawn_local(async move {
            match api::sessions::list().await {
                Ok(list) => self.sessions.set(list),
                Err(err) => self.failed("Could not load the chats", &err),
            }
        });
    }

    pub fn reload_policies(self) {
        spawn_local(async move {
            match api::policies::list().await {
                Ok(list) => self.policies.set(list),
                Err(err) => self.failed("Could not load your policies", &err),
            }
        });
    }

    /// Asks how many tools are held back. Only operators may read them: anyone else is
    /// refused, and sees no notice rather than an error about a page that is not theirs. A
    /// server out of reach leaves the count as it was (the next reload after it is back tells).
    pub fn reload_held_back(self) {
        spawn_local(async move {
            match api::tools::held_back().await {
                Ok(count) => self.held_back.set(count),
                Err(api::ApiError::Network(_) | api::ApiError::Aborted) => {}
                Err(_) => self.held_back.set(0),
            }
        });
    }

    /// Revokes a policy; the next call it would have allowed asks again.
    pub fn revoke_policy(self, id: String) {
        spawn_local(async move {
            match api::policies::revoke(&id).await {
                Ok(()) => self.reload_policies(),
                Err(err) => self.toast(format!("Could not revoke the policy: {err}")),
            }
        });
    }

    /// The agent of the chat on screen.
    pub fn current_agent(self) -> Option<AgentInfo> {
        let key = self.chat.get()?;
        self.agents.with(|agents| match agents {
            Some(Ok(list)) => list
                .iter()
                .find(|agent| agent.namespace == key.namespace && agent.name == key.agent)
                .cloned(),
            Some(Err(_)) | None => None,
        })
    }
}

/// Marks a read-only shared view, for the parts that offer actions (feedback) to hide them.
#[derive(Clone, Copy)]
pub struct SharedView;

/// The live approvals of this tab, provided as context (`inbox::start` makes them and keeps
/// them live).
#[derive(Clone, Copy)]
pub struct LiveApprovals {
    pub inbox: RwSignal<Inbox>,
    /// Browser notifications are on (the person's choice, kept in localStorage).
    pub notify: RwSignal<bool>,
    /// The task whose card to bring into view once its chat shows it (a notification's click).
    pub focus_task: RwSignal<Option<String>>,
    /// Who the person is signed in as (`GET /api/me`), to know whether they approved a routed
    /// call already.
    pub me: RwSignal<Option<String>>,
    /// The stored chat the page opened on has its messages in (or could not load them): until
    /// then its stream's chunk would share the link with them.
    pub chat_loaded: RwSignal<bool>,
    /// The approvals stream could not reach the server (stopped, or the network is down): the
    /// chat's status line says so rather than "Ready".
    pub server_lost: RwSignal<bool>,
}
