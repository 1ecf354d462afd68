//! Web Push (docs/rest.md, Web Push): this browser's enrolment, and the person's devices.
//! Enrolling registers the service worker (`/sw.js`), subscribes with the server's VAPID key
//! (`GET /api/push/vapid`) and sends the subscription with the device's name; with a sign-in
//! token the worker is handed it, as it cannot read the page's storage. Asked only inside a
//! click: the browser asks the person for permission then.

use js_sys::{Object, Reflect, JSON};
use serde_json::{json, Value};
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use web_sys::{Notification, PushSubscriptionOptionsInit, ServiceWorkerRegistration};

use super::{http, ApiError};
use crate::state::route::encode;

const DEVICES: &str = "/api/push/subscriptions";

/// A browser API that failed, in words.
fn browser(what: &str, err: JsValue) -> ApiError {
    let said = Reflect::get(&err, &"message".into())
        .ok()
        .and_then(|message| message.as_string())
        .unwrap_or_default();
    ApiError::Network(format!("{what}: {said}"))
}

async fn wait(what: &str, promise: Result<js_sys::Promise, JsValue>) -> Result<JsValue, ApiError> {
    let promise = promise.map_err(|err| browser(what, err))?;
    JsFuture::from(promise)
        .await
        .map_err(|err| browser(what, err))
}

/// Whether this browser can take pushes (a service worker and the Push API).
pub fn supported() -> bool {
    web_sys::window().is_some_and(|window| {
        let navigator = window.navigator();
        Reflect::has(navigator.as_ref(), &"serviceWorker".into()).unwrap_or(false)
            && Reflect::has(window.as_ref(), &"PushManager".into()).unwrap_or(false)
    })
}

/// An enrolled device as the dialog lists it. Read from the JSON by hand (the protocol's
/// `Device`): a derived decoder costs the account chunk more than the whole dialog.
#[derive(Debug, Clone, PartialEq)]
pub struct Device {
    pub id: String,
    pub device: String,
}

/// Enrols this browser as `device`: permission asked, the worker registered, subscribed, and
/// the subscription sent (`NewDevice`, the browser's `toJSON()` as it is).
pub async fn enrol(device: &str) -> Result<(), ApiError> {
    let granted = wait("permission", Notification::request_permission()).await?;
    if granted.as_string().as_deref() != Some("granted") {
        return Err(ApiError::Network(
            "notifications are blocked for this site; allow them in the browser's settings".into(),
        ));
    }
    let window = web_sys::window().ok_or_else(|| ApiError::Network("no window".into()))?;
    let workers = window.navigator().service_worker();
    wait("the service worker", Ok(workers.register("/sw.js"))).await?;
    let ready = wait("the service worker", workers.ready()).await?;
    let registration: ServiceWorkerRegistration = ready.unchecked_into();
    let key = http::get_json("/api/push/vapid").await?;
    let key = key["public_key"].as_str().unwrap_or_default();
    let options = PushSubscriptionOptionsInit::new();
    options.set_user_visible_only(true);
    options.set_application_server_key(&JsValue::from_str(key));
    let manager = registration
        .push_manager()
        .map_err(|err| browser("push", err))?;
    let subscription = wait("subscribing", manager.subscribe_with_options(&options)).await?;
    let text: String = JSON::stringify(&subscription)
        .map_err(|err| browser("subscribing", err))?
        .into();
    let subscription: Value =
        serde_json::from_str(&text).map_err(|err| ApiError::Decode(err.to_string()))?;
    if let (Some(token), Some(worker)) = (http::saved_token(), registration.active()) {
        let message = Object::new();
        let _ = Reflect::set(&message, &"token".into(), &token.into());
        let _ = worker.post_message(&message);
    }
    let body = json!({"device": device, "subscription": subscription});
    http::post_ignoring_answer(DEVICES, body.to_string()).await
}

/// `GET /api/push/subscriptions`: the person's devices.
pub async fn devices() -> Result<Vec<Device>, ApiError> {
    let list = http::get_json(DEVICES).await?;
    let text = |device: &Value, key: &str| device[key].as_str().unwrap_or_default().to_owned();
    let mut devices = Vec::new();
    for device in list["devices"].as_array().into_iter().flatten() {
        devices.push(Device {
            id: text(device, "id"),
            device: text(device, "device"),
        });
    }
    Ok(devices)
}

/// `DELETE /api/push/subscriptions/{id}`.
pub async fn revoke(id: &str) -> Result<(), ApiError> {
    http::delete(&format!("{DEVICES}/{}", encode(id))).await
}
