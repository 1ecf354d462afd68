//! Email notifications against a real SMTP server (PyPI's aiosmtpd,
//! `crates/server/tests/email/install.sh`, writing a Maildir through
//! `tests/email/flaky_mailbox.py`, which refuses each `flaky…` address once): every recipient
//! has a delivery of their own, so a retry goes only to the one whose message was refused;
//! approvers named by user get the message too, at an address the channel or the directory
//! knows for them, without the requester's decision links (a hand-over to an address nobody
//! knows mails nobody there); the
//! members of an approver group a proxy named with their email get it with links of their own,
//! at a pause and at an escalation to their group.

use crate::support::*;

/// The server with an email channel to aiosmtpd on `port` (its `[channels.email]` lines after
/// the SMTP settings in `email`), people by token, and the agents file `agents_toml`.
async fn spawn_mailing(port: u16, email: &str, agents_toml: &str) -> TestApp {
    spawn_mailing_as(port, email, agents_toml, |config| {
        config.auth = signoff_server::AuthMode::Tokens;
        config.tokens = vec!["carol-token=carol:sre".into(), "bob-token=bob".into()];
    })
    .await
}

/// [`spawn_mailing`], people named as `auth` says.
async fn spawn_mailing_as(
    port: u16,
    email: &str,
    agents_toml: &str,
    auth: impl FnOnce(&mut signoff_server::Config),
) -> TestApp {
    let dir = tempfile::tempdir().unwrap();
    let agents = write_agents(dir.path(), agents_toml);
    let file = dir.path().join("notifications.toml");
    std::fs::write(
        &file,
        format!(
            "[delivery]\nretry_base = \"50ms\"\nretry_max = \"200ms\"\nretry_for = \"1h\"\n\
             poll = \"50ms\"\n\n[[channels]]\nname = \"mail\"\nkind = \"email\"\n\
             events = [\"batch.pending\", \"batch.escalated\"]\n[channels.email]\nsmtp_host = \"127.0.0.1\"\n\
             smtp_port = {port}\ntls = \"none\"\nfrom = \"Signoff <signoff@example.test>\"\n{email}"
        ),
    )
    .unwrap();
    spawn_in(dir, move |config| {
        config.agents_file = Some(agents);
        auth(config);
        config.notifications = Some(file);
        config.public_url = Some("https://signoff.example.com".into());
    })
    .await
}

const DEMO_AGENT: &str = "[[agents]]\nname = \"demo\"\n\
    [[agents.tools]]\nkind = \"builtin_files\"\nrequire_approval = [\"write_file\"]\n";

/// Carol asks the demo agent to write a file; its batch waits.
async fn carol_pauses(app: &TestApp) {
    let body = message_request("message/stream", message_v03("write a.txt: hi", None, None));
    let results = results(&app.stream_as(None, Some("carol-token"), body).await);
    assert_eq!(
        states(&results).last().map(String::as_str),
        Some("input-required"),
        "{results:?}"
    );
}

/// Waits until every notification written so far was sent.
async fn outbox_drained(app: &TestApp) {
    eventually("the outbox drained", || async {
        let text = app.client.get(app.url("/metrics")).send().await.ok()?;
        let text = text.text().await.ok()?;
        text.contains("signoff_notifications_queued 0")
            .then_some(())
    })
    .await;
}

#[tokio::test]
async fn an_email_retry_goes_only_to_the_recipient_whose_message_was_refused() {
    let scratch = tempfile::tempdir().unwrap();
    let maildir = scratch.path().join("maildir");
    let smtp = start_smtp(&maildir).await;
    let app = spawn_mailing(
        smtp.port,
        "to = [\"ok@example.test\", \"flaky@example.test\"]\n\
         people = { carol = \"carol@example.test\" }\n",
        DEMO_AGENT,
    )
    .await;
    carol_pauses(&app).await;
    outbox_drained(&app).await;
    let got = messages(&maildir);
    let to: Vec<&str> = got.iter().map(|(to, _)| to.as_str()).collect();
    assert_eq!(
        to,
        [
            "carol@example.test",
            "flaky@example.test",
            "ok@example.test"
        ],
        "one message each, the refused one once retried: {got:?}"
    );
    assert!(got[0]
        .1
        .contains("Approve: https://signoff.example.com/decide/"));
    assert!(!got[1].1.contains("/decide/") && !got[2].1.contains("/decide/"));
    let metrics = app
        .client
        .get(app.url("/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        metrics.contains("signoff_notifications_total{channel=\"mail\",outcome=\"retry\"} 1"),
        "{metrics}"
    );
    app.stop().await;
}

#[tokio::test]
async fn approvers_named_by_user_get_the_email_at_a_known_address_without_the_requesters_links() {
    let scratch = tempfile::tempdir().unwrap();
    let maildir = scratch.path().join("maildir");
    let smtp = start_smtp(&maildir).await;
    let agents = DEMO_AGENT.replace(
        "name = \"demo\"\n",
        "name = \"demo\"\napprovers = [\"group:sre\", \"user:bob\", \"user:lead@example.test\"]\n",
    );
    let app = spawn_mailing(
        smtp.port,
        "to_approvers = true\npeople = { carol = \"carol@example.test\", bob = \"bob@example.test\" }\n",
        &agents,
    )
    .await;
    carol_pauses(&app).await;
    outbox_drained(&app).await;
    let got = messages(&maildir);
    let to: Vec<&str> = got.iter().map(|(to, _)| to.as_str()).collect();
    // `user:lead@example.test` is an id nobody signed in as and `people` does not list: no
    // address is known for it, and the id is not taken for one.
    assert_eq!(to, ["bob@example.test", "carol@example.test"], "{got:?}");
    // Carol's link decides by her subject alone, which the approvers do not name: she is
    // offered the Reject link only, never an Approve link she could not use.
    assert!(got[1]
        .1
        .contains("Reject: https://signoff.example.com/decide/"));
    assert!(!got[1].1.contains("Approve: "), "{}", got[1].1);
    assert!(!got[0].1.contains("/decide/"), "{}", got[0].1);
    assert!(got[0].1.contains("write_file"), "{}", got[0].1);
    app.stop().await;
}

#[tokio::test]
async fn a_hand_over_to_an_address_nobody_knows_mails_nobody_there() {
    let scratch = tempfile::tempdir().unwrap();
    let maildir = scratch.path().join("maildir");
    let smtp = start_smtp(&maildir).await;
    let app = spawn_mailing(
        smtp.port,
        "to_approvers = true
people = { carol = \"carol@example.test\", bob = \"bob@example.test\" }\n",
        DEMO_AGENT,
    )
    .await;
    carol_pauses(&app).await;
    let (_, inbox) = app.get_as("/api/approvals", Some("carol-token")).await;
    let task = inbox["approvals"][0]["taskId"].as_str().unwrap().to_owned();
    let path = format!("/api/approvals/{task}/handover");
    let hand_to = |to: &'static str| {
        let (app, path) = (&app, &path);
        async move {
            let (status, body) = app
                .post_json_as(path, Some("carol-token"), &serde_json::json!({"to": to}))
                .await;
            assert_eq!(status, 200, "{body}");
        }
    };
    hand_to("user:victim@outside.example").await;
    outbox_drained(&app).await;
    // Bob is someone the channel knows: his hand-over is mailed, so the one before was not
    // lost on the way.
    hand_to("user:bob").await;
    eventually("bob's message", || async {
        let got = messages(&maildir);
        got.iter()
            .any(|(to, _)| to == "bob@example.test")
            .then_some(())
    })
    .await;
    outbox_drained(&app).await;
    let got = messages(&maildir);
    assert!(
        got.iter().all(|(to, _)| !to.contains("outside.example")),
        "{got:?}"
    );
    let bobs: Vec<&String> = (got.iter())
        .filter(|(to, _)| to == "bob@example.test")
        .map(|(_, text)| text)
        .collect();
    assert_eq!(bobs.len(), 1, "{got:?}");
    assert!(
        bobs[0].starts_with("carol asks user:bob to decide"),
        "{}",
        bobs[0]
    );
    app.stop().await;
}

/// A request as `user` of `groups` with `email`, as an authenticating proxy names them.
fn via_proxy(
    request: reqwest::RequestBuilder,
    user: &str,
    email: &str,
    groups: &str,
) -> reqwest::RequestBuilder {
    request
        .header("x-auth-request-user", user)
        .header("x-auth-request-email", email)
        .header("x-auth-request-groups", groups)
}

#[tokio::test]
async fn a_group_member_a_proxy_named_with_their_email_is_mailed_their_own_links() {
    let scratch = tempfile::tempdir().unwrap();
    let maildir = scratch.path().join("maildir");
    let smtp = start_smtp(&maildir).await;
    let agents = DEMO_AGENT.replace(
        "name = \"demo\"\n",
        "name = \"demo\"\napprovers = [\"group:sre\"]\n",
    );
    let app = spawn_mailing_as(smtp.port, "to_approvers = true\n", &agents, |config| {
        config.auth = signoff_server::AuthMode::Proxy;
        config.trusted_proxies = vec!["127.0.0.0/8".into()];
    })
    .await;
    // Dana of sre and erin of dev are seen once each; frank, requester, asks.
    for (user, groups) in [("dana", "sre"), ("erin", "dev")] {
        let me = via_proxy(
            app.client.get(app.url("/api/me")),
            user,
            &format!("{user}@example.test"),
            groups,
        );
        assert_eq!(me.send().await.unwrap().status(), 200);
    }
    let body = message_request("message/stream", message_v03("write a.txt: hi", None, None));
    let ask = via_proxy(
        app.client.post(app.url(DEMO)).json(&body),
        "frank",
        "frank@example.test",
        "sre",
    );
    let streamed = ask.send().await.unwrap().text().await.unwrap();
    assert!(streamed.contains("input-required"), "{streamed}");
    eventually("a message", || async {
        (!messages(&maildir).is_empty()).then_some(())
    })
    .await;
    outbox_drained(&app).await;
    let got = messages(&maildir);
    let to: Vec<&str> = got.iter().map(|(to, _)| to.as_str()).collect();
    assert_eq!(to, ["dana@example.test", "frank@example.test"], "{got:?}");
    assert!(
        got[0]
            .1
            .contains("Approve: https://signoff.example.com/decide/"),
        "{}",
        got[0].1
    );
    app.stop().await;
}

/// Decides through a decision link of a message (its address on `--public-url`, opened on
/// `app`) as its confirm page's form does, with the cookie the page set: the confirm's status.
async fn confirm_link(app: &TestApp, link: &str) -> u16 {
    let url = link.replace("https://signoff.example.com", &app.base);
    let page = app.client.get(&url).send().await.unwrap();
    let cookie = page.headers()["set-cookie"].to_str().unwrap();
    let cookie = cookie.split(';').next().unwrap().to_owned();
    let html = page.text().await.unwrap();
    let start = html.find("name=\"form_token\" value=\"").unwrap() + 25;
    let token = html[start..].split('"').next().unwrap();
    let response = app
        .client
        .post(&url)
        .header("cookie", cookie)
        .header("sec-fetch-site", "same-origin")
        .header("content-type", "application/x-www-form-urlencoded")
        .body(format!("form_token={token}"))
        .send()
        .await
        .unwrap();
    response.status().as_u16()
}

/// The URL after `Approve: ` in a message's text.
fn approve_link(text: &str) -> &str {
    let at = text
        .find("Approve: ")
        .unwrap_or_else(|| panic!("no link in {text}"))
        + 9;
    text[at..].split_whitespace().next().unwrap()
}

#[tokio::test]
async fn an_escalation_to_a_group_mails_its_members_links_that_decide_as_them() {
    let scratch = tempfile::tempdir().unwrap();
    let maildir = scratch.path().join("maildir");
    let smtp = start_smtp(&maildir).await;
    let agents = DEMO_AGENT.replace(
        "name = \"demo\"\n",
        "name = \"demo\"\napprovers = [\"group:sre\"]\nescalate_after = \"1s\"\n\
         escalate_to = [\"group:dba\"]\n",
    );
    let email = "to_approvers = true\n";
    let app = spawn_mailing_as(smtp.port, email, &agents, |config| {
        config.auth = signoff_server::AuthMode::Proxy;
        config.trusted_proxies = vec!["127.0.0.0/8".into()];
    })
    .await;
    for (user, groups) in [("dana", "sre"), ("erin", "dba"), ("gus", "dev")] {
        let address = format!("{user}@example.test");
        let me = via_proxy(app.client.get(app.url("/api/me")), user, &address, groups);
        assert_eq!(me.send().await.unwrap().status(), 200);
    }
    let body = message_request("message/stream", message_v03("write a.txt: hi", None, None));
    let request = app.client.post(app.url(DEMO)).json(&body);
    let ask = via_proxy(request, "frank", "frank@example.test", "dev");
    let streamed = ask.send().await.unwrap().text().await.unwrap();
    assert!(streamed.contains("input-required"), "{streamed}");
    let escalated = |got: &[(String, String)]| -> Vec<(String, String)> {
        got.iter()
            .filter(|(_, text)| text.starts_with("Nobody decided in time"))
            .cloned()
            .collect()
    };
    eventually("the escalation's messages", || async {
        (escalated(&messages(&maildir)).len() >= 3).then_some(())
    })
    .await;
    outbox_drained(&app).await;
    let got = messages(&maildir);
    let to: Vec<String> = escalated(&got).into_iter().map(|(to, _)| to).collect();
    assert_eq!(
        to,
        [
            "dana@example.test",
            "erin@example.test",
            "frank@example.test"
        ],
        "sre's and dba's members and the requester; gus, of dev, none: {got:?}"
    );
    assert_eq!(
        got.len(),
        5,
        "the pause's two (dana, frank) and these: {got:?}"
    );
    let erins = &escalated(&got)[1].1;
    assert_eq!(confirm_link(&app, approve_link(erins)).await, 200);
    let decided = via_proxy(
        app.client.get(app.url("/api/approvals?state=decided")),
        "erin",
        "erin@example.test",
        "dba",
    );
    let decided: serde_json::Value = decided.send().await.unwrap().json().await.unwrap();
    assert_eq!(decided["decisions"][0]["decidedBy"], "erin", "{decided}");
    assert_eq!(decided["decisions"][0]["channel"], "link", "{decided}");
    app.stop().await;
}
