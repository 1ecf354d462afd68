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

/// An RFC 3339 time from the server (`createdAt`, `pinnedAt`) in the person's locale.
pub fn local_time(rfc3339: &str) -> String {
    let date = js_sys::Date::new(&wasm_bindgen::JsValue::from_str(rfc3339));
    String::from(date.to_locale_string("default", &js_sys::Object::new()))
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

/// Whether any part of `element` shows in the window: a single-letter shortcut acts only on a
/// card or bar the person can see.
pub fn on_screen(element: &web_sys::Element) -> bool {
    let Some(height) = web_sys::window()
        .and_then(|window| window.inner_height().ok())
        .and_then(|height| height.as_f64())
    else {
        return false;
    };
    let rect = element.get_bounding_client_rect();
    rect.width() > 0.0 && rect.bottom() > 0.0 && rect.top() < height
}

/// Whether a key on a card or bar may act as its shortcut: no modifier, not typed in a text
/// field, and pressed while that card or bar (the handler's element) is on screen. The focus is
/// never moved onto a card for this: a person typing in the composer types text, not verdicts.
pub fn shortcut_applies(event: &web_sys::KeyboardEvent) -> bool {
    if typing_in_field(event) || event.ctrl_key() || event.meta_key() || event.alt_key() {
        return false;
    }
    event
        .current_target()
        .and_then(|target| target.dyn_into::<web_sys::Element>().ok())
        .is_some_and(|element| on_screen(&element))
}

/// Scrolls `element` into view when it is off screen, leaving the focus where it is: what
/// waits for the person shows, and their typing goes on where it was.
pub fn reveal(element: &web_sys::Element) {
    if !on_screen(element) {
        element.scroll_into_view_with_bool(false);
    }
}

/// Scrolls the area that holds `element` (the transcript, the approvals list) just enough to
/// show all of it, its top first when it is taller than the area: a panel the person opened
/// ("Why?", "Always allow…") shows where it opened, and the focus stays where it is.
pub fn reveal_whole(element: &web_sys::Element) {
    let Some(area) = element
        .closest(".transcript, .approvals-list")
        .ok()
        .flatten()
    else {
        reveal(element);
        return;
    };
    let (shown, rect) = (
        area.get_bounding_client_rect(),
        element.get_bounding_client_rect(),
    );
    let (above, below) = (shown.top() - rect.top(), rect.bottom() - shown.bottom());
    let by = if above > 0.0 {
        -above
    } else if below > 0.0 {
        // Down by what is hidden below, never so far that its top leaves the area.
        below.min(-above)
    } else {
        return;
    };
    area.set_scroll_top(area.scroll_top() + by.ceil() as i32);
}

/// A panel that comes into view whole when it opens ([`reveal_whole`]).
pub fn reveal_on_open() -> leptos::prelude::NodeRef<leptos::html::Div> {
    let node = leptos::prelude::NodeRef::new();
    node.on_load(|element: web_sys::HtmlDivElement| reveal_whole(&element));
    node
}

/// Gives the focus back to the message box when it fell to the page (the card or bar that
/// held it went away once decided): a keyboard user goes on from where they write.
pub fn refocus_composer_if_lost() {
    let Some(document) = web_sys::window().and_then(|window| window.document()) else {
        return;
    };
    let lost = document
        .active_element()
        .is_none_or(|active| active.tag_name().eq_ignore_ascii_case("body"));
    if lost {
        focus_composer();
    }
}

/// Moves the focus to the message box (the skip link's target), when the page shows one.
pub fn focus_composer() {
    if let Some(composer) = web_sys::window()
        .and_then(|window| window.document())
        .and_then(|document| document.get_element_by_id("composer-input"))
        .and_then(|element| element.dyn_into::<web_sys::HtmlElement>().ok())
    {
        let _ = composer.focus();
    }
}

/// A one-line description as it reads, its Markdown `code` spans set as code and no backtick
/// left showing (agent, skill and tool descriptions are written for Markdown).
pub fn inline_code(text: &str) -> leptos::prelude::AnyView {
    use leptos::prelude::*;
    let mut parts = Vec::new();
    for (index, part) in text.split('`').enumerate() {
        let part = part.to_owned();
        // Odd pieces sit between two backticks; a lone trailing backtick leaves the rest plain.
        let closed = index % 2 == 1 && text.matches('`').count() > index;
        parts.push(match closed {
            true => view! { <code>{part}</code> }.into_any(),
            false => part.into_any(),
        });
    }
    parts.collect_view().into_any()
}
