//! The left sidebar: agent picker, New chat, the Approvals link and, for an operator, the tools
//! held back, and the chats grouped Today / Yesterday / Older, each deletable after a
//! confirmation.

use leptos::prelude::*;
use leptos::task::spawn_local;

use super::context::AppCtx;
use super::util::{now_ms, utc_offset_minutes};
use crate::api;
use crate::state::route::Route;
use crate::state::sessions::{group, SessionInfo};

#[component]
pub fn Sidebar() -> impl IntoView {
    let ctx = expect_context::<AppCtx>();
    let current = Memo::new(move |_| ctx.chat.get().map(|key| (key.namespace, key.agent)));
    let new_chat = move |_| {
        if let Some((namespace, agent)) = current.get_untracked() {
            ctx.navigate(Route::chat(&namespace, &agent, None));
        }
    };
    view! {
        <nav class="sidebar" aria-label="Agents and chats" data-testid="sidebar">
            <div class="brand">
                <span class="brand-mark" aria-hidden="true">"✓"</span>
                "Signoff"
                <super::theme::ThemeSwitch />
            </div>
            <super::account::AccountMenu />
            <AgentPicker />
            <button
                type="button"
                class="button primary new-chat"
                data-testid="new-chat"
                aria-label="Start a new chat"
                on:click=new_chat
            >
                "+ New chat"
            </button>
            <super::inbox::ApprovalsLink />
            <super::held_back::HeldBackNotice />
            <SessionList />
        </nav>
        <div class="scrim" aria-hidden="true" on:click=move |_| ctx.sidebar_open.set(false)></div>
    }
}

#[component]
fn AgentPicker() -> impl IntoView {
    let ctx = expect_context::<AppCtx>();
    let current = Memo::new(move |_| {
        ctx.chat
            .get()
            .map(|key| format!("{}/{}", key.namespace, key.agent))
    });
    view! {
        <section class="agent-picker" aria-labelledby="agents-heading">
            <h2 class="side-heading" id="agents-heading">"Agents"</h2>
            {move || match ctx.agents.get() {
                None => view! { <p class="hint">"Loading…"</p> }.into_any(),
                Some(Err(err)) => view! { <p class="field-error" role="alert">{err}</p> }.into_any(),
                Some(Ok(agents)) => view! {
                    <ul class="agent-list" data-testid="agent-list">
                        {agents.into_iter().map(|agent| {
                            let reference = agent.reference();
                            let selected = reference.clone();
                            let (namespace, name) = (agent.namespace.clone(), agent.name.clone());
                            view! {
                                <li>
                                    <button
                                        type="button"
                                        class="agent-option"
                                        class:selected=move || current.get().as_ref() == Some(&selected)
                                        data-testid="agent-item"
                                        aria-label=format!("Chat with {reference}")
                                        on:click=move |_| ctx.navigate(Route::chat(&namespace, &name, None))
                                    >
                                        <span class="agent-name">{reference.clone()}</span>
                                        <span class="agent-description">{crate::components::util::inline_code(&agent.description)}</span>
                                        {agent.model.clone().map(|model| view! { <span class="agent-model">{model}</span> })}
                                    </button>
                                </li>
                            }
                        }).collect_view()}
                    </ul>
                }
                .into_any(),
            }}
        </section>
    }
}

#[component]
fn SessionList() -> impl IntoView {
    let ctx = expect_context::<AppCtx>();
    let groups = Memo::new(move |_| group(ctx.sessions.get(), now_ms(), utc_offset_minutes()));
    view! {
        <section class="sessions" aria-labelledby="chats-heading">
            <h2 class="side-heading" id="chats-heading">"Chats"</h2>
            <Show when=move || groups.with(Vec::is_empty)>
                <p class="hint">"No chats yet."</p>
            </Show>
            {move || groups.get().into_iter().map(|(group, sessions)| view! {
                <div class="session-group" data-testid="session-group">
                    <h3 class="group-heading">{group.label()}</h3>
                    <ul class="session-list">
                        {sessions.into_iter().map(|session| view! { <SessionRow session=session /> }).collect_view()}
                    </ul>
                </div>
            }).collect_view()}
        </section>
    }
}

fn split_agent(agent: &str) -> Option<(String, String)> {
    let (namespace, name) = agent.split_once('/')?;
    Some((namespace.to_owned(), name.to_owned()))
}

#[component]
fn SessionRow(session: SessionInfo) -> impl IntoView {
    let ctx = expect_context::<AppCtx>();
    let confirming = RwSignal::new(false);
    let id = session.id.clone();
    let active_id = id.clone();
    let active = move || {
        ctx.chat
            .with(|chat| chat.as_ref().and_then(|chat| chat.session.as_ref()) == Some(&active_id))
    };
    let agent = session.agent.as_deref().and_then(split_agent);
    let open_id = id.clone();
    let open = move |_| {
        let fallback = ctx
            .chat
            .get_untracked()
            .map(|key| (key.namespace, key.agent));
        if let Some((namespace, name)) = agent.clone().or(fallback) {
            ctx.navigate(Route::chat(&namespace, &name, Some(&open_id)));
        }
    };
    let delete_id = id.clone();
    let delete = move |_| {
        let id = delete_id.clone();
        confirming.set(false);
        spawn_local(async move {
            match api::sessions::delete(&id).await {
                Ok(()) => {
                    let open = ctx.chat.with_untracked(|chat| {
                        chat.as_ref()
                            .filter(|chat| chat.session.as_deref() == Some(id.as_str()))
                            .map(|chat| (chat.namespace.clone(), chat.agent.clone()))
                    });
                    if let Some((namespace, agent)) = open {
                        ctx.navigate(Route::chat(&namespace, &agent, None));
                    }
                    ctx.reload_sessions();
                }
                Err(err) => ctx.toast(format!("Could not delete the chat: {err}")),
            }
        });
    };
    let title = session.title.clone();
    view! {
        <li class="session-item" class:active=active data-testid="session-item" data-session-id=id>
            <button type="button" class="session-open" on:click=open aria-label=format!("Open chat {}", session.title)
                data-testid="session-open">
                {session.title.clone()}
            </button>
            <Show
                when=move || confirming.get()
                fallback=move || view! {
                    <button type="button" class="icon-button session-delete" data-testid="session-delete"
                        aria-label=format!("Delete chat {title}") on:click=move |_| confirming.set(true)>
                        "✕"
                    </button>
                }
            >
                <span class="confirm" role="group" aria-label="Confirm deletion">
                    <button type="button" class="button small danger" data-testid="session-delete-confirm"
                        on:click=delete.clone()>
                        "Delete"
                    </button>
                    <button type="button" class="button small" data-testid="session-delete-cancel"
                        on:click=move |_| confirming.set(false)>
                        "Keep"
                    </button>
                </span>
            </Show>
        </li>
    }
}
