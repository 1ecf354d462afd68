//! Hand-over (docs/rest.md, Hand-over): the requester or an eligible approver hands a pending
//! batch to a person or group, who may then decide it and finds it in their inbox; the step is
//! audited with the batch; anyone else is refused, an unknown task is 404, a decided batch 409.

use serde_json::json;

use crate::support::*;

const AGENTS: &str = "[[agents]]\nname = \"demo\"\napprovers = [\"group:sre\"]\n\
     requester_may_approve = false\n\
     [[agents.tools]]\nkind = \"builtin_files\"\nrequire_approval = [\"write_file\"]\n";

fn people(config: &mut signoff_server::Config) {
    config.auth = signoff_server::AuthMode::Tokens;
    config.tokens = vec![
        "carol-token=carol:sre".into(),
        "bob-token=bob:sre".into(),
        "erin-token=erin:dev".into(),
        "frank-token=frank".into(),
    ];
}

#[tokio::test]
async fn a_handed_over_batch_may_be_decided_by_whom_it_was_handed_to() {
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

    // Bob (sre, eligible) hands it to erin: it is in her inbox, and she may approve it.
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
    let (status, body) = decide_rest(&app, Some("erin-token"), &task, approve).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["decision"]["calls"][0]["verdict"], "approve", "{body}");

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
