//! Error toasts, newest first (on top, where a stack too tall to show whole starts), each
//! closable and gone after a few seconds.

use leptos::prelude::*;

use super::context::AppCtx;

#[component]
pub fn Toasts() -> impl IntoView {
    let ctx = expect_context::<AppCtx>();
    view! {
        <div class="toasts" aria-live="assertive">
            <For each=move || ctx.toasts.get().into_iter().rev() key=|toast| toast.id let:toast>
                <div class="toast" role="alert" data-testid="toast">
                    <span>{toast.text.clone()}</span>
                    <button type="button" class="icon-button" aria-label="Dismiss"
                        on:click=move |_| ctx.dismiss(toast.id)>
                        "✕"
                    </button>
                </div>
            </For>
        </div>
    }
}
