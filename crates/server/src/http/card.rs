//! Local agents' cards (docs/rest.md, Agent cards): the card in the caller's A2A version, with
//! the caching headers A2A asks for (`Cache-Control` with `max-age`, `ETag`, `Last-Modified`)
//! and conditional GETs answered `304 Not Modified`.

use std::collections::HashMap;

use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Utc};
use sha2::{Digest, Sha256};
use signoff_protocol::codec::{self, CardFlavor};
use signoff_protocol::{AgentCapabilities, AgentCard, AgentInterface, AgentSkill, ProtocolVersion};

use super::a2a::request_version;
use super::rest::endpoint;
use super::{origin, AppState, HttpError};
use crate::agent::Agent;

/// How long a client may reuse a card without asking again. A card changes only when the
/// server restarts with another agents file, so five minutes of staleness is the worst case.
const CARD_MAX_AGE_SECS: u32 = 300;

fn card(agent: &Agent, origin: &str) -> AgentCard {
    let url = format!("{origin}{}", endpoint(agent));
    AgentCard {
        name: agent.name.clone(),
        description: agent.description.clone(),
        version: env!("CARGO_PKG_VERSION").to_owned(),
        interfaces: vec![
            AgentInterface {
                url: url.clone(),
                version: ProtocolVersion::V1_0,
            },
            AgentInterface {
                url,
                version: ProtocolVersion::V0_3,
            },
        ],
        capabilities: AgentCapabilities {
            streaming: true,
            push_notifications: true,
            state_transition_history: false,
            extensions: Vec::new(),
        },
        default_input_modes: vec!["text".to_owned()],
        default_output_modes: vec!["text".to_owned()],
        skills: vec![AgentSkill {
            id: agent.name.clone(),
            name: agent.name.clone(),
            description: agent.description.clone(),
            tags: agent
                .tools
                .tools()
                .iter()
                .map(|tool| tool.spec.name.clone())
                .collect(),
        }],
    }
}

/// The card as the caller asked for it, or `304` when the caller's copy is still current.
fn card_response(
    state: &AppState,
    agent: &Agent,
    headers: &HeaderMap,
    query: &HashMap<String, String>,
) -> Response {
    let flavor = match request_version(headers, query) {
        Ok(ProtocolVersion::V1_0) => CardFlavor::StrictV1,
        Ok(ProtocolVersion::V0_3) | Err(_) => CardFlavor::Lenient,
    };
    let body = codec::encode_agent_card(&card(agent, &origin(headers, state.trust_proxy)), flavor)
        .to_string();
    // The tag is the content's hash, so it differs for each version and origin the card was
    // written for, and for each agents file.
    let digest = Sha256::digest(body.as_bytes());
    let hex: String = digest[..16]
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect();
    let etag = format!("\"{hex}\"");
    let mut vary = "A2A-Version".to_owned();
    if state.trust_proxy {
        vary.push_str(", X-Forwarded-Host, X-Forwarded-Proto");
    }
    let caching = [
        (
            header::CACHE_CONTROL,
            format!("public, max-age={CARD_MAX_AGE_SECS}"),
        ),
        (header::ETAG, etag.clone()),
        (header::LAST_MODIFIED, http_date(state.cards_since)),
        (header::VARY, vary),
    ];
    if not_modified(headers, &etag, state.cards_since) {
        return (StatusCode::NOT_MODIFIED, caching).into_response();
    }
    (caching, [(header::CONTENT_TYPE, "application/json")], body).into_response()
}

/// RFC 9110's conditional GET: `If-None-Match` decides when present (any listed tag equal to
/// ours, weak or strong, or `*`); otherwise `If-Modified-Since` at or after our `Last-Modified`.
fn not_modified(headers: &HeaderMap, etag: &str, since: DateTime<Utc>) -> bool {
    if let Some(value) = headers.get(header::IF_NONE_MATCH) {
        let Ok(tags) = value.to_str() else {
            return false;
        };
        return tags
            .split(',')
            .map(str::trim)
            .any(|tag| tag == "*" || tag.trim_start_matches("W/") == etag);
    }
    headers
        .get(header::IF_MODIFIED_SINCE)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| DateTime::parse_from_rfc2822(value).ok())
        .is_some_and(|date| date.with_timezone(&Utc) >= since)
}

/// An HTTP date (IMF-fixdate): `Sun, 06 Nov 1994 08:49:37 GMT`.
fn http_date(at: DateTime<Utc>) -> String {
    at.format("%a, %d %b %Y %H:%M:%S GMT").to_string()
}

pub async fn agent_card(
    State(state): State<AppState>,
    Path((namespace, name)): Path<(String, String)>,
    Query(query): Query<HashMap<String, String>>,
    headers: HeaderMap,
) -> Response {
    match state.runtime.agent(&namespace, &name) {
        Some(agent) => card_response(&state, &agent, &headers, &query),
        None => HttpError::NotFound(format!("no agent {namespace}/{name}")).into_response(),
    }
}

/// One agent's card at the origin (A2A's one-agent-per-origin convention): the one
/// `origin_agent` names, else the first agent.
pub async fn default_agent_card(
    State(state): State<AppState>,
    Query(query): Query<HashMap<String, String>>,
    headers: HeaderMap,
) -> Response {
    let agents = state.runtime.agents();
    let chosen = match &state.origin_agent {
        Some(key) => agents.iter().find(|agent| &agent.key() == key),
        None => agents.first(),
    };
    match chosen {
        Some(agent) => card_response(&state, agent, &headers, &query),
        None => HttpError::NotFound("no agents".to_owned()).into_response(),
    }
}

/// `GET /.well-known/jwks.json`: the public key push notifications are signed with (docs/wire.md,
/// Push notifications), for receivers to check a push's JWT.
pub async fn jwks(State(state): State<AppState>) -> Response {
    match state.runtime.pushes().jwks() {
        Some(jwks) => (
            [
                (header::CONTENT_TYPE, "application/json"),
                (header::CACHE_CONTROL, "public, max-age=300"),
            ],
            jwks.to_string(),
        )
            .into_response(),
        None => HttpError::NotFound("push notifications are not set up".to_owned()).into_response(),
    }
}

#[cfg(test)]
mod tests {
    use axum::http::HeaderValue;

    use super::*;

    fn at(text: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(text)
            .unwrap()
            .with_timezone(&Utc)
    }

    fn conditional(name: header::HeaderName, value: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(name, HeaderValue::from_str(value).unwrap());
        headers
    }

    #[test]
    fn http_dates_are_imf_fixdates_that_read_back() {
        let since = at("1994-11-06T08:49:37Z");
        assert_eq!(http_date(since), "Sun, 06 Nov 1994 08:49:37 GMT");
        let headers = conditional(header::IF_MODIFIED_SINCE, &http_date(since));
        assert!(not_modified(&headers, "\"a\"", since));
    }

    #[test]
    fn conditional_gets_follow_rfc_9110() {
        let since = at("2026-01-02T03:04:05Z");
        let etag = "\"abc\"";
        let cases = [
            (header::IF_NONE_MATCH, "\"abc\"", true),
            (header::IF_NONE_MATCH, "W/\"abc\"", true),
            (header::IF_NONE_MATCH, "\"x\", \"abc\"", true),
            (header::IF_NONE_MATCH, "*", true),
            (header::IF_NONE_MATCH, "\"abd\"", false),
            (
                header::IF_MODIFIED_SINCE,
                "Fri, 02 Jan 2026 03:04:05 GMT",
                true,
            ),
            (
                header::IF_MODIFIED_SINCE,
                "Sat, 03 Jan 2026 00:00:00 GMT",
                true,
            ),
            (
                header::IF_MODIFIED_SINCE,
                "Fri, 02 Jan 2026 03:04:04 GMT",
                false,
            ),
            (header::IF_MODIFIED_SINCE, "yesterday", false),
        ];
        for (name, value, expected) in cases {
            let headers = conditional(name.clone(), value);
            assert_eq!(
                not_modified(&headers, etag, since),
                expected,
                "{name}: {value}"
            );
        }
        // A tag that does not match decides, whatever the date says.
        let mut headers = conditional(header::IF_NONE_MATCH, "\"old\"");
        headers.insert(
            header::IF_MODIFIED_SINCE,
            HeaderValue::from_static("Sat, 03 Jan 2026 00:00:00 GMT"),
        );
        assert!(!not_modified(&headers, etag, since));
        assert!(!not_modified(&HeaderMap::new(), etag, since));
    }
}
