//! Hand-over (docs/rest.md, Hand-over): the requester or an eligible approver hands a pending
//! batch to a person or group, who may then read it and finds it in their inbox; under
//! approvers a hand-over never widens who may approve (people outside them only look) unless
//! the agents file says `handover_may_widen = true`; the step is audited with the batch;
//! anyone else is refused, an unknown task is 404, a decided batch 409; a malformed target, a
//! long note or a 21st hand-over is refused and stores nothing.

use serde_json::json;

use crate::support::*;

/// sre approves, never the requester; a hand-over may delegate outside sre.
const AGENTS: &str = "[[agents]]\nname = \"demo\"\napprovers = [\"group:sre\"]\n\
     requester_may_approve = false\nhandover_may_widen = true\n\
     [[agents.tools]]\nkind = \"builtin_files\"\nrequire_approval = [\"write_file\"]\n";

/// Two of sre approve, never the requester; hand-overs do not widen that.
const QUORUM: &str = "[[agents]]\nname = \"demo\"\napprovers = [\"group:sre\"]\n\
     requester_may_approve = false\nquorum = 2\n\
     [[agents.tools]]\nkind = \"builtin_files\"\nrequire_approval = [\"write_file\"]\n";

fn people(config: &mut signoff_server::Config) {
    config.auth = signoff_server::AuthMode::Tokens;
    config.tokens = vec![
        "carol-token=carol:sre".into(),
        "bob-token=bob:sre".into(),
        "alice-token=alice:sre".into(),
        "erin-token=erin:dev".into(),
        "frank-token=frank".into(),
    ];
}

/// Carol asks to write `file`; the paused task.
async fn carol_asks(app: &TestApp, file: &str) -> String {
    let body = message_request(
        "message/stream",
        message_v03(&format!("write {file}: hi"), None, None),
    );
    task_id(&results(
        &app.stream_as(None, Some("carol-token"), body).await,
    ))
}

/// `token`'s holder hands `task` to `to`; the status and body of the answer.
async fn hand(app: &TestApp, token: &str, task: &str, to: &str) -> (u16, serde_json::Value) {
    app.post_json_as(
        &format!("/api/approvals/{task}/handover"),
        Some(token),
        &json!({"to": to}),
    )
    .await
}

/// The state of carol's `task`, as she reads it.
async fn carols_state(app: &TestApp, task: &str) -> serde_json::Value {
    let got = app
        .rpc_as(
            None,
            Some("carol-token"),
            request("tasks/get", json!({"id": task})),
        )
        .await;
    got["result"]["status"]["state"].clone()
}

/// How many hand-overs of `task` the store holds.
async fn handovers(app: &TestApp, task: &str) -> i64 {
    sql_count(
        app.data_dir.path(),
        "SELECT COUNT(*) FROM batch_steps WHERE task_id = ?1 AND kind = 'handover'",
        task,
    )
    .await
}

#[tokio::test]
async fn with_handover_may_widen_a_handed_over_batch_may_be_decided_by_whom_it_was_handed_to() {
    let app = spawn_with_agents(AGENTS, people).await;
    let body = message_request(
        "message/stream",
        message_v03("write over.txt: hi", None, None),
    );
    let results = results(&app.stream_as(None, Some("carol-token"), body).await);
    let task = task_id(&results);
    let approve = json!({"decision_type": "approve"});
    let path = format!("/api/approvals/{task}/handover");

    // Erin (dev) is no approver: she may neither approve (the task is not hers to see: "not
    // found") nor hand the batch on.
    let (status, _) = decide_rest(&app, Some("erin-token"), &task, approve.clone()).await;
    assert_eq!(status, 404);
    let (status, body) = app
        .post_json_as(&path, Some("frank-token"), &json!({"to": "user:frank"}))
        .await;
    assert_eq!(status, 403, "{body}");
    let (status, body) = app
        .post_json_as(&path, Some("bob-token"), &json!({"to": "dba"}))
        .await;
    assert_eq!(status, 400, "{body}");
    let (status, _) = app
        .post_json_as(
            "/api/approvals/no-such-task/handover",
            Some("bob-token"),
            &json!({"to": "user:erin"}),
        )
        .await;
    assert_eq!(status, 404);

    // Bob (sre, eligible) hands it to erin: it is in her inbox, and (the agent lets a
    // hand-over widen its approvers) she may approve it.
    let (status, body) = app
        .post_json_as(
            &path,
            Some("bob-token"),
            &json!({"to": "user:erin", "note": "erin owns this file"}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body,
        json!({"taskId": task, "by": "bob", "to": "user:erin"})
    );
    let (_, inbox) = app.get_as("/api/approvals", Some("erin-token")).await;
    assert_eq!(inbox["approvals"][0]["taskId"], task, "{inbox}");
    assert_eq!(
        inbox["approvals"][0]["routing"]["eligibleBy"],
        json!(["user:erin"])
    );
    // Over A2A too (a decision DataPart, as the chat sends it): the batch is read with its
    // hand-overs, so the person it was handed to finds the task and decides it.
    let context = context_id(&results);
    let decided = app
        .stream_as(
            None,
            Some("erin-token"),
            message_request("message/stream", decision(&task, &context, approve)),
        )
        .await;
    assert!(
        states(&crate::support::results(&decided)).contains(&"completed".to_owned()),
        "{decided:?}"
    );
    let (_, audit) = app
        .get_as("/api/approvals?state=decided", Some("erin-token"))
        .await;
    assert_eq!(audit["decisions"][0]["channel"], "a2a", "{audit}");
    assert_eq!(audit["decisions"][0]["decidedBy"], "erin", "{audit}");

    // Decided: no more hand-overs.
    let (status, body) = app
        .post_json_as(&path, Some("carol-token"), &json!({"to": "group:dba"}))
        .await;
    assert_eq!(status, 409, "{body}");
}

/// An agent nobody but the requester approves for.
const ALONE: &str = "[[agents]]\nname = \"demo\"\n\
     [[agents.tools]]\nkind = \"builtin_files\"\nrequire_approval = [\"write_file\"]\n";

#[tokio::test]
async fn a_handed_to_person_reads_the_chat_hears_of_the_batch_and_decides_it() {
    let app = spawn_with_agents(ALONE, people).await;
    let body = message_request(
        "message/stream",
        message_v03("write read.txt: hi", None, None),
    );
    let results = results(&app.stream_as(None, Some("carol-token"), body).await);
    let task = task_id(&results);
    let read = |token: &'static str| {
        let task = task.clone();
        let app = &app;
        async move {
            app.rpc_as(None, Some(token), request("tasks/get", json!({"id": task})))
                .await
        }
    };
    // Erin may not read carol's chat, nor decide it.
    let got = read("erin-token").await;
    assert!(got["error"].is_object(), "{got}");
    let approve = json!({"decision_type": "approve"});
    let (status, _) = decide_rest(&app, Some("erin-token"), &task, approve.clone()).await;
    assert_eq!(status, 404);

    // Carol hands it to erin: erin's stream sends it, she reads the chat and approves.
    let mut erin = open_approvals(&app, Some("erin-token"), None).await;
    let (status, body) = app
        .post_json_as(
            &format!("/api/approvals/{task}/handover"),
            Some("carol-token"),
            &json!({"to": "user:erin"}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let frame = within("erin's stream to send the batch", erin.next_event()).await;
    assert_eq!(frame.about(), ("pending".to_owned(), task.clone()));
    assert_eq!(frame.data()["routing"]["eligibleBy"], json!(["user:erin"]));
    let got = read("erin-token").await;
    assert_eq!(got["result"]["status"]["state"], "input-required", "{got}");
    // Reading only: a message from erin into carol's chat is refused.
    let body = message_request("message/stream", message_v03("hello", Some(&task), None));
    let events = app.stream_as(None, Some("erin-token"), body).await;
    assert!(
        events.iter().any(|event| event["error"].is_object()),
        "{events:?}"
    );
    let (status, body) = decide_rest(&app, Some("erin-token"), &task, approve).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["decision"]["calls"][0]["verdict"], "approve", "{body}");
}

#[tokio::test]
async fn a_requester_who_hands_her_batch_to_outsiders_gives_them_no_approval() {
    let app = spawn_with_agents(QUORUM, people).await;
    let task = carol_asks(&app, "outsiders.txt").await;
    let approve = json!({"decision_type": "approve"});

    // Carol hands it to erin and frank, neither in sre: they may look, not approve.
    for to in ["user:erin", "user:frank"] {
        let (status, body) = hand(&app, "carol-token", &task, to).await;
        assert_eq!(status, 200, "{to}: {body}");
    }
    let (_, inbox) = app.get_as("/api/approvals", Some("erin-token")).await;
    assert_eq!(inbox["approvals"][0]["taskId"], task, "{inbox}");
    assert_eq!(
        inbox["approvals"][0]["routing"]["eligibleBy"],
        json!([]),
        "erin is not told she may approve: {inbox}"
    );
    let got = app
        .rpc_as(
            None,
            Some("erin-token"),
            request("tasks/get", json!({"id": task})),
        )
        .await;
    assert_eq!(got["result"]["status"]["state"], "input-required", "{got}");
    for token in ["erin-token", "frank-token"] {
        let (status, body) = decide_rest(&app, Some(token), &task, approve.clone()).await;
        assert_eq!(status, 403, "{token}: {body}");
        assert!(body.to_string().contains("group sre"), "{body}");
    }
    // Nothing counted, nothing ran; carol herself is offered no approval either.
    let votes = sql_count(
        app.data_dir.path(),
        "SELECT COUNT(*) FROM call_votes WHERE task_id = ?1",
        &task,
    )
    .await;
    assert_eq!(votes, 0);
    assert_eq!(carols_state(&app, &task).await, "input-required");
    let (_, mine) = app.get_as("/api/approvals", Some("carol-token")).await;
    assert_eq!(
        mine["approvals"][0]["routing"]["eligibleBy"],
        json!([]),
        "{mine}"
    );
    let (status, links) = app
        .post_json_as(
            &format!("/api/approvals/{task}/links"),
            Some("carol-token"),
            &json!({}),
        )
        .await;
    assert_eq!(status, 201, "{links}");
    assert!(links.get("approve_url").is_none(), "{links}");
    assert!(links["reject_url"].is_string(), "{links}");
}

#[tokio::test]
async fn an_outsider_an_approver_hands_to_cannot_complete_the_quorum() {
    let app = spawn_with_agents(QUORUM, people).await;
    let task = carol_asks(&app, "quorum.txt").await;
    let approve = json!({"decision_type": "approve"});

    let (status, body) = decide_rest(&app, Some("bob-token"), &task, approve.clone()).await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = hand(&app, "bob-token", &task, "user:erin").await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = decide_rest(&app, Some("erin-token"), &task, approve.clone()).await;
    assert_eq!(status, 403, "erin is no second sre: {body}");
    assert_eq!(carols_state(&app, &task).await, "input-required");

    // A second sre completes it.
    let (status, body) = decide_rest(&app, Some("alice-token"), &task, approve).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["decision"]["calls"][0]["verdict"], "approve", "{body}");
}

#[tokio::test]
async fn malformed_targets_long_notes_and_a_twenty_first_hand_over_are_refused_storing_nothing() {
    let app = spawn_with_agents(QUORUM, people).await;
    let task = carol_asks(&app, "bounds.txt").await;
    let path = format!("/api/approvals/{task}/handover");
    let long_name = format!("user:{}", "a".repeat(300));
    for to in [
        "user:erin\r\nBcc: victim@example.com",
        "group: sre",
        "group:sre\u{a0}",
        "user:\u{2003}alice",
        "user:",
        long_name.as_str(),
    ] {
        let (status, body) = hand(&app, "carol-token", &task, to).await;
        assert_eq!(status, 400, "{to:?}: {body}");
        assert!(body.to_string().contains("to: "), "{body}");
    }
    let (status, body) = app
        .post_json_as(
            &path,
            Some("carol-token"),
            &json!({"to": "user:bob", "note": "x".repeat(2001)}),
        )
        .await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(handovers(&app, &task).await, 0);

    for _ in 0..20 {
        let (status, body) = hand(&app, "carol-token", &task, "user:bob").await;
        assert_eq!(status, 200, "{body}");
    }
    let (status, body) = hand(&app, "carol-token", &task, "user:bob").await;
    assert_eq!(status, 400, "{body}");
    assert!(
        body.to_string().contains("the most one batch takes (20)"),
        "{body}"
    );
    assert_eq!(handovers(&app, &task).await, 20);
}
