//! Programs' bearer JWTs and people's ID tokens in `--auth oidc`: checked against the provider's
//! published keys (its JWKS), with `jsonwebtoken`; both use this one key set. The signature with the key the token's `kid` names, and the
//! algorithm that key is for (never the one the token asks for, never `none`, never an HMAC:
//! an RS256 key's public half used as an HS256 secret is refused); `iss` the provider, `aud`
//! our audience, `exp` and `nbf` with a small leeway, an `iat` not in the future, a lifetime
//! (`exp` less `iat`, or less now without `iat`) of at most `--oidc-max-token-lifetime`; no
//! `crit` header (we understand no extension) and no `typ` of another kind of token (a logout
//! token or a security event is not a sign-in). The keys are kept in memory, so a valid
//! token costs no store read and no request to the provider; an unknown `kid` fetches them again,
//! at most once a minute (a provider that rotated its keys is followed within a minute; a flood
//! of made-up `kid`s costs the provider one request a minute).

use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, Jwk, KeyAlgorithm};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde_json::Value;

use super::{is_clean, Identity, Refusal};

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
    /// The longest a token may be valid for, from its `iat` (or from now) to its `exp`.
    pub max_lifetime: Duration,
}

/// How long a token may be valid for by default: a day.
pub const MAX_LIFETIME: Duration = Duration::from_secs(24 * 60 * 60);

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
        let claims = self.claims(token, checks, &checks.audience).await?;
        identity_from_claims(&claims, &checks.groups_claim).map_err(Refusal::Unauthenticated)
    }

    /// Checks a JWT (a program's bearer token, or an ID token at sign-in) for the provider's
    /// `checks` and `audience`: its claims, or why not.
    pub async fn claims(
        &self,
        token: &str,
        checks: &Checks,
        audience: &str,
    ) -> Result<Value, Refusal> {
        // `alg: none` and unknown algorithms fail here: jsonwebtoken knows no `none`.
        let header = jsonwebtoken::decode_header(token)
            .map_err(|_| Refusal::Unauthenticated("not a JWT"))?;
        check_header(&header).map_err(Refusal::Unauthenticated)?;
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
        validation.set_issuer(&[checks.issuer.as_str()]);
        validation.set_audience(&[audience]);
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        validation.leeway = LEEWAY_SECS;
        validation.validate_nbf = true;
        let data = jsonwebtoken::decode::<Value>(token, &key.decoding, &validation)
            .map_err(|err| Refusal::Unauthenticated(reason(err.kind())))?;
        let now = jsonwebtoken::get_current_timestamp();
        check_times(&data.claims, now, checks.max_lifetime).map_err(Refusal::Unauthenticated)?;
        Ok(data.claims)
    }
}

/// The header fields the signature check does not look at: no `crit` (RFC 7515 §4.1.11: a
/// token that needs an extension we do not know must be refused), and a `typ` that is a plain
/// JWT or an access token (RFC 9068), never another kind of token signed by the same keys (a
/// logout token, a security event).
fn check_header(header: &jsonwebtoken::Header) -> Result<(), &'static str> {
    if header.crit.is_some() {
        return Err("a JWT with a crit header");
    }
    let Some(typ) = header.typ.as_deref() else {
        return Ok(());
    };
    // A media type: case-insensitive, `application/` may be left out (RFC 7515 §4.1.9).
    let typ = typ.to_ascii_lowercase();
    let typ = typ.strip_prefix("application/").unwrap_or(&typ);
    match typ {
        "jwt" | "at+jwt" => Ok(()),
        _ => Err("a JWT of another kind (its typ)"),
    }
}

/// `iat` not in the future (past the leeway), and `exp` at most `max_lifetime` after `iat`
/// (after `now` for a token without `iat`): a stolen long-lived token stays refused.
fn check_times(claims: &Value, now: u64, max_lifetime: Duration) -> Result<(), &'static str> {
    let exp = claims.get("exp").and_then(Value::as_u64).unwrap_or(0);
    let issued = match claims.get("iat") {
        None => now,
        Some(iat) => {
            let iat = iat.as_u64().ok_or("a JWT whose iat is not a time")?;
            if iat > now + LEEWAY_SECS {
                return Err("a JWT issued in the future");
            }
            iat
        }
    };
    if exp.saturating_sub(issued) > max_lifetime.as_secs() + LEEWAY_SECS {
        return Err("a JWT valid for longer than --oidc-max-token-lifetime");
    }
    Ok(())
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

/// The identity the claims of a checked token (or ID token, or user info) stand for, or why
/// not. The subject, email and groups are taken byte for byte and refused when padded or
/// holding control characters ([`is_clean`]); the email only when `email_verified` is true,
/// so nobody approves as an address their provider never checked. A name that is not clean
/// is left out (the subject is shown instead): it names nobody.
pub fn identity_from_claims(claims: &Value, groups_claim: &str) -> Result<Identity, &'static str> {
    let text = |name: &str| claims.get(name).and_then(Value::as_str);
    let subject = text("sub").ok_or("a JWT without a subject")?;
    if !is_clean(subject) {
        return Err("a JWT whose subject is padded or holds control characters");
    }
    let mut identity = Identity::subject(subject);
    identity.name = [text("name"), text("preferred_username")]
        .into_iter()
        .flatten()
        .find(|name| is_clean(name))
        .map(str::to_owned);
    identity.email = match verified_email(claims) {
        Some(email) if !is_clean(email) => {
            return Err("a JWT whose email is padded or holds control characters")
        }
        email => email.map(str::to_owned),
    };
    let groups = groups_of(claims.get(groups_claim));
    if !groups.iter().all(|group| is_clean(group)) {
        return Err("a JWT with a group that is padded or holds control characters");
    }
    Ok(identity.with_groups(groups))
}

/// The claims' `email` when they say it is verified: `email_verified` true (some providers
/// write the string `"true"`); anything else (false, missing) and there is no email.
pub fn verified_email(claims: &Value) -> Option<&str> {
    let verified = match claims.get("email_verified") {
        Some(Value::Bool(verified)) => *verified,
        Some(Value::String(text)) => text == "true",
        _ => false,
    };
    verified
        .then(|| claims.get("email").and_then(Value::as_str))
        .flatten()
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
        assert!(identity_from_claims(&json!({"sub": ""}), "groups").is_err());
    }

    #[test]
    fn an_email_is_taken_only_when_the_provider_says_it_is_verified() {
        let email = |verified: Value| {
            let mut claims = json!({"sub": "u-1", "email": "carol@example.com"});
            if !verified.is_null() {
                claims["email_verified"] = verified;
            }
            identity_from_claims(&claims, "groups").unwrap().email
        };
        assert_eq!(email(json!(true)).as_deref(), Some("carol@example.com"));
        assert_eq!(email(json!("true")).as_deref(), Some("carol@example.com"));
        for unverified in [json!(false), Value::Null, json!("false"), json!(1)] {
            assert_eq!(email(unverified.clone()), None, "{unverified}");
        }
    }

    #[test]
    fn padded_subjects_emails_and_groups_are_refused_not_trimmed() {
        let verified = |email: &str| json!({"sub": "u-1", "email": email, "email_verified": true});
        for claims in [
            json!({"sub": " alice"}),
            json!({"sub": "\u{2003}alice"}),
            json!({"sub": "alice\n"}),
            verified("carol@example.com\u{a0}"),
            json!({"sub": "u-1", "groups": [" sre"]}),
            json!({"sub": "u-1", "groups": "sre\u{a0}"}),
        ] {
            assert!(identity_from_claims(&claims, "groups").is_err(), "{claims}");
        }
        // A padded name is left out: the subject is shown.
        let named = json!({"sub": "u-1", "name": "Alice\u{202e}", "preferred_username": "al"});
        let identity = identity_from_claims(&named, "groups").unwrap();
        assert_eq!(identity.name.as_deref(), Some("al"));
    }

    fn header(typ: Option<&str>, crit: bool) -> jsonwebtoken::Header {
        let mut header = jsonwebtoken::Header::new(Algorithm::RS256);
        header.typ = typ.map(str::to_owned);
        header.crit = crit.then(|| vec!["exp".to_owned()]);
        header
    }

    #[test]
    fn a_crit_header_and_other_kinds_of_token_are_refused() {
        for typ in [
            None,
            Some("JWT"),
            Some("jwt"),
            Some("at+jwt"),
            Some("application/at+JWT"),
        ] {
            assert_eq!(check_header(&header(typ, false)), Ok(()), "{typ:?}");
        }
        for typ in [
            Some("logout+jwt"),
            Some("secevent+jwt"),
            Some("dpop+jwt"),
            Some(""),
        ] {
            assert!(check_header(&header(typ, false)).is_err(), "{typ:?}");
        }
        assert!(check_header(&header(Some("JWT"), true)).is_err());
    }

    #[test]
    fn an_iat_in_the_future_and_a_long_life_are_refused() {
        let now = 1_800_000_000;
        let day = MAX_LIFETIME;
        let times = |iat: Option<u64>, exp: u64| {
            let mut claims = json!({"exp": exp});
            if let Some(iat) = iat {
                claims["iat"] = json!(iat);
            }
            check_times(&claims, now, day)
        };
        assert_eq!(times(Some(now), now + 600), Ok(()));
        assert_eq!(times(Some(now + LEEWAY_SECS), now + 600), Ok(()));
        assert_eq!(times(None, now + day.as_secs()), Ok(()));
        assert_eq!(times(Some(now - 3600), now + day.as_secs() - 3600), Ok(()));
        assert!(times(Some(now + LEEWAY_SECS + 1), now + 600).is_err());
        assert!(times(Some(now), now + day.as_secs() + LEEWAY_SECS + 1).is_err());
        assert!(times(None, now + 10 * day.as_secs()).is_err());
        assert!(check_times(&json!({"exp": now + 60, "iat": "soon"}), now, day).is_err());
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
