//! The page a share link opens (docs/rest.md, Share links) instead of the app: the chat's
//! transcript as it was when opened, with no composer, no decision buttons, no Stop and no
//! delete. The page comes from the chunk of the split point `shared` ([`shared_page`]).

use leptos::prelude::*;
use leptos::task::spawn_local;

use super::transcript::Transcript;
use crate::api::{self, ApiError};
use crate::components::context::{AppCtx, ChatKey, SharedView};
use crate::components::controller::ChatCtl;
use crate::components::lazy::{loaded, Loaded, Slot};
use crate::components::nav;
use crate::state::route::Route;

/// The `share` token of the page URL, if there is one.
pub fn page_token() -> Option<String> {
    let search = web_sys::window()?.location().search().ok()?;
    search.trim_start_matches('?').split('&').find_map(|pair| {
        let (name, value) = pair.split_once('=')?;
        (name == "share" && !value.is_empty())
            .then(|| js_sys::decode_uri_component(value).ok().map(String::from))
            .flatten()
    })
}

/// The page of a share link: the chat read with its token, nothing else loaded.
#[component]
pub fn SharedPage(token: String) -> impl IntoView {
    let app = expect_context::<AppCtx>();
    let Route::Chat {
        namespace,
        agent,
        session: Some(session),
    } = nav::current_route()
    else {
        return view! {
            <main class="shared-page">
                <div class="empty-state" role="alert">"This is not a link to a chat."</div>
            </main>
        }
        .into_any();
    };
    let title = format!("{namespace}/{agent}");
    let key = ChatKey {
        namespace,
        agent,
        session: Some(session.clone()),
        nonce: 0,
    };
    let ctl = ChatCtl::new(key, app);
    provide_context(ctl);
    provide_context(SharedView);
    // The chat may hold cards: their chunk comes while its messages load.
    crate::components::tools::prefetch_cards();
    spawn_local(async move {
        match api::shares::load_shared(&session, &token).await {
            Ok(tasks) => {
                let mut view = crate::state::replay(&tasks);
                // Nothing here decides: the cards show their state, never the buttons.
                view.pending = None;
                if !view.tools.is_empty() {
                    crate::components::tools::cards_ready().await;
                }
                ctl.view.set(view);
            }
            Err(ApiError::Http { status: 404, .. }) => ctl.missing.set(true),
            Err(err) => app.toast(format!("Could not load this chat: {err}")),
        }
        ctl.loading.set(false);
    });
    view! {
        <main class="shared-page" data-testid="shared-view">
            <section class="chat" aria-label="Shared chat">
                <header class="chat-header">
                    <h1 class="chat-title" data-testid="chat-title">{title}</h1>
                </header>
                <p class="shared-banner" role="note" data-testid="shared-banner">
                    <strong>"Read-only shared view"</strong>
                    " · You can read this chat as it was when you opened it; nothing can be sent, decided or stopped here."
                </p>
                <Show
                    when=move || !ctl.missing.get()
                    fallback=|| view! {
                        <div class="empty-state not-found" role="alert" data-testid="share-gone">
                            <h2>"Link not valid"</h2>
                            <p>"This share link was revoked, or its chat was deleted."</p>
                        </div>
                    }
                >
                    <Transcript />
                </Show>
            </section>
        </main>
    }
    .into_any()
}

thread_local! {
    static SHARED: Slot<fn(String) -> AnyView> = ArcRwSignal::new(None);
}

#[wasm_split_helpers::wasm_split(shared, fallible)]
fn shared_page_view() -> Loaded<fn(String) -> AnyView> {
    Ok(|token| view! { <SharedPage token=token /> }.into_any())
}

/// The read-only page a share link opens ([`SharedPage`]), from its chunk.
pub fn shared_page(token: String) -> impl IntoView {
    move || loaded(&SHARED, shared_page_view).map(|make| make(token.clone()))
}
