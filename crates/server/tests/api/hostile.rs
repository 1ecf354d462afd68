//! Hostile input through the real server: text that breaks naive parsers, duplicate JSON keys,
//! deleting what someone follows, oversized and amplifying requests, odd headers and ids,
//! forwarded hosts, hard links in the sandbox and edited arguments that do not fit.

use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use serde_json::{json, Value};
use signoff_protocol::{Message, Part, Role, StreamEvent, TaskState};
use signoff_server::agent::model::{Model, ModelRequest, ModelStream};
use signoff_server::agent::tools::Toolbox;
use signoff_server::agent::{Agent, Decider, Limits, Runtime};
use signoff_server::store::Store;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::hitl::pause;
use crate::support::*;

/// A blocking `message/send`'s result.
async fn send(app: &TestApp, text: &str) -> Value {
    app.rpc(
        None,
        message_request("message/send", message_v03(text, None, None)),
    )
    .await
}

#[tokio::test]
async fn characters_whose_case_changes_their_length_do_not_crash_the_server() {
    let app = spawn_app().await;
    for text in [
        "please \u{212a}\u{212a}",
        &format!("please {}", "\u{130}".repeat(10)),
        "please write İİİİİİİİİ.txt: x",
        "KKK and read readme.txt",
    ] {
        let got = send(&app, text).await;
        let state = got["result"]["status"]["state"].as_str();
        // Understood as a write (which waits for approval) or answered with help; never failed.
        assert!(
            matches!(state, Some("completed" | "input-required")),
            "{text:?}: {got}"
        );
    }
    // The server is still there, and the grammar still works.
    let got = send(&app, "please read readme.txt").await;
    let history = got["result"]["history"].to_string();
    assert!(history.contains("Welcome to the Signoff sandbox"), "{got}");
    app.stop().await;
}

/// A decision sent with a blocking `message/send`; the response.
async fn decide_blocking(app: &TestApp, task: &str, context: &str, data: Value) -> Value {
    let body = message_request("message/send", decision(task, context, data));
    app.rpc(None, body).await
}

/// A model whose turn panics (a bug anywhere in a runner).
struct PanickingModel;

impl Model for PanickingModel {
    fn turn(&self, _request: ModelRequest) -> ModelStream {
        panic!("a bug in the model")
    }
}

/// A model that never answers, so its task stays `working`.
struct SilentModel;

impl Model for SilentModel {
    fn turn(&self, _request: ModelRequest) -> ModelStream {
        futures_util::stream::pending().boxed()
    }
}

fn agent(model: Arc<dyn Model>) -> Arc<Agent> {
    Arc::new(Agent {
        namespace: "default".into(),
        name: "demo".into(),
        description: String::new(),
        instruction: String::new(),
        model,
        tools: Toolbox::new(),
        approvals: Default::default(),
        subagents: Default::default(),
        serve_mcp: false,
        reviewer: None,
    })
}

async fn state_of(runtime: &Arc<Runtime>, task: &str) -> (TaskState, String) {
    let (task, _) = runtime.snapshot(task, None).await.unwrap();
    let text = task
        .status
        .message
        .map(|message| message.text())
        .unwrap_or_default();
    (task.status.state, text)
}

#[tokio::test]
async fn a_panicking_runner_fails_its_task_and_is_not_resumed_again() {
    let dir = tempfile::tempdir().unwrap();
    let message = || {
        Message::new(
            uuid::Uuid::new_v4().to_string(),
            Role::User,
            vec![Part::text("hi")],
        )
    };

    // A panic while running: that task fails, the runtime takes the next one.
    let store = Store::open(&test_database(dir.path()).await).await.unwrap();
    let broken = agent(Arc::new(PanickingModel));
    let runtime = Runtime::new(store.clone(), vec![broken.clone()], Limits::default());
    let first = runtime
        .send(&Decider::subject("local"), &broken, message())
        .await
        .unwrap();
    runtime.log().wait_final(&first.task_id, 0).await.unwrap();
    let (state, text) = state_of(&runtime, &first.task_id).await;
    assert_eq!(state, TaskState::Failed);
    assert!(text.contains("internal error"), "{text}");
    let second = runtime
        .send(&Decider::subject("local"), &broken, message())
        .await
        .unwrap();
    runtime.log().wait_final(&second.task_id, 0).await.unwrap();
    runtime.shutdown(Duration::from_secs(5)).await;
    store.close().await;

    // A task left working by a process that stopped, whose runner panics when resumed: it is
    // failed once, and the next start does not resume it again.
    let store = Store::open(&test_database(dir.path()).await).await.unwrap();
    let silent = agent(Arc::new(SilentModel));
    let runtime = Runtime::new(store.clone(), vec![silent.clone()], Limits::default());
    let left = runtime
        .send(&Decider::subject("local"), &silent, message())
        .await
        .unwrap();
    let mut events = runtime.log().follow(&left.task_id, 0);
    within("the task to be working", async {
        while let Some(event) = events.next().await {
            if let StreamEvent::StatusUpdate(update) = event.unwrap().event().unwrap() {
                if update.status.state == TaskState::Working {
                    return;
                }
            }
        }
        panic!("the task's stream ended before it was working");
    })
    .await;
    drop(events);
    runtime.shutdown(Duration::from_secs(5)).await;
    store.close().await;

    let store = Store::open(&test_database(dir.path()).await).await.unwrap();
    let runtime = Runtime::new(store.clone(), vec![broken.clone()], Limits::default());
    let resumed = runtime.resume_unfinished().await.unwrap();
    // On a shared database no task is resumed at start: the replica's sweep takes over those
    // whose lease lapsed (this one's, at the last shutdown).
    assert_eq!(resumed, if on_postgres() { 0 } else { 1 });
    runtime.log().wait_final(&left.task_id, 0).await.unwrap();
    assert_eq!(state_of(&runtime, &left.task_id).await.0, TaskState::Failed);
    runtime.shutdown(Duration::from_secs(5)).await;
    store.close().await;

    let store = Store::open(&test_database(dir.path()).await).await.unwrap();
    let runtime = Runtime::new(store.clone(), vec![broken], Limits::default());
    assert_eq!(runtime.resume_unfinished().await.unwrap(), 0);
    runtime.shutdown(Duration::from_secs(5)).await;
    store.close().await;
}

#[tokio::test]
async fn duplicate_keys_in_a_decision_are_refused_naming_the_key() {
    let app = spawn_app().await;
    let (task, context) = pause(&app, None).await;
    let message = |data: &str| {
        format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"message/send","params":{{"message":{{"kind":"message","messageId":"m-1","role":"user","taskId":"{task}","contextId":"{context}","parts":[{{"kind":"data","data":{data}}}]}}}}}}"#
        )
    };
    for (data, key) in [
        (
            r#"{"decision_type":"deny","decision_type":"approve"}"#,
            "decision_type",
        ),
        (
            r#"{"decision_type":"batch","decisions":{"call_1":"deny","call_1":"approve","call_2":"deny"}}"#,
            "call_1",
        ),
    ] {
        let body = app.post_raw(&message(data), None).await;
        let got: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(got["error"]["code"], -32602, "{got}");
        let said = got["error"]["message"].as_str().unwrap();
        assert!(said.contains(&format!("duplicate key \"{key}\"")), "{said}");
        // The same body over REST.
        let response = app
            .post(&format!("/api/approvals/{task}"))
            .header("content-type", "application/json")
            .body(data.to_owned())
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 400);
        let got: Value = response.json().await.unwrap();
        assert!(got["error"].as_str().unwrap().contains(key), "{got}");
    }
    // Nothing was decided, nothing ran.
    let got = app
        .rpc(None, request("tasks/get", json!({"id": task})))
        .await;
    assert_eq!(got["result"]["status"]["state"], "input-required");
    assert!(!app.sandbox().join("notes.txt").exists());
    assert!(app.sandbox().join("old.txt").exists());
    app.stop().await;
}

#[tokio::test]
async fn deleting_a_session_ends_its_streams_and_blocking_requests() {
    let app = spawn_app().await;
    let context = format!("ctx-{}", uuid::Uuid::new_v4());
    let blocking = {
        let client = app.client.clone();
        let endpoint = app.endpoint();
        let body = message_request(
            "message/send",
            message_v03("count to 100", None, Some(&context)),
        );
        tokio::spawn(async move {
            let response = client.post(endpoint).json(&body).send().await.unwrap();
            response.json::<Value>().await.unwrap()
        })
    };
    // Wait until the task runs, then follow it as a second client.
    let session = format!("/api/sessions/{context}");
    let (server, path) = (&app, session.as_str());
    let task = eventually("the task to start", move || async move {
        let (_, body) = server.get(path).await;
        body["tasks"][0]["id"].as_str().map(str::to_owned)
    })
    .await;
    let mut follower = app
        .open_stream(
            None,
            None,
            request("tasks/resubscribe", json!({"id": task})),
        )
        .await;
    assert_eq!(app.delete(&session).await, 204);

    let answer = within("the blocking request to end", blocking)
        .await
        .unwrap();
    assert_eq!(answer["error"]["code"], -32001, "{answer}");
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("deleted"),
        "{answer}"
    );
    let mut last = None;
    while let Some(event) = follower.next().await {
        last = Some(event);
    }
    let last = last.unwrap();
    assert_eq!(last["error"]["code"], -32001, "{last}");
    app.stop().await;
}

#[tokio::test]
async fn long_text_is_refused_or_bounded_and_tool_calls_per_turn_are_capped() {
    let app = spawn_app().await;
    // A message over the limit.
    let got = send(&app, &format!("read {}", "x".repeat(70 * 1024))).await;
    assert_eq!(got["error"]["code"], -32602, "{}", got["error"]);
    assert!(got["error"]["message"]
        .as_str()
        .unwrap()
        .contains("the limit is 65536 bytes"));

    // An unrecognised clause just under the limit is quoted back shortly, in few chunks.
    let streamed = say(&app, &format!("ls and {}", "y".repeat(60_000))).await;
    let answer = answer_text(&streamed);
    assert!(answer.len() < 1_000, "{} bytes", answer.len());

    // More tool calls in one turn than allowed: the task fails and says why; nothing ran.
    let many = vec!["ls"; 65].join(" and ");
    let got = send(&app, &many).await;
    assert_eq!(got["result"]["status"]["state"], "failed", "{got}");
    let said = got["result"]["status"]["message"]["parts"][0]["text"]
        .as_str()
        .unwrap();
    assert!(said.contains("more than 64 tool calls"), "{said}");
    let within = vec!["ls"; 64].join(" and ");
    let got = send(&app, &within).await;
    assert_eq!(got["result"]["status"]["state"], "completed");

    // A rejection reason over the limit is refused; the batch stays pending.
    let (task, context) = pause(&app, None).await;
    let reason = "r".repeat(5 * 1024);
    let got = decide_blocking(
        &app,
        &task,
        &context,
        json!({"decision_type": "deny", "reason": reason}),
    )
    .await;
    assert_eq!(got["error"]["code"], -32602, "{}", got["error"]);
    assert!(got["error"]["message"]
        .as_str()
        .unwrap()
        .contains("the limit is 4096 bytes"));
    // A reason within the limit is quoted back in a bounded number of chunks.
    let reason = "because ".repeat(500);
    let data = json!({"decision_type": "deny", "reason": reason});
    let streamed = decide(&app, &task, &context, data).await;
    let chunks = streamed
        .iter()
        .filter(|result| result["kind"] == "artifact-update")
        .count();
    assert!((1..=64).contains(&chunks), "{chunks} chunks");
    assert!(answer_text(&streamed).contains(reason.trim()));
    app.stop().await;
}

#[tokio::test]
async fn a_declared_length_over_the_limit_gets_413_at_once() {
    let app = spawn_app().await;
    let address = app.base.trim_start_matches("http://").to_owned();
    let mut socket = tokio::net::TcpStream::connect(&address).await.unwrap();
    let head = format!(
        "POST /api/a2a/default/demo HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\nContent-Length: 10737418240\r\n\r\n{{"
    );
    socket.write_all(head.as_bytes()).await.unwrap();
    let mut answer = vec![0u8; 1024];
    let read = within("an answer without the body", socket.read(&mut answer))
        .await
        .unwrap();
    let answer = String::from_utf8_lossy(&answer[..read]);
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    app.stop().await;
}

/// Sends `request` whole over a connection of its own, then reads the answer to the end, as a
/// blocking client does (Python's `urllib`): on a thread of its own, so the server works
/// meanwhile. Any error on the way is the client's failure.
fn send_whole_then_read(address: &str, request: &[u8]) -> Result<String, String> {
    use std::io::{Read, Write};
    let mut socket = std::net::TcpStream::connect(address).map_err(|err| err.to_string())?;
    socket
        .write_all(request)
        .map_err(|err| format!("the body was cut off: {err}"))?;
    let mut answer = Vec::new();
    socket
        .read_to_end(&mut answer)
        .map_err(|err| format!("the answer was lost: {err}"))?;
    Ok(String::from_utf8_lossy(&answer).into_owned())
}

#[tokio::test]
async fn a_client_that_sends_its_whole_oversized_body_before_reading_gets_the_413() {
    let app = spawn_app().await;
    let address = app.base.trim_start_matches("http://").to_owned();
    // Over the 1 MiB limit: 3 MiB, and 12 MiB, more than the sockets' buffers hold (so the
    // client is still sending when the answer comes).
    for (round, mib) in [3, 12, 3, 12].into_iter().enumerate() {
        let body = format!("{{\"padding\": \"{}\"}}", "x".repeat(mib * 1024 * 1024));
        let request = format!(
            "POST /api/a2a/default/demo HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        let address = address.clone();
        let sent =
            tokio::task::spawn_blocking(move || send_whole_then_read(&address, request.as_bytes()));
        let answer = within("the answer", sent)
            .await
            .unwrap()
            .unwrap_or_else(|err| panic!("round {round}: {err}"));
        assert!(
            answer.starts_with("HTTP/1.1 413"),
            "round {round}: {answer}"
        );
        let json = answer.split("\r\n\r\n").nth(1).unwrap_or_default();
        let json: Value = serde_json::from_str(json).unwrap();
        assert_eq!(
            json,
            json!({"error": "request body over the limit of 1048576 bytes"})
        );
    }
    app.stop().await;
}

#[tokio::test]
async fn a2a_version_values_that_are_not_visible_ascii_are_unsupported() {
    let app = spawn_app().await;
    let body = request("tasks/get", json!({"id": "nope"})).to_string();
    for version in [&b"\xff\xfe"[..], b"1.0\xa0"] {
        let got: Value = serde_json::from_str(&app.post_raw(&body, Some(version)).await).unwrap();
        assert_eq!(got["error"]["code"], -32009, "{version:?}: {got}");
    }
    app.stop().await;
}

#[tokio::test]
async fn request_ids_come_back_exactly_as_sent() {
    let app = spawn_app().await;
    for id in ["1.5", "18446744073709551616", "-0", "1e2", "\"a\\u0062\""] {
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tasks/get","params":{{"id":"nope"}}}}"#
        );
        let answer = app.post_raw(&body, None).await;
        assert!(
            answer.contains(&format!(r#""id":{id}"#)) || id.starts_with('"'),
            "{id}: {answer}"
        );
        let got: Value = serde_json::from_str(&answer).unwrap();
        assert_eq!(got["error"]["code"], -32001);
        if id.starts_with('"') {
            assert_eq!(got["id"], "ab");
        }
    }
    // In a stream too.
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":2.5,"method":"message/stream","params":{{"message":{}}}}}"#,
        message_v03("hello", None, None)
    );
    let answer = app.post_raw(&body, None).await;
    assert!(answer.contains(r#""id":2.5"#), "{answer}");
    app.stop().await;
}

#[tokio::test]
async fn forwarded_hosts_count_only_behind_a_trusted_proxy() {
    let card_url = |app: &TestApp| {
        let request = app
            .client
            .get(format!("{}/.well-known/agent-card.json", app.base))
            .header("X-Forwarded-Host", "evil.example")
            .header("X-Forwarded-Proto", "https");
        async move {
            let card: Value = request.send().await.unwrap().json().await.unwrap();
            card["url"].as_str().unwrap().to_owned()
        }
    };
    let app = spawn_app().await;
    let url = card_url(&app).await;
    assert!(url.starts_with(&app.base), "{url}");
    app.stop().await;

    let app = spawn_with(|config| config.trust_proxy = true).await;
    let url = card_url(&app).await;
    assert!(url.starts_with("https://evil.example/"), "{url}");
    app.stop().await;
}

#[tokio::test]
async fn an_approved_write_through_a_hard_link_is_refused() {
    let app = spawn_app().await;
    // The sandbox exists once the server answers.
    assert_eq!(app.get("/api/agents").await.0, 200);
    let outside = app.data_dir.path().join("outside.txt");
    std::fs::write(&outside, "keep me").unwrap();
    std::fs::hard_link(&outside, app.sandbox().join("linked.txt")).unwrap();
    let paused = say(&app, "write linked.txt: overwritten").await;
    let (task, context) = (task_id(&paused), context_id(&paused));
    let approved = decide(&app, &task, &context, json!({"decision_type": "approve"})).await;
    let answer = answer_text(&approved);
    assert!(answer.contains("hard links"), "{answer}");
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "keep me");
    app.stop().await;
}

/// Opens `fifo` for writing, without waiting, whenever a reader holds it open (a tool call
/// stuck opening it, as one was before opens stopped waiting), so such a call returns and the
/// test fails instead of hanging; says whether it ever had to.
fn rescue_a_stuck_reader(fifo: std::path::PathBuf) -> Arc<std::sync::atomic::AtomicBool> {
    use std::os::unix::fs::OpenOptionsExt;
    let rescued = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = rescued.clone();
    std::thread::spawn(move || {
        for _ in 0..600 {
            std::thread::sleep(Duration::from_millis(100));
            let opened = std::fs::OpenOptions::new()
                .write(true)
                .custom_flags(libc::O_NONBLOCK)
                .open(&fifo);
            if opened.is_ok() {
                flag.store(true, std::sync::atomic::Ordering::SeqCst);
            }
        }
    });
    rescued
}

#[tokio::test]
async fn reading_a_named_pipe_in_the_sandbox_fails_the_call_and_the_task_goes_on() {
    let app = spawn_app().await;
    // The sandbox exists once the server answers.
    assert_eq!(app.get("/api/agents").await.0, 200);
    let fifo = app.sandbox().join("pipe");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    assert!(made.unwrap().success(), "mkfifo");
    let rescued = rescue_a_stuck_reader(fifo);
    let results = say(&app, "read pipe and read readme.txt").await;
    assert_eq!(
        states(&results).last().map(String::as_str),
        Some("completed")
    );
    let answer = answer_text(&results);
    assert!(
        answer.contains("pipe is a named pipe; the file tools use regular files only"),
        "{answer}"
    );
    assert!(
        answer.contains("Welcome to the Signoff sandbox"),
        "{answer}"
    );
    assert!(
        !rescued.load(std::sync::atomic::Ordering::SeqCst),
        "the read waited for a writer of the pipe"
    );
    app.stop().await;
}

#[tokio::test]
async fn edited_arguments_that_do_not_fit_the_schema_are_refused() {
    let app = spawn_app().await;
    let (task, context) = pause(&app, None).await;
    for (args, expect) in [
        (
            json!({"path": "notes.txt", "content": "hi", "mode": "0777"}),
            "mode",
        ),
        (json!({"path": 3, "content": "hi"}), "modified_args.path"),
        (json!({"content": "hi"}), "path"),
    ] {
        let data = json!({"decision_type": "approve", "modified_args": {"call_1": args}});
        let got = decide_blocking(&app, &task, &context, data).await;
        assert_eq!(got["error"]["code"], -32602, "{got}");
        let said = got["error"]["message"].as_str().unwrap();
        assert!(said.contains("call_1") && said.contains(expect), "{said}");
    }
    let (status, body) = decide_rest(&app, None, &task, json!({"decision_type": "approve", "modified_args": {"call_1": {"path": "a", "content": "b", "x": 1}}})).await;
    assert_eq!(status, 400, "{body}");
    assert!(!app.sandbox().join("notes.txt").exists());
    assert!(!app.sandbox().join("a").exists());
    app.stop().await;
}

#[test]
fn the_release_profile_unwinds_on_panic() {
    // With `panic = "abort"` one panicking runner would take the server down for every user.
    let manifest =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../Cargo.toml")).unwrap();
    let manifest: toml::Value = toml::from_str(&manifest).unwrap();
    let profiles = &manifest["profile"];
    assert_ne!(
        profiles["release"]
            .get("panic")
            .and_then(toml::Value::as_str),
        Some("abort"),
        "the server's release profile must unwind"
    );
    // The browser UI keeps aborting (smaller wasm) in its own profile, which its build uses.
    assert_eq!(profiles["ui"]["panic"].as_str(), Some("abort"));
    let build = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../scripts/build-ui.sh"
    ))
    .unwrap();
    assert!(build.contains("cargo build --locked --profile ui --target wasm32-unknown-unknown"));
}

/// The `Authorization` scheme is case-insensitive (RFC 9110 §11.1), so `bearer TOKEN` is the
/// same token; a 401 says which scheme to use (`WWW-Authenticate: Bearer`, RFC 6750 §3).
#[tokio::test]
async fn the_bearer_scheme_is_read_without_case_and_a_401_names_it() {
    let app = spawn_with(|config| {
        config.auth = signoff_server::AuthMode::Tokens;
        config.tokens = vec!["alice-token=alice".into()];
    })
    .await;
    for authorization in [
        "Bearer alice-token",
        "bearer alice-token",
        "BEARER  alice-token",
    ] {
        let response = app
            .client
            .get(app.url("/api/sessions"))
            .header("authorization", authorization)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200, "{authorization}");
    }
    for authorization in [None, Some("Basic YWxpY2U6eA=="), Some("Bearer bob-token")] {
        let mut request = app.client.get(app.url("/api/sessions"));
        if let Some(authorization) = authorization {
            request = request.header("authorization", authorization);
        }
        let response = request.send().await.unwrap();
        assert_eq!(response.status(), 401, "{authorization:?}");
        assert_eq!(
            response.headers()["www-authenticate"],
            "Bearer",
            "{authorization:?}"
        );
    }
}

/// A client-chosen id is bounded: a 100 KB `contextId` made a session whose URL is too long for
/// any route (`414`), so it could be neither opened nor deleted, and it bloated every list.
#[tokio::test]
async fn a_client_chosen_id_longer_than_256_bytes_is_refused() {
    let app = spawn_app().await;
    let long = "c".repeat(257);
    let got = send(&app, "hi").await;
    assert_eq!(got["result"]["status"]["state"], "completed", "{got}");
    let mut message = message_v03("hi", None, Some(&long));
    let got = app
        .rpc(None, message_request("message/send", message.clone()))
        .await;
    assert_eq!(got["error"]["code"], -32602, "{got}");
    assert_eq!(
        got["error"]["message"],
        "params.message.contextId: 257 bytes; an id may have at most 256"
    );
    message["contextId"] = json!("c".repeat(256));
    message["messageId"] = json!("m".repeat(257));
    let got = app
        .rpc(None, message_request("message/send", message))
        .await;
    assert_eq!(
        got["error"]["message"],
        "params.message.messageId: 257 bytes; an id may have at most 256"
    );
    // Nothing was made of either.
    let (_, sessions) = app.get("/api/sessions").await;
    assert_eq!(
        sessions["sessions"].as_array().unwrap().len(),
        1,
        "{sessions}"
    );
}

/// A web page can send a body of a "simple" type (`text/plain`, a form, none) to this server
/// without the browser asking it first; with `--auth none` two such requests made an "always
/// allow" policy and ran `delete_file` without a sign-off. A body must be declared JSON: others
/// get `415` and change nothing.
#[tokio::test]
async fn a_body_not_declared_json_is_refused_so_a_web_page_cannot_post_one() {
    let app = spawn_app().await;
    let policy = r#"{"agent": "default/demo", "tool": "delete_file", "scope": "agent"}"#;
    let message =
        message_request("message/send", message_v03("delete readme.txt", None, None)).to_string();
    for content_type in [
        Some("text/plain;charset=UTF-8"),
        Some("application/x-www-form-urlencoded"),
        None,
    ] {
        for (path, body) in [
            ("/api/policies", policy.to_owned()),
            ("/api/a2a/default/demo", message.clone()),
        ] {
            let mut request = app.post(path).body(body);
            if let Some(content_type) = content_type {
                request = request.header("content-type", content_type);
            }
            let response = request.send().await.unwrap();
            assert_eq!(response.status(), 415, "{path} {content_type:?}");
            let got: Value = response.json().await.unwrap();
            assert!(
                got["error"]
                    .as_str()
                    .unwrap()
                    .contains("Content-Type: application/json"),
                "{got}"
            );
        }
    }
    let (_, policies) = app.get("/api/policies").await;
    assert_eq!(policies["policies"], json!([]));
    let (_, sessions) = app.get("/api/sessions").await;
    assert_eq!(sessions["sessions"], json!([]));
    assert!(app.sandbox().join("readme.txt").exists());
    // JSON, and a POST without a body (a share link), go through.
    let response = app
        .post("/api/policies")
        .header("content-type", "application/json; charset=utf-8")
        .body(policy)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 201);
    let chat = context_id(&say(&app, "hi").await);
    let response = app
        .post(&format!("/api/sessions/{chat}/shares"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 201);
}
