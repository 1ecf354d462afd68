//! A remote agent's card and its entry in `GET /api/agents`: the card fetched (lazily for the
//! list, and cached), its URLs pointed at the relay; the entry's description, the skills of
//! its card (a remote publishes no tools), whether it can cancel, and whether it gave its card.

use std::sync::Arc;
use std::time::Instant;

use axum::http::{header, HeaderValue};
use serde_json::{json, Value};
use signoff_protocol::codec;
use signoff_protocol::rest::{AgentEntry, SkillEntry};

use super::{CachedCard, RemoteAgent, CARD_FRESH, CARD_RETRY, CARD_TIMEOUT};

impl RemoteAgent {
    pub(super) async fn fetch_card(&self, version: Option<HeaderValue>) -> Result<Value, String> {
        let mut request = self
            .client
            .get(self.card_url.clone())
            .header(header::ACCEPT, "application/json");
        if let Some(version) = version {
            request = request.header("a2a-version", version);
        }
        let fetched = tokio::time::timeout(CARD_TIMEOUT, async {
            let response = request.send().await?.error_for_status()?;
            response.json::<Value>().await
        })
        .await;
        match fetched {
            Ok(Ok(card)) if card.is_object() => Ok(card),
            Ok(Ok(_)) => Err(format!(
                "the remote agent at {} sent an agent card that is not a JSON object",
                self.host
            )),
            Ok(Err(err)) => {
                tracing::warn!(remote = %self.host, error = %err, "cannot fetch a remote agent card");
                Err(format!(
                    "the remote agent at {} did not give its agent card",
                    self.host
                ))
            }
            Err(_elapsed) => Err(format!(
                "the remote agent at {} did not give its agent card within {} s",
                self.host,
                CARD_TIMEOUT.as_secs()
            )),
        }
    }

    pub(super) fn remember_card(&self, card: Option<Value>) {
        if let Ok(mut cached) = self.card.lock() {
            *cached = Some(CachedCard {
                fetched: Instant::now(),
                card,
            });
        }
    }

    /// The card for the agents list: cached, or fetched now (lazily, with a timeout).
    pub(super) async fn listed_card(&self) -> Option<Value> {
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
