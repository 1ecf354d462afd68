//! A remote agent's card and its entry in `GET /api/agents`: the card (its client's, fetched
//! lazily and kept as its cache headers allow), its URLs pointed at the relay; the entry's description, the skills of
//! its card (a remote publishes no tools), whether it can cancel, and whether it gave its card.

use std::sync::Arc;

use serde_json::{json, Value};
use signoff_protocol::codec;
use signoff_protocol::rest::{AgentEntry, SkillEntry};

use super::RemoteAgent;

impl RemoteAgent {
    pub(super) async fn list_entry(self: &Arc<Self>) -> AgentEntry {
        let card = self.client.card().await;
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
            answers_prompts: None,
        }
    }
}

/// Points the card's JSON-RPC URLs at our relay; interfaces we cannot relay are left out.
pub(super) fn rewrite_card(card: &mut Value, relay_url: &str) {
    if card.get("url").is_some_and(Value::is_string) {
        card["url"] = json!(relay_url);
    }
    for key in ["additionalInterfaces", "supportedInterfaces"] {
        if let Some(interfaces) = card.get_mut(key).and_then(Value::as_array_mut) {
            interfaces.retain(|interface| {
                interface
                    .get("transport")
                    .or_else(|| interface.get("protocolBinding"))
                    .and_then(Value::as_str)
                    .is_none_or(|binding| binding.eq_ignore_ascii_case("JSONRPC"))
            });
            for interface in interfaces.iter_mut() {
                if interface.get("url").is_some() {
                    interface["url"] = json!(relay_url);
                }
            }
        }
    }
}
