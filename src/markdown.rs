//! Agent text as markdown (pulldown-cmark, GFM tables): rendered to an HTML string in which any
//! raw HTML the model wrote is escaped text, links with script-capable schemes are dropped, and
//! code blocks get a copy button.

use pulldown_cmark::{html, CodeBlockKind, CowStr, Event, LinkType, Options, Parser, Tag, TagEnd};
use pulldown_cmark_escape::{escape_href, escape_html, FmtWriter};

/// Whether a link or image target is safe to put in an `href`/`src`.
fn safe_url(url: &str) -> bool {
    let lower = url.trim().to_ascii_lowercase();
    match lower.split_once(':') {
        // A colon after a slash, `?` or `#` is part of a path or query, not a scheme.
        Some((scheme, _)) if !scheme.contains(['/', '?', '#']) => {
            matches!(scheme, "http" | "https" | "mailto")
        }
        Some(_) | None => true,
    }
}

/// A link's opening tag, as pulldown-cmark writes it plus `rel="noopener noreferrer"`: the page
/// a link leads to learns nothing of the chat's address (a share page's holds its token) and
/// gets no handle on this window, whatever the browser's defaults. A target that is not
/// [`safe_url`] becomes `#`.
fn link_start(link_type: LinkType, dest_url: &str, title: &str) -> Event<'static> {
    let mut tag = String::from("<a href=\"");
    if link_type == LinkType::Email {
        tag.push_str("mailto:");
    }
    let dest_url = if safe_url(dest_url) { dest_url } else { "#" };
    // Writing to a String cannot fail. Through the writer type pulldown-cmark's own writer
    // uses, so the escapers' code is shared with it (the download's size).
    let _ = escape_href(&mut FmtWriter(&mut tag), dest_url);
    tag.push_str("\" rel=\"noopener noreferrer\"");
    if !title.is_empty() {
        tag.push_str(" title=\"");
        let _ = escape_html(&mut FmtWriter(&mut tag), title);
        tag.push('"');
    }
    tag.push('>');
    Event::InlineHtml(CowStr::from(tag))
}

/// Renders `text` to HTML that is safe to insert: every tag in it is one pulldown-cmark made.
pub fn to_html(text: &str) -> String {
    let options =
        Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS;
    let events = Parser::new_ext(text, options).flat_map(|event| -> Vec<Event<'_>> {
        // pulldown-cmark's enum, not ours: every event not named here passes through unchanged.
        #[allow(clippy::wildcard_enum_match_arm)]
        match event {
            // The model's own HTML is shown, never parsed.
            Event::Html(raw) | Event::InlineHtml(raw) => vec![Event::Text(raw)],
            Event::Start(Tag::Link {
                link_type,
                dest_url,
                title,
                ..
            }) => vec![link_start(link_type, &dest_url, &title)],
            // Images become links: a chat shows no remote pictures the model chose.
            Event::Start(Tag::Image {
                dest_url, title, ..
            }) => vec![link_start(LinkType::Inline, &dest_url, &title)],
            // Every image start became a link start, nested images too (an image's alt text
            // may hold one), so every image end is a link end.
            Event::End(TagEnd::Image) => vec![Event::End(TagEnd::Link)],
            Event::Start(Tag::CodeBlock(kind)) => {
                let language = match &kind {
                    CodeBlockKind::Fenced(language) => language.to_string(),
                    CodeBlockKind::Indented => String::new(),
                };
                let label = if language.is_empty() {
                    "code".to_owned()
                } else {
                    escape(&language)
                };
                vec![
                    Event::Html(CowStr::from(format!(
                        "<div class=\"code-block\"><div class=\"code-head\"><span>{label}</span>\
                         <button type=\"button\" class=\"copy-code\" data-testid=\"copy-code\" \
                         aria-label=\"Copy code\">Copy</button></div>"
                    ))),
                    Event::Start(Tag::CodeBlock(kind)),
                ]
            }
            Event::End(TagEnd::CodeBlock) => {
                vec![
                    Event::End(TagEnd::CodeBlock),
                    Event::Html(CowStr::from("</div>")),
                ]
            }
            Event::Start(Tag::Table(alignments)) => vec![
                Event::Html(CowStr::from("<div class=\"table-wrap\">")),
                Event::Start(Tag::Table(alignments)),
            ],
            Event::End(TagEnd::Table) => {
                vec![
                    Event::End(TagEnd::Table),
                    Event::Html(CowStr::from("</div>")),
                ]
            }
            other => vec![other],
        }
    });
    let mut out = String::with_capacity(text.len() + text.len() / 2);
    html::push_html(&mut out, events);
    out
}

fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for ch in text.chars() {
        match ch {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            other => out.push(other),
        }
    }
    out
}

// proptest is a native-only dev-dependency.
#[cfg(all(test, not(target_arch = "wasm32")))]
mod proptests;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_html_is_escaped_text() {
        let html = to_html("hi <script>alert(1)</script> <img src=x onerror=alert(2)>\n\n<div onclick=x>block</div>");
        assert!(!html.contains("<script"), "{html}");
        assert!(!html.contains("<img"), "{html}");
        assert!(!html.contains("<div onclick"), "{html}");
        assert!(
            html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
            "{html}"
        );
    }

    #[test]
    fn tables_lists_and_code_blocks_render() {
        let html = to_html(
            "| a | b |\n|---|---|\n| 1 | 2 |\n\n- one\n- two\n\n```rust\nfn main() {}\n```\n",
        );
        assert!(html.contains("<table>"), "{html}");
        assert!(html.contains("<td>2</td>"), "{html}");
        assert!(html.contains("<li>two</li>"), "{html}");
        assert!(html.contains("data-testid=\"copy-code\""), "{html}");
        assert!(
            html.contains("<code class=\"language-rust\">fn main() {}"),
            "{html}"
        );
    }

    #[test]
    fn links_carry_no_referrer_and_still_open_in_place() {
        let html = to_html(
            "[docs](https://example.org/a?b=1&c=2 \"Read \\\"this\\\"\") <a@b.example> \
             ![pic](https://example.org/p.png) <https://example.org/auto> [x](javascript:y)",
        );
        for tag in [
            r#"<a href="https://example.org/a?b=1&amp;c=2" rel="noopener noreferrer" title="Read &quot;this&quot;">docs</a>"#,
            r#"<a href="mailto:a@b.example" rel="noopener noreferrer">a@b.example</a>"#,
            r#"<a href="https://example.org/p.png" rel="noopener noreferrer">pic</a>"#,
            r#"<a href="https://example.org/auto" rel="noopener noreferrer">"#,
            r##"<a href="#" rel="noopener noreferrer">x</a>"##,
        ] {
            assert!(html.contains(tag), "{tag} in {html}");
        }
        assert_eq!(html.matches("<a ").count(), 5, "{html}");
        assert!(!html.contains("target="), "{html}");
    }

    #[test]
    fn script_links_are_dropped() {
        let html = to_html("[x](javascript:alert(1)) [y](https://example.org/a:b) ![z](data:text/html,hi) [r](/a/b:c)");
        assert!(!html.contains("javascript:"), "{html}");
        assert!(!html.contains("data:"), "{html}");
        assert!(html.contains("href=\"https://example.org/a:b\""), "{html}");
        assert!(html.contains("href=\"/a/b:c\""), "{html}");
        assert!(!html.contains("<img"), "{html}");
    }
}
