//! The right-hand panel: the current agent's details and tools, with a "requires approval"
//! badge on every gated tool, and the person's "always allow" policies for it, each with
//! Revoke. Collapsible.

use leptos::prelude::*;

use super::app::AppCtx;

#[component]
pub fn AgentPanel() -> impl IntoView {
    let ctx = expect_context::<AppCtx>();
    let agent = Memo::new(move |_| ctx.current_agent());
    let policies = Memo::new(move |_| {
        let reference = agent.with(|agent| agent.as_ref().map(|agent| agent.reference()));
        ctx.policies.with(|policies| {
            policies
                .iter()
                .filter(|policy| Some(&policy.agent) == reference.as_ref())
                .cloned()
                .collect::<Vec<_>>()
        })
    });
    view! {
        <aside class="details" aria-label="Agent details" data-testid="agent-details">
            {move || agent.get().map(|agent| view! {
                <div class="details-head">
                    <h2>{agent.reference()}</h2>
                    <button type="button" class="icon-button" aria-label="Hide agent details"
                        on:click=move |_| ctx.details_open.set(false)>
                        "✕"
                    </button>
                </div>
                <p class="details-description">{agent.description.clone()}</p>
                {agent.model.clone().map(|model| view! { <p class="hint">{format!("Model: {model}")}</p> })}
                <h3 class="side-heading">"Tools"</h3>
                <ul class="tool-catalog">
                    {agent.tools.iter().map(|tool| view! {
                        <li class="catalog-tool" data-testid="catalog-tool" data-tool=tool.name.clone()>
                            <div class="catalog-head">
                                <code>{tool.name.clone()}</code>
                                {tool.requires_approval.then(|| view! {
                                    <span class="badge badge-approval" data-testid="requires-approval">
                                        "Requires approval"
                                    </span>
                                })}
                            </div>
                            <p class="hint">{tool.description.clone()}</p>
                            {tool.server.clone().map(|server| view! { <p class="hint">{format!("Source: {server}")}</p> })}
                        </li>
                    }).collect_view()}
                </ul>
                <h3 class="side-heading">"Your policies"</h3>
                <ul class="policy-list" data-testid="policies-panel">
                    // A short list, redrawn whole when it changes (cheaper to ship than a keyed list).
                    {move || policies.get().into_iter().map(|policy| view! {
                        <li class="policy" data-testid="policy">
                            <span>{format!("Always allow {}", policy.summary)}</span>
                            <button type="button" class="button small" data-testid="policy-revoke"
                                on:click=move |_| ctx.revoke_policy(policy.id.clone())>
                                "Revoke"
                            </button>
                        </li>
                    }).collect_view()}
                    {move || policies.with(Vec::is_empty).then(|| view! {
                        <li class="hint" data-testid="no-policies">"None: every gated call asks."</li>
                    })}
                </ul>
            })}
        </aside>
    }
}
