//! The theme switch: the system's light or dark, or one the person picks, kept in localStorage
//! and set as `data-theme` on the root element (the stylesheet's colours are `light-dark()`).

use leptos::prelude::*;

use crate::api::http::{store, stored};

const THEME_KEY: &str = "signoff.theme";

/// The three choices, in the order the switch steps through them.
const THEMES: [(&str, &str); 3] = [("system", "System"), ("light", "Light"), ("dark", "Dark")];

/// Sets `theme` on the root element; "system" leaves the choice to the system.
fn apply(theme: &str) {
    let Some(root) = web_sys::window()
        .and_then(|window| window.document())
        .and_then(|document| document.document_element())
    else {
        return;
    };
    let _ = match theme {
        "light" | "dark" => root.set_attribute("data-theme", theme),
        _ => root.remove_attribute("data-theme"),
    };
}

/// The person's pick, as stored (an unknown value reads as the system's).
fn remembered() -> &'static str {
    let kept = stored(THEME_KEY).unwrap_or_default();
    THEMES
        .iter()
        .map(|(key, _)| *key)
        .find(|key| *key == kept)
        .unwrap_or("system")
}

/// A button that says the theme and steps to the next one.
#[component]
pub fn ThemeSwitch() -> impl IntoView {
    let theme = RwSignal::new(remembered());
    apply(theme.get_untracked());
    let label = move || {
        let key = theme.get();
        THEMES
            .iter()
            .find(|(known, _)| *known == key)
            .map_or("System", |(_, label)| *label)
    };
    let next = move |_| {
        let now = theme.get_untracked();
        let at = THEMES.iter().position(|(key, _)| *key == now).unwrap_or(0);
        let (key, _) = THEMES[(at + 1) % THEMES.len()];
        store(THEME_KEY, key);
        apply(key);
        theme.set(key);
    };
    view! {
        <button type="button" class="button small theme-switch" data-testid="theme-switch"
            aria-label=move || format!("Theme: {} (change)", label())
            on:click=next>
            {move || format!("Theme: {}", label())}
        </button>
    }
}
