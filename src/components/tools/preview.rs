//! A held call's preview on its card (docs/wire.md, Previews): the diff of a `write_file`, a
//! new file's size, what a `delete_file` removes; and after Edit, what the edited call will
//! change. Added and removed lines keep their `+`/`-` signs and are counted in words, so the
//! change is never told by colour alone. The wording is `state::preview`'s.

use leptos::prelude::*;
use signoff_protocol::hitl::Preview;

use crate::state::preview::preview_view;

/// One preview, titled `title`.
#[component]
pub fn CallPreview(preview: Preview, title: &'static str, testid: &'static str) -> impl IntoView {
    let shown = preview_view(&preview);
    let lines = (!shown.lines.is_empty()).then(|| {
        let rows = shown
            .lines
            .into_iter()
            .map(|(kind, line)| {
                view! { <span class=format!("diff-line diff-{}", kind.slug())>{line}"\n"</span> }
            })
            .collect_view();
        view! { <pre class="diff" data-testid="preview-diff" tabindex="0">{rows}</pre> }
    });
    view! {
        <div class="tool-section preview" data-testid=testid>
            <div class="section-title">{title}</div>
            <p class="preview-note" data-testid="preview-summary">{shown.summary}</p>
            {lines}
        </div>
    }
}
