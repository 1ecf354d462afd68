//! A coding agent's own steps (docs/wire.md, Calls an agent ran itself): a call it ran without
//! asking is a card that changes in place as the agent reports it, with no decision to make,
//! and a thought is folded away beside the answer; a stored task shows the same.

use serde_json::json;
use signoff_protocol::hitl::ran::thought_part;
use signoff_protocol::hitl::{Preview, RanCall, RanStatus};
use signoff_protocol::{Message, Part, Role, StreamEvent, Task, TaskState, TaskStatus};

use super::super::view::ItemKind;
use super::super::{replay, ToolStatus};
use super::{assert_consistent, run};

fn working(id: &str, parts: Vec<Part>) -> StreamEvent {
    use signoff_protocol::TaskStatusUpdateEvent;
    StreamEvent::StatusUpdate(TaskStatusUpdateEvent {
        task_id: "t".into(),
        context_id: "c".into(),
        status: TaskStatus {
            state: TaskState::Working,
            message: Some(Message::new(id, Role::Agent, parts)),
            timestamp: None,
        },
        is_final: false,
        metadata: None,
    })
}

fn edit(status: RanStatus, new_text: &str) -> RanCall {
    RanCall {
        id: "ran_1".into(),
        name: "edit".into(),
        args: json!({"title": "Edit a.txt", "input": {"file_path": "/w/a.txt", "new_string": new_text}}),
        status,
        output: vec!["edited".into()],
        preview: Some(Preview::Diff(format!(
            "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-hi\n+{new_text}\n"
        ))),
    }
}

/// The events of one call reported three times, a thought, and the answer after them.
fn reported() -> Vec<StreamEvent> {
    let report = |id: &str, call: RanCall| {
        let mut parts = vec![call.call_part()];
        parts.extend(call.result_part());
        working(id, parts)
    };
    vec![
        working(
            "m-0",
            vec![thought_part("The file says hi; make it hello.")],
        ),
        report("m-1", edit(RanStatus::InProgress, "hell")),
        report("m-2", edit(RanStatus::InProgress, "hello")),
        report("m-3", edit(RanStatus::Completed, "hello")),
    ]
}

#[test]
fn a_call_the_agent_ran_is_one_card_that_changes_in_place() {
    let events = reported();
    let running = run(&events[..2]);
    let card = running.tool("t:ran_1").unwrap();
    assert_eq!(card.status, ToolStatus::Executing);
    assert!(card.ran && card.result.is_none());
    let view = run(&events[..3]);
    assert_eq!(view.tools.len(), 1, "one card for one call");
    let card = &view.tools[0];
    assert_eq!(card.status, ToolStatus::Executing);
    assert_eq!(
        card.args["input"]["new_string"], "hello",
        "the latest arguments"
    );
    let view = run(&events);
    assert_consistent(&view);
    let card = &view.tools[0];
    assert_eq!(
        card.status,
        ToolStatus::Completed,
        "over once the agent said so"
    );
    assert_eq!(
        card.outcome(),
        (ToolStatus::Completed, None),
        "no decision beside it"
    );
    assert_eq!(
        card.result.as_ref().unwrap()["content"][0]["text"],
        "edited"
    );
    let Some(Preview::Diff(diff)) = card.preview.as_ref().and_then(Preview::from_value) else {
        panic!("no diff: {:?}", card.preview)
    };
    assert!(diff.contains("+hello"), "{diff}");
    assert!(view.pending.is_none(), "nothing waits on anyone");
}

#[test]
fn a_failed_call_fails_and_a_thought_is_not_the_answer() {
    let mut events = reported();
    events.pop();
    let failed = edit(RanStatus::Failed, "hello");
    events.push(working(
        "m-3",
        vec![failed.call_part(), failed.result_part().unwrap()],
    ));
    let view = run(&events);
    assert_eq!(view.tools[0].status, ToolStatus::Failed);
    assert!(view.tools[0].is_error);
    let thoughts: Vec<_> = view
        .items
        .iter()
        .filter(|item| item.kind == ItemKind::Thought)
        .collect();
    assert_eq!(thoughts.len(), 1);
    assert_eq!(thoughts[0].text, "The file says hi; make it hello.");
    assert!(
        view.items
            .iter()
            .all(|item| item.kind != ItemKind::Agent || !item.text.contains("make it")),
        "the thought shows in no answer: {:?}",
        view.items
    );
}

#[test]
fn a_stored_task_shows_the_same_cards_and_thought() {
    let events = reported();
    let live = run(&events);
    let history: Vec<Message> = events
        .iter()
        .filter_map(|event| match event {
            StreamEvent::StatusUpdate(update) => update.status.message.clone(),
            StreamEvent::Task(_) | StreamEvent::Message(_) | StreamEvent::ArtifactUpdate(_) => None,
        })
        .collect();
    let stored = Task {
        id: "t".into(),
        context_id: "c".into(),
        status: TaskStatus {
            state: TaskState::Completed,
            message: None,
            timestamp: None,
        },
        history,
        artifacts: Vec::new(),
        metadata: None,
    };
    let reloaded = replay(&[stored]);
    assert_eq!(reloaded.tools, live.tools);
    let kinds = |view: &super::super::ChatView| -> Vec<(ItemKind, String)> {
        view.items
            .iter()
            .map(|item| (item.kind, item.text.clone()))
            .collect()
    };
    assert_eq!(kinds(&reloaded), kinds(&live));
}

/// A v0.3 event of task `t` from JSON.
fn event(json: serde_json::Value) -> StreamEvent {
    signoff_protocol::codec::decode_event(signoff_protocol::ProtocolVersion::V0_3, &json).unwrap()
}

fn status(state: &str, id: &str, parts: serde_json::Value) -> StreamEvent {
    event(json!({
        "kind": "status-update", "taskId": "t", "contextId": "c", "final": state != "working",
        "status": {"state": state, "message": {"kind": "message", "role": "agent",
            "messageId": id, "parts": parts}}}))
}

#[test]
fn a_call_reported_pending_then_asked_is_one_card_that_ends_with_the_agents_report() {
    let args =
        json!({"title": "Write /w/a.txt", "input": {"file_path": "/w/a.txt", "content": "hi"}});
    let call = |ran: Option<&str>| {
        let mut part = json!({"kind": "data", "metadata": {"kagent_type": "function_call"},
                              "data": {"id": "ran_1", "name": "edit", "args": args}});
        if let Some(ran) = ran {
            part["metadata"]["signoff_ran"] = json!(ran);
        }
        part
    };
    let result = |text: &str, ran: Option<&str>| {
        let mut part = json!({"kind": "data", "metadata": {"kagent_type": "function_response"},
            "data": {"id": "ran_1", "name": "edit",
                     "response": {"content": [{"type": "text", "text": text}], "isError": false}}});
        if let Some(ran) = ran {
            part["metadata"]["signoff_ran"] = json!(ran);
        }
        part
    };
    let events = vec![
        status("working", "m-1", json!([call(Some("pending"))])),
        status("working", "m-2", json!([call(None)])),
        status(
            "input-required",
            "m-3",
            json!([{"kind": "data", "metadata": {"kagent_type": "interrupt_data"},
                    "data": {"interrupt_type": "tool_approval",
                             "action_requests": [{"id": "ran_1", "name": "edit", "args": args}]}}]),
        ),
        event(
            json!({"kind": "message", "role": "user", "messageId": "d-1", "taskId": "t",
                     "contextId": "c", "parts": [{"kind": "data", "data": {"decision_type": "approve"}}]}),
        ),
        status(
            "working",
            "m-4",
            json!([result("Allowed: the coding agent runs it now.", None)]),
        ),
        status(
            "working",
            "m-5",
            json!([result("File created at /w/a.txt", Some("completed"))]),
        ),
        status(
            "completed",
            "m-6",
            json!([{"kind": "text", "text": "Wrote it."}]),
        ),
    ];
    let pending = run(&events[..1]);
    assert_eq!(pending.tools[0].status, ToolStatus::Requested);
    assert!(pending.tools[0].ran);
    let held = run(&events[..3]);
    assert_eq!(held.tools.len(), 1, "one card for one call");
    assert_eq!(held.tools[0].status, ToolStatus::PendingApproval);
    assert!(!held.tools[0].ran, "asked, so not the agent's own doing");
    assert!(held.pending.is_some());
    let allowed = run(&events[..5]);
    assert_eq!(allowed.tools[0].status, ToolStatus::Approved);
    let view = run(&events);
    assert_consistent(&view);
    assert_eq!(view.tools.len(), 1, "one card for one call");
    let card = &view.tools[0];
    assert_eq!(
        card.outcome(),
        (ToolStatus::Completed, Some(ToolStatus::Approved)),
        "as the agent reported, and approved"
    );
    assert_eq!(
        card.result.as_ref().unwrap()["content"][0]["text"],
        "File created at /w/a.txt"
    );
}
