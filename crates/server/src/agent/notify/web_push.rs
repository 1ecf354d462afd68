//! Web Push (`kind = "web_push"`): a waiting batch reaches the devices its people enrolled,
//! through their browsers' push services, and its decision, cancel or expiry closes the
//! notification on each. Signoff is its own application server: its VAPID key (RFC 8292, an
//! ECDSA P-256 key) is made by the first server that needs one and kept in the store
//! ([`Vapid::load`]), so nothing is set up; each push is encrypted to its subscription's keys as
//! RFC 8291 says (`aes128gcm`, [`encrypt`]) and posted through [`Outbound`], which keeps the
//! client-chosen push URLs public. The runtime writes one outbox row per person
//! (`Notifications::for_event`) and its sender delivers each to that person's devices
//! (`runtime::web_push`).
//!
//! What a push says ([`Message`]): by default only the agent's name ("deploy waits for your
//! approval"), as it may show on a locked screen; `detail = "calls"` adds the calls' names.
//! Its Approve and Reject actions decide nothing by themselves: the service worker asks the
//! server for the batch first and decides through `POST /api/approvals/{taskId}` with its
//! person's session.

use aws_lc_rs::aead::{Aad, LessSafeKey, Nonce, UnboundKey, AES_128_GCM};
use aws_lc_rs::agreement::{self, PrivateKey, UnparsedPublicKey, ECDH_P256};
use aws_lc_rs::hkdf::{KeyType, Salt, HKDF_SHA256};
use aws_lc_rs::rand::{SecureRandom, SystemRandom};
use aws_lc_rs::signature::{EcdsaKeyPair, KeyPair, ECDSA_P256_SHA256_FIXED_SIGNING};
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use base64::Engine as _;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::outbound::{Outbound, OutboundError};
use super::payload::{Notice, NoticeEvent};
use crate::store::{NotificationKind, PushSubscriptionRow, Store};

/// The store's name for the VAPID key.
const KEY_NAME: &str = "web-push-vapid-p256";

/// How long a VAPID JWT is good for (RFC 8292 allows at most 24 hours).
const JWT_LIFETIME_SECS: i64 = 12 * 3600;

/// The record size declared in the header: one record holds every payload Signoff sends.
const RECORD_SIZE: u32 = 4096;

/// The longest plaintext: a record less its delimiter and tag (and push services take 4096
/// bytes of body at most, header included).
pub const MAX_PLAINTEXT: usize = 3800;

/// How long a push service keeps a push for a device that is offline, in seconds.
pub const TTL_SECS: u64 = 24 * 3600;

/// Why a push could not be made or sent.
#[derive(Debug, thiserror::Error)]
pub enum WebPushError {
    #[error("the VAPID key: {0}")]
    Key(String),
    #[error("the subscription's keys: {0}")]
    Subscription(String),
    #[error("encryption failed")]
    Crypto,
    #[error("the push is {0} bytes, more than a push service takes")]
    TooLong(usize),
    #[error("store: {0}")]
    Store(#[from] crate::store::StoreError),
    #[error("{0}")]
    Outbound(#[from] OutboundError),
}

/// Signoff's VAPID key pair.
pub struct Vapid {
    pair: EcdsaKeyPair,
    /// The uncompressed public point, base64url.
    public: String,
}

impl std::fmt::Debug for Vapid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Vapid")
            .field("public", &self.public)
            .finish_non_exhaustive()
    }
}

impl Vapid {
    /// The store's key (made and stored now by the first server that needs one), so every
    /// replica signs with the same and enrolled browsers keep working after a restart.
    pub async fn load(store: &Store) -> Result<Vapid, WebPushError> {
        let rng = SystemRandom::new();
        let candidate = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
            .map_err(|err| WebPushError::Key(err.to_string()))?;
        let stored = store
            .server_key(KEY_NAME, STANDARD.encode(candidate.as_ref()))
            .await?;
        let pkcs8 = STANDARD
            .decode(stored.trim())
            .map_err(|err| WebPushError::Key(format!("stored key is not base64: {err}")))?;
        Vapid::from_pkcs8(&pkcs8)
    }

    fn from_pkcs8(pkcs8: &[u8]) -> Result<Vapid, WebPushError> {
        let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8)
            .map_err(|err| WebPushError::Key(format!("stored key does not read: {err}")))?;
        let public = URL_SAFE_NO_PAD.encode(pair.public_key().as_ref());
        Ok(Vapid { pair, public })
    }

    /// The public key browsers subscribe with (`applicationServerKey`), base64url.
    pub fn public_key(&self) -> &str {
        &self.public
    }

    /// The `Authorization` header of a push to `endpoint`: `vapid t=JWT, k=KEY`, the JWT's
    /// audience the endpoint's origin and its subject `subject` (who runs this server).
    pub fn authorization(
        &self,
        endpoint: &reqwest::Url,
        subject: &str,
    ) -> Result<String, WebPushError> {
        let audience = endpoint.origin().ascii_serialization();
        let header = URL_SAFE_NO_PAD.encode(br#"{"typ":"JWT","alg":"ES256"}"#);
        let claims = json!({
            "aud": audience,
            "exp": chrono::Utc::now().timestamp() + JWT_LIFETIME_SECS,
            "sub": subject,
        });
        let claims = URL_SAFE_NO_PAD.encode(claims.to_string());
        let signed = format!("{header}.{claims}");
        let signature = self
            .pair
            .sign(&SystemRandom::new(), signed.as_bytes())
            .map_err(|err| WebPushError::Key(err.to_string()))?;
        let signature = URL_SAFE_NO_PAD.encode(signature.as_ref());
        Ok(format!("vapid t={signed}.{signature}, k={}", self.public))
    }
}

/// An HKDF output length.
struct Len(usize);

impl KeyType for Len {
    fn len(&self) -> usize {
        self.0
    }
}

fn hkdf(salt: &[u8], ikm: &[u8], info: &[u8], out: &mut [u8]) -> Result<(), WebPushError> {
    let prk = Salt::new(HKDF_SHA256, salt).extract(ikm);
    let info = [info];
    prk.expand(&info, Len(out.len()))
        .and_then(|okm| okm.fill(out))
        .map_err(|_| WebPushError::Crypto)
}

/// `plaintext` encrypted for the subscription of `p256dh` and `auth` (base64url, as browsers
/// give them) as RFC 8291 says: the `aes128gcm` body, in one record, with a fresh key and salt.
pub fn encrypt(p256dh: &str, auth: &str, plaintext: &[u8]) -> Result<Vec<u8>, WebPushError> {
    let sender = PrivateKey::generate(&ECDH_P256).map_err(|_| WebPushError::Crypto)?;
    let mut salt = [0u8; 16];
    SystemRandom::new()
        .fill(&mut salt)
        .map_err(|_| WebPushError::Crypto)?;
    encrypt_with(&sender, salt, p256dh, auth, plaintext)
}

fn encrypt_with(
    sender: &PrivateKey,
    salt: [u8; 16],
    p256dh: &str,
    auth: &str,
    plaintext: &[u8],
) -> Result<Vec<u8>, WebPushError> {
    if plaintext.len() > MAX_PLAINTEXT {
        return Err(WebPushError::TooLong(plaintext.len()));
    }
    let bad = |what: &str| WebPushError::Subscription(format!("{what} is not base64url"));
    let ua_public = URL_SAFE_NO_PAD
        .decode(p256dh.trim_end_matches('='))
        .map_err(|_| bad("p256dh"))?;
    let auth_secret = URL_SAFE_NO_PAD
        .decode(auth.trim_end_matches('='))
        .map_err(|_| bad("auth"))?;
    if ua_public.len() != 65 || ua_public[0] != 4 {
        return Err(WebPushError::Subscription(
            "p256dh is not an uncompressed P-256 point".into(),
        ));
    }
    if auth_secret.len() != 16 {
        return Err(WebPushError::Subscription("auth is not 16 bytes".into()));
    }
    let as_public = sender
        .compute_public_key()
        .map_err(|_| WebPushError::Crypto)?;
    let as_public = as_public.as_ref().to_vec();
    let peer = UnparsedPublicKey::new(&ECDH_P256, &ua_public);
    let ecdh_secret = agreement::agree(sender, peer, WebPushError::Crypto, |secret| {
        Ok(secret.to_vec())
    })?;
    // IKM = HKDF(auth_secret, ecdh_secret, "WebPush: info" || 0 || ua_public || as_public).
    let mut key_info = b"WebPush: info\0".to_vec();
    key_info.extend_from_slice(&ua_public);
    key_info.extend_from_slice(&as_public);
    let mut ikm = [0u8; 32];
    hkdf(&auth_secret, &ecdh_secret, &key_info, &mut ikm)?;
    let mut cek = [0u8; 16];
    hkdf(&salt, &ikm, b"Content-Encoding: aes128gcm\0", &mut cek)?;
    let mut nonce = [0u8; 12];
    hkdf(&salt, &ikm, b"Content-Encoding: nonce\0", &mut nonce)?;
    let key =
        LessSafeKey::new(UnboundKey::new(&AES_128_GCM, &cek).map_err(|_| WebPushError::Crypto)?);
    // The one and last record: the plaintext and its delimiter 2, no padding.
    let mut record = plaintext.to_vec();
    record.push(2);
    key.seal_in_place_append_tag(
        Nonce::assume_unique_for_key(nonce),
        Aad::empty(),
        &mut record,
    )
    .map_err(|_| WebPushError::Crypto)?;
    let mut body = Vec::with_capacity(16 + 4 + 1 + 65 + record.len());
    body.extend_from_slice(&salt);
    body.extend_from_slice(&RECORD_SIZE.to_be_bytes());
    body.push(65);
    body.extend_from_slice(&as_public);
    body.extend_from_slice(&record);
    Ok(body)
}

/// How much a push may say on a locked screen (`[channels.web_push] detail`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Detail {
    /// The agent's name only: "deploy waits for your approval".
    #[default]
    Generic,
    /// The calls' names too: "deploy waits for your approval: write_file, run_shell".
    Calls,
}

/// A Web Push channel: what its pushes say.
#[derive(Debug, Clone)]
pub struct WebPushChannel {
    pub name: String,
    pub detail: Detail,
}

/// What a push carries to the service worker (JSON, encrypted).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// `pending` (show it, with Approve and Reject) or `close` (close it: decided elsewhere).
    #[serde(rename = "type")]
    pub kind: String,
    /// The notification's tag: one per batch, so a later push replaces or closes it.
    pub tag: String,
    pub task_id: String,
    pub batch_id: i64,
    pub title: String,
    pub body: String,
    /// The chat that holds the batch, opened by a click on the notification.
    pub url: String,
    /// The ids of the calls that wait, so the service worker knows the batch it shows is the
    /// one that still waits.
    #[serde(default)]
    pub calls: Vec<String>,
    /// Whether it offers Approve: its person may approve a call of the batch (else Reject
    /// only, for a requester who may not approve their own).
    #[serde(default)]
    pub approve: bool,
}

/// The tag of `batch_id`'s notification, and the `Topic` of its pushes (a push service keeps
/// only the latest undelivered push of a topic: a close replaces the push it closes).
pub fn tag(batch_id: i64) -> String {
    format!("signoff-batch-{batch_id}")
}

/// What the push of `kind`'s `notice` says, with `detail`.
pub fn message(kind: NotificationKind, notice: &Notice, batch_id: i64, detail: Detail) -> Message {
    let agent = notice
        .agent
        .split_once('/')
        .map_or(notice.agent.as_str(), |(_, name)| name);
    let (kind, body) = match (&notice.event, kind) {
        (NoticeEvent::Decided { decided_by, .. }, NotificationKind::Decided) => {
            ("close", format!("{agent}: decided by {decided_by}"))
        }
        (_, NotificationKind::Canceled) => ("close", format!("{agent}: canceled")),
        (_, NotificationKind::Expired) => ("close", format!("{agent}: expired unanswered")),
        (NoticeEvent::Decided { .. }, _) => ("close", format!("{agent}: decided")),
        _ => {
            let mut body = format!("{agent} waits for your approval");
            if detail == Detail::Calls {
                let names: Vec<&str> = notice.calls().iter().map(|c| c.name.as_str()).collect();
                if !names.is_empty() {
                    body = format!("{body}: {}", names.join(", "));
                }
            }
            ("pending", body)
        }
    };
    Message {
        kind: kind.to_owned(),
        tag: tag(batch_id),
        task_id: notice.task_id.clone(),
        batch_id,
        title: "Signoff".to_owned(),
        body: signoff_protocol::redact::shorten_text(&body, 400),
        url: notice.url.clone(),
        calls: notice.calls().iter().map(|call| call.id.clone()).collect(),
        approve: false,
    }
}

/// The sender of Web Push: Signoff's VAPID key, the client-chosen URLs' client, and who runs
/// this server (the JWT's `sub`).
pub struct WebPusher {
    vapid: Vapid,
    outbound: Outbound,
    subject: String,
}

impl std::fmt::Debug for WebPusher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebPusher")
            .field("vapid", &self.vapid)
            .finish_non_exhaustive()
    }
}

/// How one push to a device ended.
#[derive(Debug)]
pub enum Pushed {
    Accepted,
    /// The push service no longer knows the subscription (404 or 410): it is to be deleted.
    Gone,
}

impl WebPusher {
    /// `subject`: an `https:` URL or `mailto:` address a push service may reach the operator at.
    pub fn new(vapid: Vapid, outbound: Outbound, subject: String) -> WebPusher {
        WebPusher {
            vapid,
            outbound,
            subject,
        }
    }

    pub fn vapid(&self) -> &Vapid {
        &self.vapid
    }

    pub fn outbound(&self) -> &Outbound {
        &self.outbound
    }

    /// One push of `message` to `subscription`, urgent when it asks for a decision.
    pub async fn push(
        &self,
        subscription: &PushSubscriptionRow,
        message: &Message,
    ) -> Result<Pushed, WebPushError> {
        let plaintext = serde_json::to_vec(message).map_err(|_| WebPushError::Crypto)?;
        let body = encrypt(&subscription.p256dh, &subscription.auth, &plaintext)?;
        let endpoint = super::outbound::parse_url(&subscription.endpoint, self.outbound.allow())?;
        let urgency = if message.kind == "pending" {
            "high"
        } else {
            "normal"
        };
        let headers = vec![
            (
                "Authorization".to_owned(),
                self.vapid.authorization(&endpoint, &self.subject)?,
            ),
            ("Content-Encoding".to_owned(), "aes128gcm".to_owned()),
            ("TTL".to_owned(), TTL_SECS.to_string()),
            ("Urgency".to_owned(), urgency.to_owned()),
            ("Topic".to_owned(), message.tag.replace('-', "")),
        ];
        match self
            .outbound
            .post(
                &subscription.endpoint,
                headers,
                body,
                "application/octet-stream",
            )
            .await
        {
            Ok(_) => Ok(Pushed::Accepted),
            Err(OutboundError::Status(404 | 410)) => Ok(Pushed::Gone),
            Err(err) => Err(err.into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // RFC 8291, Appendix A.
    const UA_PUBLIC: &str =
        "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4";
    const AUTH: &str = "BTBZMqHH6r4Tts7J_aSIgg";
    const AS_PRIVATE: &str = "yfWPiYE-n46HLnH0KqZOF1fJJU3MYrct3AELtAQ-oRw";
    const SALT: &str = "DGv6ra1nlYgDCS1FRnbzlw";
    const PLAINTEXT: &[u8] = b"When I grow up, I want to be a watermelon";
    const BODY: &str = "DGv6ra1nlYgDCS1FRnbzlwAAEABBBP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A_yl95bQpu6cVPTpK4Mqgkf1CXztLVBSt2Ks3oZwbuwXPXLWyouBWLVWGNWQexSgSxsj_Qulcy4a-fN";

    fn decode(text: &str) -> Vec<u8> {
        URL_SAFE_NO_PAD.decode(text).unwrap()
    }

    #[test]
    fn rfc_8291s_example_encrypts_to_its_body() {
        let sender = PrivateKey::from_private_key(&ECDH_P256, &decode(AS_PRIVATE)).unwrap();
        let salt: [u8; 16] = decode(SALT).try_into().unwrap();
        let body = encrypt_with(&sender, salt, UA_PUBLIC, AUTH, PLAINTEXT).unwrap();
        assert_eq!(URL_SAFE_NO_PAD.encode(&body), BODY);
    }

    #[test]
    fn a_bad_subscription_key_is_named_and_a_long_push_refused() {
        let err = encrypt("AAAA", AUTH, b"x").unwrap_err();
        assert!(err.to_string().contains("p256dh"), "{err}");
        let err = encrypt(UA_PUBLIC, "AAAA", b"x").unwrap_err();
        assert!(err.to_string().contains("auth"), "{err}");
        let err = encrypt(UA_PUBLIC, AUTH, &[b'x'; MAX_PLAINTEXT + 1]).unwrap_err();
        assert!(matches!(err, WebPushError::TooLong(_)), "{err}");
    }
}
