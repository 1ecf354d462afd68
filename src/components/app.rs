//! The root component: loads the agent list and lays out the page.

use leptos::prelude::*;

use crate::api;
use crate::state::agents::AgentInfo;

#[component]
fn AgentItem(agent: AgentInfo) -> impl IntoView {
    view! {
        <li class="agent-item" data-testid="agent-item">
            <span class="agent-name">{agent.reference()}</span>
            <span class="agent-description">{agent.description.clone()}</span>
        </li>
    }
}

/// The root component.
#[component]
pub fn App() -> impl IntoView {
    let agents = LocalResource::new(api::list_agents);
    view! {
        <main class="app">
            <h1>"Signoff"</h1>
            <Transition fallback=|| view! { <p>"Loading agents…"</p> }>
                {move || {
                    agents
                        .get()
                        .map(|answer| match answer {
                            Ok(list) => {
                                view! {
                                    <ul class="agent-list" data-testid="agent-list">
                                        {list
                                            .into_iter()
                                            .map(|agent| view! { <AgentItem agent=agent /> })
                                            .collect_view()}
                                    </ul>
                                }
                                    .into_any()
                            }
                            Err(err) => {
                                view! {
                                    <p class="error" role="alert">
                                        {format!("Could not load the agents: {err}")}
                                    </p>
                                }
                                    .into_any()
                            }
                        })
                }}
            </Transition>
        </main>
    }
}
