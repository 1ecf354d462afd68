//! Browser history: the current route as a signal, moved with `pushState` and `popstate`.

use wasm_bindgen::closure::Closure;
use wasm_bindgen::JsCast;

use crate::state::route::Route;

fn current_path() -> String {
    web_sys::window()
        .and_then(|window| window.location().pathname().ok())
        .unwrap_or_else(|| "/".to_owned())
}

/// Writes `route` into the address bar; `replace` keeps the history length.
pub fn write_url(route: &Route, replace: bool) {
    let Some(history) = web_sys::window().and_then(|window| window.history().ok()) else {
        return;
    };
    let path = route.path();
    if path == current_path() {
        return;
    }
    let _ = if replace {
        history.replace_state_with_url(&wasm_bindgen::JsValue::NULL, "", Some(&path))
    } else {
        history.push_state_with_url(&wasm_bindgen::JsValue::NULL, "", Some(&path))
    };
}

/// The route the address bar shows now.
pub fn current_route() -> Route {
    Route::parse(&current_path())
}

/// Calls `on_pop` with the new route on back and forward.
pub fn on_popstate(on_pop: impl Fn(Route) + 'static) {
    if let Some(window) = web_sys::window() {
        let on_pop = Closure::<dyn Fn()>::new(move || on_pop(current_route()));
        let _ =
            window.add_event_listener_with_callback("popstate", on_pop.as_ref().unchecked_ref());
        // The listener lives as long as the page.
        on_pop.forget();
    }
}
