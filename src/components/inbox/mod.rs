//! Approvals across chats: the one approvals stream the tabs of a browser share (docs/rest.md,
//! Approvals stream), feeding the sidebar's badge, the tab title, the Approvals page, the chat's
//! "decided elsewhere" notice and, when the person turned them on, browser notifications. The
//! tab's approvals are a [`LiveApprovals`] (`context`); the page comes from the chunk of the
//! split point `approvals` ([`approvals_page`]), the stream's reading from that of `stream`.

mod elsewhere;
mod link;
mod notify;
mod page;
mod stream;
mod tabs;

pub use elsewhere::DecidedElsewhere;
pub use link::ApprovalsLink;
pub use page::approvals_page;

use leptos::prelude::*;
use leptos::task::spawn_local;

use super::context::{AppCtx, LiveApprovals};
use super::lazy::{ready, when_idle, Loaded, Slot};
use crate::api;
use crate::state::inbox::{tab_title, Inbox};
use crate::state::route::Route;

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
        when_idle(move || {
            spawn_local(async move { approvals_stream().await(app, live, opened_ms) })
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

/// Follows the approvals stream into the tab's inbox, given when the page opened.
type FollowApprovals = fn(AppCtx, LiveApprovals, f64);

thread_local! {
    static STREAM: Slot<FollowApprovals> = ArcRwSignal::new(None);
}

#[wasm_split_helpers::wasm_split(stream, fallible)]
fn approvals_stream_follower() -> Loaded<FollowApprovals> {
    Ok(stream::follow)
}

/// The approvals stream's follower (`stream::follow`), once its chunk has loaded: the sharing
/// between tabs, the stream's reading and the browser notifications it raises.
async fn approvals_stream() -> FollowApprovals {
    ready(&STREAM, approvals_stream_follower).await
}
