//! The root component: it provides the app's context (`context`), loads the agents, chats and
//! policies, and lays out the page.

use leptos::prelude::*;
use leptos::task::spawn_local;

use super::account::{take_address_token, SwitchAccount, TokenSignIn};
use super::agent_panel::AgentPanel;
use super::chat::shared::{page_token, shared_page};
use super::chat::Chat;
use super::context::AppCtx;
use super::inbox;
use super::nav;
use super::sidebar::Sidebar;
use super::toasts::Toasts;
use crate::api;
use crate::state::route::Route;

/// The root component.
#[component]
pub fn App() -> impl IntoView {
    let ctx = AppCtx::from_browser();
    provide_context(ctx);
    // Before any request: a first sign-in's token must go with the first of them.
    let switch = RwSignal::new(None);
    take_address_token(ctx, switch);
    // A share link's page shows that one chat read-only and loads nothing else.
    if let Some(token) = page_token() {
        return view! {
            {shared_page(token)}
            <SwitchAccount ask=switch />
            <Toasts />
        }
        .into_any();
    }
    // A page opened on a stored chat asks for its messages and its cards' chunk beside the
    // agents list, which its chat waits for to mount.
    if let Route::Chat {
        session: Some(session),
        ..
    } = ctx.route.get_untracked()
    {
        api::sessions::load_early(&session);
        crate::components::tools::prefetch_cards();
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
        let answer = api::list_agents().await.map_err(|err| {
            if matches!(err, api::ApiError::Http { status: 401, .. }) {
                ctx.signed_out.set(true);
            }
            err.to_string()
        });
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
            <a class="skip-link" href="#composer-input" data-testid="skip-link"
                on:click=move |event| {
                    event.prevent_default();
                    crate::components::util::focus_composer();
                }>
                "Skip to the message box"
            </a>
            <Sidebar />
            <main class="chat-area" id="main">
                {move || match (on_approvals.get(), mounted.get().and(ctx.chat.get_untracked())) {
                    _ if ctx.signed_out.get() => view! { <TokenSignIn /> }.into_any(),
                    (true, _) => inbox::approvals_page().into_any(),
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
