//! Approvals across chats: the one approvals stream the tabs of a browser share (docs/rest.md,
//! Approvals stream), feeding the sidebar's badge, the tab title, the Approvals page, the chat's
//! "decided elsewhere" notice and, when the person turned them on, browser notifications.

mod elsewhere;
mod link;
mod notify;
mod page;
mod routed;
mod stream;
mod tabs;

pub use elsewhere::DecidedElsewhere;
pub use link::ApprovalsLink;
pub use page::ApprovalsPage;
pub use routed::{QuorumLines, ReadOnlyNotice};

pub(crate) use stream::follow;

use leptos::prelude::*;
use leptos::task::spawn_local;

use super::context::AppCtx;
use super::lazy;
use crate::api;
use crate::state::inbox::{tab_title, Inbox};
use crate::state::route::Route;

/// The live approvals of this tab, provided as context.
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

/// Keeps the tab's inbox live: its signals are there from the start (the sidebar's badge, the
/// tab title and the chat read them), and once the first view is drawn and the browser idle,
/// the stream chunk follows the approvals stream into them (`stream::follow`). A fresh chat
/// downloads none of the stream's code before its composer works, and a stored chat none
/// before its messages are in.
pub fn start(app: AppCtx) -> LiveApprovals {
    let live = LiveApprovals {
        inbox: RwSignal::new(Inbox::default()),
        notify: RwSignal::new(notify::remembered()),
        focus_task: RwSignal::new(None),
        me: RwSignal::new(None),
        chat_loaded: RwSignal::new(false),
        server_lost: RwSignal::new(false),
    };
    provide_context(live);
    spawn_local(async move {
        if let Ok(me) = api::me().await {
            live.me.set(Some(me.user));
        }
    });
    Effect::new(move |_| {
        let me = live.me.get();
        let title = tab_title(live.inbox.with(|inbox| inbox.count_for(me.as_deref())));
        if let Some(document) = web_sys::window().and_then(|window| window.document()) {
            document.set_title(&title);
        }
    });
    let opened_ms = js_sys::Date::now();
    let follow = move || {
        lazy::when_idle(move || {
            spawn_local(async move { lazy::approvals_stream().await(app, live, opened_ms) })
        })
    };
    let on_stored_chat = |route: &Route| {
        matches!(
            route,
            Route::Chat {
                session: Some(_),
                ..
            }
        )
    };
    if app.route.with_untracked(on_stored_chat) {
        // Until its messages are in, or the person went elsewhere.
        Effect::new(move |followed: Option<bool>| {
            let follows =
                followed == Some(true) || live.chat_loaded.get() || !app.route.with(on_stored_chat);
            if follows && followed != Some(true) {
                follow();
            }
            follows
        });
    } else {
        follow();
    }
    live
}
