//! Browser tests of a waiting batch's hand-over and deadline ladder (docs/rest.md, Hand-over
//! and Deadline ladder), as people see them: Alice, who may not approve her own call, reads whom
//! it waits for and is offered only Reject; she asks dba from her card (the agent lets a hand-over
//! widen who approves: `handover_may_widen`), and Dave (in dba) finds
//! the batch in his inbox, which says he is asked as himself too once she asks him by name; he
//! asks sre from there, approves, and reads in the chat that it waits for one more;
//! a requester extends a deadline within its agent's `max_extend`, offered from the first load
//! only the extensions that fit, in the chat and in the inbox; an inbox marks a reminded and an
//! escalated batch, live and on load. Screenshots, light and dark, of each.

use crate::support::harness::{click, wait_card, App, Browser, Options};

const CARD: &str = "[data-testid=tool-card][data-tool=write_file]";

/// Types `text` into the composer without sending it.
async fn type_in_composer(app: &App, text: &str) {
    let input = app.find("[data-testid=composer-input]").await.unwrap();
    input.clear().await.unwrap();
    input.send_keys(text).await.unwrap();
}

/// Opens "Ask…" in `scope` (a card or an inbox batch), names `whom`, and confirms.
async fn ask(app: &App, scope: &str, whom: &str) {
    let field = format!("{scope} [data-testid=ask-to]");
    if app.find_all(&field).await.is_empty() {
        click(app, &format!("{scope} [data-testid=ask-button]")).await;
    }
    let input = app.wait_for("the Ask box opens", &field).await;
    input.clear().await.unwrap();
    input.send_keys(whom).await.unwrap();
    click(app, &format!("{scope} [data-testid=ask-confirm]")).await;
}

const TWO_OF_SRE: &str = "[[agents]]\nname = \"deploy\"\ndescription = \"Ships releases\"\n\
    approvers = [\"group:sre\"]\nrequester_may_approve = false\nquorum = 2\n\
    [[agents.tools]]\nkind = \"builtin_files\"\nrequire_approval = [\"write_file\"]\n";

/// The same agent whose operator lets a hand-over widen who may approve (without it, the
/// people a hand-over names may read and comment, not approve).
fn two_of_sre_delegable() -> String {
    TWO_OF_SRE.replace("quorum = 2\n", "quorum = 2\nhandover_may_widen = true\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn alice_asks_dave_who_finds_it_in_his_inbox_and_each_reads_whom_it_waits_for() {
    let mut app = App::start_with(
        "ladder-handover",
        Options {
            agents_toml: Some(two_of_sre_delegable()),
            tokens: Some(vec![
                "alice-token=alice".into(),
                "bob-token=bob:sre".into(),
                "dave-token=dave:dba".into(),
            ]),
            ..Options::default()
        },
    )
    .await;
    app.open("/approvals#token=alice-token").await;
    app.open_new_chat_of("/agents/default/deploy/chat").await;
    app.send("write release.txt: v2").await;
    wait_card(&app, CARD, "pending").await;
    app.wait_for_text(&format!("{CARD} [data-testid=quorum]"), "Waiting for sre")
        .await;
    // Alice may not approve: the header says whom it waits for, not "your approval".
    app.wait_for_text(
        "[data-testid=chat-status]",
        "write_file waits for approval by sre",
    )
    .await;
    assert!(!app
        .text("[data-testid=chat-status]")
        .await
        .contains("your approval"));
    // The composer offers her only what she may do.
    type_in_composer(&app, "approve").await;
    app.wait_for_text(
        "[data-testid=composer-hint]",
        "You may not approve: the pending call waits for approval by sre. Say reject",
    )
    .await;
    let send = app.find("[data-testid=send-button]").await.unwrap();
    assert!(!send.is_enabled().await.unwrap());
    type_in_composer(&app, "ok").await;
    app.wait_for_text(
        "[data-testid=composer-hint]",
        "Not a decision yet: the pending call waits for approval by sre. Say reject",
    )
    .await;
    assert!(!app
        .text("[data-testid=composer-hint]")
        .await
        .contains("approve or reject"));
    assert!(!send.is_enabled().await.unwrap());
    app.shots("ladder-requester-hint").await;
    type_in_composer(&app, "").await;

    // She asks from her card: a name the server refuses shows its words, then Dave.
    ask(&app, CARD, "group:").await;
    app.wait_for_text(
        &format!("{CARD} [data-testid=handover-error]"),
        "Not asked: to: \"group:\" names no group",
    )
    .await;
    // She asks dba: Dave, in dba, finds the batch in his inbox, asked as group dba.
    ask(&app, CARD, "group:dba").await;
    app.wait_for_text(
        &format!("{CARD} [data-testid=handover-result]"),
        "Asked group dba",
    )
    .await;
    let dave = Browser::start((1280, 900)).await;
    let alice = app.switch(&dave.driver);
    app.open("/approvals#token=dave-token").await;
    app.wait_for_text(
        "[data-testid=inbox-routing]",
        "default/deploy asks for alice · you are asked as group dba",
    )
    .await;
    // Then she asks him by name: his open inbox says he is asked as himself too.
    app.switch(&alice);
    ask(&app, CARD, "dave").await;
    app.wait_for_text(
        &format!("{CARD} [data-testid=handover-result]"),
        "Asked dave",
    )
    .await;
    app.shots("ladder-requester-asked").await;
    app.switch(&dave.driver);
    app.wait_for_text("[data-testid=inbox-routing]", "user dave")
        .await;
    let asked = app.text("[data-testid=inbox-routing]").await;
    assert!(asked.contains("group dba"), "{asked}");
    // He asks sre from there too.
    let batch = "[data-testid=inbox-batch]";
    ask(&app, batch, "group:sre").await;
    app.wait_for_text(
        &format!("{batch} [data-testid=handover-result]"),
        "Asked group sre",
    )
    .await;
    app.shots("ladder-handed-inbox").await;
    click(&app, &format!("{CARD} [data-testid=approve-button]")).await;
    app.wait_for_text(
        &format!("{CARD} [data-testid=quorum]"),
        "Approved by dave (asked by hand-over): 1 of 2; waiting for 1 more of sre",
    )
    .await;
    // In the chat, his status line says where it stands, not that it waits for him.
    click(&app, "[data-testid=inbox-open-chat]").await;
    app.wait_for_text("[data-testid=read-only]", "alice's chat")
        .await;
    app.wait_for_text(
        "[data-testid=chat-status]",
        "You approved; waiting for 1 more of sre",
    )
    .await;
    app.shots("ladder-approver-approved").await;
    let _ = dave.driver.clone().quit().await;

    app.switch(&alice);
    app.wait_for_text(
        &format!("{CARD} [data-testid=quorum]"),
        "Approved by dave (asked by hand-over): 1 of 2; waiting for 1 more of sre",
    )
    .await;
    app.wait_for_text(
        "[data-testid=chat-status]",
        "write_file waits for approval by sre",
    )
    .await;
    app.finish().await;
}

const TIMED: &str = "[[agents]]\nname = \"timed\"\ndescription = \"Waits ten minutes\"\n\
    approval_timeout = \"10m\"\nmax_extend = \"30m\"\n\
    [[agents.tools]]\nkind = \"builtin_files\"\nrequire_approval = [\"write_file\"]\n";

/// The minutes the card's countdown shows ("Expires in 24:58" is 24).
async fn minutes_left(app: &App) -> u64 {
    let text = app.text(&format!("{CARD} [data-testid=countdown]")).await;
    text.trim_start_matches("Expires in ")
        .split(':')
        .next()
        .and_then(|minutes| minutes.parse().ok())
        .unwrap_or(0)
}

/// Waits until the countdown shows at least `minutes`.
async fn wait_minutes(app: &App, minutes: u64) {
    app.wait_until(
        &format!("the countdown shows {minutes} minutes or more"),
        || async { Ok(minutes_left(app).await >= minutes) },
    )
    .await;
}

/// Waits until `scope` offers extending by exactly `offered` (the `data-by` of each choice).
async fn wait_offered(app: &App, scope: &str, offered: &[&str]) {
    let css = format!("{scope} [data-testid=extend-button]");
    app.wait_until(
        &format!("{scope} to offer extending by {offered:?}"),
        || {
            let css = css.clone();
            async move {
                let mut by = Vec::new();
                for button in app.find_all(&css).await {
                    by.push(button.attr("data-by").await?.unwrap_or_default());
                }
                Ok(by == offered)
            }
        },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deadline_is_extended_within_max_extend_and_nothing_beyond_it_is_offered() {
    let app = App::start_with("ladder-extend", Options::with_agents(TIMED)).await;
    app.open_new_chat_of("/agents/default/timed/chat").await;
    app.send("write release.txt: v2").await;
    wait_card(&app, CARD, "pending").await;
    app.wait_for_text(&format!("{CARD} [data-testid=countdown]"), "Expires in")
        .await;
    assert!(minutes_left(&app).await <= 10);
    let extend = |by: &str| format!("{CARD} [data-testid=extend-button][data-by=\"{by}\"]");
    // An hour is past the agent's 30 minutes: from the first load (the batch's ladder says
    // its max_extend) only a quarter of an hour is offered.
    wait_offered(&app, CARD, &["15m"]).await;
    app.shots("ladder-extend-offered").await;
    click(&app, &extend("15m")).await;
    app.wait_for_text(
        &format!("{CARD} [data-testid=extend-result]"),
        "Extended by 15 min (in all at most 30m past the first deadline)",
    )
    .await;
    wait_minutes(&app, 20).await;
    assert!(app.find_all(&extend("1h")).await.is_empty());
    app.shots("ladder-extended").await;
    // The inbox's copy of the batch, a fresh card, offers what is left from the start too.
    app.open("/approvals").await;
    let inbox_card = format!("[data-testid=inbox-batch] {CARD}");
    wait_offered(&app, &inbox_card, &["15m"]).await;
    click(
        &app,
        &format!("{inbox_card} [data-testid=extend-button][data-by=\"15m\"]"),
    )
    .await;
    wait_minutes(&app, 35).await;
    app.wait_for_text(
        &format!("{inbox_card} [data-testid=extend-none]"),
        "as late as its agent allows",
    )
    .await;
    assert!(app.find_all(&extend("15m")).await.is_empty());
    // A reload keeps the new deadline and offers nothing more: the approvals stream says both.
    app.driver.refresh().await.unwrap();
    wait_card(&app, CARD, "pending").await;
    wait_minutes(&app, 35).await;
    app.wait_for_text(
        &format!("{inbox_card} [data-testid=extend-none]"),
        "as late as its agent allows",
    )
    .await;
    app.finish().await;
}

const LADDER: &str = "[[agents]]\nname = \"ladder\"\ndescription = \"Reminds, then escalates\"\n\
    remind_after = \"4s\"\nescalate_after = \"8s\"\nescalate_to = [\"group:sre\"]\n\
    [[agents.tools]]\nkind = \"builtin_files\"\nrequire_approval = [\"write_file\"]\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_inbox_marks_a_reminded_and_an_escalated_batch_live_and_on_load() {
    let mut app = App::start_with(
        "ladder-marks",
        Options {
            agents_toml: Some(LADDER.to_owned()),
            tokens: Some(vec!["alice-token=alice".into(), "bob-token=bob:sre".into()]),
            ..Options::default()
        },
    )
    .await;
    app.open("/approvals#token=alice-token").await;
    app.open_new_chat_of("/agents/default/ladder/chat").await;
    app.send("write release.txt: v2").await;
    wait_card(&app, CARD, "pending").await;
    // Alice's inbox is open while the ladder takes its steps: the marks come live.
    click(&app, "[data-testid=approvals-link]").await;
    let marks = "[data-testid=inbox-batch] [data-testid=ladder-mark]";
    app.wait_for_text(marks, "Reminded").await;
    app.wait_for_text(marks, "Escalated to sre").await;
    assert_eq!(app.texts(marks).await, ["Reminded", "Escalated to sre"]);
    app.shots("ladder-marks-live").await;

    // Bob, in sre, finds it in his inbox once it escalated, marked as it loads.
    let bob = Browser::start((1280, 900)).await;
    let alice = app.switch(&bob.driver);
    app.open("/approvals#token=bob-token").await;
    app.wait_for_text(marks, "Escalated to sre").await;
    assert_eq!(app.texts(marks).await, ["Reminded", "Escalated to sre"]);
    app.shots("ladder-marks-on-load").await;
    let _ = bob.driver.clone().quit().await;
    app.switch(&alice);
    app.finish().await;
}

const ESCALATES_TO_SRE: &str =
    "[[agents]]\nname = \"release\"\ndescription = \"Ships, after dba\"\n\
    approvers = [\"group:dba\"]\nrequester_may_approve = false\nquorum = 2\n\
    escalate_after = \"3s\"\nescalate_to = [\"group:sre\"]\n\
    [[agents.tools]]\nkind = \"builtin_files\"\nrequire_approval = [\"write_file\"]\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn someone_the_batch_escalated_to_approves_it_and_reads_as_asked_by_escalation() {
    let mut app = App::start_with(
        "ladder-escalated-approves",
        Options {
            agents_toml: Some(ESCALATES_TO_SRE.to_owned()),
            tokens: Some(vec![
                "alice-token=alice".into(),
                "bob-token=bob:sre".into(),
                "dave-token=dave:dba".into(),
            ]),
            ..Options::default()
        },
    )
    .await;
    app.open("/approvals#token=alice-token").await;
    app.open_new_chat_of("/agents/default/release/chat").await;
    app.send("write release.txt: v3").await;
    wait_card(&app, CARD, "pending").await;
    let session = app.session_id().await;

    // Bob, of sre, may decide only once the batch escalated to sre; he approves in his inbox.
    let bob = Browser::start((1280, 900)).await;
    let alice = app.switch(&bob.driver);
    app.open("/approvals#token=bob-token").await;
    let marks = "[data-testid=inbox-batch] [data-testid=ladder-mark]";
    app.wait_for_text(marks, "Escalated to sre").await;
    click(&app, &format!("{CARD} [data-testid=approve-button]")).await;
    let quorum = format!("{CARD} [data-testid=quorum]");
    app.wait_for_text(
        &quorum,
        "Approved by bob (asked by escalation): 1 of 2; waiting for 1 more of dba or sre",
    )
    .await;
    assert!(app.read_sandbox("release.txt").is_none());
    app.shots("ladder-escalated-approved").await;
    let _ = bob.driver.clone().quit().await;

    // Dave of dba gives the second approval over REST: now it runs, and Alice's chat says so.
    let approved = app
        .approve_over_rest(&session, "alice-token", "dave-token")
        .await;
    assert_eq!(approved, 200);
    app.switch(&alice);
    app.wait_until("the release is written", || async {
        Ok(app.read_sandbox("release.txt").as_deref() == Some("v3"))
    })
    .await;
    app.wait_for_text(
        "[data-testid=decided-elsewhere]",
        "Decided elsewhere by bob and dave.",
    )
    .await;
    app.finish().await;
}
