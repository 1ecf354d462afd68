//! Signoff's browser chat: views over a pure reducer, with one module that talks to the server.

use leptos::prelude::*;

/// The root component.
#[component]
pub fn App() -> impl IntoView {
    view! { <h1>"Signoff"</h1> }
}
