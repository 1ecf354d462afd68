//! RFC 8785 (JSON Canonicalization Scheme) text of a JSON value, so a digest of a tool's
//! definition or a call's arguments is the same whatever order the keys came in and however
//! they were spaced, and a signed decision receipt is checked over the same bytes it was
//! signed over. serde_json keeps keys in insertion order here (`preserve_order` is on in the build),
//! so objects are sorted by hand: by UTF-16 code units, as the RFC says.

use serde_json::Value;

/// The canonical text of `value`.
pub fn canonical(value: &Value) -> String {
    let mut out = String::new();
    write_value(value, &mut out);
    out
}

fn write_value(value: &Value, out: &mut String) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(flag) => out.push_str(if *flag { "true" } else { "false" }),
        Value::Number(number) => write_number(number, out),
        Value::String(text) => write_string(text, out),
        Value::Array(items) => {
            out.push('[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                write_value(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|(a, _), (b, _)| a.encode_utf16().cmp(b.encode_utf16()));
            out.push('{');
            for (index, (key, item)) in entries.into_iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                write_string(key, out);
                out.push(':');
                write_value(item, out);
            }
            out.push('}');
        }
    }
}

/// `text` quoted as the RFC escapes it (as ECMAScript's `JSON.stringify` does): `"`, `\\`,
/// \b \f \n \r \t by name, other control characters as lowercase \u00xx, everything else as
/// it is. Runs without an escape are copied whole: receipts and arguments are mostly plain.
fn write_string(text: &str, out: &mut String) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.reserve(text.len() + 2);
    out.push('"');
    let mut plain = 0;
    for (index, byte) in text.bytes().enumerate() {
        let escape = match byte {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            0x08 => "\\b",
            0x0c => "\\f",
            b'\n' => "\\n",
            b'\r' => "\\r",
            b'\t' => "\\t",
            0x00..=0x1f => "",
            _ => continue,
        };
        out.push_str(&text[plain..index]);
        plain = index + 1;
        if escape.is_empty() {
            out.push_str("\\u00");
            out.push(char::from(HEX[usize::from(byte >> 4)]));
            out.push(char::from(HEX[usize::from(byte & 0x0f)]));
        } else {
            out.push_str(escape);
        }
    }
    out.push_str(&text[plain..]);
    out.push('"');
}

/// A number as `number_text` writes it, integers straight into `out`.
fn write_number(number: &serde_json::Number, out: &mut String) {
    use std::fmt::Write as _;
    if let Some(integer) = number.as_i64() {
        let _ = write!(out, "{integer}");
    } else if let Some(integer) = number.as_u64() {
        let _ = write!(out, "{integer}");
    } else {
        out.push_str(&number_text(number));
    }
}

/// A number as ECMAScript's `Number.prototype.toString` writes it (the RFC's rule): integers
/// as they are, others from the shortest digits that read back the same.
fn number_text(number: &serde_json::Number) -> String {
    if let Some(integer) = number.as_i64() {
        return integer.to_string();
    }
    if let Some(integer) = number.as_u64() {
        return integer.to_string();
    }
    let Some(float) = number.as_f64() else {
        return number.to_string();
    };
    if float == 0.0 {
        return "0".to_owned();
    }
    // `{:e}` gives the shortest round-trip digits: "-1.25e-7" is sign, digits, exponent.
    let scientific = format!("{:e}", float.abs());
    let (mantissa, exponent) = scientific.split_once('e').unwrap_or((&scientific, "0"));
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let exponent: i32 = exponent.parse().unwrap_or(0);
    let sign = if float < 0.0 { "-" } else { "" };
    let (k, n) = (digits.len() as i32, exponent + 1);
    let body = if k <= n && n <= 21 {
        format!("{digits}{}", "0".repeat((n - k) as usize))
    } else if 0 < n && n <= 21 {
        let (whole, fraction) = digits.split_at(n as usize);
        format!("{whole}.{fraction}")
    } else if -6 < n && n <= 0 {
        format!("0.{}{digits}", "0".repeat((-n) as usize))
    } else {
        let (first, rest) = digits.split_at(1);
        let fraction = if rest.is_empty() {
            String::new()
        } else {
            format!(".{rest}")
        };
        let exp_sign = if n - 1 < 0 { "-" } else { "+" };
        format!("{first}{fraction}e{exp_sign}{}", (n - 1).abs())
    };
    format!("{sign}{body}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keys_are_sorted_and_nothing_is_spaced() {
        let value: Value =
            serde_json::from_str(r#"{ "b": [1, {"z": null, "a": true}], "a": "x" }"#).unwrap();
        assert_eq!(
            canonical(&value),
            r#"{"a":"x","b":[1,{"a":true,"z":null}]}"#
        );
    }

    #[test]
    fn the_same_definition_in_another_key_order_has_the_same_text() {
        let one: Value = serde_json::from_str(
            r#"{"name":"w","inputSchema":{"type":"object","required":["p"]}}"#,
        )
        .unwrap();
        let two: Value = serde_json::from_str(
            r#"{"inputSchema":{"required":["p"],"type":"object"},"name":"w"}"#,
        )
        .unwrap();
        assert_eq!(canonical(&one), canonical(&two));
        assert_ne!(canonical(&one), canonical(&json!({"name": "w2"})));
    }

    #[test]
    fn keys_sort_by_utf16_code_units_as_the_rfc_says() {
        // The RFC's own example (3.2.3): U+1F600 (a surrogate pair, D83D) sorts before U+FB33
        // in UTF-16, after it in UTF-8 or by code point.
        let value = json!({"\u{fb33}": 1, "\u{1f600}": 2, "\r": 3, "1": 4, "\u{80}": 5});
        assert_eq!(
            canonical(&value),
            "{\"\\r\":3,\"1\":4,\"\u{80}\":5,\"\u{1f600}\":2,\"\u{fb33}\":1}"
        );
    }

    #[test]
    fn numbers_are_written_as_ecmascript_writes_them() {
        // The RFC's appendix B, as far as JSON can carry the values.
        let cases = [
            ("0.0", "0"),
            ("-0.0", "0"),
            ("1e21", "1e+21"),
            ("1e20", "100000000000000000000"),
            ("333333333.3333333", "333333333.3333333"),
            ("0.000001", "0.000001"),
            ("0.0000001", "1e-7"),
            ("-1.5e-7", "-1.5e-7"),
            ("4.5", "4.5"),
            ("2e-3", "0.002"),
            ("1.7976931348623157e308", "1.7976931348623157e+308"),
            ("9007199254740993", "9007199254740993"),
        ];
        for (input, written) in cases {
            let value: Value = serde_json::from_str(input).unwrap();
            assert_eq!(canonical(&value), written, "{input}");
        }
    }

    #[test]
    fn strings_are_escaped_as_serde_json_escapes_them() {
        // Every one-byte character, and escapes at the start, the end and side by side.
        let mut every: String = (0u8..=0x7f).map(char::from).collect();
        every.push_str("\"\\\n\u{0}é\u{1f600}\t");
        for text in [every.as_str(), "", "\"", "plain", "\\\\", "a\u{1}b"] {
            let expected = Value::String(text.to_owned()).to_string();
            assert_eq!(canonical(&json!(text)), expected, "{text:?}");
        }
    }

    #[test]
    fn control_characters_are_escaped_in_lowercase_and_the_rest_kept() {
        let value = json!("a\u{1}\u{1f}\"\\/é\u{7f}\n");
        assert_eq!(canonical(&value), "\"a\\u0001\\u001f\\\"\\\\/é\u{7f}\\n\"");
    }
}
