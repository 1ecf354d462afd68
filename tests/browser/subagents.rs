//! Browser test of a subagent's calls nested in its parent's batch: the demo's boss delegates
//! to the demo agent, whose two `write_file` calls show inside the delegation's card under
//! "default/demo asks through default/boss", and Approve all decides them.

use crate::support::harness::{click, App};

const NESTED: &str = "[data-testid=tool-nested] [data-testid=tool-card]";

/// The statuses of the nested cards, in order.
async fn nested_statuses(app: &App) -> Vec<String> {
    let mut out = Vec::new();
    for card in app.find_all(NESTED).await {
        out.push(
            card.attr("data-status")
                .await
                .ok()
                .flatten()
                .unwrap_or_default(),
        );
    }
    out
}

async fn wait_nested(app: &App, statuses: &[&str]) {
    let what = format!("the nested cards are {statuses:?}");
    app.wait_until(&what, || async {
        Ok(nested_statuses(app).await == statuses)
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subagents_calls_nest_under_the_delegation_and_approve_all_decides_them() {
    let app = App::start("subagent").await;
    app.open_new_chat_of("/agents/default/boss/chat").await;
    app.send("delegate default/demo: write a.txt: one and write b.txt: two")
        .await;
    wait_nested(&app, &["pending", "pending"]).await;
    let label = app.text("[data-testid=tool-nested-label]").await;
    assert_eq!(label, "default/demo asks through default/boss");
    // The nested cards are inside the delegation's card, not beside it.
    let outer = app
        .find_all("[data-testid=tool-list] > [data-testid=tool-card]")
        .await;
    assert_eq!(outer.len(), 1);
    assert_eq!(
        outer[0].attr("data-tool").await.unwrap().as_deref(),
        Some("default__demo")
    );
    let ids: Vec<String> = {
        let mut ids = Vec::new();
        for card in app.find_all(NESTED).await {
            ids.push(card.attr("data-call-id").await.unwrap().unwrap_or_default());
        }
        ids
    };
    assert_eq!(ids, ["call_1/call_1", "call_1/call_2"]);
    let approve_all = app.text("[data-testid=approve-all]").await;
    assert_eq!(approve_all, "Approve all (2)");
    app.shots("subagent-pending").await;
    click(&app, "[data-testid=approve-all]").await;
    app.wait_for_status("ready").await;
    wait_nested(&app, &["approved", "approved"]).await;
    assert_eq!(
        std::fs::read_to_string(app.sandbox("a.txt"))
            .ok()
            .as_deref(),
        Some("one")
    );
    assert_eq!(
        std::fs::read_to_string(app.sandbox("b.txt"))
            .ok()
            .as_deref(),
        Some("two")
    );
    // The subagent's task is part of this chat, not a chat of its own: the sidebar lists one.
    app.wait_for("the sidebar lists the chat", "[data-testid=session-item]")
        .await;
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    let chats = app.texts("[data-testid=session-item]").await;
    assert_eq!(chats.len(), 1, "{chats:?}");
    app.shots("subagent-finished").await;
    app.finish().await;
}
