//! The parts of a card about calls decided without asking and approvals that wait with a
//! deadline: the "Always allow…" panel (where, what and for how long, shown before it takes
//! effect), the line naming the policy or rule that decided a call (with Revoke for a policy),
//! and the time left on a pending batch; and the Policies panel's rows, with what is left of
//! each grant.

use std::time::Duration;

use leptos::prelude::*;
use leptos::task::spawn_local;
use serde_json::Value;
use signoff_protocol::hitl::DecidedBy;
use signoff_protocol::rest::{Policy, PolicyScope};

use crate::api;
use crate::components::context::AppCtx;
use crate::components::lazy::{loaded, Loaded, Slot};
use crate::components::util::reveal_on_open;
use crate::state::policy::{
    base_summary, describe, folder_of, in_force, left_of, new_policy, parse_uses, AllowWhat,
    Lasting,
};

/// "Always allow…": the choice, how it reads, and Approve-and-allow. `on_allowed` approves the
/// call once the policy is stored; a refused policy approves nothing and says why. It comes
/// into view as it opens (below the fold otherwise), leaving the focus where it was.
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
    // How long: until revoked, an hour, or the number of calls typed (kept as typed, checked
    // when confirmed).
    let lasting = RwSignal::new(Lasting::UntilRevoked);
    let counted = RwSignal::new(false);
    let uses_text = RwSignal::new("3".to_owned());
    let chosen_lasting = move || match (counted.get(), parse_uses(&uses_text.get())) {
        (true, Ok(uses)) => Ok(Lasting::Uses(uses)),
        (true, Err(error)) => Err(error),
        (false, _) => Ok(lasting.get()),
    };
    let error = RwSignal::new(None::<String>);
    let saving = RwSignal::new(false);
    let folder = folder_of(&args);
    let summary = {
        let tool = tool.clone();
        move || match chosen_lasting() {
            Ok(lasting) => format!(
                "From now on: {}.",
                describe(&tool, scope.get(), &what.get(), lasting)
            ),
            Err(error) => error,
        }
    };
    let confirm = {
        let (agent, tool, args) = (agent.clone(), tool.clone(), args.clone());
        move || {
            let lasting = match chosen_lasting() {
                Ok(lasting) => lasting,
                Err(problem) => {
                    error.set(Some(problem));
                    return;
                }
            };
            let Some(body) = new_policy(
                &agent,
                &tool,
                &args,
                context_id.as_deref(),
                scope.get_untracked(),
                &what.get_untracked(),
                lasting,
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
    view! {
        <div class="panel allow-panel" data-testid="allow-panel" node_ref=reveal_on_open()>
            <fieldset class="allow-group">
                <legend class="field-label">"Where"</legend>
                {allow_radio("allow-scope", "allow-scope-chat", "This chat".into(),
                    Signal::derive(move || scope.get() == PolicyScope::Chat),
                    Callback::new(move |()| scope.set(PolicyScope::Chat)))}
                {allow_radio("allow-scope", "allow-scope-agent", "This agent, for me".into(),
                    Signal::derive(move || scope.get() == PolicyScope::Agent),
                    Callback::new(move |()| scope.set(PolicyScope::Agent)))}
            </fieldset>
            <fieldset class="allow-group">
                <legend class="field-label">"What"</legend>
                {allow_radio("allow-what", "allow-what-any", format!("{tool} with any arguments"),
                    Signal::derive(move || what.get() == AllowWhat::AnyArgs),
                    Callback::new(move |()| what.set(AllowWhat::AnyArgs)))}
                {allow_radio("allow-what", "allow-what-exact", "Exactly these arguments".into(),
                    Signal::derive(move || what.get() == AllowWhat::ExactArgs),
                    Callback::new(move |()| what.set(AllowWhat::ExactArgs)))}
                {folder.map(|folder| {
                    let chosen = AllowWhat::Folder(folder.clone());
                    let picked = chosen.clone();
                    allow_radio("allow-what", "allow-what-folder", format!("Anything under {folder}"),
                        Signal::derive(move || what.get() == chosen),
                        Callback::new(move |()| what.set(picked.clone())))
                })}
            </fieldset>
            <HowLong lasting=lasting counted=counted uses_text=uses_text error=error />
            <p class="hint" data-testid="allow-summary">{summary}</p>
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

/// One radio button of the "Always allow" panel.
fn allow_radio(
    name: &'static str,
    test_id: &'static str,
    label: String,
    checked: Signal<bool>,
    pick: Callback<()>,
) -> impl IntoView {
    view! {
        <label class="allow-option">
            <input type="radio" name=name data-testid=test_id prop:checked=checked
                on:change=move |_| pick.run(()) />
            {label}
        </label>
    }
}

/// The "How long" choice: until revoked, an hour, or the next N calls (`counted`, with the
/// number kept as typed in `uses_text`; typing it clears the panel's `error`).
#[component]
fn HowLong(
    lasting: RwSignal<Lasting>,
    counted: RwSignal<bool>,
    uses_text: RwSignal<String>,
    error: RwSignal<Option<String>>,
) -> impl IntoView {
    view! {
        <fieldset class="allow-group">
            <legend class="field-label">"How long"</legend>
            {allow_radio("allow-lasting", "allow-until-revoked", "Until I revoke it".into(),
                Signal::derive(move || !counted.get() && lasting.get() == Lasting::UntilRevoked),
                Callback::new(move |()| { counted.set(false); lasting.set(Lasting::UntilRevoked); }))}
            {allow_radio("allow-lasting", "allow-one-hour", "For one hour".into(),
                Signal::derive(move || !counted.get() && lasting.get() == Lasting::OneHour),
                Callback::new(move |()| { counted.set(false); lasting.set(Lasting::OneHour); }))}
            <label class="allow-option">
                <input type="radio" name="allow-lasting" data-testid="allow-uses-choice"
                    prop:checked=move || counted.get() on:change=move |_| counted.set(true) />
                "For the next "
                <input type="number" class="allow-uses" min="1" step="1" inputmode="numeric"
                    data-testid="allow-uses" aria-label="Number of calls"
                    prop:value=move || uses_text.get()
                    on:input=move |event| {
                        uses_text.set(event_target_value(&event));
                        counted.set(true);
                        error.set(None);
                    } />
                " calls"
            </label>
        </fieldset>
    }
}

/// Who decided a call without asking: "Allowed by your policy: … Revoke", or the rule.
#[component]
pub fn DecidedByLine(decided_by: DecidedBy) -> impl IntoView {
    let app = expect_context::<AppCtx>();
    match decided_by {
        DecidedBy::Policy { id, summary } => {
            let revoked = RwSignal::new(false);
            // A counted grant this call spent: the Policies panel reads what is left again
            // (its last use takes it off the list).
            let counted = app.policies.with_untracked(|policies| {
                policies
                    .iter()
                    .any(|policy| policy.id == id && policy.uses_left.is_some())
            });
            if counted {
                app.reload_policies();
            }
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

/// The Policies panel's rows: each policy in force with what is left of it (uses, time) and
/// Revoke. A time-boxed grant leaves the list when its time is up (the clock ticks every
/// ten seconds); a counted one when the list is read again after its last use.
#[component]
fn PolicyRows(policies: Memo<Vec<Policy>>) -> impl IntoView {
    let app = expect_context::<AppCtx>();
    let now = RwSignal::new(js_sys::Date::now());
    if let Ok(handle) = set_interval_with_handle(
        move || {
            now.try_set(js_sys::Date::now());
        },
        Duration::from_secs(10),
    ) {
        on_cleanup(move || handle.clear());
    }
    let rows = move || {
        let now = now.get();
        policies
            .get()
            .into_iter()
            .filter_map(|policy| {
                let expires = policy.expires_at.as_deref().map(js_sys::Date::parse);
                in_force(&policy, expires, now)
                    .then(|| (left_of(policy.uses_left, expires, now), policy))
            })
            .collect::<Vec<_>>()
    };
    view! {
        // A short list, redrawn whole when it changes (cheaper to ship than a keyed list).
        {move || {
            let rows = rows();
            let none = rows.is_empty();
            view! {
                {rows.into_iter().map(|(left, policy)| {
                    let summary = format!("Always allow {}", base_summary(&policy));
                    let id = policy.id;
                    view! {
                        <li class="policy" data-testid="policy">
                            <span>{summary}</span>
                            {left.map(|left| view! { <span class="policy-left" data-testid="policy-left">{left}</span> })}
                            <button type="button" class="button small" data-testid="policy-revoke"
                                on:click=move |_| app.revoke_policy(id.clone())>
                                "Revoke"
                            </button>
                        </li>
                    }
                }).collect_view()}
                {none.then(|| view! {
                    <li class="hint" data-testid="no-policies">"None: every gated call asks."</li>
                })}
            }
        }}
    }
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

/// The Policies panel's rows, given the policies to list.
type MakeRows = fn(Memo<Vec<Policy>>) -> AnyView;

thread_local! {
    static ALLOW: Slot<fn(AllowPanel) -> AnyView> = ArcRwSignal::new(None);
    static ROWS: Slot<MakeRows> = ArcRwSignal::new(None);
}

#[wasm_split_helpers::wasm_split(policies, fallible)]
fn policy_rows_view() -> Loaded<MakeRows> {
    Ok(|policies| view! { <PolicyRows policies=policies /> }.into_any())
}

/// The Policies panel's rows, from the chunk of the policies UI.
pub fn policy_rows(policies: Memo<Vec<Policy>>) -> impl IntoView {
    move || loaded(&ROWS, policy_rows_view).map(|make| make(policies))
}

#[wasm_split_helpers::wasm_split(policies, fallible)]
fn always_allow_view() -> Loaded<fn(AllowPanel) -> AnyView> {
    Ok(|panel| {
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
    })
}

/// The "Always allow" panel, from the chunk of the policies UI (loaded when first opened).
pub fn always_allow(panel: AllowPanel) -> impl IntoView {
    move || loaded(&ALLOW, always_allow_view).map(|make| make(panel.clone()))
}
