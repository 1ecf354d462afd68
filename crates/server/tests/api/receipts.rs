//! Signed decision receipts from a real run: decisions of every kind (settled at once, a
//! person's over REST, a rule's, a Cedar policy's, an expiry, a cancel) each leave a receipt;
//! the export (REST and `signoff audit export`) verifies offline with `signoff audit verify`,
//! and stops verifying when one receipt is altered, removed or swapped, naming it; the chain
//! goes on across a restart and a key rotation, every key still served.

use std::path::Path;

use clap::Parser;
use serde_json::{json, Value};
use signoff_server::audit_cli::{self, AuditCli};

use crate::support::*;

/// A chat agent (writes and deletes asked, `.git/**` denied by a rule), one whose approvals
/// expire in a second, and one served to programs (Read allowed, `rm` denied by a rule).
const AGENTS: &str = r#"
[[agents]]
name = "demo"

[[agents.tools]]
kind = "builtin_files"
require_approval = ["write_file", "delete_file"]

[[agents.rules]]
tool = "write_file"
action = "deny"
when = { path = { glob = ".git/**" } }

[[agents]]
name = "brief"
approval_timeout = "1s"
on_timeout = "reject"

[[agents.tools]]
kind = "builtin_files"
require_approval = ["write_file", "delete_file"]

[[agents]]
name = "gate"
serve_mcp = true

[[agents.tools]]
kind = "permission_prompts"
name = "claude-code"
allow = ["Read"]

[[agents.rules]]
tool = "Bash"
action = "deny"
when = { command = { regex = ".*\\brm\\b.*" } }
"#;

/// A deployment policy that allows writes under notes/.
const POLICY: &str = r#"
@id("notes-free")
permit (principal, action, resource == Signoff::Tool::"write_file")
when { context.args.path like "notes/*" };
"#;

async fn start(data_dir: tempfile::TempDir) -> TestApp {
    let policies = data_dir.path().join("policies");
    std::fs::create_dir_all(&policies).unwrap();
    std::fs::write(policies.join("main.cedar"), POLICY).unwrap();
    let agents = write_agents(data_dir.path(), AGENTS);
    spawn_in(data_dir, move |config| {
        config.agents_file = Some(agents);
        config.policies_dir = Some(policies);
    })
    .await
}

/// `signoff audit ARGS…` in-process: its exit code and what it wrote.
async fn audit(args: &[&str]) -> (i32, String) {
    let cli = AuditCli::parse_from(std::iter::once("audit").chain(args.iter().copied()));
    let mut out = Vec::new();
    let code = audit_cli::run(cli, &mut out)
        .await
        .unwrap_or_else(|err| panic!("audit {args:?}: {err}"));
    (code, String::from_utf8(out).unwrap())
}

/// The store arguments of `signoff audit export` for the test's database.
async fn store_args(data_dir: &Path) -> Vec<String> {
    let mut args = vec!["--data-dir".to_owned(), data_dir.display().to_string()];
    if let Some(url) = database_url(data_dir).await {
        args.extend(["--database".to_owned(), url]);
    }
    args
}

/// The receipts of an export (its lines after the header).
fn receipts(export: &str) -> Vec<Value> {
    export
        .lines()
        .skip(1)
        .map(|line| serde_json::from_str::<Value>(line).unwrap()["receipt"].clone())
        .collect()
}

/// Makes decisions of every kind; how many receipts they leave.
async fn decide_every_way(app: &TestApp) -> usize {
    // Settled at once: allowed and denied by the gate, no chat.
    for (tool, arguments, status) in [
        ("Read", json!({"file_path": "README.md"}), "allowed"),
        ("Bash", json!({"command": "rm -rf build"}), "rejected"),
    ] {
        let (code, body) = app
            .post_json_as(
                "/api/approvals/requests?wait=5",
                None,
                &json!({"agent": "default/gate", "tool": tool, "arguments": arguments}),
            )
            .await;
        assert_eq!(
            (code, body["status"].as_str()),
            (201, Some(status)),
            "{body}"
        );
    }
    // A person's decision over REST on two held calls: one approved, one rejected.
    let results = say(app, "write notes.txt: hi and delete old.txt").await;
    let task = task_id(&results);
    let (code, body) = decide_rest(
        app,
        None,
        &task,
        json!({"decision_type": "batch", "decisions": {"call_1": "approve", "call_2": "deny"}}),
    )
    .await;
    assert_eq!(code, 200, "{body}");
    wait_for_state(app, &task, "completed").await;
    // A rule's denial and a policy's allowance, recorded with their calls.
    let results = say(app, "write .git/config: x").await;
    wait_for_state(app, &task_id(&results), "completed").await;
    let results = say(app, "write notes/today.txt: x").await;
    wait_for_state(app, &task_id(&results), "completed").await;
    // An expiry of two held calls.
    let brief = "/api/a2a/default/brief";
    let results = send_stream(
        app,
        brief,
        message_v03("write a.txt: x and delete old.txt", None, None),
    )
    .await;
    wait_for_state_at(app, brief, &task_id(&results), "completed").await;
    // A cancel of two held calls.
    let results = say(app, "write b.txt: y and delete old.txt").await;
    let task = task_id(&results);
    let canceled = app
        .rpc(None, request("tasks/cancel", json!({"id": task})))
        .await;
    assert_eq!(
        canceled["result"]["status"]["state"], "canceled",
        "{canceled}"
    );
    2 + 2 + 1 + 1 + 2 + 2
}

/// Each event is valid against OCSF 1.3.0's API Activity class (its JSON Schema, made by a
/// pinned package: `tests/fixtures/ocsf/README.md`).
fn assert_valid_ocsf(events: &[Value]) {
    let schema: Value = serde_json::from_str(include_str!(
        "../fixtures/ocsf/api_activity-1.3.0.schema.json"
    ))
    .unwrap();
    let validator = jsonschema::options().offline().build(&schema).unwrap();
    for event in events {
        let errors: Vec<String> = validator
            .iter_errors(event)
            .map(|error| format!("{} at {}", error, error.instance_path()))
            .collect();
        assert!(errors.is_empty(), "{errors:?} in {event}");
        assert_eq!(event["class_uid"], 6003, "{event}");
    }
    // The schema does check: an event without its API is not one.
    let mut broken = events[0].clone();
    broken.as_object_mut().unwrap().remove("api");
    assert!(!validator.is_valid(&broken));
}

#[tokio::test]
async fn receipts_of_every_kind_of_decision_verify_and_show_tampering() {
    let app = start(tempfile::tempdir().unwrap()).await;
    let made = decide_every_way(&app).await;

    // The REST export (the local user is an operator) and the CLI's are the same chain.
    let response = app
        .client
        .get(app.url("/api/audit/receipts"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let over_rest = response.text().await.unwrap();
    let dir = app.data_dir.path().to_owned();
    let file = dir.join("export.jsonl");
    let mut args = vec!["export".to_owned(), "--out".to_owned()];
    args.push(file.display().to_string());
    args.extend(store_args(&dir).await);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    assert_eq!(audit(&args).await.0, 0);
    let exported = std::fs::read_to_string(&file).unwrap();
    assert_eq!(receipts(&exported), receipts(&over_rest));

    let chain = receipts(&exported);
    assert_eq!(chain.len(), made, "{exported}");
    let channels: Vec<&str> = chain
        .iter()
        .map(|r| r["channel"].as_str().unwrap())
        .collect();
    for channel in ["policy", "rule", "rest", "expiry", "cancel"] {
        assert!(channels.contains(&channel), "{channel} in {channels:?}");
    }
    let verdicts: Vec<&str> = chain
        .iter()
        .map(|r| r["verdict"].as_str().unwrap())
        .collect();
    for verdict in ["approve", "deny", "expire", "cancel"] {
        assert!(verdicts.contains(&verdict), "{verdict} in {verdicts:?}");
    }
    let by_person = chain.iter().find(|r| r["channel"] == "rest").unwrap();
    assert_eq!(by_person["auth"], "none", "{by_person}");
    assert_eq!(by_person["args_sha256"].as_str().unwrap().len(), 64);
    assert!(chain
        .iter()
        .all(|r| r["task_id"].is_null() == (r["tool"] == "Read" || r["tool"] == "Bash")));

    let path = file.display().to_string();
    let (code, said) = audit(&["verify", &path]).await;
    assert_eq!(code, 0, "{said}");
    assert!(said.contains(&format!("{made} receipts")), "{said}");

    // With the keys served apart from the export.
    let (code, keys) = app.get("/api/audit/keys").await;
    assert_eq!(code, 200);
    assert_eq!(keys["keys"].as_array().unwrap().len(), 1, "{keys}");
    let keys_file = dir.join("keys.json");
    std::fs::write(&keys_file, keys.to_string()).unwrap();
    let keys_path = keys_file.display().to_string();
    assert_eq!(audit(&["verify", &path, "--keys", &keys_path]).await.0, 0);

    // One byte altered, one removed, two swapped: exit 1, naming the first bad receipt.
    let lines: Vec<String> = exported.lines().map(str::to_owned).collect();
    let tampered = dir.join("tampered.jsonl");
    let tampered_path = tampered.display().to_string();
    let check = |lines: Vec<String>| {
        std::fs::write(&tampered, lines.join("\n") + "\n").unwrap();
    };
    let mut altered = lines.clone();
    altered[4] = altered[4].replacen("\"verdict\":\"", "\"verdict\":\"x", 1);
    check(altered);
    let (code, said) = audit(&["verify", &tampered_path]).await;
    assert_eq!(code, 1, "{said}");
    assert!(said.contains("broken at receipt 4"), "{said}");
    let mut removed = lines.clone();
    removed.remove(3);
    check(removed);
    let (code, said) = audit(&["verify", &tampered_path]).await;
    assert!(code == 1 && said.contains("broken at receipt 3"), "{said}");
    let mut swapped = lines.clone();
    swapped.swap(5, 6);
    check(swapped);
    let (code, said) = audit(&["verify", &tampered_path]).await;
    assert!(code == 1 && said.contains("broken at receipt 5"), "{said}");
    // What cannot be read exits 2.
    std::fs::write(&tampered, "no export\n").unwrap();
    assert_eq!(audit(&["verify", &tampered_path]).await.0, 2);
    let missing = dir.join("missing.jsonl").display().to_string();
    assert!(audit_cli::run(
        AuditCli::parse_from(["audit", "verify", missing.as_str()]),
        &mut Vec::new()
    )
    .await
    .is_err());

    // The OCSF export: one API Activity event per receipt.
    let response = app
        .client
        .get(app.url("/api/audit/receipts?format=ocsf"))
        .send()
        .await
        .unwrap();
    let events: Vec<Value> = response
        .text()
        .await
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(events.len(), made);
    assert_valid_ocsf(&events);
    let (code, _) = app.get("/api/audit/receipts?format=xml").await;
    assert_eq!(code, 400);

    // A restart on a rotated key: the chain goes on, and both keys are served and exported.
    let data_dir = app.stop().await;
    let data = data_dir.path().display().to_string();
    let (code, said) = audit(&["rotate-key", "--data-dir", &data]).await;
    assert_eq!(code, 0, "{said}");
    let app = start(data_dir).await;
    let results = say(&app, "write after.txt: z").await;
    let task = task_id(&results);
    let (code, body) = decide_rest(&app, None, &task, json!({"decision_type": "approve"})).await;
    assert_eq!(code, 200, "{body}");
    wait_for_state(&app, &task, "completed").await;
    let (_, keys) = app.get("/api/audit/keys").await;
    assert_eq!(keys["keys"].as_array().unwrap().len(), 2, "{keys}");
    let response = app
        .client
        .get(app.url("/api/audit/receipts"))
        .send()
        .await
        .unwrap();
    std::fs::write(&file, response.text().await.unwrap()).unwrap();
    let (code, said) = audit(&["verify", &path]).await;
    assert_eq!(code, 0, "{said}");
    assert!(said.contains(&format!("{} receipts", made + 1)), "{said}");
    let chain = receipts(&std::fs::read_to_string(&file).unwrap());
    assert_ne!(chain[0]["kid"], chain[made]["kid"], "signed by the new key");
    // The old key alone no longer verifies the new receipt.
    let (code, said) = audit(&["verify", &path, "--keys", &keys_path]).await;
    assert!(
        code == 1 && said.contains(&format!("receipt {}", made + 1)),
        "{said}"
    );
    app.stop().await;
}

#[tokio::test]
async fn only_operators_export_the_receipts_and_anyone_reads_the_keys() {
    let app = spawn_with(|config| {
        config.auth = signoff_server::AuthMode::Tokens;
        config.tokens = vec!["tA=alice:ops".into(), "tB=bob".into()];
        config.operator_groups = vec!["ops".into()];
    })
    .await;
    let (code, body) = app.get_as("/api/audit/receipts", Some("tB")).await;
    assert_eq!(code, 403, "{body}");
    assert!(
        body["error"].as_str().unwrap().contains("operators"),
        "{body}"
    );
    let response = app
        .client
        .get(app.url("/api/audit/receipts"))
        .bearer_auth("tA")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let export = response.text().await.unwrap();
    assert_eq!(
        export.lines().count(),
        1,
        "a header, no receipt yet: {export}"
    );
    let (code, keys) = app.get_as("/api/audit/keys", Some("tB")).await;
    assert_eq!(code, 200, "{keys}");
    assert_eq!(keys["keys"][0]["crv"], "Ed25519", "{keys}");
    app.stop().await;
}
