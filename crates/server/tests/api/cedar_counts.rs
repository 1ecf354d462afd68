//! Cedar policies that count (`context.counts`): a policy reads how many calls of the tool were
//! allowed in the last hour and which tools were approved in the task, read from the store for
//! the call, so the third read in an hour asks and a delete before an approved write is refused.

use serde_json::{json, Value};

use crate::support::*;

const AGENTS: &str = r#"
[[agents]]
name = "demo"

[[agents.tools]]
kind = "builtin_files"
require_approval = ["write_file"]
"#;

const POLICIES: &str = r#"
@id("reads-in-hand")
permit (principal, action, resource == Signoff::Tool::"read_file")
when { context.counts.tool_allowed_by_user_last_hour < 2 };

@id("many-reads")
@ask("more than two reads in an hour")
permit (principal, action, resource == Signoff::Tool::"read_file")
when { context.counts.tool_allowed_by_user_last_hour >= 2 };

@id("delete-after-write")
@reason("delete only what this task was allowed to write")
forbid (principal, action, resource == Signoff::Tool::"delete_file")
unless { context.counts.approved_in_task.contains("write_file") };

@id("deletes")
permit (principal, action, resource == Signoff::Tool::"delete_file");
"#;

async fn app() -> TestApp {
    let data_dir = tempfile::tempdir().unwrap();
    let policies = data_dir.path().join("policies");
    std::fs::create_dir_all(&policies).unwrap();
    std::fs::write(policies.join("counts.cedar"), POLICIES).unwrap();
    spawn_with_agents(AGENTS, move |config| {
        config.policies_dir = Some(policies);
        config.auth = signoff_server::AuthMode::Tokens;
        config.tokens = vec!["tA=alice".into()];
        // The folder must outlive the server.
        std::mem::forget(data_dir);
    })
    .await
}

async fn say(app: &TestApp, text: &str) -> Vec<Value> {
    let body = message_request("message/stream", message_v03(text, None, None));
    results(&app.stream_as(None, Some("tA"), body).await)
}

/// The `signoff_why` of the last call a stream shows.
fn last_why(results: &[Value]) -> Value {
    results
        .iter()
        .filter(|result| result["kind"] == "status-update")
        .filter_map(|result| result["status"]["message"]["parts"].as_array().cloned())
        .flatten()
        .rfind(|part| part["metadata"]["kagent_type"] == "function_call")
        .unwrap()["metadata"]["signoff_why"]
        .clone()
}

#[tokio::test]
async fn the_third_read_in_an_hour_asks() {
    let app = app().await;
    std::fs::create_dir_all(app.sandbox()).unwrap();
    std::fs::write(app.sandbox().join("a.txt"), "x").unwrap();
    // Each message is a task of its own: the hour counts the person's calls across tasks.
    for _ in 0..2 {
        let results = say(&app, "read a.txt").await;
        assert_eq!(states(&results).last().unwrap(), "completed", "{results:?}");
        assert_eq!(last_why(&results)["id"], "reads-in-hand");
    }
    let results = say(&app, "read a.txt").await;
    assert_eq!(
        states(&results).last().unwrap(),
        "input-required",
        "{results:?}"
    );
    assert_eq!(last_why(&results)["id"], "many-reads");
    assert_eq!(last_why(&results)["outcome"], "ask");
}

#[tokio::test]
async fn a_delete_is_refused_until_a_write_is_approved_in_the_task() {
    let app = app().await;
    std::fs::create_dir_all(app.sandbox()).unwrap();
    std::fs::write(app.sandbox().join("old.txt"), "x").unwrap();
    let results = say(&app, "delete old.txt").await;
    assert_eq!(states(&results).last().unwrap(), "completed");
    let why = last_why(&results);
    assert_eq!(why["id"], "delete-after-write", "{why}");
    assert_eq!(why["outcome"], "deny");
    assert!(app.sandbox().join("old.txt").exists());

    // In one task: the write asks and is approved, then the delete runs without asking.
    let results = say(&app, "write new.txt: hi then delete new.txt").await;
    assert_eq!(states(&results).last().unwrap(), "input-required");
    let task = task_id(&results);
    let (status, body) =
        decide_rest(&app, Some("tA"), &task, json!({"decision_type": "approve"})).await;
    assert_eq!(status, 200, "{body}");
    within("the delete after the approved write", async {
        loop {
            let got = app
                .rpc_as(None, Some("tA"), request("tasks/get", json!({"id": task})))
                .await;
            match got["result"]["status"]["state"].as_str() {
                Some("completed") => return,
                Some("failed" | "canceled" | "rejected" | "input-required") => panic!("{got}"),
                _ => tokio::time::sleep(std::time::Duration::from_millis(50)).await,
            }
        }
    })
    .await;
    assert!(!app.sandbox().join("new.txt").exists(), "the delete ran");
}
