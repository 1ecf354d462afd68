//! Cards from hand-built events: who decided a call (a policy, a rule, a deadline), and calls
//! whose events arrive out of order, each held to the whole-log passes after every event.

use serde_json::Value;
use signoff_protocol::{codec, ProtocolVersion, StreamEvent};

use super::super::ToolStatus;
use super::{assert_consistent, run};

/// A v0.3 `working` (or other) status update from this server, holding `parts`.
fn status_with(state: &str, parts: Value, is_final: bool) -> StreamEvent {
    let event = serde_json::json!({
        "kind": "status-update", "taskId": "t-9", "contextId": "s-9", "final": is_final,
        "status": {"state": state, "message": {"kind": "message", "role": "agent",
            "messageId": format!("m-{}", parts), "parts": parts}}});
    codec::decode_event(ProtocolVersion::V0_3, &event).unwrap()
}

#[test]
fn policy_allowed_denied_and_expired_calls_show_who_decided() {
    use serde_json::json;
    use signoff_protocol::hitl::DecidedBy;
    let policy = json!({"by": "policy", "policyId": "p-1", "summary": "write_file with any arguments, in this chat"});
    let rule = json!({"by": "rule", "rule": "#1 (write_file when path glob \".git/**\")", "action": "deny"});
    let call = |id: &str, path: &str, decided: &Value| {
        let mut part = json!({"kind": "data", "metadata": {"kagent_type": "function_call"},
                              "data": {"id": id, "name": "write_file", "args": {"path": path}}});
        if !decided.is_null() {
            part["metadata"]["signoff_decided_by"] = decided.clone();
        }
        part
    };
    let result = |id: &str, response: Value| {
        json!({"kind": "data", "metadata": {"kagent_type": "function_response"},
               "data": {"id": id, "name": "write_file", "response": response}})
    };
    let interrupt = json!([{"kind": "text", "text": "**Approval Required**"},
        {"kind": "data", "metadata": {"kagent_type": "interrupt_data"},
         "data": {"interrupt_type": "tool_approval", "expires_at": "2026-11-21T10:30:00.000Z",
                  "action_requests": [{"id": "c3", "name": "write_file", "args": {"path": "z"}}]}}]);
    let mut view = run(&[
        status_with("working", json!([call("c1", "a", &policy)]), false),
        status_with("working", json!([call("c2", ".git/x", &rule)]), false),
        status_with("working", json!([call("c3", "z", &Value::Null)]), false),
        status_with(
            "working",
            json!([result("c1", json!({"content": [], "isError": false}))]),
            false,
        ),
        status_with(
            "working",
            json!([result(
                "c2",
                json!({"status": "denied", "rule": "#1 (write_file when path glob \".git/**\")", "message": "Denied"})
            )]),
            false,
        ),
        status_with("input-required", interrupt, true),
    ]);
    let pending = view.pending.clone().unwrap();
    assert_eq!(pending.announcement(), "write_file waits for your approval");
    assert_eq!(
        pending.expires_at.as_deref(),
        Some("2026-11-21T10:30:00.000Z")
    );
    assert_eq!(
        view.tool("t-9:c1").unwrap().decided_by,
        Some(DecidedBy::Policy {
            id: "p-1".into(),
            summary: "write_file with any arguments, in this chat".into()
        })
    );
    let denied = view.tool("t-9:c2").unwrap();
    assert_eq!(denied.status, ToolStatus::Denied);
    assert_eq!(
        denied.reason.as_deref(),
        Some("#1 (write_file when path glob \".git/**\")")
    );
    view.apply(&status_with(
        "working",
        json!([result("c3", json!({"status": "expired", "message": "…"}))]),
        false,
    ));
    let expired = view.tool("t-9:c3").unwrap();
    assert_eq!(
        expired.status,
        ToolStatus::Expired,
        "not rejected: nobody refused it"
    );
    assert!(view.pending.is_none());
}

/// A working-state update of task `t` carrying an agent message with `parts`.
fn agent_update(id: &str, parts: Vec<signoff_protocol::Part>) -> StreamEvent {
    use signoff_protocol::{Message, Role, TaskState, TaskStatus, TaskStatusUpdateEvent};
    StreamEvent::StatusUpdate(TaskStatusUpdateEvent {
        task_id: "t".to_owned(),
        context_id: "c".to_owned(),
        status: TaskStatus {
            state: TaskState::Working,
            message: Some(Message::new(id, Role::Agent, parts)),
            timestamp: None,
        },
        is_final: false,
        metadata: None,
    })
}

#[test]
fn cards_that_arrive_out_of_order_match_the_whole_log_passes() {
    use signoff_protocol::hitl::{ActionRequest, ApprovalInterrupt, ToolCall, ToolResult};
    use signoff_protocol::Part;
    let call = |id: &str| {
        ToolCall {
            id: id.to_owned(),
            name: "read_file".to_owned(),
            args: serde_json::json!({"path": id}),
        }
        .to_part()
    };
    let held = |id: &str| ActionRequest {
        id: id.to_owned(),
        name: "write_file".to_owned(),
        args: serde_json::json!({"path": id}),
        description: None,
        server: None,
        approval_id: None,
        via: None,
        metadata: Default::default(),
    };
    let result = |id: &str| {
        ToolResult {
            id: id.to_owned(),
            name: "read_file".to_owned(),
            response: serde_json::json!({"result": id}),
        }
        .to_part()
    };
    let events = [
        // A result whose call was never seen: its card comes after every requested one.
        agent_update("m1", vec![result("a")]),
        agent_update("m2", vec![Part::text("looking"), call("b")]),
        // The id `a` again after its result: a new call with a card of its own.
        agent_update("m3", vec![call("a")]),
        agent_update("m4", vec![result("b"), result("a")]),
        agent_update("m5", vec![Part::text("done")]),
        // A batch holding `a` again, and `z` whose result came before any request: `z`'s card
        // moves up among the requested ones, before the result-only `t:a`.
        agent_update("m6", vec![result("z")]),
        agent_update(
            "m7",
            ApprovalInterrupt::new(vec![held("a"), held("z"), held("y")]).to_parts(),
        ),
    ];
    // `apply` checks the cards against the whole-log passes after every event (cfg(test)).
    let view = run(&events);
    assert_consistent(&view);
    let cards: Vec<(&str, ToolStatus)> = view
        .tools
        .iter()
        .map(|tool| (tool.key.as_str(), tool.status))
        .collect();
    assert_eq!(
        cards,
        [
            ("t:b", ToolStatus::Completed),
            // An interrupt names a call, it does not make one: it holds the latest `a`, which
            // already had its result (so it counts as approved elsewhere).
            ("t:a#2", ToolStatus::Approved),
            ("t:z", ToolStatus::Approved),
            ("t:y", ToolStatus::PendingApproval),
            ("t:a", ToolStatus::Completed),
        ]
    );
    assert_eq!(
        view.tool("t:a#2").map(|tool| tool.owner.as_str()),
        Some("m3")
    );
}

/// kagent 0.10.4 never streams the results of calls that needed no approval: its `read_file`
/// stays "Call requested" while the batch waits, and is done, with no result reported, once the
/// task completes. The approved calls keep their derived status and show "Completed" beside
/// their decision.
#[test]
fn kagent_calls_without_streamed_results_are_done_when_the_task_completes() {
    use super::{kagent_request_message, kagent_stream};

    for (first, resume) in [
        ("c1_interrupt", "c2_resume"),
        ("s_c1_interrupt", "s_c2_resume"),
        ("e1_interrupt", "e2_resume"),
    ] {
        let mut events = kagent_stream(first);
        let paused = run(&events);
        let read = |view: &super::super::ChatView| {
            view.tools
                .iter()
                .find(|tool| tool.name == "read_file")
                .cloned()
                .unwrap()
        };
        assert_eq!(read(&paused).status, ToolStatus::Requested, "{first}");
        assert!(!read(&paused).no_result_reported());

        events.push(kagent_request_message(resume));
        events.extend(kagent_stream(resume));
        // `run` holds every step to the whole-log passes.
        let done = run(&events);
        assert_consistent(&done);
        let read = read(&done);
        assert_eq!(read.status, ToolStatus::Completed, "{resume}");
        assert!(read.result.is_none() && read.no_result_reported());
        assert_eq!(read.outcome(), (ToolStatus::Completed, None));

        let write = done
            .tools
            .iter()
            .find(|tool| tool.name == "write_file")
            .unwrap();
        assert_eq!(write.status, ToolStatus::Approved, "never overwritten");
        assert!(write.result.is_some());
        assert_eq!(
            write.outcome(),
            (ToolStatus::Completed, Some(ToolStatus::Approved))
        );
        assert!(!write.no_result_reported());
    }
}

#[test]
fn a_call_still_requested_when_its_task_fails_is_not_called_done() {
    let call = serde_json::json!([{"kind": "data", "metadata": {"kagent_type": "function_call"},
        "data": {"id": "c-1", "name": "read_file", "args": {}}}]);
    let events = [
        status_with("working", call, false),
        status_with(
            "failed",
            serde_json::json!([{"kind": "text", "text": "boom"}]),
            true,
        ),
    ];
    let view = run(&events);
    assert_eq!(view.tools[0].status, ToolStatus::Requested);
    assert!(!view.tools[0].no_result_reported());
}

#[test]
fn kagent_rejection_sentences_are_read_as_the_protocol_reads_them() {
    use serde_json::json;
    let held = |id: &str| {
        json!([{"kind": "data", "metadata": {"kagent_type": "interrupt_data"},
            "data": {"interrupt_type": "tool_approval",
                     "action_requests": [{"id": id, "name": "write_file", "args": {}}]}}])
    };
    let result = |id: &str, sentence: &str| {
        json!([{"kind": "data", "metadata": {"kagent_type": "function_response"},
            "data": {"id": id, "name": "write_file", "response": {"result": sentence}}}])
    };
    let view = run(&[
        status_with("input-required", held("c1"), true),
        status_with(
            "working",
            result("c1", "Tool call was rejected by user. Reason: keep it"),
            false,
        ),
        status_with("input-required", held("c2"), true),
        // An empty reason is no reason: the card shows none rather than an empty quote.
        status_with(
            "working",
            result("c2", "Tool call was rejected by user. Reason: "),
            false,
        ),
    ]);
    let with_reason = view.tool("t-9:c1").unwrap();
    assert_eq!(with_reason.status, ToolStatus::Rejected);
    assert_eq!(with_reason.reason.as_deref(), Some("keep it"));
    let without = view.tool("t-9:c2").unwrap();
    assert_eq!(without.status, ToolStatus::Rejected);
    assert_eq!(without.reason, None);
}

/// Each card keeps its call's `signoff_why`, from the call's part or, for a held call that
/// came without one, from its action request's metadata; the incremental cards agree with the
/// whole-log passes.
#[test]
fn cards_keep_why_their_call_was_decided() {
    use serde_json::json;
    let why = json!({"by": "grant", "id": "g", "outcome": "allow", "summary": "s, 1 more call"});
    let held_why = json!({"by": "policy", "id": "p", "outcome": "ask", "summary": "s"});
    let mut call = json!({"kind": "data", "metadata": {"kagent_type": "function_call"},
                          "data": {"id": "c1", "name": "write_file", "args": {"path": "a"}}});
    call["metadata"]["signoff_why"] = why.clone();
    let interrupt = json!([{"kind": "data", "metadata": {"kagent_type": "interrupt_data"},
        "data": {"interrupt_type": "tool_approval",
                 "action_requests": [{"id": "c2", "name": "write_file", "args": {"path": "b"},
                                      "metadata": {"signoff_why": held_why.clone()}}]}}]);
    let events = [
        status_with("working", json!([call]), false),
        status_with("input-required", interrupt, true),
    ];
    let view = run(&events);
    assert_eq!(view.tool("t-9:c1").unwrap().why, Some(why));
    assert_eq!(view.tool("t-9:c2").unwrap().why, Some(held_why));
    assert_consistent(&view);
}

#[test]
fn a_call_its_request_marks_not_editable_offers_no_edit() {
    use serde_json::json;
    use signoff_protocol::hitl::{keys, Dialect};
    // A coding agent's `execute` over ACP runs its own tool: yes or no, not other arguments.
    let execute = json!({"id": "c1", "name": "execute",
        "args": {"title": "`ls`", "input": {"command": "ls", "description": "List"}},
        "metadata": {keys::EDITABLE: false}});
    let write = json!({"id": "c2", "name": "write_file", "args": {"path": "a.txt"}});
    let marked_editable = json!({"id": "c3", "name": "write_file", "args": {"path": "b.txt"},
        "metadata": {keys::EDITABLE: true}});
    let interrupt = json!([{"kind": "text", "text": "**Approval Required**"},
        {"kind": "data", "metadata": {"kagent_type": "interrupt_data"},
         "data": {"interrupt_type": "tool_approval",
                  "action_requests": [execute, write, marked_editable]}}]);
    let view = run(&[status_with("input-required", interrupt, true)]);
    let mut pending = view.pending.clone().unwrap();
    assert_eq!(pending.dialect, Dialect::Native);
    assert!(!pending.can_edit("c1"), "{pending:?}");
    assert!(pending.can_edit("c2"));
    assert!(pending.can_edit("c3"));
    // A call not in the batch, and any call at a kagent peer, which runs the original ones.
    assert!(!pending.can_edit("c9"));
    pending.dialect = Dialect::Kagent;
    assert!(!pending.can_edit("c2"));
}
