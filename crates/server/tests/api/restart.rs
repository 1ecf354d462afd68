//! Restart safety with the real binary: SIGKILL while tasks are paused, start again, decide.

use serde_json::json;

use crate::hitl::pause;
use crate::support::*;

/// The `signoff` binary on port 0 with `data_dir`; returns it with its base URL.
async fn start(data_dir: &std::path::Path) -> (Binary, String) {
    let binary = start_binary(data_dir, &[], &[]).await;
    let base = binary.base.clone();
    (binary, base)
}

fn kill(server: Binary) {
    server.kill();
}

#[tokio::test]
async fn sigkill_while_paused_then_restart_and_decide() {
    let data_dir = tempfile::tempdir().unwrap();
    let (child, base) = start(data_dir.path()).await;
    let app = TestApp::external(base, data_dir);
    let (first, first_context) = pause(&app, None).await;
    std::fs::write(app.sandbox().join("old2.txt"), "x").unwrap();
    let second = task_id(&say(&app, "delete old2.txt").await);
    kill(child);

    let data_dir = app.into_data_dir();
    let (child, base) = start(data_dir.path()).await;
    let app = TestApp::external(base, data_dir);
    // Both tasks are still paused with their batches.
    let (_, body) = app.get("/api/approvals").await;
    assert_eq!(body["approvals"].as_array().unwrap().len(), 2, "{body}");
    let got = wait_for_state(&app, &first, "input-required").await;
    assert_eq!(
        got["status"]["message"]["parts"][1]["data"]["action_requests"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    // Deciding them completes them: one over A2A, one over REST.
    let approved = decide(
        &app,
        &first,
        &first_context,
        json!({"decision_type": "approve"}),
    )
    .await;
    assert_eq!(states(&approved).last().unwrap(), "completed");
    assert!(app.sandbox().join("notes.txt").exists());
    let (status, body) = app
        .post_json_as(
            &format!("/api/approvals/{second}"),
            None,
            &json!({"decision_type": "deny", "reason": "keep"}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    wait_for_state(&app, &second, "completed").await;
    assert!(app.sandbox().join("old2.txt").exists());
    kill(child);
}

#[tokio::test]
async fn a_call_interrupted_by_a_crash_is_reported_not_rerun() {
    let data_dir = tempfile::tempdir().unwrap();
    let (child, base) = start(data_dir.path()).await;
    let app = TestApp::external(base, data_dir);
    let (task, _) = pause(&app, None).await;
    kill(child);
    // Make the database look like a crash after the decision: the batch decided, call_1 (the
    // write) started but not finished, call_2 (the delete) approved but not started.
    sql_execute(
        app.data_dir.path(),
        &[
            "UPDATE batches SET state = 'decided', decided_at = '2026-01-01T00:00:00.000Z'",
            "UPDATE calls SET status = 'started', verdict = 'approve', run_args = args,
                          run_args_sha256 = args_sha256, started_at = '2026-01-01T00:00:00.000Z'
         WHERE call_id = 'call_1'",
            "UPDATE calls SET status = 'approved', verdict = 'approve', run_args = args,
                          run_args_sha256 = args_sha256
         WHERE call_id = 'call_2'",
            "UPDATE tasks SET state = 'working'",
        ],
    )
    .await;

    let data_dir = app.into_data_dir();
    let (child, base) = start(data_dir.path()).await;
    let app = TestApp::external(base, data_dir);
    let done = wait_for_state(&app, &task, "completed").await;
    assert!(
        !app.sandbox().join("notes.txt").exists(),
        "the interrupted write is not run again"
    );
    assert!(
        !app.sandbox().join("old.txt").exists(),
        "the approved delete that never started runs"
    );
    let text: String = done["artifacts"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|artifact| artifact["parts"].as_array().unwrap().clone())
        .filter_map(|part| part["text"].as_str().map(str::to_owned))
        .collect();
    assert!(
        text.contains("Writing notes.txt failed: interrupted by a restart"),
        "{text}"
    );
    assert!(text.contains("I deleted old.txt."), "{text}");
    kill(child);
}

#[tokio::test]
async fn a_decision_acknowledged_before_a_sigkill_is_kept() {
    let data_dir = tempfile::tempdir().unwrap();
    let (child, base) = start(data_dir.path()).await;
    let app = TestApp::external(base, data_dir);
    let (task, context) = pause(&app, None).await;
    // Non-blocking: the answer comes once the decision is committed, not once the calls ran.
    let params = json!({
        "message": decision(&task, &context, json!({"decision_type": "deny", "reason": "no"})),
        "configuration": {"blocking": false},
    });
    let acknowledged = app.rpc(None, request("message/send", params)).await;
    assert!(acknowledged.get("error").is_none(), "{acknowledged}");
    kill(child);

    let data_dir = app.into_data_dir();
    let (child, base) = start(data_dir.path()).await;
    let app = TestApp::external(base, data_dir);
    let (_, pending) = app.get("/api/approvals").await;
    assert_eq!(pending["approvals"], json!([]), "{pending}");
    let (_, decided) = app.get("/api/approvals?state=decided").await;
    let decisions = decided["decisions"].as_array().unwrap();
    assert_eq!(decisions.len(), 1, "{decided}");
    assert_eq!(decisions[0]["taskId"], task);
    assert_eq!(decisions[0]["decision"]["decision_type"], "deny");
    wait_for_state(&app, &task, "completed").await;
    assert!(
        app.sandbox().join("old.txt").exists(),
        "the rejected delete never ran"
    );
    kill(child);
}

#[tokio::test]
async fn a_corrupt_row_fails_its_task_visibly() {
    let data_dir = tempfile::tempdir().unwrap();
    let (child, base) = start(data_dir.path()).await;
    let app = TestApp::external(base, data_dir);
    let (task, _) = pause(&app, None).await;
    kill(child);
    // A status this version does not know, on a task that resumes at start.
    sql_execute(
        app.data_dir.path(),
        &[
            "UPDATE calls SET status = 'exploded' WHERE call_id = 'call_1'",
            "UPDATE tasks SET state = 'working'",
        ],
    )
    .await;

    let data_dir = app.into_data_dir();
    let (child, base) = start(data_dir.path()).await;
    let app = TestApp::external(base, data_dir);
    let failed = wait_for_state(&app, &task, "failed").await;
    let said = failed["status"]["message"]["parts"][0]["text"]
        .as_str()
        .unwrap();
    assert!(said.contains("internal error"), "{failed}");
    assert!(!app.sandbox().join("notes.txt").exists());
    kill(child);
}
