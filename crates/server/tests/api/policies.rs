//! "Always allow" policies (`/api/policies`): chat and agent scopes, exact and folder
//! matchers, revoking, per-user isolation, the audit, and a deny rule that no policy overrides.

use serde_json::{json, Value};

use crate::support::*;

/// Says `text` in chat `context` (a new chat without one); the stream's results.
async fn say_in(
    app: &TestApp,
    token: Option<&str>,
    context: Option<&str>,
    text: &str,
) -> Vec<Value> {
    let body = message_request("message/stream", message_v03(text, None, context));
    results(&app.stream_as(None, token, body).await)
}

fn last_state(results: &[Value]) -> String {
    states(results).last().cloned().unwrap_or_default()
}

/// Makes a policy as the user of `token`; the answer's status and body.
async fn make(app: &TestApp, token: Option<&str>, policy: Value) -> (u16, Value) {
    app.post_json_as("/api/policies", token, &policy).await
}

/// The `signoff_decided_by` of every call and result part of a stream.
fn decided_by(results: &[Value]) -> Vec<Value> {
    results
        .iter()
        .filter_map(|result| result["status"]["message"]["parts"].as_array().cloned())
        .flatten()
        .filter_map(|part| part["metadata"].get("signoff_decided_by").cloned())
        .collect()
}

/// The `signoff_why` of every `function_call` part of a stream.
fn whys(results: &[Value]) -> Vec<Value> {
    results
        .iter()
        .filter_map(|result| result["status"]["message"]["parts"].as_array().cloned())
        .flatten()
        .filter(|part| part["metadata"]["kagent_type"] == "function_call")
        .filter_map(|part| part["metadata"].get("signoff_why").cloned())
        .collect()
}

#[tokio::test]
async fn a_chat_policy_with_exact_arguments_approves_only_that_call_in_that_chat() {
    let app = spawn_app().await;
    let first = say(&app, "write a.txt: 1").await;
    assert_eq!(last_state(&first), "input-required");
    let (task, context) = (task_id(&first), context_id(&first));
    let (status, policy) = make(
        &app,
        None,
        json!({"agent": "default/demo", "tool": "write_file", "scope": "chat",
               "context_id": context, "args": {"path": {"equals": "a.txt"}, "content": {"equals": "2"}}}),
    )
    .await;
    assert_eq!(status, 201, "{policy}");
    let id = policy["id"].as_str().unwrap().to_owned();
    assert_eq!(policy["scope"], "chat");
    assert_eq!(policy["context_id"], context.as_str());
    assert_eq!(policy["created_by"], "local");
    assert_eq!(
        policy["summary"],
        "write_file when content = \"2\" and path = \"a.txt\", in this chat"
    );
    let (status, _) = decide_rest(&app, None, &task, json!({"decision_type": "approve"})).await;
    assert_eq!(status, 200);

    // The same call in the same chat runs without a pause, marked with the policy.
    let again = say_in(&app, None, Some(&context), "write a.txt: 2").await;
    assert_eq!(last_state(&again), "completed", "{again:?}");
    assert_eq!(
        std::fs::read_to_string(app.sandbox().join("a.txt")).unwrap(),
        "2"
    );
    let marks = decided_by(&again);
    assert_eq!(marks.len(), 2, "on the call and on its result: {marks:?}");
    assert_eq!(marks[0]["by"], "policy");
    assert_eq!(marks[0]["policyId"], id.as_str());
    assert_eq!(marks[1], marks[0]);
    // Other arguments, or another chat: asked again.
    let other_args = say_in(&app, None, Some(&context), "write a.txt: 3").await;
    assert_eq!(last_state(&other_args), "input-required");
    let other_chat = say(&app, "write a.txt: 2").await;
    assert_eq!(last_state(&other_chat), "input-required");

    // The audit names the policy.
    let (_, decided) = app.get("/api/approvals?state=decided").await;
    let entry = decided["decisions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|entry| entry["channel"] == "policy")
        .unwrap()
        .clone();
    assert_eq!(entry["policyId"], id.as_str());
    assert_eq!(entry["taskId"], task_id(&again).as_str());
    assert_eq!(entry["calls"][0]["verdict"], "approve");
    assert_eq!(entry["calls"][0]["result"]["isError"], false);
    assert!(entry["summary"]
        .as_str()
        .unwrap()
        .starts_with("Allowed by your policy: "));
}

#[tokio::test]
async fn an_agent_policy_for_a_folder_applies_in_every_chat_until_revoked() {
    let app = spawn_app().await;
    let (status, policy) = make(
        &app,
        None,
        json!({"agent": "default/demo", "tool": "write_file", "scope": "agent",
               "args": {"path": {"glob": "notes/**"}}}),
    )
    .await;
    assert_eq!(status, 201, "{policy}");
    assert_eq!(policy["context_id"], Value::Null);
    assert_eq!(
        policy["summary"],
        "write_file with path under notes/, in every chat with default/demo"
    );
    let id = policy["id"].as_str().unwrap().to_owned();
    assert_eq!(
        last_state(&say(&app, "write notes/a.txt: 1").await),
        "completed"
    );
    assert_eq!(
        last_state(&say(&app, "write notes/deep/b.txt: 1").await),
        "completed"
    );
    assert_eq!(
        last_state(&say(&app, "write c.txt: 1").await),
        "input-required"
    );
    assert_eq!(
        last_state(&say(&app, "delete notes/a.txt").await),
        "input-required",
        "another tool"
    );

    let (status, list) = app.get("/api/policies").await;
    assert_eq!(status, 200);
    assert_eq!(list["policies"].as_array().unwrap().len(), 1);
    assert_eq!(list["policies"][0]["id"], id.as_str());
    assert_eq!(app.delete(&format!("/api/policies/{id}")).await, 204);
    assert_eq!(app.delete(&format!("/api/policies/{id}")).await, 404);
    let (_, list) = app.get("/api/policies").await;
    assert_eq!(list["policies"], json!([]));
    // The next call is asked again.
    assert_eq!(
        last_state(&say(&app, "write notes/e.txt: 1").await),
        "input-required"
    );
}

#[tokio::test]
async fn policies_belong_to_the_user_who_made_them() {
    let app = spawn_with(|config| {
        config.auth = signoff_server::AuthMode::Tokens;
        config.tokens = vec!["alice-token=alice".into(), "bob-token=bob".into()];
    })
    .await;
    let (alice, bob) = (Some("alice-token"), Some("bob-token"));
    let (status, policy) = make(
        &app,
        alice,
        json!({"agent": "default/demo", "tool": "write_file", "scope": "agent"}),
    )
    .await;
    assert_eq!(status, 201);
    assert_eq!(policy["created_by"], "alice");
    let id = policy["id"].as_str().unwrap().to_owned();
    assert_eq!(
        last_state(&say_in(&app, bob, None, "write b.txt: 1").await),
        "input-required"
    );
    assert_eq!(
        last_state(&say_in(&app, alice, None, "write a.txt: 1").await),
        "completed"
    );
    let (_, bobs) = app.get_as("/api/policies", bob).await;
    assert_eq!(bobs["policies"], json!([]));
    assert_eq!(
        app.delete_as(&format!("/api/policies/{id}"), bob).await,
        404
    );
    let (_, alices) = app.get_as("/api/policies", alice).await;
    assert_eq!(alices["policies"][0]["id"], id.as_str());
    // Bob cannot scope a policy to Alice's chat.
    let alice_chat = say_in(&app, alice, None, "list files").await;
    let (status, body) = make(
        &app,
        bob,
        json!({"agent": "default/demo", "tool": "write_file", "scope": "chat",
               "context_id": context_id(&alice_chat)}),
    )
    .await;
    assert_eq!(status, 400);
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .contains("is not one of your chats"),
        "{body}"
    );
}

#[tokio::test]
async fn bad_policies_are_refused_with_what_is_wrong_and_nothing_is_stored() {
    let app = spawn_app().await;
    let cases = [
        (
            json!({"agent": "default/demo", "tool": "rm_rf", "scope": "agent"}),
            400,
            "tool: \"rm_rf\" is not a tool of default/demo",
        ),
        (
            json!({"agent": "default/nobody", "tool": "write_file", "scope": "agent"}),
            404,
            "no agent default/nobody",
        ),
        (
            json!({"agent": "default/demo", "tool": "write_file", "scope": "chat"}),
            400,
            "context_id: a chat policy names its chat",
        ),
        (
            json!({"agent": "default/demo", "tool": "write_file", "scope": "agent", "context_id": "x"}),
            400,
            "leave context_id out",
        ),
        (
            json!({"agent": "default/demo", "tool": "write_file", "scope": "chat", "context_id": "nope"}),
            400,
            "nope is not one of your chats",
        ),
        (
            json!({"agent": "default/demo", "tool": "write_file", "scope": "agent", "args": {"path": {"glob": "a["}}}),
            400,
            "args.path: glob \"a[\" has a [ without its ]",
        ),
        (
            json!({"agent": "default/demo", "tool": "write_file", "scope": "agent", "args": {"pth": {"glob": "a/**"}}}),
            400,
            "args.pth: write_file has no argument \"pth\"",
        ),
        (
            json!({"agent": "default/demo", "tool": "write_file", "scope": "agent", "args": {"path": {"glob": "a", "equals": "b"}}}),
            400,
            "args.path: give exactly one of",
        ),
        (
            // Not a regex alone; wrapped as `^(?:…)$` it matched every path.
            json!({"agent": "default/demo", "tool": "write_file", "scope": "agent", "args": {"path": {"regex": "notes/.*)|(?:"}}}),
            400,
            "args.path: regex \"notes/.*)|(?:\" does not compile",
        ),
        (
            // Accepted before, and compiled again on every turn for about 45 ms.
            json!({"agent": "default/demo", "tool": "write_file", "scope": "agent", "args": {"path": {"regex": "(\\w+\\s*){200}"}}}),
            400,
            "is too complex: it compiles to more than 262144 bytes",
        ),
        (
            json!({"agent": "default/demo", "tool": "write_file", "scope": "agent", "args": {"path": {"regex": "a".repeat(1025)}}}),
            400,
            "args.path: regex is 1025 bytes long; the limit is 1024",
        ),
        (
            json!({"agent": "default/demo", "tool": "write_file", "scope": "agent", "args": {"path": {"glob": "a".repeat(1025)}}}),
            400,
            "args.path: glob is 1025 bytes long; the limit is 1024",
        ),
        (
            json!({"agent": "default/demo", "tool": "ask_user", "scope": "agent"}),
            400,
            "tool: ask_user asks you questions, which always wait for your answers",
        ),
        (
            json!({"agent": "default/demo", "tool": "write_file", "scope": "forever"}),
            400,
            "invalid policy: scope: unknown variant `forever`",
        ),
        (
            json!({"agent": "default/demo", "tool": "write_file", "scope": "agent", "colour": 1}),
            400,
            "unknown field `colour`",
        ),
    ];
    for (body, status, message) in cases {
        let (got, answer) = make(&app, None, body.clone()).await;
        assert_eq!(got, status, "{body} -> {answer}");
        let error = answer["error"].as_str().unwrap();
        assert!(
            error.contains(message),
            "{body}\n  got: {error}\n  expected: {message}"
        );
    }
    let (_, list) = app.get("/api/policies").await;
    assert_eq!(list["policies"], json!([]));
}

#[tokio::test]
async fn a_deny_rule_wins_over_a_policy() {
    let app = spawn_with_agents(crate::rules::RULES, |_| {}).await;
    let (status, _) = make(
        &app,
        None,
        json!({"agent": "default/demo", "tool": "write_file", "scope": "agent"}),
    )
    .await;
    assert_eq!(status, 201);
    let results = say(&app, "write .git/config: x").await;
    let responses = data_parts(&results, "function_response");
    assert_eq!(responses[0]["response"]["status"], "denied");
    // Where the rules ask, the policy answers.
    assert_eq!(
        last_state(&say(&app, "write top.txt: 1").await),
        "completed"
    );
}

/// A negated class stays within one folder: `notes[!x]*` approved `notes/deep.txt`.
#[tokio::test]
async fn a_negated_class_does_not_cross_folders() {
    let app = spawn_app().await;
    let (status, policy) = make(
        &app,
        None,
        json!({"agent": "default/demo", "tool": "write_file", "scope": "agent",
               "args": {"path": {"glob": "notes[!x]*"}}}),
    )
    .await;
    assert_eq!(status, 201, "{policy}");
    assert_eq!(
        last_state(&say(&app, "write notes/deep.txt: 1").await),
        "input-required"
    );
    assert!(!app.sandbox().join("notes/deep.txt").exists());
    assert_eq!(
        last_state(&say(&app, "write notes-a.txt: 1").await),
        "completed"
    );
    assert_eq!(
        last_state(&say(&app, "write notesx.txt: 1").await),
        "input-required"
    );
}

/// A person has at most `--max-policies` policies in force; revoking one makes room.
#[tokio::test]
async fn policies_per_person_are_capped() {
    let app = spawn_with(|config| config.max_policies_per_user = 2).await;
    let policy = |path: &str| {
        json!({"agent": "default/demo", "tool": "write_file", "scope": "agent",
               "args": {"path": {"equals": path}}})
    };
    let (status, first) = make(&app, None, policy("a.txt")).await;
    assert_eq!(status, 201, "{first}");
    let (status, _) = make(&app, None, policy("b.txt")).await;
    assert_eq!(status, 201);
    let (status, body) = make(&app, None, policy("c.txt")).await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(
        body["error"],
        "you have 2 policies in force, the most one person may have (--max-policies); revoke \
         one you no longer need first"
    );
    let (_, list) = app.get("/api/policies").await;
    assert_eq!(list["policies"].as_array().unwrap().len(), 2);
    let id = first["id"].as_str().unwrap();
    assert_eq!(app.delete(&format!("/api/policies/{id}")).await, 204);
    let (status, _) = make(&app, None, policy("c.txt")).await;
    assert_eq!(status, 201, "a revoked policy no longer counts");
}

/// A policy for `ask_user` stored before such policies were refused never answers a question:
/// the question still waits for the person.
#[tokio::test]
async fn a_stored_policy_for_questions_never_answers_them() {
    let app = spawn_app().await;
    // The server is up, its database migrated.
    assert_eq!(app.get("/api/policies").await.0, 200);
    sql_execute(
        app.data_dir.path(),
        &[
            "INSERT INTO policies (id, user_id, agent, tool, scope, context_id, args, created_by, \
           created_at) VALUES ('old-ask', 'local', 'default/demo', 'ask_user', 'agent', NULL, \
           NULL, 'local', '2024-01-01T00:00:00Z')",
        ],
    )
    .await;
    let results = say(&app, "ask Which database? PostgreSQL / SQLite").await;
    assert_eq!(last_state(&results), "input-required", "{results:?}");
    assert!(decided_by(&results).is_empty(), "{results:?}");
}

/// Deleting a chat deletes the policies scoped to it; an agent policy stays.
#[tokio::test]
async fn deleting_a_chat_deletes_its_policies() {
    let app = spawn_app().await;
    let chat = say(&app, "list files").await;
    let context = context_id(&chat);
    let (status, scoped) = make(
        &app,
        None,
        json!({"agent": "default/demo", "tool": "write_file", "scope": "chat", "context_id": context}),
    )
    .await;
    assert_eq!(status, 201, "{scoped}");
    let (status, agent_wide) = make(
        &app,
        None,
        json!({"agent": "default/demo", "tool": "delete_file", "scope": "agent"}),
    )
    .await;
    assert_eq!(status, 201, "{agent_wide}");
    assert_eq!(app.delete(&format!("/api/sessions/{context}")).await, 204);
    let (_, list) = app.get("/api/policies").await;
    let ids: Vec<&Value> = list["policies"]
        .as_array()
        .unwrap()
        .iter()
        .map(|policy| &policy["id"])
        .collect();
    assert_eq!(ids, [&agent_wide["id"]]);
    let left = sql_count(
        app.data_dir.path(),
        "SELECT COUNT(*) FROM policies WHERE context_id = ?1",
        &context,
    )
    .await;
    assert_eq!(left, 0, "the row is gone, revoked or not");
    // A policy for the deleted chat cannot be made afterwards.
    let (status, body) = make(
        &app,
        None,
        json!({"agent": "default/demo", "tool": "write_file", "scope": "chat", "context_id": context}),
    )
    .await;
    assert_eq!(status, 400, "{body}");
}

/// A grant for two calls allows two, says what is left, then stops applying; a grant for an
/// hour says until when; a grant for no calls or no time is refused with a clear error.
#[tokio::test]
async fn a_counted_grant_stops_after_its_uses_and_shows_what_is_left() {
    let app = spawn_app().await;
    let (status, policy) = make(
        &app,
        None,
        json!({"agent": "default/demo", "tool": "write_file", "scope": "agent", "uses": 2}),
    )
    .await;
    assert_eq!(status, 201, "{policy}");
    assert_eq!(policy["uses_left"], 2);
    assert_eq!(
        policy["summary"],
        "write_file with any arguments, in every chat with default/demo, 2 more calls"
    );
    // Each call's why names the grant and what is left of it after the call.
    for (n, left) in [(1, "1 more call"), (2, "no more calls")] {
        let results = say(&app, &format!("write g{n}.txt: x")).await;
        assert_eq!(last_state(&results), "completed", "use {n}: {results:?}");
        let why = whys(&results).pop().unwrap();
        assert_eq!(why["by"], "grant", "{why}");
        assert_eq!(why["id"], policy["id"], "{why}");
        assert_eq!(
            why["summary"],
            format!("write_file with any arguments, in every chat with default/demo, {left}")
        );
    }
    let (_, listed) = app.get("/api/policies").await;
    assert_eq!(listed["policies"], json!([]), "spent: {listed}");
    let results = say(&app, "write g3.txt: x").await;
    assert_eq!(last_state(&results), "input-required");

    let (status, hour) = make(
        &app,
        None,
        json!({"agent": "default/demo", "tool": "write_file", "scope": "agent",
               "expires_in_secs": 3600}),
    )
    .await;
    assert_eq!(status, 201, "{hour}");
    let until = hour["expires_at"].as_str().unwrap().to_owned();
    assert!(hour["summary"]
        .as_str()
        .unwrap()
        .ends_with(&format!(", until {until}")));
    for bad in [json!({"uses": 0}), json!({"expires_in_secs": 0})] {
        let mut body = json!({"agent": "default/demo", "tool": "write_file", "scope": "agent"});
        body.as_object_mut()
            .unwrap()
            .extend(bad.as_object().unwrap().clone());
        let (status, answer) = make(&app, None, body).await;
        assert_eq!(status, 400, "{answer}");
        assert!(
            answer["error"]
                .as_str()
                .unwrap()
                .contains("approves nothing"),
            "{answer}"
        );
    }
}
