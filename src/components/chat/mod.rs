//! One chat: header, transcript, status line and composer, over a [`ChatCtl`].

mod composer;
mod routed;
pub mod shared;
mod stop;
mod transcript;
mod usage;

use leptos::prelude::*;

use self::composer::Composer;
use self::routed::{read_only_notice, routed_status};
use self::transcript::Transcript;
use self::usage::SessionUsage;
use crate::components::context::{AppCtx, ChatKey};
use crate::components::controller::ChatCtl;
use crate::components::share::share_menu;
use crate::components::tools::{cards_ready, prefetch_cards};
use crate::state::route::Route;
use crate::state::{ChatStatus, PendingBatch};

/// How many batches wait for the reader, on the menu button of a narrow screen (where the
/// sidebar's Approvals badge is out of sight).
fn menu_badge(ctl: ChatCtl) -> impl IntoView {
    move || {
        let live = ctl.live?;
        let me = live.me.get();
        let count = live.inbox.with(|inbox| inbox.count_for(me.as_deref()));
        (count > 0).then(|| {
            view! {
                <span class="menu-badge" data-testid="menu-badge" aria-label=format!("{count} waiting")>
                    {count}
                </span>
            }
        })
    }
}

/// A chat with one agent; `key.session` is `None` for a new chat.
#[component]
pub fn Chat(key: ChatKey) -> impl IntoView {
    let app = expect_context::<AppCtx>();
    let ctl = ChatCtl::new(key.clone(), app);
    provide_context(ctl);
    ctl.load(prefetch_cards, cards_ready);
    let title = format!("{}/{}", key.namespace, key.agent);
    view! {
        <section class="chat" aria-label="Chat" data-testid="chat">
            <header class="chat-header">
                <button
                    class="icon-button menu-button"
                    aria-label="Show the chats"
                    on:click=move |_| app.sidebar_open.update(|open| *open = !*open)
                >
                    "☰"
                    {menu_badge(ctl)}
                </button>
                <h1 class="chat-title" data-testid="chat-title">{title}</h1>
                <StatusLine />
                <SessionUsage />
                {share_menu()}
                <button
                    class="button small details-button"
                    aria-label="Agent details"
                    aria-expanded=move || app.details_open.get().to_string()
                    data-testid="toggle-details"
                    on:click=move |_| app.show_details(!app.details_open.get_untracked())
                >
                    "Details"
                </button>
            </header>
            <Show when=move || !ctl.missing.get() fallback=move || view! { <SessionNotFound /> }>
                <crate::components::inbox::DecidedElsewhere />
                <Transcript />
                <Show
                    when=move || ctl.requested_by.with(Option::is_none)
                    fallback=move || read_only_notice(ctl.requested_by.get().unwrap_or_default())
                >
                    <Composer />
                </Show>
            </Show>
        </section>
    }
}

/// In place of the transcript when the chat's session does not exist: kagent's page, with
/// the way out.
#[component]
fn SessionNotFound() -> impl IntoView {
    let ctl = expect_context::<ChatCtl>();
    let app = expect_context::<AppCtx>();
    let start = move |_| {
        let key = ctl.key();
        app.navigate(Route::chat(&key.namespace, &key.agent, None));
    };
    view! {
        <div class="empty-state not-found" role="alert" data-testid="session-not-found">
            <h2>"Session not found"</h2>
            <p>"This chat was deleted, the link to it is wrong, or it is not shared with you: its owner can send you a share link."</p>
            <button type="button" class="button primary" data-testid="start-new-chat" on:click=start>
                "Start a new chat"
            </button>
        </div>
    }
}

#[component]
fn StatusLine() -> impl IntoView {
    let ctl = expect_context::<ChatCtl>();
    let status = Memo::new(move |_| ctl.view.with(|view| view.status.clone()));
    // While a batch waits, the line names its tools rather than only "Awaiting approval".
    let announcement = Memo::new(move |_| {
        ctl.view.with(|view| match (&view.status, &view.pending) {
            (ChatStatus::AwaitingApproval, Some(batch)) => Some(waiting_words(ctl, batch)),
            _ => None,
        })
    });
    // The approvals stream lost the server: an idle chat is not "Ready" until it is back (a
    // turn's own stream says "reconnecting" already).
    let lost = move || {
        ctl.live.is_some_and(|live| live.server_lost.get())
            && status.with(|status| *status == ChatStatus::Ready)
    };
    let slug = move || match status.get() {
        _ if lost() => "offline",
        ChatStatus::Ready => "ready",
        ChatStatus::Thinking | ChatStatus::Working => "working",
        ChatStatus::Reconnecting => "reconnecting",
        ChatStatus::ExecutingTools => "tools",
        ChatStatus::AwaitingApproval => "approval",
        ChatStatus::Error(_) => "error",
    };
    view! {
        <div
            class=move || format!("status-line status-{}", slug())
            role="status"
            aria-live="polite"
            data-testid="chat-status"
            data-status=slug
        >
            <span class="status-dot" aria-hidden="true"></span>
            <span class="status-text">{move || match lost() {
                true => "Cannot reach the server; trying again…".to_owned(),
                false => announcement.get().unwrap_or_else(|| status.get().label()),
            }}</span>
        </div>
    }
}

/// What the status line says while `batch` waits: for a batch routed to approvers, whom it
/// waits for and where the reader stands (the approvals chunk's words; the plain label until
/// it is here), else the batch's own words.
fn waiting_words(ctl: ChatCtl, batch: &PendingBatch) -> String {
    let Some(live) = ctl.live else {
        return batch.announcement();
    };
    let me = live.me.get();
    live.inbox
        .with(|inbox| match inbox.routing(&batch.task_id) {
            Some(routing) => routed_status(batch, routing, me.as_deref())
                .unwrap_or_else(|| ChatStatus::AwaitingApproval.label()),
            None => batch.announcement(),
        })
}
