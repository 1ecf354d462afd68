//! A2A push notifications: a task's update is POSTed to one of its push configs' URLs, in
//! the payload of the version the config was set in, with the config's token
//! (`X-A2A-Notification-Token`) and authentication (`Authorization: SCHEME CREDENTIALS`), and
//! signed by the server's key as a JWT whose `jti` is the outbox row's id, the same on every
//! retry (`outbound` keeps client-chosen URLs off private networks; `signer` holds the key and
//! serves its JWKS). docs/wire.md, Push notifications.

use signoff_protocol::{codec, ProtocolVersion, PushConfig, Task};

use super::outbound::{self, Outbound, OutboundError};
use super::signer::Signer;
use crate::store::PushConfigRow;

/// The header that carries the config's token back to its receiver.
pub const TOKEN_HEADER: &str = "X-A2A-Notification-Token";
/// The header that always carries the push's JWT (also sent as `Authorization: Bearer` when
/// the config names no authentication of its own).
pub const SIGNATURE_HEADER: &str = "X-A2A-Notification-Signature";

/// The longest token, scheme, credentials and config id a client may give.
pub const MAX_TOKEN_BYTES: usize = 1024;
pub const MAX_SCHEME_BYTES: usize = 64;
pub const MAX_CREDENTIALS_BYTES: usize = 4096;
pub const MAX_ID_BYTES: usize = 256;

/// The sender of push notifications.
pub struct Notifier {
    outbound: Outbound,
    signer: Signer,
}

impl std::fmt::Debug for Notifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Notifier").finish_non_exhaustive()
    }
}

/// Why a config is refused: the message a client reads.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Refused(pub String);

impl Notifier {
    pub fn new(outbound: Outbound, signer: Signer) -> Notifier {
        Notifier { outbound, signer }
    }

    pub fn jwks(&self) -> serde_json::Value {
        self.signer.jwks()
    }

    /// Checks a config a client gave: sizes, header-safe token and authentication, and its URL
    /// (form, and where its host resolves now).
    pub async fn check(&self, config: &PushConfig) -> Result<(), Refused> {
        let visible = |text: &str| text.bytes().all(|b| (0x20..0x7f).contains(&b));
        if let Some(id) = &config.id {
            if id.is_empty() || id.len() > MAX_ID_BYTES {
                return Err(Refused(format!(
                    "a push config id must be 1 to {MAX_ID_BYTES} bytes"
                )));
            }
        }
        if let Some(token) = &config.token {
            if token.len() > MAX_TOKEN_BYTES || !visible(token) {
                return Err(Refused(format!(
                    "a push config token must be at most {MAX_TOKEN_BYTES} bytes of visible ASCII"
                )));
            }
        }
        if let Some(auth) = &config.authentication {
            let token_char = |b: u8| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b);
            if auth.scheme.is_empty()
                || auth.scheme.len() > MAX_SCHEME_BYTES
                || !auth.scheme.bytes().all(token_char)
            {
                return Err(Refused(format!(
                    "authentication scheme {:?} is not an HTTP authentication scheme name",
                    auth.scheme
                )));
            }
            if let Some(credentials) = &auth.credentials {
                if credentials.len() > MAX_CREDENTIALS_BYTES || !visible(credentials) {
                    return Err(Refused(format!(
                        "authentication credentials must be at most {MAX_CREDENTIALS_BYTES} bytes of visible ASCII"
                    )));
                }
            }
        }
        outbound::check_url(&config.url, self.outbound.allow())
            .await
            .map(|_| ())
            .map_err(|err| Refused(format!("push notification URL refused: {err}")))
    }

    /// One POST of `task` to the config's URL, as the notification `id` (the JWT's `jti`).
    pub async fn post(
        &self,
        config: &PushConfigRow,
        task: &Task,
        id: &str,
    ) -> Result<(), OutboundError> {
        let version =
            ProtocolVersion::from_header(&config.version).unwrap_or(ProtocolVersion::V0_3);
        let body = codec::encode_push_notification(version, task)
            .to_string()
            .into_bytes();
        let jwt = self
            .signer
            .sign(&config.url, &task.id, id, &body)
            .map_err(|err| OutboundError::Request(err.to_string()))?;
        let mut headers = vec![
            (SIGNATURE_HEADER.to_owned(), jwt.clone()),
            ("A2A-Version".to_owned(), version.as_str().to_owned()),
        ];
        if let Some(token) = &config.token {
            headers.push((TOKEN_HEADER.to_owned(), token.clone()));
        }
        let authorization = match (&config.auth_scheme, &config.auth_credentials) {
            (Some(scheme), Some(credentials)) => format!("{scheme} {credentials}"),
            // A scheme without credentials names how to authenticate but gives nothing to
            // send: the JWT is the credential then, as it is when no scheme is named.
            (Some(_) | None, _) => format!("Bearer {jwt}"),
        };
        headers.push(("Authorization".to_owned(), authorization));
        self.outbound
            .post_json(&config.url, headers, body)
            .await
            .map(|_| ())
    }
}
