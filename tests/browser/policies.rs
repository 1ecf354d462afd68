//! Browser tests of calls decided without asking and approvals that expire: "Always allow in
//! this chat" from a card (the next identical call runs without pausing and names the policy),
//! the Policies panel revoking it (the next call pauses again), and a batch with a short
//! `approval_timeout` counting down, then shown as Expired.

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
        "From now on: write_file with any arguments, in this chat.",
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
