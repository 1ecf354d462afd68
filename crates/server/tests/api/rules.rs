//! Argument rules of the agents file: allow, ask and deny by argument, first match wins, the
//! fallback to `require_approval`, what the model and the audit see of a denial, and the
//! checks at start that name the offending field.

use serde_json::{json, Value};

use crate::support::*;

/// The demo agent with rules on `write_file`: `.git/**` denied, `notes/**` allowed, the rest
/// asked (its `require_approval`); `delete_file` allowed for small `count`s only (a number
/// rule), `read_file` asked for names that look like secrets (a regex rule).
pub const RULES: &str = r#"
[[agents]]
name = "demo"

[[agents.tools]]
kind = "builtin_files"
require_approval = ["write_file", "delete_file"]

[[agents.rules]]
tool = "write_file"
action = "deny"
when = { path = { glob = ".git/**" } }

[[agents.rules]]
tool = "write_file"
action = "allow"
when = { path = { glob = "notes/**" } }

[[agents.rules]]
tool = "read_file"
action = "ask"
when = { path = { regex = ".*secret.*" } }

[[agents.rules]]
tool = "delete_file"
action = "allow"
when = { path = { equals = "old.txt" } }
"#;

/// The last status of a stream's results.
fn last_state(results: &[Value]) -> String {
    states(results).last().cloned().unwrap_or_default()
}

#[tokio::test]
async fn an_allow_rule_runs_the_call_without_asking_and_says_which_rule() {
    let app = spawn_with_agents(RULES, |_| {}).await;
    let results = say(&app, "write notes/today.txt: hi").await;
    assert_eq!(last_state(&results), "completed", "{results:?}");
    assert_eq!(
        std::fs::read_to_string(app.sandbox().join("notes/today.txt")).unwrap(),
        "hi"
    );
    let call = function_call_parts(&results).pop().unwrap();
    assert_eq!(
        call["metadata"]["signoff_decided_by"],
        json!({"by": "rule", "rule": "#2 (write_file when path glob \"notes/**\")", "action": "allow"})
    );
    // `..` cannot smuggle a path out of an allowed folder: this one asks.
    let results = say(&app, "write notes/../top.txt: hi").await;
    assert_eq!(last_state(&results), "input-required");
}

#[tokio::test]
async fn a_deny_rule_refuses_without_asking_and_the_model_and_audit_are_told() {
    let app = spawn_with_agents(RULES, |_| {}).await;
    let results = say(&app, "write .git/config: evil").await;
    assert_eq!(
        last_state(&results),
        "completed",
        "never paused: {results:?}"
    );
    assert!(!app.sandbox().join(".git/config").exists());
    let label = "#1 (write_file when path glob \".git/**\")";
    let responses = data_parts(&results, "function_response");
    assert_eq!(
        responses[0]["response"],
        json!({"status": "denied", "rule": label,
               "message": format!("Denied by rule {label}; the call did not run.")})
    );
    assert!(
        answer_text(&results).contains(&format!(
            "A rule refused writing .git/config (rule {label})"
        )),
        "{}",
        answer_text(&results)
    );
    let (status, body) = app.get("/api/approvals?state=decided").await;
    assert_eq!(status, 200);
    let entry = &body["decisions"][0];
    assert_eq!(entry["channel"], "rule");
    assert_eq!(entry["summary"], format!("Denied by rule {label}"));
    assert_eq!(entry["calls"][0]["verdict"], "deny");
    assert_eq!(entry["calls"][0]["reason"], label);
    assert_eq!(entry["calls"][0]["result"]["status"], "denied");
    let task = app
        .rpc(None, request("tasks/get", json!({"id": task_id(&results)})))
        .await;
    assert_eq!(
        task["result"]["metadata"]["signoff_audit"][0]["channel"],
        "rule"
    );
}

#[tokio::test]
async fn the_first_matching_rule_wins_and_unmatched_calls_fall_back_to_require_approval() {
    let app = spawn_with_agents(RULES, |_| {}).await;
    // equals: old.txt is allowed; another file falls back to require_approval.
    let results = say(&app, "delete old.txt").await;
    assert_eq!(last_state(&results), "completed");
    assert!(!app.sandbox().join("old.txt").exists());
    let results = say(&app, "delete readme.txt").await;
    assert_eq!(last_state(&results), "input-required");
    // regex: an explicit ask on a tool that needs no approval otherwise.
    std::fs::write(app.sandbox().join("my-secret.txt"), "s").unwrap();
    let results = say(&app, "read my-secret.txt").await;
    assert_eq!(last_state(&results), "input-required");
    let results = say(&app, "read readme.txt").await;
    assert_eq!(last_state(&results), "completed");
    // One turn mixing them: the denied and allowed calls settle, ONE batch holds the rest.
    let results = say(
        &app,
        "write .git/x: 1 and write notes/y.txt: 2 and write z.txt: 3",
    )
    .await;
    assert_eq!(last_state(&results), "input-required");
    let held = &results.last().unwrap()["status"]["message"]["parts"][1]["data"]["action_requests"];
    assert_eq!(held.as_array().unwrap().len(), 1, "{held}");
    assert_eq!(held[0]["args"]["path"], "z.txt");
    let responses = data_parts(&results, "function_response");
    let statuses: Vec<&Value> = responses.iter().map(|r| &r["response"]["status"]).collect();
    assert_eq!(statuses, [&json!("denied"), &Value::Null], "{responses:?}");
}

/// Starts the server on `agents_toml`; the error it stops with.
async fn start_error(agents_toml: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let path = write_agents(dir.path(), agents_toml);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let mut config = signoff_server::Config::new(dir.path());
    config.agents_file = Some(path);
    let outcome = within(
        "the server to refuse",
        signoff_server::run(listener, config, async {}),
    )
    .await;
    outcome.unwrap_err().to_string()
}

#[tokio::test]
async fn bad_rules_stop_the_server_at_start_naming_the_field() {
    let base = "[[agents]]\nname = \"demo\"\n[[agents.tools]]\nkind = \"builtin_files\"\n";
    let cases = [
        (
            "[[agents.rules]]\ntool = \"write_file\"\naction = \"allow\"\nwhen = { path = { glob = \"a[b\" } }\n",
            "agents file: agents[0].rules[0].when.path: glob \"a[b\" has a [ without its ]",
        ),
        (
            "[[agents.rules]]\ntool = \"write_file\"\naction = \"allow\"\nwhen = { pth = { glob = \"a/**\" } }\n",
            "agents file: agents[0].rules[0].when.pth: write_file has no argument \"pth\" (its arguments: ",
        ),
        (
            "[[agents.rules]]\ntool = \"write_file\"\naction = \"maybe\"\n",
            "agents file: agents[0].rules[0].action: unknown variant `maybe`, expected one of `allow`, `ask`, `deny`",
        ),
        (
            "[[agents.rules]]\ntool = \"wrte_file\"\naction = \"deny\"\n",
            "agents file: agents[0].rules[0].tool: \"wrte_file\" is not an exposed tool of this agent",
        ),
        (
            "[[agents.rules]]\ntool = \"read_file\"\naction = \"deny\"\nwhen = { path = { regex = \"(\" } }\n",
            "agents file: agents[0].rules[0].when.path: regex \"(\" does not compile",
        ),
        (
            "[[agents.rules]]\ntool = \"read_file\"\naction = \"deny\"\nwhen = { path = { glob = \"a\", equals = \"a\" } }\n",
            "agents file: agents[0].rules[0].when.path: give exactly one of glob, equals, regex, min/max or any",
        ),
    ];
    for (rules, expected) in cases {
        let error = start_error(&format!("{base}{rules}")).await;
        assert!(
            error.contains(expected),
            "{rules}\n  got: {error}\n  expected: {expected}"
        );
    }
    let timeout = start_error(
        "[[agents]]\nname = \"demo\"\napproval_timeout = \"soon\"\n\
         [[agents.tools]]\nkind = \"builtin_files\"\n",
    )
    .await;
    assert!(
        timeout.contains("agents file: agents[0].approval_timeout: \"soon\" is not a duration"),
        "{timeout}"
    );
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

/// A person who edits a call's arguments cannot edit it into what a `deny` rule refuses: the
/// operator's rule holds for the arguments that would run, so such a decision is refused,
/// naming the rule, and nothing runs (it wrote `.git/config` before).
#[tokio::test]
async fn edited_arguments_that_a_deny_rule_refuses_are_refused() {
    let app = spawn_with_agents(RULES, |_| {}).await;
    let results = say(&app, "write todo.txt: hi").await;
    assert_eq!(last_state(&results), "input-required", "{results:?}");
    let task = task_id(&results);
    let edit = json!({"decision_type": "approve",
                      "modified_args": {"call_1": {"path": ".git/config", "content": "x"}}});
    let (status, body) = decide_rest(&app, None, &task, edit.clone()).await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(
        body["error"],
        "modified_args for call_1 (write_file) are denied by rule #1 (write_file when path glob \
         \".git/**\"); the call keeps waiting"
    );
    let context = context_id(&results);
    let got = app
        .rpc(
            None,
            message_request("message/send", decision(&task, &context, edit)),
        )
        .await;
    assert_eq!(got["error"]["code"], -32602, "{got}");
    assert!(!app.sandbox().join(".git/config").exists());
    assert_eq!(task_state(&app, &task).await, "input-required");
    // An edit the rules let through still runs.
    let (status, body) = decide_rest(
        &app,
        None,
        &task,
        json!({"decision_type": "approve",
               "modified_args": {"call_1": {"path": "done.txt", "content": "x"}}}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert!(app.sandbox().join("done.txt").exists());
}

/// A glob's `*` and `**` match any character within a name, a newline too: an edit to
/// `.git/hooks/x\npre-commit` is denied by the `.git/**` rule (it was approved and written).
/// And the file tools refuse a control character in a path whatever the rules allow.
#[tokio::test]
async fn a_newline_in_a_path_does_not_slip_past_a_deny_glob() {
    let app = spawn_with_agents(RULES, |_| {}).await;
    let results = say(&app, "write todo.txt: hi").await;
    assert_eq!(last_state(&results), "input-required", "{results:?}");
    let task = task_id(&results);
    let edit = json!({"decision_type": "approve",
                      "modified_args": {"call_1": {"path": ".git/hooks/x\npre-commit", "content": "x"}}});
    let (status, body) = decide_rest(&app, None, &task, edit).await;
    assert_eq!(status, 400, "{body}");
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .contains("are denied by rule #1 (write_file when path glob \".git/**\")"),
        "{body}"
    );
    assert!(!app.sandbox().join(".git").exists());
    // An edit no rule denies runs, and the file tool refuses the newline.
    let edit = json!({"decision_type": "approve",
                      "modified_args": {"call_1": {"path": "notes\nx.txt", "content": "x"}}});
    let (status, body) = decide_rest(&app, None, &task, edit).await;
    assert_eq!(status, 200, "{body}");
    let result = &body["decision"]["calls"][0]["result"];
    assert_eq!(result["isError"], true, "{body}");
    assert!(
        result["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("a path may not hold newlines"),
        "{result}"
    );
    assert!(!app.sandbox().join("notes\nx.txt").exists());
}

/// A rule cannot allow `ask_user`: its questions always wait for the person's answers.
#[tokio::test]
async fn a_rule_cannot_allow_questions() {
    let error = start_error(
        "[[agents]]\nname = \"demo\"\nask_user = true\n\
         [[agents.tools]]\nkind = \"builtin_files\"\n\
         [[agents.rules]]\ntool = \"ask_user\"\naction = \"allow\"\n",
    )
    .await;
    assert!(
        error.contains(
            "agents file: agents[0].rules[0].action: ask_user asks the person questions, which \
             always wait for their answers; a rule may ask or deny them, not allow them"
        ),
        "{error}"
    );
}
