//! The sidebar's link to the Approvals page, with the live count of waiting batches.

use leptos::prelude::*;

use crate::components::context::{AppCtx, LiveApprovals};
use crate::state::route::Route;

#[component]
pub fn ApprovalsLink() -> impl IntoView {
    let app = expect_context::<AppCtx>();
    let live = expect_context::<LiveApprovals>();
    let count = Memo::new(move |_| {
        let me = live.me.get();
        live.inbox.with(|inbox| inbox.count_for(me.as_deref()))
    });
    let here = Memo::new(move |_| app.route.with(|route| *route == Route::Approvals));
    let open = move |event: leptos::ev::MouseEvent| {
        event.prevent_default();
        app.navigate(Route::Approvals);
    };
    view! {
        <a
            class="approvals-link"
            class:active=move || here.get()
            href="/approvals"
            data-testid="approvals-link"
            aria-label=move || format!("Approvals: {} waiting", count.get())
            on:click=open
        >
            <span>"Approvals"</span>
            <Show when=move || { count.get() > 0 }>
                <span class="count-badge" data-testid="approvals-badge">{move || count.get()}</span>
            </Show>
        </a>
    }
}
