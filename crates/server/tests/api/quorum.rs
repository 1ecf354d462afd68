//! Who may approve (crates/server/README.md, Approvers): approvers by group and user, the
//! two-person rule and a quorum of distinct approvers, over REST, A2A data parts and text; an
//! edit voids earlier approvals; the requester may always reject; approvers read the chat but
//! cannot write to it; the audit records every vote.

use serde_json::{json, Value};

use crate::support::*;

/// The demo agent's files with `write_file` held, and `settings` (approver lines) on the agent.
fn agents(settings: &str) -> String {
    format!(
        "[[agents]]\nname = \"demo\"\n{settings}\n\
         [[agents.tools]]\nkind = \"builtin_files\"\nrequire_approval = [\"write_file\"]\n"
    )
}

/// Carol (sre, who starts the chats), bob and dave (sre), erin (dev), frank by name.
fn people(config: &mut signoff_server::Config) {
    config.auth = signoff_server::AuthMode::Tokens;
    config.tokens = vec![
        "carol-token=carol:sre".into(),
        "bob-token=bob:sre+oncall".into(),
        "dave-token=dave:sre".into(),
        "erin-token=erin:dev".into(),
        "frank-token=frank".into(),
    ];
}

/// Carol asks the demo agent to write `file`; the paused task and context.
async fn pause(app: &TestApp, file: &str, text: &str) -> (String, String) {
    let body = message_request(
        "message/stream",
        message_v03(&format!("write {file}: {text}"), None, None),
    );
    let results = results(&app.stream_as(None, Some("carol-token"), body).await);
    assert_eq!(
        states(&results).last().map(String::as_str),
        Some("input-required"),
        "{results:?}"
    );
    (task_id(&results), context_id(&results))
}

/// A decision over A2A (a v0.3 DataPart) as the holder of `token`: the stream's events.
async fn decide_a2a(
    app: &TestApp,
    token: &str,
    task: &str,
    context: &str,
    data: Value,
) -> Vec<Value> {
    let body = message_request("message/stream", decision(task, context, data));
    app.stream_as(None, Some(token), body).await
}

fn error_message(events: &[Value]) -> String {
    events
        .iter()
        .find_map(|event| event["error"]["message"].as_str())
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test]
async fn a_two_person_rule_with_a_quorum_of_two_runs_the_call_once_two_others_approved() {
    let app = spawn_with_agents(
        &agents("approvers = [\"group:sre\", \"user:frank\"]\nrequester_may_approve = false\nquorum = 2"),
        people,
    )
    .await;
    let (task, context) = pause(&app, "two.txt", "hi").await;
    let approve = json!({"decision_type": "approve"});

    // The batch is in the inbox of everyone who may approve it, saying who asked and why.
    let (_, inbox) = app.get_as("/api/approvals", Some("bob-token")).await;
    let routing = &inbox["approvals"][0]["routing"];
    assert_eq!(routing["requestedBy"], "carol", "{inbox}");
    assert_eq!(routing["eligibleBy"], json!(["group:sre"]));
    assert_eq!(routing["calls"][0]["quorum"], 2);
    let (_, inbox) = app.get_as("/api/approvals", Some("erin-token")).await;
    assert_eq!(inbox["approvals"], json!([]), "erin may not approve");

    // The requester may not approve; someone outside the approvers may not either.
    let (status, body) = decide_rest(&app, Some("carol-token"), &task, approve.clone()).await;
    assert_eq!(status, 403, "{body}");
    let refusal = body["error"].as_str().unwrap_or_default().to_owned();
    assert!(
        refusal
            .contains("needs approval by group sre or user frank; the requester may not approve"),
        "{refusal}"
    );
    // Erin may not even see the task: she is told what an unknown task's decision is told,
    // nothing of who may approve it, over A2A and over REST.
    let events = decide_a2a(&app, "erin-token", &task, &context, approve.clone()).await;
    let unknown = decide_a2a(&app, "erin-token", "nope", &context, approve.clone()).await;
    assert_eq!(events[0]["error"]["code"], -32001, "{events:?}");
    assert_eq!(unknown[0]["error"]["code"], -32001, "{unknown:?}");
    assert_eq!(error_message(&events), format!("task {task} not found"));
    let (status, body) = decide_rest(&app, Some("erin-token"), &task, approve.clone()).await;
    assert_eq!(status, 404, "{body}");
    assert_eq!(body["error"], format!("task {task} not found"));
    let (status, unknown) = decide_rest(&app, Some("erin-token"), "nope", approve.clone()).await;
    assert_eq!(
        (status, &unknown["error"]),
        (404, &json!("task nope not found"))
    );
    assert!(!app.sandbox().join("two.txt").exists());

    // Bob approves: one of two; nothing runs, the task still waits, and says so.
    let (status, body) = decide_rest(&app, Some("bob-token"), &task, approve.clone()).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["state"], "input-required");
    assert_eq!(body["decision"], Value::Null);
    assert_eq!(body["quorum"][0]["approvedBy"], json!(["bob"]));
    assert_eq!(body["quorum"][0]["quorum"], 2);
    assert!(!app.sandbox().join("two.txt").exists());
    // Twice is once.
    let (status, body) = decide_rest(&app, Some("bob-token"), &task, approve.clone()).await;
    assert_eq!(status, 409, "{body}");
    let (_, inbox) = app.get_as("/api/approvals", Some("frank-token")).await;
    assert_eq!(
        inbox["approvals"][0]["routing"]["calls"][0]["approvedBy"],
        json!(["bob"]),
        "{inbox}"
    );
    assert_eq!(
        inbox["approvals"][0]["routing"]["eligibleBy"],
        json!(["user:frank"])
    );

    // Bob reads the chat he approves, but may not cancel it; erin may not read it.
    let got = app
        .rpc_as(
            None,
            Some("bob-token"),
            request("tasks/get", json!({"id": task})),
        )
        .await;
    assert_eq!(got["result"]["status"]["state"], "input-required", "{got}");
    let canceled = app
        .rpc_as(
            None,
            Some("bob-token"),
            request("tasks/cancel", json!({"id": task})),
        )
        .await;
    assert_eq!(canceled["error"]["code"], -32001, "{canceled}");
    let got = app
        .rpc_as(
            None,
            Some("erin-token"),
            request("tasks/get", json!({"id": task})),
        )
        .await;
    assert_eq!(got["error"]["code"], -32001, "{got}");
    // The chat as the UI loads it: Bob gets the task, with whose chat it is; erin nothing.
    let (status, chat) = app
        .get_as(&format!("/api/sessions/{context}"), Some("bob-token"))
        .await;
    assert_eq!(status, 200, "{chat}");
    assert_eq!(chat["requestedBy"], "carol", "{chat}");
    assert_eq!(chat["tasks"][0]["id"], task.as_str(), "{chat}");
    let (_, own) = app
        .get_as(&format!("/api/sessions/{context}"), Some("carol-token"))
        .await;
    assert_eq!(own.get("requestedBy"), None, "{own}");
    let (status, _) = app
        .get_as(&format!("/api/sessions/{context}"), Some("erin-token"))
        .await;
    assert_eq!(status, 404);

    // Frank (named as a user) approves over A2A: the second approval runs the call, once.
    let events = decide_a2a(&app, "frank-token", &task, &context, approve.clone()).await;
    let results = results(&events);
    assert_eq!(
        states(&results).last().map(String::as_str),
        Some("completed"),
        "{events:?}"
    );
    assert_eq!(
        std::fs::read_to_string(app.sandbox().join("two.txt")).unwrap(),
        "hi"
    );
    // Dave could approve it a moment ago: he is told he came too late, as a racing approver
    // is. Erin never could: for her the task still does not exist.
    let (status, body) = decide_rest(&app, Some("dave-token"), &task, approve.clone()).await;
    assert_eq!(status, 409, "the batch was decided without him: {body}");
    assert_eq!(
        body["error"],
        format!("the approval request of task {task} was already decided")
    );
    let (status, body) = decide_rest(&app, Some("erin-token"), &task, approve.clone()).await;
    assert_eq!(status, 404, "{body}");
    assert_eq!(body["error"], format!("task {task} not found"));
    // Bob voted on it: he sees it, and that it waits for no decision.
    let (status, _) = decide_rest(&app, Some("bob-token"), &task, approve).await;
    assert_eq!(status, 409, "the batch was decided");

    // The audit: both approvals, who, why, how, and the arguments' hash.
    let (_, decided) = app
        .get_as("/api/approvals?state=decided", Some("frank-token"))
        .await;
    let entry = &decided["decisions"][0];
    let votes = &entry["calls"][0]["votes"];
    assert_eq!(votes.as_array().map(Vec::len), Some(2), "{entry}");
    assert_eq!(votes[0]["by"], "bob");
    assert_eq!(votes[0]["eligibleBy"], json!(["group:sre"]));
    assert_eq!(votes[0]["channel"], "rest");
    assert_eq!(votes[1]["by"], "frank");
    assert_eq!(votes[1]["eligibleBy"], json!(["user:frank"]));
    assert_eq!(votes[1]["channel"], "a2a");
    assert_eq!(votes[1]["counted"], true);
    assert_eq!(votes[1]["argsSha256"], entry["calls"][0]["runArgsSha256"]);
}

#[tokio::test]
async fn an_edit_voids_earlier_approvals_and_the_requester_may_always_reject() {
    let app = spawn_with_agents(&agents("approvers = [\"group:sre\"]\nquorum = 2"), people).await;
    let (task, context) = pause(&app, "edit.txt", "first").await;
    let call_id = {
        let (_, pending) = app.get_as("/api/approvals", Some("carol-token")).await;
        pending["approvals"][0]["calls"][0]["id"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let (status, body) = decide_rest(
        &app,
        Some("bob-token"),
        &task,
        json!({"decision_type": "approve"}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    // Dave edits: bob approved other arguments, so his approval no longer counts.
    let edit = json!({
        "decision_type": "approve",
        "modified_args": {call_id.clone(): {"path": "edit.txt", "content": "second"}}
    });
    let (status, body) = decide_rest(&app, Some("dave-token"), &task, edit.clone()).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["quorum"][0]["approvedBy"], json!(["dave"]), "{body}");
    assert_eq!(body["quorum"][0]["voided"], json!(["bob"]), "{body}");
    // Carol (in sre, and the two-person rule is off) approves the edit: it runs as edited.
    let events = decide_a2a(&app, "carol-token", &task, &context, edit).await;
    assert_eq!(
        states(&results(&events)).last().map(String::as_str),
        Some("completed"),
        "{events:?}"
    );
    assert_eq!(
        std::fs::read_to_string(app.sandbox().join("edit.txt")).unwrap(),
        "second"
    );

    // Under a two-person rule the requester still rejects alone, in words.
    let app = spawn_with_agents(
        &agents("approvers = [\"group:sre\"]\nrequester_may_approve = false"),
        people,
    )
    .await;
    let (task, context) = pause(&app, "no.txt", "hi").await;
    let body = message_request(
        "message/stream",
        message_v03("reject: not today", Some(&task), Some(&context)),
    );
    let events = app.stream_as(None, Some("carol-token"), body).await;
    assert_eq!(
        states(&results(&events)).last().map(String::as_str),
        Some("completed"),
        "{events:?}"
    );
    assert!(!app.sandbox().join("no.txt").exists());
    // And bob approves another in words: text replies are decisions too.
    let (task, context) = pause(&app, "yes.txt", "hi").await;
    let body = message_request(
        "message/stream",
        message_v03("approve", Some(&task), Some(&context)),
    );
    let events = app.stream_as(None, Some("bob-token"), body).await;
    assert_eq!(
        states(&results(&events)).last().map(String::as_str),
        Some("completed"),
        "{events:?}"
    );
    assert!(app.sandbox().join("yes.txt").exists());
}

#[tokio::test]
async fn an_approver_outside_the_chat_may_not_send_it_messages() {
    let app = spawn_with_agents(&agents("approvers = [\"group:sre\"]"), people).await;
    let (task, context) = pause(&app, "msg.txt", "hi").await;
    // Text that is no decision, from someone who is not the requester: refused, nothing stored.
    let body = message_request(
        "message/stream",
        message_v03("what is this?", Some(&task), Some(&context)),
    );
    let events = app.stream_as(None, Some("bob-token"), body).await;
    assert!(!error_message(&events).is_empty(), "{events:?}");
    let got = app
        .rpc_as(
            None,
            Some("carol-token"),
            request("tasks/get", json!({"id": task})),
        )
        .await;
    assert_eq!(got["result"]["status"]["state"], "input-required", "{got}");
}

/// The call ids of the batch carol waits on.
async fn call_ids(app: &TestApp) -> Vec<String> {
    let (_, pending) = app.get_as("/api/approvals", Some("carol-token")).await;
    pending["approvals"][0]["calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|call| call["id"].as_str().unwrap().to_owned())
        .collect()
}

/// The next event on `stream`, within the tests' patience (heartbeats alone fail).
async fn heard(stream: &mut ApprovalsStream) -> ApprovalsFrame {
    within("the next approvals event", stream.next_event()).await
}

#[tokio::test]
async fn a_routed_batch_reaches_every_eligible_persons_approvals_stream_live() {
    let app = spawn_with_agents(
        &agents("approvers = [\"group:sre\"]\nrequester_may_approve = false\nquorum = 2"),
        people,
    )
    .await;
    let mut bob = open_approvals(&app, Some("bob-token"), None).await;
    let mut carol = open_approvals(&app, Some("carol-token"), None).await;
    let mut erin = open_approvals(&app, Some("erin-token"), None).await;
    let (task, _) = pause(&app, "live.txt", "hi").await;

    // Bob (sre) hears of carol's batch as it starts waiting, with who asked and why him.
    let first = heard(&mut bob).await;
    assert_eq!(first.about(), ("pending".to_owned(), task.clone()));
    let routing = &first.data()["routing"];
    assert_eq!(routing["requestedBy"], "carol", "{first:?}");
    assert_eq!(routing["eligibleBy"], json!(["group:sre"]));
    assert_eq!(routing["calls"][0]["approvedBy"], json!([]));
    assert_eq!(first.data()["calls"][0]["args"]["path"], "live.txt");
    // Carol hears of her own, routed.
    let own = heard(&mut carol).await;
    assert_eq!(own.about(), ("pending".to_owned(), task.clone()));
    assert_eq!(own.data()["routing"]["requestedBy"], "carol", "{own:?}");

    // Dave approves, one of two: the batch comes again, further along, to bob and carol.
    let approve = json!({"decision_type": "approve"});
    let (status, body) = decide_rest(&app, Some("dave-token"), &task, approve.clone()).await;
    assert_eq!(status, 200, "{body}");
    let progress = heard(&mut bob).await;
    assert_eq!(progress.about(), ("pending".to_owned(), task.clone()));
    assert!(progress.id() > first.id());
    assert_eq!(
        progress.data()["routing"]["calls"][0]["approvedBy"],
        json!(["dave"]),
        "{progress:?}"
    );
    let progress = heard(&mut carol).await;
    assert_eq!(
        progress.data()["routing"]["calls"][0]["approvedBy"],
        json!(["dave"]),
        "{progress:?}"
    );

    // Bob's approval completes the quorum: the batch is decided, on both streams.
    let (status, body) = decide_rest(&app, Some("bob-token"), &task, approve).await;
    assert_eq!(status, 200, "{body}");
    let done = heard(&mut bob).await;
    assert_eq!(done.about(), ("decided".to_owned(), task.clone()));
    assert_eq!(done.data()["decidedBy"], "bob");
    assert_eq!(
        heard(&mut carol).await.about(),
        ("decided".to_owned(), task.clone())
    );

    // Erin (dev) heard nothing of it: the first event on her stream is her own next batch.
    let body = message_request(
        "message/stream",
        message_v03("write erin.txt: hi", None, None),
    );
    let erins = task_id(&results(
        &app.stream_as(None, Some("erin-token"), body).await,
    ));
    let first = heard(&mut erin).await;
    assert_eq!(
        first.about(),
        ("pending".to_owned(), erins.clone()),
        "{first:?}"
    );
    // A stream bob opens now starts with what waits for him: erin's batch (he is in sre).
    let mut later = open_approvals(&app, Some("bob-token"), None).await;
    let waiting = heard(&mut later).await;
    assert_eq!(waiting.about(), ("pending".to_owned(), erins));
    assert_eq!(waiting.data()["routing"]["requestedBy"], "erin");
}

/// Carol's paused batch decided over A2A v1.0 `SendMessage` by the holder of `token`: the
/// JSON-RPC answer.
async fn decide_v10(app: &TestApp, token: &str, task: &str, context: &str, data: Value) -> Value {
    let message = json!({
        "messageId": uuid::Uuid::new_v4().to_string(), "role": "ROLE_USER",
        "taskId": task, "contextId": context,
        "parts": [{"data": data}, {"text": "decision"}],
    });
    app.rpc_as(
        Some("1.0"),
        Some(token),
        message_request("SendMessage", message),
    )
    .await
}

/// Carol's paused batch decided in kagent's terms (its UI's message: a `batch` of verdict
/// words keyed by call id, with empty part metadata) by the holder of `token`.
async fn decide_kagent(
    app: &TestApp,
    token: &str,
    task: &str,
    context: &str,
    call: &str,
) -> Vec<Value> {
    let message = json!({
        "kind": "message", "messageId": uuid::Uuid::new_v4().to_string(), "role": "user",
        "taskId": task, "contextId": context,
        "parts": [
            {"kind": "data", "metadata": {},
             "data": {"decision_type": "batch", "decisions": {call: "approve"}}},
            {"kind": "text", "text": "Batch decision: 1 approved, 0 rejected"}],
    });
    app.stream_as(
        None,
        Some(token),
        message_request("message/stream", message),
    )
    .await
}

#[tokio::test]
async fn a2a_v10_and_kagent_approvals_by_the_requester_are_refused_by_name_and_an_outsiders_not_found(
) {
    let app = spawn_with_agents(
        &agents("approvers = [\"group:sre\"]\nrequester_may_approve = false"),
        people,
    )
    .await;
    let (task, context) = pause(&app, "refused.txt", "hi").await;
    let call = call_ids(&app).await.remove(0);
    let approve = json!({"decision_type": "approve"});

    // A2A v1.0: the requester under the two-person rule, then erin outside the approvers.
    let answer = decide_v10(&app, "carol-token", &task, &context, approve.clone()).await;
    let refusal = answer["error"]["message"].as_str().unwrap_or_default();
    assert!(
        refusal.contains("needs approval by group sre; the requester may not approve"),
        "{answer}"
    );
    // Erin may not see the task: "not found", as for an unknown task, with nothing of its
    // routing.
    let answer = decide_v10(&app, "erin-token", &task, &context, approve).await;
    assert_eq!(answer["error"]["code"], -32001, "{answer}");
    assert_eq!(answer["error"]["message"], format!("task {task} not found"));

    // kagent's decision terms: the same two, refused the same way.
    let events = decide_kagent(&app, "carol-token", &task, &context, &call).await;
    assert!(
        error_message(&events)
            .contains("needs approval by group sre; the requester may not approve"),
        "{events:?}"
    );
    let events = decide_kagent(&app, "erin-token", &task, &context, &call).await;
    assert_eq!(error_message(&events), format!("task {task} not found"));

    // Nothing ran, nobody's vote was counted, and the batch still waits for an approver.
    assert!(!app.sandbox().join("refused.txt").exists());
    let (_, inbox) = app.get_as("/api/approvals", Some("bob-token")).await;
    assert_eq!(inbox["approvals"][0]["taskId"], task.as_str(), "{inbox}");
    assert_eq!(
        inbox["approvals"][0]["routing"]["calls"][0]["approvedBy"],
        json!([])
    );
    let got = app
        .rpc_as(
            None,
            Some("carol-token"),
            request("tasks/get", json!({"id": task})),
        )
        .await;
    assert_eq!(got["result"]["status"]["state"], "input-required", "{got}");

    // Bob, an approver, decides in kagent's terms: it runs, once.
    let events = decide_kagent(&app, "bob-token", &task, &context, &call).await;
    assert_eq!(
        states(&results(&events)).last().map(String::as_str),
        Some("completed"),
        "{events:?}"
    );
    assert_eq!(
        std::fs::read_to_string(app.sandbox().join("refused.txt")).unwrap(),
        "hi"
    );
}

#[tokio::test]
async fn an_approval_short_of_the_quorum_ends_its_stream_at_the_batch_still_waiting() {
    let app = spawn_with_agents(
        &agents("approvers = [\"group:sre\"]\nrequester_may_approve = false\nquorum = 2"),
        people,
    )
    .await;
    let (task, context) = pause(&app, "half.txt", "hi").await;
    // Bob's approval is one of two: its stream ends with the one final event that says the
    // task still waits and how far the quorum came (docs/wire.md, Approvers), not at the
    // decision that has yet to come.
    let approve = json!({"decision_type": "approve"});
    let events = within(
        "the stream of an approval short of its quorum",
        decide_a2a(&app, "bob-token", &task, &context, approve),
    )
    .await;
    let results = results(&events);
    let last = results.last().cloned().unwrap_or_default();
    assert_eq!(last["final"], true, "{events:?}");
    assert_eq!(last["status"]["state"], "input-required", "{events:?}");
    assert_eq!(
        last["metadata"]["quorum"][0]["approvedBy"],
        json!(["bob"]),
        "{events:?}"
    );
    assert!(!app.sandbox().join("half.txt").exists());
}
