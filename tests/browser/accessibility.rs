//! Accessibility in a real browser: axe-core's WCAG 2.x A and AA rules over the chat, a pending
//! batch (with its reject and edit forms open, and a diff preview), the policies panel and the
//! Approvals page, in light and dark, with no serious or critical violation; and a batch
//! found, decided and announced by keyboard alone.

use crate::support::harness::{card, click, App};
use thirtyfour::prelude::*;

/// axe over the page in both colour schemes (contrast differs); fails listing every violation.
async fn assert_accessible(app: &App, what: &str) {
    let mut found = Vec::new();
    for scheme in ["light", "dark"] {
        app.color_scheme(scheme).await;
        app.shot(&format!("axe-{}-{scheme}", what.replace(' ', "-")))
            .await;
        for violation in app.axe_violations().await {
            found.push(format!("{scheme}: {violation}"));
        }
    }
    app.color_scheme("light").await;
    assert!(
        found.is_empty(),
        "{what}: axe found serious or critical violations:\n{}",
        found.join("\n")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_chat_a_pending_batch_the_policies_panel_and_the_approvals_page_pass_axe() {
    let app = App::start("axe").await;
    app.open_new_chat().await;
    app.wait_for("the policies panel shows", "[data-testid=no-policies]")
        .await;
    assert_accessible(&app, "a new chat").await;

    app.send("write notes.txt: hi and delete old.txt").await;
    app.wait_for_status("approval").await;
    app.wait_for("the batch bar shows", "[data-testid=approve-all]")
        .await;
    assert_accessible(&app, "a pending batch of two calls").await;

    click(
        &app,
        &format!("{} [data-testid=reject-button]", card("delete_file")),
    )
    .await;
    app.wait_for("the reason box opens", "[data-testid=reject-reason]")
        .await;
    click(
        &app,
        &format!("{} [data-testid=edit-button]", card("write_file")),
    )
    .await;
    app.wait_for("the editor opens", "[data-testid=args-editor]")
        .await;
    assert_accessible(&app, "a batch with its reason box and editor open").await;

    click(&app, "[data-testid=reject-cancel]").await;
    click(&app, "[data-testid=edit-cancel]").await;
    click(&app, "[data-testid=approve-all]").await;
    app.wait_for_status("ready").await;
    assert_accessible(&app, "a finished chat with results").await;

    // A change to an existing file waits with its diff; the Approvals page lists it.
    app.send("write notes.txt: there").await;
    app.wait_for("the diff preview shows", "[data-testid=preview-diff]")
        .await;
    assert_accessible(&app, "a pending write with its diff preview").await;
    app.open("/approvals").await;
    app.wait_for("the inbox lists the batch", "[data-testid=inbox-batch]")
        .await;
    assert_accessible(&app, "the approvals page with a waiting batch").await;
    app.finish().await;
}

/// Presses Tab until `css` has focus; fails after `limit` presses.
async fn tab_to(app: &App, css: &str, limit: usize) {
    let target = app.wait_for(&format!("{css} shows"), css).await;
    for _ in 0..limit {
        let active = app.driver.active_element().await.unwrap();
        if active.element_id() == target.element_id() {
            return;
        }
        active.send_keys(Key::Tab).await.unwrap();
    }
    panic!("{css} was not reached in {limit} presses of Tab");
}

/// Whether the focused element draws a focus ring a person can see.
async fn focus_is_visible(app: &App) -> bool {
    app.js("const style = getComputedStyle(document.activeElement); \
         return style.outlineStyle !== 'none' && parseFloat(style.outlineWidth) >= 2;")
        .await
        .as_bool()
        .unwrap_or(false)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pending_batch_is_announced_reached_and_decided_by_keyboard_alone() {
    let app = App::start("keyboard").await;
    app.open_new_chat().await;
    let input = app.find("[data-testid=composer-input]").await.unwrap();
    input.click().await.unwrap();
    input
        .send_keys("write notes.txt: hi and delete old.txt")
        .await
        .unwrap();
    input.send_keys(Key::Enter).await.unwrap();
    app.wait_for_status("approval").await;

    // The polite status region names what waits, so a screen reader hears it without looking.
    app.wait_for_text(
        "[data-testid=chat-status]",
        "2 calls wait for your approval: write_file, delete_file",
    )
    .await;

    // From the composer, Tab reaches each card's controls and the batch bar, each with a ring.
    tab_to(
        &app,
        &format!("{} [data-testid=approve-button]", card("write_file")),
        100,
    )
    .await;
    assert!(
        focus_is_visible(&app).await,
        "the Approve button shows no focus ring"
    );
    tab_to(&app, "[data-testid=approve-all]", 100).await;
    assert!(
        focus_is_visible(&app).await,
        "Approve all shows no focus ring"
    );
    app.driver
        .active_element()
        .await
        .unwrap()
        .send_keys(Key::Enter)
        .await
        .unwrap();
    app.wait_for_status("ready").await;
    assert_eq!(
        std::fs::read_to_string(app.sandbox("notes.txt")).unwrap(),
        "hi"
    );
    app.shot("keyboard-decided").await;
    app.finish().await;
}
