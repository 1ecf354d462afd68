//! The deployment's Cedar policies (`--policies`): a forbid refuses a call with its reason, a
//! permit with `@ask` holds it for its approvers, a permit lets it run audited as the policy, the
//! person's groups from their sign-in reach the policies, an evaluation error asks (and is
//! counted), every call names what decided it (`signoff_why`, the audit's `why`), and a file
//! nested too deeply is refused with its line by `signoff policy check` and at start.

use serde_json::{json, Value};

use crate::support::*;

const AGENTS: &str = r#"
[[agents]]
name = "demo"

[[agents.tools]]
kind = "builtin_files"
require_approval = ["write_file", "delete_file"]
"#;

const POLICIES: &str = r#"
@id("no-secrets")
@reason("secrets/ is off limits to agents")
forbid (principal, action == Signoff::Action::"call", resource == Signoff::Tool::"write_file")
when { context.args.path like "secrets/*" };

@id("sre-notes")
permit (principal in Signoff::Group::"sre", action, resource == Signoff::Tool::"write_file")
when { context.args.path like "notes/*" };

@id("two-person-delete")
@ask("deleting needs two people")
@approvers("group:sre")
@quorum("2")
@risk("high")
permit (principal, action, resource == Signoff::Tool::"delete_file");

@id("modes")
permit (principal, action, resource == Signoff::Tool::"list_directory")
when { context.args.mode == "fast" };
"#;

async fn app() -> TestApp {
    let data_dir = tempfile::tempdir().unwrap();
    let policies = data_dir.path().join("policies");
    std::fs::create_dir_all(&policies).unwrap();
    std::fs::write(policies.join("main.cedar"), POLICIES).unwrap();
    spawn_with_agents(AGENTS, move |config| {
        config.policies_dir = Some(policies);
        config.environment = "prod".into();
        config.auth = signoff_server::AuthMode::Tokens;
        config.tokens = vec!["tA=alice:sre".into(), "tB=bob".into()];
        // The folder must outlive the server.
        std::mem::forget(data_dir);
    })
    .await
}

async fn say_as(app: &TestApp, token: &str, text: &str) -> Vec<Value> {
    let body = message_request("message/stream", message_v03(text, None, None));
    results(&app.stream_as(None, Some(token), body).await)
}

fn last_state(results: &[Value]) -> String {
    states(results).last().cloned().unwrap_or_default()
}

/// The `function_call` parts (whole, with their metadata) of a stream's status messages.
fn function_call_parts(results: &[Value]) -> Vec<Value> {
    results
        .iter()
        .filter(|result| result["kind"] == "status-update")
        .filter_map(|result| result["status"]["message"]["parts"].as_array().cloned())
        .flatten()
        .filter(|part| part["metadata"]["kagent_type"] == "function_call")
        .collect()
}

fn why_of(results: &[Value]) -> Value {
    function_call_parts(results).pop().unwrap()["metadata"]["signoff_why"].clone()
}

#[tokio::test]
async fn a_forbid_refuses_with_its_reason_and_the_model_and_audit_are_told() {
    let app = app().await;
    let results = say_as(&app, "tA", "write secrets/key.txt: x").await;
    assert_eq!(
        last_state(&results),
        "completed",
        "never paused: {results:?}"
    );
    assert!(!app.sandbox().join("secrets/key.txt").exists());
    let label = "policy no-secrets: secrets/ is off limits to agents";
    let responses = data_parts(&results, "function_response");
    assert_eq!(responses[0]["response"]["status"], "denied");
    assert_eq!(responses[0]["response"]["rule"], label);
    assert_eq!(
        why_of(&results),
        json!({"by": "policy", "id": "no-secrets", "outcome": "deny",
               "summary": "Denied by policy no-secrets",
               "reason": "secrets/ is off limits to agents", "file": "main.cedar"})
    );
    let (status, body) = app.get_as("/api/approvals?state=decided", Some("tA")).await;
    assert_eq!(status, 200, "{body}");
    let entry = &body["decisions"][0];
    assert_eq!(entry["summary"], format!("Denied by {label}"));
    assert_eq!(entry["calls"][0]["why"]["id"], "no-secrets");
}

#[tokio::test]
async fn a_permit_for_a_group_runs_the_call_audited_as_the_policy() {
    let app = app().await;
    let results = say_as(&app, "tA", "write notes/a.txt: hi").await;
    assert_eq!(last_state(&results), "completed", "{results:?}");
    assert_eq!(
        std::fs::read_to_string(app.sandbox().join("notes/a.txt")).unwrap(),
        "hi"
    );
    assert_eq!(why_of(&results)["id"], "sre-notes");
    let (_, body) = app.get_as("/api/approvals?state=decided", Some("tA")).await;
    let entry = &body["decisions"][0];
    assert_eq!(entry["channel"], "policy");
    assert_eq!(entry["policyId"], "sre-notes");
    // bob is not in sre: the tool's require_approval asks him.
    let results = say_as(&app, "tB", "write notes/b.txt: hi").await;
    assert_eq!(last_state(&results), "input-required");
    assert_eq!(
        why_of(&results),
        json!({"by": "default", "id": "require_approval", "outcome": "ask",
               "summary": "The tool requires approval"})
    );
}

#[tokio::test]
async fn an_ask_carries_its_approvers_quorum_and_risk_with_the_held_call() {
    let app = app().await;
    std::fs::create_dir_all(app.sandbox()).unwrap();
    std::fs::write(app.sandbox().join("old.txt"), "x").unwrap();
    let results = say_as(&app, "tB", "delete old.txt").await;
    assert_eq!(last_state(&results), "input-required");
    assert_eq!(
        why_of(&results),
        json!({"by": "policy", "id": "two-person-delete", "outcome": "ask",
               "summary": "Policy two-person-delete asks for a decision",
               "approvers": ["group:sre"], "quorum": 2, "risk": "high",
               "reason": "deleting needs two people", "file": "main.cedar"})
    );
    // Stored with the pending call: the audit of the decision names it.
    let task = task_id(&results);
    let (status, body) = app
        .post_json_as(
            &format!("/api/approvals/{task}"),
            Some("tB"),
            &json!({"decision_type": "deny", "reason": "not now"}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let (_, body) = app.get_as("/api/approvals?state=decided", Some("tB")).await;
    let call = &body["decisions"][0]["calls"][0];
    assert_eq!(call["why"]["approvers"], json!(["group:sre"]));
    assert_eq!(call["why"]["quorum"], 2);
}

#[tokio::test]
async fn an_evaluation_error_asks_and_is_counted() {
    let app = app().await;
    // `modes` reads context.args.mode, which list_directory is not given: never a silent allow,
    // and never a silent deny either.
    let results = say_as(&app, "tA", "list files").await;
    assert_eq!(last_state(&results), "input-required", "{results:?}");
    let why = why_of(&results);
    assert_eq!(why["by"], "policy_error");
    assert!(why["reason"].as_str().unwrap().contains("mode"), "{why}");
    let metrics = app.client.get(app.url("/metrics")).send().await.unwrap();
    let text = metrics.text().await.unwrap();
    assert!(text.contains("signoff_policy_errors_total 1"), "{text}");
}

/// A shadow policy set is evaluated beside the live one: where it would decide otherwise the
/// disagreement is counted, and what happens is the live set's.
#[tokio::test]
async fn a_shadow_set_is_counted_never_enforced() {
    let data_dir = tempfile::tempdir().unwrap();
    let (live, shadow) = (data_dir.path().join("live"), data_dir.path().join("shadow"));
    std::fs::create_dir_all(&live).unwrap();
    std::fs::create_dir_all(&shadow).unwrap();
    std::fs::write(live.join("main.cedar"), POLICIES).unwrap();
    // The candidate forbids every write.
    std::fs::write(
        shadow.join("strict.cedar"),
        r#"@id("no-writes") forbid (principal, action, resource == Signoff::Tool::"write_file");"#,
    )
    .unwrap();
    let app = spawn_with_agents(AGENTS, move |config| {
        config.policies_dir = Some(live);
        config.shadow_policies_dir = Some(shadow);
        config.auth = signoff_server::AuthMode::Tokens;
        config.tokens = vec!["tA=alice:sre".into()];
        std::mem::forget(data_dir);
    })
    .await;
    let results = say_as(&app, "tA", "write notes/a.txt: hi").await;
    assert_eq!(last_state(&results), "completed", "the live set decides");
    let results = say_as(&app, "tA", "read notes/a.txt").await;
    assert_eq!(last_state(&results), "completed");
    let metrics = app.client.get(app.url("/metrics")).send().await.unwrap();
    let text = metrics.text().await.unwrap();
    assert!(
        text.contains("signoff_shadow_policy_disagreements_total 1"),
        "only the write: {text}"
    );
}

/// A person who edits a held call's arguments cannot edit it into what a forbid refuses.
#[tokio::test]
async fn edited_arguments_that_a_forbid_refuses_are_refused() {
    let app = app().await;
    let results = say_as(&app, "tB", "write todo.txt: hi").await;
    assert_eq!(last_state(&results), "input-required", "{results:?}");
    let task = task_id(&results);
    let edit = json!({"decision_type": "approve",
                      "modified_args": {"call_1": {"path": "secrets/key", "content": "x"}}});
    let (status, body) = decide_rest(&app, Some("tB"), &task, edit).await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(
        body["error"],
        "modified_args for call_1 (write_file) are denied by policy no-secrets: secrets/ is off \
         limits to agents; the call keeps waiting"
    );
    assert!(!app.sandbox().join("secrets/key").exists());
}

/// Waits until `task` (which the holder of `token` may read) has completed.
async fn completed(app: &TestApp, token: &str, task: &str) {
    within(&format!("task {task} to complete"), async {
        loop {
            let got = app
                .rpc_as(None, Some(token), request("tasks/get", json!({"id": task})))
                .await;
            match got["result"]["status"]["state"].as_str() {
                Some("completed") => return,
                Some("failed" | "canceled" | "rejected") => panic!("{got}"),
                _ => tokio::time::sleep(std::time::Duration::from_millis(50)).await,
            }
        }
    })
    .await;
}

/// The cedar app's agents and policies, with more people: erin (dev) starts the chats; alice,
/// dave and carol are in sre; frank is in oncall.
async fn routed_app(agents: &str) -> TestApp {
    let data_dir = tempfile::tempdir().unwrap();
    let policies = data_dir.path().join("policies");
    std::fs::create_dir_all(&policies).unwrap();
    std::fs::write(
        policies.join("main.cedar"),
        format!(
            "{POLICIES}\n\
             @id(\"oncall-writes\") @ask(\"a write in production\")\n\
             permit (principal, action, resource == Signoff::Tool::\"write_file\")\n\
             when {{ context.args.path like \"prod/*\" }};\n\
             @id(\"config-two-person\") @ask(\"configuration is reviewed by a second person\")\n\
             @approvers(\"group:sre\") @requester_may_approve(\"false\")\n\
             permit (principal, action, resource == Signoff::Tool::\"write_file\")\n\
             when {{ context.args.path like \"config/*\" }};\n"
        ),
    )
    .unwrap();
    let agents = agents.to_owned();
    spawn_with_agents(&agents, move |config| {
        config.policies_dir = Some(policies);
        config.auth = signoff_server::AuthMode::Tokens;
        config.tokens = vec![
            "tE=erin:dev".into(),
            "tA=alice:sre".into(),
            "tD=dave:sre".into(),
            "tC=carol:sre".into(),
            "tF=frank:oncall".into(),
        ];
        std::mem::forget(data_dir);
    })
    .await
}

/// A policy's ask with `@approvers` and `@quorum` goes through the same routing and quorum as
/// the agents file's approvers: only those approvers decide, in the number it says, and the
/// batch is in their inbox (not in anyone else's).
#[tokio::test]
async fn a_policys_ask_is_decided_by_its_approvers_with_its_quorum() {
    let app = routed_app(AGENTS).await;
    std::fs::create_dir_all(app.sandbox()).unwrap();
    std::fs::write(app.sandbox().join("old.txt"), "x").unwrap();
    let results = say_as(&app, "tE", "delete old.txt").await;
    assert_eq!(last_state(&results), "input-required", "{results:?}");
    assert_eq!(why_of(&results)["id"], "two-person-delete");
    let task = task_id(&results);
    let approve = json!({"decision_type": "approve"});

    // The requester is not in sre: she may not approve her own call.
    let (status, body) = decide_rest(&app, Some("tE"), &task, approve.clone()).await;
    assert_eq!(status, 403, "{body}");
    assert!(
        body["error"]
            .as_str()
            .unwrap_or_default()
            .contains("needs approval by group sre; 2 distinct approvals"),
        "{body}"
    );
    // Nor may frank, who is not in sre: he may not see the task (as for an unknown one), and
    // the batch is not in his inbox.
    let (status, body) = decide_rest(&app, Some("tF"), &task, approve.clone()).await;
    assert_eq!(status, 404, "{body}");
    let (_, inbox) = app.get_as("/api/approvals", Some("tF")).await;
    assert_eq!(inbox["approvals"], json!([]), "{inbox}");
    // It is in alice's, routed to her by the policy's approvers and quorum.
    let (_, inbox) = app.get_as("/api/approvals", Some("tA")).await;
    let routing = &inbox["approvals"][0]["routing"];
    assert_eq!(routing["requestedBy"], "erin", "{inbox}");
    assert_eq!(routing["eligibleBy"], json!(["group:sre"]));
    assert_eq!(routing["calls"][0]["approvers"], json!(["group:sre"]));
    assert_eq!(routing["calls"][0]["quorum"], 2);

    // One of two: nothing runs.
    let (status, body) = decide_rest(&app, Some("tA"), &task, approve.clone()).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["state"], "input-required", "{body}");
    assert_eq!(body["quorum"][0]["approvedBy"], json!(["alice"]));
    assert!(app.sandbox().join("old.txt").exists());
    // The second of sre runs it.
    let (status, body) = decide_rest(&app, Some("tD"), &task, approve.clone()).await;
    assert_eq!(status, 200, "{body}");
    completed(&app, "tE", &task).await;
    assert!(!app.sandbox().join("old.txt").exists());
    let (_, decided) = app.get_as("/api/approvals?state=decided", Some("tD")).await;
    let votes = &decided["decisions"][0]["calls"][0]["votes"];
    assert_eq!(votes[0]["by"], "alice", "{decided}");
    assert_eq!(votes[1]["by"], "dave", "{decided}");
    assert_eq!(votes[1]["eligibleBy"], json!(["group:sre"]));
}

/// A policy's ask that names no approvers goes to the agents file's approvers for the tool, as
/// an ask rule without approvers does; its own `@quorum` and `@approvers` override theirs.
#[tokio::test]
async fn a_policys_ask_without_approvers_takes_the_agents_files() {
    let agents = r#"
[[agents]]
name = "demo"
approvers = ["group:oncall"]

[[agents.tools]]
kind = "builtin_files"
require_approval = ["write_file", "delete_file"]
"#;
    let app = routed_app(agents).await;
    let results = say_as(&app, "tE", "write prod/a.txt: hi").await;
    assert_eq!(last_state(&results), "input-required", "{results:?}");
    assert_eq!(why_of(&results)["id"], "oncall-writes");
    let task = task_id(&results);
    let approve = json!({"decision_type": "approve"});
    let (status, body) = decide_rest(&app, Some("tA"), &task, approve.clone()).await;
    assert_eq!(status, 404, "alice is not in oncall: {body}");
    let (status, body) = decide_rest(&app, Some("tF"), &task, approve.clone()).await;
    assert_eq!(status, 200, "{body}");
    completed(&app, "tE", &task).await;
    assert!(app.sandbox().join("prod/a.txt").exists());

    // The delete policy's own approvers (sre) and quorum win over the agent's (oncall).
    std::fs::write(app.sandbox().join("old.txt"), "x").unwrap();
    let results = say_as(&app, "tE", "delete old.txt").await;
    let task = task_id(&results);
    let (status, _) = decide_rest(&app, Some("tF"), &task, approve.clone()).await;
    assert_eq!(
        status, 404,
        "frank is not in sre: the task is not his to see"
    );
    for token in ["tA", "tC"] {
        let (status, body) = decide_rest(&app, Some(token), &task, approve.clone()).await;
        assert_eq!(status, 200, "{body}");
    }
    completed(&app, "tE", &task).await;
    assert!(!app.sandbox().join("old.txt").exists());
}

/// `@requester_may_approve("false")` on an ask is the two-person rule, as the agents file's
/// `requester_may_approve = false`: alice is in sre, yet may not approve her own call (she may
/// still reject it); another of sre approves it, and the held call says so in its why.
#[tokio::test]
async fn a_policy_can_impose_the_two_person_rule() {
    let app = routed_app(AGENTS).await;
    let results = say_as(&app, "tA", "write config/a.txt: hi").await;
    assert_eq!(last_state(&results), "input-required", "{results:?}");
    let why = why_of(&results);
    assert_eq!(why["id"], "config-two-person", "{why}");
    assert_eq!(why["requesterMayApprove"], false, "{why}");
    assert_eq!(why["file"], "main.cedar", "{why}");
    let task = task_id(&results);
    let approve = json!({"decision_type": "approve"});
    let (status, body) = decide_rest(&app, Some("tA"), &task, approve.clone()).await;
    assert_eq!(
        status, 403,
        "the requester may not approve her own call: {body}"
    );
    let (_, inbox) = app.get_as("/api/approvals", Some("tD")).await;
    let call = &inbox["approvals"][0]["routing"]["calls"][0];
    assert_eq!(call["requesterMayApprove"], false, "{inbox}");
    assert_eq!(call["approvers"], json!(["group:sre"]), "{inbox}");
    assert!(!app.sandbox().join("config/a.txt").exists());
    let (status, body) = decide_rest(&app, Some("tD"), &task, approve).await;
    assert_eq!(status, 200, "{body}");
    completed(&app, "tA", &task).await;
    assert!(app.sandbox().join("config/a.txt").exists());

    // The rule binds only the approval: the requester may still reject her own call.
    let results = say_as(&app, "tA", "write config/b.txt: hi").await;
    let task = task_id(&results);
    let reject = json!({"decision_type": "reject", "reason": "not now"});
    let (status, body) = decide_rest(&app, Some("tA"), &task, reject).await;
    assert_eq!(status, 200, "{body}");
    assert!(!app.sandbox().join("config/b.txt").exists());
}

#[test]
fn a_file_nested_a_thousand_deep_is_refused_by_check_and_at_start_not_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let policies = dir.path().join("policies");
    std::fs::create_dir(&policies).unwrap();
    let deep = format!(
        "permit (principal, action, resource)\nwhen {{ {}true{} }};\n",
        "(".repeat(1000),
        ")".repeat(1000)
    );
    std::fs::write(policies.join("deep.cedar"), deep).unwrap();
    let data = dir.path().join("data");
    let check = ["policy", "check", "--policies"];
    let start = [
        "--addr",
        "127.0.0.1:0",
        "--data-dir",
        data.to_str().unwrap(),
        "--policies",
    ];
    for args in [&check[..], &start[..]] {
        let output = std::process::Command::new(env!("CARGO_BIN_EXE_signoff"))
            .args(args)
            .arg(&policies)
            .env_remove("SIGNOFF_DATABASE_URL")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        // An exit code, not a signal: the process ended, it did not overflow its stack.
        assert!(
            output.status.code().is_some_and(|code| code != 0),
            "{args:?}: {:?} {stderr}",
            output.status
        );
        assert!(
            stderr.contains("deep.cedar: line 2: brackets nest deeper than 32 levels"),
            "{args:?}: {stderr}"
        );
    }
}
