//! The account: who is signed in (the sidebar's account menu: name, email, groups, and Sign out
//! when the server signs people in with an OpenID provider), and a link's sign-in token
//! (`/#token=…`): taken at once on a first sign-in, and otherwise only after the person confirms
//! the switch in a modal dialog naming both accounts (the rules are `state::account`'s). Until
//! then the saved token stays and every request uses it. The menu and the dialog come from the
//! chunk of the split point `account`, fetched only when there is an account to show (never with
//! `--auth none`) or a switch to ask about. The menu offers this device's notifications
//! (`devices`: Web Push).

use leptos::html::Dialog;
use leptos::prelude::*;
use leptos::task::spawn_local;

use super::context::AppCtx;
use super::lazy::{loaded, Loaded, Slot};
use crate::api;
use crate::state::account::{self, Arrival, Outcome, Switch};

/// Takes the token out of the address, and saves it, leaves it, or asks the server whose it is
/// and puts the question to the person through `ask`.
pub fn take_address_token(app: AppCtx, ask: RwSignal<Option<Switch>>) {
    let Some(offered) = api::http::take_token_from_address() else {
        return;
    };
    match account::on_arrival(api::http::saved_token().as_deref(), &offered) {
        Arrival::Adopt => api::http::save_token(offered.trim()),
        Arrival::Ignore => {}
        Arrival::Check => spawn_local(async move {
            let offered = offered.trim().to_owned();
            let holders = match api::holder_of(None).await {
                Ok(saved) => api::holder_of(Some(&offered))
                    .await
                    .map(|offered| (saved, offered)),
                Err(err) => Err(err),
            };
            match holders.map(|(saved, holder)| account::decide(saved, holder, offered.clone())) {
                Ok(Outcome::Adopt) => api::http::save_token(&offered),
                Ok(Outcome::Keep { notice }) => app.toast(notice),
                Ok(Outcome::Confirm(switch)) => ask.set(Some(switch)),
                Err(err) => app.toast(format!(
                    "Could not check whose sign-in this link holds ({err}); you stay signed in \
                     as before."
                )),
            }
        }),
    }
}

/// Who is signed in, from `GET /api/me`; nothing until the server answers, nor with
/// `--auth none`.
#[component]
pub fn AccountMenu() -> impl IntoView {
    let me = RwSignal::new(None::<signoff_protocol::rest::Me>);
    spawn_local(async move {
        // With `--auth none` everyone is the one local user: nothing to show.
        if let Ok(found) = api::me().await {
            if found.auth.as_deref() != Some("none") {
                me.set(Some(found));
            }
        }
    });
    move || {
        me.get()
            .and_then(|me| loaded(&MENU, account_menu_view).map(|make| make(me)))
    }
}

/// The switch dialog, given the switch and the signal that asks it.
type MakeDialog = fn(Switch, RwSignal<Option<Switch>>) -> AnyView;

thread_local! {
    static MENU: Slot<fn(signoff_protocol::rest::Me) -> AnyView> = ArcRwSignal::new(None);
    static DIALOG: Slot<MakeDialog> = ArcRwSignal::new(None);
}

#[wasm_split_helpers::wasm_split(account, fallible)]
fn account_menu_view() -> Loaded<fn(signoff_protocol::rest::Me) -> AnyView> {
    Ok(|me| view! { <SignedIn me=me /> }.into_any())
}

/// The menu of the account `me`: name, email, groups, and Sign out with `--auth oidc`.
#[component]
fn SignedIn(me: signoff_protocol::rest::Me) -> impl IntoView {
    let app = expect_context::<AppCtx>();
    let sign_out = move |_| {
        spawn_local(async move {
            match api::sign_out().await {
                Ok(next) => {
                    if let Some(window) = web_sys::window() {
                        let _ = window.location().set_href(&next);
                    }
                }
                Err(err) => app.toast(format!("Could not sign out: {err}")),
            }
        });
    };
    let shown = me.name.clone().unwrap_or_else(|| me.user.clone());
    let groups = me.groups.join(", ");
    let signs_out = me.auth.as_deref() == Some("oidc");
    // With sign-in tokens, signing out forgets this browser's token; the page then asks for
    // one (another person's, to switch).
    let forgets_token = me.auth.as_deref() == Some("tokens");
    let forget_token = move |_| {
        api::http::save_token("");
        if let Some(window) = web_sys::window() {
            let _ = window.location().reload();
        }
    };
    view! {
        <details class="account" data-testid="account">
            <summary data-testid="account-name">{shown}</summary>
            <div class="account-menu">
                <p class="account-subject">{me.email.clone().unwrap_or(me.user.clone())}</p>
                {(!groups.is_empty()).then(|| view! {
                    <p class="account-groups" data-testid="account-groups">
                        "Groups: " {groups}
                    </p>
                })}
                <super::devices::Devices />
                {signs_out.then(|| view! {
                    <button type="button" class="button" data-testid="sign-out" on:click=sign_out>
                        "Sign out"
                    </button>
                })}
                {forgets_token.then(|| view! {
                    <button type="button" class="button" data-testid="sign-out" on:click=forget_token>
                        "Sign out or switch user"
                    </button>
                })}
            </div>
        </details>
    }
}

/// The page of a server that signs people in with tokens, for a browser without a valid one:
/// a box for the token (a link's `/#token=…` fills it by itself), instead of the errors of
/// every request it refused.
#[component]
pub fn TokenSignIn() -> impl IntoView {
    let token = RwSignal::new(String::new());
    let sign_in = move || {
        let typed = token.get_untracked();
        if typed.trim().is_empty() {
            return;
        }
        api::http::save_token(typed.trim());
        if let Some(window) = web_sys::window() {
            let _ = window.location().reload();
        }
    };
    view! {
        <form class="token-sign-in" data-testid="token-sign-in"
            on:submit=move |event| {
                event.prevent_default();
                sign_in();
            }>
            <h1>"Sign in"</h1>
            <p>"The server does not know this browser's sign-in. Paste the sign-in token you \
                were given, or open the sign-in link you were sent (or reload the page, where \
                you sign in through your organisation)."</p>
            <label class="field-label" for="sign-in-token">"Sign-in token"</label>
            <input id="sign-in-token" data-testid="sign-in-token" type="password" autocomplete="current-password"
                on:input=move |event| token.set(event_target_value(&event)) />
            <button type="submit" class="button primary" data-testid="sign-in-submit">"Sign in"</button>
        </form>
    }
}

/// The confirm, while there is a switch to ask about.
#[component]
pub fn SwitchAccount(ask: RwSignal<Option<Switch>>) -> impl IntoView {
    move || {
        ask.get()
            .and_then(|switch| loaded(&DIALOG, switch_dialog_view).map(|make| make(switch, ask)))
    }
}

#[wasm_split_helpers::wasm_split(account, fallible)]
fn switch_dialog_view() -> Loaded<MakeDialog> {
    Ok(|switch, ask| view! { <SwitchDialog switch=switch ask=ask /> }.into_any())
}

/// A modal dialog (the page behind is inert): the safe choice, staying, has the focus, and
/// Escape chooses it too. Switching saves the link's token and reloads, so that nothing the
/// page loaded as the old account stays on screen.
#[component]
fn SwitchDialog(switch: Switch, ask: RwSignal<Option<Switch>>) -> impl IntoView {
    let node = NodeRef::<Dialog>::new();
    node.on_load(|dialog: web_sys::HtmlDialogElement| {
        let _ = dialog.show_modal();
    });
    let token = switch.token.clone();
    let confirm = move |_| {
        api::http::save_token(&token);
        if let Some(window) = web_sys::window() {
            let _ = window.location().reload();
        }
    };
    let stay = move || ask.set(None);
    view! {
        <dialog
            node_ref=node
            class="switch-account"
            data-testid="switch-account"
            aria-labelledby="switch-account-title"
            aria-describedby="switch-account-text"
            on:cancel=move |event: web_sys::Event| {
                event.prevent_default();
                stay();
            }
        >
            <h2 id="switch-account-title">"Switch account?"</h2>
            <div id="switch-account-text">
                <p data-testid="switch-offer">{switch.offer()}</p>
                <p data-testid="switch-current">{switch.current()}</p>
            </div>
            <div class="switch-actions">
                <button type="button" class="button" data-testid="switch-confirm" on:click=confirm>
                    {switch.switch_label()}
                </button>
                <button type="button" class="button primary" autofocus data-testid="switch-stay" on:click=move |_| stay()>
                    {switch.stay_label()}
                </button>
            </div>
        </dialog>
    }
}
