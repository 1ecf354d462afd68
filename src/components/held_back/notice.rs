//! The sidebar's notice of the tools held back, and its Review (in the chunk of the split point
//! `held_back`, with `review`).

use leptos::prelude::*;

use super::review::ReviewDialog;
use crate::components::context::AppCtx;
use crate::state::held_back::notice;

/// How many tools are held back and why, with Review; the review dialog while `open`.
#[component]
pub fn Notice(open: RwSignal<bool>) -> impl IntoView {
    let app = expect_context::<AppCtx>();
    view! {
        {move || notice(app.held_back.get()).map(|text| view! {
            <div class="held-back" role="status" data-testid="held-back-notice">
                <span>{text}</span>
                <button type="button" class="button small" data-testid="held-back-review"
                    aria-haspopup="dialog" on:click=move |_| open.set(true)>
                    "Review"
                </button>
            </div>
        })}
        {move || open.get().then(|| view! { <ReviewDialog open=open /> })}
    }
}
