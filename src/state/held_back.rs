//! Tools held back because their server changed their definition (docs/rest.md, Tool
//! definitions), in words: the notice that says how many, who pinned a tool, and each side of a
//! change as text a person can read and compare.

use serde_json::Value;
use signoff_protocol::rest::DefinitionChange;

/// Who pinned a definition the server saw for the first time (`pinnedBy`).
const FIRST_USE: &str = "first use";

/// The notice for `count` held-back tools; none when nothing is held back.
pub fn notice(count: u32) -> Option<String> {
    match count {
        0 => None,
        1 => Some("1 tool held back: its server changed its definition".to_owned()),
        count => Some(format!(
            "{count} tools held back: their servers changed their definitions"
        )),
    }
}

/// How the definition approved until now was pinned, and `when` (already in the reader's
/// words), after the word "Pinned".
pub fn pinned(by: &str, when: &str) -> String {
    match by {
        FIRST_USE => format!("on first use, {when}"),
        by => format!("when {by} approved it, {when}"),
    }
}

/// What happened at one place of the definition: a side with nothing is an added or a removed
/// part (a new argument, a dropped one).
pub fn what_changed(change: &DefinitionChange) -> &'static str {
    match (&change.before, &change.after) {
        (None, Some(_)) => "added",
        (Some(_), None) => "removed",
        _ => "changed",
    }
}

/// One side of a change as text: a string as it reads (a description is prose, not JSON),
/// any other value as pretty JSON. Invisible characters are written as escapes either way: a
/// poisoned description is where hidden orders to a model would sit.
pub fn side_text(value: &Value) -> String {
    let text = match value.as_str() {
        Some(text) => text.to_owned(),
        None => serde_json::to_string_pretty(value).unwrap_or_default(),
    };
    super::hidden::reveal(&text)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_notice_counts_the_tools_held_back() {
        assert_eq!(notice(0), None);
        assert_eq!(
            notice(1).as_deref(),
            Some("1 tool held back: its server changed its definition")
        );
        assert_eq!(
            notice(3).as_deref(),
            Some("3 tools held back: their servers changed their definitions")
        );
    }

    #[test]
    fn a_pin_says_whether_it_was_first_seen_or_approved() {
        assert_eq!(pinned("first use", "today"), "on first use, today");
        assert_eq!(pinned("alice", "today"), "when alice approved it, today");
    }

    #[test]
    fn a_side_with_nothing_is_an_addition_or_a_removal() {
        let at = |before: Option<Value>, after: Option<Value>| DefinitionChange {
            at: "/inputSchema/properties/x".to_owned(),
            before,
            after,
        };
        assert_eq!(what_changed(&at(None, Some(json!(1)))), "added");
        assert_eq!(what_changed(&at(Some(json!(1)), None)), "removed");
        assert_eq!(what_changed(&at(Some(json!(1)), Some(json!(2)))), "changed");
    }

    #[test]
    fn strings_read_as_text_and_other_values_as_pretty_json() {
        assert_eq!(side_text(&json!("Reads one file.")), "Reads one file.");
        assert_eq!(
            side_text(&json!({"type": "string"})),
            "{\n  \"type\": \"string\"\n}"
        );
        // A bidi override in a description shows as its escape, not as reordered text.
        assert_eq!(side_text(&json!("safe\u{202E}txt")), "safe\\u202Etxt");
    }
}
