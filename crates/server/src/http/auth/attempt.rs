//! A sign-in on its way through the provider (`--auth oidc`), kept in the browser that started
//! it: `/auth/login` sets a short-lived `HttpOnly`, `SameSite=Lax` cookie holding the attempt
//! (its `state`, PKCE verifier, nonce, return path and start), MACed with a key in the store
//! (HMAC-SHA256, one key for every replica). `/auth/callback` takes the attempt only from that
//! cookie and only when the provider's `state` is its own, so a sign-in answer carried into
//! another browser (login CSRF: signing a victim in as the attacker) fails there, and an
//! anonymous request to `/auth/login` writes nothing to the store.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use serde::{Deserialize, Serialize};

use crate::http::sealed;

/// The store's name for the key attempts are MACed with.
pub const KEY_NAME: &str = "login-attempt-hmac-sha256";

/// What the MAC covers besides the attempt: a MAC of this key for anything else is no attempt.
const CONTEXT: &[u8] = b"signoff login attempt\n";

/// The longest return path an attempt holds (a cookie holds about 4 KB).
pub const MAX_RETURN_PATH: usize = 1024;

/// A sign-in sent to the provider.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Attempt {
    pub state: String,
    pub pkce_verifier: String,
    pub nonce: String,
    pub return_to: String,
    /// When it started, in seconds since the epoch.
    pub started: i64,
}

/// A new random key, base64 (what the first server to need one offers the store).
pub fn new_key() -> Result<String, String> {
    let mut key = [0u8; 32];
    getrandom::fill(&mut key).map_err(|err| format!("random bytes: {err}"))?;
    Ok(URL_SAFE_NO_PAD.encode(key))
}

/// The key as the store holds it, decoded.
pub fn decode_key(stored: &str) -> Result<Vec<u8>, String> {
    URL_SAFE_NO_PAD
        .decode(stored)
        .map_err(|err| format!("the stored sign-in key is not base64: {err}"))
}

/// The cookie value of `attempt`: its JSON and its MAC, each base64url, joined by a dot.
pub fn seal(key: &[u8], attempt: &Attempt) -> Result<String, String> {
    sealed::seal(key, CONTEXT, attempt)
}

/// The attempt a cookie value holds, if its MAC is ours (checked in constant time).
pub fn open(key: &[u8], value: &str) -> Option<Attempt> {
    sealed::open(key, CONTEXT, value)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attempt() -> Attempt {
        Attempt {
            state: "s-1".into(),
            pkce_verifier: "v-1".into(),
            nonce: "n-1".into(),
            return_to: "/approvals".into(),
            started: 1_800_000_000,
        }
    }

    #[test]
    fn a_sealed_attempt_opens_with_its_key_only() {
        let key = decode_key(&new_key().unwrap()).unwrap();
        let sealed = seal(&key, &attempt()).unwrap();
        assert_eq!(open(&key, &sealed), Some(attempt()));
        let other = decode_key(&new_key().unwrap()).unwrap();
        assert_eq!(open(&other, &sealed), None);
    }

    #[test]
    fn a_changed_attempt_or_mac_does_not_open() {
        let key = decode_key(&new_key().unwrap()).unwrap();
        let sealed = seal(&key, &attempt()).unwrap();
        let (payload, tag) = sealed.split_once('.').unwrap();
        let mut changed = attempt();
        changed.return_to = "/elsewhere".into();
        let forged_payload = URL_SAFE_NO_PAD.encode(serde_json::to_vec(&changed).unwrap());
        for bad in [
            format!("{forged_payload}.{tag}"),
            format!("{payload}.{}", URL_SAFE_NO_PAD.encode([0u8; 32])),
            format!("{payload}."),
            payload.to_owned(),
            String::new(),
        ] {
            assert_eq!(open(&key, &bad), None, "{bad}");
        }
    }
}
