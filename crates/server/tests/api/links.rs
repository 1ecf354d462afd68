//! Decision links (docs/notifications.md): a person's Approve and Reject links of a pending
//! batch, made over REST; the confirm page a GET shows (deciding nothing); the CSRF-safe form
//! whose POST alone decides, once, through channel `link`; and the pages of a link that decides
//! nothing (used, decided elsewhere, expired, unknown) with their statuses.

use std::time::Duration;

use serde_json::{json, Value};

use crate::support::*;

/// A paused demo task writing `notes.txt`; its id.
async fn paused_write(app: &TestApp) -> String {
    let results = say(app, "write notes.txt: hi").await;
    assert_eq!(states(&results).last().unwrap(), "input-required");
    task_id(&results)
}

/// The caller's links of `task`: (approve URL, reject URL).
async fn links(app: &TestApp, token: Option<&str>, task: &str) -> (String, String) {
    let (status, body) = app
        .post_json_as(&format!("/api/approvals/{task}/links"), token, &json!({}))
        .await;
    assert_eq!(status, 201, "{body}");
    assert!(body["expires_at"].as_str().unwrap().ends_with('Z'));
    let approve = body["approve_url"].as_str().unwrap().to_owned();
    let reject = body["reject_url"].as_str().unwrap().to_owned();
    assert!(
        approve.starts_with(&format!("{}/decide/", app.base)),
        "{approve}"
    );
    assert_ne!(approve, reject);
    (approve, reject)
}

/// A browser-like client: it keeps the cookies the confirm page sets.
fn browser() -> reqwest::Client {
    reqwest::Client::builder()
        .cookie_store(true)
        .build()
        .unwrap()
}

/// The status and HTML of a page.
async fn open(client: &reqwest::Client, url: &str) -> (u16, String) {
    let response = client.get(url).send().await.unwrap();
    let status = response.status().as_u16();
    if status == 200 {
        let csp = response.headers()["content-security-policy"]
            .to_str()
            .unwrap()
            .to_owned();
        assert!(csp.starts_with("default-src 'none'"), "{csp}");
        assert_eq!(response.headers()["cache-control"], "no-store");
    }
    (status, response.text().await.unwrap())
}

/// The form token of a confirm page.
fn form_token(html: &str) -> String {
    let start = html.find("name=\"form_token\" value=\"").unwrap() + 25;
    html[start..].split('"').next().unwrap().to_owned()
}

/// Posts the confirm form of `url` as its page would (same origin), with `fields`.
async fn confirm(
    client: &reqwest::Client,
    app: &TestApp,
    url: &str,
    fields: &[(&str, &str)],
) -> (u16, String) {
    let response = client
        .post(url)
        .header("origin", app.base.as_str())
        .header("content-type", "application/x-www-form-urlencoded")
        .body(form(fields))
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.text().await.unwrap())
}

/// `fields` as a browser encodes a form.
fn form(fields: &[(&str, &str)]) -> String {
    let encode = |text: &str| {
        percent_encoding::utf8_percent_encode(text, percent_encoding::NON_ALPHANUMERIC).to_string()
    };
    fields
        .iter()
        .map(|(name, value)| format!("{}={}", encode(name), encode(value)))
        .collect::<Vec<_>>()
        .join("&")
}

/// The `data-state` a link's page says it is in.
fn page_state(html: &str) -> &str {
    let start = html.find("data-state=\"").unwrap() + 12;
    html[start..].split('"').next().unwrap()
}

async fn decided_entries(app: &TestApp) -> Vec<Value> {
    let (status, body) = app.get("/api/approvals?state=decided").await;
    assert_eq!(status, 200);
    body["decisions"].as_array().unwrap().clone()
}

#[tokio::test]
async fn opening_a_link_decides_nothing_and_its_confirm_form_decides_once() {
    let app = spawn_app().await;
    let task = paused_write(&app).await;
    let (approve, _) = links(&app, None, &task).await;
    let client = browser();
    for _ in 0..2 {
        // A mail scanner, a preview, the person: GETs, any number.
        let (status, html) = open(&client, &approve).await;
        assert_eq!(status, 200, "{html}");
        assert!(html.contains("Approve 1 call?"), "{html}");
        assert!(html.contains("default/demo"));
        assert!(html.contains("write_file"));
        assert!(html.contains("notes.txt"));
        assert!(html.contains("<b id=\"requester\">local</b>"));
    }
    assert_eq!(task_state(&app, &task).await, "input-required");
    assert!(!app.sandbox().join("notes.txt").exists());

    let (_, html) = open(&client, &approve).await;
    let token = form_token(&html);
    // Another site's post, and a post without the page's cookie, decide nothing.
    let forged = client
        .post(&approve)
        .header("origin", "https://evil.example")
        .header("content-type", "application/x-www-form-urlencoded")
        .body(form(&[("form_token", token.as_str())]))
        .send()
        .await
        .unwrap();
    assert_eq!(forged.status(), 403);
    let no_origin = client
        .post(&approve)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(form(&[("form_token", token.as_str())]))
        .send()
        .await
        .unwrap();
    assert_eq!(no_origin.status(), 403);
    let (status, _) = confirm(&browser(), &app, &approve, &[("form_token", &token)]).await;
    assert_eq!(
        status, 403,
        "a client that never opened the page has no cookie"
    );
    let (status, _) = confirm(&client, &app, &approve, &[("form_token", "guess")]).await;
    assert_eq!(status, 403);
    assert_eq!(task_state(&app, &task).await, "input-required");

    let (status, html) = confirm(&client, &app, &approve, &[("form_token", &token)]).await;
    assert_eq!(status, 200, "{html}");
    assert_eq!(page_state(&html), "decided");
    wait_for_state(&app, &task, "completed").await;
    assert_eq!(
        std::fs::read_to_string(app.sandbox().join("notes.txt")).unwrap(),
        "hi"
    );
    let entries = decided_entries(&app).await;
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0]["channel"], "link");
    assert_eq!(entries[0]["decidedBy"], "local");

    // The same link again: already used, as a page and as a post.
    let (status, html) = open(&client, &approve).await;
    assert_eq!(status, 410);
    assert_eq!(page_state(&html), "used");
    assert!(html.contains("Approved by local (link)"), "{html}");
    let (status, html) = confirm(&client, &app, &approve, &[("form_token", &token)]).await;
    assert_eq!(status, 410);
    assert_eq!(page_state(&html), "used");
    assert_eq!(decided_entries(&app).await.len(), 1, "decided once");
}

#[tokio::test]
async fn a_reject_link_rejects_every_call_with_the_reason_given() {
    let app = spawn_app().await;
    let task = paused_write(&app).await;
    let (_, reject) = links(&app, None, &task).await;
    let client = browser();
    let (status, html) = open(&client, &reject).await;
    assert_eq!(status, 200);
    assert!(html.contains("Reject 1 call?"));
    assert!(html.contains("name=\"reason\""));
    let token = form_token(&html);
    let fields = [("form_token", token.as_str()), ("reason", "not today")];
    let (status, html) = confirm(&client, &app, &reject, &fields).await;
    assert_eq!(status, 200, "{html}");
    wait_for_state(&app, &task, "completed").await;
    assert!(!app.sandbox().join("notes.txt").exists());
    let entries = decided_entries(&app).await;
    assert_eq!(entries[0]["channel"], "link");
    assert_eq!(entries[0]["calls"][0]["verdict"], "deny");
    assert_eq!(entries[0]["calls"][0]["reason"], "not today");
}

#[tokio::test]
async fn a_link_of_a_batch_decided_elsewhere_says_by_whom_and_decides_nothing() {
    let app = spawn_app().await;
    let task = paused_write(&app).await;
    let (approve, reject) = links(&app, None, &task).await;
    let client = browser();
    let (_, html) = open(&client, &reject).await;
    let token = form_token(&html);
    let (status, body) = decide_rest(&app, None, &task, json!({"decision_type": "approve"})).await;
    assert_eq!(status, 200, "{body}");
    for url in [&approve, &reject] {
        let (status, html) = open(&client, url).await;
        assert_eq!(status, 409, "{html}");
        assert_eq!(page_state(&html), "decided");
        assert!(html.contains("Approved by local (rest)"), "{html}");
    }
    // The page opened before the REST decision posts too late.
    let (status, html) = confirm(&client, &app, &reject, &[("form_token", &token)]).await;
    assert_eq!(status, 409, "{html}");
    assert_eq!(page_state(&html), "decided");
    let entries = decided_entries(&app).await;
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0]["channel"], "rest");
}

#[tokio::test]
async fn an_expired_link_and_an_unknown_one_say_so() {
    let app = spawn_with(|config| config.decision_link_ttl = Duration::ZERO).await;
    let task = paused_write(&app).await;
    let (approve, _) = links(&app, None, &task).await;
    let client = browser();
    let (status, html) = open(&client, &approve).await;
    assert_eq!(status, 410, "{html}");
    assert_eq!(page_state(&html), "expired");
    let (status, html) = confirm(&client, &app, &approve, &[("form_token", "x")]).await;
    assert_eq!(status, 403, "no page was opened, so no form token: {html}");
    let (status, html) = open(&client, &app.url("/decide/no-such-token")).await;
    assert_eq!(status, 404);
    assert_eq!(page_state(&html), "unknown");
    assert_eq!(task_state(&app, &task).await, "input-required");
}

#[tokio::test]
async fn only_the_task_owner_gets_links_and_only_of_a_waiting_batch() {
    let app = spawn_with(|config| {
        config.auth = signoff_server::AuthMode::Tokens;
        config.tokens = vec!["tA=alice".into(), "tB=bob".into()];
    })
    .await;
    let results = send_stream_as(&app, "tA", "write notes.txt: hi").await;
    let task = task_id(&results);
    let path = format!("/api/approvals/{task}/links");
    let (status, _) = app.post_json_as(&path, Some("tB"), &json!({})).await;
    assert_eq!(status, 403);
    let (status, _) = app.post_json_as(&path, None, &json!({})).await;
    assert_eq!(status, 401);
    let (status, _) = app
        .post_json_as("/api/approvals/nope/links", Some("tA"), &json!({}))
        .await;
    assert_eq!(status, 404);
    let (approve, _) = links(&app, Some("tA"), &task).await;
    // The link decides as alice, whoever holds it, with no bearer token.
    let client = browser();
    let (_, html) = open(&client, &approve).await;
    assert!(html.contains("You decide as <b>alice</b>"), "{html}");
    let token = form_token(&html);
    let (status, _) = confirm(&client, &app, &approve, &[("form_token", &token)]).await;
    assert_eq!(status, 200);
    let (status, body) = app.post_json_as(&path, Some("tA"), &json!({})).await;
    assert_eq!(status, 409, "no batch waits any more: {body}");
    let (_, body) = app.get_as("/api/approvals?state=decided", Some("tA")).await;
    assert_eq!(body["decisions"][0]["channel"], "link");
    assert_eq!(body["decisions"][0]["decidedBy"], "alice");
}

/// A new chat turn with the demo agent as the user of `token`.
async fn send_stream_as(app: &TestApp, token: &str, text: &str) -> Vec<Value> {
    let body = message_request("message/stream", message_v03(text, None, None));
    results(&app.stream_as(None, Some(token), body).await)
}
