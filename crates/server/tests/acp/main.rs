//! Claude Code as a Signoff agent over the Agent Client Protocol: Zed's
//! `@zed-industries/claude-code-acp` (npm, pinned in this folder's package-lock.json;
//! `install.sh` installs it) is started by the server for each chat, and runs offline against
//! the scripted Anthropic endpoint (`tests/gateway/anthropic.py`). Its permission requests wait
//! as batches in the inbox, and the decision reaches the agent as one of the options it offered.

#![allow(clippy::unwrap_used, clippy::expect_used)]

// Shared by every test crate; each uses part of it.
#[allow(dead_code, unused_imports)]
#[path = "../support/mod.rs"]
mod support;

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{json, Value};
use support::*;

const AGENT: &str = "/api/a2a/default/coder";

/// A chat's working folder, its agent's home, and the scripted model it talks to.
struct Workplace {
    cwd: tempfile::TempDir,
    home: tempfile::TempDir,
    model: ScriptedModel,
}

impl Workplace {
    /// A workplace whose model answers with the script `script` makes of the working folder.
    async fn new(script: impl FnOnce(&Path) -> Value) -> Workplace {
        let cwd = tempfile::tempdir().unwrap();
        let home = tempfile::tempdir().unwrap();
        let model = ScriptedModel::start(home.path(), script(cwd.path())).await;
        Workplace { cwd, home, model }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.cwd.path().join(name)
    }

    /// The agents file: the ACP agent `default/coder` in this workplace, with `extra` lines.
    fn agents(&self, extra: &str) -> String {
        self.model
            .claude_code_over_acp(self.cwd.path(), self.home.path(), extra)
    }
}

/// Sends `text` to the coding agent (in `context`, if given) and returns its stream's results.
async fn say(app: &TestApp, text: &str, context: Option<&str>) -> Vec<Value> {
    say_to(app, AGENT, text, context).await
}

async fn say_to(app: &TestApp, agent: &str, text: &str, context: Option<&str>) -> Vec<Value> {
    let results = within(
        "the coding agent's turn",
        send_stream(app, agent, message_v03(text, None, context)),
    )
    .await;
    assert!(!results.is_empty());
    results
}

/// The batch waiting in the inbox.
async fn waiting_batch(app: &TestApp) -> Value {
    eventually("a batch waits in the inbox", || async {
        let (_, body) = app.get("/api/approvals").await;
        body["approvals"]
            .as_array()
            .and_then(|all| all.first())
            .cloned()
    })
    .await
}

async fn completed(app: &TestApp, task: &str) {
    completed_at(app, AGENT, task).await
}

async fn completed_at(app: &TestApp, agent: &str, task: &str) {
    eventually("the task completes", || async {
        let got = app
            .rpc_at(agent, None, request("tasks/get", json!({"id": task})))
            .await;
        let state = got["result"]["status"]["state"].clone();
        assert_ne!(state, "failed", "the coding agent's task failed");
        (state == "completed").then_some(())
    })
    .await;
}

/// All answer text of a task, as `tasks/get` shows it.
async fn answer_of(app: &TestApp, task: &str) -> String {
    answer_at(app, AGENT, task).await
}

async fn answer_at(app: &TestApp, agent: &str, task: &str) -> String {
    let got = app
        .rpc_at(agent, None, request("tasks/get", json!({"id": task})))
        .await;
    got["result"]["artifacts"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|artifact| artifact["parts"].as_array().cloned().unwrap_or_default())
        .filter_map(|part| part["text"].as_str().map(str::to_owned))
        .collect()
}

/// The parts of a stream's status messages that carry the metadata `key`.
fn marked_parts(results: &[Value], key: &str) -> Vec<Value> {
    results
        .iter()
        .filter_map(|result| result["status"]["message"]["parts"].as_array())
        .flatten()
        .filter(|part| !part["metadata"][key].is_null())
        .cloned()
        .collect()
}

/// The call and result parts of a task's stored history, as `tasks/get` shows them.
async fn stored_call_parts(app: &TestApp, task: &str) -> Vec<Value> {
    let got = app
        .rpc_at(AGENT, None, request("tasks/get", json!({"id": task})))
        .await;
    call_parts(got["result"]["history"].as_array().unwrap())
}

/// The `function_call` and `function_response` parts of some messages (or stream results).
fn call_parts(messages: &[Value]) -> Vec<Value> {
    messages
        .iter()
        .map(|entry| match entry.get("status") {
            Some(status) => &status["message"],
            None => entry,
        })
        .filter_map(|message| message["parts"].as_array())
        .flatten()
        .filter(|part| {
            matches!(
                part["metadata"]["kagent_type"].as_str(),
                Some("function_call" | "function_response")
            )
        })
        .cloned()
        .collect()
}

/// Each call part's kind, its `signoff_ran` status (null for none) and its id.
fn shapes(parts: &[Value]) -> Vec<(String, Value, String)> {
    parts
        .iter()
        .map(|part| {
            (
                part["metadata"]["kagent_type"].as_str().unwrap().to_owned(),
                part["metadata"]["signoff_ran"].clone(),
                part["data"]["id"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

/// The text of a result part's output.
fn output_of(part: &Value) -> String {
    part["data"]["response"]["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|block| block["text"].as_str())
        .collect()
}

fn write_script(path: &Path, content: &str, then: &str) -> Value {
    json!([
        {"tool_use": {"name": "Write", "input": {"file_path": path, "content": content}}},
        {"text": then},
    ])
}

#[tokio::test]
async fn a_write_waits_as_a_card_and_runs_once_when_approved() {
    let work =
        Workplace::new(|cwd| write_script(&cwd.join("hello.txt"), "hello\n", "I wrote hello.txt."))
            .await;
    let target = work.path("hello.txt");
    let app = spawn_with_agents(&work.agents(""), |_| {}).await;
    let results = say(&app, "Please write hello.txt", None).await;
    assert_eq!(
        states(&results).last().unwrap(),
        "input-required",
        "{results:?}"
    );
    let batch = waiting_batch(&app).await;
    let call = &batch["calls"][0];
    assert_eq!(call["name"], "edit", "{batch}");
    assert_eq!(call["args"]["input"]["content"], "hello\n", "{batch}");
    assert!(
        call["args"]["title"]
            .as_str()
            .unwrap()
            .starts_with("Write "),
        "{batch}"
    );
    assert!(!target.exists(), "nothing is written before the sign-off");
    let task = batch["taskId"].as_str().unwrap();
    // Claude Code reports the write pending before it asks: one call, under the held call's id.
    let id = call["id"].as_str().unwrap();
    let before: Vec<_> = shapes(&call_parts(&results))
        .into_iter()
        .filter(|(_, ran, _)| !ran.is_null())
        .collect();
    assert!(!before.is_empty(), "no pending card: {results:?}");
    for (kind, ran, reported) in &before {
        assert_eq!(
            (kind.as_str(), ran, reported.as_str()),
            ("function_call", &json!("pending"), id)
        );
    }
    let (status, body) = decide_rest(&app, None, task, json!({"decision_type": "approve"})).await;
    assert_eq!(status, 200, "{body}");
    completed(&app, task).await;
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "hello\n");
    let answer = answer_of(&app, task).await;
    assert!(answer.contains("I wrote hello.txt."), "{answer}");
    let results = work.model.tool_results();
    assert_eq!(results.len(), 1, "the write ran once: {results:?}");
    assert_ne!(results[0]["is_error"], true, "{results:?}");

    // The held call's card ends with what the agent reported: completed, with its output.
    let stored = stored_call_parts(&app, task).await;
    let shown = shapes(&stored);
    assert!(
        shown.iter().all(|(_, _, of)| of == id),
        "one call: {shown:?}"
    );
    let ends: Vec<&Value> = stored
        .iter()
        .filter(|part| part["metadata"]["kagent_type"] == "function_response")
        .collect();
    let [allowed, end] = ends.as_slice() else {
        panic!("the allowed result, then the agent's: {shown:?}")
    };
    assert!(output_of(allowed).contains("Allowed"), "{allowed}");
    assert_eq!(end["metadata"]["signoff_ran"], "completed", "{end}");
    assert_eq!(end["data"]["response"]["isError"], false, "{end}");
    assert!(output_of(end).contains("hello.txt"), "{end}");
}

#[tokio::test]
async fn an_approved_commands_output_reaches_its_card_on_the_stream_and_in_the_stored_task() {
    let work = Workplace::new(|_| {
        json!([
            {"tool_use": {"name": "Bash", "input": {"command": "touch made.txt && echo signed-off-output", "description": "say it"}}},
            {"text": "Said."},
        ])
    })
    .await;
    let app = spawn_with_agents(&work.agents(""), |_| {}).await;
    let first = say(&app, "say it", None).await;
    let (task, context) = (task_id(&first), context_id(&first));
    let batch = waiting_batch(&app).await;
    let id = batch["calls"][0]["id"].as_str().unwrap().to_owned();
    assert_eq!(batch["calls"][0]["name"], "execute", "{batch}");
    let resumed = send_stream(
        &app,
        AGENT,
        decision(&task, &context, json!({"decision_type": "approve"})),
    )
    .await;
    completed(&app, &task).await;
    let streamed = call_parts(&resumed);
    let end = streamed
        .iter()
        .find(|part| part["metadata"]["signoff_ran"] == "completed")
        .unwrap_or_else(|| panic!("no end on the stream: {:?}", shapes(&streamed)));
    assert_eq!(end["metadata"]["kagent_type"], "function_response");
    assert_eq!(end["data"]["id"], id.as_str());
    assert!(output_of(end).contains("signed-off-output"), "{end}");
    let stored = stored_call_parts(&app, &task).await;
    assert!(stored.contains(end), "tasks/get holds the same end");
    assert!(
        shapes(&stored).iter().all(|(_, _, of)| *of == id),
        "one call: {:?}",
        shapes(&stored)
    );
}

#[tokio::test]
async fn an_edit_of_the_arguments_is_refused_for_an_agent_that_runs_its_own_tools() {
    let work = Workplace::new(|cwd| write_script(&cwd.join("notes.txt"), "a\n", "done")).await;
    let target = work.path("notes.txt");
    let app = spawn_with_agents(&work.agents(""), |_| {}).await;
    say(&app, "write notes", None).await;
    let batch = waiting_batch(&app).await;
    let (task, id) = (
        batch["taskId"].as_str().unwrap(),
        batch["calls"][0]["id"].as_str().unwrap(),
    );
    let edited = json!({"title": "Write", "input": {"file_path": target, "content": "b\n"}});
    let (status, body) = decide_rest(
        &app,
        None,
        task,
        json!({"decision_type": "approve", "modified_args": {id: edited}}),
    )
    .await;
    assert_eq!(status, 400, "{body}");
    assert!(
        body.to_string()
            .contains("approve or reject the call as it was asked"),
        "{body}"
    );
    assert!(!target.exists());
    let (_, inbox) = app.get("/api/approvals").await;
    assert_eq!(
        inbox["approvals"].as_array().unwrap().len(),
        1,
        "it still waits"
    );
}

#[tokio::test]
async fn a_rejection_leaves_no_file_and_the_agents_next_turn_reads_the_reason() {
    let work = Workplace::new(|cwd| {
        let mut script = write_script(&cwd.join("deploy.sh"), "rm -rf /\n", "I will not write it.");
        script
            .as_array_mut()
            .unwrap()
            .push(json!({"text": "Understood."}));
        script
    })
    .await;
    let target = work.path("deploy.sh");
    let app = spawn_with_agents(&work.agents(""), |_| {}).await;
    let first = say(&app, "write the deploy script", None).await;
    let context = context_id(&first);
    let batch = waiting_batch(&app).await;
    let task = batch["taskId"].as_str().unwrap();
    let reason = "not a deploy script, please";
    let (status, _) = decide_rest(
        &app,
        None,
        task,
        json!({"decision_type": "deny", "reason": reason}),
    )
    .await;
    assert_eq!(status, 200);
    completed(&app, task).await;
    assert!(!target.exists(), "a rejected write never runs");
    // Its card stays the rejected one: the agent's `failed` report after it adds nothing.
    let id = batch["calls"][0]["id"].as_str().unwrap();
    let stored = stored_call_parts(&app, task).await;
    let shown = shapes(&stored);
    assert!(
        shown.iter().all(|(_, _, of)| of == id),
        "one call: {shown:?}"
    );
    assert!(
        shown
            .iter()
            .all(|(kind, ran, _)| kind == "function_call" || ran.is_null()),
        "no result but the rejection: {shown:?}"
    );
    // ACP's answer has no room for the reason: it comes with the next prompt, beside the
    // refusal Claude Code reports to its model then.
    let next = say(&app, "What happened?", Some(&context)).await;
    completed(&app, &task_id(&next)).await;
    let refused = work.model.tool_results();
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert_eq!(refused[0]["is_error"], true, "{refused:?}");
    let log = std::fs::read_to_string(&work.model.log).unwrap();
    let last_prompt = log
        .lines()
        .rev()
        .find(|line| line.contains("What happened?"))
        .unwrap();
    assert!(last_prompt.contains(reason), "{last_prompt}");
}

/// A workplace whose model runs an `echo` and then an `rm`.
async fn echo_then_rm() -> Workplace {
    let work = Workplace::new(|_| {
        json!([
            {"tool_use": {"name": "Bash", "input": {"command": "echo hi > said.txt", "description": "say hi"}}},
            {"tool_use": {"name": "Bash", "input": {"command": "rm -rf build", "description": "clean"}}},
            {"text": "done"},
        ])
    })
    .await;
    std::fs::create_dir(work.path("build")).unwrap();
    work
}

/// The echo ran and the rm was refused, and nobody was asked about either.
async fn echo_ran_and_rm_was_refused_asking_no_one(app: &TestApp, work: &Workplace) {
    let results = say(app, "say hi, then clean", None).await;
    completed(app, &task_id(&results)).await;
    let (_, inbox) = app.get("/api/approvals").await;
    assert_eq!(inbox["approvals"], json!([]), "nobody was asked");
    assert_eq!(
        std::fs::read_to_string(work.path("said.txt"))
            .unwrap()
            .trim(),
        "hi"
    );
    // The refusal ends Claude Code's turn: its model hears of it with the next prompt.
    let told = work.model.tool_results();
    assert_eq!(told.len(), 1, "{told:?}");
    assert_ne!(told[0]["is_error"], true, "{told:?}");
    assert!(work.path("build").is_dir(), "the rm never ran");
}

#[tokio::test]
async fn rules_over_the_kind_and_title_allow_and_deny_without_asking_anyone() {
    let work = echo_then_rm().await;
    let rules = r#"
[[agents.rules]]
tool = "execute"
action = "deny"
when = { title = { regex = ".*\\brm\\b.*" } }

[[agents.rules]]
tool = "execute"
action = "allow"
when = { title = { regex = "`echo .*" } }
"#;
    let app = spawn_with_agents(&work.agents(rules), |_| {}).await;
    echo_ran_and_rm_was_refused_asking_no_one(&app, &work).await;
}

/// Cedar policies over an ACP call's kind and its input: an `echo` permitted, an `rm` forbidden.
const CEDAR: &str = r#"
@id("echo")
permit (principal, action == Signoff::Action::"call", resource == Signoff::Tool::"execute")
when { context.args has input && context.args.input has command
       && context.args.input.command like "echo *" };

@id("no-rm")
@reason("nothing is removed here")
forbid (principal, action == Signoff::Action::"call", resource == Signoff::Tool::"execute")
when { context.args has title && context.args.title like "*rm *" };
"#;

#[tokio::test]
async fn cedar_policies_over_the_kind_and_input_allow_and_deny_without_asking_anyone() {
    let work = echo_then_rm().await;
    let policies = tempfile::tempdir().unwrap();
    std::fs::write(policies.path().join("coder.cedar"), CEDAR).unwrap();
    let dir = policies.path().to_owned();
    let app = spawn_with_agents(&work.agents(""), |config| config.policies_dir = Some(dir)).await;
    echo_ran_and_rm_was_refused_asking_no_one(&app, &work).await;
}

#[tokio::test]
async fn after_a_restart_a_decision_is_recorded_as_undelivered_and_the_chat_goes_on_in_its_session()
{
    let work = Workplace::new(|cwd| write_script(&cwd.join("late.txt"), "x\n", "wrote")).await;
    let target = work.path("late.txt");
    let app = spawn_with_agents(&work.agents(""), |_| {}).await;
    let agents_file = app.data_dir.path().join("agents.toml");
    let first = say(&app, "write late.txt", None).await;
    let context = context_id(&first);
    let batch = waiting_batch(&app).await;
    let task = batch["taskId"].as_str().unwrap().to_owned();
    let data_dir = app.stop().await;
    // The agent's process ended with the server that started it.
    let app = spawn_in(data_dir, |config| config.agents_file = Some(agents_file)).await;
    let batch = waiting_batch(&app).await;
    assert_eq!(batch["taskId"], task.as_str(), "the card is still there");
    let (status, body) = decide_rest(&app, None, &task, json!({"decision_type": "approve"})).await;
    assert_eq!(status, 200, "{body}");
    completed(&app, &task).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!target.exists(), "the decision never reached a live agent");
    let answer = answer_of(&app, &task).await;
    assert!(
        answer.contains("could not reach the coding agent"),
        "{answer}"
    );
    // The chat goes on in its earlier session, loaded again: the agent remembers it.
    let next = say(&app, "And now?", Some(&context)).await;
    completed(&app, &task_id(&next)).await;
    let answer = answer_of(&app, &task_id(&next)).await;
    assert!(!answer.contains("earlier session"), "{answer}");
    let log = std::fs::read_to_string(&work.model.log).unwrap();
    let last_prompt = log
        .lines()
        .rev()
        .find(|line| line.contains("And now?"))
        .unwrap();
    assert!(last_prompt.contains("write late.txt"), "{last_prompt}");
}

#[tokio::test]
async fn a_cancel_while_a_permission_waits_answers_it_cancelled_and_the_chat_goes_on() {
    let work = Workplace::new(|cwd| write_script(&cwd.join("c.txt"), "x\n", "Still here.")).await;
    let target = work.path("c.txt");
    let app = spawn_with_agents(&work.agents(""), |_| {}).await;
    let first = say(&app, "write c.txt", None).await;
    let (task, context) = (task_id(&first), context_id(&first));
    waiting_batch(&app).await;
    let canceled = app
        .rpc_at(AGENT, None, request("tasks/cancel", json!({"id": task})))
        .await;
    assert_eq!(
        canceled["result"]["status"]["state"], "canceled",
        "{canceled}"
    );
    let next = say(&app, "Are you there?", Some(&context)).await;
    let next_task = task_id(&next);
    completed(&app, &next_task).await;
    assert!(!target.exists(), "a canceled write never runs");
    let answer = answer_of(&app, &next_task).await;
    assert!(answer.contains("Still here."), "{answer}");
    // The agent was told: its model hears the permission request failed.
    let told = work.model.tool_results();
    assert_eq!(told.len(), 1, "{told:?}");
    assert_eq!(told[0]["is_error"], true, "{told:?}");
}

/// The example agent of the ACP SDK (`@agentclientprotocol/sdk`), an agent Claude has no part
/// in: it reads a file on its own, then asks to edit a configuration file, offering only "allow
/// once" and "reject once".
const EXAMPLE: &str = "/api/a2a/default/example";

fn example_agents(cwd: &Path) -> String {
    let entry = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/acp/node_modules/@agentclientprotocol/sdk/dist/examples/agent.js");
    assert!(
        entry.exists(),
        "{} is missing: run crates/server/tests/acp/install.sh",
        entry.display()
    );
    format!(
        "[[agents]]\nname = \"example\"\n\n[agents.acp]\ncommand = [\"node\", {:?}]\ncwd = {:?}\n",
        entry.display().to_string(),
        cwd.display().to_string()
    )
}

#[tokio::test]
async fn the_acp_sdks_example_agent_is_asked_about_its_edit_and_hears_each_answer() {
    let cwd = tempfile::tempdir().unwrap();
    let app = spawn_with_agents(&example_agents(cwd.path()), |_| {}).await;
    for (decision, heard) in [
        (
            json!({"decision_type": "approve"}),
            "successfully updated the configuration",
        ),
        (
            json!({"decision_type": "deny", "reason": "not today"}),
            "skip the configuration update",
        ),
    ] {
        let first = say_to(&app, EXAMPLE, "improve the project", None).await;
        let task = task_id(&first);
        let so_far = answer_text(&first);
        assert!(so_far.contains("I'll help you with that."), "{so_far}");
        // The read it ran without asking is a card, not a line of its answer.
        assert!(!so_far.contains("Reading project files"), "{so_far}");
        let ran = marked_parts(&first, "signoff_ran");
        let read = ran
            .iter()
            .find(|part| part["metadata"]["kagent_type"] == "function_call")
            .unwrap_or_else(|| panic!("no card of the read: {first:?}"));
        assert_eq!(read["data"]["name"], "read", "{read}");
        assert_eq!(
            read["data"]["args"]["title"], "Reading project files",
            "{read}"
        );
        assert!(
            ran.iter().any(
                |part| part["metadata"]["kagent_type"] == "function_response"
                    && part["metadata"]["signoff_ran"] == "completed"
            ),
            "{ran:?}"
        );
        let batch = waiting_batch(&app).await;
        let call = &batch["calls"][0];
        assert_eq!(call["name"], "edit", "{batch}");
        assert_eq!(
            call["args"]["title"], "Modifying critical configuration file",
            "{batch}"
        );
        assert_eq!(
            call["args"]["locations"],
            json!(["/home/user/project/config.json"]),
            "{batch}"
        );
        let (status, body) = decide_rest(&app, None, &task, decision).await;
        assert_eq!(status, 200, "{body}");
        completed_at(&app, EXAMPLE, &task).await;
        let answer = answer_at(&app, EXAMPLE, &task).await;
        assert!(answer.contains(heard), "{answer}");
    }
}

#[tokio::test]
async fn an_agent_that_writes_garbage_fails_its_chat_with_a_clear_error_and_nothing_else() {
    let cwd = tempfile::tempdir().unwrap();
    let agents = format!(
        "[[agents]]\nname = \"broken\"\n\n[agents.acp]\n\
         command = [\"sh\", \"-c\", \"read line; echo 'Debugger listening on ws://x'; sleep 30\"]\n\
         cwd = {:?}\n",
        cwd.path().display().to_string()
    );
    let app = spawn_with_agents(&agents, |_| {}).await;
    let results = say_to(&app, "/api/a2a/default/broken", "hello", None).await;
    let last = results.last().unwrap();
    assert_eq!(last["status"]["state"], "failed", "{results:?}");
    let said = last["status"]["message"].to_string();
    assert!(said.contains("could not be started"), "{said}");
    assert!(said.contains("not JSON"), "{said}");
    // The server is unharmed.
    let (status, _) = app.get("/api/agents").await;
    assert_eq!(status, 200);
}

#[tokio::test]
async fn the_agents_plan_shows_in_its_answer() {
    let todos = json!({"todos": [
        {"content": "List the files", "status": "in_progress", "activeForm": "Listing the files"},
        {"content": "Write the notes", "status": "pending", "activeForm": "Writing the notes"},
    ]});
    let work = Workplace::new(
        |_| json!([{"tool_use": {"name": "TodoWrite", "input": todos}}, {"text": "Planned."}]),
    )
    .await;
    let app = spawn_with_agents(&work.agents(""), |_| {}).await;
    let results = say(&app, "plan the work", None).await;
    let task = task_id(&results);
    completed(&app, &task).await;
    let answer = answer_of(&app, &task).await;
    assert!(
        answer.contains("Plan:\n- [~] List the files\n- [ ] Write the notes"),
        "{answer}"
    );
    assert!(answer.contains("Planned."), "{answer}");
}

#[tokio::test]
async fn chats_that_start_together_never_run_more_agents_than_max_sessions() {
    let cwd = tempfile::tempdir().unwrap();
    let agents =
        example_agents(cwd.path()).replace("[agents.acp]\n", "[agents.acp]\nmax_sessions = 2\n");
    let app = std::sync::Arc::new(spawn_with_agents(&agents, |_| {}).await);
    let chats: Vec<_> = (0..3)
        .map(|_| {
            let app = app.clone();
            tokio::spawn(async move { say_to(&app, EXAMPLE, "improve the project", None).await })
        })
        .collect();
    let mut ends = Vec::new();
    for chat in chats {
        let results = chat.await.unwrap();
        ends.push(results.last().unwrap()["status"].clone());
    }
    let waiting = ends
        .iter()
        .filter(|end| end["state"] == "input-required")
        .count();
    let refused: Vec<_> = ends.iter().filter(|end| end["state"] == "failed").collect();
    assert_eq!((waiting, refused.len()), (2, 1), "{ends:?}");
    assert!(
        refused[0]["message"]
            .to_string()
            .contains("already runs 2 chats"),
        "{refused:?}"
    );
}

const THINKING: &str = "The notes come first: read them before anything else.";

#[tokio::test]
async fn a_read_the_agent_ran_without_asking_is_a_card_and_its_thinking_a_thought() {
    let work = Workplace::new(|cwd| {
        json!([
            {"thinking": THINKING, "text": "Let me read them.",
             "tool_use": {"name": "Read", "input": {"file_path": cwd.join("notes.md")}}},
            {"text": "The notes say hello."},
        ])
    })
    .await;
    std::fs::write(work.path("notes.md"), "hello notes\n").unwrap();
    let app = spawn_with_agents(&work.agents(""), |_| {}).await;
    let results = say(&app, "read the notes", None).await;
    let task = task_id(&results);
    completed(&app, &task).await;
    let (_, inbox) = app.get("/api/approvals").await;
    assert_eq!(inbox["approvals"], json!([]), "nobody was asked");

    // The read: its call and result, marked as the agent's own, under the server's id, after
    // the reports of it pending (Claude Code reports it so before it knows it needs no one).
    let ran = marked_parts(&results, "signoff_ran");
    let [pending @ .., call, result] = ran.as_slice() else {
        panic!("one report of the ended read: {ran:?}")
    };
    assert!(!pending.is_empty(), "{ran:?}");
    for report in pending {
        assert_eq!(report["metadata"]["signoff_ran"], "pending", "{report}");
        assert_eq!(report["data"]["id"], call["data"]["id"], "{report}");
    }
    assert_eq!(call["metadata"]["kagent_type"], "function_call");
    assert_eq!(call["data"]["name"], "read");
    let id = call["data"]["id"].as_str().unwrap();
    assert!(id.starts_with("ran_") && !id.contains("toolu"), "{id}");
    assert_eq!(
        call["data"]["args"]["input"]["file_path"],
        json!(work.path("notes.md")),
        "{call}"
    );
    assert_eq!(result["data"]["id"], id);
    assert_eq!(result["metadata"]["signoff_ran"], "completed");
    assert_eq!(result["data"]["response"]["isError"], false, "{result}");
    assert!(
        result["data"]["response"]
            .to_string()
            .contains("hello notes"),
        "{result}"
    );

    // The thinking: a thought of its own, in no answer.
    let thoughts = marked_parts(&results, "kagent_thought");
    assert_eq!(thoughts.len(), 1, "{thoughts:?}");
    assert_eq!(thoughts[0]["text"], THINKING);
    let answer = answer_of(&app, &task).await;
    assert!(answer.contains("Let me read them.") && answer.contains("The notes say hello."));
    assert!(
        !answer.contains(THINKING) && !answer.contains(": completed"),
        "{answer}"
    );

    // The stored task holds the same parts (a reload shows the same card and thought).
    let got = app
        .rpc_at(AGENT, None, request("tasks/get", json!({"id": task})))
        .await;
    let stored: Vec<Value> = got["result"]["history"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|message| message["parts"].as_array().cloned().unwrap_or_default())
        .filter(|part| {
            !part["metadata"]["signoff_ran"].is_null()
                || !part["metadata"]["kagent_thought"].is_null()
        })
        .collect();
    assert_eq!(stored.len(), pending.len() + 3, "{stored:?}");
    assert!(stored.contains(call) && stored.contains(result) && stored.contains(&thoughts[0]));
}

/// The README's Gemini CLI entry, run here: the installed Gemini CLI, in `cwd` with its own
/// `home`, its key in a file, against the scripted Gemini API.
fn gemini_agents(gemini: &ScriptedGemini, cwd: &Path, home: &Path) -> String {
    let readme = include_str!("../../../../README.md");
    let (_, section) = readme.split_once("\n## Coding agents\n").unwrap();
    let entry = section
        .split("```toml\n")
        .filter_map(|block| block.split_once("```").map(|(toml, _)| toml))
        .find(|toml| toml.contains("gemini"))
        .expect("the README's Gemini CLI entry");
    let key = home.join("gemini-api-key");
    std::fs::write(&key, "test-key\n").unwrap();
    let installed = gemini_entry();
    let agents = entry
        .replace(
            "/opt/gemini-cli/node_modules/@google/gemini-cli/bundle/gemini.js",
            &installed.display().to_string(),
        )
        .replace("/srv/work", &cwd.display().to_string())
        .replace("/run/secrets/gemini-api-key", &key.display().to_string());
    format!(
        "{agents}\n[agents.acp.env]\nGOOGLE_GEMINI_BASE_URL = \"http://127.0.0.1:{}\"\nHOME = {:?}\n",
        gemini.port,
        home.display().to_string()
    )
}

const GEMINI: &str = "/api/a2a/default/gemini";

#[tokio::test]
async fn gemini_clis_read_is_a_card_and_its_shell_and_write_wait_the_approved_runs_once() {
    let cwd = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let notes = cwd.path().join("notes.md");
    let readme = cwd.path().join("README.md");
    std::fs::write(&readme, "Build with make.\n").unwrap();
    let gemini = ScriptedGemini::start(
        home.path(),
        json!([
            {"call": {"name": "read_file", "args": {"file_path": readme}}},
            {"call": {"name": "run_shell_command",
                      "args": {"command": "echo hi >> said.txt", "description": "say hi"}}},
            {"call": {"name": "write_file", "args": {"file_path": notes, "content": "# Notes\n"}}},
            {"text": "I said hi and left the notes."},
            {"text": "Understood."},
        ]),
    )
    .await;
    let app = spawn_with_agents(&gemini_agents(&gemini, cwd.path(), home.path()), |_| {}).await;
    let first = say_to(&app, GEMINI, "say hi, then write notes", None).await;
    let context = context_id(&first);

    // Its read, asking no one, is one card reported twice: running, then done with its result.
    let ran = marked_parts(&first, "signoff_ran");
    let reports: Vec<(&Value, &Value, &Value)> = ran
        .iter()
        .map(|part| {
            let meta = &part["metadata"];
            (
                &meta["kagent_type"],
                &meta["signoff_ran"],
                &part["data"]["id"],
            )
        })
        .collect();
    let id = &ran[0]["data"]["id"];
    assert_eq!(
        reports,
        [
            (&json!("function_call"), &json!("in_progress"), id),
            (&json!("function_call"), &json!("completed"), id),
            (&json!("function_response"), &json!("completed"), id),
        ],
        "{ran:?}"
    );
    assert_eq!(ran[0]["data"]["name"], "read");
    assert_eq!(ran[0]["data"]["args"]["locations"], json!([readme]));

    // The shell waits as an `execute` card, its command its title; nothing ran yet.
    let batch = waiting_batch(&app).await;
    let call = &batch["calls"][0];
    assert_eq!(call["name"], "execute", "{batch}");
    assert_eq!(call["args"]["title"], "echo hi >> said.txt", "{batch}");
    assert!(
        !cwd.path().join("said.txt").exists(),
        "ran before a decision"
    );
    let task = batch["taskId"].as_str().unwrap().to_owned();
    let (status, body) = decide_rest(&app, None, &task, json!({"decision_type": "approve"})).await;
    assert_eq!(status, 200, "{body}");

    // The write waits next as an `edit` card with its change; the shell ran once.
    let batch = eventually("the write waits", || async {
        let (_, body) = app.get("/api/approvals").await;
        body["approvals"]
            .as_array()
            .and_then(|all| all.iter().find(|batch| batch["calls"][0]["name"] == "edit"))
            .cloned()
    })
    .await;
    let changes = &batch["calls"][0]["args"]["changes"];
    assert_eq!(changes[0]["path"], json!(notes), "{batch}");
    assert_eq!(changes[0]["newText"], "# Notes\n", "{batch}");
    assert_eq!(
        std::fs::read_to_string(cwd.path().join("said.txt")).unwrap(),
        "hi\n",
        "the approved shell ran once"
    );
    let reason = "no notes here, please";
    let (status, body) = decide_rest(
        &app,
        None,
        &task,
        json!({"decision_type": "deny", "reason": reason}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    completed_at(&app, GEMINI, &task).await;
    assert!(!notes.exists(), "a rejected write never runs");
    let answer = answer_at(&app, GEMINI, &task).await;
    assert!(answer.contains("I said hi and left the notes."), "{answer}");
    let told = gemini.function_responses();
    assert_eq!(told.len(), 3, "{told:?}");
    assert_eq!(told[0]["name"], "read_file", "{told:?}");
    assert_eq!(told[1]["name"], "run_shell_command", "{told:?}");
    assert!(!told[2].to_string().contains("# Notes"), "{told:?}");

    // Its next turn reads the reason.
    let next = say_to(&app, GEMINI, "What happened?", Some(&context)).await;
    completed_at(&app, GEMINI, &task_id(&next)).await;
    let asked = gemini.main_requests();
    let last = asked.last().unwrap();
    assert!(
        last.contains("What happened?") && last.contains(reason),
        "{last}"
    );
}
