//! The approvals stream shared by the tabs of a browser (docs/rest.md, Approvals stream; see
//! `state::tabs`): the leading tab follows it (resuming after the last event it applied, so
//! nothing is lost or counted twice) and passes each event on; the others adopt its inbox and
//! apply what it passes on. In a chunk of its own (the split point `stream`, in `inbox`),
//! started once the first view is drawn.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use leptos::prelude::*;
use leptos::task::spawn_local;
use wasm_bindgen::closure::Closure;
use wasm_bindgen::JsCast;

use super::notify;
use super::tabs::{self, Lease, Tabs};
use crate::api::{self, Abort, ApiError};
use crate::components::context::{AppCtx, LiveApprovals};
use crate::components::util::wait_ms;
use crate::state::inbox::{Change, Inbox};
use crate::state::tabs::{Follower, TabMessage};

/// How long to wait before following again after the stream broke.
const RECONNECT_MS: i32 = 1000;

/// Follows the approvals stream into `live`, sharing it with the browser's other tabs; batches
/// that start waiting after `opened_ms` (when the page opened) are news. Also asks how many
/// tools are held back (an operator's other inbox), here and whenever the stream is followed
/// again (`follow_stream`): from this chunk, at idle, so that a fresh chat's first download
/// carries none of it.
pub(crate) fn follow(app: AppCtx, live: LiveApprovals, opened_ms: f64) {
    app.reload_held_back();
    let name = format!("signoff.approvals.{}", api::caller_key());
    let share = Rc::new(Share {
        app,
        live,
        opened_ms,
        tabs: Tabs::open(&name),
        leading: Cell::new(false),
        follower: RefCell::new(Follower::default()),
        current: RefCell::new(None),
        lease: RefCell::new(None),
        asking: Cell::new(false),
        term: Cell::new(0),
        lock_name: name,
    });
    on_page_lifecycle(share.clone());
    match &share.tabs {
        Some(tabs) => {
            let listening = share.clone();
            tabs.listen(move |message| listening.receive(message));
            join(share);
        }
        None => {
            // No other tab to share with: this one follows its own stream.
            share.leading.set(true);
            spawn_local(follow_stream(share, 0));
        }
    }
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
    current: RefCell<Option<web_sys::AbortController>>,
    lease: RefCell<Option<Lease>>,
    /// This tab asked to lead and waits for the lock.
    asking: Cell<bool>,
    /// Counts the times this tab started leading: a loop from an earlier time ends.
    term: Cell<u32>,
    lock_name: String,
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

    /// The page is hidden for good (a reload, a navigation away, kept for Back in the browser's
    /// back/forward cache) or frozen (long in the background): its stream is closed and its lock
    /// goes to another tab. A page kept for Back would otherwise hold the stream's connection (a
    /// browser allows six per server: after five quick reloads the next page waited a minute for
    /// one) and the lock (no other tab would follow the stream).
    fn step_down(&self) {
        if let Some(controller) = self.current.borrow().as_ref() {
            controller.abort();
        }
        if self.tabs.is_none() {
            // Alone, it follows again when it is back: the loop reconnects.
            return;
        }
        self.leading.set(false);
        if let Some(lease) = self.lease.borrow_mut().take() {
            lease.release();
        }
    }
}

/// Asks the leader for its inbox, and to lead once no other tab does.
fn join(share: Rc<Share>) {
    if share.leading.get() {
        return;
    }
    share.follower.borrow_mut().reset();
    share.post(&TabMessage::Hello);
    if share.asking.replace(true) {
        return;
    }
    let name = share.lock_name.clone();
    tabs::when_leading(&name, move |lease| {
        share.asking.set(false);
        *share.lease.borrow_mut() = Some(lease);
        share.leading.set(true);
        share.term.set(share.term.get() + 1);
        // Tabs that said hello before this one led are waiting for an answer.
        share.post_state();
        // Whatever this inbox holds, it applied the stream in order up to its last id (or it
        // is empty): following on after that id loses nothing.
        let term = share.term.get();
        spawn_local(follow_stream(share, term));
    });
}

/// A page hidden for good or frozen steps down; brought back from the back/forward cache or
/// resumed, it joins again (alone, it just follows again).
fn on_page_lifecycle(share: Rc<Share>) {
    let Some(window) = web_sys::window() else {
        return;
    };
    let hiding = share.clone();
    let step_down = Closure::<dyn Fn()>::new(move || hiding.step_down());
    let back = Closure::<dyn Fn(web_sys::Event)>::new(move |event: web_sys::Event| {
        let from_cache = event.type_() != "pageshow"
            || js_sys::Reflect::get(&event, &"persisted".into()).is_ok_and(|p| p.is_truthy());
        if from_cache && share.tabs.is_some() {
            join(share.clone());
        }
    });
    let _ = window.add_event_listener_with_callback("pagehide", step_down.as_ref().unchecked_ref());
    let _ = window.add_event_listener_with_callback("pageshow", back.as_ref().unchecked_ref());
    if let Some(document) = window.document() {
        let _ =
            document.add_event_listener_with_callback("freeze", step_down.as_ref().unchecked_ref());
        let _ = document.add_event_listener_with_callback("resume", back.as_ref().unchecked_ref());
    }
    // The listeners live as long as the page.
    step_down.forget();
    back.forget();
}

/// Follows the approvals stream while this tab leads, passing each event on to the other tabs.
async fn follow_stream(share: Rc<Share>, term: u32) {
    let mut again = false;
    while share.leading.get() && share.term.get() == term {
        // A stream that ended is most often a server that restarted, and a start is when it
        // finds the tools whose server now describes them otherwise: they are asked again
        // beside each attempt to follow again, so that the attempt that reaches it asks too.
        if std::mem::replace(&mut again, true) {
            share.app.reload_held_back();
        }
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
            Err(err) => {
                web_sys::console::warn_1(
                    &format!("the approvals stream broke ({err}); following again").into(),
                );
                if matches!(err, ApiError::Network(_)) {
                    share.live.server_lost.set(true);
                }
            }
        }
        wait_ms(RECONNECT_MS).await;
        // Any answer, even a refusal, says the server is back.
        if share.live.server_lost.get_untracked()
            && !matches!(api::me().await, Err(ApiError::Network(_)))
        {
            share.live.server_lost.set(false);
        }
    }
}
