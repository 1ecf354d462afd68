//! A remote agent's entry in `GET /api/agents`: its description, the skills of its card (a
//! remote publishes no tools), whether it can cancel, and whether it gave its card (fetched
//! lazily and cached).

use std::sync::Arc;

use serde_json::Value;
use signoff_protocol::codec;
use signoff_protocol::rest::{AgentEntry, SkillEntry};

use super::{RemoteAgent, CARD_FRESH, CARD_RETRY};

impl RemoteAgent {
    /// The card for the agents list: cached, or fetched now (lazily, with a timeout).
    async fn listed_card(&self) -> Option<Value> {
        let cached = self.card.lock().ok().and_then(|cached| cached.clone());
        if let Some(cached) = cached {
            let fresh = match cached.card {
                Some(_) => CARD_FRESH,
                None => CARD_RETRY,
            };
            if cached.fetched.elapsed() < fresh {
                return cached.card;
            }
        }
        let card = self.fetch_card(None).await.ok();
        self.remember_card(card.clone());
        card
    }

    pub(super) async fn list_entry(self: &Arc<Self>) -> AgentEntry {
        let card = self.listed_card().await;
        let description = if self.description.is_empty() {
            card.as_ref()
                .and_then(|card| card.get("description"))
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        } else {
            self.description.clone()
        };
        AgentEntry {
            namespace: self.namespace.clone(),
            name: self.name.clone(),
            description,
            url: self.endpoint(),
            card_url: format!("{}/.well-known/agent-card.json", self.endpoint()),
            tools: Vec::new(),
            require_approval: Vec::new(),
            unavailable_sources: None,
            remote: true,
            reachable: Some(card.is_some()),
            skills: Some(
                card.as_ref()
                    .and_then(|card| codec::decode_agent_card(card).ok())
                    .map(|card| {
                        card.skills
                            .into_iter()
                            .map(|skill| SkillEntry {
                                name: skill.name,
                                description: skill.description,
                                tags: skill.tags,
                            })
                            .collect()
                    })
                    .unwrap_or_default(),
            ),
            cancelable: self.cancelable(),
        }
    }
}
