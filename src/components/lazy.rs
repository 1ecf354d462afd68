//! The machinery of the split points: parts of the UI a fresh chat does not need, each in a
//! wasm chunk of its own that the browser fetches the first time the part is shown
//! (`scripts/build-ui.sh` splits the wasm; docs/toolchain.md, UI chunks). Outside wasm (the
//! native tests) each is a plain call.
//!
//! Each split point sits beside the component it splits, as Leptos's lazy routes mark theirs
//! where they are: a `#[wasm_split_helpers::wasm_split(NAME, fallible)]` function, its [`Slot`]
//! and the public wrapper that reads it through [`loaded`]. Split functions that name the same
//! chunk share it. This module knows none of them, so it imports no component.
//!
//! A split function's body and everything only it reaches go into its chunk; what the chat uses
//! too stays in the main module. Each split function returns a plain function pointer (a view's
//! constructor, or the markdown renderer), kept in a signal that is no component's: the view is
//! built by the component's own reactive closure once the pointer is there, so a component
//! removed while its chunk loads builds nothing with its disposed signals.

use std::future::Future;
use std::thread::LocalKey;

use leptos::prelude::*;
use leptos::task::spawn_local;

/// A split point's result once its chunk has loaded; `Some(None)` while it loads.
pub(crate) type Slot<T> = ArcRwSignal<Option<Option<T>>>;

/// What a split function returns: every split point is `fallible`, since a chunk that cannot
/// be fetched would otherwise panic, and a panic aborts the whole app.
pub(crate) type Loaded<T> = Result<T, wasm_split_helpers::SplitLoaderError>;

/// What `load` returned, if its chunk has loaded; the first call starts the load. Reads the
/// slot, so the caller's reactive closure runs again when the chunk arrives.
pub(crate) fn loaded<T, F>(slot: &'static LocalKey<Slot<T>>, load: fn() -> F) -> Option<T>
where
    T: Copy + Send + Sync + 'static,
    F: Future<Output = Loaded<T>> + 'static,
{
    let slot = slot.with(Clone::clone);
    match slot.get() {
        Some(found) => found,
        None => {
            slot.set(Some(None));
            spawn_local(async move {
                let value = retrying(load).await;
                slot.set(Some(Some(value)));
            });
            None
        }
    }
}

/// `load`'s result once its chunk is there, loading it if no one has yet (the loader shares
/// one fetch between callers).
pub(crate) async fn ready<T, F>(slot: &'static LocalKey<Slot<T>>, load: fn() -> F) -> T
where
    T: Copy + Send + Sync + 'static,
    F: Future<Output = Loaded<T>> + 'static,
{
    let value = retrying(load).await;
    slot.with(Clone::clone).set(Some(Some(value)));
    value
}

/// Calls `load` until its chunk has been fetched: a chunk that cannot be fetched now (the
/// server restarting, the link down) is asked for again after a wait that doubles up to 8 s,
/// as the chat's stream reconnects, and the part shows once it comes.
async fn retrying<T, F>(load: fn() -> F) -> T
where
    F: Future<Output = Loaded<T>>,
{
    let mut wait_ms = 500;
    loop {
        match load().await {
            Ok(value) => return value,
            Err(_) => {
                super::util::wait_ms(wait_ms).await;
                wait_ms = (wait_ms * 2).min(8000);
            }
        }
    }
}

/// Runs `start` (a prefetch: `loaded` on a split point's slot) once the browser is idle, so
/// that the fetch never competes with what the first view needs; `requestIdleCallback`, or a
/// second's timer where the browser has none.
pub(crate) fn when_idle(start: impl FnOnce() + 'static) {
    let Some(window) = web_sys::window() else {
        return;
    };
    let callback = wasm_bindgen::closure::Closure::once_into_js(start);
    let function = wasm_bindgen::JsCast::unchecked_ref(&callback);
    if window.request_idle_callback(function).is_err() {
        let _ = window.set_timeout_with_callback_and_timeout_and_arguments_0(function, 1000);
    }
}
