//! Subagents: an agent that uses another as a tool pauses with the subagent's calls nested in
//! its batch; decisions on it are forwarded, the subagent's calls run once, the parent completes
//! with the subagent's answer; cancel goes down; depth is limited.

use serde_json::{json, Value};

use crate::support::*;

const BOSS: &str = "/api/a2a/default/boss";

/// The interrupt's action requests of the last status of `results`.
fn action_requests(results: &[Value]) -> Vec<Value> {
    let interrupts = data_parts(results, "interrupt_data");
    let last = interrupts.last().expect("an interrupt");
    last["action_requests"].as_array().unwrap().clone()
}

/// The subagent's task that the first nested call of the last interrupt in `results` asks through.
fn subagent_task(results: &[Value]) -> String {
    action_requests(results)[0]["metadata"]["subagent"]["task_id"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// Cancels the boss's task `task` over A2A and checks it says canceled.
async fn cancel_boss_task(app: &TestApp, task: &str) {
    let canceled = app
        .rpc_at(BOSS, None, request("tasks/cancel", json!({"id": task})))
        .await;
    assert_eq!(
        canceled["result"]["status"]["state"], "canceled",
        "{canceled}"
    );
}

/// A new chat with the boss: `text` sent, the stream's results.
async fn ask_boss(app: &TestApp, text: &str) -> Vec<Value> {
    send_stream(app, BOSS, message_v03(text, None, None)).await
}

/// How many results of `call_id` the task's log holds.
async fn results_logged(app: &TestApp, task: &str, call_id: &str) -> i64 {
    sql_count(
        app.data_dir.path(),
        &format!(
            "SELECT COUNT(*) FROM task_events WHERE task_id = ?1 \
             AND event LIKE '%function_response%' AND event LIKE '%\"id\":\"{call_id}\"%'"
        ),
        task,
    )
    .await
}

#[tokio::test]
async fn a_subagents_calls_pause_the_parent_nested_and_a_mixed_decision_is_forwarded() {
    let app = spawn_app().await;
    let paused = ask_boss(
        &app,
        "delegate default/demo: write a.txt: one and write b.txt: two",
    )
    .await;
    assert_eq!(states(&paused).last().unwrap(), "input-required");
    let (task, context) = (task_id(&paused), context_id(&paused));
    let requests = action_requests(&paused);
    let ids: Vec<&str> = requests.iter().map(|r| r["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["call_1/call_1", "call_1/call_2"]);
    let via = &requests[0]["metadata"]["subagent"];
    assert_eq!(via["agent"], "default/demo");
    assert_eq!(via["asker"], "default/demo");
    assert_eq!(via["call_id"], "call_1");
    assert_eq!(via["subagent_call_id"], "call_1");
    assert_eq!(requests[0]["name"], "write_file");
    assert_eq!(
        requests[1]["args"],
        json!({"path": "b.txt", "content": "two"})
    );
    let child = via["task_id"].as_str().unwrap().to_owned();
    assert_eq!(task_state(&app, &child).await, "input-required");
    // The inbox lists the parent's batch only: the subagent's is decided there.
    let (_, inbox) = app.get("/api/approvals").await;
    let listed: Vec<&str> = inbox["approvals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|batch| batch["taskId"].as_str().unwrap())
        .collect();
    assert_eq!(listed, [task.as_str()]);
    // The agent-tool call, then the nested calls, are in the parent's log.
    let calls = data_parts(&paused, "function_call");
    assert_eq!(calls[0]["name"], "default__demo");
    assert_eq!(
        calls[0]["args"],
        json!({"request": "write a.txt: one and write b.txt: two"})
    );
    assert_eq!(calls[1]["id"], "call_1/call_1");

    let decided = send_stream(
        &app,
        BOSS,
        decision(
            &task,
            &context,
            json!({"decision_type": "batch",
                   "decisions": {"call_1/call_1": "approve", "call_1/call_2": "deny"},
                   "rejection_reasons": {"call_1/call_2": "not b"},
                   "modified_args": {"call_1/call_1": {"path": "a.txt", "content": "edited"}}}),
        ),
    )
    .await;
    assert_eq!(states(&decided).last().unwrap(), "completed");
    let answer = answer_text(&decided);
    assert!(
        answer.contains(
            "The agent answered: I wrote a.txt. (You edited the arguments before it ran.)"
        ),
        "{answer}"
    );
    assert!(
        answer.contains("You rejected writing b.txt: \"not b\"."),
        "{answer}"
    );
    assert_eq!(
        std::fs::read_to_string(app.sandbox().join("a.txt")).unwrap(),
        "edited"
    );
    assert!(!app.sandbox().join("b.txt").exists());
    wait_for_state(&app, &child, "completed").await;
    // Each call ran once: one result in the subagent's log, mirrored once in the parent's.
    assert_eq!(results_logged(&app, &child, "call_1").await, 1);
    assert_eq!(results_logged(&app, &task, "call_1/call_1").await, 1);
    // The parent's audit has the nested calls with who asked through whom.
    let (_, audit) = app.get("/api/approvals?state=decided").await;
    let entries = audit["decisions"].as_array().unwrap();
    let parent_entry = entries
        .iter()
        .find(|entry| entry["taskId"] == task.as_str())
        .unwrap();
    let nested: Vec<&str> = parent_entry["calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|call| call["id"].as_str().unwrap())
        .collect();
    assert_eq!(nested, ["call_1/call_1", "call_1/call_2"]);
    let child_entry = entries
        .iter()
        .find(|entry| entry["taskId"] == child.as_str())
        .unwrap();
    assert_eq!(
        child_entry["parent"],
        json!({"taskId": task, "callId": "call_1", "agent": "default/boss"})
    );
    assert_eq!(child_entry["calls"][1]["reason"], "not b");
}

#[tokio::test]
async fn edited_arguments_that_do_not_fit_the_subagents_tool_are_refused_on_the_parent() {
    let app = spawn_app().await;
    let paused = ask_boss(&app, "delegate default/demo: write e.txt: one").await;
    let task = task_id(&paused);
    let (status, body) = decide_rest(
        &app,
        None,
        &task,
        json!({"decision_type": "approve",
               "modified_args": {"call_1/call_1": {"path": "e.txt", "colour": "red"}}}),
    )
    .await;
    assert_eq!(status, 400, "{body}");
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .contains("do not fit the tool's input schema"),
        "{body}"
    );
    assert_eq!(task_state_at(&app, &task).await, "input-required");
    assert!(!app.sandbox().join("e.txt").exists());
}

/// The state of a boss task as `tasks/get` shows it.
async fn task_state_at(app: &TestApp, task: &str) -> Value {
    let got = app
        .rpc_at(BOSS, None, request("tasks/get", json!({"id": task})))
        .await;
    got["result"]["status"]["state"].clone()
}

#[tokio::test]
async fn approve_all_over_rest_on_the_parent_approves_the_nested_calls() {
    let app = spawn_app().await;
    let paused = ask_boss(&app, "delegate default/demo: write sub.txt: hi").await;
    let task = task_id(&paused);
    let (status, body) = decide_rest(&app, None, &task, json!({"decision_type": "approve"})).await;
    assert_eq!(status, 200, "{body}");
    let done = wait_for_state_at(&app, BOSS, &task, "completed").await;
    let said: String = done["artifacts"][0]["parts"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|part| part["text"].as_str())
        .collect();
    assert_eq!(said, "The agent answered: I wrote sub.txt.");
    assert_eq!(
        std::fs::read_to_string(app.sandbox().join("sub.txt")).unwrap(),
        "hi"
    );
}

#[tokio::test]
async fn a_subagent_that_pauses_again_pauses_the_parent_again() {
    let app = spawn_app().await;
    let paused = ask_boss(
        &app,
        "delegate default/demo: write one.txt: 1 then write two.txt: 2",
    )
    .await;
    let (task, context) = (task_id(&paused), context_id(&paused));
    assert_eq!(action_requests(&paused)[0]["id"], "call_1/call_1");
    let again = send_stream(
        &app,
        BOSS,
        decision(&task, &context, json!({"decision_type": "approve"})),
    )
    .await;
    assert_eq!(states(&again).last().unwrap(), "input-required");
    assert_eq!(action_requests(&again)[0]["id"], "call_1/call_2");
    let done = send_stream(
        &app,
        BOSS,
        decision(&task, &context, json!({"decision_type": "approve"})),
    )
    .await;
    assert_eq!(states(&done).last().unwrap(), "completed");
    assert!(app.sandbox().join("one.txt").exists());
    assert!(app.sandbox().join("two.txt").exists());
}

#[tokio::test]
async fn cancel_of_the_parent_cancels_the_subagents_task() {
    let app = spawn_app().await;
    let paused = ask_boss(&app, "delegate default/demo: write c.txt: no").await;
    let task = task_id(&paused);
    let child = subagent_task(&paused);
    cancel_boss_task(&app, &task).await;
    wait_for_state(&app, &child, "canceled").await;
    assert!(!app.sandbox().join("c.txt").exists());
    assert!(listed_approvals(&app).await.is_empty());
}

const CHAIN: &str = r#"
[[agents]]
name = "top"
agents = ["default/middle"]

[[agents]]
name = "middle"
agents = ["default/demo"]

[[agents]]
name = "demo"
ask_user = true
[[agents.tools]]
kind = "builtin_files"
require_approval = ["write_file"]
"#;

#[tokio::test]
async fn calls_two_levels_down_bubble_up_and_depth_is_limited() {
    let app = spawn_with_agents(CHAIN, |_| {}).await;
    let top = "/api/a2a/default/top";
    let paused = send_stream(
        &app,
        top,
        message_v03(
            "delegate default/middle: delegate default/demo: write deep.txt: x",
            None,
            None,
        ),
    )
    .await;
    let requests = action_requests(&paused);
    assert_eq!(requests[0]["id"], "call_1/call_1/call_1");
    assert_eq!(
        requests[0]["metadata"]["subagent"]["agent"],
        "default/middle"
    );
    assert_eq!(requests[0]["metadata"]["subagent"]["asker"], "default/demo");
    let (task, context) = (task_id(&paused), context_id(&paused));
    let done = send_stream(
        &app,
        top,
        decision(&task, &context, json!({"decision_type": "approve"})),
    )
    .await;
    assert_eq!(states(&done).last().unwrap(), "completed");
    assert_eq!(
        std::fs::read_to_string(app.sandbox().join("deep.txt")).unwrap(),
        "x"
    );

    let shallow = spawn_with_agents(CHAIN, |config| config.max_subagent_depth = 1).await;
    let refused = send_stream(
        &shallow,
        top,
        message_v03(
            "delegate default/middle: delegate default/demo: write deep.txt: x",
            None,
            None,
        ),
    )
    .await;
    assert_eq!(states(&refused).last().unwrap(), "completed");
    let answer = answer_text(&refused);
    assert!(
        answer.contains("subagents may nest 1 deep, and this call would be 2 deep"),
        "{answer}"
    );
    assert!(!shallow.sandbox().join("deep.txt").exists());
}

#[tokio::test]
async fn a_cycle_of_subagents_is_refused_when_the_file_is_loaded() {
    let dir = tempfile::tempdir().unwrap();
    let agents = write_agents(
        dir.path(),
        "[[agents]]\nname = \"a\"\nagents = [\"default/b\"]\n\
         [[agents]]\nname = \"b\"\nagents = [\"default/a\"]\n",
    );
    let mut config = signoff_server::Config::new(dir.path());
    config.agents_file = Some(agents);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let err = signoff_server::run(listener, config, std::future::pending())
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("subagents form a cycle: default/a -> default/b -> default/a"),
        "{err}"
    );
}

/// A parent server whose boss uses the demo agent of `remote` (another server) as a subagent.
async fn parent_of(remote: &TestApp) -> TestApp {
    let agents = format!(
        "[[agents]]\nname = \"far\"\nnamespace = \"remote\"\n\
         remote = {{ url = \"{}/api/a2a/default/demo\" }}\n\
         [[agents]]\nname = \"boss\"\nagents = [\"remote/far\"]\n",
        remote.base
    );
    spawn_with_agents(&agents, |_| {}).await
}

#[tokio::test]
async fn a_remote_subagent_pauses_the_parent_over_a2a_and_takes_its_decisions() {
    let remote = spawn_app().await;
    let app = parent_of(&remote).await;
    let paused = ask_boss(
        &app,
        "delegate remote/far: write r.txt: one and write s.txt: two",
    )
    .await;
    assert_eq!(states(&paused).last().unwrap(), "input-required");
    let (task, context) = (task_id(&paused), context_id(&paused));
    let requests = action_requests(&paused);
    let ids: Vec<&str> = requests.iter().map(|r| r["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["call_1/call_1", "call_1/call_2"]);
    assert_eq!(requests[0]["metadata"]["subagent"]["agent"], "remote/far");
    let remote_task = requests[0]["metadata"]["subagent"]["task_id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(task_state(&remote, &remote_task).await, "input-required");

    let decided = send_stream(
        &app,
        BOSS,
        decision(
            &task,
            &context,
            json!({"decision_type": "batch",
                   "decisions": {"call_1/call_1": "approve", "call_1/call_2": "deny"},
                   "rejection_reasons": {"call_1/call_2": "not s"}}),
        ),
    )
    .await;
    assert_eq!(states(&decided).last().unwrap(), "completed");
    let answer = answer_text(&decided);
    assert!(
        answer.contains("The agent answered: I wrote r.txt."),
        "{answer}"
    );
    assert!(
        answer.contains("You rejected writing s.txt: \"not s\"."),
        "{answer}"
    );
    assert_eq!(
        std::fs::read_to_string(remote.sandbox().join("r.txt")).unwrap(),
        "one"
    );
    assert!(!remote.sandbox().join("s.txt").exists());
    assert!(!app.sandbox().join("r.txt").exists());
    assert_eq!(results_logged(&remote, &remote_task, "call_1").await, 1);
    assert_eq!(results_logged(&app, &task, "call_1/call_1").await, 1);
}

#[tokio::test]
async fn approve_all_and_cancel_reach_a_remote_subagent() {
    let remote = spawn_app().await;
    let app = parent_of(&remote).await;
    let paused = ask_boss(&app, "delegate remote/far: write all.txt: yes").await;
    let task = task_id(&paused);
    let (status, body) = decide_rest(&app, None, &task, json!({"decision_type": "approve"})).await;
    assert_eq!(status, 200, "{body}");
    wait_for_state_at(&app, BOSS, &task, "completed").await;
    assert_eq!(
        std::fs::read_to_string(remote.sandbox().join("all.txt")).unwrap(),
        "yes"
    );

    let paused = ask_boss(&app, "delegate remote/far: write never.txt: no").await;
    let task = task_id(&paused);
    let remote_task = subagent_task(&paused);
    cancel_boss_task(&app, &task).await;
    wait_for_state(&remote, &remote_task, "canceled").await;
    assert!(!remote.sandbox().join("never.txt").exists());
}

#[tokio::test]
async fn a_restart_between_the_pause_and_the_decision_goes_on_with_the_same_subagent_task() {
    let app = spawn_app().await;
    let paused = ask_boss(&app, "delegate default/demo: write after.txt: restarted").await;
    let (task, context) = (task_id(&paused), context_id(&paused));
    let child = subagent_task(&paused);
    let app = spawn_in(app.stop().await, |_| {}).await;
    let done = send_stream(
        &app,
        BOSS,
        decision(&task, &context, json!({"decision_type": "approve"})),
    )
    .await;
    assert_eq!(states(&done).last().unwrap(), "completed");
    assert!(answer_text(&done).contains("I wrote after.txt."));
    wait_for_state(&app, &child, "completed").await;
    assert_eq!(results_logged(&app, &child, "call_1").await, 1);
    // One subagent task: the restarted runner found the stored link.
    assert_eq!(
        sql_count(
            app.data_dir.path(),
            "SELECT COUNT(*) FROM subagent_tasks WHERE parent_task_id = ?1",
            &task
        )
        .await,
        1
    );
}

#[tokio::test]
async fn the_approvals_stream_tells_of_the_parents_batch_only() {
    let app = spawn_app().await;
    let mut stream = open_approvals(&app, None, None).await;
    let paused = ask_boss(&app, "delegate default/demo: write a.txt: one").await;
    let parent = task_id(&paused);
    let child = subagent_task(&paused);
    let first = stream.next_event().await;
    assert_eq!(first.about(), ("pending".to_owned(), parent.clone()));
    assert_eq!(first.data()["agent"], "default/boss");

    let (status, _) = decide_rest(&app, None, &parent, json!({"decision_type": "approve"})).await;
    assert_eq!(status, 200);
    // A later pause of another chat marks the end: every event before it is about the parent.
    let later = send_stream(
        &app,
        "/api/a2a/default/demo",
        message_v03("write later.txt: x", None, None),
    )
    .await;
    let later = task_id(&later);
    let mut seen = Vec::new();
    loop {
        let (kind, task) = stream.next_event().await.about();
        if task == later {
            assert_eq!(kind, "pending");
            break;
        }
        seen.push((kind, task));
    }
    assert_eq!(
        seen,
        [("decided".to_owned(), parent)],
        "child {child} told of"
    );
}

/// A subagent's task shows in its own chat (for the same user), paused with the calls that wait
/// in its parent's batch; deciding or canceling it there would run or drop those calls behind
/// the parent's back (whose batch would still wait for them, and audit a later decision of its
/// own as if nothing had run), so it is refused, naming the parent, and changes nothing.
#[tokio::test]
async fn a_subagents_task_takes_no_decision_or_cancel_of_its_own() {
    let app = spawn_app().await;
    let paused = ask_boss(&app, "delegate default/demo: write own.txt: hi").await;
    let (task, context) = (task_id(&paused), context_id(&paused));
    let child = subagent_task(&paused);
    let child_context = app
        .rpc(None, request("tasks/get", json!({"id": child})))
        .await["result"]["contextId"]
        .as_str()
        .unwrap()
        .to_owned();

    let (status, body) = decide_rest(&app, None, &child, json!({"decision_type": "approve"})).await;
    assert_eq!(status, 409, "{body}");
    let said = body["error"].as_str().unwrap();
    assert!(said.contains(&task), "{body}");
    for message in [
        decision(&child, &child_context, json!({"decision_type": "approve"})),
        message_v03("yes", Some(&child), None),
        message_v03("no, not that", Some(&child), None),
    ] {
        let got = app
            .rpc(None, message_request("message/send", message))
            .await;
        assert_eq!(got["error"]["code"], -32602, "{got}");
        assert!(
            got["error"]["message"].as_str().unwrap().contains(&task),
            "{got}"
        );
    }
    let canceled = app
        .rpc(None, request("tasks/cancel", json!({"id": child})))
        .await;
    assert_eq!(canceled["error"]["code"], -32002, "{canceled}");
    assert!(
        canceled["error"]["message"]
            .as_str()
            .unwrap()
            .contains(&task),
        "{canceled}"
    );

    // Nothing changed: both wait, nothing ran, and the parent's decision still drives the child.
    assert_eq!(task_state(&app, &child).await, "input-required");
    assert_eq!(task_state_at(&app, &task).await, "input-required");
    assert!(!app.sandbox().join("own.txt").exists());
    let done = send_stream(
        &app,
        BOSS,
        decision(
            &task,
            &context,
            json!({"decision_type": "deny", "reason": "not now"}),
        ),
    )
    .await;
    assert_eq!(states(&done).last().unwrap(), "completed");
    assert!(!app.sandbox().join("own.txt").exists());
    wait_for_state(&app, &child, "completed").await;
}

/// The chat (contextId) of a demo agent's task.
async fn context_of(app: &TestApp, task: &str) -> String {
    app.rpc(None, request("tasks/get", json!({"id": task})))
        .await["result"]["contextId"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// The task ids `GET /api/approvals` lists as waiting.
async fn listed_approvals(app: &TestApp) -> Vec<String> {
    let (status, inbox) = app.get("/api/approvals").await;
    assert_eq!(status, 200, "{inbox}");
    inbox["approvals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|batch| batch["taskId"].as_str().unwrap().to_owned())
        .collect()
}

/// Deleting a subagent's chat while its parent waits would leave the parent's batch deciding
/// calls of a task that is gone (and approving it made the task again, behind everyone's back):
/// it is refused, naming the parent's task and chat, and nothing changes. Once the parent has
/// ended, the chat is an ordinary one and deletes.
#[tokio::test]
async fn a_subagents_chat_is_not_deleted_while_its_parent_waits() {
    let app = spawn_app().await;
    let paused = ask_boss(&app, "delegate default/demo: write kept.txt: hi").await;
    let (task, context) = (task_id(&paused), context_id(&paused));
    let child = subagent_task(&paused);
    let child_context = context_of(&app, &child).await;

    let (status, body) = app
        .delete_json(&format!("/api/sessions/{child_context}"))
        .await;
    assert_eq!(status, 409, "{body}");
    let said = body["error"].as_str().unwrap();
    assert!(said.contains(&task) && said.contains(&context), "{body}");
    let (status, _) = app.get(&format!("/api/sessions/{child_context}")).await;
    assert_eq!(status, 200);
    assert_eq!(task_state(&app, &child).await, "input-required");

    let (status, body) = decide_rest(&app, None, &task, json!({"decision_type": "approve"})).await;
    assert_eq!(status, 200, "{body}");
    let done = wait_for_state_at(&app, BOSS, &task, "completed").await;
    assert!(done.to_string().contains("I wrote kept.txt."), "{done}");
    assert_eq!(
        std::fs::read_to_string(app.sandbox().join("kept.txt")).unwrap(),
        "hi"
    );
    wait_for_state(&app, &child, "completed").await;
    assert_eq!(results_logged(&app, &child, "call_1").await, 1);
    assert_eq!(
        app.delete(&format!("/api/sessions/{child_context}")).await,
        204
    );
}

/// The person's list of chats holds the parent's chat, not the subagent's own session (its
/// parent's card shows that one); the session itself still opens by its id.
#[tokio::test]
async fn a_subagents_session_is_not_listed_as_a_chat_of_its_own() {
    let app = spawn_app().await;
    let paused = ask_boss(&app, "delegate default/demo: write listed.txt: hi").await;
    let context = context_id(&paused);
    let child_context = context_of(&app, &subagent_task(&paused)).await;
    let (status, listed) = app.get("/api/sessions").await;
    assert_eq!(status, 200, "{listed}");
    let ids: Vec<&str> = listed["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|session| session["id"].as_str().unwrap())
        .collect();
    assert!(ids.contains(&context.as_str()), "{listed}");
    assert!(!ids.contains(&child_context.as_str()), "{listed}");
    let (status, _) = app.get(&format!("/api/sessions/{child_context}")).await;
    assert_eq!(status, 200);
}

/// A subagent's task whose chat is gone (as a delete in the past left it) is never made again:
/// the parent's decision does not run the subagent's model anew nor apply to a batch nobody
/// saw; the agent-tool call fails saying why, and the parent goes on.
#[tokio::test]
async fn a_subagents_task_deleted_with_its_chat_is_not_made_again() {
    let app = spawn_app().await;
    let paused = ask_boss(&app, "delegate default/demo: write ghost.txt: boo").await;
    let task = task_id(&paused);
    let child = subagent_task(&paused);
    let child_context = context_of(&app, &child).await;
    let statements: Vec<String> = ["decisions", "calls", "task_events", "batches"]
        .iter()
        .map(|table| format!("DELETE FROM {table} WHERE task_id = '{child}'"))
        .chain([
            format!("DELETE FROM tasks WHERE id = '{child}'"),
            format!("DELETE FROM sessions WHERE id = '{child_context}'"),
        ])
        .collect();
    let statements: Vec<&str> = statements.iter().map(String::as_str).collect();
    sql_execute(app.data_dir.path(), &statements).await;

    let (status, body) = decide_rest(&app, None, &task, json!({"decision_type": "approve"})).await;
    assert_eq!(status, 200, "{body}");
    let done = wait_for_state_at(&app, BOSS, &task, "completed").await;
    assert!(
        done.to_string().contains("did not finish: its task")
            && done.to_string().contains("was deleted with its chat"),
        "{done}"
    );
    assert!(!app.sandbox().join("ghost.txt").exists());
    let made_again = sql_count(
        app.data_dir.path(),
        "SELECT COUNT(*) FROM tasks WHERE id = ?1",
        &child,
    )
    .await;
    assert_eq!(made_again, 0);
    let (status, _) = app.get(&format!("/api/sessions/{child_context}")).await;
    assert_eq!(status, 404);
}

/// A subagent's task ends with its parent: deleting the parent's chat cancels it (its chat is
/// kept, canceled), so no approval of it is left listed that no batch can decide and that the
/// approvals stream never told of.
#[tokio::test]
async fn deleting_the_parents_chat_cancels_the_subagents_task() {
    let app = spawn_app().await;
    let paused = ask_boss(&app, "delegate default/demo: write orphan.txt: x").await;
    let context = context_of_boss(&app, &task_id(&paused)).await;
    let child = subagent_task(&paused);
    let child_context = context_of(&app, &child).await;

    assert_eq!(app.delete(&format!("/api/sessions/{context}")).await, 204);
    wait_for_state(&app, &child, "canceled").await;
    assert!(listed_approvals(&app).await.is_empty());
    let (status, _) = app.get(&format!("/api/sessions/{child_context}")).await;
    assert_eq!(status, 200);
    // The stream agrees: the first batch it tells of is one that waits after the delete.
    let mut stream = open_approvals(&app, None, None).await;
    let later = send_stream(
        &app,
        "/api/a2a/default/demo",
        message_v03("write later.txt: x", None, None),
    )
    .await;
    let first = stream.next_event().await;
    assert_eq!(first.about(), ("pending".to_owned(), task_id(&later)));
    assert_eq!(listed_approvals(&app).await, [task_id(&later)]);
    assert!(!app.sandbox().join("orphan.txt").exists());
}

/// The chat of a boss's task.
async fn context_of_boss(app: &TestApp, task: &str) -> String {
    app.rpc_at(BOSS, None, request("tasks/get", json!({"id": task})))
        .await["result"]["contextId"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// The boss and a demo agent whose approvals expire after a second, as `on_timeout` says.
fn expiring_subagent(on_timeout: &str) -> String {
    format!(
        "[[agents]]\nname = \"boss\"\nagents = [\"default/demo\"]\n\
         [[agents]]\nname = \"demo\"\napproval_timeout = \"1s\"\non_timeout = \"{on_timeout}\"\n\
         [[agents.tools]]\nkind = \"builtin_files\"\nrequire_approval = [\"write_file\"]\n"
    )
}

/// When a subagent's batch expires, the parent's batch that nests its calls expires with it:
/// the nested calls are answered "expired" in the parent's log, the agent-tool call gets the
/// subagent's outcome and the parent goes on; a decision on the parent then gets the same
/// "expired" refusal as any expired batch, never a 200 that does nothing.
#[tokio::test]
async fn a_subagents_expiry_expires_the_parents_batch() {
    for on_timeout in ["reject", "cancel"] {
        let app = spawn_with_agents(&expiring_subagent(on_timeout), |_| {}).await;
        let paused = ask_boss(&app, "delegate default/demo: write late.txt: x").await;
        assert_eq!(states(&paused).last().unwrap(), "input-required");
        let (task, context) = (task_id(&paused), context_id(&paused));
        let child = subagent_task(&paused);

        let done = wait_for_state_at(&app, BOSS, &task, "completed").await;
        let child_end = if on_timeout == "reject" {
            "completed"
        } else {
            "canceled"
        };
        wait_for_state(&app, &child, child_end).await;
        // The agent-tool call's result is the subagent's outcome, which the boss reports.
        let said: String = done["artifacts"][0]["parts"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|part| part["text"].as_str())
            .collect();
        let outcome = if on_timeout == "reject" {
            "The agent answered: Nobody answered in time, so writing late.txt did not happen"
        } else {
            "default/demo ended canceled: Canceled: the approval request expired unanswered after 1s"
        };
        assert!(said.contains(outcome), "{on_timeout}: {said}");
        assert_eq!(results_logged(&app, &task, "call_1/call_1").await, 1);
        let audit = done["metadata"]["signoff_audit"].as_array().unwrap();
        assert_eq!(audit.len(), 1, "{audit:?}");
        assert_eq!(audit[0]["channel"], "expiry");
        assert_eq!(audit[0]["calls"][0]["id"], "call_1/call_1");
        assert_eq!(audit[0]["calls"][0]["verdict"], "expire");
        assert!(listed_approvals(&app).await.is_empty());

        let (status, body) =
            decide_rest(&app, None, &task, json!({"decision_type": "approve"})).await;
        assert_eq!(status, 409, "{on_timeout}: {body}");
        assert!(
            body["error"].as_str().unwrap().contains("expired"),
            "{body}"
        );
        let late = decision(&task, &context, json!({"decision_type": "approve"}));
        let events = app
            .stream_at(BOSS, &message_request("message/stream", late))
            .await;
        assert!(
            events[0]["error"]["message"]
                .as_str()
                .unwrap()
                .contains("expired"),
            "{events:?}"
        );
        assert!(!app.sandbox().join("late.txt").exists());
    }
}

/// A parent whose own batch expires with `on_timeout = "cancel"` ends canceled, and its
/// subagent's task ends with it (as with any cancel), rather than waiting where nobody decides.
#[tokio::test]
async fn a_parent_canceled_by_its_expiry_cancels_its_subagents_task() {
    let agents = "[[agents]]\nname = \"boss\"\nagents = [\"default/demo\"]\n\
                  approval_timeout = \"1s\"\non_timeout = \"cancel\"\n\
                  [[agents]]\nname = \"demo\"\n\
                  [[agents.tools]]\nkind = \"builtin_files\"\nrequire_approval = [\"write_file\"]\n";
    let app = spawn_with_agents(agents, |_| {}).await;
    let paused = ask_boss(&app, "delegate default/demo: write never.txt: x").await;
    let task = task_id(&paused);
    let child = subagent_task(&paused);
    wait_for_state_at(&app, BOSS, &task, "canceled").await;
    wait_for_state(&app, &child, "canceled").await;
    assert!(listed_approvals(&app).await.is_empty());
    assert!(!app.sandbox().join("never.txt").exists());
}
