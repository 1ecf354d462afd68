//! The root component: app-wide signals (route, agents, sessions, toasts) and the page layout.

use leptos::prelude::*;
use leptos::task::spawn_local;

use super::account::{take_address_token, SwitchAccount};
use super::agent_panel::AgentPanel;
use super::chat::Chat;
use super::inbox::{self, ApprovalsPage};
use super::nav;
use super::share::{page_token, SharedPage};
use super::sidebar::Sidebar;
use super::toasts::Toasts;
use crate::api;
use crate::state::agents::AgentInfo;
use crate::state::route::Route;
use crate::state::sessions::SessionInfo;
use signoff_protocol::rest::Policy;

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
    pub toasts: RwSignal<Vec<Toast>>,
    /// The right-hand agent details panel.
    pub details_open: RwSignal<bool>,
    /// The sidebar on narrow screens.
    pub sidebar_open: RwSignal<bool>,
    counter: RwSignal<u32>,
}

impl AppCtx {
    fn next(self) -> u32 {
        self.counter.update(|counter| *counter += 1);
        self.counter.get_untracked()
    }

    /// Goes to `route`: writes the URL and opens the chat it names.
    pub fn navigate(self, route: Route) {
        nav::write_url(&route, false);
        self.open(route);
    }

    fn open(self, route: Route) {
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
        super::util::after(8000, move || self.dismiss(id));
    }

    pub fn dismiss(self, id: u32) {
        self.toasts
            .update(|toasts| toasts.retain(|toast| toast.id != id));
    }

    pub fn reload_sessions(self) {
        spawn_local(async move {
            match api::sessions::list().await {
                Ok(list) => self.sessions.set(list),
                Err(err) => self.toast(format!("Could not load the chats: {err}")),
            }
        });
    }

    pub fn reload_policies(self) {
        spawn_local(async move {
            match api::policies::list().await {
                Ok(list) => self.policies.set(list),
                Err(err) => self.toast(format!("Could not load your policies: {err}")),
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

/// The root component.
#[component]
pub fn App() -> impl IntoView {
    let ctx = AppCtx {
        route: RwSignal::new(nav::current_route()),
        chat: RwSignal::new(None),
        agents: RwSignal::new(None),
        sessions: RwSignal::new(Vec::new()),
        policies: RwSignal::new(Vec::new()),
        toasts: RwSignal::new(Vec::new()),
        details_open: RwSignal::new(api::http::stored(DETAILS_KEY).as_deref() != Some("closed")),
        sidebar_open: RwSignal::new(false),
        counter: RwSignal::new(0),
    };
    provide_context(ctx);
    // Before any request: a first sign-in's token must go with the first of them.
    let switch = RwSignal::new(None);
    take_address_token(ctx, switch);
    // A share link's page shows that one chat read-only and loads nothing else.
    if let Some(token) = page_token() {
        return view! {
            <SharedPage token=token />
            <SwitchAccount ask=switch />
            <Toasts />
        }
        .into_any();
    }
    inbox::start(ctx);
    if web_sys::window()
        .and_then(|window| window.inner_width().ok())
        .and_then(|width| width.as_f64())
        .is_some_and(|width| width < 1100.0)
    {
        ctx.details_open.set(false);
    }
    nav::on_popstate(move |route| ctx.open(route));
    spawn_local(async move {
        let answer = api::list_agents().await.map_err(|err| err.to_string());
        ctx.agents.set(Some(answer));
        ctx.open(ctx.route.get_untracked());
    });
    ctx.reload_sessions();
    ctx.reload_policies();

    // Remount the chat only when the person opens another one: a new chat adopting its session
    // id changes `ctx.chat` too, and must keep its stream.
    let mounted = Memo::new(move |_| {
        ctx.chat
            .get()
            .map(|key| (key.namespace, key.agent, key.nonce))
    });
    let on_approvals = Memo::new(move |_| ctx.route.with(|route| *route == Route::Approvals));
    view! {
        <div
            class="layout"
            class:details-open=move || ctx.details_open.get() && !on_approvals.get()
            class:sidebar-open=move || ctx.sidebar_open.get()
        >
            <Sidebar />
            <main class="chat-area" id="main">
                {move || match (on_approvals.get(), mounted.get().and(ctx.chat.get_untracked())) {
                    (true, _) => view! { <ApprovalsPage /> }.into_any(),
                    (false, Some(key)) => view! { <Chat key=key /> }.into_any(),
                    (false, None) => view! { <EmptyPage /> }.into_any(),
                }}
            </main>
            <AgentPanel />
            <SwitchAccount ask=switch />
            <Toasts />
        </div>
    }
    .into_any()
}

#[component]
fn EmptyPage() -> impl IntoView {
    let ctx = expect_context::<AppCtx>();
    view! {
        <div class="empty-page" data-testid="empty-page">
            {move || match ctx.agents.get() {
                None => "Loading agents…".to_owned(),
                Some(Err(err)) => format!("Could not load the agents: {err}"),
                Some(Ok(list)) if list.is_empty() => "The server runs no agents.".to_owned(),
                Some(Ok(_)) => "Pick an agent to start a chat.".to_owned(),
            }}
        </div>
    }
}
