//! Browser tests of sharing and of what a person does around a chat: a read-only share link
//! made from the header and opened in a fresh tab, thumbs up or down on answers, the guard
//! that stops a send when the chat moved on in another tab, and a link holding another
//! account's sign-in token, which switches only when the person confirms.

use crate::support::harness::{card, click, App, Browser, Options};
use serde_json::{json, Value};
use thirtyfour::Key;

/// The controls a read-only view must not have.
const CONTROLS: [&str; 8] = [
    "[data-testid=composer-input]",
    "[data-testid=send-button]",
    "[data-testid=stop-button]",
    "[data-testid=approve-button]",
    "[data-testid=reject-button]",
    "[data-testid=share-button]",
    "[data-testid=sidebar]",
    "[data-testid=feedback-up]",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_share_link_opens_the_chat_read_only_in_a_fresh_tab_until_revoked() {
    let app = App::start("share").await;
    app.open_new_chat().await;
    app.send("list files").await;
    app.wait_for_status("ready").await;
    app.send("write notes.txt: hello").await;
    app.wait_for_status("approval").await;
    app.wait_for(
        "the approval card",
        &format!("{} [data-testid=approve-button]", card("write_file")),
    )
    .await;

    click(&app, "[data-testid=share-button]").await;
    click(&app, "[data-testid=share-create]").await;
    let input = app
        .wait_for("the new link shows", "[data-testid=share-url]")
        .await;
    let url = input.prop("value").await.unwrap().unwrap_or_default();
    let session = app.session_id().await;
    assert!(
        url.starts_with(&app.base)
            && url.contains(&format!("/agents/default/demo/chat/{session}?share=")),
        "{url}"
    );
    app.wait_until("the link is listed", || async {
        Ok(app.find_all("[data-testid=share-link]").await.len() == 1)
    })
    .await;
    // The focus stays in the panel, so Escape closes it (before, the focus fell to the page
    // while Create was disabled, and Escape did nothing).
    let focused = app
        .js("return document.activeElement && document.activeElement.dataset.testid")
        .await;
    assert_eq!(focused, "share-create");
    app.driver
        .action_chain()
        .send_keys(Key::Escape)
        .perform()
        .await
        .unwrap();
    app.wait_until("Escape closes the panel", || async {
        Ok(app.find_all("[data-testid=share-panel]").await.is_empty())
    })
    .await;
    let owner_tab = app.driver.window().await.unwrap();

    // A fresh tab: the transcript and the waiting card, and no control at all.
    let shared_tab = app.driver.new_tab().await.unwrap();
    app.driver
        .switch_to_window(shared_tab.clone())
        .await
        .unwrap();
    app.driver.goto(&url).await.unwrap();
    app.wait_for("the shared view", "[data-testid=shared-banner]")
        .await;
    app.wait_for_text("[data-testid=message-agent]", "readme.txt")
        .await;
    let banner = app.text("[data-testid=shared-banner]").await;
    assert!(banner.contains("Read-only shared view"), "{banner}");
    assert_eq!(
        app.texts("[data-testid=message-user]").await,
        vec!["list files".to_owned(), "write notes.txt: hello".to_owned()]
    );
    let status = app
        .find(&card("write_file"))
        .await
        .unwrap()
        .attr("data-status")
        .await
        .unwrap();
    assert_eq!(
        status.as_deref(),
        Some("pending"),
        "the card shows its state"
    );
    for control in CONTROLS {
        assert!(
            app.find_all(control).await.is_empty(),
            "{control} shows in the shared view"
        );
    }
    for scheme in ["light", "dark"] {
        app.color_scheme(scheme).await;
        app.shot(&format!("shared-{scheme}")).await;
    }
    app.color_scheme("light").await;
    // Nothing was decided from it.
    assert!(!app.sandbox("notes.txt").exists());

    // Revoked in the owner's tab: the link shows nothing any more.
    app.driver.switch_to_window(owner_tab).await.unwrap();
    click(&app, "[data-testid=share-button]").await;
    click(&app, "[data-testid=share-revoke]").await;
    app.wait_until("the link is gone from the list", || async {
        Ok(app.find_all("[data-testid=share-link]").await.is_empty())
    })
    .await;
    app.driver.switch_to_window(shared_tab).await.unwrap();
    app.driver.refresh().await.unwrap();
    app.wait_for("the revoked link says so", "[data-testid=share-gone]")
        .await;
    assert!(app.find_all("[data-testid=message-user]").await.is_empty());
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thumbs_down_with_a_reason_is_stored_and_the_choice_stays_shown() {
    let app = App::start("feedback").await;
    app.open_new_chat().await;
    app.send("write notes.txt: hello").await;
    click(
        &app,
        &format!("{} [data-testid=approve-button]", card("write_file")),
    )
    .await;
    app.wait_for_status("ready").await;
    app.send("count to 3").await;
    app.wait_for_status("ready").await;
    // One pair per finished answer; the text before the tool call is no answer of its own.
    app.wait_until("two answers can be rated", || async {
        Ok(app.find_all("[data-testid=feedback]").await.len() == 2)
    })
    .await;
    let session = app.session_id().await;
    let tasks = app.stored_tasks(&session).await;
    let last_task = tasks[1]["id"].as_str().unwrap().to_owned();

    // Keyboard: focus the last thumbs down, press Enter, type a reason, Enter sends it.
    let downs = app.find_all("[data-testid=feedback-down]").await;
    let down = downs.last().unwrap();
    assert_eq!(
        down.attr("aria-label").await.unwrap().as_deref(),
        Some("Bad answer (you can say why)")
    );
    down.focus().await.unwrap();
    down.send_keys(Key::Enter).await.unwrap();
    let reason = app
        .wait_for("the reason box opens", "[data-testid=feedback-reason]")
        .await;
    app.wait_until("the reason box has focus", || async {
        Ok(app
            .js("return document.activeElement?.dataset?.testid ?? ''")
            .await
            == "feedback-reason")
    })
    .await;
    reason.send_keys("too short").await.unwrap();
    reason.send_keys(Key::Enter).await.unwrap();
    app.wait_for_text("[data-testid=feedback-done]", "not helpful")
        .await;
    let down = app
        .find_all("[data-testid=feedback-down]")
        .await
        .pop()
        .unwrap();
    assert_eq!(
        down.attr("aria-pressed").await.unwrap().as_deref(),
        Some("true")
    );

    let stored = app.get_json("/api/feedback").await;
    let entries = stored["feedback"].as_array().unwrap();
    assert_eq!(entries.len(), 1, "{stored}");
    assert_eq!(entries[0]["rating"], "down");
    assert_eq!(entries[0]["reason"], "too short");
    assert_eq!(entries[0]["task_id"], last_task.as_str());
    assert_eq!(entries[0]["context_id"], session.as_str());
    assert!(entries[0]["message_id"].is_string());

    // Thumbs up on the first answer, by mouse.
    click(&app, "[data-testid=feedback-up]").await;
    app.wait_until("both answers are rated", || async {
        Ok(app.find_all("[data-testid=feedback-done]").await.len() == 2)
    })
    .await;
    for scheme in ["light", "dark"] {
        app.color_scheme(scheme).await;
        app.shot(&format!("feedback-{scheme}")).await;
    }
    app.color_scheme("light").await;
    // A reload shows the choices again, from the stored chat.
    app.driver.refresh().await.unwrap();
    app.wait_until("the choices come back", || async {
        Ok(app.find_all("[data-testid=feedback-done]").await.len() == 2)
    })
    .await;
    assert_eq!(
        app.get_json("/api/feedback").await["feedback"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_send_in_a_tab_that_missed_another_tabs_turn_reloads_keeps_the_text_and_sends_next_time()
{
    let app = App::start("cross-tab").await;
    app.open_new_chat().await;
    app.send("count to 2").await;
    app.wait_for_status("ready").await;
    let session = app.session_id().await;
    let tab_a = app.driver.window().await.unwrap();
    let tab_b = app.driver.new_tab().await.unwrap();
    app.driver.switch_to_window(tab_b.clone()).await.unwrap();
    app.open(&format!("/agents/default/demo/chat/{session}"))
        .await;
    app.wait_for_text("[data-testid=message-agent]", "1, 2")
        .await;

    // Tab A goes on.
    app.driver.switch_to_window(tab_a).await.unwrap();
    app.send("count to 3").await;
    app.wait_for_status("ready").await;
    assert_eq!(app.stored_tasks(&session).await.len(), 2);

    // Tab B has not seen it: its send is held back, the chat reloads, the text stays.
    app.driver.switch_to_window(tab_b).await.unwrap();
    let input = app.find("[data-testid=composer-input]").await.unwrap();
    input.send_keys("count to 4").await.unwrap();
    click(&app, "[data-testid=send-button]").await;
    app.wait_for_text("[data-testid=message-user]", "count to 3")
        .await;
    app.wait_for_text("[data-testid=toast]", "changed in another tab")
        .await;
    let kept = app
        .find("[data-testid=composer-input]")
        .await
        .unwrap()
        .prop("value")
        .await
        .unwrap();
    assert_eq!(kept.as_deref(), Some("count to 4"));
    assert_eq!(
        app.stored_tasks(&session).await.len(),
        2,
        "nothing was sent"
    );
    app.shot("cross-tab-held").await;

    // Reviewed: the next send goes.
    click(&app, "[data-testid=send-button]").await;
    app.wait_for_text("[data-testid=message-agent]", "1, 2, 3, 4")
        .await;
    app.wait_for_status("ready").await;
    assert_eq!(app.stored_tasks(&session).await.len(), 3);
    app.finish().await;
}

/// A server with two people, each with a token.
fn alice_and_bob(size: (u32, u32)) -> Options {
    Options {
        tokens: Some(vec!["alice-token=alice".into(), "bob-token=bob".into()]),
        size,
        ..Options::default()
    }
}

/// The token this browser keeps and sends.
async fn saved_token(app: &App) -> Value {
    app.js("return localStorage.getItem('signoff.token')").await
}

/// The ids of the chats of `token`'s user, read over REST.
async fn sessions_of(app: &App, token: &str) -> Vec<String> {
    let list: Value = app
        .http
        .get(format!("{}/api/sessions", app.base))
        .bearer_auth(token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    list["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|session| session["id"].as_str().unwrap().to_owned())
        .collect()
}

/// Alice signs in with her link (taken at once: no token was saved), then opens a link that
/// holds Bob's token: the confirm names both, the address loses the token at once, and her
/// token stays saved until she chooses.
async fn open_bobs_link_as_alice(app: &App) {
    app.open("/approvals#token=alice-token").await;
    app.wait_for("Alice's inbox", "[data-testid=approvals-empty]")
        .await;
    assert_eq!(saved_token(app).await, "alice-token");
    app.open("/#token=bob-token").await;
    app.wait_for("the confirm", "[data-testid=switch-account]")
        .await;
    assert_eq!(
        app.texts("[data-testid=switch-offer]").await,
        ["This link signs you in as bob."]
    );
    assert_eq!(
        app.texts("[data-testid=switch-current]").await,
        ["You are signed in as alice."]
    );
    assert_eq!(app.js("return location.hash").await, "");
    assert_eq!(saved_token(app).await, "alice-token");
    let focused = app
        .js("return document.activeElement && document.activeElement.dataset.testid")
        .await;
    assert_eq!(focused, "switch-stay");
}

/// Sends a message in the chat on screen; the new chat's id once its answer is done.
async fn chat_here(app: &App) -> String {
    app.wait_until("the composer is ready", || async {
        app.find("[data-testid=composer-input]")
            .await?
            .is_enabled()
            .await
    })
    .await;
    app.send("list files").await;
    app.wait_for_status("ready").await;
    app.session_id().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_link_with_another_accounts_token_asks_first_and_staying_keeps_the_account() {
    let app = App::start_with("switch-stay", alice_and_bob((1280, 900))).await;
    open_bobs_link_as_alice(&app).await;
    let violations = app.axe_violations().await;
    assert!(violations.is_empty(), "{violations:#?}");
    app.shots("switch-account").await;

    click(&app, "[data-testid=switch-stay]").await;
    app.wait_until("the confirm closes", || async {
        Ok(app
            .find_all("[data-testid=switch-account]")
            .await
            .is_empty())
    })
    .await;
    assert_eq!(saved_token(&app).await, "alice-token");
    let chat = chat_here(&app).await;
    assert!(sessions_of(&app, "alice-token").await.contains(&chat));
    assert!(sessions_of(&app, "bob-token").await.is_empty());
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn switching_to_the_links_account_signs_in_as_its_user_on_a_phone() {
    let app = App::start_with("switch-to-bob", alice_and_bob((390, 844))).await;
    // Headless Chromium keeps its window at least 500 px wide: a phone's 390 is emulated.
    app.driver
        .cdp()
        .send_raw(
            "Emulation.setDeviceMetricsOverride",
            json!({"width": 390, "height": 844, "deviceScaleFactor": 1, "mobile": true}),
        )
        .await
        .unwrap();
    open_bobs_link_as_alice(&app).await;
    assert_eq!(app.js("return window.innerWidth").await, 390);
    app.shots("switch-account-phone").await;

    // Switching reloads the page: what the old account loaded must not stay on screen.
    app.js("window.__beforeSwitch = true").await;
    click(&app, "[data-testid=switch-confirm]").await;
    app.wait_until("the page reloads as Bob", || async {
        Ok(app
            .js("return window.__beforeSwitch === undefined && !!document.querySelector('[data-testid=sidebar]')")
            .await
            == true)
    })
    .await;
    assert_eq!(saved_token(&app).await, "bob-token");
    assert!(app
        .find_all("[data-testid=switch-account]")
        .await
        .is_empty());
    let chat = chat_here(&app).await;
    assert!(sessions_of(&app, "bob-token").await.contains(&chat));
    assert!(sessions_of(&app, "alice-token").await.is_empty());
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_persons_chat_opened_by_its_address_says_it_is_not_shared_not_deleted() {
    let mut app = App::start_with("not-shared", alice_and_bob((1280, 900))).await;
    app.open("/approvals#token=alice-token").await;
    app.open_new_chat().await;
    let chat = chat_here(&app).await;
    let address = app.current_path().await;
    assert!(address.contains(&chat), "{address}");

    // Bob, in his own browser, opens the address of Alice's chat.
    let bob = Browser::start((1280, 900)).await;
    let alice = app.switch(&bob.driver);
    app.open("/approvals#token=bob-token").await;
    app.wait_for("Bob's inbox", "[data-testid=approvals-empty]")
        .await;
    app.open(&address).await;
    app.wait_for_text(
        "[data-testid=session-not-found]",
        "it is not shared with you: its owner can send you a share link",
    )
    .await;
    // Nothing of hers shows, and the way out is a chat of his own.
    assert!(app.texts("[data-testid=message-user]").await.is_empty());
    assert!(app.find("[data-testid=start-new-chat]").await.is_ok());
    app.shot("not-shared").await;
    let _ = bob.driver.clone().quit().await;
    app.switch(&alice);
    app.finish().await;
}
