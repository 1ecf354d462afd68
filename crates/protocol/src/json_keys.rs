//! Finds duplicate object keys in a JSON document, which `serde_json` silently resolves
//! (the last one wins) but other parsers resolve differently (the first one wins).
//!
//! A request whose `decision_type` says "approve" to one reader and "reject" to another must
//! be refused, not guessed at, so the server checks the raw body before decoding it. The
//! scan streams through the document with a serde visitor: nothing is built but one set of
//! keys per open object, and keys are compared after JSON unescaping (`"a"` = `"\u0061"`).

use std::borrow::Cow;
use std::collections::BTreeSet;
use std::fmt;

use serde::de::{DeserializeSeed, Error as _, MapAccess, SeqAccess, Visitor};

/// Why a body was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    /// An object holds `key` twice. `path` is where the second one is, key included, e.g.
    /// `params.message.parts[0].data.decision_type`.
    #[error("duplicate key {key:?} at {}", object_path(path, key))]
    Duplicate { path: String, key: String },
    /// The body is not JSON, or is JSON that `serde_json` refuses (nesting deeper than 128,
    /// a lone surrogate escape, a number out of range); serde_json's message.
    #[error("invalid JSON: {0}")]
    Syntax(String),
}

/// `Ok` when no object anywhere in `body` repeats a key; otherwise the first repeat in
/// document order, or the reason `body` is not JSON. A duplicate found before a syntax error
/// is reported as the duplicate.
pub fn reject_duplicate_keys(body: &[u8]) -> Result<(), KeyError> {
    let mut scan = Scan::default();
    let mut deserializer = serde_json::Deserializer::from_slice(body);
    let outcome = ValueSeed { scan: &mut scan }
        .deserialize(&mut deserializer)
        .and_then(|()| deserializer.end());
    // A duplicate aborts the parse with a placeholder error; the real finding is in `scan`.
    match (outcome, scan.duplicate) {
        (_, Some(duplicate)) => Err(duplicate),
        (Ok(()), None) => Ok(()),
        (Err(err), None) => Err(KeyError::Syntax(err.to_string())),
    }
}

/// The path of the object holding the duplicate, for the message: `path` without its key.
fn object_path<'a>(path: &'a str, key: &str) -> Cow<'a, str> {
    let mut segment = String::new();
    push_key(&mut segment, key);
    match path.strip_suffix(segment.as_str()) {
        Some("") => Cow::Borrowed("the top level"),
        Some(object) => Cow::Borrowed(object.strip_suffix('.').unwrap_or(object)),
        None => Cow::Borrowed(path),
    }
}

/// Appends `.key` (no dot at the start of the path), or `["key"]` for a key that would make
/// the path ambiguous or unreadable (empty, or holding `.`, brackets, quotes, spaces, controls).
fn push_key(path: &mut String, key: &str) {
    let plain = !key.is_empty()
        && !key.chars().any(|c| {
            matches!(c, '.' | '[' | ']' | '"' | '\\') || c.is_whitespace() || c.is_control()
        });
    if plain {
        if !path.is_empty() {
            path.push('.');
        }
        path.push_str(key);
    } else {
        path.push('[');
        // Serializing a str cannot fail; the fallback only keeps this free of `unwrap`.
        path.push_str(&serde_json::to_string(key).unwrap_or_else(|_| format!("{key:?}")));
        path.push(']');
    }
}

/// State shared by every level of one scan.
#[derive(Default)]
struct Scan {
    /// The path of the value being read; each level appends its segment and truncates it back.
    path: String,
    duplicate: Option<KeyError>,
}

/// Reads one JSON value of any kind, checking every object in it.
struct ValueSeed<'s> {
    scan: &'s mut Scan,
}

impl<'de> DeserializeSeed<'de> for ValueSeed<'_> {
    type Value = ();

    fn deserialize<D: serde::Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ValueSeed<'_> {
    type Value = ();

    fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
        formatter.write_str("any JSON value")
    }

    // Scalars hold no keys; serde_json has already validated them (escapes, number range).
    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }

    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }

    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }

    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }

    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }

    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let start = self.scan.path.len();
        for index in 0.. {
            self.scan.path.truncate(start);
            self.scan.path.push_str(&format!("[{index}]"));
            let seed = ValueSeed {
                scan: &mut *self.scan,
            };
            if seq.next_element_seed(seed)?.is_none() {
                break;
            }
        }
        self.scan.path.truncate(start);
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        // Keys borrow from the body unless they hold escapes; a BTreeSet, not a HashSet, so a
        // body of colliding keys cannot make the scan slow.
        let mut seen: BTreeSet<Cow<'de, str>> = BTreeSet::new();
        let start = self.scan.path.len();
        while let Some(key) = map.next_key_seed(KeySeed)? {
            push_key(&mut self.scan.path, &key);
            if seen.contains(&key) {
                self.scan.duplicate = Some(KeyError::Duplicate {
                    path: self.scan.path.clone(),
                    key: key.into_owned(),
                });
                return Err(A::Error::custom("duplicate key"));
            }
            map.next_value_seed(ValueSeed {
                scan: &mut *self.scan,
            })?;
            self.scan.path.truncate(start);
            seen.insert(key);
        }
        Ok(())
    }
}

/// Reads an object key, unescaped, borrowing it from the body when it has no escapes.
struct KeySeed;

impl<'de> DeserializeSeed<'de> for KeySeed {
    type Value = Cow<'de, str>;

    fn deserialize<D: serde::Deserializer<'de>>(
        self,
        deserializer: D,
    ) -> Result<Cow<'de, str>, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for KeySeed {
    type Value = Cow<'de, str>;

    fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
        formatter.write_str("an object key")
    }

    fn visit_borrowed_str<E>(self, key: &'de str) -> Result<Cow<'de, str>, E> {
        Ok(Cow::Borrowed(key))
    }

    fn visit_str<E>(self, key: &str) -> Result<Cow<'de, str>, E> {
        Ok(Cow::Owned(key.to_owned()))
    }

    fn visit_string<E>(self, key: String) -> Result<Cow<'de, str>, E> {
        Ok(Cow::Owned(key))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn duplicate(path: &str, key: &str) -> Result<(), KeyError> {
        Err(KeyError::Duplicate {
            path: path.to_owned(),
            key: key.to_owned(),
        })
    }

    #[test]
    fn a_nested_duplicate_is_named_by_its_path() {
        let body = br#"{"jsonrpc":"2.0","params":{"message":{"parts":[{"kind":"data",
            "data":{"decision_type":"approve","decision_type":"reject"}}]}}}"#;
        let found = reject_duplicate_keys(body);
        assert_eq!(
            found,
            duplicate(
                "params.message.parts[0].data.decision_type",
                "decision_type"
            )
        );
        assert_eq!(
            found.unwrap_err().to_string(),
            "duplicate key \"decision_type\" at params.message.parts[0].data"
        );
    }

    #[test]
    fn duplicates_in_arrays_of_objects_are_found() {
        let body = br#"[{"a":1},{"b":[{"c":1},{"c":2,"d":{},"c":3}]}]"#;
        let found = reject_duplicate_keys(body);
        assert_eq!(found, duplicate("[1].b[1].c", "c"));
        assert_eq!(
            found.unwrap_err().to_string(),
            "duplicate key \"c\" at [1].b[1]"
        );
    }

    #[test]
    fn keys_are_compared_after_unescaping() {
        assert_eq!(
            reject_duplicate_keys(br#"{"a":1,"\u0061":2}"#),
            duplicate("a", "a")
        );
        assert_eq!(
            reject_duplicate_keys("{\"é\":1,\"\\u00e9\":2}".as_bytes()),
            duplicate("é", "é")
        );
        // A surrogate pair and the character it encodes are the same key.
        assert_eq!(
            reject_duplicate_keys("{\"😀\":1,\"\\ud83d\\ude00\":2}".as_bytes()),
            duplicate("😀", "😀")
        );
        // Unicode normalization is NOT applied: é precomposed and e + U+0301 differ.
        assert_eq!(
            reject_duplicate_keys("{\"é\":1,\"e\u{301}\":2}".as_bytes()),
            Ok(())
        );
    }

    #[test]
    fn the_same_key_in_sibling_objects_is_fine() {
        let body = br#"{"a":{"id":1,"x":{"id":2}},"b":{"id":3},"c":[{"id":4},{"id":5}],"id":6}"#;
        assert_eq!(reject_duplicate_keys(body), Ok(()));
        assert_eq!(reject_duplicate_keys(br#"{"a":[1,{"a":2}]}"#), Ok(()));
    }

    #[test]
    fn awkward_keys_are_quoted_in_the_path() {
        let found = reject_duplicate_keys(br#"{"a.b":{"":1,"":2}}"#);
        assert_eq!(found, duplicate(r#"["a.b"][""]"#, ""));
        assert_eq!(
            found.unwrap_err().to_string(),
            r#"duplicate key "" at ["a.b"]"#
        );
        assert_eq!(
            reject_duplicate_keys(br#"{"k":1,"k":2}"#)
                .unwrap_err()
                .to_string(),
            "duplicate key \"k\" at the top level"
        );
    }

    #[test]
    fn deep_nesting_is_scanned_up_to_serde_jsons_limit() {
        let deep = |depth: usize, inner: &str| {
            format!("{}{inner}{}", r#"{"a":["#.repeat(depth), "]}".repeat(depth))
        };
        let found = reject_duplicate_keys(deep(60, r#"{"x":1,"x":2}"#).as_bytes());
        let KeyError::Duplicate { path, key } = found.unwrap_err() else {
            panic!("expected a duplicate");
        };
        assert_eq!(key, "x");
        assert_eq!(path, format!("{}x", "a[0].".repeat(60)));
        assert_eq!(reject_duplicate_keys(deep(60, "1").as_bytes()), Ok(()));
        // 200 levels of nesting is past serde_json's limit of 128: refused, not overflowed.
        assert!(matches!(
            reject_duplicate_keys(deep(200, "1").as_bytes()),
            Err(KeyError::Syntax(_))
        ));
        let arrays = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        assert!(matches!(
            reject_duplicate_keys(arrays.as_bytes()),
            Err(KeyError::Syntax(_))
        ));
    }

    #[test]
    fn invalid_json_is_a_syntax_error() {
        for body in [
            &b""[..],
            b"{",
            br#"{"a":1,}"#,
            br#"{"a":1} trailing"#,
            br#"{"a":"\ud800"}"#,
            br#"{"\udc00":1}"#,
            b"\xff",
            b"1e400",
        ] {
            assert!(
                matches!(reject_duplicate_keys(body), Err(KeyError::Syntax(_))),
                "{:?}",
                String::from_utf8_lossy(body)
            );
        }
        // The first finding wins: a duplicate before the syntax error is the duplicate.
        assert_eq!(
            reject_duplicate_keys(br#"{"a":1,"a":2"#),
            duplicate("a", "a")
        );
    }
}
