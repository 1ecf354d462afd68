//! The right-hand panel: the current agent's details and tools, with a "requires approval"
//! badge on every gated tool (a remote agent: its card's skills, and a plain word that it
//! publishes no tool approval settings), and the person's "always allow" policies for it, each
//! with what is left of it and Revoke (the rows come from the policies chunk). Collapsible.

use leptos::prelude::*;

use super::context::AppCtx;
use super::tools::policy_rows;

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
    let no_policies = Memo::new(move |_| policies.with(Vec::is_empty));
    view! {
        <aside class="details" aria-label="Agent details" data-testid="agent-details">
            {move || agent.get().map(|agent| view! {
                <div class="details-head">
                    <h2>{agent.reference()}</h2>
                    <button type="button" class="icon-button" aria-label="Hide agent details"
                        on:click=move |_| ctx.show_details(false)>
                        "✕"
                    </button>
                </div>
                <p class="details-description">{crate::components::util::inline_code(&agent.description)}</p>
                {agent.model.clone().map(|model| view! { <p class="hint">{format!("Model: {model}")}</p> })}
                {agent.remote.then(|| view! {
                    <h3 class="side-heading">"Skills"</h3>
                    <ul class="tool-catalog" data-testid="skills">
                        {agent.skills.iter().map(|skill| view! {
                            <li class="catalog-tool" data-testid="skill">
                                <div class="catalog-head"><strong>{skill.name.clone()}</strong></div>
                                <p class="hint">{crate::components::util::inline_code(&skill.description)}</p>
                                {(!skill.tags.is_empty()).then(|| view! {
                                    <p class="hint" data-testid="skill-tags">{format!("Tags: {}", skill.tags.join(", "))}</p>
                                })}
                            </li>
                        }).collect_view()}
                        {agent.skills.is_empty().then(|| view! {
                            <li class="hint">"Its agent card lists no skills."</li>
                        })}
                    </ul>
                })}
                {(agent.remote && agent.tools.is_empty()).then(|| view! {
                    <p class="hint" data-testid="no-tool-settings">
                        "This remote agent does not publish its tools or which of them need \
                         approval. Each call it holds for approval shows in the chat."
                    </p>
                })}
                {(!agent.remote || !agent.tools.is_empty()).then(|| view! {
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
                            <p class="hint">{crate::components::util::inline_code(&tool.description)}</p>
                            {tool.server.clone().map(|server| view! { <p class="hint">{format!("Source: {server}")}</p> })}
                            {tool.approval.clone().map(|who| view! { <p class="hint" data-testid="tool-approval">{format!("Approval: {who}")}</p> })}
                        </li>
                    }).collect_view()}
                    {agent.tools.is_empty().then(|| view! {
                        <li class="hint" data-testid="no-tools">
                            {if agent.answers_prompts {
                                "It runs no tools of its own: programs ask it whether theirs may \
                                 run, and each call that needs a sign-off waits as a card."
                            } else {
                                "It has no tools."
                            }}
                        </li>
                    })}
                </ul>
                })}
                <h3 class="side-heading">"Your policies"</h3>
                <ul class="policy-list" data-testid="policies-panel">
                    // The rows, with what is left of each grant, from the policies chunk: a
                    // chat without policies (a fresh one, most often) never fetches it.
                    {move || if no_policies.get() {
                        view! {
                            <li class="hint" data-testid="no-policies">"None: every gated call asks."</li>
                        }.into_any()
                    } else {
                        policy_rows(policies).into_any()
                    }}
                </ul>
            })}
        </aside>
    }
}
