//! The agent card in both versions' shapes (docs/rest.md, Agent cards): a lenient card that
//! carries the v0.3 fields AND v1.0's `supportedInterfaces`, so clients of either version read
//! it, and a strict v1.0 card with no v0.3 field. Decoding reads either version's card.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{decode_list, field, non_empty, parse, to_value, DecodeError};
use crate::model::{AgentCapabilities, AgentCard, AgentInterface, AgentSkill, ProtocolVersion};

/// Which card to serve.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CardFlavor {
    /// v0.3 fields (`url`, `preferredTransport`, `protocolVersion: "0.3.0"`) plus `supportedInterfaces`.
    Lenient,
    /// Exactly the v1.0 schema, which allows no extra property; for `A2A-Version: 1.0`.
    StrictV1,
}

/// The only transport Signoff speaks.
const JSONRPC: &str = "JSONRPC";
/// What a v0.3 card says in `protocolVersion`.
const V03_CARD_VERSION: &str = "0.3.0";

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireCard {
    name: String,
    #[serde(default)]
    description: String,
    #[serde(default)]
    version: String,
    // v0.3 fields
    #[serde(default, skip_serializing_if = "Option::is_none")]
    url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    protocol_version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    preferred_transport: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    additional_interfaces: Option<Vec<Value>>,
    // v1.0 field
    #[serde(default, skip_serializing_if = "Option::is_none")]
    supported_interfaces: Option<Vec<Value>>,
    #[serde(default)]
    capabilities: Value,
    #[serde(default)]
    default_input_modes: Vec<String>,
    #[serde(default)]
    default_output_modes: Vec<String>,
    #[serde(default)]
    skills: Vec<Value>,
}

#[derive(Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct WireCapabilities {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    streaming: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    push_notifications: Option<bool>,
    /// v0.3 only; the strict v1.0 card leaves it out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    state_transition_history: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    extensions: Option<Vec<Value>>,
}

/// v0.3 and v1.0 `AgentExtension`: only its `uri` is read (`description`, `required` and
/// `params` are for people and for the agent's own checks).
#[derive(Serialize, Deserialize)]
struct WireExtension {
    uri: String,
}

/// v1.0 `AgentInterface`.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireInterface {
    url: String,
    protocol_binding: String,
    protocol_version: String,
}

/// v0.3 `AgentInterface` (in `additionalInterfaces`).
#[derive(Deserialize)]
struct WireInterfaceV03 {
    url: String,
    transport: String,
}

#[derive(Serialize, Deserialize)]
struct WireSkill {
    id: String,
    name: String,
    #[serde(default)]
    description: String,
    #[serde(default)]
    tags: Vec<String>,
}

pub fn encode_agent_card(card: &AgentCard, flavor: CardFlavor) -> Value {
    let interfaces = card
        .interfaces
        .iter()
        .map(|interface| {
            to_value(WireInterface {
                url: interface.url.clone(),
                protocol_binding: JSONRPC.to_owned(),
                protocol_version: interface.version.as_str().to_owned(),
            })
        })
        .collect();
    let skills = card
        .skills
        .iter()
        .map(|skill| {
            to_value(WireSkill {
                id: skill.id.clone(),
                name: skill.name.clone(),
                description: skill.description.clone(),
                tags: skill.tags.clone(),
            })
        })
        .collect();
    // A lenient card advertises v0.3 only if the agent has a v0.3 endpoint to name.
    let v03_url = match flavor {
        CardFlavor::Lenient => card
            .interfaces
            .iter()
            .find(|interface| interface.version == ProtocolVersion::V0_3)
            .map(|interface| interface.url.clone()),
        CardFlavor::StrictV1 => None,
    };
    let capabilities = WireCapabilities {
        streaming: Some(card.capabilities.streaming),
        push_notifications: Some(card.capabilities.push_notifications),
        state_transition_history: match flavor {
            CardFlavor::Lenient => Some(card.capabilities.state_transition_history),
            CardFlavor::StrictV1 => None,
        },
        extensions: non_empty(
            &card
                .capabilities
                .extensions
                .iter()
                .map(|uri| to_value(WireExtension { uri: uri.clone() }))
                .collect::<Vec<_>>(),
        ),
    };
    to_value(WireCard {
        name: card.name.clone(),
        description: card.description.clone(),
        version: card.version.clone(),
        protocol_version: v03_url.as_ref().map(|_| V03_CARD_VERSION.to_owned()),
        preferred_transport: v03_url.as_ref().map(|_| JSONRPC.to_owned()),
        url: v03_url,
        additional_interfaces: None,
        supported_interfaces: Some(interfaces),
        capabilities: to_value(capabilities),
        default_input_modes: card.default_input_modes.clone(),
        default_output_modes: card.default_output_modes.clone(),
        skills,
    })
}

/// Adds a JSON-RPC interface at `url` in `version` to a card of either version (its
/// `supportedInterfaces`), for a relay that serves the agent in a version the agent itself does
/// not offer. A lenient card without v0.3's main `url` gets it too when `version` is v0.3, so
/// v0.3 clients that read only that field find the interface. A card that is not a JSON object
/// is left as it is.
pub fn offer_card_interface(
    card: &mut Value,
    url: &str,
    version: ProtocolVersion,
    flavor: CardFlavor,
) {
    let Some(card) = card.as_object_mut() else {
        return;
    };
    let interface = to_value(WireInterface {
        url: url.to_owned(),
        protocol_binding: JSONRPC.to_owned(),
        protocol_version: version.as_str().to_owned(),
    });
    let supported = card
        .entry("supportedInterfaces")
        .or_insert_with(|| Value::Array(Vec::new()));
    if !supported.is_array() {
        *supported = Value::Array(Vec::new());
    }
    if let Some(list) = supported.as_array_mut() {
        if !list.contains(&interface) {
            list.push(interface);
        }
    }
    if version == ProtocolVersion::V0_3
        && flavor == CardFlavor::Lenient
        && !card.contains_key("url")
    {
        card.insert("url".to_owned(), Value::String(url.to_owned()));
        card.insert(
            "protocolVersion".to_owned(),
            Value::String(V03_CARD_VERSION.to_owned()),
        );
        card.insert(
            "preferredTransport".to_owned(),
            Value::String(JSONRPC.to_owned()),
        );
    }
}

/// The JSON-RPC interfaces of a card of either version, by the same rules as
/// [`decode_agent_card`], read without the rest of the card: all a client needs to pick a version
/// and a URL. An interface it cannot read is left out rather than failing the card. (The browser
/// UI reads cards with this: the whole card's typed decoding was 7 KB of its gzip download.)
pub fn decode_card_interfaces(card: &Value) -> Vec<AgentInterface> {
    let text = |value: &Value, key: &str| value.get(key).and_then(Value::as_str).map(str::to_owned);
    let list = |key: &str| {
        card.get(key)
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default()
    };
    let mut interfaces: Vec<AgentInterface> = Vec::new();
    let mut add = |url: Option<String>, version: Option<ProtocolVersion>| {
        if let (Some(url), Some(version)) = (url, version) {
            let interface = AgentInterface { url, version };
            if !interfaces.contains(&interface) {
                interfaces.push(interface);
            }
        }
    };
    for interface in list("supportedInterfaces") {
        if text(interface, "protocolBinding").as_deref() == Some(JSONRPC) {
            let version = text(interface, "protocolVersion");
            add(
                text(interface, "url"),
                version.as_deref().and_then(ProtocolVersion::from_header),
            );
        }
    }
    let main_version = text(card, "protocolVersion");
    let main_version = main_version
        .as_deref()
        .and_then(ProtocolVersion::from_header);
    if main_version.is_some() {
        let transport = text(card, "preferredTransport");
        if transport.as_deref().unwrap_or(JSONRPC) == JSONRPC {
            add(text(card, "url"), main_version);
        }
        if text(card, "url").is_some() {
            for interface in list("additionalInterfaces") {
                if text(interface, "transport").as_deref() == Some(JSONRPC) {
                    add(text(interface, "url"), main_version);
                }
            }
        }
    }
    interfaces
}

/// The URIs of the extensions a card of either version declares (`capabilities.extensions`),
/// read without the rest of the card, as [`decode_card_interfaces`] reads its interfaces; an
/// entry without a string `uri` is left out.
pub fn decode_card_extensions(card: &Value) -> Vec<String> {
    card.pointer("/capabilities/extensions")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .filter_map(|extension| extension.get("uri")?.as_str().map(str::to_owned))
        .collect()
}

/// Reads a card of either version. Interfaces come from `supportedInterfaces` (v1.0), then the
/// v0.3 `url` and `additionalInterfaces`; only JSON-RPC interfaces of a version we speak count.
pub fn decode_agent_card(value: &Value) -> Result<AgentCard, DecodeError> {
    let path = "card";
    let wire: WireCard = parse(value, path)?;
    let mut interfaces: Vec<AgentInterface> = Vec::new();
    let mut add = |interface: AgentInterface| {
        if !interfaces.contains(&interface) {
            interfaces.push(interface);
        }
    };
    let supported = decode_list(
        wire.supported_interfaces.as_deref().unwrap_or_default(),
        &field(path, "supportedInterfaces"),
        parse::<WireInterface>,
    )?;
    for interface in supported {
        if interface.protocol_binding == JSONRPC {
            if let Some(version) = ProtocolVersion::from_header(&interface.protocol_version) {
                add(AgentInterface {
                    url: interface.url,
                    version,
                });
            }
        }
    }
    // A v0.3 card's main URL speaks its `protocolVersion` over its `preferredTransport`
    // (JSON-RPC when absent).
    let main_version = wire
        .protocol_version
        .as_deref()
        .and_then(ProtocolVersion::from_header);
    if let (Some(url), Some(version)) = (wire.url, main_version) {
        if wire.preferred_transport.as_deref().unwrap_or(JSONRPC) == JSONRPC {
            add(AgentInterface { url, version });
        }
        let additional = decode_list(
            wire.additional_interfaces.as_deref().unwrap_or_default(),
            &field(path, "additionalInterfaces"),
            parse::<WireInterfaceV03>,
        )?;
        for interface in additional {
            if interface.transport == JSONRPC {
                add(AgentInterface {
                    url: interface.url,
                    version,
                });
            }
        }
    }
    let capabilities: WireCapabilities = if wire.capabilities.is_null() {
        WireCapabilities::default()
    } else {
        parse(&wire.capabilities, &field(path, "capabilities"))?
    };
    let extensions = decode_list(
        capabilities.extensions.as_deref().unwrap_or_default(),
        &field(&field(path, "capabilities"), "extensions"),
        parse::<WireExtension>,
    )?;
    let skills = decode_list(&wire.skills, &field(path, "skills"), |value, path| {
        parse::<WireSkill>(value, path)
    })?;
    Ok(AgentCard {
        name: wire.name,
        description: wire.description,
        version: wire.version,
        interfaces,
        capabilities: AgentCapabilities {
            streaming: capabilities.streaming.unwrap_or(false),
            push_notifications: capabilities.push_notifications.unwrap_or(false),
            state_transition_history: capabilities.state_transition_history.unwrap_or(false),
            extensions: extensions
                .into_iter()
                .map(|extension| extension.uri)
                .collect(),
        },
        default_input_modes: wire.default_input_modes,
        default_output_modes: wire.default_output_modes,
        skills: skills
            .into_iter()
            .map(|skill| AgentSkill {
                id: skill.id,
                name: skill.name,
                description: skill.description,
                tags: skill.tags,
            })
            .collect(),
    })
}
