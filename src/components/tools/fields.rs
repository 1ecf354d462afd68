//! What the cards' and the batch bar's boxes share: the pretty JSON they show and edit, and the
//! focus a box takes when it opens. A leaf, so that the cards and the bar need nothing from
//! `tools` itself.

use leptos::prelude::*;

/// Pretty JSON for the Arguments and Result sections and the arguments editor, with invisible
/// characters written as escapes, so what a person approves is what runs (`state::hidden`).
pub(super) fn pretty(value: &serde_json::Value) -> String {
    crate::state::hidden::reveal(
        &serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string()),
    )
}

/// A box that takes the focus when it opens (scrolled into view): the reason or the arguments
/// a person opened it to type.
pub(super) fn focus_on_open() -> NodeRef<leptos::html::Textarea> {
    let node = NodeRef::new();
    node.on_load(|element: web_sys::HtmlTextAreaElement| {
        let _ = element.focus();
    });
    node
}
