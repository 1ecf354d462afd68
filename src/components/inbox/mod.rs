//! Approvals across chats: the one approvals stream the tabs of a browser share (docs/rest.md,
//! Approvals stream), feeding the sidebar's badge, the tab title, the Approvals page, the chat's
//! "decided elsewhere" notice and, when the person turned them on, browser notifications.

mod elsewhere;
mod link;
mod notify;
mod page;
mod tabs;

pub use elsewhere::DecidedElsewhere;
pub use link::ApprovalsLink;
pub use page::ApprovalsPage;

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use leptos::prelude::*;
use leptos::task::spawn_local;

use wasm_bindgen::closure::Closure;
use wasm_bindgen::JsCast;

use super::app::AppCtx;
use super::util::wait_ms;
use crate::api::{self, Abort, ApiError};
use crate::state::inbox::{tab_title, Change, Inbox};
use crate::state::tabs::{Follower, TabMessage};
use tabs::{Lease, Tabs};

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

/// Keeps the tab's inbox live (see `state::tabs`): the leading tab of this browser follows the
/// approvals stream (resuming after the last event it applied, so nothing is lost or counted
/// twice) and passes each event on; the others adopt its inbox and apply what it passes on. The
/// tab title counts.
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
    let name = format!("signoff.approvals.{}", api::caller_key());
    let share = Rc::new(Share {
        app,
        live,
        opened_ms: js_sys::Date::now(),
        tabs: Tabs::open(&name),
        leading: Cell::new(false),
        follower: RefCell::new(Follower::default()),
        current: close_on_pagehide(),
        lease: RefCell::new(None),
    });
    if share.tabs.is_none() {
        // No other tab to share with: this one follows its own stream.
        share.leading.set(true);
        spawn_local(follow_stream(share));
        return live;
    }
    if let Some(tabs) = &share.tabs {
        let listening = share.clone();
        tabs.listen(move |message| listening.receive(message));
    }
    join(share.clone(), name.clone());
    on_page_lifecycle(share, name);
    live
}

/// The tab's side of the sharing.
struct Share {
    app: AppCtx,
    live: LiveApprovals,
    /// When the page opened: batches that start waiting after it are news.
    opened_ms: f64,
    tabs: Option<Tabs>,
    /// This tab follows the stream for the others.
    leading: Cell<bool>,
    follower: RefCell<Follower>,
    /// The stream's abort, while this tab follows it.
    current: Rc<RefCell<Option<web_sys::AbortController>>>,
    lease: RefCell<Option<Lease>>,
}

impl Share {
    fn post(&self, message: &TabMessage) {
        if let Some(tabs) = &self.tabs {
            tabs.post(message);
        }
    }

    /// A message from another tab.
    fn receive(&self, message: TabMessage) {
        if self.leading.get() {
            if message == TabMessage::Hello {
                self.post_state();
            }
            return;
        }
        let mut changes = Vec::new();
        self.live.inbox.update(|inbox| {
            changes = self.follower.borrow_mut().receive(inbox, message);
        });
        for change in changes {
            self.changed(change);
        }
    }

    fn post_state(&self) {
        let (pending, last_id) = self.live.inbox.with_untracked(Inbox::snapshot);
        self.post(&TabMessage::State { pending, last_id });
    }

    /// What an applied event changed, acted on.
    fn changed(&self, change: Change) {
        let Change::Added(batch) = change else {
            return;
        };
        // A chat made in another tab or by another client joins the sidebar.
        let known = self.app.sessions.with_untracked(|sessions| {
            sessions
                .iter()
                .any(|session| session.id == batch.context_id)
        });
        if !known {
            self.app.reload_sessions();
        }
        // Only batches that start waiting while the tab is open are news.
        if js_sys::Date::parse(&batch.since) >= self.opened_ms - 1000.0 {
            notify::announce(self.live, self.app, &batch);
        }
    }

    /// Stops leading (the page is being frozen): the lock goes to another tab.
    fn step_down(&self) {
        if !self.leading.replace(false) {
            return;
        }
        if let Some(controller) = self.current.borrow().as_ref() {
            controller.abort();
        }
        if let Some(lease) = self.lease.borrow_mut().take() {
            lease.release();
        }
    }
}

/// Asks the leader for its inbox, and to lead once no other tab does.
fn join(share: Rc<Share>, name: String) {
    share.follower.borrow_mut().reset();
    share.post(&TabMessage::Hello);
    tabs::when_leading(&name, move |lease| {
        *share.lease.borrow_mut() = Some(lease);
        share.leading.set(true);
        if !share.follower.borrow().adopted() {
            // No leader answered: start from the server's own list of what waits.
            share.live.inbox.set(Inbox::default());
        }
        // Tabs that said hello before this one led are waiting for an answer.
        share.post_state();
        spawn_local(follow_stream(share));
    });
}

/// A page the browser freezes (a tab long in the background) lets another tab lead, and joins
/// again when it resumes.
fn on_page_lifecycle(share: Rc<Share>, name: String) {
    let Some(document) = web_sys::window().and_then(|window| window.document()) else {
        return;
    };
    let freezing = share.clone();
    let on_freeze = Closure::<dyn Fn()>::new(move || freezing.step_down());
    let on_resume = Closure::<dyn Fn()>::new(move || join(share.clone(), name.clone()));
    let _ = document.add_event_listener_with_callback("freeze", on_freeze.as_ref().unchecked_ref());
    let _ = document.add_event_listener_with_callback("resume", on_resume.as_ref().unchecked_ref());
    // The listeners live as long as the page.
    on_freeze.forget();
    on_resume.forget();
}

/// Follows the approvals stream while this tab leads, passing each event on to the other tabs.
async fn follow_stream(share: Rc<Share>) {
    while share.leading.get() {
        // A broken request aborts its own controller: each attempt needs a fresh one.
        let abort = Abort::new();
        *share.current.borrow_mut() = abort.controller();
        let after = share.live.inbox.with_untracked(|inbox| inbox.last_id);
        let result = api::approvals::follow(after, &abort, &mut |sent| {
            let mut change = Change::Nothing;
            share.live.inbox.update(|inbox| change = inbox.apply(&sent));
            share.post(&TabMessage::Event(sent));
            share.changed(change);
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
}
