//! Browser tests of tool cards and approvals: the real server's demo agent, whose
//! `write_file` and `delete_file` wait for a decision, and a loopback stand-in for a kagent
//! 0.10.4 agent that replays recorded streams and records the decisions it receives.

use crate::support::harness::{
    card, card_status, click, edit_args, reject_with_reason, wait_card, App, Options, PENDING_CARD,
};
use crate::support::kagent;
use serde_json::Value;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approve_one_call() {
    let app = App::start("approve-one").await;
    app.open_new_chat().await;
    app.send("write notes.txt: hello there").await;
    wait_card(&app, &card("write_file"), "pending").await;
    app.wait_for_status("approval").await;
    // The composer stays usable: a message now is a reply that decides the batch, and the
    // composer says so.
    let composer = app.find("[data-testid=composer-input]").await.unwrap();
    assert!(composer.is_enabled().await.unwrap());
    let placeholder = composer
        .attr("placeholder")
        .await
        .unwrap()
        .unwrap_or_default();
    assert!(placeholder.contains("Decide"), "{placeholder}");
    // A lone call has no batch bar; its arguments are open while it waits.
    assert!(app.find_all("[data-testid=batch-bar]").await.is_empty());
    assert!(app
        .find(&format!("{} [data-testid=tool-args]", card("write_file")))
        .await
        .unwrap()
        .attr("open")
        .await
        .unwrap()
        .is_some());
    assert_eq!(app.read_sandbox("notes.txt"), None, "ran before a decision");
    click(&app, "[data-testid=approve-button]").await;
    app.wait_for_status("ready").await;
    wait_card(&app, &card("write_file"), "approved").await;
    app.wait_for_text("[data-testid=decision-note]", "Approved")
        .await;
    assert_eq!(
        app.read_sandbox("notes.txt").as_deref(),
        Some("hello there")
    );
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reject_with_a_reason_the_agent_quotes() {
    let app = App::start("reject-reason").await;
    app.open_new_chat().await;
    app.send("delete old.txt").await;
    wait_card(&app, &card("delete_file"), "pending").await;
    click(&app, "[data-testid=reject-button]").await;
    let reason = app
        .wait_for("the reason box opens", "[data-testid=reject-reason]")
        .await;
    reason.send_keys("keep it for the audit").await.unwrap();
    // Hovered, the red button keeps its red: the plain hover's light grey under its white
    // text made it unreadable (Confirm rejection, Stop, Delete).
    let confirm = app.find("[data-testid=reject-confirm]").await.unwrap();
    let background = "return getComputedStyle(document.querySelector('[data-testid=reject-confirm]')).backgroundColor";
    let resting = app.js(background).await;
    app.driver
        .action_chain()
        .move_to_element_center(&confirm)
        .perform()
        .await
        .unwrap();
    let hovered = app
        .js("return document.querySelector('[data-testid=reject-confirm]:hover') !== null")
        .await;
    assert_eq!(hovered, true);
    assert_eq!(app.js(background).await, resting);
    click(&app, "[data-testid=reject-confirm]").await;
    app.wait_for_status("ready").await;
    wait_card(&app, &card("delete_file"), "rejected").await;
    app.wait_for_text("[data-testid=message-agent]", "keep it for the audit")
        .await;
    app.wait_for_text("[data-testid=tool-reason]", "keep it for the audit")
        .await;
    assert!(
        app.read_sandbox("old.txt").is_some(),
        "a rejected delete ran"
    );
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approve_all_on_a_batch_of_two() {
    let app = App::start("approve-all").await;
    app.open_new_chat().await;
    app.send("write a.txt: one and delete old.txt and read readme.txt")
        .await;
    let bar = app
        .wait_for("the batch bar shows", "[data-testid=batch-bar]")
        .await;
    let label = app.text("[data-testid=approve-all]").await;
    assert_eq!(label, "Approve all (2)");
    let listed = bar.text().await.unwrap();
    assert!(
        listed.contains("write_file") && listed.contains("delete_file"),
        "{listed}"
    );
    // The focus stayed where the person typed: on the composer, not on the batch.
    let focused = app
        .js("return document.activeElement && document.activeElement.dataset.testid")
        .await;
    assert_eq!(focused, "composer-input");
    wait_card(&app, &card("read_file"), "completed").await;
    app.shots("batch-pending").await;
    click(&app, "[data-testid=approve-all]").await;
    app.wait_for_status("ready").await;
    wait_card(&app, &card("write_file"), "approved").await;
    wait_card(&app, &card("delete_file"), "approved").await;
    assert_eq!(app.read_sandbox("a.txt").as_deref(), Some("one"));
    assert_eq!(app.read_sandbox("old.txt"), None);
    app.shots("batch-finished").await;
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mixed_batch_goes_out_once_every_card_is_decided() {
    let app = App::start("mixed").await;
    app.open_new_chat().await;
    app.send("write b.txt: two and delete old.txt").await;
    app.wait_for("the batch bar shows", "[data-testid=batch-bar]")
        .await;
    let submit = app.find("[data-testid=submit-decisions]").await.unwrap();
    assert!(
        !submit.is_enabled().await.unwrap(),
        "Submit before every card is decided"
    );
    click(
        &app,
        &format!("{} [data-testid=approve-button]", card("write_file")),
    )
    .await;
    reject_with_reason(&app, "delete_file", "old.txt stays").await;
    // The choices show at once, before anything is sent, the reason too.
    wait_card(&app, &card("write_file"), "approved").await;
    wait_card(&app, &card("delete_file"), "rejected").await;
    app.wait_for_text(&card("delete_file"), "Reason: \"old.txt stays\"")
        .await;
    app.wait_for_text("[data-testid=batch-progress]", "2 of 2 decided")
        .await;
    // Submit is now the one step left, so it, not Approve all, is the primary button.
    let primary = app
        .js("return [...document.querySelectorAll('[data-testid=batch-bar] .primary')].map((b) => b.dataset.testid)")
        .await;
    assert_eq!(primary, serde_json::json!(["submit-decisions"]));
    assert_eq!(app.read_sandbox("b.txt"), None);
    // Staged, sent and ran look different: chosen on the card, it says it is not sent yet.
    let badge = |tool: &str| format!("{} [data-testid=tool-status]", card(tool));
    app.wait_for_text(&badge("write_file"), "Approve chosen · not sent")
        .await;
    app.wait_for_text(&badge("delete_file"), "Reject chosen · not sent")
        .await;
    app.shots("batch-mixed-in-progress").await;
    // While the server answers (held back here), "Sending…"; then what ran, with the decision
    // behind it, and nothing staged.
    app.js("const send = window.fetch.bind(window); window.fetch = (...args) => new Promise((done) => setTimeout(done, 1500)).then(() => send(...args)); return true")
        .await;
    click(&app, "[data-testid=submit-decisions]").await;
    app.wait_for_text(&badge("write_file"), "Sending…").await;
    app.wait_for_status("ready").await;
    app.wait_for(
        "the write's card shows it ran",
        &format!("{}[data-outcome=completed]", card("write_file")),
    )
    .await;
    wait_card(&app, &card("write_file"), "approved").await;
    assert!(app.find_all("[data-staged=true]").await.is_empty());
    app.wait_for_text(
        "[data-testid=decision-note]",
        "Batch decision: 1 approved, 1 rejected",
    )
    .await;
    app.wait_for_text("[data-testid=message-agent]", "old.txt stays")
        .await;
    assert_eq!(app.read_sandbox("b.txt").as_deref(), Some("two"));
    assert!(app.read_sandbox("old.txt").is_some());
    app.shots("batch-mixed-finished").await;
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn edited_arguments_are_what_runs() {
    let app = App::start("edit").await;
    app.open_new_chat().await;
    app.send("write c.txt: original").await;
    wait_card(&app, &card("write_file"), "pending").await;
    edit_args(&app, "the editor opens", "{\"path\": \"c.txt\", ").await;
    click(&app, "[data-testid=approve-button]").await;
    app.wait_for("invalid JSON blocks approval", "[data-testid=args-error]")
        .await;
    assert_eq!(card_status(&app, &card("write_file")).await, "pending");
    let editor = app.find("[data-testid=args-editor]").await.unwrap();
    editor.send_keys("\"content\": \"edited\"}").await.unwrap();
    click(&app, "[data-testid=approve-button]").await;
    app.wait_for_status("ready").await;
    wait_card(&app, &card("write_file"), "approved").await;
    app.wait_for_text("[data-testid=tool-edited-args]", "edited")
        .await;
    assert_eq!(app.read_sandbox("c.txt").as_deref(), Some("edited"));
    app.shot("edited-args").await;
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approve_all_waits_for_an_open_arguments_editor() {
    let app = App::start("approve-all-open-edit").await;
    app.open_new_chat().await;
    app.send("write e.txt: original and delete old.txt").await;
    app.wait_for("the batch bar shows", "[data-testid=batch-bar]")
        .await;
    click(
        &app,
        &format!("{} [data-testid=edit-button]", card("write_file")),
    )
    .await;
    let editor = app
        .wait_for("the editor opens", "[data-testid=args-editor]")
        .await;
    // The editor takes the focus (and so shows), ready for typing.
    app.wait_until("the editor has the focus", || async {
        let focused = app
            .js("return document.activeElement && document.activeElement.dataset.testid")
            .await;
        Ok(focused == "args-editor")
    })
    .await;
    editor.clear().await.unwrap();
    editor
        .send_keys("{\"path\": \"e.txt\", \"content\": \"edited\"}")
        .await
        .unwrap();
    // Approve all with the edit neither saved nor cancelled: nothing goes out, and the
    // person is told why (before, the original arguments ran).
    click(&app, "[data-testid=approve-all]").await;
    app.wait_for_text(
        "[data-testid=toast]",
        "save or cancel your edit of write_file",
    )
    .await;
    wait_card(&app, &card("write_file"), "pending").await;
    wait_card(&app, &card("delete_file"), "pending").await;
    assert_eq!(app.read_sandbox("e.txt"), None);
    app.shot("approve-all-open-edit").await;
    click(&app, "[data-testid=edit-save]").await;
    click(&app, "[data-testid=approve-all]").await;
    app.wait_for_status("ready").await;
    assert_eq!(app.read_sandbox("e.txt").as_deref(), Some("edited"));
    assert_eq!(app.read_sandbox("old.txt"), None);
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn edited_arguments_the_tool_refuses_show_the_error_on_the_card() {
    let app = App::start("edit-refused").await;
    app.open_new_chat().await;
    app.send("write d.txt: original").await;
    wait_card(&app, &card("write_file"), "pending").await;
    edit_args(
        &app,
        "the editor opens",
        "{\"path\": \"d.txt\", \"content\": \"x\", \"mode\": \"0777\"}",
    )
    .await;
    click(&app, "[data-testid=approve-button]").await;
    app.wait_for_text("[data-testid=decision-error]", "modified_args")
        .await;
    let error = app.texts("[data-testid=decision-error]").await.join(" ");
    assert!(error.contains("mode"), "{error}");
    // Nothing ran, and the card can be decided again once the edit fits.
    wait_card(&app, &card("write_file"), "pending").await;
    assert_eq!(app.read_sandbox("d.txt"), None);
    app.shot("edit-refused").await;
    edit_args(
        &app,
        "the editor opens again",
        "{\"path\": \"d.txt\", \"content\": \"fixed\"}",
    )
    .await;
    click(&app, "[data-testid=approve-button]").await;
    wait_card(&app, &card("write_file"), "approved").await;
    app.wait_for_status("ready").await;
    assert_eq!(app.read_sandbox("d.txt").as_deref(), Some("fixed"));
    assert!(app.texts("[data-testid=decision-error]").await.is_empty());
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reload_while_pending_keeps_the_batch_decidable() {
    let app = App::start("reload-pending").await;
    app.open_new_chat().await;
    app.send("delete old.txt").await;
    wait_card(&app, &card("delete_file"), "pending").await;
    app.session_id().await;
    app.assert_no_errors().await;
    app.driver.refresh().await.unwrap();
    wait_card(&app, &card("delete_file"), "pending").await;
    app.wait_for_status("approval").await;
    // Keyboard: the reload leaves the focus off the card (a stray key decides nothing); moved
    // to the lone card, A approves it.
    assert_ne!(
        app.js("return document.activeElement && document.activeElement.dataset.testid")
            .await,
        "tool-card"
    );
    app.js("document.querySelector('[data-testid=tool-card]').focus(); return true")
        .await;
    app.driver
        .active_element()
        .await
        .unwrap()
        .send_keys("a")
        .await
        .unwrap();
    app.wait_for_status("ready").await;
    wait_card(&app, &card("delete_file"), "approved").await;
    assert_eq!(app.read_sandbox("old.txt"), None);
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_double_click_on_approve_runs_the_tool_once() {
    let app = App::start("double-click").await;
    app.open_new_chat().await;
    app.send("write d.txt: once").await;
    wait_card(&app, &card("write_file"), "pending").await;
    // Two clicks in one script: faster than any person, with no round trip between them.
    app.js("const b = document.querySelector('[data-testid=approve-button]'); b.click(); b.click(); return true")
        .await;
    app.wait_for_status("ready").await;
    wait_card(&app, &card("write_file"), "approved").await;
    assert_eq!(app.find_all("[data-testid=decision-note]").await.len(), 1);
    assert!(
        app.find_all("[data-testid=toast]").await.is_empty(),
        "a second decision went out"
    );
    let decided = app.get_json("/api/approvals?state=decided").await;
    assert_eq!(
        decided["decisions"].as_array().map(Vec::len),
        Some(1),
        "{decided}"
    );
    assert_eq!(app.read_sandbox("d.txt").as_deref(), Some("once"));
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_arguments_are_shown_as_text() {
    let app = App::start("hostile-args").await;
    app.open_new_chat().await;
    app.send("write x.txt: <img src=x onerror=window.__pwned=1><script>window.__pwned=2</script>")
        .await;
    wait_card(&app, &card("write_file"), "pending").await;
    app.wait_for_text(
        &format!("{} [data-testid=tool-args]", card("write_file")),
        "<img src=x onerror=window.__pwned=1>",
    )
    .await;
    assert!(app
        .find_all("[data-testid=tool-card] img, [data-testid=tool-card] script")
        .await
        .is_empty());
    click(&app, "[data-testid=approve-button]").await;
    app.wait_for_status("ready").await;
    assert_eq!(app.js("return typeof window.__pwned").await, "undefined");
    assert!(app
        .find_all(".transcript img, .transcript script")
        .await
        .is_empty());
    app.shot("hostile-args").await;
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bidi_override_in_arguments_shows_as_its_escape() {
    let app = App::start("bidi-args").await;
    app.open_new_chat().await;
    // U+202E draws what follows right to left: "report<U+202E>fdp.sh" looks like
    // "reporths.pdf" while the file written ends in ".sh".
    app.send("write report\u{202E}fdp.sh: echo hi").await;
    wait_card(&app, &card("write_file"), "pending").await;
    let args = card("write_file") + " [data-testid=tool-args]";
    app.wait_for_text(&args, r#""path": "report\u202Efdp.sh""#)
        .await;
    let shown = app.texts(&args).await.join("");
    assert!(!shown.contains('\u{202E}'), "{shown:?}");
    // The editor starts from the same text, and saving it keeps the path as it was.
    click(&app, "[data-testid=edit-button]").await;
    app.wait_for("the editor opens", "[data-testid=args-editor]")
        .await;
    click(&app, "[data-testid=approve-button]").await;
    app.wait_for_status("ready").await;
    assert_eq!(
        app.read_sandbox("report\u{202E}fdp.sh").as_deref(),
        Some("echo hi")
    );
    app.shot("bidi-args").await;
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kagent_agent_gets_the_same_cards_and_decisions_in_its_terms() {
    let (url, received) = kagent::fake_kagent("e1_interrupt.sse", "e2_resume.sse").await;
    let agents = kagent::agent_toml("k8s-agent", &url);
    let app = App::start_with("kagent", Options::with_agents(agents)).await;
    app.open_new_chat_of("/agents/kagent/k8s-agent/chat").await;
    app.send("Write notes_b.txt, delete old_b.txt and read readme.txt.")
        .await;
    app.wait_for("the batch bar shows", "[data-testid=batch-bar]")
        .await;
    assert_eq!(app.find_all(PENDING_CARD).await.len(), 2);
    wait_card(&app, &card("read_file"), "requested").await;
    click(
        &app,
        &format!("{} [data-testid=approve-button]", card("write_file")),
    )
    .await;
    reject_with_reason(&app, "delete_file", "Keep old_b.txt, it is still needed.").await;
    app.shots("kagent-mixed-in-progress").await;
    click(&app, "[data-testid=submit-decisions]").await;
    app.wait_for_status("ready").await;
    wait_card(&app, &card("write_file"), "approved").await;
    wait_card(&app, &card("delete_file"), "rejected").await;
    app.wait_for_text("[data-testid=message-agent]", "Mixed decision handled")
        .await;
    app.shots("kagent-finished").await;

    let received = received.lock().map(|seen| seen.clone()).unwrap_or_default();
    assert_eq!(received.len(), 2, "{received:?}");
    let decision = received[1]["params"]["message"]["parts"]
        .as_array()
        .and_then(|parts| {
            parts
                .iter()
                .find(|part| part["data"]["decision_type"].is_string())
        })
        .map(|part| part["data"].clone())
        .unwrap_or(Value::Null);
    assert_eq!(
        decision,
        serde_json::json!({
            "decision_type": "batch",
            "decisions": {"call_write_b": "approve", "call_delete_b": "reject"},
            "rejection_reasons": {"call_delete_b": "Keep old_b.txt, it is still needed."}
        })
    );
    // The decision continues the recorded task.
    assert_eq!(
        received[1]["params"]["message"]["taskId"],
        "c9bbd7ef-ae9a-4ac1-aae3-12befe78d36c"
    );
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_decided_elsewhere_shows_decided_after_a_reload() {
    let app = App::start("decided-elsewhere").await;
    app.open_new_chat().await;
    app.send("delete old.txt").await;
    wait_card(&app, &card("delete_file"), "pending").await;
    let session = app.session_id().await;
    let task = app.stored_tasks(&session).await[0]["id"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    // Decided through the REST API, as another client would.
    let answer = app
        .http
        .post(format!("{}/api/approvals/{task}", app.base))
        .json(&serde_json::json!({"decision_type": "deny", "reason": "decided elsewhere"}))
        .send()
        .await
        .unwrap();
    assert!(answer.status().is_success(), "{}", answer.status());
    app.assert_no_errors().await;
    app.driver.refresh().await.unwrap();
    wait_card(&app, &card("delete_file"), "rejected").await;
    app.wait_for_status("ready").await;
    assert!(app
        .find_all("[data-testid=approve-button]")
        .await
        .is_empty());
    assert!(app
        .find("[data-testid=composer-input]")
        .await
        .unwrap()
        .is_enabled()
        .await
        .unwrap());
    app.finish().await;
}
