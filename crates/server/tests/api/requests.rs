//! Calls asked for from outside: approval requests over REST and the MCP endpoint of an agent
//! served to programs (`serve_mcp`), with its permission prompts (`approve`, the shape Claude
//! Code's `--permission-prompt-tool` asks with) and its own tools, gated as a model's calls are.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use crate::support::*;

/// An agent served to programs: permission prompts (Read allowed, `rm` in a Bash command
/// denied by a rule, the rest asked) and the built-in file tools (writes asked).
const SERVED: &str = r#"
[[agents]]
name = "gate"
serve_mcp = true

[[agents.tools]]
kind = "permission_prompts"
name = "claude-code"
allow = ["Read"]

[[agents.tools]]
kind = "builtin_files"
require_approval = ["write_file"]

[[agents.rules]]
tool = "Bash"
action = "deny"
when = { command = { regex = ".*\\brm\\b.*" } }

[[agents]]
name = "demo"
"#;

const MCP: &str = "/api/mcp/default/gate";

async fn ask(app: &TestApp, body: Value) -> (u16, Value) {
    app.post_json_as("/api/approvals/requests?wait=5", None, &body)
        .await
}

/// The pending batch of `task`, once it waits (the runner screens the call first).
async fn pending_batch(app: &TestApp, task: &str) -> Value {
    for _ in 0..200 {
        let (_, body) = app.get("/api/approvals").await;
        let found = body["approvals"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|batch| batch["taskId"] == task)
            .cloned();
        if let Some(batch) = found {
            return batch;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("the request of {task} never waited in the inbox");
}

#[tokio::test]
async fn a_request_waits_for_a_person_and_its_asker_reads_the_rejection_and_its_reason() {
    let app = spawn_with_agents(SERVED, |_| {}).await;
    let (status, body) = app
        .post_json_as(
            "/api/approvals/requests",
            None,
            &json!({"agent": "default/gate", "tool": "Write",
                    "arguments": {"file_path": "/srv/app/deploy.sh", "content": "echo hi"}}),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(body["status"], "waiting", "{body}");
    let task = body["taskId"].as_str().unwrap().to_owned();
    let batch = pending_batch(&app, &task).await;
    assert_eq!(batch["calls"][0]["name"], "Write", "{batch}");
    assert_eq!(batch["calls"][0]["server"], "claude-code", "{batch}");
    let (status, _) = decide_rest(
        &app,
        None,
        &task,
        json!({"decision_type": "deny", "reason": "not on the prod box"}),
    )
    .await;
    assert_eq!(status, 200);
    let (status, body) = app
        .get(&format!("/api/approvals/requests/{task}?wait=10"))
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["status"], "rejected", "{body}");
    assert_eq!(body["reason"], "not on the prod box", "{body}");
    assert!(body.get("arguments").is_none(), "{body}");
}

#[tokio::test]
async fn an_edit_prompt_waits_with_the_diff_it_makes() {
    let app = spawn_with_agents(SERVED, |_| {}).await;
    let (status, body) = ask(
        &app,
        json!({"agent": "default/gate", "tool": "Edit", "arguments": {"file_path": "/w/notes.txt",
               "old_string": "line two", "new_string": "line 2", "replace_all": false}}),
    )
    .await;
    assert_eq!(
        (status, body["status"].as_str()),
        (201, Some("waiting")),
        "{body}"
    );
    let batch = pending_batch(&app, body["taskId"].as_str().unwrap()).await;
    let preview = batch["calls"][0]["metadata"]["preview"]
        .as_str()
        .unwrap_or_default();
    assert!(preview.ends_with("@@\n-line two\n+line 2\n"), "{batch}");
}

#[tokio::test]
async fn rules_settle_a_request_without_asking_anyone() {
    let app = spawn_with_agents(SERVED, |_| {}).await;
    let (status, body) = ask(
        &app,
        json!({"agent": "default/gate", "tool": "Read", "arguments": {"file_path": "README.md"}}),
    )
    .await;
    assert_eq!(
        (status, body["status"].as_str()),
        (201, Some("allowed")),
        "{body}"
    );
    assert_eq!(body["arguments"], json!({"file_path": "README.md"}));
    assert!(
        body.get("result").is_none(),
        "a permission prompt runs nothing here: {body}"
    );
    let (status, body) = ask(
        &app,
        json!({"agent": "default/gate", "tool": "Bash", "arguments": {"command": "rm -rf build"}}),
    )
    .await;
    assert_eq!(
        (status, body["status"].as_str()),
        (201, Some("rejected")),
        "{body}"
    );
    assert!(body["reason"].as_str().unwrap().contains("rule"), "{body}");
    let (_, inbox) = app.get("/api/approvals").await;
    assert_eq!(inbox["approvals"], json!([]), "{inbox}");

    // Settled at once: no chat was opened, and the audit of settled calls has both, newest
    // first, each with what settled it; an answer's id reads it back.
    assert!(body.get("contextId").is_none(), "{body}");
    let (_, sessions) = app.get("/api/sessions").await;
    assert_eq!(sessions["sessions"], json!([]), "{sessions}");
    let (status, settled) = app.get("/api/approvals?state=settled").await;
    assert_eq!(status, 200, "{settled}");
    let calls = settled["calls"].as_array().unwrap();
    assert_eq!(calls.len(), 2, "{settled}");
    assert_eq!(
        (
            &calls[0]["tool"],
            &calls[0]["verdict"],
            &calls[0]["why"]["by"]
        ),
        (&json!("Bash"), &json!("deny"), &json!("rule")),
        "{settled}"
    );
    assert_eq!(calls[0]["id"], body["taskId"], "{settled}");
    assert_eq!(
        (&calls[1]["tool"], &calls[1]["verdict"]),
        (&json!("Read"), &json!("approve")),
        "{settled}"
    );
    assert_eq!(calls[1]["arguments"], json!({"file_path": "README.md"}));
    let task = body["taskId"].as_str().unwrap();
    let (status, again) = app.get(&format!("/api/approvals/requests/{task}")).await;
    assert_eq!(
        (status, &again["status"]),
        (200, &json!("rejected")),
        "{again}"
    );
    assert_eq!(again["reason"], body["reason"], "{again}");
    let (status, _) = app.get("/api/approvals?state=settled&limit=0").await;
    assert_eq!(status, 400);
}

#[tokio::test]
async fn bad_requests_are_refused_and_name_what_is_wrong() {
    let app = spawn_with_agents(SERVED, |_| {}).await;
    let cases = [
        (
            json!({"agent": "default/gate", "tool": "Write", "arguments": "x"}),
            400,
            "object",
        ),
        (
            json!({"agent": "default/gate", "tool": "", "arguments": {}}),
            400,
            "empty",
        ),
        (
            json!({"agent": "gate", "tool": "Write", "arguments": {}}),
            400,
            "namespace/name",
        ),
        (
            json!({"agent": "default/nobody", "tool": "Write", "arguments": {}}),
            404,
            "no agent",
        ),
        (
            json!({"agent": "default/demo", "tool": "write_file", "arguments": {}}),
            404,
            "serve_mcp",
        ),
        (
            json!({"agent": "default/gate", "tool": "W", "arguments": {}, "extra": 1}),
            400,
            "extra",
        ),
    ];
    for (body, status, says) in cases {
        let (got, answer) = app
            .post_json_as("/api/approvals/requests", None, &body)
            .await;
        assert_eq!(got, status, "{body} -> {answer}");
        assert!(
            answer["error"].as_str().unwrap().contains(says),
            "{body} -> {answer}"
        );
    }
    let (status, answer) = app.get("/api/approvals/requests/nonesuch?wait=100").await;
    assert_eq!(status, 400, "{answer}");
    let (status, _) = app.get("/api/approvals/requests/nonesuch").await;
    assert_eq!(status, 404);
}

/// One JSON-RPC request to the MCP endpoint, answered as JSON.
async fn mcp(app: &TestApp, id: u64, method: &str, params: Value) -> Value {
    let response = app
        .post(MCP)
        .header("accept", "application/json")
        .json(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    response.json().await.unwrap()
}

/// The JSON text a tool result carries.
fn result_json(answer: &Value) -> Value {
    let text = answer["result"]["content"][0]["text"].as_str().unwrap();
    serde_json::from_str(text).unwrap()
}

#[tokio::test]
async fn an_mcp_client_lists_the_tools_and_its_permission_prompt_gets_the_approvers_edit() {
    let app = Arc::new(spawn_with_agents(SERVED, |_| {}).await);
    let init = mcp(
        &app,
        1,
        "initialize",
        json!({"protocolVersion": "2025-06-18",
        "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}),
    )
    .await;
    assert_eq!(init["result"]["protocolVersion"], "2025-06-18", "{init}");
    // The stateless revision's discover needs its envelope.
    let bare = mcp(&app, 2, "server/discover", json!({})).await;
    assert_eq!(bare["error"]["code"], -32602, "{bare}");
    let list = mcp(&app, 3, "tools/list", json!({})).await;
    let names: Vec<&str> = list["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"approve") && names.contains(&"write_file"),
        "{names:?}"
    );

    let asking = tokio::spawn({
        let app = app.clone();
        async move {
            mcp(
                &app,
                4,
                "tools/call",
                json!({"name": "approve", "arguments": {
                "tool_name": "Write", "tool_use_id": "toolu_1",
                "input": {"file_path": "/tmp/x.txt", "content": "draft"}}}),
            )
            .await
        }
    });
    let (_, inbox) = wait_for_pending(&app).await;
    let task = inbox["taskId"].as_str().unwrap().to_owned();
    let edited = json!({"file_path": "/tmp/x.txt", "content": "reviewed"});
    let (status, body) = decide_rest(
        &app,
        None,
        &task,
        json!({"decision_type": "approve", "modified_args": {"call_1": edited}}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let answer = asking.await.unwrap();
    assert_eq!(
        result_json(&answer),
        json!({"behavior": "allow", "updatedInput": edited}),
        "{answer}"
    );
}

/// One request of the stateless revision (2026-07-28, or `version`): its envelope in `_meta`,
/// and routing headers (`None`: those that say what the body says); the status and the answer.
async fn stateless_at(
    app: &TestApp,
    version: &str,
    method: &str,
    mut params: Value,
    headers: Option<&[(&str, &str)]>,
) -> (u16, Value) {
    params["_meta"] = json!({"io.modelcontextprotocol/protocolVersion": version,
                             "io.modelcontextprotocol/clientCapabilities": {}});
    let name = params["name"].as_str().map(str::to_owned);
    let mut routed = vec![("mcp-protocol-version", version), ("mcp-method", method)];
    if let Some(name) = &name {
        routed.push(("mcp-name", name));
    }
    let mut request = app.post(MCP).header("accept", "application/json");
    for (header, value) in headers.unwrap_or(&routed) {
        request = request.header(*header, *value);
    }
    let response = request
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}))
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap())
}

async fn stateless(
    app: &TestApp,
    method: &str,
    params: Value,
    headers: Option<&[(&str, &str)]>,
) -> (u16, Value) {
    stateless_at(app, "2026-07-28", method, params, headers).await
}

#[tokio::test]
async fn a_stateless_client_discovers_lists_and_calls_and_headers_that_disagree_are_refused() {
    let app = spawn_with_agents(SERVED, |_| {}).await;
    let (status, discover) = stateless(&app, "server/discover", json!({}), None).await;
    assert_eq!(status, 200, "{discover}");
    assert_eq!(
        discover["result"]["supportedVersions"][0], "2026-07-28",
        "{discover}"
    );
    assert_eq!(discover["result"]["resultType"], "complete");
    let (_, list) = stateless(&app, "tools/list", json!({}), None).await;
    assert_eq!(list["result"]["resultType"], "complete", "{list}");
    assert_eq!(list["result"]["cacheScope"], "private", "{list}");

    // Routed as a read while the body writes: refused, and nothing waits or runs.
    let write = json!({"name": "write_file", "arguments": {"path": "w.txt", "content": "x"}});
    let lying = [
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/call"),
        ("mcp-name", "read_file"),
    ];
    let (status, refused) = stateless(&app, "tools/call", write.clone(), Some(&lying)).await;
    assert_eq!(
        (status, &refused["error"]["code"]),
        (400, &json!(-32020)),
        "{refused}"
    );
    let (_, inbox) = app.get("/api/approvals").await;
    assert_eq!(inbox["approvals"], json!([]), "{inbox}");
    assert!(!app.sandbox().join("w.txt").exists());

    let (status, refused) = stateless_at(&app, "2027-01-01", "tools/list", json!({}), None).await;
    assert_eq!(status, 400, "{refused}");
    assert_eq!(refused["error"]["code"], -32022, "{refused}");
    assert_eq!(refused["error"]["data"]["supported"], json!(["2026-07-28"]));
    let (status, refused) = stateless(&app, "ping", json!({}), None).await;
    assert_eq!(
        (status, &refused["error"]["code"]),
        (404, &json!(-32601)),
        "{refused}"
    );

    // A call that needs no sign-off answers at once, marked complete.
    std::fs::write(app.sandbox().join("r.txt"), "hello").unwrap();
    let read = json!({"name": "read_file", "arguments": {"path": "r.txt"}});
    let (status, answer) = stateless(&app, "tools/call", read, None).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["result"]["resultType"], "complete", "{answer}");
    assert_eq!(answer["result"]["content"][0]["text"], "hello", "{answer}");
}

/// The first pending batch, once one waits.
async fn wait_for_pending(app: &TestApp) -> (u16, Value) {
    for _ in 0..200 {
        let (status, body) = app.get("/api/approvals").await;
        if let Some(batch) = body["approvals"].as_array().and_then(|all| all.first()) {
            return (status, batch.clone());
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("nothing waited in the inbox");
}

#[tokio::test]
async fn an_mcp_call_of_an_agents_own_tool_runs_once_after_approval_and_a_rejection_never() {
    let app = Arc::new(spawn_with_agents(SERVED, |_| {}).await);
    let writing = tokio::spawn({
        let app = app.clone();
        async move {
            mcp(
                &app,
                1,
                "tools/call",
                json!({"name": "write_file",
                "arguments": {"path": "gated.txt", "content": "approved"}}),
            )
            .await
        }
    });
    let (_, batch) = wait_for_pending(&app).await;
    assert!(!app.sandbox().join("gated.txt").exists());
    let task = batch["taskId"].as_str().unwrap();
    decide_rest(&app, None, task, json!({"decision_type": "approve"})).await;
    let answer = writing.await.unwrap();
    assert_eq!(answer["result"]["isError"], false, "{answer}");
    assert_eq!(
        std::fs::read_to_string(app.sandbox().join("gated.txt")).unwrap(),
        "approved"
    );

    let rejected = tokio::spawn({
        let app = app.clone();
        async move {
            mcp(
                &app,
                2,
                "tools/call",
                json!({"name": "write_file",
                "arguments": {"path": "never.txt", "content": "no"}}),
            )
            .await
        }
    });
    let (_, batch) = wait_for_pending(&app).await;
    let task = batch["taskId"].as_str().unwrap();
    decide_rest(
        &app,
        None,
        task,
        json!({"decision_type": "deny", "reason": "wrong file"}),
    )
    .await;
    let answer = rejected.await.unwrap();
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    let text = answer["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("wrong file"), "{text}");
    assert!(!app.sandbox().join("never.txt").exists());
}

#[tokio::test]
async fn a_client_that_goes_away_while_its_call_waits_cancels_it_and_nothing_runs() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let app = spawn_with_agents(SERVED, |_| {}).await;
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "write_file", "arguments": {"path": "left.txt", "content": "x"}}})
    .to_string();
    let address = app.base.trim_start_matches("http://").to_owned();
    let mut socket = tokio::net::TcpStream::connect(&address).await.unwrap();
    let request = format!(
        "POST {MCP} HTTP/1.1\r\nhost: {address}\r\ncontent-type: application/json\r\n\
         accept: application/json, text/event-stream\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    socket.write_all(request.as_bytes()).await.unwrap();
    let mut head = [0u8; 512];
    let read = socket.read(&mut head).await.unwrap();
    let head = String::from_utf8_lossy(&head[..read]).to_lowercase();
    assert!(head.contains("content-type: text/event-stream"), "{head}");
    let (_, batch) = wait_for_pending(&app).await;
    let task = batch["taskId"].as_str().unwrap().to_owned();
    drop(socket);
    for _ in 0..200 {
        let (_, state) = app.get(&format!("/api/approvals/requests/{task}")).await;
        if state["status"] == "ended" {
            assert!(
                state["reason"].as_str().unwrap().contains("canceled"),
                "{state}"
            );
            let (status, _) =
                decide_rest(&app, None, &task, json!({"decision_type": "approve"})).await;
            assert_ne!(status, 200, "a canceled call cannot be approved");
            assert!(!app.sandbox().join("left.txt").exists());
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the call of a client that went away was not canceled");
}

#[tokio::test]
async fn the_mcp_endpoint_refuses_other_origins_batches_and_agents_not_served() {
    let app = spawn_with_agents(SERVED, |_| {}).await;
    let foreign = app
        .post(MCP)
        .header("origin", "https://evil.example")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}))
        .send()
        .await
        .unwrap();
    assert_eq!(foreign.status(), 403);
    let batch = app
        .post(MCP)
        .json(&json!([{"jsonrpc": "2.0", "id": 1, "method": "ping"}]))
        .send()
        .await
        .unwrap();
    assert_eq!(batch.status(), 400);
    let not_served = app
        .post("/api/mcp/default/demo")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}))
        .send()
        .await
        .unwrap();
    assert_eq!(not_served.status(), 404);
    let notification = app
        .post(MCP)
        .json(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .send()
        .await
        .unwrap();
    assert_eq!(notification.status(), 202);
    let (get, _) = app.get(MCP).await;
    assert_eq!(get, 405);
}

#[tokio::test]
async fn a_client_without_a_token_is_pointed_at_the_endpoints_resource_metadata() {
    let app = spawn_with_agents(SERVED, |config| {
        config.auth = signoff_server::AuthMode::Tokens;
        config.tokens = vec!["secret-token=alice".into()];
    })
    .await;
    let refused = app
        .post(MCP)
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}))
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 401);
    let challenge = refused.headers()["www-authenticate"]
        .to_str()
        .unwrap()
        .to_owned();
    let metadata_url = app.url("/.well-known/oauth-protected-resource/api/mcp/default/gate");
    assert_eq!(
        challenge,
        format!("Bearer resource_metadata=\"{metadata_url}\"")
    );
    let metadata: Value = app
        .client
        .get(&metadata_url)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(metadata["resource"], app.url(MCP), "{metadata}");
    assert_eq!(metadata["bearer_methods_supported"], json!(["header"]));
    // With tokens there is no authorization server to name (oidc names its issuer).
    assert!(
        metadata.get("authorization_servers").is_none(),
        "{metadata}"
    );
    let answered = app
        .post(MCP)
        .bearer_auth("secret-token")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}))
        .send()
        .await
        .unwrap();
    assert_eq!(answered.status(), 200);
}

/// A call of an agent-tool asked for from outside runs as a task on its subagent, whose own
/// gated calls then wait: it is never settled at once by calling its source.
#[tokio::test]
async fn an_agent_tool_asked_for_from_outside_runs_on_its_subagent() {
    const BOSS: &str = r#"
[[agents]]
name = "demo"

[[agents.tools]]
kind = "builtin_files"
require_approval = ["write_file"]

[[agents]]
name = "boss"
serve_mcp = true
agents = ["default/demo"]
"#;
    let app = spawn_with_agents(BOSS, |_| {}).await;
    let (status, body) = app
        .post_json_as(
            "/api/approvals/requests?wait=2",
            None,
            &json!({"agent": "default/boss", "tool": "default__demo",
                    "arguments": {"request": "write a.txt: one"}}),
        )
        .await;
    assert_eq!(
        (status, body["status"].as_str()),
        (201, Some("waiting")),
        "{body}"
    );
    assert!(body["contextId"].is_string(), "a task holds it: {body}");
    let (_, settled) = app.get("/api/approvals?state=settled").await;
    assert_eq!(settled["calls"], json!([]), "{settled}");
}

#[tokio::test]
async fn a_stateless_retry_whose_request_state_is_not_the_servers_is_refused_and_runs_nothing() {
    let app = spawn_with_agents(SERVED, |_| {}).await;
    let write = json!({"path": "w.txt", "content": "x"});
    for request_state in [json!("forged.c2lnbmF0dXJl"), json!(7), json!("")] {
        let params = json!({"name": "write_file", "arguments": write,
                            "requestState": request_state,
                            "inputResponses": {"question": {"action": "accept"}}});
        let (status, refused) = stateless(&app, "tools/call", params, None).await;
        assert_eq!(
            (status, &refused["error"]["code"]),
            (400, &json!(-32602)),
            "{refused}"
        );
        assert!(
            refused["error"]["message"]
                .as_str()
                .unwrap()
                .contains("requestState"),
            "{refused}"
        );
    }
    let (_, inbox) = app.get("/api/approvals").await;
    assert_eq!(inbox["approvals"], json!([]), "{inbox}");
    assert!(!app.sandbox().join("w.txt").exists());
}
