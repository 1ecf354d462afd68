//! Approvals across chats: the one approvals stream a tab keeps open (docs/rest.md, Approvals
//! stream), feeding the sidebar's badge, the tab title, the Approvals page, the chat's
//! "decided elsewhere" notice and, when the person turned them on, browser notifications.

mod elsewhere;
mod link;
mod notify;
mod page;

pub use elsewhere::DecidedElsewhere;
pub use link::ApprovalsLink;
pub use page::ApprovalsPage;

use std::cell::RefCell;
use std::rc::Rc;

use leptos::prelude::*;
use leptos::task::spawn_local;

use wasm_bindgen::closure::Closure;
use wasm_bindgen::JsCast;

use super::app::AppCtx;
use super::util::wait_ms;
use crate::api::{self, Abort, ApiError};
use crate::state::inbox::{tab_title, Change, Inbox};

/// The live approvals of this tab, provided as context.
#[derive(Clone, Copy)]
pub struct LiveApprovals {
    pub inbox: RwSignal<Inbox>,
    /// Browser notifications are on (the person's choice, kept in localStorage).
    pub notify: RwSignal<bool>,
    /// The task whose card to bring into view once its chat shows it (a notification's click).
    pub focus_task: RwSignal<Option<String>>,
}

/// How long to wait before following again after the stream broke.
const RECONNECT_MS: i32 = 1000;

/// Aborts the stream in the returned slot when the page is hidden for good (a reload, a
/// navigation away, or kept for Back in the browser's back/forward cache). A page kept for Back
/// would otherwise hold the stream's connection open, and a browser allows six connections per
/// server: after five quick reloads the next page waited about a minute for one. A page brought
/// back from that cache follows again through the loop's reconnect.
fn close_on_pagehide() -> Rc<RefCell<Option<web_sys::AbortController>>> {
    let current = Rc::new(RefCell::new(None::<web_sys::AbortController>));
    let slot = current.clone();
    let on_pagehide = Closure::<dyn Fn()>::new(move || {
        if let Some(controller) = slot.borrow().as_ref() {
            controller.abort();
        }
    });
    if let Some(window) = web_sys::window() {
        let _ = window
            .add_event_listener_with_callback("pagehide", on_pagehide.as_ref().unchecked_ref());
    }
    // The listener lives as long as the page.
    on_pagehide.forget();
    current
}

/// Opens the tab's approvals stream, keeps it open (resuming after the last event it applied,
/// so nothing is lost or counted twice) and keeps the tab title counting.
pub fn start(app: AppCtx) -> LiveApprovals {
    let live = LiveApprovals {
        inbox: RwSignal::new(Inbox::default()),
        notify: RwSignal::new(notify::remembered()),
        focus_task: RwSignal::new(None),
    };
    provide_context(live);
    Effect::new(move |_| {
        let title = tab_title(live.inbox.with(Inbox::count));
        if let Some(document) = web_sys::window().and_then(|window| window.document()) {
            document.set_title(&title);
        }
    });
    let opened_ms = js_sys::Date::now();
    let current = close_on_pagehide();
    spawn_local(async move {
        loop {
            // A broken request aborts its own controller: each attempt needs a fresh one.
            let abort = Abort::new();
            *current.borrow_mut() = abort.controller();
            let after = live.inbox.with_untracked(|inbox| inbox.last_id);
            let result = api::approvals::follow(after, &abort, &mut |id, event| {
                let mut change = Change::Nothing;
                live.inbox.update(|inbox| change = inbox.apply(id, &event));
                if let Change::Added(batch) = change {
                    // A chat made in another tab or by another client joins the sidebar.
                    let known = app.sessions.with_untracked(|sessions| {
                        sessions
                            .iter()
                            .any(|session| session.id == batch.context_id)
                    });
                    if !known {
                        app.reload_sessions();
                    }
                    // Only batches that start waiting while the tab is open are news.
                    if js_sys::Date::parse(&batch.since) >= opened_ms - 1000.0 {
                        notify::announce(live, app, &batch);
                    }
                }
            })
            .await;
            match result {
                Ok(()) | Err(ApiError::Aborted) => {}
                Err(err) => web_sys::console::warn_1(
                    &format!("the approvals stream broke ({err}); following again").into(),
                ),
            }
            wait_ms(RECONNECT_MS).await;
        }
    });
    live
}
