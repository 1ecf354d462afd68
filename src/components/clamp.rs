//! Long text folded behind "Show more". The whole text is always rendered (so the markdown
//! stays valid, and find-in-page, copy and screen readers get all of it); a long one is clamped
//! to a fixed height by CSS until the person asks for the rest.

use leptos::prelude::*;

/// Past this many characters…
const LONG_CHARS: usize = 2000;
/// …or lines, a text is folded.
const LONG_LINES: usize = 25;

/// Whether `text` is long enough to fold.
pub fn is_long(text: &str) -> bool {
    text.chars().nth(LONG_CHARS).is_some() || text.lines().nth(LONG_LINES).is_some()
}

/// The "Show more" / "Show less" button for a text that `long` says to fold; `open` is whether
/// the whole text shows (the caller puts `clamped` on the text's element while it does not).
#[component]
pub fn ShowMore(long: Signal<bool>, open: RwSignal<bool>) -> impl IntoView {
    view! {
        <Show when=move || long.get()>
            <button
                type="button"
                class="button small show-more"
                aria-expanded=move || open.get().to_string()
                data-testid="show-more"
                on:click=move |_| open.update(|open| *open = !*open)
            >
                {move || if open.get() { "Show less" } else { "Show more" }}
            </button>
        </Show>
    }
}

#[cfg(test)]
mod tests {
    use super::is_long;

    #[test]
    fn long_means_many_characters_or_many_lines() {
        assert!(!is_long("short"));
        assert!(!is_long(&"é".repeat(1500))); // 3000 bytes, 1500 characters
        assert!(is_long(&"a".repeat(2001)));
        assert!(!is_long(&"line\n".repeat(25)));
        assert!(is_long(&"line\n".repeat(27)));
    }
}
