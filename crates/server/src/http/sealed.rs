//! Values a client carries for the server and hands back (a sign-in's cookie, an MCP session
//! id): the value's JSON and its MAC, each base64url, joined by a dot. The MAC (HMAC-SHA256
//! with a key in the store, so every replica reads what another sealed) also covers a context
//! that names what the value is, so a sealed value of one kind never opens as another.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use hmac::{Hmac, Mac};
use serde::de::DeserializeOwned;
use serde::Serialize;
use sha2::Sha256;

/// `value` sealed under `key` for `context`.
pub fn seal<T: Serialize>(key: &[u8], context: &[u8], value: &T) -> Result<String, String> {
    let json = serde_json::to_vec(value).map_err(|err| format!("sealing a value: {err}"))?;
    let payload = URL_SAFE_NO_PAD.encode(json);
    let tag = mac(key, context, &payload)?.finalize().into_bytes();
    Ok(format!("{payload}.{}", URL_SAFE_NO_PAD.encode(tag)))
}

/// The value `sealed` holds, if its MAC is `key`'s for `context` (checked in constant time).
pub fn open<T: DeserializeOwned>(key: &[u8], context: &[u8], sealed: &str) -> Option<T> {
    let (payload, tag) = sealed.split_once('.')?;
    let tag = URL_SAFE_NO_PAD.decode(tag).ok()?;
    mac(key, context, payload).ok()?.verify_slice(&tag).ok()?;
    let json = URL_SAFE_NO_PAD.decode(payload).ok()?;
    serde_json::from_slice(&json).ok()
}

fn mac(key: &[u8], context: &[u8], payload: &str) -> Result<Hmac<Sha256>, String> {
    let mut mac =
        Hmac::<Sha256>::new_from_slice(key).map_err(|err| format!("the sealing key: {err}"))?;
    mac.update(context);
    mac.update(payload.as_bytes());
    Ok(mac)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_value_sealed_for_one_context_does_not_open_for_another() {
        let key = [3u8; 32];
        let sealed = seal(&key, b"one\n", &"value").unwrap();
        assert_eq!(
            open::<String>(&key, b"one\n", &sealed).as_deref(),
            Some("value")
        );
        assert_eq!(open::<String>(&key, b"two\n", &sealed), None);
        assert_eq!(open::<String>(&[4u8; 32], b"one\n", &sealed), None);
    }
}
