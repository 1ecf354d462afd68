//! The agent's first reviewer against real counterparts: an HTTP endpoint and an
//! OpenAI-compatible model, both served by the test on port 0, and a command (`reviewer.py`).
//! Each answers by the call's path (`ok…` approve, `no…` deny, `ask…` ask, `junk…` an
//! unreadable answer, `hang…` never). Covered: each outcome of each kind; a hanging reviewer
//! asks a person within its timeout; the breaker pauses the task; an override decides only its
//! call; no review of a call a rule settled; shadow mode and `policy replay`.

use std::sync::{Arc, Mutex};

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use clap::Parser;
use serde_json::{json, Value};
use signoff_server::policy_cli::{run, PolicyCli};

use crate::support::*;

/// What a stand-in answers about a call at `path`: `None` for a hang, a string for an
/// unreadable answer.
fn answer_for(path: &str, by: &str) -> Option<Value> {
    let name = path.rsplit('/').next().unwrap_or(path);
    if name.starts_with("hang") {
        return None;
    }
    if name.starts_with("junk") {
        return Some(json!("I think it is fine"));
    }
    let (outcome, risk) = if name.starts_with("ok") {
        ("approve", "low")
    } else if name.starts_with("no") {
        ("deny", "high")
    } else {
        ("ask", "medium")
    };
    Some(
        json!({"outcome": outcome, "risk": risk, "reason": format!("the {by} says {outcome} to {path}")}),
    )
}

/// What the stand-ins were asked, in order.
#[derive(Clone, Default)]
struct Asked(Arc<Mutex<Vec<Value>>>);

impl Asked {
    fn push(&self, request: Value) {
        self.0.lock().unwrap().push(request);
    }
    fn len(&self) -> usize {
        self.0.lock().unwrap().len()
    }
    fn last(&self) -> Value {
        self.0.lock().unwrap().last().cloned().unwrap()
    }
}

async fn hang_or(answer: Option<Value>) -> Value {
    match answer {
        Some(answer) => answer,
        None => {
            tokio::time::sleep(std::time::Duration::from_secs(600)).await;
            Value::Null
        }
    }
}

async fn http_review(State(asked): State<Asked>, Json(request): Json<Value>) -> Response {
    asked.push(request.clone());
    let path = request["call"]["args"]["path"]
        .as_str()
        .unwrap_or("")
        .to_owned();
    let answer = hang_or(answer_for(&path, "endpoint")).await;
    match answer.as_str() {
        Some(text) => text.to_owned().into_response(),
        None => Json(answer).into_response(),
    }
}

/// An OpenAI-compatible Chat Completions endpoint, streaming its answer as one chunk.
async fn model_review(State(asked): State<Asked>, Json(body): Json<Value>) -> Response {
    let request: Value =
        serde_json::from_str(body["messages"][1]["content"].as_str().unwrap()).unwrap();
    let path = request["call"]["args"]["path"]
        .as_str()
        .unwrap_or("")
        .to_owned();
    asked.push(body);
    let answer = hang_or(answer_for(&path, "model")).await;
    let text = match answer.as_str() {
        Some(text) => text.to_owned(),
        None => answer.to_string(),
    };
    let chunk = json!({"choices": [{"index": 0, "delta": {"content": text}}]});
    (
        [("content-type", "text/event-stream")],
        format!("data: {chunk}\n\ndata: [DONE]\n\n"),
    )
        .into_response()
}

/// The HTTP reviewer (`/review`) and the model (`/v1/chat/completions`) on port 0: their base
/// URL, and what each was asked.
async fn stand_ins() -> (String, Asked, Asked) {
    let (http, model) = (Asked::default(), Asked::default());
    let app = Router::new()
        .route("/review", post(http_review).with_state(http.clone()))
        .route(
            "/v1/chat/completions",
            post(model_review).with_state(model.clone()),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (base, http, model)
}

/// The demo agent with `reviewer` (TOML lines): writes and deletes ask, but a rule lets
/// `free-…` files be written.
fn agents(reviewer: &str) -> String {
    format!(
        r#"
[[agents]]
name = "demo"

[[agents.tools]]
kind = "builtin_files"
require_approval = ["write_file", "delete_file"]

[[agents.rules]]
tool = "write_file"
action = "allow"
when = {{ path = {{ glob = "free-*" }} }}

[agents.reviewer]
{reviewer}
"#
    )
}

async fn app_with(reviewer: &str) -> TestApp {
    let app = spawn_with_agents(&agents(reviewer), |_| {}).await;
    std::fs::create_dir_all(app.sandbox()).unwrap();
    app
}

/// The `signoff_why` of each call the results show, by the call's path.
fn whys(results: &[Value]) -> Vec<(String, Value)> {
    results
        .iter()
        .filter(|result| result["kind"] == "status-update")
        .filter_map(|result| result["status"]["message"]["parts"].as_array().cloned())
        .flatten()
        .filter(|part| part["metadata"]["kagent_type"] == "function_call")
        .map(|part| {
            let path = part["data"]["args"]["path"].as_str().unwrap().to_owned();
            (path, part["metadata"]["signoff_why"].clone())
        })
        .collect()
}

fn why_of(results: &[Value], path: &str) -> Value {
    whys(results)
        .into_iter()
        .rfind(|(seen, _)| seen == path)
        .unwrap_or_else(|| panic!("no call of {path} in {results:?}"))
        .1
}

/// The call id of the call at `path` in the results.
fn call_of(results: &[Value], path: &str) -> String {
    data_parts(results, "function_call")
        .into_iter()
        .find(|data| data["args"]["path"] == path)
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned()
}

fn last_state(results: &[Value]) -> String {
    states(results).last().cloned().unwrap()
}

#[tokio::test]
async fn an_http_reviewer_approves_asks_and_fails_closed_and_never_sees_a_settled_call() {
    let (base, asked, _) = stand_ins().await;
    let app = app_with(&format!(
        "kind = \"http\"\nurl = \"{base}/review\"\ntimeout = \"2s\""
    ))
    .await;

    let results = say(&app, "write ok.txt: hi").await;
    assert_eq!(last_state(&results), "completed", "{results:?}");
    assert_eq!(
        std::fs::read_to_string(app.sandbox().join("ok.txt")).unwrap(),
        "hi"
    );
    let why = why_of(&results, "ok.txt");
    assert_eq!(why["by"], "reviewer", "{why}");
    assert_eq!(why["outcome"], "allow");
    assert_eq!(why["risk"], "low");
    assert_eq!(why["review"]["outcome"], "approve");
    assert_eq!(why["reason"], "the endpoint says approve to ok.txt");
    // It was asked with the call, its arguments and the task's transcript.
    let request = asked.last();
    assert_eq!(request["agent"], "default/demo");
    assert_eq!(request["call"]["tool"], "write_file");
    assert_eq!(
        request["call"]["args"],
        json!({"path": "ok.txt", "content": "hi"})
    );
    assert_eq!(request["waits_because"], "The tool requires approval");
    assert_eq!(request["transcript"][0]["role"], "user");
    assert_eq!(request["transcript"][0]["text"], "write ok.txt: hi");
    // Its approval is in the signed receipt of the decision, as the reviewer's.
    let receipts = sql_count(
        app.data_dir.path(),
        "SELECT COUNT(*) FROM receipts WHERE body LIKE ?1",
        "%\"channel\":\"reviewer\"%",
    )
    .await;
    assert_eq!(receipts, 1);

    for (text, path, outcome) in [
        ("write ask.txt: hi", "ask.txt", "ask"),
        ("write junk.txt: hi", "junk.txt", "failed"),
    ] {
        let results = say(&app, text).await;
        assert_eq!(last_state(&results), "input-required", "{results:?}");
        let why = why_of(&results, path);
        assert_eq!(why["by"], "reviewer");
        assert_eq!(why["outcome"], "ask");
        assert_eq!(why["review"]["outcome"], outcome, "{why}");
        assert!(!app.sandbox().join(path).exists());
    }
    let results = say(&app, "write junk2.txt: hi").await;
    let reason = why_of(&results, "junk2.txt")["reason"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(reason.contains("not the expected JSON object"), "{reason}");
    // An endpoint that never answers asks a person once its timeout passes.
    let results = say(&app, "write hang.txt: hi").await;
    assert_eq!(last_state(&results), "input-required", "{results:?}");
    let why = why_of(&results, "hang.txt");
    assert_eq!(why["review"]["outcome"], "failed");
    assert_eq!(why["reason"], "The reviewer did not answer within 2s.");

    // A call a rule allowed, and one that needs no approval, are never reviewed.
    let before = asked.len();
    let results = say(&app, "write free-a.txt: hi and read ok.txt").await;
    assert_eq!(last_state(&results), "completed", "{results:?}");
    assert_eq!(why_of(&results, "free-a.txt")["by"], "rule");
    assert_eq!(asked.len(), before, "no review of a settled call");
}

#[tokio::test]
async fn an_override_decides_only_the_denied_call_it_names() {
    let (base, _, _) = stand_ins().await;
    let app = app_with(&format!("kind = \"http\"\nurl = \"{base}/review\"")).await;

    let results = say(&app, "write no.txt: 1 and write ask.txt: 2").await;
    assert_eq!(last_state(&results), "input-required", "{results:?}");
    let denied = why_of(&results, "no.txt");
    assert_eq!(denied["review"]["outcome"], "deny", "{denied}");
    assert_eq!(denied["risk"], "high");
    assert!(denied["summary"].as_str().unwrap().contains("override"));
    // Approving the batch runs what the reviewer left to the person, not what it denied.
    let (task, context) = (task_id(&results), context_id(&results));
    let decided = decide(&app, &task, &context, json!({"decision_type": "approve"})).await;
    assert_eq!(last_state(&decided), "completed", "{decided:?}");
    assert!(app.sandbox().join("ask.txt").exists());
    assert!(!app.sandbox().join("no.txt").exists());

    // The override names the denied call: it runs, and nothing else does.
    let results = say(&app, "write no2.txt: 1 and write ask2.txt: 2").await;
    let (task, context) = (task_id(&results), context_id(&results));
    let (no, ask) = (call_of(&results, "no2.txt"), call_of(&results, "ask2.txt"));
    let decision = json!({"decision_type": "batch", "decisions": {no: "approve", ask: "reject"}});
    let decided = decide(&app, &task, &context, decision).await;
    assert_eq!(last_state(&decided), "completed", "{decided:?}");
    assert!(app.sandbox().join("no2.txt").exists());
    assert!(!app.sandbox().join("ask2.txt").exists());
}

#[tokio::test]
async fn a_command_reviewer_runs_in_a_clean_environment_and_a_hanging_one_asks_a_person() {
    let folder = tempfile::tempdir().unwrap();
    let log = folder.path().join("reviews.jsonl");
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/api/reviewer.py");
    let app = app_with(&format!(
        "kind = \"command\"\ncommand = [\"python3\", \"{script}\", \"{}\"]\ntimeout = \"2s\"",
        log.display()
    ))
    .await;
    let results = say(&app, "write ok.txt: hi").await;
    assert_eq!(last_state(&results), "completed", "{results:?}");
    assert_eq!(why_of(&results, "ok.txt")["review"]["outcome"], "approve");
    let results = say(&app, "write no.txt: hi").await;
    assert_eq!(last_state(&results), "input-required");
    assert_eq!(why_of(&results, "no.txt")["review"]["outcome"], "deny");
    assert_eq!(
        why_of(&results, "no.txt")["reason"],
        "the command says deny to no.txt"
    );
    // A reviewer that never answers is killed at its timeout, and the person decides.
    let results = say(&app, "write hang.txt: hi").await;
    assert_eq!(last_state(&results), "input-required", "{results:?}");
    let why = why_of(&results, "hang.txt");
    assert_eq!(why["review"]["outcome"], "failed", "{why}");
    assert_eq!(why["reason"], "The reviewer did not answer within 2s.");
    // Each review ran with nothing of the server's environment but a PATH.
    let reviews: Vec<Value> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(reviews.len(), 3);
    for review in &reviews {
        for name in review["env"].as_array().unwrap() {
            // Python adds LC_CTYPE itself when the locale is C (PEP 538).
            assert!(name == "PATH" || name == "LC_CTYPE", "{review}");
        }
    }
    assert_eq!(reviews[1]["request"]["call"]["args"]["path"], "no.txt");
}

#[tokio::test]
async fn a_model_reviewer_reads_the_documented_prompt_and_each_outcome_counts() {
    let (base, _, asked) = stand_ins().await;
    let app = app_with(&format!(
        "kind = \"model\"\nbase_url = \"{base}/v1\"\nmodel = \"reviewer-1\""
    ))
    .await;
    let results = say(&app, "write ok.txt: hi").await;
    assert_eq!(last_state(&results), "completed", "{results:?}");
    assert_eq!(why_of(&results, "ok.txt")["review"]["outcome"], "approve");
    let body = asked.last();
    assert_eq!(body["model"], "reviewer-1");
    assert_eq!(body["messages"][0]["role"], "system");
    assert_eq!(
        body["messages"][0]["content"],
        signoff_server::agent::reviewer::prompt::MODEL_PROMPT
    );
    assert!(body.get("tools").is_none());
    for (text, path, outcome) in [
        ("write no.txt: hi", "no.txt", "deny"),
        ("write ask.txt: hi", "ask.txt", "ask"),
        ("write junk.txt: hi", "junk.txt", "failed"),
    ] {
        let results = say(&app, text).await;
        assert_eq!(last_state(&results), "input-required", "{results:?}");
        assert_eq!(why_of(&results, path)["review"]["outcome"], outcome);
    }
}

#[tokio::test]
async fn three_denials_in_a_row_pause_the_task_for_a_person() {
    let (base, asked, _) = stand_ins().await;
    let app = app_with(&format!("kind = \"http\"\nurl = \"{base}/review\"")).await;
    let mut results = say(
        &app,
        "write no1.txt: a then write no2.txt: b then write no3.txt: c then write ok.txt: d",
    )
    .await;
    let (task, context) = (task_id(&results), context_id(&results));
    for path in ["no1.txt", "no2.txt", "no3.txt"] {
        assert_eq!(last_state(&results), "input-required", "{results:?}");
        assert_eq!(why_of(&results, path)["review"]["outcome"], "deny");
        results = decide(&app, &task, &context, json!({"decision_type": "reject"})).await;
    }
    // The reviewer would approve this one, but the breaker is open: a person decides it.
    assert_eq!(last_state(&results), "input-required", "{results:?}");
    let why = why_of(&results, "ok.txt");
    assert_eq!(why["review"]["outcome"], "paused", "{why}");
    assert_eq!(
        asked.len(),
        3,
        "the reviewer was not asked about the fourth call"
    );
    let results = decide(&app, &task, &context, json!({"decision_type": "approve"})).await;
    assert_eq!(last_state(&results), "completed", "{results:?}");
    assert!(app.sandbox().join("ok.txt").exists());
}

#[tokio::test]
async fn a_shadow_reviewer_decides_nothing_and_the_replay_compares_it_with_the_people() {
    let (base, asked, _) = stand_ins().await;
    let reviewer = format!("kind = \"http\"\nurl = \"{base}/review\"\nmode = \"shadow\"");
    let app = app_with(&reviewer).await;
    for path in ["ok.txt", "no.txt"] {
        let results = say(&app, &format!("write {path}: hi")).await;
        assert_eq!(last_state(&results), "input-required", "{results:?}");
        let why = why_of(&results, path);
        assert_eq!(why["by"], "default", "{why}");
        assert_eq!(why["review"]["shadow"], true);
        let (task, context) = (task_id(&results), context_id(&results));
        // The person approves both: a shadow denial is no denial.
        let decided = decide(&app, &task, &context, json!({"decision_type": "approve"})).await;
        assert_eq!(last_state(&decided), "completed", "{decided:?}");
        assert!(app.sandbox().join(path).exists());
    }
    assert_eq!(asked.len(), 2);
    let url = database_url(app.data_dir.path()).await;
    let data = app.stop().await;
    let policies = data.path().join("candidate");
    std::fs::create_dir_all(&policies).unwrap();
    std::fs::write(
        policies.join("reads.cedar"),
        "@id(\"reads\")\npermit (principal, action, resource) when { resource.readOnlyHint };\n",
    )
    .unwrap();
    let agents_file = data.path().join("agents.toml");
    let mut args: Vec<String> = ["policy", "replay", "--since", "1d", "--agents"]
        .iter()
        .map(|arg| (*arg).to_owned())
        .collect();
    args.push(agents_file.display().to_string());
    args.push("--policies".into());
    args.push(policies.display().to_string());
    match url {
        Some(url) => args.extend(["--database".to_owned(), url]),
        None => args.extend(["--data-dir".to_owned(), data.path().display().to_string()]),
    }
    let mut out = Vec::new();
    assert!(run(PolicyCli::parse_from(&args), &mut out).await.unwrap());
    let report = String::from_utf8(out).unwrap();
    assert!(
        report.contains("The reviewer against the people who decided:"),
        "{report}"
    );
    assert!(
        report.contains("reviewer approve (shadow), people approved: 1 calls"),
        "{report}"
    );
    assert!(
        report.contains("reviewer deny (shadow), people approved: 1 calls"),
        "{report}"
    );
}
