//! `--auth tokens`: static bearer tokens, each standing for a user and its groups. Written
//! `TOKEN=USER` or `TOKEN=USER:GROUP+GROUP…`, comma-separated in `--tokens`, or one or more a
//! line in `--tokens-file` (blank lines and `#` comments skipped).

use std::collections::HashMap;

use super::{is_clean, Identity};

/// Reads `TOKEN=USER[:GROUP+GROUP…]` entries; `source` names where they came from in errors
/// (never a token's value).
pub fn parse<'a>(
    entries: impl IntoIterator<Item = &'a str>,
    source: &str,
    tokens: &mut HashMap<String, Identity>,
) -> Result<(), String> {
    for (index, entry) in entries.into_iter().enumerate() {
        let entry = entry.trim_ascii();
        if entry.is_empty() {
            continue;
        }
        let at = index + 1;
        let (token, holder) = entry
            .split_once('=')
            .ok_or_else(|| format!("{source}: entry {at} is not TOKEN=USER[:GROUP+GROUP]"))?;
        let (user, groups) = holder.split_once(':').unwrap_or((holder, ""));
        let (token, user) = (token.trim_ascii(), user.trim_ascii());
        if token.is_empty() || user.is_empty() {
            return Err(format!("{source}: entry {at} has an empty token or user"));
        }
        if groups.split('+').any(|group| group.trim_ascii().is_empty())
            && !groups.trim_ascii().is_empty()
        {
            return Err(format!("{source}: entry {at} has an empty group"));
        }
        let groups: Vec<String> = groups
            .split('+')
            .map(str::trim_ascii)
            .filter(|group| !group.is_empty())
            .map(str::to_owned)
            .collect();
        // Spaces around the syntax's `=`, `:` and `+` are the file's; an invisible or control
        // character left in a name is not.
        if !is_clean(user) || !groups.iter().all(|group| is_clean(group)) {
            return Err(format!(
                "{source}: entry {at} has a user or group with a control or invisible character"
            ));
        }
        let identity = Identity::subject(user).with_groups(groups);
        if tokens.insert(token.to_owned(), identity).is_some() {
            return Err(format!("{source}: entry {at} repeats a token"));
        }
    }
    Ok(())
}

/// The entries of a tokens file: each line may hold several, comma-separated.
pub fn file_entries(text: &str) -> impl Iterator<Item = &str> {
    text.lines()
        .map(|line| line.split('#').next().unwrap_or(""))
        .flat_map(|line| line.split(','))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_name_a_user_and_its_groups() {
        let mut tokens = HashMap::new();
        parse(
            ["tA=alice:sre+oncall", " tB = bob "],
            "--tokens",
            &mut tokens,
        )
        .unwrap();
        assert_eq!(tokens["tA"].subject, "alice");
        assert_eq!(tokens["tA"].groups, ["oncall", "sre"]);
        assert_eq!(tokens["tB"], Identity::subject("bob"));
    }

    #[test]
    fn bad_entries_are_refused_without_showing_the_token() {
        for (entries, wanted) in [
            (vec!["secret"], "entry 1 is not TOKEN=USER"),
            (vec!["secret="], "entry 1 has an empty token or user"),
            (
                vec!["a=x", "secret=bob:sre++ops"],
                "entry 2 has an empty group",
            ),
            (vec!["secret=a", "secret=b"], "entry 2 repeats a token"),
            (
                vec!["secret=bob\u{a0}:sre"],
                "entry 1 has a user or group with a control",
            ),
            (
                vec!["secret=bob:\u{2003}sre"],
                "entry 1 has a user or group with a control",
            ),
        ] {
            let err = parse(entries, "--tokens", &mut HashMap::new()).unwrap_err();
            assert!(err.contains(wanted), "{err}");
            assert!(!err.contains("secret"), "{err}");
        }
    }

    #[test]
    fn a_tokens_file_takes_lines_commas_and_comments() {
        let mut tokens = HashMap::new();
        let text = "# people\ntA=alice:sre\n\ntB=bob, tC=carol:ops # on call\n";
        parse(file_entries(text), "tokens.txt", &mut tokens).unwrap();
        assert_eq!(tokens.len(), 3);
        assert_eq!(tokens["tC"].groups, ["ops"]);
    }
}
