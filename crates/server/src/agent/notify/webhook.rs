//! Webhooks signed as the Standard Webhooks specification says (standardwebhooks.com): the
//! body is `{"type", "timestamp", "data"}`, and three headers: `webhook-id` (the delivery id,
//! the same on every retry), `webhook-timestamp` (Unix seconds of this attempt) and
//! `webhook-signature` (`v1,` and the base64 HMAC-SHA256 of `id.timestamp.body`, keyed with the
//! bytes of the `whsec_` secret's base64).

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use hmac::{Hmac, Mac};
use serde_json::json;
use sha2::Sha256;

use super::payload::data_of;
use crate::store::NotificationRow;

/// The prefix of a Standard Webhooks secret.
const SECRET_PREFIX: &str = "whsec_";

/// A webhook's signing key: the decoded bytes of its `whsec_` secret. Never printed.
#[derive(Clone)]
pub struct SigningKey(Vec<u8>);

impl std::fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SigningKey(..)")
    }
}

impl SigningKey {
    /// The key of a `whsec_…` secret. The error never repeats the secret.
    pub fn parse(secret: &str) -> Result<SigningKey, String> {
        let encoded = secret.strip_prefix(SECRET_PREFIX).ok_or_else(|| {
            format!("the signing secret must start with {SECRET_PREFIX} (Standard Webhooks)")
        })?;
        let key = STANDARD
            .decode(encoded)
            .map_err(|_| "the signing secret after whsec_ is not base64".to_owned())?;
        if key.len() < 16 {
            return Err("the signing secret is shorter than 16 bytes".to_owned());
        }
        Ok(SigningKey(key))
    }

    /// `v1,` and the signature of `body` sent as `id` at `timestamp` (Unix seconds).
    pub fn sign(&self, id: &str, timestamp: i64, body: &[u8]) -> String {
        // HMAC takes a key of any length: this cannot fail.
        let mut mac = match Hmac::<Sha256>::new_from_slice(&self.0) {
            Ok(mac) => mac,
            Err(_) => return String::new(),
        };
        mac.update(id.as_bytes());
        mac.update(b".");
        mac.update(timestamp.to_string().as_bytes());
        mac.update(b".");
        mac.update(body);
        format!("v1,{}", STANDARD.encode(mac.finalize().into_bytes()))
    }
}

/// The body of a notification's webhook.
pub fn body(row: &NotificationRow) -> Vec<u8> {
    let body = json!({
        "type": row.kind.as_str(),
        "timestamp": row.created_at,
        "data": data_of(row),
    });
    body.to_string().into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_signature_is_the_specifications_example() {
        // The example of the Standard Webhooks specification (its reference libraries' tests).
        let key = SigningKey::parse("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").unwrap();
        let body = br#"{"test": 2432232314}"#;
        assert_eq!(
            key.sign("msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, body),
            "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
        );
    }

    #[test]
    fn a_secret_without_its_prefix_or_base64_is_refused_without_repeating_it() {
        for bad in [
            "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
            "whsec_not base64!!",
            "whsec_c2hvcnQ=",
        ] {
            let err = SigningKey::parse(bad).unwrap_err();
            assert!(!err.contains(bad), "{err}");
        }
    }
}
