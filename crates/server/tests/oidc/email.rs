//! An email channel that writes to approvers reaches the members of an approver group
//! (`group:sre`): the directory of people learns each member's email and groups when they sign
//! in through the provider; the SMTP server (PyPI's aiosmtpd, `tests/email/install.sh`) gets a
//! message for each member with Approve and Reject links of their own, and the link's confirm
//! form decides as that member. A member of another group gets nothing, and the requester,
//! though in the group, only their own message; the decision is told to the same people. A
//! batch handed over to a group reaches its members the same way.

use std::path::Path;

use super::*;

/// The demo agent, whose writes the `sre` group approves.
const SRE_APPROVES: &str = "[[agents]]\nname = \"demo\"\napprovers = [\"group:sre\"]\n\
    [[agents.tools]]\nkind = \"builtin_files\"\nrequire_approval = [\"write_file\"]\n";

/// The agents file `agents_toml` and an email channel to aiosmtpd on `port` that writes to
/// approvers, in `dir`: (agents file, notifications file).
fn mailing_files(
    dir: &Path,
    port: u16,
    agents_toml: &str,
) -> (std::path::PathBuf, std::path::PathBuf) {
    let agents = write_agents(dir, agents_toml);
    let notifications = dir.join("notifications.toml");
    std::fs::write(
        &notifications,
        format!(
            "[delivery]\nretry_base = \"50ms\"\nretry_max = \"200ms\"\npoll = \"50ms\"\n\n\
             [[channels]]\nname = \"mail\"\nkind = \"email\"\n\
             events = [\"batch.pending\", \"batch.escalated\", \"batch.decided\"]\n\
             [channels.email]\nsmtp_host = \"127.0.0.1\"\nsmtp_port = {port}\ntls = \"none\"\n\
             from = \"Signoff <signoff@example.test>\"\nto_approvers = true\n"
        ),
    )
    .unwrap();
    (agents, notifications)
}

/// `who` signed in through the provider in a browser of their own: its session cookie.
async fn signed_in(app: &TestApp, who: &str) -> String {
    let (browser, jar) = browser();
    sign_in(&browser, &app.base, "/", who).await;
    session_cookie(&jar, &app.base)
}

/// The URL after `label: ` in a message's text.
fn link_in(text: &str, label: &str) -> String {
    let at = text
        .find(&format!("{label}: "))
        .unwrap_or_else(|| panic!("no {label} link in {text}"))
        + label.len()
        + 2;
    text[at..].split_whitespace().next().unwrap().to_owned()
}

/// Opens a decision link and posts its confirm form as its page does: the confirm page's HTML.
async fn confirm_link(app: &TestApp, url: &str) -> String {
    let client = reqwest::Client::builder()
        .cookie_store(true)
        .build()
        .unwrap();
    let page = client.get(url).send().await.unwrap().text().await.unwrap();
    assert!(page.contains("You decide as <b>alice</b>"), "{page}");
    let start = page.find("name=\"form_token\" value=\"").unwrap() + 25;
    let token = page[start..].split('"').next().unwrap();
    let response = client
        .post(url)
        .header("origin", app.base.as_str())
        .header("content-type", "application/x-www-form-urlencoded")
        .body(format!("form_token={token}"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    response.text().await.unwrap()
}

/// Carol (session `cookie`) asks the demo agent to write a file: its task id.
async fn carol_asks(app: &TestApp, cookie: &str) -> String {
    let text = "write a.txt: hi";
    let message = a2a::message_request("message/send", a2a::message_v03(text, None, None));
    let answer: Value = reqwest::Client::new()
        .post(app.url(DEMO))
        .header("cookie", cookie)
        .header("sec-fetch-site", "same-origin")
        .json(&message)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    answer["result"]["id"].as_str().expect("a task").to_owned()
}

/// The messages in `maildir` once there are at least `count` and every notification written
/// so far was sent (none is still on its way).
async fn mailed(app: &TestApp, maildir: &Path, count: usize) -> Vec<(String, String)> {
    eventually("the messages", || async {
        (messages(maildir).len() >= count).then_some(())
    })
    .await;
    eventually("the outbox drained", || async {
        let metrics = reqwest::get(app.url("/metrics"))
            .await
            .ok()?
            .text()
            .await
            .ok()?;
        metrics
            .contains("signoff_notifications_queued 0")
            .then_some(())
    })
    .await;
    messages(maildir)
}

/// Alice's decisions, newest first (her session `cookie`).
async fn decisions_of(app: &TestApp, cookie: &str) -> Value {
    reqwest::Client::new()
        .get(app.url("/api/approvals?state=decided"))
        .header("cookie", cookie)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

#[tokio::test]
async fn a_member_of_an_approver_group_is_mailed_links_that_decide_as_them() {
    let scratch = tempfile::tempdir().unwrap();
    let maildir = scratch.path().join("maildir");
    let smtp = start_smtp(&maildir).await;
    let (agents, notifications) = mailing_files(scratch.path(), smtp.port, SRE_APPROVES);
    let (_provider, apps) = start_with(1, &[], move |config| {
        config.agents_file = Some(agents.clone());
        config.notifications = Some(notifications.clone());
    })
    .await;
    let app = &apps[0];
    let alice = signed_in(app, "alice").await;
    signed_in(app, "bob").await;
    let carol = signed_in(app, "carol").await;
    carol_asks(app, &carol).await;
    let got = mailed(app, &maildir, 2).await;
    let to: Vec<&str> = got.iter().map(|(to, _)| to.as_str()).collect();
    assert_eq!(
        to,
        ["alice@example.com", "carol@example.com"],
        "alice as a member of sre; carol, the requester, once (her own); bob, of dev, none: {got:?}"
    );
    let approve = link_in(&got[0].1, "Approve");
    assert!(
        approve.starts_with(&format!("{}/decide/", app.base)),
        "{approve}"
    );
    assert_ne!(
        approve,
        link_in(&got[1].1, "Approve"),
        "each their own links"
    );
    link_in(&got[0].1, "Reject");
    confirm_link(app, &approve).await;
    let decided = decisions_of(app, &alice).await;
    let decision = &decided["decisions"][0];
    assert_eq!(decision["decidedBy"], "alice", "{decided}");
    assert_eq!(decision["channel"], "link", "{decided}");
    assert_eq!(decision["summary"], "Approved", "{decided}");
    // The decision is told to the same people as the pause.
    let got = mailed(app, &maildir, 4).await;
    let told: Vec<&str> = got
        .iter()
        .filter(|(_, text)| text.starts_with("Approved: "))
        .map(|(to, _)| to.as_str())
        .collect();
    assert_eq!(told, ["alice@example.com", "carol@example.com"], "{got:?}");
    assert_eq!(got.len(), 4, "{got:?}");
}

#[tokio::test]
async fn a_batch_handed_over_to_a_group_mails_its_members_links_that_decide_as_them() {
    let scratch = tempfile::tempdir().unwrap();
    let maildir = scratch.path().join("maildir");
    let smtp = start_smtp(&maildir).await;
    let requester_alone = SRE_APPROVES.replace("approvers = [\"group:sre\"]\n", "");
    let (agents, notifications) = mailing_files(scratch.path(), smtp.port, &requester_alone);
    let (_provider, apps) = start_with(1, &[], move |config| {
        config.agents_file = Some(agents.clone());
        config.notifications = Some(notifications.clone());
    })
    .await;
    let app = &apps[0];
    let alice = signed_in(app, "alice").await;
    signed_in(app, "bob").await;
    let carol = signed_in(app, "carol").await;
    let task = carol_asks(app, &carol).await;
    let got = mailed(app, &maildir, 1).await;
    let to: Vec<&str> = got.iter().map(|(to, _)| to.as_str()).collect();
    assert_eq!(to, ["carol@example.com"], "carol decides alone: {got:?}");
    let handover = reqwest::Client::new()
        .post(app.url(&format!("/api/approvals/{task}/handover")))
        .header("cookie", &carol)
        .header("sec-fetch-site", "same-origin")
        .json(&json!({"to": "group:sre", "note": "I wrote it; someone else looks"}))
        .send()
        .await
        .unwrap();
    assert_eq!(handover.status(), 200);
    let got = mailed(app, &maildir, 3).await;
    let handed: Vec<&(String, String)> = got
        .iter()
        .filter(|(_, text)| text.starts_with("carol asks group:sre to decide"))
        .collect();
    let to: Vec<&str> = handed.iter().map(|(to, _)| to.as_str()).collect();
    assert_eq!(
        to,
        ["alice@example.com", "carol@example.com"],
        "the member of sre, and carol as the requester; bob, of dev, none: {got:?}"
    );
    assert_eq!(got.len(), 3, "{got:?}");
    assert!(
        !handed[1].1.contains("/decide/"),
        "the requester's is news only"
    );
    confirm_link(app, &link_in(&handed[0].1, "Approve")).await;
    let decided = decisions_of(app, &alice).await;
    assert_eq!(decided["decisions"][0]["decidedBy"], "alice", "{decided}");
    assert_eq!(decided["decisions"][0]["channel"], "link", "{decided}");
}
