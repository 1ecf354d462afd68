//! Tool arguments made fit to show outside Signoff (a Slack message, a webhook, an email):
//! values under secret-looking keys and values that look like credentials masked, secrets
//! inside longer strings masked in place (`inline`), long strings shortened. One set of rules,
//! here, so every channel masks the same.

mod inline;

use serde_json::{Map, Value};

pub use inline::mask_in_text;

/// What a masked value is replaced with.
pub const MASK: &str = "[masked]";

/// Words that make a key's value secret, wherever they appear in the key (compared in lower
/// case, `-` read as `_`): `db_password`, `X-Api-Key`, `refresh_token`, `Authorization`.
const SECRET_KEY_WORDS: [&str; 13] = [
    "password",
    "passwd",
    "passphrase",
    "secret",
    "token",
    "api_key",
    "apikey",
    "authorization",
    "credential",
    "private_key",
    "access_key",
    "cookie",
    "session_key",
];

/// Prefixes of well-known credentials: bearer and basic authorization values, and the keys of
/// common services (OpenAI and Stripe `sk-`/`sk_`, GitHub, GitLab, Slack, AWS, Google, Standard
/// Webhooks secrets), and PEM private keys.
const SECRET_PREFIXES: [&str; 15] = [
    "bearer ",
    "basic ",
    "sk-",
    "sk_live_",
    "sk_test_",
    "ghp_",
    "gho_",
    "ghs_",
    "github_pat_",
    "glpat-",
    "xoxb-",
    "xoxp-",
    "whsec_",
    "aiza",
    "-----begin",
];

/// Whether a value under `key` is a secret, by the key's name alone.
pub fn is_secret_key(key: &str) -> bool {
    let key = key.to_ascii_lowercase().replace('-', "_");
    key == "key" || key == "pass" || SECRET_KEY_WORDS.iter().any(|word| key.contains(word))
}

/// Whether `value` looks like a credential whatever its key: a known prefix, a JWT, an AWS
/// access key id, or a long unbroken token mixing upper case, lower case and digits (hex
/// digests and UUIDs, all lower case, are left alone).
pub fn looks_like_secret(value: &str) -> bool {
    let trimmed = value.trim();
    let lower = trimmed.to_ascii_lowercase();
    if SECRET_PREFIXES
        .iter()
        .any(|prefix| lower.starts_with(prefix))
    {
        return true;
    }
    if trimmed.starts_with("eyJ") && trimmed.split('.').count() == 3 && !trimmed.contains(' ') {
        return true;
    }
    let token_chars = |c: char| c.is_ascii_alphanumeric() || "-_+/=.".contains(c);
    if trimmed.len() == 20
        && (trimmed.starts_with("AKIA") || trimmed.starts_with("ASIA"))
        && trimmed
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit())
    {
        return true;
    }
    trimmed.len() >= 32
        && trimmed.chars().all(token_chars)
        && trimmed.chars().any(|c| c.is_ascii_uppercase())
        && trimmed.chars().any(|c| c.is_ascii_lowercase())
        && trimmed.chars().any(|c| c.is_ascii_digit())
}

/// `value` with every secret masked: the value of a secret key (whatever it holds), every
/// string that looks like a credential, and the secrets inside every other string
/// ([`mask_in_text`]).
pub fn mask_secrets(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(key, inner)| {
                    let masked = if is_secret_key(key) && !inner.is_null() {
                        Value::String(MASK.to_owned())
                    } else {
                        mask_secrets(inner)
                    };
                    (key.clone(), masked)
                })
                .collect::<Map<String, Value>>(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(mask_secrets).collect()),
        Value::String(text) if looks_like_secret(text) => Value::String(MASK.to_owned()),
        Value::String(text) => Value::String(mask_in_text(text)),
        other @ (Value::Null | Value::Bool(_) | Value::Number(_)) => other.clone(),
    }
}

/// `text` cut to at most `max_chars` characters, an ellipsis marking the cut.
pub fn shorten_text(text: &str, max_chars: usize) -> String {
    match text.char_indices().nth(max_chars) {
        None => text.to_owned(),
        Some(_) => {
            let kept: String = text.chars().take(max_chars.saturating_sub(1)).collect();
            format!("{kept}…")
        }
    }
}

/// Arguments as shown outside Signoff: secrets masked, then every string shortened to
/// `max_chars` characters.
pub fn display_args(args: &Value, max_chars: usize) -> Value {
    fn shorten(value: Value, max_chars: usize) -> Value {
        match value {
            Value::String(text) => Value::String(shorten_text(&text, max_chars)),
            Value::Array(items) => Value::Array(
                items
                    .into_iter()
                    .map(|item| shorten(item, max_chars))
                    .collect(),
            ),
            Value::Object(map) => Value::Object(
                map.into_iter()
                    .map(|(key, inner)| (key, shorten(inner, max_chars)))
                    .collect(),
            ),
            other @ (Value::Null | Value::Bool(_) | Value::Number(_)) => other,
        }
    }
    shorten(mask_secrets(args), max_chars)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn secret_keys_are_masked_whatever_they_hold() {
        let args = json!({
            "path": "notes.txt",
            "password": "hunter2",
            "DB-Password": "x",
            "headers": {"Authorization": "anything", "X-Api-Key": 12345, "accept": "json"},
            "refresh_token": {"nested": true},
            "key": "k",
            "monkey_count": 3,
            "session_id": "s-1",
            "empty_secret": null
        });
        assert_eq!(
            mask_secrets(&args),
            json!({
                "path": "notes.txt",
                "password": MASK,
                "DB-Password": MASK,
                "headers": {"Authorization": MASK, "X-Api-Key": MASK, "accept": "json"},
                "refresh_token": MASK,
                "key": MASK,
                "monkey_count": 3,
                "session_id": "s-1",
                "empty_secret": null
            })
        );
    }

    #[test]
    fn values_that_look_like_credentials_are_masked_under_any_key() {
        for secret in [
            "Bearer abc.def",
            "sk-proj-abcdefghijkl",
            "ghp_0123456789abcdefABCDEF",
            "xoxb-1-2-3",
            "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
            "AKIAIOSFODNN7EXAMPLE",
            "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl",
            "-----BEGIN PRIVATE KEY-----\nMII",
            "Zm9vYmFyQmF6cXV4MTIzNDU2Nzg5MEFCQ0RFRkdI",
        ] {
            assert!(looks_like_secret(secret), "{secret}");
            assert_eq!(mask_secrets(&json!([secret])), json!([MASK]), "{secret}");
        }
        for plain in [
            "notes/todo.txt",
            "hello world, this is a long sentence with 123 numbers in it",
            "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
            "123e4567-e89b-12d3-a456-426614174000",
            "skate",
        ] {
            assert!(!looks_like_secret(plain), "{plain}");
        }
    }

    #[test]
    fn secrets_inside_strings_are_masked_in_place_at_any_depth() {
        let args = json!({
            "command": "curl -H 'Authorization: Bearer abcdefgh12345678' https://x",
            "steps": [{"run": "DB_PASSWORD=hunter2 make deploy"}],
            "note": "nothing secret here",
        });
        assert_eq!(
            mask_secrets(&args),
            json!({
                "command": "curl -H 'Authorization: [masked]' https://x",
                "steps": [{"run": "DB_PASSWORD=[masked] make deploy"}],
                "note": "nothing secret here",
            })
        );
    }

    #[test]
    fn display_args_masks_then_shortens_every_string() {
        let long = "a".repeat(50);
        let shown = display_args(&json!({"content": long, "token": long, "n": [long]}), 10);
        assert_eq!(
            shown,
            json!({"content": "aaaaaaaaa…", "token": MASK, "n": ["aaaaaaaaa…"]})
        );
        assert_eq!(shorten_text("héllo", 5), "héllo");
        assert_eq!(shorten_text("héllo!", 5), "héll…");
    }
}
