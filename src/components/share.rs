//! Read-only share links in the UI (docs/rest.md, Share links): the chat header's Share menu,
//! which makes a link, copies it, and lists and revokes the chat's links. The page such a link
//! opens is `chat::shared`. The menu comes from the chunk of the split point `share`
//! ([`share_menu`]).

use leptos::prelude::*;
use leptos::task::spawn_local;
use signoff_protocol::rest::Share;

use super::lazy::{loaded, Loaded, Slot};
use super::util::{copy_to_clipboard, local_time};
use crate::api;
use crate::components::controller::ChatCtl;

/// The header's Share button and its panel; only for a chat that exists on the server.
#[component]
pub fn ShareMenu() -> impl IntoView {
    let ctl = expect_context::<ChatCtl>();
    let app = ctl.app();
    let session = Memo::new(move |_| app.chat.with(|chat| chat.as_ref()?.session.clone()));
    let open = RwSignal::new(false);
    let links = RwSignal::new(Vec::<Share>::new());
    // The link just made: its id and URL (the token is shown only once).
    let made = RwSignal::new(None::<(String, String)>);
    let busy = RwSignal::new(false);
    let reload = move |session: String| {
        spawn_local(async move {
            match api::shares::list(&session).await {
                Ok(list) => links.set(list),
                Err(err) => app.toast(format!("Could not list the share links: {err}")),
            }
        });
    };
    let toggle = move |_| {
        let now_open = !open.get_untracked();
        open.set(now_open);
        if let (true, Some(session)) = (now_open, session.get_untracked()) {
            reload(session);
        }
    };
    let create = move |_| {
        // Busy ignores the click rather than disabling the button: a disabled button drops the
        // focus to the page, where Escape no longer reaches the panel.
        let Some(session) = session.get_untracked().filter(|_| !busy.get_untracked()) else {
            return;
        };
        busy.set(true);
        spawn_local(async move {
            match api::shares::create(&session).await {
                Ok(share) => {
                    copy_to_clipboard(&share.url);
                    made.set(Some((share.id, share.url)));
                    reload(session);
                }
                Err(err) => app.toast(format!("Could not make a share link: {err}")),
            }
            busy.set(false);
        });
    };
    let revoke = move |id: String| {
        let Some(session) = session.get_untracked() else {
            return;
        };
        spawn_local(async move {
            match api::shares::revoke(&session, &id).await {
                Ok(()) => {
                    if made.with_untracked(|made| made.as_ref().is_some_and(|made| made.0 == id)) {
                        made.set(None);
                    }
                    reload(session);
                }
                Err(err) => app.toast(format!("Could not revoke the link: {err}")),
            }
        });
    };
    view! {
        <Show when=move || session.with(Option::is_some)>
            <div
                class="share-menu"
                on:keydown=move |event: web_sys::KeyboardEvent| {
                    if event.key() == "Escape" {
                        open.set(false);
                    }
                }
            >
                <button
                    type="button"
                    class="button small"
                    aria-expanded=move || open.get().to_string()
                    aria-controls="share-panel"
                    data-testid="share-button"
                    on:click=toggle
                >
                    "Share"
                </button>
                <Show when=move || open.get()>
                    <div class="share-panel" id="share-panel" role="dialog" aria-label="Share this chat" data-testid="share-panel">
                        <p class="hint">"A read-only link: whoever has it can read this chat, and cannot send, decide or stop anything."</p>
                        <button type="button" class="button primary small" data-testid="share-create" aria-busy=move || busy.get().to_string() on:click=create>
                            "Create a link"
                        </button>
                        {move || made.get().map(|(_, url)| {
                            let copy = url.clone();
                            view! {
                                <div class="share-made">
                                    <label class="field-label" for="share-url">"Link (copied)"</label>
                                    <input id="share-url" class="code-input" readonly data-testid="share-url" prop:value=url />
                                    <button type="button" class="button small" on:click=move |_| copy_to_clipboard(&copy)>"Copy"</button>
                                </div>
                            }
                        })}
                        <ul class="policy-list" data-testid="share-links" aria-label="Live links">
                            {move || links.get().into_iter().map(|share| {
                                let id = share.id.clone();
                                view! {
                                    <li class="policy" data-testid="share-link">
                                        <span>{format!("Link made {}", local_time(&share.created_at))}</span>
                                        <button type="button" class="button small danger-outline" data-testid="share-revoke" on:click=move |_| revoke(id.clone())>
                                            "Revoke"
                                        </button>
                                    </li>
                                }
                            }).collect_view()}
                        </ul>
                        <Show when=move || links.with(Vec::is_empty)>
                            <p class="hint">"No live links."</p>
                        </Show>
                    </div>
                </Show>
            </div>
        </Show>
    }
}

thread_local! {
    static SHARE: Slot<fn() -> AnyView> = ArcRwSignal::new(None);
}

#[wasm_split_helpers::wasm_split(share, fallible)]
fn share_menu_view() -> Loaded<fn() -> AnyView> {
    Ok(|| view! { <ShareMenu /> }.into_any())
}

/// The chat header's Share menu ([`ShareMenu`]), from its chunk.
pub fn share_menu() -> impl IntoView {
    move || loaded(&SHARE, share_menu_view).map(|make| make())
}
