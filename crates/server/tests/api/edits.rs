//! Edited arguments go through the whole gate (crates/server/README.md, Approvers): a requester
//! who may approve her harmless call alone cannot approve it with arguments that an `ask` rule
//! routes to a group under the two-person rule, or that a Cedar policy's `@ask` routes to its
//! `@approvers` with `@requester_may_approve("false")`. The edit is refused on every channel,
//! nothing runs, and the batch still waits for a decision it may take.

use serde_json::{json, Value};

use crate::support::*;

/// Carol (in sre) starts the chats; bob and dave are in sre, sam in sec.
fn people(config: &mut signoff_server::Config) {
    config.auth = signoff_server::AuthMode::Tokens;
    config.tokens = vec![
        "carol-token=carol:sre".into(),
        "bob-token=bob:sre".into(),
        "dave-token=dave:sre".into(),
        "sam-token=sam:sec".into(),
    ];
}

const AGENTS: &str = r#"
[[agents]]
name = "demo"

[[agents.tools]]
kind = "builtin_files"
require_approval = ["write_file", "delete_file"]

[[agents.rules]]
tool = "write_file"
action = "ask"
when = { path = { glob = "prod/**" } }
approvers = ["group:sre"]
requester_may_approve = false
quorum = 2
"#;

/// The agents above and carol's people, under the Cedar policies `text`.
async fn with_policies(text: &str) -> TestApp {
    let data_dir = tempfile::tempdir().unwrap();
    let policies = data_dir.path().join("policies");
    std::fs::create_dir_all(&policies).unwrap();
    std::fs::write(policies.join("main.cedar"), text).unwrap();
    spawn_with_agents(AGENTS, move |config| {
        people(config);
        config.policies_dir = Some(policies);
        // The folder must outlive the server.
        std::mem::forget(data_dir);
    })
    .await
}

/// Carol asks for `text`; the paused task and context.
async fn pause(app: &TestApp, text: &str) -> (String, String) {
    let body = message_request("message/stream", message_v03(text, None, None));
    let results = results(&app.stream_as(None, Some("carol-token"), body).await);
    assert_eq!(
        states(&results).last().map(String::as_str),
        Some("input-required"),
        "{results:?}"
    );
    (task_id(&results), context_id(&results))
}

/// The decision over A2A (a v0.3 DataPart, `message/send`) as the holder of `token`.
async fn decide_a2a(app: &TestApp, token: &str, task: &str, context: &str, data: Value) -> Value {
    app.rpc_as(
        None,
        Some(token),
        message_request("message/send", decision(task, context, data)),
    )
    .await
}

/// The state of `task` as its owner reads it.
async fn state_of(app: &TestApp, task: &str) -> Value {
    let got = app
        .rpc_as(
            None,
            Some("carol-token"),
            request("tasks/get", json!({"id": task})),
        )
        .await;
    got["result"]["status"]["state"].clone()
}

/// Carol approves `call_1` of `task` edited to write `content` at `path`, and the file at
/// `written` then holds it.
async fn approve_edit_and_read(
    app: &TestApp,
    task: &str,
    path: &str,
    content: &str,
    written: &str,
) {
    let edit = json!({"decision_type": "approve",
                      "modified_args": {"call_1": {"path": path, "content": content}}});
    let (status, body) = decide_rest(app, Some("carol-token"), task, edit).await;
    assert_eq!(status, 200, "{body}");
    let file = std::fs::read_to_string(app.sandbox().join(written)).unwrap();
    assert_eq!(file, content);
}

/// The refusal REST and A2A give, naming what the edit `needs`; the batch still waits.
async fn refused_everywhere(app: &TestApp, task: &str, context: &str, edit: Value, needs: &str) {
    let (status, body) = decide_rest(app, Some("carol-token"), task, edit.clone()).await;
    assert_eq!(status, 400, "{body}");
    let error = body["error"].as_str().unwrap_or_default().to_owned();
    assert!(
        error.contains("need more than the call as asked"),
        "{error}"
    );
    assert!(error.contains(needs), "{error}");
    assert!(error.ends_with("the call keeps waiting (approve it as asked, or reject it)"));
    let got = decide_a2a(app, "carol-token", task, context, edit.clone()).await;
    assert_eq!(got["error"]["code"], -32602, "{got}");
    assert_eq!(got["error"]["message"], error.as_str(), "{got}");
    assert_eq!(state_of(app, task).await, "input-required");
}

#[tokio::test]
async fn the_requester_cannot_edit_her_call_into_one_an_ask_rule_routes_to_sre() {
    let app = spawn_with_agents(AGENTS, people).await;
    let (task, context) = pause(&app, "write notes.txt: hi").await;
    let edit = json!({"decision_type": "approve",
                      "modified_args": {"call_1": {"path": "prod/deploy.txt", "content": "owned"}}});
    refused_everywhere(
        &app,
        &task,
        &context,
        edit.clone(),
        "as edited it needs approval by group sre; the requester may not approve; 2 distinct \
         approvals (Rule #1 (write_file when path glob \"prod/**\") asks), as asked it needs \
         approval by the requester",
    )
    .await;
    assert!(!app.sandbox().join("prod/deploy.txt").exists());
    // Bob is in sre, but the call as asked is carol's alone: he does not see it.
    let (status, body) = decide_rest(&app, Some("bob-token"), &task, edit).await;
    assert_eq!(status, 404, "{body}");
    assert!(!app.sandbox().join("prod/deploy.txt").exists());
    // The call as asked, or an edit that needs no more, still runs on her approval.
    approve_edit_and_read(&app, &task, "notes.txt", "edited", "notes.txt").await;
    assert!(!app.sandbox().join("prod/deploy.txt").exists());

    // A prod call as asked still takes two of sre, edits within prod included.
    let (task, _) = pause(&app, "write prod/a.txt: one").await;
    let edit = json!({"decision_type": "approve",
                      "modified_args": {"call_1": {"path": "prod/b.txt", "content": "two"}}});
    let (status, body) = decide_rest(&app, Some("bob-token"), &task, edit.clone()).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["state"], "input-required", "one of two: {body}");
    let (status, body) = decide_rest(&app, Some("dave-token"), &task, edit).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        std::fs::read_to_string(app.sandbox().join("prod/b.txt")).unwrap(),
        "two"
    );
}

#[tokio::test]
async fn the_requester_cannot_edit_her_call_into_one_a_policy_routes_to_its_approvers() {
    let app = with_policies(
        r#"@id("protected-deletes")
@ask("deleting a protected file")
@approvers("group:sec")
@requester_may_approve("false")
permit (principal, action, resource == Signoff::Tool::"delete_file")
when { context.args.path like "protected*" };
"#,
    )
    .await;
    std::fs::create_dir_all(app.sandbox()).unwrap();
    std::fs::write(app.sandbox().join("old.txt"), "x").unwrap();
    std::fs::write(app.sandbox().join("protected.db"), "keep").unwrap();
    let (task, context) = pause(&app, "delete old.txt").await;
    let edit = json!({"decision_type": "approve",
                      "modified_args": {"call_1": {"path": "protected.db"}}});
    refused_everywhere(
        &app,
        &task,
        &context,
        edit,
        "as edited it needs approval by group sec; the requester may not approve (Policy \
         protected-deletes asks for a decision), as asked it needs approval by the requester",
    )
    .await;
    assert_eq!(
        std::fs::read_to_string(app.sandbox().join("protected.db")).unwrap(),
        "keep"
    );
    // Sam, of sec, may not see carol's own call either.
    let (status, body) = decide_rest(
        &app,
        Some("sam-token"),
        &task,
        json!({"decision_type": "approve", "modified_args": {"call_1": {"path": "protected.db"}}}),
    )
    .await;
    assert_eq!(status, 404, "{body}");
    assert!(app.sandbox().join("protected.db").exists());
    assert_eq!(state_of(&app, &task).await, "input-required");
}

#[tokio::test]
async fn an_approver_may_narrow_a_call_where_a_policy_says_how_and_never_widen_it() {
    let app = with_policies(
        r#"@id("writes-narrowed")
@ask("a write is looked at")
@narrower("path: within")
permit (principal, action, resource == Signoff::Tool::"write_file");
"#,
    )
    .await;
    let (task, context) = pause(&app, "write notes/a.txt: draft").await;
    for (edit, why) in [
        (
            json!({"path": "notes/../prod/a.txt", "content": "draft"}),
            "path may only be narrowed (a path inside the one asked)",
        ),
        (
            json!({"path": "notes/a.txt", "content": "something else"}),
            "content must stay as asked",
        ),
    ] {
        let decision = json!({"decision_type": "approve", "modified_args": {"call_1": edit}});
        let (status, body) = decide_rest(&app, Some("carol-token"), &task, decision.clone()).await;
        assert_eq!(status, 400, "{body}");
        let error = body["error"].as_str().unwrap_or_default();
        assert!(
            error.contains("ask for more than the call as asked") && error.contains(why),
            "{error}"
        );
        // The same refusal over A2A: nothing stored, the batch still waits.
        let got = decide_a2a(&app, "carol-token", &task, &context, decision).await;
        assert_eq!(got["error"]["code"], -32602, "{got}");
        assert_eq!(state_of(&app, &task).await, "input-required");
    }
    assert!(!app.sandbox().join("prod").exists());
    // The same path is as asked, so an approval as asked runs it.
    approve_edit_and_read(&app, &task, "notes/./a.txt", "draft", "notes/a.txt").await;
}
