//! The confirm page of a decision link and the pages that say why a link decides nothing: plain
//! HTML written here, every value escaped, one inline style sheet allowed by its hash in the
//! page's Content-Security-Policy (no script at all), light and dark through
//! `prefers-color-scheme`, readable at a phone's width.

use std::sync::LazyLock;

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use base64::Engine;
use sha2::{Digest, Sha256};

use crate::agent::{BatchSummary, DecidedBy, LinkAction, LinkDecision, LinkState};

/// The pages' one style sheet.
const STYLE: &str = "\
:root{color-scheme:light dark;--bg:#f7f7f8;--fg:#1b1d21;--muted:#5d6270;--card:#fff;\
--line:#d9dbe0;--ok:#13795b;--no:#b42318;--code:#eef0f3}\
@media (prefers-color-scheme:dark){:root{--bg:#15171b;--fg:#e8e9ec;--muted:#a2a7b3;\
--card:#1f2228;--line:#343844;--ok:#3fb88a;--no:#f0706a;--code:#2a2e36}}\
*{box-sizing:border-box}\
body{margin:0;background:var(--bg);color:var(--fg);\
font:16px/1.5 system-ui,-apple-system,\"Segoe UI\",Roboto,sans-serif}\
main{max-width:40rem;margin:0 auto;padding:1.25rem 1rem 3rem}\
h1{font-size:1.4rem;line-height:1.25;margin:.25rem 0 1rem}\
.brand{color:var(--muted);font-size:.85rem;letter-spacing:.04em;text-transform:uppercase}\
.who{margin:0 0 1rem}\
ol{list-style:none;padding:0;margin:0 0 1.25rem}\
li{background:var(--card);border:1px solid var(--line);border-radius:.6rem;padding:.75rem;\
margin:0 0 .6rem}\
.tool{font-weight:600;font-family:ui-monospace,SFMono-Regular,Menlo,monospace}\
.server{color:var(--muted);font-size:.85rem;margin-left:.4rem}\
pre{background:var(--code);border-radius:.4rem;padding:.6rem;margin:.5rem 0 0;\
overflow-x:auto;white-space:pre-wrap;word-break:break-word;font-size:.85rem}\
label{display:block;font-weight:600;margin:0 0 .35rem}\
textarea{width:100%;min-height:5rem;font:inherit;padding:.5rem;border-radius:.4rem;\
border:1px solid var(--line);background:var(--card);color:var(--fg);margin:0 0 1rem}\
button{display:block;width:100%;font:inherit;font-weight:600;font-size:1.05rem;border:0;\
border-radius:.6rem;padding:.85rem 1rem;color:#fff;cursor:pointer}\
.approve{background:var(--ok)}.reject{background:var(--no)}\
@media (prefers-color-scheme:dark){button{color:#0d0f12}}\
.fine{color:var(--muted);font-size:.85rem;margin-top:1rem}\
.state{background:var(--card);border:1px solid var(--line);border-radius:.6rem;padding:1rem}";

/// The pages' Content-Security-Policy: nothing loads but the inline style sheet above (by its
/// hash), no script runs, the form posts to this site only, and no other site frames the page.
static CSP: LazyLock<String> = LazyLock::new(|| {
    let hash = base64::engine::general_purpose::STANDARD.encode(Sha256::digest(STYLE.as_bytes()));
    format!(
        "default-src 'none'; style-src 'sha256-{hash}'; form-action 'self'; \
         frame-ancestors 'none'; base-uri 'none'"
    )
});

/// Text made safe for HTML, in content and in quoted attributes.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for character in text.chars() {
        match character {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            other => out.push(other),
        }
    }
    out
}

/// A whole page around `body`.
fn document(title: &str, body: &str) -> String {
    format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <meta name=\"robots\" content=\"noindex\">\
         <title>{} · Signoff</title><style>{STYLE}</style></head>\
         <body><main><div class=\"brand\">Signoff</div>{body}</main></body></html>",
        escape(title)
    )
}

/// `html` with `status` and the pages' headers: the CSP, never cached, never sniffed.
pub fn respond(status: StatusCode, html: String) -> Response {
    let mut response = (status, Html(html)).into_response();
    let headers = response.headers_mut();
    if let Ok(csp) = HeaderValue::from_str(&CSP) {
        headers.insert(header::CONTENT_SECURITY_POLICY, csp);
    }
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    response
}

/// A page with a heading and one paragraph.
pub fn message(status: StatusCode, title: &str, text: &str) -> Response {
    let body = format!(
        "<h1>{}</h1><p class=\"state\" id=\"message\">{}</p>",
        escape(title),
        escape(text)
    );
    respond(status, document(title, &body))
}

/// The calls of a batch, each with its tool, its server and its arguments.
fn calls(batch: &BatchSummary) -> String {
    let mut html = String::from("<ol class=\"calls\">");
    for call in &batch.calls {
        let args =
            serde_json::to_string_pretty(&call.args).unwrap_or_else(|_| call.args.to_string());
        let server = call
            .server
            .as_deref()
            .map(|server| format!("<span class=\"server\">{}</span>", escape(server)))
            .unwrap_or_default();
        html.push_str(&format!(
            "<li><span class=\"tool\">{}</span>{server}<pre>{}</pre></li>",
            escape(&call.name),
            escape(&args)
        ));
    }
    html.push_str("</ol>");
    html
}

/// The confirm page of a live link: what it decides, as whom, and its one button.
pub fn confirm(
    action: LinkAction,
    person: &str,
    expires_at: &str,
    batch: &BatchSummary,
    form_token: &str,
) -> String {
    let count = batch.calls.len();
    let noun = if count == 1 { "call" } else { "calls" };
    let (title, verb, class) = match action {
        LinkAction::Approve => (format!("Approve {count} {noun}?"), "Approve", "approve"),
        LinkAction::Reject => (format!("Reject {count} {noun}?"), "Reject", "reject"),
    };
    let reason = match action {
        LinkAction::Approve => String::new(),
        LinkAction::Reject => "<label for=\"reason\">Reason (optional; the agent reads it)</label>\
             <textarea id=\"reason\" name=\"reason\" maxlength=\"4096\"></textarea>"
            .to_owned(),
    };
    let chat = if batch.title.is_empty() {
        String::new()
    } else {
        format!(" in “{}”", escape(&batch.title))
    };
    let body = format!(
        "<h1 id=\"title\">{}</h1>\
         <p class=\"who\">The agent <b id=\"agent\">{}</b> asks{chat}, for <b id=\"requester\">{}</b>:</p>\
         {}\
         <form id=\"decide\" method=\"post\">\
         <input type=\"hidden\" name=\"form_token\" value=\"{}\">{reason}\
         <button type=\"submit\" id=\"confirm\" class=\"{class}\">{verb} {count} {noun}</button>\
         </form>\
         <p class=\"fine\">You decide as <b>{}</b>. This link works once, until {} (UTC), while \
         the calls wait. Opening it decided nothing; only the button does.</p>",
        escape(&title),
        escape(&batch.agent),
        escape(&batch.requester),
        calls(batch),
        escape(form_token),
        escape(person),
        escape(&readable_time(expires_at)),
    );
    document(&title, &body)
}

/// The page after a link decided.
pub fn decided(decided: &LinkDecision) -> String {
    let (title, text) = match decided.action {
        LinkAction::Approve => ("Approved", "The calls run now, and the agent goes on."),
        LinkAction::Reject => ("Rejected", "The calls will not run; the agent is told why."),
    };
    let body = format!(
        "<h1 id=\"title\">{title}</h1><p class=\"state\" id=\"message\" data-state=\"decided\">\
         {text} Decided as <b>{}</b>.</p>",
        escape(&decided.person)
    );
    document(title, &body)
}

/// The page of a link that decides nothing, and its status.
pub fn state(link: &LinkState) -> (StatusCode, String) {
    let (status, key, title, text) = match link {
        LinkState::Unknown => (
            StatusCode::NOT_FOUND,
            "unknown",
            "Unknown link",
            "This decision link is not known here: it may be mistyped, or its chat was deleted."
                .to_owned(),
        ),
        LinkState::Used { decided, .. } => (
            StatusCode::GONE,
            "used",
            "Link already used",
            format!(
                "This link has already been used{}. A link decides once.",
                decided
                    .as_ref()
                    .map(|by| format!(": {}", by_whom(by)))
                    .unwrap_or_default()
            ),
        ),
        LinkState::Decided(decided) => (
            StatusCode::CONFLICT,
            "decided",
            "Already decided",
            match decided {
                Some(by) => format!("These calls were already decided: {}.", by_whom(by)),
                None => "These calls no longer wait for a decision.".to_owned(),
            },
        ),
        LinkState::Expired { expires_at } => (
            StatusCode::GONE,
            "expired",
            "Link expired",
            format!(
                "This link expired at {} (UTC). Decide in Signoff itself, if the calls still wait.",
                readable_time(expires_at)
            ),
        ),
        LinkState::Live { .. } => (
            StatusCode::OK,
            "live",
            "Decision link",
            "This link can decide.".to_owned(),
        ),
    };
    let body = format!(
        "<h1 id=\"title\">{}</h1><p class=\"state\" id=\"message\" data-state=\"{key}\">{}</p>",
        escape(title),
        escape(&text)
    );
    (status, document(title, &body))
}

/// "Approved by alice (link) at 2026-11-26 10:00".
fn by_whom(by: &DecidedBy) -> String {
    format!(
        "{} by {} ({}) at {} UTC",
        by.summary,
        by.user,
        by.channel.as_str(),
        readable_time(&by.at)
    )
}

/// `2026-11-26T10:00:00.000Z` as `2026-11-26 10:00`; other text as it is.
fn readable_time(at: &str) -> String {
    chrono::DateTime::parse_from_rfc3339(at)
        .map(|at| {
            at.with_timezone(&chrono::Utc)
                .format("%Y-%m-%d %H:%M")
                .to_string()
        })
        .unwrap_or_else(|_| at.to_owned())
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use signoff_protocol::hitl::ActionRequest;

    use super::*;

    fn batch(name: &str, args: serde_json::Value) -> BatchSummary {
        BatchSummary {
            task_id: "t".into(),
            agent: "default/<demo>".into(),
            requester: "alice\"&".into(),
            title: "<script>x</script>".into(),
            calls: vec![ActionRequest {
                id: "call_1".into(),
                name: name.into(),
                args,
                description: None,
                server: Some("files".into()),
                approval_id: None,
                via: None,
                metadata: Default::default(),
            }],
        }
    }

    #[test]
    fn everything_shown_is_escaped() {
        let html = confirm(
            LinkAction::Reject,
            "bob<i>",
            "2026-11-26T10:00:00.000Z",
            &batch(
                "write<file>",
                json!({"content": "</pre><script>alert(1)</script>"}),
            ),
            "tok\"en",
        );
        assert!(!html.contains("<script>"), "{html}");
        assert!(!html.contains("<i>"));
        assert!(html.contains("&lt;/pre&gt;&lt;script&gt;"));
        assert!(html.contains("value=\"tok&quot;en\""));
        assert!(html.contains("default/&lt;demo&gt;"));
        assert!(html.contains("alice&quot;&amp;"));
        assert!(html.contains("name=\"reason\""), "a Reject page asks why");
        assert!(html.contains("2026-11-26 10:00"));
    }

    #[test]
    fn the_csp_allows_the_style_sheet_by_its_hash_and_no_script() {
        let digest = Sha256::digest(STYLE.as_bytes());
        let hash = base64::engine::general_purpose::STANDARD.encode(digest);
        assert!(CSP.contains(&format!("style-src 'sha256-{hash}'")));
        assert!(CSP.starts_with("default-src 'none'"));
        assert!(!CSP.contains("script-src"));
        assert!(CSP.contains("form-action 'self'"));
    }

    #[test]
    fn each_dead_link_has_its_status() {
        assert_eq!(state(&LinkState::Unknown).0, StatusCode::NOT_FOUND);
        let expired = LinkState::Expired {
            expires_at: "x".into(),
        };
        assert_eq!(state(&expired).0, StatusCode::GONE);
        assert_eq!(state(&LinkState::Decided(None)).0, StatusCode::CONFLICT);
        let used = LinkState::Used {
            used_at: "x".into(),
            decided: None,
        };
        assert_eq!(state(&used).0, StatusCode::GONE);
    }
}
