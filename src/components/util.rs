//! Small browser helpers the views share: ids, clocks, clipboard, timers.

use wasm_bindgen::closure::Closure;
use wasm_bindgen::JsCast;

/// A fresh random id for a message.
pub fn new_id() -> String {
    let part = || {
        format!(
            "{:08x}",
            (js_sys::Math::random() * f64::from(u32::MAX)) as u32
        )
    };
    format!("msg-{}{}-{}", part(), part(), part())
}

pub fn now_ms() -> i64 {
    js_sys::Date::now() as i64
}

/// The local zone's offset from UTC in minutes, east positive.
pub fn utc_offset_minutes() -> i64 {
    -(js_sys::Date::new_0().get_timezone_offset() as i64)
}

pub fn copy_to_clipboard(text: &str) {
    if let Some(window) = web_sys::window() {
        let _ = window.navigator().clipboard().write_text(text);
    }
}

/// Runs `f` once after `ms` milliseconds.
pub fn after(ms: i32, f: impl FnOnce() + 'static) {
    let Some(window) = web_sys::window() else {
        return;
    };
    let callback = Closure::once_into_js(f);
    let _ =
        window.set_timeout_with_callback_and_timeout_and_arguments_0(callback.unchecked_ref(), ms);
}

/// Resolves after `ms` milliseconds (a timer, for looking again later).
pub async fn wait_ms(ms: i32) {
    let promise = js_sys::Promise::new(&mut |resolve, _| {
        if let Some(window) = web_sys::window() {
            let _ = window.set_timeout_with_callback_and_timeout_and_arguments_0(&resolve, ms);
        }
    });
    let _ = wasm_bindgen_futures::JsFuture::from(promise).await;
}

/// Whether a keyboard event comes from a text field (shortcuts must not fire there).
pub fn typing_in_field(event: &web_sys::KeyboardEvent) -> bool {
    event
        .target()
        .and_then(|target| target.dyn_into::<web_sys::Element>().ok())
        .is_some_and(|element| {
            let tag = element.tag_name().to_ascii_lowercase();
            tag == "textarea" || tag == "input" || tag == "select"
        })
}
