//! Golden JSON for each example of docs/wire.md's Approval interrupt and Decision message
//! sections (native and kagent terms). The v0.3 goldens were first written by hand from the
//! documented examples; `UPDATE_GOLDEN=1 cargo test -p signoff-protocol --test golden`
//! re-blesses them.

// Helpers outside #[test] functions panic on bad input too; that is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeMap;

use common::check_golden;
use serde_json::json;
use signoff_protocol::codec;
use signoff_protocol::hitl::{
    interrupt_event_metadata, ActionRequest, ApprovalInterrupt, Decision, DecisionKind, Dialect,
    Verdict,
};
use signoff_protocol::{
    Message, ProtocolVersion, Role, StreamEvent, TaskState, TaskStatus, TaskStatusUpdateEvent,
};

fn request(id: &str, name: &str, args: serde_json::Value) -> ActionRequest {
    ActionRequest {
        id: id.to_owned(),
        name: name.to_owned(),
        args,
        description: None,
        server: None,
        approval_id: None,
        via: None,
        metadata: Default::default(),
    }
}

/// The interrupt example (docs/wire.md, Approval interrupt): a batch of two held calls ends the
/// turn.
fn interrupt_event() -> StreamEvent {
    let interrupt = ApprovalInterrupt::new(vec![
        request(
            "call_1",
            "write_file",
            json!({"path": "notes.txt", "content": "hi"}),
        ),
        request("call_2", "delete_file", json!({"path": "old.txt"})),
    ]);
    let mut message = Message::new("m-9", Role::Agent, interrupt.to_parts());
    message.task_id = Some("t-1".to_owned());
    message.context_id = Some("s-1".to_owned());
    StreamEvent::StatusUpdate(TaskStatusUpdateEvent {
        task_id: "t-1".to_owned(),
        context_id: "s-1".to_owned(),
        status: TaskStatus {
            state: TaskState::InputRequired,
            message: Some(message),
            timestamp: Some("2026-11-21T10:00:00.000Z".to_owned()),
        },
        is_final: true,
        metadata: Some(interrupt_event_metadata()),
    })
}

#[test]
fn the_interrupt_event_of_section_4() {
    let event = interrupt_event();
    for (version, golden) in [
        (ProtocolVersion::V0_3, "interrupt_v03"),
        (ProtocolVersion::V1_0, "interrupt_v10"),
    ] {
        let wire = codec::encode_event(version, &event);
        check_golden(golden, &wire);
        assert_eq!(
            codec::decode_event(version, &wire).unwrap(),
            event,
            "{golden}"
        );
    }
    let StreamEvent::StatusUpdate(update) = &event else {
        panic!("not a status update");
    };
    let interrupt = ApprovalInterrupt::from_status(&update.status).unwrap();
    assert_eq!(interrupt.dialect, Dialect::Native);
    assert_eq!(interrupt.ids().collect::<Vec<_>>(), ["call_1", "call_2"]);
}

/// The decision examples (docs/wire.md, Decision message), by golden name.
fn decisions() -> Vec<(&'static str, Decision)> {
    let batch = DecisionKind::Batch {
        decisions: BTreeMap::from([
            ("call_1".to_owned(), Verdict::Approve),
            ("call_2".to_owned(), Verdict::Deny),
        ]),
        rejection_reasons: BTreeMap::from([("call_2".to_owned(), "keep it".to_owned())]),
    };
    vec![
        ("decision_approve", Decision::approve_all()),
        (
            "decision_deny",
            Decision::deny_all(Some("too risky".to_owned())),
        ),
        (
            "decision_batch",
            Decision {
                kind: batch,
                modified_args: BTreeMap::new(),
                answers: Vec::new(),
            },
        ),
        (
            "decision_modified_args",
            Decision {
                kind: DecisionKind::ApproveAll,
                modified_args: BTreeMap::from([(
                    "call_1".to_owned(),
                    json!({"path": "safe.txt", "content": "hi"}),
                )]),
                answers: Vec::new(),
            },
        ),
        (
            "decision_answers",
            Decision::answer(vec![vec!["SQLite".to_owned()]]),
        ),
    ]
}

#[test]
fn the_decision_messages_of_section_5() {
    for (golden, decision) in decisions() {
        let mut message = Message::new("m-10", Role::User, decision.to_parts(Dialect::Native));
        message.task_id = Some("t-1".to_owned());
        message.context_id = Some("s-1".to_owned());
        let wire = codec::encode_message(ProtocolVersion::V0_3, &message);
        check_golden(golden, &wire);
        let read = codec::decode_message(ProtocolVersion::V0_3, &wire).unwrap();
        assert_eq!(
            Decision::from_message(&read).unwrap(),
            Some(decision),
            "{golden}"
        );
    }
}

#[test]
fn the_decisions_of_section_5_in_kagent_terms() {
    for (golden, decision) in decisions() {
        let data = decision.to_data(Dialect::Kagent);
        check_golden(&format!("{golden}_kagent"), &data);
        assert_eq!(Decision::from_data(&data).unwrap(), decision, "{golden}");
    }
}

#[test]
fn synonyms_read_as_the_same_decision() {
    let check = |a: serde_json::Value, b: serde_json::Value| {
        assert_eq!(
            Decision::from_data(&a).unwrap(),
            Decision::from_data(&b).unwrap(),
            "{a} vs {b}"
        );
    };
    check(
        json!({"decision_type": "reject", "rejection_reason": "too risky"}),
        json!({"decision_type": "deny", "reason": "too risky"}),
    );
    check(
        json!({"decision_type": "deny", "rejection_reason": "too risky"}),
        json!({"decision_type": "reject", "reason": "too risky"}),
    );
    check(
        json!({"decision_type": "batch", "decisions": {"call_1": "reject"}}),
        json!({"decision_type": "batch", "decisions": {"call_1": "deny"}}),
    );
    check(
        json!({"decision_type": "deny", "reason": ""}),
        json!({"decision_type": "deny"}),
    );
}
