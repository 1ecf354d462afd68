//! The key push notifications are signed with: an Ed25519 key kept in the store, so every
//! replica signs with the same one and it survives restarts; its public part is served as a
//! JWKS at `/.well-known/jwks.json`, where receivers fetch it to check a push's JWT.

use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::signature::{Ed25519KeyPair, KeyPair};
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use base64::Engine as _;
use serde::Serialize;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::store::Store;

/// The store's name for the push signing key.
const KEY_NAME: &str = "push-signing-ed25519";

/// How long a push's JWT is good for after it is made.
const LIFETIME_SECS: i64 = 300;

/// Why the key could not be had or used.
#[derive(Debug, thiserror::Error)]
pub enum SignerError {
    #[error("the push signing key: {0}")]
    Key(String),
    #[error("store: {0}")]
    Store(#[from] crate::store::StoreError),
}

/// The claims of a push's JWT: who sent it (`iss`), to which URL (`aud`), when (`iat`,
/// `exp`), the notification's id (`jti`: the same on every retry, so a receiver that keeps the
/// ids it took takes each notification once, and a replay is seen), the task, and the SHA-256 of the exact body
/// posted (`request_body_sha256`, hex), so the signature covers the payload.
#[derive(Debug, Serialize)]
struct Claims<'a> {
    iss: &'a str,
    aud: &'a str,
    iat: i64,
    exp: i64,
    jti: &'a str,
    #[serde(rename = "taskId")]
    task_id: &'a str,
    request_body_sha256: String,
}

pub struct Signer {
    pkcs8: Vec<u8>,
    public: Vec<u8>,
    kid: String,
    issuer: String,
}

impl std::fmt::Debug for Signer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Signer")
            .field("kid", &self.kid)
            .finish_non_exhaustive()
    }
}

impl Signer {
    /// The store's key (made and stored now by the first server that needs one).
    pub async fn load(store: &Store, issuer: String) -> Result<Signer, SignerError> {
        let candidate = Ed25519KeyPair::generate_pkcs8(&SystemRandom::new())
            .map_err(|err| SignerError::Key(err.to_string()))?;
        let stored = store
            .server_key(KEY_NAME, STANDARD.encode(candidate.as_ref()))
            .await?;
        let pkcs8 = STANDARD
            .decode(stored.trim())
            .map_err(|err| SignerError::Key(format!("stored key is not base64: {err}")))?;
        Signer::from_pkcs8(pkcs8, issuer)
    }

    fn from_pkcs8(pkcs8: Vec<u8>, issuer: String) -> Result<Signer, SignerError> {
        let pair = Ed25519KeyPair::from_pkcs8(&pkcs8)
            .map_err(|err| SignerError::Key(format!("stored key does not read: {err}")))?;
        let public = pair.public_key().as_ref().to_vec();
        let kid = URL_SAFE_NO_PAD.encode(&Sha256::digest(&public)[..12]);
        Ok(Signer {
            pkcs8,
            public,
            kid,
            issuer,
        })
    }

    /// The public key as a JSON Web Key Set.
    pub fn jwks(&self) -> Value {
        json!({"keys": [{
            "kty": "OKP",
            "crv": "Ed25519",
            "alg": "EdDSA",
            "use": "sig",
            "kid": self.kid,
            "x": URL_SAFE_NO_PAD.encode(&self.public),
        }]})
    }

    /// A JWT for posting `body` about `task_id` to `url` as the notification `id`.
    pub fn sign(
        &self,
        url: &str,
        task_id: &str,
        id: &str,
        body: &[u8],
    ) -> Result<String, SignerError> {
        let now = chrono::Utc::now().timestamp();
        let claims = Claims {
            iss: &self.issuer,
            aud: url,
            iat: now,
            exp: now + LIFETIME_SECS,
            jti: id,
            task_id,
            request_body_sha256: hex(&Sha256::digest(body)),
        };
        let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::EdDSA);
        header.kid = Some(self.kid.clone());
        jsonwebtoken::encode(
            &header,
            &claims,
            &jsonwebtoken::EncodingKey::from_ed_der(&self.pkcs8),
        )
        .map_err(|err| SignerError::Key(err.to_string()))
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_jwt_verifies_with_the_served_key_and_covers_the_body() {
        let pkcs8 = Ed25519KeyPair::generate_pkcs8(&SystemRandom::new()).unwrap();
        let signer = Signer::from_pkcs8(pkcs8.as_ref().to_vec(), "signoff".into()).unwrap();
        let token = signer
            .sign("https://example.com/hook", "t-1", "push_1", b"{\"a\":1}")
            .unwrap();
        let jwks: jsonwebtoken::jwk::JwkSet = serde_json::from_value(signer.jwks()).unwrap();
        let header = jsonwebtoken::decode_header(&token).unwrap();
        let jwk = jwks.find(header.kid.as_deref().unwrap()).unwrap();
        let key = jsonwebtoken::DecodingKey::from_jwk(jwk).unwrap();
        let mut validation = jsonwebtoken::Validation::new(jsonwebtoken::Algorithm::EdDSA);
        validation.set_audience(&["https://example.com/hook"]);
        validation.set_issuer(&["signoff"]);
        let data = jsonwebtoken::decode::<Value>(&token, &key, &validation).unwrap();
        assert_eq!(data.claims["taskId"], "t-1");
        assert_eq!(data.claims["jti"], "push_1");
        assert_eq!(
            data.claims["request_body_sha256"],
            hex(&Sha256::digest(b"{\"a\":1}"))
        );
        // Another key's signature does not verify.
        let other = Ed25519KeyPair::generate_pkcs8(&SystemRandom::new()).unwrap();
        let other = Signer::from_pkcs8(other.as_ref().to_vec(), "signoff".into()).unwrap();
        let forged = other
            .sign("https://example.com/hook", "t-1", "push_1", b"{}")
            .unwrap();
        assert!(jsonwebtoken::decode::<Value>(&forged, &key, &validation).is_err());
    }
}
