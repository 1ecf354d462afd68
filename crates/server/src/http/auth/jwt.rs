//! Programs' bearer JWTs and people's ID tokens in `--auth oidc`: checked against the provider's
//! published keys (its JWKS), with `jsonwebtoken`; both use this one key set. The signature with the key the token's `kid` names, and the
//! algorithm that key is for (never the one the token asks for, never `none`, never an HMAC:
//! an RS256 key's public half used as an HS256 secret is refused); `iss` the provider, `aud`
//! our audience, `exp` and `nbf` with a small leeway. The keys are kept in memory, so a valid
//! token costs no store read and no request to the provider; an unknown `kid` fetches them again,
//! at most once a minute (a provider that rotated its keys is followed within a minute; a flood
//! of made-up `kid`s costs the provider one request a minute).

use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, Jwk, KeyAlgorithm};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde_json::Value;

use super::{Identity, Refusal};

/// How far `exp` and `nbf` may be off (clocks drift).
pub const LEEWAY_SECS: u64 = 30;
/// The shortest time between two fetches of the keys.
pub const REFETCH_EVERY: Duration = Duration::from_secs(60);

/// A key of the provider's and the one algorithm it signs with.
#[derive(Clone)]
struct Key {
    decoding: DecodingKey,
    algorithm: Algorithm,
}

/// The provider's keys, by `kid` (a key without one under "").
pub struct Keys {
    jwks_uri: String,
    http: reqwest::Client,
    keys: RwLock<Arc<HashMap<String, Key>>>,
    /// When the keys were last fetched; held while fetching, so one request goes out at a time.
    fetched: tokio::sync::Mutex<Option<Instant>>,
}

/// What a token is checked for.
pub struct Checks {
    pub issuer: String,
    pub audience: String,
    pub groups_claim: String,
}

impl Keys {
    /// Fetches the keys once; the server does not start if the provider does not answer.
    pub async fn fetch(jwks_uri: String, http: reqwest::Client) -> Result<Keys, String> {
        let keys = Keys {
            jwks_uri,
            http,
            keys: RwLock::new(Arc::new(HashMap::new())),
            fetched: tokio::sync::Mutex::new(None),
        };
        let fetched = keys.download().await?;
        keys.replace(fetched);
        *keys.fetched.lock().await = Some(Instant::now());
        Ok(keys)
    }

    /// The provider's keys, fetched now.
    async fn download(&self) -> Result<HashMap<String, Key>, String> {
        let response = self
            .http
            .get(&self.jwks_uri)
            .send()
            .await
            .and_then(reqwest::Response::error_for_status)
            .map_err(|err| format!("fetching the provider's keys: {err}"))?;
        let body: Value = response
            .json()
            .await
            .map_err(|err| format!("the provider's keys are not JSON: {err}"))?;
        Ok(parse_keys(&body))
    }

    fn replace(&self, keys: HashMap<String, Key>) {
        let keys = Arc::new(keys);
        match self.keys.write() {
            Ok(mut held) => *held = keys,
            Err(poisoned) => *poisoned.into_inner() = keys,
        }
    }

    fn current(&self) -> Arc<HashMap<String, Key>> {
        match self.keys.read() {
            Ok(held) => held.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// The key a token names, fetching the keys again if it is unknown and the last fetch is
    /// over a minute old.
    async fn key(&self, kid: &str) -> Option<Key> {
        if let Some(key) = pick(&self.current(), kid) {
            return Some(key);
        }
        let mut fetched = self.fetched.lock().await;
        // Another request may have fetched while this one waited for the lock.
        if let Some(key) = pick(&self.current(), kid) {
            return Some(key);
        }
        if fetched.is_some_and(|at| at.elapsed() < REFETCH_EVERY) {
            return None;
        }
        *fetched = Some(Instant::now());
        match self.download().await {
            Ok(keys) => self.replace(keys),
            Err(err) => tracing::warn!("{err}"),
        }
        pick(&self.current(), kid)
    }

    /// Checks a bearer JWT: the identity it stands for, or why not.
    pub async fn verify(&self, token: &str, checks: &Checks) -> Result<Identity, Refusal> {
        let claims = self.claims(token, &checks.issuer, &checks.audience).await?;
        identity_from_claims(&claims, &checks.groups_claim)
            .ok_or(Refusal::Unauthenticated("a JWT without a subject"))
    }

    /// Checks a JWT (a program's bearer token, or an ID token at sign-in) for `issuer` and
    /// `audience`: its claims, or why not.
    pub async fn claims(
        &self,
        token: &str,
        issuer: &str,
        audience: &str,
    ) -> Result<Value, Refusal> {
        // `alg: none` and unknown algorithms fail here: jsonwebtoken knows no `none`.
        let header = jsonwebtoken::decode_header(token)
            .map_err(|_| Refusal::Unauthenticated("not a JWT"))?;
        let key =
            self.key(header.kid.as_deref().unwrap_or(""))
                .await
                .ok_or(Refusal::Unauthenticated(
                    "a JWT signed with a key we do not know",
                ))?;
        if header.alg != key.algorithm {
            return Err(Refusal::Unauthenticated(
                "a JWT whose algorithm is not its key's",
            ));
        }
        let mut validation = Validation::new(key.algorithm);
        validation.set_issuer(&[issuer]);
        validation.set_audience(&[audience]);
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        validation.leeway = LEEWAY_SECS;
        validation.validate_nbf = true;
        let data = jsonwebtoken::decode::<Value>(token, &key.decoding, &validation)
            .map_err(|err| Refusal::Unauthenticated(reason(err.kind())))?;
        Ok(data.claims)
    }
}

/// The key named `kid`; a token without one may use the provider's only key.
fn pick(keys: &HashMap<String, Key>, kid: &str) -> Option<Key> {
    match keys.get(kid) {
        Some(key) => Some(key.clone()),
        None if kid.is_empty() && keys.len() == 1 => keys.values().next().cloned(),
        None => None,
    }
}

/// The signing keys of a JWKS. Keys for encryption, symmetric keys and keys this build cannot
/// use are skipped, so one odd key does not hide the others.
fn parse_keys(jwks: &Value) -> HashMap<String, Key> {
    let mut keys = HashMap::new();
    let listed = jwks.get("keys").and_then(Value::as_array);
    for value in listed.into_iter().flatten() {
        let Ok(jwk) = serde_json::from_value::<Jwk>(value.clone()) else {
            continue;
        };
        let for_signing = !matches!(
            jwk.common.public_key_use,
            Some(jsonwebtoken::jwk::PublicKeyUse::Encryption)
        );
        let (Some(algorithm), true) = (algorithm_of(&jwk), for_signing) else {
            continue;
        };
        let Ok(decoding) = DecodingKey::from_jwk(&jwk) else {
            continue;
        };
        let kid = jwk.common.key_id.clone().unwrap_or_default();
        keys.insert(
            kid,
            Key {
                decoding,
                algorithm,
            },
        );
    }
    keys
}

/// The algorithm a key signs with: its `alg`, else the usual one for its type. Never an HMAC:
/// a provider's published key is public.
fn algorithm_of(jwk: &Jwk) -> Option<Algorithm> {
    let algorithm = match (&jwk.common.key_algorithm, &jwk.algorithm) {
        (Some(named), _) => match named {
            KeyAlgorithm::RS256 => Algorithm::RS256,
            KeyAlgorithm::RS384 => Algorithm::RS384,
            KeyAlgorithm::RS512 => Algorithm::RS512,
            KeyAlgorithm::PS256 => Algorithm::PS256,
            KeyAlgorithm::PS384 => Algorithm::PS384,
            KeyAlgorithm::PS512 => Algorithm::PS512,
            KeyAlgorithm::ES256 => Algorithm::ES256,
            KeyAlgorithm::ES384 => Algorithm::ES384,
            KeyAlgorithm::EdDSA => Algorithm::EdDSA,
            KeyAlgorithm::HS256
            | KeyAlgorithm::HS384
            | KeyAlgorithm::HS512
            | KeyAlgorithm::RSA1_5
            | KeyAlgorithm::RSA_OAEP
            | KeyAlgorithm::RSA_OAEP_256
            | KeyAlgorithm::UNKNOWN_ALGORITHM => return None,
        },
        (None, AlgorithmParameters::RSA(_)) => Algorithm::RS256,
        (None, AlgorithmParameters::EllipticCurve(params)) => match params.curve {
            EllipticCurve::P256 => Algorithm::ES256,
            EllipticCurve::P384 => Algorithm::ES384,
            EllipticCurve::P521 | EllipticCurve::Ed25519 => return None,
        },
        (None, AlgorithmParameters::OctetKeyPair(_)) => Algorithm::EdDSA,
        (None, AlgorithmParameters::OctetKey(_)) => return None,
    };
    Some(algorithm)
}

/// Why a token was refused, in words for the log (never the token).
// The error kind is non-exhaustive: whatever else it says, the token is invalid.
#[allow(clippy::wildcard_enum_match_arm)]
fn reason(kind: &jsonwebtoken::errors::ErrorKind) -> &'static str {
    use jsonwebtoken::errors::ErrorKind;
    match kind {
        ErrorKind::ExpiredSignature => "an expired JWT",
        ErrorKind::ImmatureSignature => "a JWT not valid yet",
        ErrorKind::InvalidIssuer => "a JWT of another issuer",
        ErrorKind::InvalidAudience => "a JWT for another audience",
        ErrorKind::InvalidSignature => "a JWT with a bad signature",
        ErrorKind::InvalidAlgorithm => "a JWT whose algorithm is not its key's",
        ErrorKind::MissingRequiredClaim(_) => "a JWT without a required claim",
        _ => "an invalid JWT",
    }
}

/// The identity the claims of a checked token (or ID token, or user info) stand for.
pub fn identity_from_claims(claims: &Value, groups_claim: &str) -> Option<Identity> {
    let text = |name: &str| {
        claims
            .get(name)
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|value| !value.is_empty())
            .map(str::to_owned)
    };
    let mut identity = Identity::subject(text("sub")?);
    identity.name = text("name").or_else(|| text("preferred_username"));
    identity.email = text("email");
    Some(identity.with_groups(groups_of(claims.get(groups_claim))))
}

/// A groups claim: an array of names, or one name.
pub fn groups_of(claim: Option<&Value>) -> Vec<String> {
    match claim {
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect(),
        Some(Value::String(one)) => vec![one.clone()],
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn claims_give_the_subject_name_email_and_groups() {
        let claims = json!({"sub": "u-1", "preferred_username": "alice",
                            "email": "a@example.com", "roles": ["sre", "oncall"]});
        let identity = identity_from_claims(&claims, "roles").unwrap();
        assert_eq!(identity.subject, "u-1");
        assert_eq!(identity.name.as_deref(), Some("alice"));
        assert_eq!(identity.groups, ["oncall", "sre"]);
        assert!(identity_from_claims(&json!({"sub": ""}), "groups").is_none());
    }

    #[test]
    fn symmetric_and_encryption_keys_are_never_taken() {
        let jwks = json!({"keys": [
            {"kty": "oct", "kid": "h", "k": "c2VjcmV0"},
            {"kty": "RSA", "kid": "enc", "use": "enc", "n": "sXch", "e": "AQAB"},
            {"kty": "RSA", "kid": "sig", "use": "sig", "alg": "RS256",
             "n": "0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw",
             "e": "AQAB"}
        ]});
        let keys = parse_keys(&jwks);
        assert_eq!(keys.keys().collect::<Vec<_>>(), ["sig"]);
    }
}
