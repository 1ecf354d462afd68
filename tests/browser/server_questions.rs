//! Browser test of an MCP server that asks back while its tool runs
//! (`crates/server/tests/mcp/asking_server.py`, the Python `mcp` SDK over stdio): its form is a
//! question card with typed fields, whose wrong value the card refuses before anything is
//! sent; its URL is a card that shows the whole link with its host highlighted, offers Open and
//! Decline, and opens nothing by itself. In light and dark.

use std::path::{Path, PathBuf};

use crate::support::harness::{card, click, App, Options};

const FORM: &str = "[data-testid=question-form]";

/// The Python of the venv `crates/server/tests/mcp/install.sh` makes.
fn mcp_python() -> PathBuf {
    let venv = std::env::var_os("SIGNOFF_MCP_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(&std::env::var("HOME").unwrap()).join(".cache/signoff/mcp-venv")
        });
    let python = venv.join("bin/python");
    assert!(
        python.exists(),
        "{} is missing: run crates/server/tests/mcp/install.sh",
        python.display()
    );
    python
}

fn agents() -> String {
    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/server/tests/mcp/asking_server.py");
    format!(
        r#"
[[agents]]
name = "demo"
description = "Reads files, asking first"

[[agents.tools]]
kind = "mcp_stdio"
name = "archive"
command = "{python}"
args = ["{script}", "stdio"]
"#,
        python = mcp_python().display(),
        script = script.display(),
    )
}

/// The text box of the form's question `at` (counting from 0).
fn field(at: usize) -> String {
    format!(
        "[data-testid=question]:nth-of-type({}) [data-testid=question-text]",
        at + 1
    )
}

fn choice(value: &str) -> String {
    format!("[data-testid=question-choice][value=\"{value}\"]")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_servers_form_and_link_are_cards_answered_in_the_chat() {
    let app = App::start_with("server-questions", Options::with_agents(agents())).await;
    app.open_new_chat_of("/agents/default/demo/chat").await;
    app.send("read form.txt").await;
    app.wait_for("the server's form shows", FORM).await;
    app.wait_for_status("approval").await;
    let asked = card("elicitation");
    app.wait_for_text(
        &format!("{asked} [data-testid=asked-message]"),
        "archive asks, while read_file runs: Where should the report go?",
    )
    .await;
    let labels = app.texts("[data-testid=question] legend").await;
    assert_eq!(
        labels,
        ["Email", "Copies", "Urgent (optional)", "Format (optional)"],
        "required fields are plain, optional ones marked"
    );
    assert_eq!(app.attribute(&field(0), "type").await, "email");
    app.find(&field(0))
        .await
        .unwrap()
        .send_keys("ada@example.com")
        .await
        .unwrap();
    app.find(&field(1))
        .await
        .unwrap()
        .send_keys("9")
        .await
        .unwrap();
    click(&app, &choice("Yes")).await;
    click(&app, &choice("csv")).await;
    // A value the server's schema refuses is refused here, and nothing is sent.
    click(&app, "[data-testid=question-submit]").await;
    app.wait_for_text("[data-testid=question-error]", "must be at most 5")
        .await;
    app.wait_for_status("approval").await;
    let copies = app.find(&field(1)).await.unwrap();
    copies.clear().await.unwrap();
    copies.send_keys("2").await.unwrap();
    app.shots("server-form").await;
    click(&app, "[data-testid=question-submit]").await;
    app.wait_for_status("ready").await;
    // The model reads what the server made of the answers (the cards fold away once done).
    app.wait_for_text(
        "[data-testid=message-agent]",
        r#"form.txt says: accepted {"email":"ada@example.com","copies":2,"urgent":true,"format":"csv"}"#,
    )
    .await;

    // A link: shown whole, its host highlighted, and opened only by the person's Open.
    app.send("read link.txt").await;
    let url = "[data-testid=tool-url]";
    app.wait_for("the link card shows", url).await;
    app.wait_for_text(
        &format!("{url} [data-testid=url-host]"),
        "login.example.com",
    )
    .await;
    app.wait_for_text(
        &format!("{url} [data-testid=url-shown]"),
        "https://login.example.com/authorize?client=7",
    )
    .await;
    let buttons = app
        .texts(&format!(
            "{asked}[data-status=pending] .tool-actions button"
        ))
        .await;
    assert!(
        buttons.starts_with(&["Open".to_owned(), "Decline".to_owned()]),
        "{buttons:?}"
    );
    let windows = app.driver.windows().await.unwrap().len();
    app.shots("server-url").await;
    assert_eq!(
        app.driver.windows().await.unwrap().len(),
        windows,
        "opened by itself"
    );
    click(
        &app,
        &format!("{asked}[data-status=pending] [data-testid=reject-button]"),
    )
    .await;
    app.wait_for_status("ready").await;
    app.wait_for_text("[data-testid=message-agent]", "link.txt says: decline")
        .await;
    app.assert_no_errors().await;
    app.finish().await;
}
