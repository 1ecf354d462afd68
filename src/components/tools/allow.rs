//! The parts of a card about calls decided without asking and approvals that wait with a
//! deadline: the "Always allow…" panel (scope and what, shown before it takes effect), the
//! line naming the policy or rule that decided a call (with Revoke for a policy), and the
//! time left on a pending batch.

use std::time::Duration;

use leptos::prelude::*;
use leptos::task::spawn_local;
use serde_json::Value;
use signoff_protocol::hitl::DecidedBy;
use signoff_protocol::rest::PolicyScope;

use crate::api;
use crate::components::context::AppCtx;
use crate::components::lazy::{loaded, Slot};
use crate::state::policy::{describe, folder_of, new_policy, AllowWhat};

/// "Always allow…": the choice, how it reads, and Approve-and-allow. `on_allowed` approves the
/// call once the policy is stored; a refused policy approves nothing and says why.
#[component]
fn AlwaysAllow(
    agent: String,
    tool: String,
    args: Value,
    context_id: Option<String>,
    on_allowed: Callback<()>,
    on_close: Callback<()>,
    disabled: Signal<bool>,
) -> impl IntoView {
    let app = expect_context::<AppCtx>();
    let scope = RwSignal::new(PolicyScope::Chat);
    let what = RwSignal::new(AllowWhat::AnyArgs);
    let error = RwSignal::new(None::<String>);
    let saving = RwSignal::new(false);
    let folder = folder_of(&args);
    let summary = {
        let tool = tool.clone();
        move || describe(&tool, scope.get(), &what.get())
    };
    let confirm = {
        let (agent, tool, args) = (agent.clone(), tool.clone(), args.clone());
        move || {
            let Some(body) = new_policy(
                &agent,
                &tool,
                &args,
                context_id.as_deref(),
                scope.get_untracked(),
                &what.get_untracked(),
            ) else {
                error.set(Some(
                    "This chat has no id yet; choose this agent instead.".into(),
                ));
                return;
            };
            saving.set(true);
            spawn_local(async move {
                match api::policies::create(&body).await {
                    Ok(_) => {
                        app.reload_policies();
                        on_allowed.run(());
                    }
                    Err(err) => error.set(Some(format!("Not saved: {err}"))),
                }
                saving.set(false);
            });
        }
    };
    let radio = move |name: &'static str,
                      test_id: &'static str,
                      label: String,
                      checked: Signal<bool>,
                      pick: Callback<()>| {
        view! {
            <label class="allow-option">
                <input type="radio" name=name data-testid=test_id prop:checked=checked
                    on:change=move |_| pick.run(()) />
                {label}
            </label>
        }
    };
    view! {
        <div class="panel allow-panel" data-testid="allow-panel">
            <fieldset class="allow-group">
                <legend class="field-label">"Where"</legend>
                {radio("allow-scope", "allow-scope-chat", "This chat".into(),
                    Signal::derive(move || scope.get() == PolicyScope::Chat),
                    Callback::new(move |()| scope.set(PolicyScope::Chat)))}
                {radio("allow-scope", "allow-scope-agent", "This agent, for me".into(),
                    Signal::derive(move || scope.get() == PolicyScope::Agent),
                    Callback::new(move |()| scope.set(PolicyScope::Agent)))}
            </fieldset>
            <fieldset class="allow-group">
                <legend class="field-label">"What"</legend>
                {radio("allow-what", "allow-what-any", format!("{tool} with any arguments"),
                    Signal::derive(move || what.get() == AllowWhat::AnyArgs),
                    Callback::new(move |()| what.set(AllowWhat::AnyArgs)))}
                {radio("allow-what", "allow-what-exact", "Exactly these arguments".into(),
                    Signal::derive(move || what.get() == AllowWhat::ExactArgs),
                    Callback::new(move |()| what.set(AllowWhat::ExactArgs)))}
                {folder.map(|folder| {
                    let chosen = AllowWhat::Folder(folder.clone());
                    let picked = chosen.clone();
                    radio("allow-what", "allow-what-folder", format!("Anything under {folder}"),
                        Signal::derive(move || what.get() == chosen),
                        Callback::new(move |()| what.set(picked.clone())))
                })}
            </fieldset>
            <p class="hint" data-testid="allow-summary">{move || format!("From now on: {}.", summary())}</p>
            {move || error.get().map(|error| view! { <p class="field-error" role="alert" data-testid="allow-error">{error}</p> })}
            <div class="tool-actions">
                <button type="button" class="button primary" data-testid="allow-confirm"
                    disabled=move || disabled.get() || saving.get()
                    on:click=move |_| confirm()>
                    "Approve and always allow"
                </button>
                <button type="button" class="button" data-testid="allow-cancel"
                    on:click=move |_| on_close.run(())>
                    "Cancel"
                </button>
            </div>
        </div>
    }
}

/// Who decided a call without asking: "Allowed by your policy: … Revoke", or the rule.
#[component]
pub fn DecidedByLine(decided_by: DecidedBy) -> impl IntoView {
    let app = expect_context::<AppCtx>();
    match decided_by {
        DecidedBy::Policy { id, summary } => {
            let revoked = RwSignal::new(false);
            view! {
                <p class="decided-by" data-testid="decided-by">
                    {format!("Allowed by your policy: {summary}")}
                    " "
                    <Show when=move || !revoked.get() fallback=|| view! { <span class="hint">"(revoked)"</span> }>
                        <button type="button" class="link-button" data-testid="revoke-policy"
                            on:click={
                                let id = id.clone();
                                move |_| {
                                    revoked.set(true);
                                    app.revoke_policy(id.clone());
                                }
                            }>
                            "Revoke"
                        </button>
                    </Show>
                </p>
            }
            .into_any()
        }
        DecidedBy::Rule { rule, allowed } => {
            let verb = if allowed { "Allowed" } else { "Denied" };
            view! { <p class="decided-by" data-testid="decided-by">{format!("{verb} by rule {rule}")}</p> }
                .into_any()
        }
    }
}

/// The time left on a pending batch, ticking each second; `on_due` runs once when it is up.
#[component]
pub fn Countdown(expires_at: String, on_due: Callback<()>) -> impl IntoView {
    let deadline = js_sys::Date::parse(&expires_at);
    let now = RwSignal::new(js_sys::Date::now());
    let due = StoredValue::new(false);
    if let Ok(handle) = set_interval_with_handle(
        move || {
            let time = js_sys::Date::now();
            now.try_set(time);
            if time >= deadline && due.try_get_value() == Some(false) {
                due.try_set_value(true);
                on_due.run(());
            }
        },
        Duration::from_secs(1),
    ) {
        on_cleanup(move || handle.clear());
    }
    let text = move || {
        let left = ((deadline - now.get()) / 1000.0).ceil();
        if left.is_nan() {
            return "Expires at its deadline".to_owned();
        }
        if left <= 0.0 {
            return "Expiring…".to_owned();
        }
        let left = left as u64;
        format!("Expires in {}:{:02}", left / 60, left % 60)
    };
    view! { <span class="countdown" data-testid="countdown" role="timer">{text}</span> }
}

/// What [`AlwaysAllow`] needs, in one value: a split point's arguments.
#[derive(Clone)]
pub struct AllowPanel {
    pub agent: String,
    pub tool: String,
    pub args: Value,
    pub context_id: Option<String>,
    pub on_allowed: Callback<()>,
    pub on_close: Callback<()>,
    pub disabled: Signal<bool>,
}

thread_local! {
    static ALLOW: Slot<fn(AllowPanel) -> AnyView> = ArcRwSignal::new(None);
}

#[wasm_split_helpers::wasm_split(policies)]
fn always_allow_view() -> fn(AllowPanel) -> AnyView {
    |panel| {
        let AllowPanel {
            agent,
            tool,
            args,
            context_id,
            on_allowed,
            on_close,
            disabled,
        } = panel;
        view! {
            <AlwaysAllow
                agent=agent
                tool=tool
                args=args
                context_id=context_id
                on_allowed=on_allowed
                on_close=on_close
                disabled=disabled
            />
        }
        .into_any()
    }
}

/// The "Always allow" panel, from the chunk of the policies UI (loaded when first opened).
pub fn always_allow(panel: AllowPanel) -> impl IntoView {
    move || loaded(&ALLOW, always_allow_view).map(|make| make(panel.clone()))
}
