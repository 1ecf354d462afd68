//! Notifications on a person's devices (Web Push): from the account menu, a dialog that
//! enrols this browser under a name and lists every enrolled device with Revoke. The browser
//! asks for permission only when Turn on is clicked (`api::push`). Drawn by the account chunk.

use leptos::html::Dialog;
use leptos::prelude::*;
use leptos::task::spawn_local;

use super::context::AppCtx;
use crate::api;

/// The menu's button, and the dialog while it is open.
#[component]
pub fn Devices() -> impl IntoView {
    let open = RwSignal::new(false);
    api::push::supported().then(|| {
        view! {
            <button type="button" class="button" data-testid="push-open" on:click=move |_| open.set(true)>
                "Notify this device…"
            </button>
            {move || open.get().then(|| view! { <DevicesDialog open=open /> })}
        }
    })
}

#[component]
fn DevicesDialog(open: RwSignal<bool>) -> impl IntoView {
    let app = expect_context::<AppCtx>();
    let node = NodeRef::<Dialog>::new();
    node.on_load(|dialog: web_sys::HtmlDialogElement| {
        let _ = dialog.show_modal();
    });
    let devices = RwSignal::new(Vec::<api::push::Device>::new());
    let name = RwSignal::new("This browser".to_owned());
    let busy = RwSignal::new(false);
    let reload = move || {
        spawn_local(async move {
            match api::push::devices().await {
                Ok(found) => devices.set(found),
                Err(err) => app.toast(format!("Could not list your devices: {err}")),
            }
        })
    };
    reload();
    let turn_on = move |_| {
        busy.set(true);
        spawn_local(async move {
            match api::push::enrol(name.get_untracked().trim()).await {
                Ok(_) => reload(),
                Err(err) => app.toast(format!("Could not turn notifications on: {err}")),
            }
            busy.set(false);
        });
    };
    let revoke = move |id: String| {
        spawn_local(async move {
            match api::push::revoke(&id).await {
                Ok(()) => reload(),
                Err(err) => app.toast(format!("Could not revoke the device: {err}")),
            }
        })
    };
    view! {
        <dialog node_ref=node class="switch-account" data-testid="push-dialog" aria-labelledby="devices-title"
            on:close=move |_| open.set(false)>
            <h2 id="devices-title">"Notifications on your devices"</h2>
            <p>"When an agent waits for your approval, this device shows a notification with \
                Approve and Reject. It says which agent waits, not what it asks, unless your \
                operator chose more."</p>
            <label class="field-label" for="device-name">"This device's name"</label>
            <div class="devices-add">
                <input id="device-name" data-testid="push-device-name" maxlength="80"
                    prop:value=move || name.get()
                    on:input=move |event| name.set(event_target_value(&event)) />
                <button type="button" class="button primary" data-testid="push-enrol"
                    disabled=move || busy.get() on:click=turn_on>"Turn on"</button>
            </div>
            <ul class="devices-list" data-testid="push-devices">
                {move || devices.get().into_iter().map(|device| {
                    let id = device.id.clone();
                    view! {
                        <li data-testid="push-device">
                            <span>{device.device}</span>
                            <button type="button" class="button" data-testid="push-revoke"
                                on:click=move |_| revoke(id.clone())>"Revoke"</button>
                        </li>
                    }
                }).collect_view()}
            </ul>
            <div class="switch-actions">
                <button type="button" class="button" data-testid="push-close"
                    on:click=move |_| open.set(false)>"Close"</button>
            </div>
        </dialog>
    }
}
