//! Browser tests that the chat never decides by accident: typing right after a card arrives
//! types text (the focus never jumps to a batch), a single-letter shortcut acts only on the card
//! or bar that holds the focus, "Approve all" keeps a rejection made on a card, the requester
//! under a two-person rule is offered no approval and told why, a choice not yet sent looks
//! unlike one that ran, the keyboard reaches the composer at once and comes back to it, and a
//! panel opened low on the page ("Why?", "Always allow…") scrolls into view, the focus staying.

use thirtyfour::prelude::Key;

use crate::support::harness::{card, click, reject_with_reason, wait_card, App, Browser, Options};

/// What has the focus, by its `data-testid` (empty for the page itself).
async fn focused(app: &App) -> String {
    app.js("return (document.activeElement && document.activeElement.dataset.testid) || ''")
        .await
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// Types `text` wherever the focus is, key by key, as a person does.
async fn type_at_focus(app: &App, text: &str) {
    let active = app.driver.active_element().await.unwrap();
    active.send_keys(text).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typing_right_after_a_batch_arrives_decides_nothing() {
    let app = App::start("typing-after-send").await;
    app.open_new_chat().await;
    app.send("write a.txt: one and delete old.txt").await;
    app.wait_for("the batch bar shows", "[data-testid=batch-bar]")
        .await;
    // The person goes on typing, with "a" and "r" in it, the instant the batch shows.
    type_at_focus(&app, "actually wait, and also rename it").await;
    assert_eq!(focused(&app).await, "composer-input");
    let typed = app
        .js("return document.querySelector('[data-testid=composer-input]').value")
        .await;
    assert_eq!(typed, "actually wait, and also rename it");
    // Long enough for a decision to have gone out and run: none did.
    tokio::time::sleep(std::time::Duration::from_millis(800)).await;
    wait_card(&app, &card("write_file"), "pending").await;
    wait_card(&app, &card("delete_file"), "pending").await;
    assert_eq!(app.read_sandbox("a.txt"), None);
    assert!(app.read_sandbox("old.txt").is_some(), "the delete ran");

    // After a reload the focus stays off the batch too: a stray "a" on the page does nothing.
    app.driver.refresh().await.unwrap();
    app.wait_for("the batch bar shows again", "[data-testid=batch-bar]")
        .await;
    assert_ne!(focused(&app).await, "batch-bar");
    type_at_focus(&app, "a").await;
    tokio::time::sleep(std::time::Duration::from_millis(800)).await;
    wait_card(&app, &card("delete_file"), "pending").await;
    assert!(app.read_sandbox("old.txt").is_some(), "the delete ran");

    // Moved to the bar on purpose (and on screen), A is Approve all.
    app.js("document.querySelector('[data-testid=batch-bar]').focus(); return true")
        .await;
    type_at_focus(&app, "a").await;
    app.wait_for_status("ready").await;
    assert_eq!(app.read_sandbox("a.txt").as_deref(), Some("one"));
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shortcut_on_a_bar_scrolled_out_of_view_does_nothing() {
    let app = App::start_with(
        "shortcut-off-screen",
        Options {
            size: (1000, 420),
            ..Options::default()
        },
    )
    .await;
    app.open_new_chat().await;
    app.send("write s.txt: one and delete old.txt").await;
    app.wait_for("the batch bar shows", "[data-testid=batch-bar]")
        .await;
    // The bar keeps the focus but is scrolled away (the transcript scrolled to its top).
    app.js(
        "const bar = document.querySelector('[data-testid=batch-bar]'); bar.focus(); \
         for (const el of document.querySelectorAll('*')) { if (el.scrollTop > 0) el.scrollTop = 0; } \
         const r = bar.getBoundingClientRect(); \
         if (r.bottom > 0 && r.top < innerHeight) bar.style.marginTop = (innerHeight * 3) + 'px'; \
         return true",
    )
    .await;
    let off_screen = app
        .js(
            "const r = document.querySelector('[data-testid=batch-bar]').getBoundingClientRect(); \
             return r.bottom <= 0 || r.top >= innerHeight",
        )
        .await;
    assert_eq!(off_screen, true);
    type_at_focus(&app, "a").await;
    tokio::time::sleep(std::time::Duration::from_millis(800)).await;
    wait_card(&app, &card("write_file"), "pending").await;
    assert_eq!(app.read_sandbox("s.txt"), None);
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approve_all_keeps_a_rejection_made_on_a_card() {
    let app = App::start("approve-rest").await;
    app.open_new_chat().await;
    app.send("write k.txt: keep and delete old.txt").await;
    app.wait_for("the batch bar shows", "[data-testid=batch-bar]")
        .await;
    reject_with_reason(&app, "delete_file", "keep it for the audit").await;
    // Chosen, not sent: the card says so, unlike a call that was rejected.
    app.wait_for_text(
        &format!("{} [data-testid=tool-status]", card("delete_file")),
        "Reject chosen · not sent",
    )
    .await;
    app.wait_for_text("[data-testid=approve-all]", "Approve the rest (1)")
        .await;
    app.shots("approve-rest-staged").await;
    click(&app, "[data-testid=approve-all]").await;
    app.wait_for_status("ready").await;
    wait_card(&app, &card("write_file"), "approved").await;
    wait_card(&app, &card("delete_file"), "rejected").await;
    assert_eq!(app.read_sandbox("k.txt").as_deref(), Some("keep"));
    assert!(
        app.read_sandbox("old.txt").is_some(),
        "the rejected delete ran"
    );
    // The decision's card left; the focus came back to the composer, not to the page.
    app.wait_until("the composer has the focus", || async {
        Ok(focused(&app).await == "composer-input")
    })
    .await;
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_requester_under_a_two_person_rule_is_offered_no_approval_and_told_why() {
    const AGENTS: &str = "[[agents]]\nname = \"deploy\"\ndescription = \"Ships releases\"\n\
        approvers = [\"group:sre\"]\nrequester_may_approve = false\nquorum = 2\n\
        [[agents.tools]]\nkind = \"builtin_files\"\nrequire_approval = [\"write_file\", \"delete_file\"]\n";
    let mut app = App::start_with(
        "requester-no-approve-all",
        Options {
            agents_toml: Some(AGENTS.to_owned()),
            tokens: Some(vec!["alice-token=alice".into(), "bob-token=bob:sre".into()]),
            ..Options::default()
        },
    )
    .await;
    app.open("/approvals#token=alice-token").await;
    app.open_new_chat_of("/agents/default/deploy/chat").await;
    app.send("write r.txt: v2 and delete old.txt").await;
    app.wait_for("the batch bar shows", "[data-testid=batch-bar]")
        .await;
    app.wait_for_text(
        "[data-testid=batch-why-not]",
        "Waits for 2 of sre; you asked for it",
    )
    .await;
    assert!(app.find_all("[data-testid=approve-all]").await.is_empty());
    assert!(app.find("[data-testid=reject-all]").await.is_ok());
    // The agent's details say who must approve each gated tool.
    app.wait_for_text(
        "[data-tool=write_file] [data-testid=tool-approval]",
        "needs approval by group sre; the requester may not approve; 2 distinct approvals",
    )
    .await;
    // Her badge and tab title do not count what waits for others.
    let title = app.js("return document.title").await;
    assert!(
        !title.as_str().unwrap_or_default().starts_with('('),
        "{title}"
    );
    app.shots("requester-two-person-rule").await;
    // A stray "a" on her own bar approves nothing either.
    app.js("document.querySelector('[data-testid=batch-bar]').focus(); return true")
        .await;
    type_at_focus(&app, "a").await;
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    assert!(app.texts("[data-testid=decision-error]").await.is_empty());
    assert!(app.read_sandbox("r.txt").is_none());
    // At a phone's width: the whole agent name, and the count on the menu button (zero here:
    // it waits for others).
    app.phone().await;
    app.wait_for_text("[data-testid=chat-title]", "default/deploy")
        .await;
    let cut = app
        .js("const t = document.querySelector('[data-testid=chat-title]'); return t.scrollWidth - t.clientWidth")
        .await;
    assert_eq!(cut, 0, "the agent's name is cut");
    assert!(app.find_all("[data-testid=menu-badge]").await.is_empty());
    app.shots("requester-two-person-rule-390").await;

    // Bob of sre, on his phone: he may approve, and his badge counts it.
    let bob = Browser::start((390, 844)).await;
    let alice = app.switch(&bob.driver);
    app.phone().await;
    app.open("/approvals#token=bob-token").await;
    app.wait_for("bob's inbox lists the batch", "[data-testid=inbox-batch]")
        .await;
    app.assert_phone_width().await;
    app.wait_for_text(
        "[data-testid=inbox-asks]",
        "write_file r.txt · delete_file old.txt",
    )
    .await;
    assert!(app.find("[data-testid=approve-all]").await.is_ok());
    // A touch screen has no keys to press: no key hints.
    for hint in app.find_all(".key-hint").await {
        assert!(
            !hint.is_displayed().await.unwrap_or(true),
            "a key hint shows on a phone"
        );
    }
    app.shots("approver-two-person-rule-390").await;
    // In the chat, his menu button counts the batch; once he approved both calls, the bar says
    // where it stands (no "0 of 2 decided", no Approve all) and nothing counts it for him.
    click(&app, "[data-testid=inbox-open-chat]").await;
    app.wait_for_text("[data-testid=read-only]", "alice's chat")
        .await;
    app.wait_for_text("[data-testid=menu-badge]", "1").await;
    click(&app, "[data-testid=approve-all]").await;
    app.wait_for_text(
        "[data-testid=batch-why-not]",
        "You approved; waiting for 1 more of sre",
    )
    .await;
    assert!(app
        .find_all("[data-testid=batch-progress]")
        .await
        .is_empty());
    assert!(app.find_all("[data-testid=approve-all]").await.is_empty());
    app.wait_until("nothing counts the batch for bob", || async {
        let title = app.js("return document.title").await;
        Ok(app.find_all("[data-testid=menu-badge]").await.is_empty()
            && !title.as_str().unwrap_or_default().starts_with('('))
    })
    .await;
    assert!(app.read_sandbox("r.txt").is_none());
    app.shots("approver-approved-390").await;
    let _ = bob.driver.clone().quit().await;
    app.switch(&alice);
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_skip_link_reaches_the_composer_with_one_tab() {
    let app = App::start("skip-link").await;
    app.open_new_chat().await;
    app.wait_for("the composer shows", "[data-testid=composer-input]")
        .await;
    app.js("document.activeElement && document.activeElement.blur(); return true")
        .await;
    let body = app.find("body").await.unwrap();
    body.send_keys(Key::Tab).await.unwrap();
    assert_eq!(focused(&app).await, "skip-link");
    app.shot("skip-link").await;
    let link = app.driver.active_element().await.unwrap();
    link.send_keys(Key::Enter).await.unwrap();
    assert_eq!(focused(&app).await, "composer-input");
    app.finish().await;
}

/// Scrolls the transcript so that the button `css` sits at its bottom edge: what the button
/// opens under it starts out of view. Returns how far the button is from that edge.
async fn put_at_the_bottom(app: &App, css: &str) -> f64 {
    app.js(&format!(
        "const b = document.querySelector('{css}'); const t = document.querySelector('.transcript'); \
         t.scrollTop += b.getBoundingClientRect().bottom - t.getBoundingClientRect().bottom; \
         return Math.abs(b.getBoundingClientRect().bottom - t.getBoundingClientRect().bottom)"
    ))
    .await
    .as_f64()
    .unwrap_or(f64::MAX)
}

/// Whether all of `css` shows: within the window and within the transcript's box.
async fn wholly_shown(app: &App, css: &str) -> bool {
    app.js(&format!(
        "const e = document.querySelector('{css}'); if (!e) return false; \
         const r = e.getBoundingClientRect(); \
         const t = document.querySelector('.transcript').getBoundingClientRect(); \
         return r.height > 0 && r.top >= Math.max(0, t.top) - 1 \
           && r.bottom <= Math.min(innerHeight, t.bottom) + 1"
    ))
    .await
        == serde_json::Value::Bool(true)
}

/// Opens what the button `css` opens as a click that leaves the focus alone would (a
/// pointer's click moves it to the button, which is the person's doing).
async fn open_keeping_focus(app: &App, css: &str) {
    app.js(&format!(
        "document.querySelector('{css}').click(); return true"
    ))
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panel_opened_low_on_the_page_scrolls_into_view_and_the_focus_stays() {
    let app = App::start_with(
        "panel-into-view",
        Options {
            // Short, yet tall enough for the "Always allow…" panel to fit whole.
            size: (1000, 720),
            ..Options::default()
        },
    )
    .await;
    app.open_new_chat().await;
    // An earlier answer, so the transcript has room to scroll the card low.
    app.send("count to 100").await;
    app.wait_for_status("ready").await;
    app.send("write low.txt: one").await;
    let write = card("write_file");
    wait_card(&app, &write, "pending").await;
    app.js("document.querySelector('[data-testid=composer-input]').focus(); return true")
        .await;

    for (button, panel) in [
        ("why-button", "why-text"),
        ("always-allow-button", "allow-panel"),
    ] {
        let button = format!("{write} [data-testid={button}]");
        let panel = format!("{write} [data-testid={panel}]");
        assert!(put_at_the_bottom(&app, &button).await < 2.0, "{button}");
        open_keeping_focus(&app, &button).await;
        app.wait_for(&format!("{panel} opens"), &panel).await;
        app.wait_until(&format!("{panel} is in view"), || async {
            Ok(wholly_shown(&app, &panel).await)
        })
        .await;
        assert_eq!(focused(&app).await, "composer-input", "{panel}");
    }
    app.shots("panel-into-view").await;
    app.finish().await;
}
