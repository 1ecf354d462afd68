//! Browser tests of calls decided without asking and approvals that expire: "Always allow in
//! this chat" from a card (the next identical call runs without pausing and names the policy),
//! the Policies panel revoking it (the next call pauses again), a batch with a short
//! `approval_timeout` counting down, then shown as Expired; grants for a number of calls, for
//! an hour and until revoked made from the card's buttons, with what is left of each in the
//! Policies panel, and each card's "Why?" (a Cedar policy, a grant, `require_approval`).

use crate::support::harness::{call_card, click, wait_card, App, Options};
use serde_json::Value;

/// The audit entries of the server's decided approvals.
async fn decided(app: &App) -> Vec<Value> {
    let body = app.get_json("/api/approvals?state=decided").await;
    body["decisions"].as_array().cloned().unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn always_allow_in_this_chat_then_revoke_it_in_the_policies_panel() {
    let app = App::start("always-allow").await;
    app.open_new_chat().await;
    app.wait_for_text("[data-testid=no-policies]", "None").await;
    app.send("write a.txt: 1").await;
    wait_card(&app, &call_card("call_1"), "pending").await;

    // The choice shows what it will allow before it takes effect.
    click(
        &app,
        &format!("{} [data-testid=always-allow-button]", call_card("call_1")),
    )
    .await;
    app.wait_for_text(
        "[data-testid=allow-summary]",
        "From now on: write_file with any arguments, in this chat, until you revoke it.",
    )
    .await;
    click(&app, "[data-testid=allow-scope-agent]").await;
    app.wait_for_text(
        "[data-testid=allow-summary]",
        "in every chat with this agent",
    )
    .await;
    click(&app, "[data-testid=allow-scope-chat]").await;
    app.wait_for_text("[data-testid=allow-summary]", "in this chat")
        .await;
    assert_eq!(
        app.read_sandbox("a.txt"),
        None,
        "nothing ran before the choice"
    );
    click(&app, "[data-testid=allow-confirm]").await;
    wait_card(&app, &call_card("call_1"), "approved").await;
    app.wait_for_status("ready").await;
    assert_eq!(app.read_sandbox("a.txt").as_deref(), Some("1"));
    app.wait_for_text(
        "[data-testid=policy]",
        "Always allow write_file with any arguments, in this chat",
    )
    .await;

    // The next identical call runs without a pause, and its card names the policy.
    app.send("write a.txt: 2").await;
    wait_card(&app, &call_card("call_2"), "completed").await;
    app.wait_for_status("ready").await;
    assert_eq!(app.read_sandbox("a.txt").as_deref(), Some("2"));
    app.wait_for_text(
        &format!("{} [data-testid=decided-by]", call_card("call_2")),
        "Allowed by your policy: write_file with any arguments, in this chat",
    )
    .await;
    assert!(
        app.find_all(&format!(
            "{} [data-testid=approve-button]",
            call_card("call_2")
        ))
        .await
        .is_empty(),
        "it never waited"
    );
    let audit = decided(&app).await;
    let by_policy: Vec<&Value> = audit
        .iter()
        .filter(|entry| entry["channel"] == "policy")
        .collect();
    assert_eq!(by_policy.len(), 1, "{audit:?}");
    assert_eq!(by_policy[0]["calls"][0]["id"], "call_2");

    // Revoked in the Policies panel: the next call pauses again.
    click(&app, "[data-testid=policy-revoke]").await;
    app.wait_for_text("[data-testid=no-policies]", "None").await;
    app.send("write a.txt: 3").await;
    wait_card(&app, &call_card("call_3"), "pending").await;
    app.wait_for_status("approval").await;
    assert_eq!(app.read_sandbox("a.txt").as_deref(), Some("2"));
    app.assert_no_errors().await;
    app.finish().await;
}

const EXPIRING: &str = r#"
[[agents]]
name = "demo"
description = "Files, with approvals that expire"
approval_timeout = "5s"
on_timeout = "reject"

[[agents.tools]]
kind = "builtin_files"
require_approval = ["write_file", "delete_file"]
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_with_a_short_timeout_counts_down_then_shows_expired() {
    let app = App::start_with("expiry", Options::with_agents(EXPIRING.to_owned())).await;
    app.open_new_chat().await;
    app.send("write b.txt: 1").await;
    wait_card(&app, &call_card("call_1"), "pending").await;
    app.wait_for_text(
        &format!("{} [data-testid=countdown]", call_card("call_1")),
        "Expires in 0:0",
    )
    .await;
    wait_card(&app, &call_card("call_1"), "expired").await;
    let badge = app
        .text(&format!(
            "{} [data-testid=tool-status]",
            call_card("call_1")
        ))
        .await;
    assert!(
        badge.contains("Expired") && !badge.contains("Rejected"),
        "{badge}"
    );
    app.wait_for_text(
        &format!("{} [data-testid=expired-note]", call_card("call_1")),
        "Nobody decided in time",
    )
    .await;
    assert!(app
        .find_all(&format!("{} [data-testid=countdown]", call_card("call_1")))
        .await
        .is_empty());
    app.wait_for_status("ready").await;
    assert_eq!(app.read_sandbox("b.txt"), None);
    app.assert_no_errors().await;
    app.finish().await;
}

const CEDAR: &str = r#"
@id("notes-for-everyone")
permit (principal, action == Signoff::Action::"call", resource == Signoff::Tool::"write_file")
when { context.args has path && context.args.path like "notes/*" };

@id("no-secrets")
@reason("secrets stay out of the agent's reach")
forbid (principal, action == Signoff::Action::"call", resource == Signoff::Tool::"write_file")
when { context.args has path && context.args.path like "secrets/*" };
"#;

/// Opens the "Why?" of call `id`'s card (checking its `aria-expanded` before and after) and
/// waits until it says `text`.
async fn open_why(app: &App, id: &str, text: &str) {
    let button = format!("{} [data-testid=why-button]", call_card(id));
    app.wait_for(&format!("the Why? of {id}"), &button).await;
    assert_eq!(app.attribute(&button, "aria-expanded").await, "false");
    click(app, &button).await;
    assert_eq!(app.attribute(&button, "aria-expanded").await, "true");
    app.wait_for_text(&format!("{} [data-testid=why-text]", call_card(id)), text)
        .await;
}

/// "Always allow" on the pending call `id`, for as long as `lasting` (a choice's test id),
/// then Approve and always allow; waits until the call ran.
async fn allow_from_card(app: &App, id: &str, lasting: &str, summary: &str) {
    click(
        app,
        &format!("{} [data-testid=always-allow-button]", call_card(id)),
    )
    .await;
    click(app, &format!("[data-testid={lasting}]")).await;
    app.wait_for_text("[data-testid=allow-summary]", summary)
        .await;
    click(app, "[data-testid=allow-confirm]").await;
    wait_card(app, &call_card(id), "approved").await;
    app.wait_for_status("ready").await;
}

/// Grants of each kind made through the card's buttons, and "Why?" on cards that a Cedar
/// policy, a grant and the agent's `require_approval` decided: a grant for 2 calls lets two
/// run without asking (the panel counts down "2 uses left", "1 use left") and the third waits
/// again; a grant for an hour shows the time left and is revoked; one until revoked shows
/// nothing left to count.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grants_by_uses_hour_and_until_revoked_and_why_each_call_was_decided() {
    let options = Options {
        cedar: Some(CEDAR.to_owned()),
        ..Options::default()
    };
    let app = App::start_with("grants-and-why", options).await;
    app.open_new_chat().await;
    app.wait_for_text("[data-testid=no-policies]", "None").await;

    // A Cedar permit lets it run; its Why? names the policy and its file.
    app.send("write notes/a.txt: 1").await;
    wait_card(&app, &call_card("call_1"), "completed").await;
    app.wait_for_status("ready").await;
    open_why(
        &app,
        "call_1",
        "Allowed without asking by the policy \u{201c}notes-for-everyone\u{201d} in main.cedar.",
    )
    .await;
    // A Cedar forbid refuses it, with the policy's reason.
    app.send("write secrets/k.txt: x").await;
    wait_card(&app, &call_card("call_2"), "denied").await;
    app.wait_for_status("ready").await;
    open_why(
        &app,
        "call_2",
        "Refused by the policy \u{201c}no-secrets\u{201d} in main.cedar: secrets stay out of \
         the agent's reach.",
    )
    .await;

    // Held by the agent's setting: its Why? says so.
    app.send("write a.txt: 1").await;
    wait_card(&app, &call_card("call_3"), "pending").await;
    open_why(
        &app,
        "call_3",
        "because of the agent's require_approval setting",
    )
    .await;
    // A grant for 2 calls: the number is typed; a wrong one is refused before anything is sent.
    click(
        &app,
        &format!("{} [data-testid=always-allow-button]", call_card("call_3")),
    )
    .await;
    let uses = app
        .wait_for("the number of calls", "[data-testid=allow-uses]")
        .await;
    uses.clear().await.unwrap();
    uses.send_keys("0").await.unwrap();
    app.wait_for_text("[data-testid=allow-summary]", "1 or more")
        .await;
    click(&app, "[data-testid=allow-confirm]").await;
    app.wait_for_text("[data-testid=allow-error]", "1 or more")
        .await;
    assert_eq!(card_status_of(&app, "call_3").await, "pending");
    uses.clear().await.unwrap();
    uses.send_keys("2").await.unwrap();
    app.wait_for_text(
        "[data-testid=allow-summary]",
        "From now on: write_file with any arguments, in this chat, for the next 2 calls.",
    )
    .await;
    app.shots("grant-for-two-calls").await;
    click(&app, "[data-testid=allow-confirm]").await;
    wait_card(&app, &call_card("call_3"), "approved").await;
    app.wait_for_status("ready").await;
    app.wait_for_text("[data-testid=policy-left]", "2 uses left")
        .await;

    // Two calls run without asking; the panel counts down, the cards say what was left.
    app.send("write a.txt: 2").await;
    wait_card(&app, &call_card("call_4"), "completed").await;
    app.wait_for_status("ready").await;
    app.wait_for_text("[data-testid=policy-left]", "1 use left")
        .await;
    open_why(
        &app,
        "call_4",
        "Allowed without asking by your \u{201c}Always allow\u{201d}: write_file with any \
         arguments, in this chat, 1 more call.",
    )
    .await;
    app.shots("grant-why-and-uses-left").await;
    app.send("write a.txt: 3").await;
    wait_card(&app, &call_card("call_5"), "completed").await;
    app.wait_for_status("ready").await;
    open_why(&app, "call_5", "in this chat, no more calls.").await;
    // Spent: it leaves the panel, and the third call waits again.
    app.wait_for_text("[data-testid=no-policies]", "None").await;
    assert_eq!(app.read_sandbox("a.txt").as_deref(), Some("3"));
    app.send("write a.txt: 4").await;
    wait_card(&app, &call_card("call_6"), "pending").await;
    app.wait_for_status("approval").await;

    // For one hour: the panel shows the time left; the next call runs; Revoke ends it.
    allow_from_card(
        &app,
        "call_6",
        "allow-one-hour",
        "in this chat, for one hour.",
    )
    .await;
    app.wait_for_text("[data-testid=policy-left]", "h left")
        .await;
    app.send("write a.txt: 5").await;
    wait_card(&app, &call_card("call_7"), "completed").await;
    app.wait_for_status("ready").await;
    open_why(&app, "call_7", "in this chat, until ").await;
    // The grant's end as the person's clock and calendar read it ("until Dec 3, 2026, 7:22
    // AM"), never the stored timestamp ("2026-12-03T07:22:44.743Z").
    let why = app
        .text(&format!("{} [data-testid=why-text]", call_card("call_7")))
        .await;
    let until = why.split(", until ").nth(1).unwrap_or_default();
    assert!(
        !until.is_empty() && !until.contains('T') && !until.contains('Z'),
        "{why}"
    );
    // Allowed without asking, its header still says where the tool comes from.
    app.wait_for_text(&format!("{} .tool-server", call_card("call_7")), "files")
        .await;
    click(&app, "[data-testid=policy-revoke]").await;
    app.wait_for_text("[data-testid=no-policies]", "None").await;

    // Until revoked: listed with nothing to count down, and the next call runs.
    app.send("write a.txt: 6").await;
    wait_card(&app, &call_card("call_8"), "pending").await;
    allow_from_card(
        &app,
        "call_8",
        "allow-until-revoked",
        "in this chat, until you revoke it.",
    )
    .await;
    app.wait_for_text(
        "[data-testid=policy]",
        "Always allow write_file with any arguments, in this chat",
    )
    .await;
    assert!(app.find_all("[data-testid=policy-left]").await.is_empty());
    app.send("write a.txt: 7").await;
    wait_card(&app, &call_card("call_9"), "completed").await;
    app.wait_for_status("ready").await;
    assert_eq!(app.read_sandbox("a.txt").as_deref(), Some("7"));
    let violations = app.axe_violations().await;
    assert!(violations.is_empty(), "{violations:#?}");
    app.assert_no_errors().await;
    app.finish().await;
}

async fn card_status_of(app: &App, id: &str) -> String {
    crate::support::harness::card_status(app, &call_card(id)).await
}
