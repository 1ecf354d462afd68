//! Browser tests of chats with remote agents, as the server records them: a kagent chat
//! reloaded while its batch waits still shows the batch and is approved from there; the
//! Details panel lists a remote card's skills and says it publishes no approval settings; Stop
//! on an agent that cannot cancel says so up front. The remote is the loopback stand-in for
//! kagent of `support/kagent.rs`.

use crate::support::harness::{card, click, App, Options, PENDING_CARD};
use crate::support::kagent;

/// The agents file of one remote kagent agent at `url` that cannot cancel a task.
fn kagent_agents(url: &str) -> String {
    format!(
        "[[agents]]\nname = \"k8s-agent\"\nnamespace = \"kagent\"\nremote = {{ url = \"{url}\", cancel = false }}\n"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kagent_chat_reloaded_while_its_batch_waits_shows_it_and_approves() {
    let (url, received) = kagent::fake_kagent("c1_interrupt.sse", "c2_resume.sse").await;
    let app = App::start_with("relayed", Options::with_agents(kagent_agents(&url))).await;
    app.open_new_chat_of("/agents/kagent/k8s-agent/chat").await;
    app.send("Write notes_a.txt, delete old_a.txt and read readme.txt.")
        .await;
    app.wait_for("the batch bar shows", "[data-testid=batch-bar]")
        .await;
    let session = app.session_id().await;

    // Stop says up front that kagent cannot cancel, and offers to reject the batch instead.
    let reject_and_stop = app
        .wait_for("Reject all and stop shows", "[data-testid=reject-and-stop]")
        .await;
    let tip = reject_and_stop
        .attr("title")
        .await
        .unwrap()
        .unwrap_or_default();
    assert!(tip.contains("cannot cancel"), "{tip}");
    assert!(app.find_all("[data-testid=stop-button]").await.is_empty());

    // Reload: the chat comes back from the server with its batch.
    app.wait_until("the server stored the pause", || async {
        Ok(app
            .stored_tasks(&session)
            .await
            .first()
            .is_some_and(|task| task["status"]["state"] == "input-required"))
    })
    .await;
    app.js("window.location.reload(); return null").await;
    app.wait_for("the batch bar shows again", "[data-testid=batch-bar]")
        .await;
    assert_eq!(app.find_all(PENDING_CARD).await.len(), 2);
    let sessions = app.get_json("/api/sessions").await;
    assert_eq!(sessions["sessions"][0]["id"], session.as_str());
    app.shots("relayed-kagent-reloaded").await;

    click(&app, "[data-testid=approve-all]").await;
    app.wait_for_status("ready").await;
    app.wait_until("both cards are approved", || async {
        let mut approved = 0;
        for tool in ["write_file", "delete_file"] {
            let status = app.find(&card(tool)).await?.attr("data-status").await?;
            approved += usize::from(status.as_deref() == Some("approved"));
        }
        Ok(approved == 2)
    })
    .await;
    let received = received.lock().map(|seen| seen.clone()).unwrap_or_default();
    let decision = received
        .iter()
        .filter_map(|request| request["params"]["message"]["parts"].as_array())
        .flatten()
        .find(|part| part["data"]["decision_type"].is_string())
        .map(|part| part["data"].clone());
    assert_eq!(
        decision,
        Some(serde_json::json!({"decision_type": "approve"}))
    );
    app.wait_until("the server stored the completion", || async {
        Ok(app
            .stored_tasks(&session)
            .await
            .first()
            .is_some_and(|task| task["status"]["state"] == "completed"))
    })
    .await;
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn details_list_a_remote_cards_skills_and_say_no_approval_settings_are_published() {
    let (url, _, _) = kagent::fake_kagent_hitl(
        "p1_tool_approval_request.sse",
        "p2_tool_approval_resume.sse",
    )
    .await;
    let app = App::start_with("relayed-details", Options::with_agents(kagent_agents(&url))).await;
    app.open_new_chat_of("/agents/kagent/k8s-agent/chat").await;
    let skill = app
        .wait_for("the card's skill shows", "[data-testid=skill]")
        .await;
    let text = skill.text().await.unwrap();
    assert!(
        text.contains("k8s") && text.contains("Kubernetes operations"),
        "{text}"
    );
    assert_eq!(app.texts("[data-testid=skill-tags]").await, ["Tags: k8s"]);
    let note = app
        .wait_for(
            "the panel says no tools are published",
            "[data-testid=no-tool-settings]",
        )
        .await;
    assert!(note.text().await.unwrap().contains("does not publish"));
    assert!(app.find_all("[data-testid=catalog-tool]").await.is_empty());
    app.shots("relayed-details").await;
    app.finish().await;
}
