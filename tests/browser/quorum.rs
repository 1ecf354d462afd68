//! Browser test of approvers (crates/server/README.md, Approvers): three people in three
//! browsers. Alice asks an agent whose calls need two approvals from group sre and may not
//! approve her own; her card says whom it waits for, with Reject and Stop but no Approve. Bob
//! approves from his inbox, which says who asked and why he is asked ("1 of 2"); Carol opens the
//! chat from hers, read only, and approves there; only then the call runs, and Alice's chat
//! shows its result. Screenshots, light and dark, of each step.

use crate::support::harness::{card_status, click, wait_card, App, Browser, Options};

const AGENTS: &str = "[[agents]]\nname = \"deploy\"\ndescription = \"Ships releases\"\n\
    approvers = [\"group:sre\"]\nrequester_may_approve = false\nquorum = 2\n\
    [[agents.tools]]\nkind = \"builtin_files\"\nrequire_approval = [\"write_file\"]\n";

const CARD: &str = "[data-testid=tool-card][data-tool=write_file]";

/// Whether an element matching `css` is shown.
async fn shows(app: &App, css: &str) -> bool {
    match app.find(css).await {
        Ok(element) => element.is_displayed().await.unwrap_or(false),
        Err(_) => false,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_of_sre_approve_alice_s_call_before_it_runs_and_each_sees_where_it_stands() {
    let mut app = App::start_with(
        "quorum-three-people",
        Options {
            agents_toml: Some(AGENTS.to_owned()),
            tokens: Some(vec![
                "alice-token=alice".into(),
                "bob-token=bob:sre".into(),
                "carol-token=carol:sre".into(),
            ]),
            ..Options::default()
        },
    )
    .await;
    app.open("/approvals#token=alice-token").await;
    app.open_new_chat_of("/agents/default/deploy/chat").await;
    app.send("write release.txt: v2").await;
    wait_card(&app, CARD, "pending").await;
    // Alice may not approve her own call: it waits for sre, and she may still reject or stop.
    let waiting = format!("{CARD} [data-testid=quorum]");
    app.wait_for_text(&waiting, "Waiting for sre: 0 of 2").await;
    assert!(!shows(&app, &format!("{CARD} [data-testid=approve-button]")).await);
    assert!(shows(&app, &format!("{CARD} [data-testid=reject-button]")).await);
    assert!(shows(&app, "[data-testid=stop-button]").await);
    app.shots("quorum-requester-waiting").await;

    // Bob's inbox: who asked, why he is asked, where it stands; he approves there.
    let bob = Browser::start((1280, 900)).await;
    let alice = app.switch(&bob.driver);
    app.open("/approvals#token=bob-token").await;
    app.wait_for_text(
        "[data-testid=inbox-routing]",
        "default/deploy asks for alice · you are asked as group sre",
    )
    .await;
    app.wait_for_text(&waiting, "Waiting for sre: 0 of 2").await;
    app.shots("quorum-approver-inbox").await;
    click(&app, &format!("{CARD} [data-testid=approve-button]")).await;
    app.wait_for_text(
        &waiting,
        "Approved by bob (in sre): 1 of 2; waiting for 1 more of sre",
    )
    .await;
    // Approved once: his Approve is gone, and so is his choice (the server said the batch
    // still waits): the card is pending, without "Decided here" nor Change; the call has not run.
    app.wait_until("Bob's Approve and choice are gone", || async {
        Ok(
            !shows(&app, &format!("{CARD} [data-testid=approve-button]")).await
                && !shows(&app, &format!("{CARD} [data-testid=undo-button]")).await,
        )
    })
    .await;
    assert_eq!(card_status(&app, CARD).await, "pending");
    assert!(!app.sandbox("release.txt").exists());
    app.shots("quorum-one-of-two").await;
    // Bob opens the chat: read only, no composer nor Stop.
    click(&app, "[data-testid=inbox-open-chat]").await;
    app.wait_for_text("[data-testid=read-only]", "alice's chat")
        .await;
    app.wait_for_text(&waiting, "Approved by bob (in sre): 1 of 2")
        .await;
    assert!(!shows(&app, "[data-testid=composer-input]").await);
    assert!(!shows(&app, "[data-testid=stop-button]").await);
    app.shots("quorum-approver-chat").await;
    let _ = bob.driver.clone().quit().await;

    // Alice sees Bob's approval on her card.
    app.switch(&alice);
    app.wait_for_text(
        &waiting,
        "Approved by bob (in sre): 1 of 2; waiting for 1 more of sre",
    )
    .await;
    assert!(!shows(&app, &format!("{CARD} [data-testid=approve-button]")).await);
    assert!(shows(&app, &format!("{CARD} [data-testid=reject-button]")).await);
    app.shots("quorum-requester-one-of-two").await;

    // Carol opens the chat from her inbox and approves in it, read only: now the call runs.
    let carol = Browser::start((1280, 900)).await;
    app.switch(&carol.driver);
    app.open("/approvals#token=carol-token").await;
    app.wait_for_text(&waiting, "Approved by bob (in sre): 1 of 2")
        .await;
    click(&app, "[data-testid=inbox-open-chat]").await;
    app.wait_for_text("[data-testid=read-only]", "alice's chat")
        .await;
    assert!(!shows(&app, "[data-testid=composer-input]").await);
    click(&app, &format!("{CARD} [data-testid=approve-button]")).await;
    app.wait_until("the call has run", || async {
        Ok(std::fs::read_to_string(app.sandbox("release.txt")).is_ok_and(|text| text == "v2"))
    })
    .await;
    ran(&app).await;
    // Still read only after she decided.
    assert!(!shows(&app, "[data-testid=composer-input]").await);
    assert!(!shows(&app, "[data-testid=stop-button]").await);
    let _ = carol.driver.clone().quit().await;

    // Alice's chat shows the result, and names both who decided it.
    app.switch(&alice);
    ran(&app).await;
    app.wait_for_text(
        "[data-testid=decided-elsewhere]",
        "Decided elsewhere by bob and carol.",
    )
    .await;
    // The notice is of that batch: her next one takes it down.
    app.send("write release.txt: v3").await;
    app.wait_for_text(&waiting, "Waiting for sre: 0 of 2").await;
    assert!(app
        .find_all("[data-testid=decided-elsewhere]")
        .await
        .is_empty());
    app.finish().await;
}

/// Waits until the card shows that its approved call ran: its status stays `approved`, its
/// outcome says completed.
async fn ran(app: &App) {
    wait_card(app, CARD, "approved").await;
    app.wait_for(
        "the card shows its outcome",
        &format!("{CARD}[data-outcome=completed]"),
    )
    .await;
}
