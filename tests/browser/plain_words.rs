//! Browser tests of what the page says and offers around a decision: a Why? that speaks of a
//! decided call in the past, descriptions without raw Markdown, a sign-in page (not a wall of
//! refusals) for a browser a token server does not know, sign-out there, a theme switch
//! that outlives a reload, an approver named by another route than the group a call waits
//! for who never reads as one of it, and token counts that a reload after a decision keeps.

use crate::support::harness::{card, click, wait_card, App, Options};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_decided_call_s_why_says_what_made_it_wait_not_that_it_waits() {
    let app = App::start("why-after-decision").await;
    app.open_new_chat().await;
    app.send("write w.txt: one").await;
    wait_card(&app, &card("write_file"), "pending").await;
    click(&app, "[data-testid=approve-button]").await;
    app.wait_for_status("ready").await;
    click(
        &app,
        &format!("{} [data-testid=why-button]", card("write_file")),
    )
    .await;
    let why = format!("{} [data-testid=why-text]", card("write_file"));
    app.wait_for_text(&why, "Asked for a decision").await;
    assert!(!app.text(&why).await.contains("Waits for a decision"));
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn descriptions_show_their_code_as_code_without_backticks() {
    let app = App::start_with(
        "description-code",
        Options::with_agents(
            "[[agents]]\nname = \"shipper\"\ndescription = \"Ships the `release` branch\"\n\
             [[agents.tools]]\nkind = \"builtin_files\"\n",
        ),
    )
    .await;
    app.open("/").await;
    app.wait_for_text("[data-testid=agent-item]", "Ships the release branch")
        .await;
    let shown = app.texts("[data-testid=agent-item]").await.join(" ");
    assert!(!shown.contains('`'), "{shown}");
    let code = app
        .js("return [...document.querySelectorAll('[data-testid=agent-item] code')].map(c => c.textContent).join(',')")
        .await;
    assert_eq!(code, "release");
    // The agent's details panel too.
    app.open("/agents/default/shipper/chat").await;
    let details = "[data-testid=agent-details] .details-description";
    app.wait_for_text(details, "Ships the release branch").await;
    let code = app
        .js(&format!("return [...document.querySelectorAll('{details} code')].map(c => c.textContent).join(',')"))
        .await;
    assert_eq!(code, "release");
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_browser_without_a_token_gets_a_sign_in_page_and_can_sign_out_again() {
    let app = App::start_with(
        "token-sign-in",
        Options {
            tokens: Some(vec!["alice-token=alice".into()]),
            ..Options::default()
        },
    )
    .await;
    app.open("/").await;
    app.wait_for("the sign-in page", "[data-testid=token-sign-in]")
        .await;
    // Not the refusals of every request it made.
    assert!(app.texts("[data-testid=toast]").await.is_empty());
    app.shots("token-sign-in").await;
    let field = app.find("[data-testid=sign-in-token]").await.unwrap();
    field.send_keys("alice-token").await.unwrap();
    click(&app, "[data-testid=sign-in-submit]").await;
    app.wait_for("the agents load", "[data-testid=agent-item]")
        .await;
    click(&app, "[data-testid=account-name]").await;
    app.wait_for_text("[data-testid=sign-out]", "Sign out or switch user")
        .await;
    click(&app, "[data-testid=sign-out]").await;
    app.wait_for("the sign-in page again", "[data-testid=token-sign-in]")
        .await;
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_theme_switch_picks_dark_or_light_and_keeps_it_across_a_reload() {
    let app = App::start("theme-switch").await;
    app.open_new_chat().await;
    let background = "return getComputedStyle(document.body).backgroundColor";
    let theme = "return document.documentElement.dataset.theme || 'system'";
    app.wait_for_text("[data-testid=theme-switch]", "Theme: System")
        .await;
    click(&app, "[data-testid=theme-switch]").await;
    assert_eq!(app.js(theme).await, "light");
    let light = app.js(background).await;
    click(&app, "[data-testid=theme-switch]").await;
    assert_eq!(app.js(theme).await, "dark");
    let dark = app.js(background).await;
    assert_ne!(light, dark);
    app.shot("theme-dark").await;
    app.driver.refresh().await.unwrap();
    app.wait_for_text("[data-testid=theme-switch]", "Theme: Dark")
        .await;
    assert_eq!(app.js(theme).await, "dark");
    assert_eq!(app.js(background).await, dark);
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approver_named_by_user_does_not_read_as_one_of_the_group() {
    const AGENTS: &str = "[[agents]]\nname = \"deploy\"\ndescription = \"Ships releases\"\n\
        approvers = [\"group:sre\", \"user:dave\"]\nrequester_may_approve = false\nquorum = 2\n\
        [[agents.tools]]\nkind = \"builtin_files\"\nrequire_approval = [\"write_file\"]\n";
    let app = App::start_with(
        "quorum-named-approver",
        Options {
            agents_toml: Some(AGENTS.to_owned()),
            tokens: Some(vec!["alice-token=alice".into(), "dave-token=dave".into()]),
            ..Options::default()
        },
    )
    .await;
    app.open("/approvals#token=alice-token").await;
    app.open_new_chat_of("/agents/default/deploy/chat").await;
    app.send("write release.txt: v2").await;
    let write = card("write_file");
    wait_card(&app, &write, "pending").await;
    let quorum = format!("{write} [data-testid=quorum]");
    app.wait_for_text(&quorum, "Waiting for sre or dave: 0 of 2")
        .await;
    // Dave, named in the approvers and in no group, approves over REST.
    let session = app.session_id().await;
    let approved = app
        .approve_over_rest(&session, "alice-token", "dave-token")
        .await;
    assert_eq!(approved, 200);
    app.wait_for_text(
        &quorum,
        "Approved by dave (named approver): 1 of 2; waiting for 1 more of sre",
    )
    .await;
    let said = app.text(&quorum).await;
    assert!(!said.contains("or dave"), "dave approved already: {said}");
    // The status line and the composer's hint no longer name him either.
    app.wait_for_text(
        "[data-testid=chat-status]",
        "write_file waits for approval by sre",
    )
    .await;
    let status = app.text("[data-testid=chat-status]").await;
    assert!(!status.contains("dave"), "{status}");
    let input = app.find("[data-testid=composer-input]").await.unwrap();
    input.send_keys("ok").await.unwrap();
    app.wait_for_text("[data-testid=composer-hint]", "for approval by sre")
        .await;
    let hint = app.text("[data-testid=composer-hint]").await;
    assert!(!hint.contains("dave"), "{hint}");
    app.shots("quorum-named-approver").await;
    app.finish().await;
}

/// The chat's total and each answer's count, as the page shows them.
async fn token_counts(app: &App) -> (String, Vec<String>) {
    (
        app.text("[data-testid=session-usage]").await,
        app.js(
            "return [...document.querySelectorAll('[data-testid=answer-usage]')] \
             .map(chip => chip.getAttribute('aria-label'))",
        )
        .await
        .as_array()
        .into_iter()
        .flatten()
        .map(|label| label.as_str().unwrap_or_default().to_owned())
        .collect(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn token_counts_after_a_decision_are_the_same_after_a_reload() {
    let app = App::start("usage-after-decision").await;
    app.open_new_chat().await;
    app.send("count to 3").await;
    app.wait_for_status("ready").await;
    app.send("write counted.txt: one").await;
    let write = card("write_file");
    wait_card(&app, &write, "pending").await;
    click(&app, &format!("{write} [data-testid=approve-button]")).await;
    app.wait_for_status("ready").await;
    wait_card(&app, &write, "approved").await;
    // The answer after the decision has its count: the last answer's row shows one.
    let last_counted = "const rows = document.querySelectorAll('.row-agent'); \
        return rows.length > 0 && !!rows[rows.length - 1].querySelector('[data-testid=answer-usage]')";
    app.wait_until("the answer after the decision shows its count", || async {
        Ok(app.js(last_counted).await == serde_json::Value::Bool(true))
    })
    .await;
    let live = token_counts(&app).await;
    // Every count the total holds shows on some answer, the paused turn's too.
    let total = |text: &str| -> u64 {
        let digits: String = text
            .rsplit("Total ")
            .next()
            .unwrap_or(text)
            .chars()
            .filter(char::is_ascii_digit)
            .collect();
        digits.parse().unwrap_or_default()
    };
    let answers: u64 = live.1.iter().map(|label| total(label)).sum();
    assert_eq!(
        answers,
        total(&live.0),
        "the answers add up to the total: {live:?}"
    );

    app.driver.refresh().await.unwrap();
    wait_card(&app, &write, "approved").await;
    app.wait_for("the reloaded total", "[data-testid=session-usage]")
        .await;
    assert_eq!(token_counts(&app).await, live);
    assert_eq!(app.js(last_counted).await, serde_json::Value::Bool(true));
    app.finish().await;
}
