//! The browser side of sharing one approvals stream between the tabs of this browser
//! (`state::tabs` says what they say): the Web Locks API picks the tab that leads, a
//! `BroadcastChannel` carries messages between the tabs. When the leading tab closes or is
//! frozen, its lock passes to another tab, which follows on from the last event. Where Web Locks
//! do not exist (a page served neither from localhost nor over HTTPS), every tab leads.

use js_sys::{Function, Promise, Reflect};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{BroadcastChannel, MessageEvent};

use crate::state::tabs::TabMessage;

#[wasm_bindgen]
extern "C" {
    /// `navigator.locks` (web-sys binds it only behind an unstable flag).
    type LockManager;
    #[wasm_bindgen(method)]
    fn request(this: &LockManager, name: &str, granted: &Function) -> Promise;
}

fn lock_manager() -> Option<LockManager> {
    let navigator = web_sys::window()?.navigator();
    let locks = Reflect::get(&navigator, &"locks".into()).ok()?;
    if locks.is_undefined() || locks.is_null() {
        return None;
    }
    Some(locks.unchecked_into())
}

/// The channel to the other tabs of this browser with the same name.
pub struct Tabs {
    channel: BroadcastChannel,
}

impl Tabs {
    /// The channel `name`, or `None` where the browser has no channels between tabs (or no
    /// Web Locks to pick a leader with: then every tab follows its own stream).
    pub fn open(name: &str) -> Option<Tabs> {
        lock_manager()?;
        let channel = BroadcastChannel::new(name).ok()?;
        Some(Tabs { channel })
    }

    /// Sends `message` to every other tab on the channel.
    pub fn post(&self, message: &TabMessage) {
        let _ = self
            .channel
            .post_message(&JsValue::from_str(&message.encode()));
    }

    /// Hands every message from the other tabs to `on_message`, for as long as the page lives.
    pub fn listen(&self, on_message: impl Fn(TabMessage) + 'static) {
        let listener = Closure::<dyn Fn(MessageEvent)>::new(move |event: MessageEvent| {
            let Some(text) = event.data().as_string() else {
                return;
            };
            match TabMessage::decode(&text) {
                Ok(message) => on_message(message),
                Err(err) => web_sys::console::warn_1(&err.into()),
            }
        });
        self.channel
            .set_onmessage(Some(listener.as_ref().unchecked_ref()));
        // The listener lives as long as the page.
        listener.forget();
    }
}

/// This tab's hold on the lock: it leads until it lets go (or the page goes away).
pub struct Lease {
    let_go: Function,
}

impl Lease {
    /// Lets another tab lead.
    pub fn release(self) {
        let _ = self.let_go.call0(&JsValue::NULL);
    }
}

/// Asks for the lock `name`: `lead` runs once this tab holds it, at once if no other tab does,
/// or when the tab that does closes or lets go.
pub fn when_leading(name: &str, lead: impl FnOnce(Lease) + 'static) {
    let Some(locks) = lock_manager() else {
        return;
    };
    let granted = Closure::once_into_js(move |_lock: JsValue| -> Promise {
        // The lock is held until the promise returned here settles: when the lease lets go.
        let mut let_go = None;
        let held = Promise::new(&mut |resolve, _reject| let_go = Some(resolve));
        if let Some(let_go) = let_go {
            lead(Lease { let_go });
        }
        held
    });
    let _ = locks.request(name, granted.unchecked_ref());
}
