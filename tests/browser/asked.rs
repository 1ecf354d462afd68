//! Browser tests of calls asked for from outside (an MCP client's, a program's permission
//! prompt): the card reads as what it would do, a command as a command line and a file's new
//! content with its line breaks, and deciding it in the chat answers the asker.

use serde_json::{json, Value};

use crate::support::harness::{card, click, App, Options};

const GATE: &str = r#"
[[agents]]
name = "claude-code"
serve_mcp = true

[[agents.tools]]
kind = "permission_prompts"
name = "claude-code"
"#;

/// Asks over REST, as a program would; the request's state.
async fn ask(app: &App, tool: &str, arguments: Value) -> Value {
    app.http
        .post(format!("{}/api/approvals/requests", app.base))
        .json(&json!({"agent": "default/claude-code", "tool": tool, "arguments": arguments}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

fn chat_of(asked: &Value) -> String {
    format!(
        "/agents/default/claude-code/chat/{}",
        asked["contextId"].as_str().unwrap()
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompted_command_and_write_read_as_what_they_would_do_and_approving_answers_the_asker() {
    let app = App::start_with("asked-readable", Options::with_agents(GATE)).await;
    let bash = ask(
        &app,
        "Bash",
        json!({"command": "kubectl rollout restart deploy/api -n prod",
        "description": "Restart the API"}),
    )
    .await;
    let write = ask(
        &app,
        "Write",
        json!({"file_path": "/srv/app/prod.yaml",
        "content": "replicas: 4\nimage: api:2.3.1\n"}),
    )
    .await;
    app.open(&chat_of(&write)).await;
    let readable = format!("{} [data-testid=tool-readable]", card("Write"));
    app.wait_for("the Write card shows its content", &readable)
        .await;
    let shown = app.text(&readable).await;
    assert!(
        shown.contains("New content of /srv/app/prod.yaml"),
        "{shown}"
    );
    assert!(shown.contains("replicas: 4\nimage: api:2.3.1"), "{shown}");
    app.shots("asked-write").await;

    app.open(&chat_of(&bash)).await;
    let readable = format!("{} [data-testid=tool-readable]", card("Bash"));
    app.wait_for("the Bash card shows its command", &readable)
        .await;
    let shown = app.text(&readable).await;
    assert!(
        shown.contains("$ kubectl rollout restart deploy/api -n prod"),
        "{shown}"
    );
    app.shots("asked-bash").await;
    // The agent runs no tools of its own and takes no model: its details say so in words (no
    // empty "Tools" list), and the chat shows no token count.
    app.wait_for_text(
        "[data-testid=agent-details] [data-testid=no-tools]",
        "programs ask it whether theirs may run",
    )
    .await;
    let counts = app
        .js("return document.querySelectorAll('[data-testid=session-usage], [data-testid=answer-usage]').length")
        .await;
    assert_eq!(
        counts,
        json!(0),
        "a chat that took no model shows no tokens"
    );
    click(
        &app,
        &format!("{} [data-testid=approve-button]", card("Bash")),
    )
    .await;
    let task = bash["taskId"].as_str().unwrap();
    let url = format!("{}/api/approvals/requests/{task}?wait=10", app.base);
    let answer: Value = app
        .http
        .get(url)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(answer["status"], "allowed", "{answer}");
    app.finish().await;
}
