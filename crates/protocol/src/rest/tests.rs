//! Each REST type reads the JSON the server sends (the examples of docs/rest.md) and writes it
//! back unchanged; a missing key is an error that names it.

use serde::de::DeserializeOwned;
use serde_json::{json, Value};

use super::*;
use crate::hitl::Decision;

/// Reads `body` as `T`, checks it writes back to the same JSON, and returns it.
fn round_trip<T: Serialize + DeserializeOwned>(body: Value) -> T {
    let typed: T = match serde_json::from_value(body.clone()) {
        Ok(typed) => typed,
        Err(err) => panic!("{err}: {body}"),
    };
    assert_eq!(serde_json::to_value(&typed).ok(), Some(body));
    typed
}

/// The error of reading `body` as `T` without `key` at the JSON pointer `parent`.
fn without<T: DeserializeOwned + std::fmt::Debug>(
    mut body: Value,
    parent: &str,
    key: &str,
) -> String {
    let removed = body
        .pointer_mut(parent)
        .and_then(Value::as_object_mut)
        .and_then(|object| object.remove(key));
    assert!(removed.is_some(), "{parent}/{key} is not in the example");
    match serde_json::from_value::<T>(body) {
        Ok(typed) => panic!("read without {key}: {typed:?}"),
        Err(err) => err.to_string(),
    }
}

fn agents() -> Value {
    json!({"agents": [
      {"namespace": "default", "name": "demo",
       "description": "A demo agent that lists, reads, writes and deletes files in a sandbox folder; writing and deleting wait for your approval.",
       "url": "/api/a2a/default/demo",
       "cardUrl": "/api/a2a/default/demo/.well-known/agent-card.json",
       "tools": [
         {"name": "list_directory", "description": "List the files and folders of a sandbox folder (folders end with /).", "source": "files", "requiresApproval": false},
         {"name": "write_file", "description": "Create or overwrite a text file in the sandbox.", "source": "files", "requiresApproval": true}],
       "requireApproval": ["write_file"],
       "unavailableSources": [{"name": "github", "error": "connection refused"}],
       "remote": false},
      {"namespace": "kagent", "name": "k8s-agent", "description": "Kubernetes",
       "url": "/api/a2a/kagent/k8s-agent",
       "cardUrl": "/api/a2a/kagent/k8s-agent/.well-known/agent-card.json",
       "tools": [], "requireApproval": [], "remote": true, "reachable": false}]})
}

fn audit_entry(channel: &str) -> Value {
    json!({"taskId": "t-2", "contextId": "s-2", "agent": "default/demo",
       "decidedBy": "local", "deciderAuth": "none", "decidedAt": "2026-11-22T18:56:58.892Z",
       "channel": channel, "summary": "Rejected: No, keep it",
       "decision": {"decision_type": "deny", "reason": "No, keep it"},
       "calls": [
         {"id": "call_1", "name": "delete_file", "verdict": "deny", "reason": "No, keep it",
          "argsSha256": "7cfa003e…", "runArgsSha256": null, "edited": false,
          "result": {"status": "rejected", "reason": "No, keep it"}},
         {"id": "call_2", "name": "read_file", "verdict": "approve", "reason": null,
          "argsSha256": "3bc52688…", "runArgsSha256": "3bc52688…", "edited": false}]})
}

fn decide_response() -> Value {
    json!({"taskId": "t-1",
     "state": "completed",
     "decision": audit_entry("rest"),
     "follow": {"url": "/api/a2a/default/demo", "method": "tasks/resubscribe", "params": {"id": "t-1"}},
     "task": {"kind": "task", "id": "t-1", "contextId": "s-1",
              "status": {"state": "completed", "timestamp": "2026-11-22T18:56:41.471Z"},
              "history": [], "artifacts": []}})
}

#[test]
fn the_agent_list_round_trips_local_and_remote_entries() {
    let list: AgentList = round_trip(agents());
    assert!(list.agents[0].tools[1].requires_approval);
    assert_eq!(list.agents[0].reachable, None);
    assert_eq!(list.agents[1].reachable, Some(false));
    assert_eq!(list.agents[1].unavailable_sources, None);
    let err = without::<AgentList>(agents(), "/agents/0", "cardUrl");
    assert!(err.contains("missing field `cardUrl`"), "{err}");
    let err = without::<AgentList>(agents(), "/agents/0/tools/0", "requiresApproval");
    assert!(err.contains("missing field `requiresApproval`"), "{err}");
}

#[test]
fn an_unknown_or_wrongly_typed_field_is_an_error() {
    let mut body = agents();
    body["agents"][0]["requiresApproval"] = json!(["write_file"]);
    let err = serde_json::from_value::<AgentList>(body)
        .err()
        .map(|err| err.to_string());
    assert!(err.is_some_and(|err| err.contains("unknown field `requiresApproval`")));
    let mut body = agents();
    body["agents"][0]["remote"] = json!("no");
    let err = serde_json::from_value::<AgentList>(body)
        .err()
        .map(|err| err.to_string());
    assert!(err.is_some_and(|err| err.contains("invalid type")));
}

#[test]
fn sessions_round_trip() {
    let session = json!({"id": "eef20fbf-1", "agent": "default/demo", "title": "count to 400",
        "createdAt": "2026-11-22T18:57:03.782Z", "updatedAt": "2026-11-22T18:57:03.782Z"});
    let list: SessionList = round_trip(json!({"sessions": [session.clone()]}));
    assert_eq!(list.sessions[0].agent, "default/demo");
    let detail = json!({"session": session, "tasks": [
        {"kind": "task", "id": "t-1", "contextId": "eef20fbf-1",
         "status": {"state": "completed", "timestamp": "2026-11-22T18:57:04.001Z"},
         "history": [], "artifacts": []}]});
    let detail: SessionDetail = round_trip(detail);
    assert_eq!(detail.tasks.len(), 1);
    let err = without::<SessionList>(
        json!({"sessions": [session.clone()]}),
        "/sessions/0",
        "updatedAt",
    );
    assert!(err.contains("missing field `updatedAt`"), "{err}");
    let err = without::<SessionDetail>(json!({"session": session, "tasks": []}), "", "tasks");
    assert!(err.contains("missing field `tasks`"), "{err}");
}

#[test]
fn pending_approvals_round_trip() {
    let body = json!({"approvals": [
      {"taskId": "t-1", "contextId": "s-1", "batchId": 12, "agent": "default/demo",
       "title": "tidy up", "since": "2026-11-22T18:56:28.879Z",
       "calls": [
         {"id": "call_1", "name": "write_file", "args": {"content": "hi", "path": "notes.txt"},
          "description": "Create or overwrite a text file in the sandbox.", "server": "files"},
         {"id": "call_2", "name": "delete_file", "args": {"path": "old.txt"},
          "description": "Delete a file from the sandbox.", "server": "files"}]}]});
    let pending: PendingApprovals = round_trip(body.clone());
    let request = crate::hitl::ActionRequest::from_value(&pending.approvals[0].calls[1]);
    assert_eq!(
        request.map(|request| request.name),
        Some("delete_file".to_owned())
    );
    let err = without::<PendingApprovals>(body, "/approvals/0", "since");
    assert!(err.contains("missing field `since`"), "{err}");
}

#[test]
fn the_ladder_marks_and_the_extension_round_trip() {
    let body = json!({"taskId": "t-1", "contextId": "s-1", "batchId": 3, "agent": "default/ops",
      "title": "deploy", "since": "2026-11-22T18:56:28.879Z", "calls": [],
      "expiresAt": "2026-11-22T20:56:28.879Z",
      "ladder": {"remindedAt": "2026-11-22T19:11:28.900Z", "escalatedTo": ["group:dba"]}});
    let pending: PendingApproval = round_trip(body);
    let marks = pending.ladder.unwrap();
    assert_eq!(marks.escalated_to, ["group:dba"]);
    let extend: ExtendRequest = round_trip(json!({"by": "15m", "note": "on it"}));
    assert_eq!(extend.by, "15m");
    let err = serde_json::from_value::<ExtendRequest>(json!({"by": "1m", "until": "x"}))
        .unwrap_err()
        .to_string();
    assert!(err.contains("unknown field `until`"), "{err}");
    round_trip::<DeadlineExtended>(json!({"taskId": "t-1",
      "expiresAt": "2026-11-22T21:11:28.879Z", "firstExpiresAt": "2026-11-22T20:56:28.879Z",
      "maxExtend": "30m"}));
    round_trip::<HandedOver>(json!({"taskId": "t-1", "by": "bob", "to": "user:alice"}));
    round_trip::<BatchStepEntry>(json!({"kind": "escalate", "to": ["group:dba"],
      "at": "2026-11-22T19:26:28.900Z"}));
}

#[test]
fn a_batch_that_may_be_extended_says_its_max_extend_and_first_deadline() {
    let body = json!({"taskId": "t-1", "contextId": "s-1", "batchId": 3, "agent": "default/ops",
      "title": "deploy", "since": "2026-11-22T18:56:28.879Z", "calls": [],
      "expiresAt": "2026-11-22T19:21:28.879Z",
      "ladder": {"maxExtend": "30m", "firstExpiresAt": "2026-11-22T19:06:28.879Z"}});
    let pending: PendingApproval = round_trip(body);
    let ladder = pending.ladder.unwrap();
    assert_eq!(ladder.max_extend.as_deref(), Some("30m"));
    assert_eq!(
        ladder.first_expires_at.as_deref(),
        Some("2026-11-22T19:06:28.879Z")
    );
    assert_eq!(ladder.reminded_at, None);
    let err = serde_json::from_value::<LadderMarks>(json!({"maxExtend": 30}))
        .unwrap_err()
        .to_string();
    assert!(err.contains("invalid type"), "{err}");
}

#[test]
fn decided_approvals_round_trip_and_null_is_not_missing() {
    let decided: DecidedApprovals = round_trip(json!({"decisions": [audit_entry("text")]}));
    let calls = &decided.decisions[0].calls;
    assert_eq!(calls[0].run_args_sha256, None);
    assert_eq!(calls[1].result, None);
    let err = without::<AuditEntry>(audit_entry("text"), "/calls/0", "runArgsSha256");
    assert!(err.contains("missing field `runArgsSha256`"), "{err}");
    let err = without::<AuditEntry>(audit_entry("text"), "/calls/1", "reason");
    assert!(err.contains("missing field `reason`"), "{err}");
    let err = without::<AuditEntry>(audit_entry("text"), "", "decidedBy");
    assert!(err.contains("missing field `decidedBy`"), "{err}");
}

#[test]
fn an_audit_entry_reads_its_channel_verdicts_decider_and_decision_typed() {
    let entry: AuditEntry = round_trip(audit_entry("policy"));
    assert_eq!(entry.channel, DecisionChannel::Policy);
    assert_eq!(entry.decided_by, Decider("local".to_owned()));
    assert_eq!(entry.decider_auth, Some(DeciderAuth::None));
    // Absent for a decision no request made, or one recorded before servers kept it.
    let mut body = audit_entry("policy");
    body.as_object_mut().unwrap().remove("deciderAuth");
    let entry: AuditEntry = round_trip(body);
    assert_eq!(entry.decider_auth, None);
    assert_eq!(entry.calls[0].verdict, AuditVerdict::Deny);
    assert_eq!(entry.calls[1].verdict, AuditVerdict::Approve);
    assert_eq!(
        entry.decision,
        RecordedDecision::Person(Decision::deny_all(Some("No, keep it".to_owned())))
    );
    for (path, key, value, says) in [
        ("", "channel", json!("email"), "unknown variant `email`"),
        (
            "",
            "deciderAuth",
            json!("password"),
            "unknown variant `password`",
        ),
        ("/calls/0", "verdict", json!(""), "unknown variant ``"),
        ("", "decision", json!({"decision_type": "expire"}), "after"),
    ] {
        let mut body = audit_entry("text");
        body.pointer_mut(path).unwrap()[key] = value;
        let err = serde_json::from_value::<AuditEntry>(body)
            .err()
            .map(|err| err.to_string())
            .unwrap_or_default();
        assert!(err.contains(says), "{key}: {err}");
    }
}

#[test]
fn the_decide_response_round_trips_with_its_state_typed() {
    let answer: DecideResponse = round_trip(decide_response());
    assert_eq!(answer.state, TaskState::Completed);
    assert_eq!(answer.follow.params.id, "t-1");
    let mut body = decide_response();
    body["state"] = json!("input-required");
    body["decision"] = Value::Null;
    body["follow"]["url"] = Value::Null;
    let answer: DecideResponse = round_trip(body.clone());
    assert_eq!(answer.state, TaskState::InputRequired);
    assert_eq!(answer.decision, None);
    body["state"] = json!("TASK_STATE_COMPLETED");
    let err = serde_json::from_value::<DecideResponse>(body)
        .err()
        .map(|err| err.to_string());
    assert!(err.is_some_and(|err| err.contains("unknown task state \"TASK_STATE_COMPLETED\"")));
    let err = without::<DecideResponse>(decide_response(), "/follow", "url");
    assert!(err.contains("missing field `url`"), "{err}");
    let err = without::<DecideResponse>(decide_response(), "", "decision");
    assert!(err.contains("missing field `decision`"), "{err}");
}

#[test]
fn approval_events_read_back_by_name_and_refuse_what_does_not_fit() {
    let pending = json!({"taskId": "t-1", "contextId": "s-1", "batchId": 12,
        "agent": "default/demo", "title": "tidy up", "since": "2026-11-22T18:56:28.879Z",
        "calls": [{"id": "call_1", "name": "delete_file", "args": {"path": "old.txt"}}]});
    let event = ApprovalEvent::parse("pending", &pending.to_string()).unwrap();
    assert_eq!(event.name(), "pending");
    assert_eq!(event.task_id(), "t-1");
    assert_eq!(
        serde_json::from_str::<Value>(&event.data()).unwrap(),
        pending
    );
    let decided = json!({"taskId": "t-1", "contextId": "s-1", "outcome": "deleted",
        "decidedBy": null, "decidedAt": "2026-11-22T18:57:00.000Z"});
    let event = ApprovalEvent::parse("decided", &decided.to_string()).unwrap();
    assert_eq!(event.name(), "decided");
    assert_eq!(
        serde_json::from_str::<Value>(&event.data()).unwrap(),
        decided
    );
    let err = ApprovalEvent::parse("decided", r#"{"taskId": "t-1"}"#).unwrap_err();
    assert!(err.contains("missing field `contextId`"), "{err}");
    let err = ApprovalEvent::parse("gone", "{}").unwrap_err();
    assert_eq!(err, "unknown approvals event \"gone\"");
}

#[test]
fn a_routed_batch_says_who_asked_why_and_how_far_its_quorum_has_come() {
    let pending: PendingApproval = round_trip(json!({
        "taskId": "t1", "contextId": "c1", "batchId": 1, "agent": "default/ops",
        "title": "deploy", "since": "2026-11-26T10:00:00Z", "calls": [],
        "routing": {
            "requestedBy": "carol",
            "eligibleBy": ["group:sre"],
            "calls": [{
                "callId": "call_1", "approvers": ["group:sre"], "requesterMayApprove": false,
                "quorum": 2, "approvedBy": ["bob"], "voided": ["alice"],
                "argsSha256": "ab12",
                "requirement": "needs approval by group sre; the requester may not approve; 2 distinct approvals"
            }]
        }
    }));
    let routing = pending.routing.unwrap();
    assert_eq!(routing.calls[0].approved_by, ["bob"]);
    assert_eq!(routing.calls[0].quorum, 2);
    let vote: CallVoteEntry = round_trip(json!({
        "by": "bob", "email": "bob@example.com", "verdict": "approve",
        "eligibleBy": ["group:sre"], "channel": "rest", "at": "2026-11-26T10:01:00Z",
        "argsSha256": "ab12", "counted": true
    }));
    assert_eq!(vote.verdict, AuditVerdict::Approve);
    // Without a quorum configured the old shapes read as before.
    let plain: PendingApproval = round_trip(json!({
        "taskId": "t1", "contextId": "c1", "batchId": 1, "agent": "default/demo", "title": "",
        "since": "2026-11-26T10:00:00Z", "calls": []
    }));
    assert_eq!(plain.routing, None);
}
