//! Browser test of a coding agent over ACP (README, Coding agents): the real
//! `@zed-industries/claude-code-acp` (installed by `crates/server/tests/acp/install.sh`) runs
//! as `default/coder`, offline against the scripted Anthropic endpoint
//! (`crates/server/tests/gateway/anthropic.py`), in a working folder and home of its own. Its
//! Bash waits as a card whose command reads on it and is approved with the card's button; its
//! approved card then ends with the agent's report of it, done with its output; its
//! Write waits as a card of a new file whose content reads on it and is rejected with a reason;
//! neither offers an edit, and the composer's box shows its whole placeholder while they wait;
//! the chat then shows the task's end, and the next message reads the agent's answer. Before
//! them, the Read it runs without asking is a card of its own with no decision to make, and its
//! thinking is folded away under "Thought" until opened. At a phone's width, in light and dark.

use std::time::Duration;

use serde_json::json;

use crate::support::anthropic::ScriptedModel;
use crate::support::harness::{
    card, card_status, click, reject_with_reason, wait_card, App, Options,
};

/// The working folder's file the Bash writes, and the file the Write would create.
const LISTING: &str = "listing.txt";
const NOTES: &str = "notes.md";
const NOTES_CONTENT: &str =
    "# Notes\n\n- listed the files into listing.txt\n- next: tidy the build folder\n";
const REASON: &str = "No notes in this folder, please";
/// The file the agent reads without asking, and what it thinks first.
const README: &str = "README.txt";
const THINKING: &str = "Read the folder's README first, then list the files.";
const ANSWER: &str = "Understood: I left notes.md unwritten.";

/// Scrolls the card `css` to the top of the view, as a person reading it would.
async fn scroll_to(app: &App, css: &str) {
    let element = app.find(css).await.unwrap();
    app.driver
        .execute(
            "arguments[0].scrollIntoView({block: 'start'})",
            vec![element.to_json().unwrap()],
        )
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
}

/// How far the page scrolls sideways (0 when it fits the phone).
async fn sideways(app: &App) -> i64 {
    app.js("return document.documentElement.scrollWidth - window.innerWidth")
        .await
        .as_i64()
        .unwrap_or(1)
}

/// The waiting card `card_css` offers no Edit (nor its editor): the server refuses edited
/// arguments for a coding agent's call.
async fn assert_no_edit(app: &App, card_css: &str) {
    let shown = app
        .js(&format!(
            "return [...document.querySelectorAll('{card_css} [data-testid=edit-button], \
             {card_css} [data-testid=args-editor]')].filter((e) => e.checkVisibility()).length"
        ))
        .await;
    assert_eq!(shown, 0, "{card_css} offers an edit");
    assert!(
        app.find(&format!("{card_css} [data-testid=approve-button]"))
            .await
            .unwrap()
            .is_displayed()
            .await
            .unwrap(),
        "{card_css} offers no Approve"
    );
}

/// The composer's box shows its whole placeholder (a phone's narrow box wraps it): its height
/// while empty against the placeholder's, laid out in the same box without a scrollbar.
async fn assert_composer_fits(app: &App) {
    let fits = app
        .js(r#"
const box = document.querySelector('[data-testid=composer-input]');
const shown = box.clientHeight;
const copy = box.cloneNode();
copy.removeAttribute('id');
Object.assign(copy.style, {fieldSizing: 'fixed', overflow: 'hidden', minHeight: '0',
  height: '0', width: box.getBoundingClientRect().width + 'px', flex: 'none'});
copy.value = box.placeholder;
box.after(copy);
const needed = copy.scrollHeight;
copy.remove();
return {shown, needed, placeholder: box.placeholder};
"#)
        .await;
    assert!(
        !fits["placeholder"].as_str().unwrap_or_default().is_empty()
            && fits["shown"].as_i64().unwrap() >= fits["needed"].as_i64().unwrap(),
        "the composer's placeholder is cut off: {fits}"
    );
}

/// The Read the agent ran without asking is a card, done, with its output and no decision to
/// make; the thought before it is folded away, in no answer, and reads once opened.
async fn assert_ran_card_and_folded_thought(app: &App) {
    let read = card("read");
    wait_card(app, &read, "completed").await;
    app.wait_for_text(
        &format!("{read} [data-testid=ran-unasked]"),
        "Run by the agent without asking",
    )
    .await;
    let result = app
        .js(&format!(
            "return document.querySelector('{read} [data-testid=tool-result]').textContent"
        ))
        .await;
    assert!(
        result
            .as_str()
            .unwrap_or_default()
            .contains("Build with make."),
        "{result}"
    );
    let buttons = app
        .js(&format!(
            "return document.querySelectorAll('{read} button:not(.copy-result)').length"
        ))
        .await;
    assert_eq!(buttons, 0, "a call nobody decides offers no decision");
    let thought = "[data-testid=thought]";
    let open = app
        .js(&format!("return document.querySelector('{thought}').open"))
        .await;
    assert_eq!(open, false, "the thought shows folded");
    let answers = app.texts("[data-testid=message-agent]").await;
    assert!(
        answers.iter().all(|answer| !answer.contains(THINKING)),
        "{answers:?}"
    );
    assert_eq!(sideways(app).await, 0, "the Read card scrolls sideways");
    // Once the Bash waits below them (the chat stays at its bottom as cards come), read from
    // the top.
    wait_card(app, &card("execute"), "pending").await;
    scroll_to(app, thought).await;
    app.shots("coding-agent-ran").await;
    click(app, &format!("{thought} summary")).await;
    app.wait_for_text(&format!("{thought} .thought-text"), THINKING)
        .await;
    app.shots("coding-agent-thought").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_coding_agents_bash_is_approved_and_its_write_rejected_on_a_phone() {
    let cwd = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let notes = cwd.path().join(NOTES);
    std::fs::write(cwd.path().join(README), "Build with make.\n").unwrap();
    let script = json!([
        {"thinking": THINKING, "text": "Let me look at the folder first.",
         "tool_use": {"name": "Read", "input": {"file_path": cwd.path().join(README)}}},
        {"tool_use": {"name": "Bash", "input": {
            "command": format!("ls | tee {LISTING}"), "description": "List the files"}}},
        {"tool_use": {"name": "Write", "input": {
            "file_path": notes, "content": NOTES_CONTENT}}},
        {"text": ANSWER},
    ]);
    let model = ScriptedModel::start(home.path(), script).await;
    let app = App::start_with(
        "coding-agent",
        Options::with_agents(model.claude_code_over_acp(cwd.path(), home.path(), "")),
    )
    .await;
    app.phone().await;
    app.open_new_chat_of("/agents/default/coder/chat").await;
    app.assert_phone_width().await;
    app.send("List the files, then write some notes").await;
    assert_ran_card_and_folded_thought(&app).await;

    // The Bash waits as an `execute` card, its command on it; nothing ran yet.
    let bash = card("execute");
    wait_card(&app, &bash, "pending").await;
    app.wait_for_status("approval").await;
    let shown = app.text(&bash).await;
    assert!(shown.contains("ls | tee listing.txt"), "{shown}");
    // Its command reads as a command line, above the JSON, as Claude Code's `Bash` does.
    let readable = format!("{bash} [data-testid=tool-readable]");
    app.wait_for_text(&readable, "Command").await;
    app.wait_for_text(&readable, "$ ls | tee listing.txt").await;
    // The agent runs its own tool: it can be told yes or no, not to run other arguments.
    assert_no_edit(&app, &bash).await;
    assert_composer_fits(&app).await;
    assert!(!cwd.path().join(LISTING).exists(), "ran before a decision");
    assert_eq!(sideways(&app).await, 0, "the Bash card scrolls sideways");
    scroll_to(&app, &bash).await;
    app.shots("coding-agent-bash").await;
    click(&app, &format!("{bash} [data-testid=approve-button]")).await;

    // The Write waits next as an `edit` card: a new file, its size said, and its content
    // read with its line breaks under its path.
    let write = card("edit");
    wait_card(&app, &write, "pending").await;
    app.wait_for_text(
        &format!("{write} [data-testid=tool-preview] [data-testid=preview-summary]"),
        &format!("New file ({} bytes)", NOTES_CONTENT.len()),
    )
    .await;
    let readable = format!("{write} [data-testid=tool-readable]");
    app.wait_for_text(&readable, &format!("New content of {}", notes.display()))
        .await;
    let content = app
        .js(&format!(
            "return document.querySelector('{readable} pre').textContent"
        ))
        .await;
    assert_eq!(content.as_str(), Some(NOTES_CONTENT), "{content}");
    assert!(
        cwd.path().join(LISTING).is_file(),
        "the approved Bash ran before the Write was asked"
    );
    assert!(
        !cwd.path().join(NOTES).exists(),
        "written before a decision"
    );
    assert_ne!(
        card_status(&app, &bash).await,
        "pending",
        "the Bash card still waits"
    );
    // It offers no edit either.
    assert_no_edit(&app, &write).await;
    assert_composer_fits(&app).await;
    assert_eq!(sideways(&app).await, 0, "the Write card scrolls sideways");
    scroll_to(&app, &write).await;
    app.shots("coding-agent-write").await;

    // Rejected with a reason: the task ends, the card says why, and the file was never written.
    reject_with_reason(&app, "edit", REASON).await;
    app.wait_for_status("ready").await;
    wait_card(&app, &write, "rejected").await;
    app.wait_for_text(&format!("{write} [data-testid=tool-reason]"), REASON)
        .await;
    // The Read and the Bash, both done under the same answer, fold into one group; opened, it
    // shows each card as it was.
    app.wait_for_text("[data-testid=tool-group-summary]", "2 tool calls, 2 passed")
        .await;
    click(&app, "[data-testid=tool-group-summary]").await;
    app.wait_for_text(&format!("{bash} [data-testid=decision-chip]"), "Approved")
        .await;
    assert_eq!(card_status(&app, &card("read")).await, "completed");
    // The approved Bash card ends with what the agent reported once it ran it: done, and its
    // output (the listing); a call with a card adds no line of its own to the answer.
    assert_eq!(
        card_status(&app, &bash).await,
        "approved",
        "who decided stays on it"
    );
    let result = app
        .js(&format!(
            "return document.querySelector('{bash} [data-testid=tool-result]').textContent"
        ))
        .await;
    let result = result.as_str().unwrap_or_default();
    // (`ls` may list before `tee` makes listing.txt: only the README is sure to be there.)
    assert!(result.contains(README), "{result}");
    assert!(!result.contains("the coding agent runs it"), "{result}");
    click(&app, &format!("{bash} [data-testid=tool-result] summary")).await;
    scroll_to(&app, &bash).await;
    app.shots("coding-agent-bash-output").await;
    let answers = app.texts("[data-testid=message-agent]").await;
    assert!(
        answers
            .iter()
            .all(|answer| !answer.contains(": completed") && !answer.contains(": failed")),
        "{answers:?}"
    );
    assert!(!cwd.path().join(NOTES).exists(), "a rejected Write ran");

    // The next message: the agent hears the reason, and its answer shows.
    app.send("Why did you stop?").await;
    app.wait_for_text("[data-testid=message-agent]", ANSWER)
        .await;
    app.wait_for_status("ready").await;
    assert_eq!(sideways(&app).await, 0, "the chat scrolls sideways");
    app.shots("coding-agent-answer").await;
    let results = model.tool_results();
    assert_eq!(results.len(), 3, "{results:?}");
    assert_ne!(results[0]["is_error"], true, "the Read failed: {results:?}");
    assert_ne!(results[1]["is_error"], true, "the Bash failed: {results:?}");
    assert_eq!(
        results[2]["is_error"], true,
        "the Write was not refused: {results:?}"
    );
    let log = std::fs::read_to_string(&model.log).unwrap();
    let asked = log
        .lines()
        .rev()
        .find(|line| line.contains("Why did you stop?"))
        .unwrap();
    assert!(asked.contains(REASON), "the reason never reached the agent");
    assert!(cwd.path().join(LISTING).is_file());
    assert!(!cwd.path().join(NOTES).exists(), "a rejected Write ran");
    app.finish().await;
}
