//! Secrets inside a longer string (a command line, a connection URL, a config snippet) masked
//! in place, the rest of the text kept: well-known token prefixes, JWTs, PEM private keys,
//! bearer and basic credentials, a URL's password, and the value of a `NAME=value`,
//! `NAME: value` or `--NAME value` whose name is a secret's. Every rule marks byte ranges of
//! the original text; the ranges are merged and each replaced by [`MASK`], so rules that
//! overlap (`SLACK_TOKEN=xoxb-…`) mask once.

use std::ops::Range;

use super::{is_secret_key, MASK};

/// Token prefixes of well-known services, each with the fewest token characters that must
/// follow it (so `sk-learn` or a bare `xoxb-` are left alone).
const TOKEN_PREFIXES: [(&str, usize); 21] = [
    ("github_pat_", 20),
    ("ghp_", 20),
    ("gho_", 20),
    ("ghs_", 20),
    ("ghu_", 20),
    ("ghr_", 20),
    ("glpat-", 16),
    ("xoxa-", 10),
    ("xoxb-", 10),
    ("xoxp-", 10),
    ("xoxr-", 10),
    ("xoxs-", 10),
    ("xapp-", 10),
    ("sk_live_", 16),
    ("sk_test_", 16),
    ("rk_live_", 16),
    ("sk-", 20),
    ("whsec_", 20),
    ("AKIA", 16),
    ("ASIA", 16),
    ("AIza", 30),
];

/// Words of a name that make its value secret, besides [`is_secret_key`]'s: `STRIPE_KEY`,
/// `db_pass`, `ADMIN_PWD` (compared in lower case, the name split at `_`, `-`, `.` and at
/// camelCase humps).
const SECRET_NAME_WORDS: [&str; 6] = ["key", "keys", "pass", "pwd", "secret", "token"];

/// The shortest bearer credential masked (shorter ones are prose: "the bearer of").
const MIN_BEARER_CHARS: usize = 8;

/// `text` with every secret inside it replaced by [`MASK`], the rest unchanged.
pub fn mask_in_text(text: &str) -> String {
    let mut ranges = Vec::new();
    token_prefixes(text, &mut ranges);
    jwts(text, &mut ranges);
    pem_blocks(text, &mut ranges);
    authorization_credentials(text, &mut ranges);
    url_passwords(text, &mut ranges);
    named_values(text, &mut ranges);
    flag_values(text, &mut ranges);
    replace(text, ranges)
}

fn is_token_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'-'
}

/// The end of the run of bytes from `start` that `keep` accepts.
fn run_end(bytes: &[u8], start: usize, keep: impl Fn(u8) -> bool) -> usize {
    bytes[start..]
        .iter()
        .position(|&b| !keep(b))
        .map_or(bytes.len(), |len| start + len)
}

/// The start of the run of bytes before `end` that `keep` accepts.
fn run_start_back(bytes: &[u8], end: usize, keep: impl Fn(u8) -> bool) -> usize {
    bytes[..end]
        .iter()
        .rposition(|&b| !keep(b))
        .map_or(0, |before| before + 1)
}

/// Whether a word may start at `at`: the text starts there, or a byte that is no letter or
/// digit precedes it.
fn word_starts(bytes: &[u8], at: usize) -> bool {
    at == 0 || !bytes[at - 1].is_ascii_alphanumeric()
}

/// Each place `needle` starts in `haystack`.
fn find_all<'a>(haystack: &'a str, needle: &'a str) -> impl Iterator<Item = usize> + 'a {
    haystack.match_indices(needle).map(|(at, _)| at)
}

fn token_prefixes(text: &str, ranges: &mut Vec<Range<usize>>) {
    let bytes = text.as_bytes();
    for (prefix, min_rest) in TOKEN_PREFIXES {
        for at in find_all(text, prefix) {
            if !word_starts(bytes, at) {
                continue;
            }
            let end = run_end(bytes, at + prefix.len(), is_token_char);
            if end - (at + prefix.len()) >= min_rest {
                ranges.push(at..end);
            }
        }
    }
}

/// A JWT: three dot-separated parts, the header's and the claims' base64url JSON objects
/// (so each starts `eyJ`).
fn jwts(text: &str, ranges: &mut Vec<Range<usize>>) {
    let bytes = text.as_bytes();
    for at in find_all(text, "eyJ") {
        if !word_starts(bytes, at) {
            continue;
        }
        let end = run_end(bytes, at, |b| is_token_char(b) || b == b'.');
        let mut parts = text[at..end].split('.');
        let (Some(header), Some(claims), Some(signature)) =
            (parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        if header.len() >= 10 && claims.len() >= 10 && claims.starts_with("eyJ") {
            ranges.push(at..at + header.len() + claims.len() + signature.len() + 2);
        }
    }
}

/// A PEM block from its `-----BEGIN` line to the end of its `-----END …-----` line (or of the
/// text, when it was cut).
fn pem_blocks(text: &str, ranges: &mut Vec<Range<usize>>) {
    for at in find_all(text, "-----BEGIN") {
        let end = text[at..]
            .find("-----END")
            .and_then(|end| {
                let after = at + end + "-----END".len();
                text[after..].find("-----").map(|close| after + close + 5)
            })
            .unwrap_or(text.len());
        ranges.push(at..end);
    }
}

/// The credentials after `Bearer ` (at least [`MIN_BEARER_CHARS`]) and after `Basic ` (when
/// they decode to `user:password`), in any case.
fn authorization_credentials(text: &str, ranges: &mut Vec<Range<usize>>) {
    let lower = text.to_ascii_lowercase();
    let bytes = text.as_bytes();
    let credential_char = |b: u8| b.is_ascii_alphanumeric() || b"-._~+/=".contains(&b);
    for scheme in ["bearer", "basic"] {
        for at in find_all(&lower, scheme) {
            let gap = at + scheme.len();
            if !word_starts(bytes, at) || !bytes.get(gap).is_some_and(|&b| b == b' ' || b == b'\t')
            {
                continue;
            }
            let start = run_end(bytes, gap, |b| b == b' ' || b == b'\t');
            let end = run_end(bytes, start, credential_char);
            let credential = &text[start..end];
            let secret = match scheme {
                "bearer" => credential.len() >= MIN_BEARER_CHARS,
                _ => base64_decodes_to_pair(credential),
            };
            if secret {
                ranges.push(start..end);
            }
        }
    }
}

/// Whether `text` is standard base64 of bytes holding a `:` (a basic credential's
/// `user:password`).
fn base64_decodes_to_pair(text: &str) -> bool {
    let digits = text.trim_end_matches('=');
    if digits.len() < 4 || text.len() % 4 != 0 || text.len() - digits.len() > 2 {
        return false;
    }
    let value = |b: u8| match b {
        b'A'..=b'Z' => Some(b - b'A'),
        b'a'..=b'z' => Some(b - b'a' + 26),
        b'0'..=b'9' => Some(b - b'0' + 52),
        b'+' => Some(62),
        b'/' => Some(63),
        _ => None,
    };
    let mut decoded = Vec::with_capacity(digits.len());
    let (mut bits, mut count) = (0u32, 0u32);
    for b in digits.bytes() {
        let Some(v) = value(b) else { return false };
        bits = (bits << 6) | u32::from(v);
        count += 6;
        if count >= 8 {
            count -= 8;
            decoded.push((bits >> count) as u8);
            bits &= (1 << count) - 1;
        }
    }
    decoded.contains(&b':')
}

/// The password of a URL's user information: `postgres://admin:PASSWORD@host/db` (the
/// authority ends at the first `/`, `?` or `#`, the user information at its last `@`, as URL
/// parsers read them).
fn url_passwords(text: &str, ranges: &mut Vec<Range<usize>>) {
    let bytes = text.as_bytes();
    let in_authority = |b: u8| !b.is_ascii_whitespace() && !b"/?#\"'<>`".contains(&b);
    for at in find_all(text, "://") {
        let start = at + 3;
        let end = run_end(bytes, start, in_authority);
        let authority = &text[start..end];
        let Some(user_end) = authority.rfind('@') else {
            continue;
        };
        if let Some(colon) = authority[..user_end].find(':') {
            if colon + 1 < user_end {
                ranges.push(start + colon + 1..start + user_end);
            }
        }
    }
}

/// Whether a name (of an environment variable, a query parameter, a field, a flag) holds a
/// secret.
fn is_secret_name(name: &str) -> bool {
    let name = name.trim_start_matches('-');
    if name.is_empty() {
        return false;
    }
    if is_secret_key(name) {
        return true;
    }
    let mut words: Vec<String> = Vec::new();
    let mut word = String::new();
    let mut previous_lower = false;
    for c in name.chars() {
        let hump = c.is_ascii_uppercase() && previous_lower;
        if c == '_' || c == '-' || c == '.' || hump {
            words.push(std::mem::take(&mut word));
        }
        if c != '_' && c != '-' && c != '.' {
            word.push(c.to_ascii_lowercase());
        }
        previous_lower = c.is_ascii_lowercase();
    }
    words.push(word);
    words
        .iter()
        .any(|word| SECRET_NAME_WORDS.contains(&word.as_str()))
}

/// The value after `NAME=` or `NAME:` (the name perhaps quoted, as in JSON) whose name is a
/// secret's: a quoted value to its closing quote; else, after `=`, to the next space or
/// separator, and after `:`, to the end of the line (a header's `Authorization: Basic …`).
fn named_values(text: &str, ranges: &mut Vec<Range<usize>>) {
    let bytes = text.as_bytes();
    for (at, &b) in bytes.iter().enumerate() {
        // `==`, `=>`, `<=`, `>=`, `!=`: comparisons, not assignments.
        let is = |at: usize, set: &[u8]| bytes.get(at).is_some_and(|b| set.contains(b));
        let operator = |at: usize| is(at + 1, b"=>") || at > 0 && is(at - 1, b"=<>!");
        if b != b'=' && b != b':' || text[at..].starts_with("://") || (b == b'=' && operator(at)) {
            continue;
        }
        let mut name_end = run_start_back(bytes, at, |b| b == b' ' || b == b'\t');
        if name_end > 0 && matches!(bytes[name_end - 1], b'"' | b'\'') {
            name_end -= 1;
        }
        let name_start = run_start_back(bytes, name_end, |b| is_token_char(b) || b == b'.');
        // A URL's `user:password` is `url_passwords`' to mask, not a name and its value.
        let in_url = b == b':' && text[..name_start].ends_with("//");
        if in_url || !is_secret_name(&text[name_start..name_end]) {
            continue;
        }
        let mut start = run_end(bytes, at + 1, |b| b == b' ' || b == b'\t');
        if bytes.get(start).is_some_and(|&b| b == b'"' || b == b'\'') {
            let quote = bytes[start];
            start += 1;
            let end = run_end(bytes, start, |b| b != quote);
            ranges.push(start..end);
            continue;
        }
        let end = match b {
            b'=' => run_end(bytes, start, |b| {
                !b.is_ascii_whitespace() && !b"\"',;&)]}<>`".contains(&b)
            }),
            _ => run_end(bytes, start, |b| !b"\r\n\"'`".contains(&b)),
        };
        ranges.push(start..end);
    }
}

/// The word after a flag whose name is a secret's: `--password hunter2`, `--api-key K`.
fn flag_values(text: &str, ranges: &mut Vec<Range<usize>>) {
    let bytes = text.as_bytes();
    for at in find_all(text, "--") {
        if at > 0 && !bytes[at - 1].is_ascii_whitespace() {
            continue;
        }
        let name_end = run_end(bytes, at, |b| is_token_char(b) || b == b'.');
        if !is_secret_name(&text[at..name_end]) || bytes.get(name_end) != Some(&b' ') {
            continue;
        }
        let start = run_end(bytes, name_end, |b| b == b' ');
        let end = run_end(bytes, start, |b| !b.is_ascii_whitespace());
        ranges.push(start..end);
    }
}

/// `text` with each of `ranges` (merged where they overlap or touch) replaced by [`MASK`];
/// empty ranges mask nothing.
fn replace(text: &str, mut ranges: Vec<Range<usize>>) -> String {
    ranges.retain(|range| range.start < range.end);
    if ranges.is_empty() {
        return text.to_owned();
    }
    ranges.sort_by_key(|range| range.start);
    let mut out = String::with_capacity(text.len());
    let mut kept = 0;
    let mut current: Option<Range<usize>> = None;
    for range in ranges {
        match &mut current {
            Some(open) if range.start <= open.end => open.end = open.end.max(range.end),
            _ => {
                if let Some(done) = current.take() {
                    out.push_str(&text[kept..done.start]);
                    out.push_str(MASK);
                    kept = done.end;
                }
                current = Some(range);
            }
        }
    }
    if let Some(done) = current {
        out.push_str(&text[kept..done.start]);
        out.push_str(MASK);
        kept = done.end;
    }
    out.push_str(&text[kept..]);
    out
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn secrets_inside_commands_urls_and_snippets_are_masked_in_place() {
        let ghp = "ghp_0123456789abcdefABCDEF0123456789abcd";
        for (text, shown) in [
            (
                format!("curl -H \"Authorization: Bearer {ghp}\" https://api.github.com"),
                "curl -H \"Authorization: [masked]\" https://api.github.com".to_owned(),
            ),
            (
                "psql postgres://admin:Sup3r@Secret@db.internal:5432/app".to_owned(),
                "psql postgres://admin:[masked]@db.internal:5432/app".to_owned(),
            ),
            (
                "SLACK_TOKEN=xoxb-1234-5678-abcdefghij ./notify.sh".to_owned(),
                "SLACK_TOKEN=[masked] ./notify.sh".to_owned(),
            ),
            (
                format!("git push https://x-access-token:{ghp}@github.com/o/r"),
                "git push https://x-access-token:[masked]@github.com/o/r".to_owned(),
            ),
            (
                format!("echo {ghp} > token.txt"),
                "echo [masked] > token.txt".to_owned(),
            ),
            (
                "curl -u x -H 'authorization: basic YWRtaW46aHVudGVyMg==' h".to_owned(),
                "curl -u x -H 'authorization: [masked]' h".to_owned(),
            ),
            (
                "wget --header 'X: Basic YWRtaW46aHVudGVyMg==' h".to_owned(),
                "wget --header 'X: Basic [masked]' h".to_owned(),
            ),
            (
                "{\"user\": \"bob\", \"password\": \"hunter2 and more\"}".to_owned(),
                "{\"user\": \"bob\", \"password\": \"[masked]\"}".to_owned(),
            ),
            (
                "GET /hook?access_token=abc123&page=2".to_owned(),
                "GET /hook?access_token=[masked]&page=2".to_owned(),
            ),
            (
                "export STRIPE_KEY=rk_x DB_PASS='p w' apiKey=k1".to_owned(),
                "export STRIPE_KEY=[masked] DB_PASS='[masked]' apiKey=[masked]".to_owned(),
            ),
            (
                "mysql --password hunter2 --user root".to_owned(),
                "mysql --password [masked] --user root".to_owned(),
            ),
            (
                "key AKIAIOSFODNN7EXAMPLE, jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2ln."
                    .to_owned(),
                "key [masked], jwt [masked].".to_owned(),
            ),
            (
                "k: -----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY----- done".to_owned(),
                "k: [masked] done".to_owned(),
            ),
            (
                "cut -----BEGIN OPENSSH PRIVATE KEY-----\nb3Bl".to_owned(),
                "cut [masked]".to_owned(),
            ),
        ] {
            assert_eq!(mask_in_text(&text), shown, "{text}");
        }
    }

    #[test]
    fn ordinary_text_is_left_as_it_is() {
        for plain in [
            "pip install sk-learn-tools && ./risk-free.sh",
            "a basic setup; the bearer of this note",
            "if a == b { x => y }; a <= b; c != d",
            "monkey=3 keyboard=us session_id=s-1",
            "https://example.com:8443/a@b/c?page=2#top",
            "see notes/todo.txt: line 12, café ünïcode ✓",
            "xoxb- alone, ghp_short, AKIA",
            "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
        ] {
            assert_eq!(mask_in_text(plain), plain);
        }
    }

    /// A secret as written into text, and the part of it that must not be shown.
    fn secret() -> impl Strategy<Value = (String, String)> {
        let token = "[A-Za-z0-9]{20,40}";
        let prefixed = (
            proptest::sample::select(TOKEN_PREFIXES.to_vec()),
            "[A-Za-z0-9_-]{30,40}",
        )
            .prop_map(|((prefix, _), rest)| {
                let token = format!("{prefix}{rest}");
                (token.clone(), token)
            });
        let bearer = ("(Bearer|bearer|BEARER)", token)
            .prop_map(|(scheme, credential)| (format!("{scheme} {credential}"), credential));
        let basic = ("[a-z]{1,8}", "[A-Za-z0-9!%*]{6,16}").prop_map(|(user, password)| {
            let encoded = base64(format!("{user}:{password}").as_bytes());
            (format!("Basic {encoded}"), encoded)
        });
        let url = (
            "(postgres|https|redis|amqp)",
            "[a-z]{1,8}",
            "[A-Za-z0-9!$*+%@]{8,20}",
        )
            .prop_map(|(scheme, user, password)| {
                (
                    format!("{scheme}://{user}:{password}@db.internal:5432/app"),
                    password,
                )
            });
        let named = (
            "(SLACK_TOKEN|DB_PASSWORD|client_secret|api-key|GITHUB_PAT_KEY|passwd)",
            "(=|: |=\"|\": \")",
            "[A-Za-z0-9!@%*]{8,20}",
        )
            .prop_map(|(name, separator, value)| {
                let close = if separator.ends_with('"') { "\"" } else { "" };
                (format!("{name}{separator}{value}{close}"), value)
            });
        let jwt = (
            "[A-Za-z0-9_-]{10,30}",
            "[A-Za-z0-9_-]{10,30}",
            "[A-Za-z0-9_-]{0,40}",
        )
            .prop_map(|(header, claims, signature)| {
                let jwt = format!("eyJ{header}.eyJ{claims}.{signature}");
                (jwt.clone(), jwt)
            });
        prop_oneof![prefixed, bearer, basic, url, named, jwt]
    }

    /// Text that holds no secret: words of at most seven letters or digits (too short to be a
    /// credential after `Bearer`, and no token prefix fits in one) between separators that
    /// name nothing (no `=`, `:`, `_` or `-`).
    fn plain() -> impl Strategy<Value = String> {
        proptest::collection::vec(("[A-Za-z0-9éü✓]{1,7}", "[ .,;()/\n]{1,2}"), 0..12).prop_map(
            |words| {
                words
                    .into_iter()
                    .map(|(word, separator)| format!("{word}{separator}"))
                    .collect()
            },
        )
    }

    fn base64(bytes: &[u8]) -> String {
        const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        let mut out = String::new();
        for chunk in bytes.chunks(3) {
            let n = chunk
                .iter()
                .enumerate()
                .fold(0u32, |n, (i, &b)| n | u32::from(b) << (16 - 8 * i));
            for i in 0..4 {
                if i <= chunk.len() {
                    out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
                } else {
                    out.push('=');
                }
            }
        }
        out
    }

    proptest! {
        #[test]
        fn a_secret_anywhere_in_text_never_shows_and_the_text_around_it_stays(
            before in plain(),
            (written, hidden) in secret(),
            after in plain(),
            open in "[ \n\t(,;'\"]",
            close in "[ \n\t),;'\"]",
        ) {
            let text = format!("{before}{open}{written}{close}{after}");
            let shown = mask_in_text(&text);
            prop_assert!(!shown.contains(&hidden), "{text:?} shown as {shown:?}");
            prop_assert!(shown.contains(MASK), "{shown:?}");
            prop_assert!(shown.starts_with(&format!("{before}{open}")), "{shown:?}");
            // A `NAME: value` is masked to the end of its line.
            if close == "\n" {
                prop_assert!(shown.ends_with(&format!("{close}{after}")), "{shown:?}");
            }
        }

        #[test]
        fn text_without_secrets_is_unchanged(text in plain()) {
            prop_assert_eq!(mask_in_text(&text), text);
        }
    }
}
