//! Invisible characters made visible in the JSON a person approves: a bidi override (U+202E)
//! draws `report<U+202E>fdp.sh` as `reporths.pdf`, and a zero-width space makes two paths look
//! the same, so the arguments on a card would not be what runs.

/// Characters that change how text around them is drawn, or draw nothing: bidi embeddings,
/// overrides, isolates and marks, the zero-width space and word joiners. Not the zero-width
/// (non-)joiners U+200C and U+200D, which emoji and several scripts need to be drawn right.
fn is_hidden(c: char) -> bool {
    matches!(
        c,
        '\u{061C}'
            | '\u{200B}'
            | '\u{200E}'
            | '\u{200F}'
            | '\u{202A}'..='\u{202E}'
            | '\u{2060}'..='\u{2069}'
            | '\u{FEFF}'
    )
}

/// `json` with each hidden character written as its `\uXXXX` escape. Such characters only
/// occur inside JSON strings, where the escape means the same character: the text still
/// parses to the same value, so it can go back into the arguments editor as it is.
pub fn reveal(json: &str) -> String {
    if !json.chars().any(is_hidden) {
        return json.to_owned();
    }
    let mut out = String::with_capacity(json.len() + 16);
    for c in json.chars() {
        if is_hidden(c) {
            // By hand rather than `format!`: hex formatting is code the download otherwise
            // does without. Every hidden character is in the Basic Multilingual Plane.
            out.push_str("\\u");
            for shift in [12, 8, 4, 0] {
                out.push(char::from(
                    b"0123456789ABCDEF"[(u32::from(c) >> shift) as usize & 0xF],
                ));
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::reveal;
    use serde_json::{json, Value};

    #[test]
    fn a_bidi_override_in_an_argument_shows_as_its_escape_and_parses_back_the_same() {
        let args = json!({"path": "report\u{202E}fdp.sh", "note\u{200B}": "a\u{2066}b\u{FEFF}"});
        let shown = reveal(&serde_json::to_string_pretty(&args).unwrap());
        assert!(shown.contains(r#""path": "report\u202Efdp.sh""#), "{shown}");
        assert!(
            shown.contains(r#""note\u200B": "a\u2066b\uFEFF""#),
            "{shown}"
        );
        assert!(!shown.chars().any(super::is_hidden), "{shown}");
        let back: Value = serde_json::from_str(&shown).unwrap();
        assert_eq!(back, args);
    }

    #[test]
    fn visible_text_is_left_as_it_is() {
        let text = "{\n  \"path\": \"مرحبا/naïve 👩‍👩‍👧.txt\"\n}";
        assert_eq!(reveal(text), text);
    }
}
