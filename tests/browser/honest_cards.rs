//! Browser tests of what finished cards and toasts say and where they are: a call of another
//! agent whose task completed without its result streamed is done ("no result reported"), an
//! approved call with its result says Completed beside its decision, and toasts never cover
//! the composer (its Stop and Send), in a small window and a large one. A call the agent's
//! reviewer denied says so on its card, and its Override runs it.

use crate::support::harness::{card, click, wait_card, App, Options};
use crate::support::kagent;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kagent_call_without_a_streamed_result_is_done_when_the_task_completes() {
    let (url, _received) = kagent::fake_kagent("c1_interrupt.sse", "c2_resume.sse").await;
    let agents = kagent::agent_toml("k8s-agent", &url);
    let app = App::start_with("no-result", Options::with_agents(agents)).await;
    app.open_new_chat_of("/agents/kagent/k8s-agent/chat").await;
    app.send("Write notes_a.txt, delete old_a.txt and read readme.txt.")
        .await;
    app.wait_for("the batch bar shows", "[data-testid=batch-bar]")
        .await;
    // While the batch waits, the ungated read is only requested.
    wait_card(&app, &card("read_file"), "requested").await;
    assert!(app.find_all("[data-testid=no-result]").await.is_empty());
    click(&app, "[data-testid=approve-all]").await;
    app.wait_for_status("ready").await;
    wait_card(&app, &card("read_file"), "completed").await;
    // Finished cards fold into a group: open it to read the card.
    for summary in app.find_all("[data-testid=tool-group-summary]").await {
        summary.click().await.unwrap();
    }
    app.wait_for_text(
        &format!("{} [data-testid=no-result]", card("read_file")),
        "No result reported",
    )
    .await;
    app.wait_for_text(
        &format!("{} [data-testid=tool-status]", card("read_file")),
        "Completed",
    )
    .await;
    // The approved calls have their results: Completed, with the decision beside it.
    for tool in ["write_file", "delete_file"] {
        wait_card(&app, &card(tool), "approved").await;
        let badge = app
            .texts(&format!("{} [data-testid=tool-status]", card(tool)))
            .await;
        assert!(
            badge.len() == 1 && badge[0].ends_with("Completed"),
            "{tool}: {badge:?}"
        );
        let chip = app
            .texts(&format!("{} [data-testid=decision-chip]", card(tool)))
            .await;
        assert_eq!(chip, ["Approved"], "{tool}");
    }
    app.color_scheme("light").await;
    app.shot("no-result-light").await;
    app.color_scheme("dark").await;
    app.shot("no-result-dark").await;
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approved_call_of_our_own_says_completed_beside_its_decision() {
    let app = App::start("completed-approved").await;
    app.open_new_chat().await;
    app.send("write done.txt: yes").await;
    wait_card(&app, &card("write_file"), "pending").await;
    click(&app, "[data-testid=approve-button]").await;
    app.wait_for_status("ready").await;
    wait_card(&app, &card("write_file"), "approved").await;
    app.wait_for(
        "the card shows its outcome",
        &format!("{}[data-outcome=completed]", card("write_file")),
    )
    .await;
    assert_eq!(app.texts("[data-testid=decision-chip]").await, ["Approved"]);
    assert!(app.find_all("[data-testid=no-result]").await.is_empty());
    app.finish().await;
}

/// Six refused sends raise six toasts; none of them may overlap the composer (its text box,
/// Stop and Send), nor the Send button itself.
async fn toasts_leave_the_composer_free(name: &str, size: (u32, u32)) {
    let app = App::start_with(
        name,
        Options {
            size,
            ..Options::default()
        },
    )
    .await;
    app.open("/agents/default/nobody/chat").await;
    for sent in 1..=6 {
        app.send("hello?").await;
        app.wait_until("the toast shows", || async {
            Ok(app.find_all("[data-testid=toast]").await.len() >= sent)
        })
        .await;
    }
    app.shot(name).await;
    // Each toast as it shows: clipped to the stack, which scrolls when they do not all fit.
    let overlaps = app
        .js(
            "const hit = (a, b) => a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;\
             const controls = ['form.composer', '[data-testid=send-button]', '[data-testid=stop-button]']\
               .map((css) => document.querySelector(css)).filter(Boolean).map((e) => e.getBoundingClientRect());\
             const stack = document.querySelector('.toasts').getBoundingClientRect();\
             const shown = [...document.querySelectorAll('[data-testid=toast]')].map((e) => e.getBoundingClientRect())\
               .map((r) => ({left: r.left, right: r.right, top: Math.max(r.top, stack.top), bottom: Math.min(r.bottom, stack.bottom)}))\
               .filter((r) => r.bottom > r.top);\
             return [stack, ...shown].flatMap((t) => controls.filter((c) => hit(t, c)).map((c) => [t.top, t.bottom, c.top, c.bottom]));",
        )
        .await;
    assert_eq!(
        overlaps,
        serde_json::json!([]),
        "a toast covers the composer"
    );
    // The newest toast is the first in the stack, where it shows even when the stack scrolls.
    assert_eq!(app.find_all("[data-testid=toast]").await.len(), 6);
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn toasts_never_cover_the_composer_in_a_small_window() {
    toasts_leave_the_composer_free("toasts-small", (375, 640)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn toasts_never_cover_the_composer_in_a_large_window() {
    toasts_leave_the_composer_free("toasts-large", (1280, 900)).await;
}

/// The agent's reviewer (a command) denies the write: its verdict, risk and reason are a line
/// of the card, the card's button is Override (it approves this call only), and Override runs
/// it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reviewers_denial_is_a_line_of_the_card_and_its_override_runs_the_call() {
    // The reviewer runs with a clean environment: no PATH, so programs by their full path.
    let agents = "[[agents]]\nname = \"reviewed\"\n\
        [[agents.tools]]\nkind = \"builtin_files\"\nrequire_approval = [\"write_file\"]\n\
        [agents.reviewer]\nkind = \"command\"\n\
        command = [\"/bin/sh\", \"-c\", \"/bin/cat > /dev/null; echo '{\\\"outcome\\\": \\\"deny\\\", \\\"risk\\\": \\\"high\\\", \\\"reason\\\": \\\"it overwrites the release notes\\\"}'\"]\n";
    let app = App::start_with("reviewer-card", Options::with_agents(agents)).await;
    app.open_new_chat_of("/agents/default/reviewed/chat").await;
    app.send("write notes.txt: shipped").await;
    wait_card(&app, &card("write_file"), "pending").await;
    app.wait_for_text(
        "[data-testid=review-line]",
        "Reviewer: deny, high risk: it overwrites the release notes",
    )
    .await;
    assert_eq!(app.text("[data-testid=approve-button]").await, "Override");
    app.color_scheme("light").await;
    app.shot("reviewer-card-light").await;
    app.color_scheme("dark").await;
    app.shot("reviewer-card-dark").await;
    click(&app, "[data-testid=approve-button]").await;
    app.wait_for_status("ready").await;
    wait_card(&app, &card("write_file"), "approved").await;
    assert_eq!(app.read_sandbox("notes.txt").as_deref(), Some("shipped"));
    app.finish().await;
}
