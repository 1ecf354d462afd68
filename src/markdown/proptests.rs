//! Property tests of the markdown renderer over hostile agent text: it never panics, and every
//! `<` in its output starts one of the tags it writes itself (pulldown-cmark's, with tables,
//! strikethrough and task lists, plus the code-block and table wrappers in `to_html`), with
//! only the attributes those tags have, links with safe schemes and no referrer, and every
//! element closed.
//! `scripts/fuzz.sh` runs them for minutes with fresh seeds.

use proptest::prelude::*;

use super::to_html;

/// Characters that break code assuming one byte per character or case mapping that keeps
/// lengths, and invisible controls.
const TRICKY: &[char] = &[
    '\u{130}',  // İ: lowercases to "i̇", 2 bytes -> 3
    '\u{212A}', // KELVIN SIGN: lowercases to ASCII 'k'
    '\u{23A}',  // Ⱥ: lowercases to ⱥ, 2 bytes -> 3
    '\u{17F}',  // ſ: uppercases to ASCII 'S'
    '\u{301}',  // combining acute
    '\u{20DD}', // combining enclosing circle
    '\u{200F}', // RIGHT-TO-LEFT MARK
    '\u{202E}', // RIGHT-TO-LEFT OVERRIDE
    '\u{200B}', // ZERO WIDTH SPACE
    '\0',
    '\u{7F}',
    '\u{85}',
    '\u{2028}',
    '\u{FEFF}',
    '\u{FFFD}',
    '\u{10FFFF}',
    '\u{FF1C}', // FULLWIDTH LESS-THAN SIGN
    '\r',
    '\n',
    '\t',
    ' ',
];

/// Markdown and HTML that try to get markup through, and the syntax around it.
const MARKUP: &[&str] = &[
    "<",
    ">",
    "<script>alert(1)</script>",
    "<ScRiPt src=x>",
    "</script",
    "<img src=x onerror=alert(1)>",
    "<svg onload=alert(1)>",
    "<!--",
    "-->",
    "<![CDATA[",
    "<?x ?>",
    "<!DOCTYPE html>",
    "<a href=\"javascript:alert(1)\">x</a>",
    "<div>\n",
    "</",
    "&lt;",
    "&#60;",
    "&#x3C;script&#x3E;",
    "&",
    "\"",
    "'",
    "`",
    "```",
    "```js\" onload=\"x\n",
    "~~~<script>\n",
    "    ",
    "\n",
    "\n\n",
    "\r\n",
    "|",
    "| a | b |\n|:--|:-:|\n",
    "|---|\n",
    "---",
    "*",
    "_",
    "**",
    "~~",
    "- ",
    "1. ",
    "7) ",
    "- [ ] ",
    "- [x] ",
    "> ",
    "# ",
    "[",
    "]",
    "(",
    ")",
    "![",
    "](",
    "[x]: ",
    "\"title\"",
    "javascript:alert(1)",
    "JaVaScRiPt:",
    "java\tscript:",
    "&#106;avascript:",
    "data:text/html,<script>",
    "vbscript:",
    "http://a.example/",
    "mailto:a@b.example",
    "<http://a.example/x>",
    "<javascript:alert(1)>",
    "<a@b.example>",
    "![![x](https://a.example/)](https://b.example/)",
    "[![x](javascript:y)](z)",
    "![[x](y)",
    "\\",
    "  \n",
];

fn hostile_text() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        2 => any::<char>().prop_map(String::from),
        1 => prop::sample::select(TRICKY).prop_map(String::from),
        1 => prop::char::range(' ', '~').prop_map(String::from),
        3 => prop::sample::select(MARKUP).prop_map(str::to_owned),
    ];
    prop::collection::vec(piece, 0..40).prop_map(|pieces| pieces.concat())
}

/// One tag as written: `<name attr="value" ...>`, `<name ... />` or `</name>`.
struct Tag<'a> {
    closing: bool,
    name: &'a str,
    attributes: Vec<(&'a str, &'a str)>,
    self_closing: bool,
}

/// Parses the text between `<` and `>`; `None` if it is not a well-formed tag.
fn parse_tag(inner: &str) -> Option<Tag<'_>> {
    let (closing, rest) = match inner.strip_prefix('/') {
        Some(rest) => (true, rest),
        None => (false, inner),
    };
    let name_end = rest
        .find(|c: char| !c.is_ascii_alphanumeric())
        .unwrap_or(rest.len());
    let (name, mut rest) = rest.split_at(name_end);
    let mut attributes = Vec::new();
    let mut self_closing = false;
    loop {
        rest = rest.trim_start_matches(' ');
        if rest.is_empty() {
            break;
        }
        if rest == "/" {
            self_closing = true;
            break;
        }
        let (attribute, after) = rest.split_once("=\"")?;
        if attribute.is_empty()
            || !attribute
                .chars()
                .all(|c| c.is_ascii_lowercase() || c == '-')
        {
            return None;
        }
        let (value, after) = after.split_once('"')?;
        attributes.push((attribute, value));
        rest = after;
    }
    (!name.is_empty() && !(closing && (self_closing || !attributes.is_empty()))).then_some(Tag {
        closing,
        name,
        attributes,
        self_closing,
    })
}

/// Whether a browser would run `href` as anything but a web or mail link. Attribute values
/// are HTML-decoded first; pulldown-cmark percent-encodes controls and spaces, so the scheme
/// is whatever precedes the first `:` if that is a well-formed scheme.
fn safe_href(href: &str) -> bool {
    let decoded = href.replace("&#x27;", "'").replace("&amp;", "&");
    let scheme_end = decoded
        .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')))
        .unwrap_or(decoded.len());
    let is_scheme = decoded[scheme_end..].starts_with(':')
        && decoded.starts_with(|c: char| c.is_ascii_alphabetic());
    !is_scheme
        || matches!(
            decoded[..scheme_end].to_ascii_lowercase().as_str(),
            "http" | "https" | "mailto"
        )
}

/// Whether `tag` is one the renderer writes, with exactly the attributes it writes.
fn allowed(tag: &Tag<'_>) -> bool {
    const PLAIN: &[&str] = &[
        "p",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "table",
        "thead",
        "tbody",
        "tr",
        "th",
        "td",
        "blockquote",
        "pre",
        "code",
        "ol",
        "ul",
        "li",
        "em",
        "strong",
        "del",
        "a",
        "div",
        "span",
        "button",
    ];
    if tag.closing {
        return PLAIN.contains(&tag.name);
    }
    let void = matches!(tag.name, "hr" | "br" | "input");
    if tag.self_closing != void {
        return false;
    }
    match (tag.name, tag.attributes.as_slice()) {
        ("hr" | "br", []) => true,
        ("input", [("disabled", ""), ("type", "checkbox")])
        | ("input", [("disabled", ""), ("type", "checkbox"), ("checked", "")]) => true,
        ("th" | "td", [("style", align)]) => matches!(
            *align,
            "text-align: left" | "text-align: center" | "text-align: right"
        ),
        ("code", [("class", class)]) => class.starts_with("language-"),
        ("ol", [("start", start)]) => start.parse::<u64>().is_ok(),
        ("a", [("href", href), ("rel", "noopener noreferrer")])
        | ("a", [("href", href), ("rel", "noopener noreferrer"), ("title", _)]) => safe_href(href),
        ("div", [("class", "code-block" | "code-head" | "table-wrap")]) => true,
        (
            "button",
            [("type", "button"), ("class", "copy-code"), ("data-testid", "copy-code"), ("aria-label", "Copy code")],
        ) => true,
        (name, []) => PLAIN.contains(&name) && !matches!(name, "a" | "div" | "button"),
        _ => false,
    }
}

/// Every `<` in `html` starts an allowed tag, and the elements nest and close properly.
fn check_html(html: &str) -> Result<(), TestCaseError> {
    let mut open: Vec<&str> = Vec::new();
    let mut rest = html;
    while let Some(start) = rest.find('<') {
        let after = &rest[start + 1..];
        let end = after
            .find('>')
            .ok_or_else(|| TestCaseError::fail(format!("an unended `<` in {html:?}")))?;
        let inner = &after[..end];
        let tag = parse_tag(inner)
            .filter(allowed)
            .ok_or_else(|| TestCaseError::fail(format!("a tag <{inner}> in {html:?}")))?;
        if tag.closing {
            prop_assert_eq!(open.pop(), Some(tag.name), "</{}> in {:?}", tag.name, html);
        } else if !tag.self_closing {
            open.push(tag.name);
        }
        rest = &after[end + 1..];
    }
    prop_assert!(open.is_empty(), "unclosed {:?} in {:?}", open, html);
    prop_assert!(!html.to_ascii_lowercase().contains("<script"), "{}", html);
    Ok(())
}

#[test]
fn the_checker_refuses_what_the_renderer_must_not_write() {
    for html in [
        "<script>",
        "<p onclick=\"x\">a</p>",
        "<a href=\"javascript:alert(1)\">x</a>",
        "<a href=\"JavaScript:x\">x</a>",
        "<img src=\"x\">",
        "<p>a",
        "<em>a</strong>",
        "a < b",
        "<br>",
        // A link that would send the chat's address on as `Referer`.
        "<a href=\"https://x.example/\">x</a>",
        "<a href=\"https://x.example/\" rel=\"noopener\">x</a>",
    ] {
        assert!(check_html(html).is_err(), "{html}");
    }
    for html in [
        "<p>a &lt; b</p>\n",
        "<a href=\"https://x.example/a:b\" rel=\"noopener noreferrer\" title=\"t\">x</a><hr />",
        "<a href=\"#\" rel=\"noopener noreferrer\">x</a><a href=\"/a:b\" rel=\"noopener noreferrer\">y</a>\
         <a href=\"x?a=b:c\" rel=\"noopener noreferrer\">z</a>",
    ] {
        assert!(check_html(html).is_ok(), "{html}");
    }
}

#[test]
fn an_image_inside_an_image_closes_both_links() {
    let html = to_html("![![a](https://x.example/a)](https://x.example/b) after");
    assert!(check_html(&html).is_ok(), "{html}");
}

proptest! {
    /// Any Unicode at all: no panic, and only the renderer's own tags.
    #[test]
    fn prop_arbitrary_unicode_renders_only_own_tags(text in any::<String>()) {
        check_html(&to_html(&text))?;
    }

    /// Hostile markdown and HTML mixed with hostile characters: only the renderer's own tags,
    /// safe links, every element closed, no `<script`.
    #[test]
    fn prop_hostile_markdown_renders_only_own_tags(text in hostile_text()) {
        check_html(&to_html(&text))?;
    }
}
