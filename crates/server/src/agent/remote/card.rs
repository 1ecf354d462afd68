//! A remote agent's card as its client keeps it: fetched with a timeout, kept as long as its
//! `Cache-Control` allows (`max-age`; `no-store` keeps nothing, `no-cache` is asked again each
//! time; [`DEFAULT_FRESH`] without either), a failed fetch asked again after [`RETRY`]. The
//! last card given stands in while a newer one cannot be had.

use std::time::{Duration, Instant};

use reqwest::header::{self, HeaderMap, HeaderValue};
use serde_json::Value;
use signoff_protocol::codec::{self, decode_card_extensions};
use signoff_protocol::hitl::extension;
use signoff_protocol::ProtocolVersion;

use super::RemoteClient;

/// The longest a card fetch may take, so one slow remote cannot stall a list or a call.
pub const CARD_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a card that says nothing of caching is kept.
const DEFAULT_FRESH: Duration = Duration::from_secs(300);
/// The longest a card is kept, whatever its `max-age` says (a remote may change).
const LONGEST_FRESH: Duration = Duration::from_secs(24 * 3600);
/// How soon a failed fetch is tried again.
const RETRY: Duration = Duration::from_secs(30);

/// What a client remembers of its remote's card.
#[derive(Default)]
pub(super) struct CardCache {
    /// The last fetch's card (`None`: it failed) and until when it stands.
    last: Option<(Option<Value>, Instant)>,
    /// The last card the remote gave and its headers allowed to keep, however old.
    last_good: Option<Value>,
}

impl CardCache {
    /// The cached outcome of the last fetch, while it is fresh.
    fn fresh(&self) -> Option<Option<Value>> {
        let (card, until) = self.last.as_ref()?;
        (Instant::now() < *until).then(|| card.clone())
    }
}

/// How long a card answered with `headers` may be kept: `None` for not at all.
pub(super) fn freshness(headers: &HeaderMap) -> Option<Duration> {
    let directives: Vec<String> = headers
        .get_all(header::CACHE_CONTROL)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .map(|directive| directive.trim().to_ascii_lowercase())
        .collect();
    if directives.iter().any(|directive| directive == "no-store") {
        return None;
    }
    if directives.iter().any(|directive| directive == "no-cache") {
        return Some(Duration::ZERO);
    }
    let max_age = directives.iter().find_map(|directive| {
        let (name, value) = directive.split_once('=')?;
        (name.trim() == "max-age").then(|| value.trim().trim_matches('"').parse::<u64>().ok())?
    });
    Some(match max_age {
        Some(secs) => Duration::from_secs(secs).min(LONGEST_FRESH),
        None => DEFAULT_FRESH,
    })
}

/// Whether a card's JSON-RPC interfaces are all v1.0 (then v0.3 is not spoken there).
pub fn offers_only_v10(card: &Value) -> bool {
    let interfaces = codec::decode_card_interfaces(card);
    !interfaces.is_empty()
        && interfaces
            .iter()
            .all(|interface| interface.version == ProtocolVersion::V1_0)
}

impl RemoteClient {
    /// Fetches the card now (`version`: the `A2A-Version` asked for), and keeps it as its
    /// headers allow. The error says why in words that name only the remote's host.
    pub async fn fetch_card(&self, version: Option<HeaderValue>) -> Result<Value, String> {
        let mut request = self
            .http
            .get(self.card_url.clone())
            .header(header::ACCEPT, "application/json");
        if let Some(version) = version {
            request = request.header("a2a-version", version);
        }
        let fetched = tokio::time::timeout(CARD_TIMEOUT, async {
            let response = request.send().await?.error_for_status()?;
            let keep = freshness(response.headers());
            Ok::<_, reqwest::Error>((response.json::<Value>().await?, keep))
        })
        .await;
        let outcome = match fetched {
            Ok(Ok((card, keep))) if card.is_object() => Ok((card, keep)),
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
        };
        self.remember(&outcome);
        outcome.map(|(card, _)| card)
    }

    fn remember(&self, outcome: &Result<(Value, Option<Duration>), String>) {
        let Ok(mut cache) = self.card.lock() else {
            return;
        };
        let now = Instant::now();
        match outcome {
            Ok((card, Some(keep))) => {
                cache.last = Some((Some(card.clone()), now + *keep));
                cache.last_good = Some(card.clone());
            }
            // `no-store`: nothing of it is kept, and the next call asks again.
            Ok((_, None)) => {
                cache.last = None;
                cache.last_good = None;
            }
            Err(_) => cache.last = Some((None, now + RETRY)),
        }
    }

    /// The card: kept while fresh, else fetched now (one fetch at a time: callers that come
    /// meanwhile get its outcome). `None`: the remote does not give it.
    pub async fn card(&self) -> Option<Value> {
        if let Some(fresh) = self.cached() {
            return fresh;
        }
        let _fetching = self.fetching.lock().await;
        if let Some(fresh) = self.cached() {
            return fresh;
        }
        self.fetch_card(None).await.ok()
    }

    fn cached(&self) -> Option<Option<Value>> {
        self.card.lock().ok()?.fresh()
    }

    /// The card, or else the last one the remote gave, however old.
    async fn card_or_last(&self) -> Option<Value> {
        match self.card().await {
            Some(card) => Some(card),
            None => self.card.lock().ok()?.last_good.clone(),
        }
    }

    /// The version to speak to the remote: v1.0 when its card offers only v1.0, else v0.3
    /// (kagent 0.10's; also for a remote that gives no card).
    pub async fn version(&self) -> ProtocolVersion {
        match self.card_or_last().await {
            Some(card) if offers_only_v10(&card) => ProtocolVersion::V1_0,
            Some(_) | None => ProtocolVersion::V0_3,
        }
    }

    /// Whether the card declares kagent's HITL extension. A card that cannot be had declares
    /// nothing.
    pub(super) async fn speaks_extension(&self) -> bool {
        self.card_or_last()
            .await
            .is_some_and(|card| extension::is_declared(&decode_card_extensions(&card)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(cache_control: &[&str]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for value in cache_control {
            headers.append(header::CACHE_CONTROL, HeaderValue::from_str(value).unwrap());
        }
        headers
    }

    #[test]
    fn cache_control_says_how_long_a_card_is_kept() {
        let secs = |value: &[&str]| freshness(&headers(value)).map(|keep| keep.as_secs());
        assert_eq!(secs(&[]), Some(DEFAULT_FRESH.as_secs()));
        assert_eq!(secs(&["max-age=60"]), Some(60));
        assert_eq!(secs(&["public, Max-Age=\"7\""]), Some(7));
        assert_eq!(secs(&["public", "max-age=9"]), Some(9));
        assert_eq!(secs(&["max-age=99999999"]), Some(LONGEST_FRESH.as_secs()));
        assert_eq!(secs(&["max-age=soon"]), Some(DEFAULT_FRESH.as_secs()));
        assert_eq!(secs(&["no-cache"]), Some(0));
        assert_eq!(secs(&["max-age=60, no-store"]), None);
    }
}
