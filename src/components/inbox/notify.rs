//! Browser notifications of new approvals: off until the person turns them on (the permission
//! is asked only then), and raised only while the tab is hidden. A click brings the tab to the
//! waiting card.

use leptos::prelude::*;
use leptos::task::spawn_local;
use signoff_protocol::rest::PendingApproval;
use wasm_bindgen::closure::Closure;
use wasm_bindgen::JsCast;
use web_sys::{Notification, NotificationOptions, NotificationPermission};

use crate::api::http;
use crate::components::context::{AppCtx, LiveApprovals};
use crate::state::inbox::notification_text;
use crate::state::route::Route;

/// Where the person's choice is kept: `on` or `off`.
const CHOICE_KEY: &str = "signoff.notifications";

fn permission_granted() -> bool {
    Notification::permission() == NotificationPermission::Granted
}

/// Whether notifications were turned on in this browser (and are still allowed).
pub(super) fn remembered() -> bool {
    let on = http::stored(CHOICE_KEY).is_some_and(|choice| choice == "on");
    on && notifications_exist() && permission_granted()
}

/// Whether this browser has notifications at all.
fn notifications_exist() -> bool {
    web_sys::window().is_some_and(|window| {
        js_sys::Reflect::has(&window, &"Notification".into()).unwrap_or(false)
    })
}

fn remember(on: bool) {
    http::store(CHOICE_KEY, if on { "on" } else { "off" });
}

fn tab_hidden() -> bool {
    web_sys::window()
        .and_then(|window| window.document())
        .is_some_and(|document| document.hidden())
}

/// Raises a notification for `batch` if the person turned them on and the tab is hidden.
pub(super) fn announce(live: LiveApprovals, app: AppCtx, batch: &PendingApproval) {
    if !live.notify.get_untracked() || !tab_hidden() || !permission_granted() {
        return;
    }
    let (title, body) = notification_text(batch);
    let options = NotificationOptions::new();
    options.set_body(&body);
    options.set_tag(&batch.task_id);
    let Ok(notification) = Notification::new_with_options(&title, &options) else {
        return;
    };
    let Some((namespace, agent)) = batch.agent.split_once('/') else {
        return;
    };
    let route = Route::chat(namespace, agent, Some(&batch.context_id));
    let task_id = batch.task_id.clone();
    let shown = notification.clone();
    let on_click = Closure::<dyn Fn()>::new(move || {
        if let Some(window) = web_sys::window() {
            let _ = window.focus();
        }
        live.focus_task.set(Some(task_id.clone()));
        app.navigate(route.clone());
        shown.close();
    });
    notification.set_onclick(Some(on_click.as_ref().unchecked_ref()));
    // It lives as long as the notification may be clicked.
    on_click.forget();
}

/// The opt-in switch. Turning it on asks the browser's permission (only here); a refusal
/// leaves it off and says why.
#[component]
pub fn NotifySwitch() -> impl IntoView {
    let live = expect_context::<LiveApprovals>();
    let app = expect_context::<AppCtx>();
    let toggle = move |event: leptos::ev::Event| {
        let wanted = event_target_checked(&event);
        if !wanted {
            live.notify.set(false);
            remember(false);
            return;
        }
        if !notifications_exist() {
            live.notify.set(false);
            app.toast("This browser cannot show notifications.");
            return;
        }
        spawn_local(async move {
            let granted = match Notification::request_permission() {
                Ok(promise) => wasm_bindgen_futures::JsFuture::from(promise)
                    .await
                    .ok()
                    .and_then(|answer| answer.as_string())
                    .is_some_and(|answer| answer == "granted"),
                Err(_) => false,
            };
            live.notify.set(granted);
            remember(granted);
            if !granted {
                app.toast("Notifications are blocked for this site; allow them in the browser's settings.");
            }
        });
    };
    view! {
        <label class="notify-switch" data-testid="notify-switch">
            <input
                type="checkbox"
                data-testid="notify-toggle"
                prop:checked=move || live.notify.get()
                on:change=toggle
            />
            "Notify me when an agent waits"
        </label>
    }
}
