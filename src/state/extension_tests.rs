//! The reducer over kagent's HITL extension (the streams written from its documentation in
//! crates/protocol/tests/fixtures/kagent-hitl-v1): its pauses wait as batches on the calls'
//! cards, the draft's decisions become its responses, and the responses read back as decisions,
//! compared against snapshots in `snapshots/`.

use std::path::PathBuf;

use expect_test::expect_file;
use serde_json::Value;
use signoff_protocol::codec;
use signoff_protocol::hitl::{Dialect, Verdict};
use signoff_protocol::{ProtocolVersion, StreamEvent};

use super::draft::{decision_message, BatchDraft};
use super::tests::{assert_consistent, check, events_from_sse, read, run};
use super::{ChatStatus, ChatView, ToolStatus};

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("crates/protocol/tests/fixtures/kagent-hitl-v1")
}

fn stream(name: &str) -> Vec<StreamEvent> {
    events_from_sse(&read(dir().join(name)), ProtocolVersion::V1_0)
}

/// The documented response's `message/stream` params.
fn response_params(name: &str) -> Value {
    let body: Value = serde_json::from_str(&read(dir().join(name))).unwrap();
    body["params"].clone()
}

fn sent(message: signoff_protocol::Message) -> Value {
    codec::encode_send_params(
        ProtocolVersion::V1_0,
        &signoff_protocol::SendMessageParams {
            message,
            configuration: None,
            metadata: None,
        },
    )
}

fn status(view: &ChatView, id: &str) -> Option<ToolStatus> {
    view.tools
        .iter()
        .find(|tool| tool.id == id)
        .map(|tool| tool.status)
}

/// The request stream, the person's decision as the UI sends it, then the resume stream.
fn decided(
    request: &str,
    decide: impl Fn(&ChatView) -> signoff_protocol::Message,
    resume: &str,
) -> ChatView {
    let mut view = run(&stream(request));
    let message = decide(&view);
    view.send(&message);
    for event in stream(resume) {
        view.apply(&event);
    }
    view
}

#[test]
fn two_approvals_wait_on_their_calls_and_go_back_by_approval_id() {
    let paused = run(&stream("p1_tool_approval_request.sse"));
    assert_consistent(&paused);
    assert_eq!(paused.status, ChatStatus::AwaitingApproval);
    let batch = paused.pending.as_ref().unwrap();
    assert_eq!(batch.dialect, Dialect::KagentExtension);
    check(
        &paused,
        expect_file!["snapshots/extension_p1_approvals.txt"],
    );

    let reason = "The file is still used by the migration job";
    let decide = |view: &ChatView| {
        let batch = view.pending.as_ref().unwrap();
        let mut draft = BatchDraft::new(&batch.task_id);
        draft.choose("call-delete", Verdict::Deny, Some(reason));
        draft.choose("call-restart", Verdict::Approve, None);
        let decision = draft.decision(batch).unwrap();
        decision_message(batch, &decision, "approval-response-1".to_owned()).unwrap()
    };
    assert_eq!(
        sent(decide(&paused)),
        response_params("p2_tool_approval_response.request.json")
    );
    let view = decided(
        "p1_tool_approval_request.sse",
        decide,
        "p2_tool_approval_resume.sse",
    );
    assert_consistent(&view);
    assert!(view.pending.is_none());
    assert_eq!(status(&view, "call-delete"), Some(ToolStatus::Rejected));
    assert_eq!(status(&view, "call-restart"), Some(ToolStatus::Approved));
    check(&view, expect_file!["snapshots/extension_p2_decided.txt"]);
}

#[test]
fn a_question_shows_on_its_ask_user_call_and_goes_back_by_request_id() {
    let paused = run(&stream("q1_ask_user_request.sse"));
    assert_consistent(&paused);
    let batch = paused.pending.as_ref().unwrap();
    // The extension names no call id for the question: it shows on the `ask_user` call.
    assert_eq!(batch.requests[0].id, "call-ask");
    assert_eq!(
        batch.requests[0].approval_id.as_deref(),
        Some("approval-question-1")
    );
    assert_eq!(paused.tools.len(), 1);
    check(&paused, expect_file!["snapshots/extension_q1_question.txt"]);

    let decide = |view: &ChatView| {
        let batch = view.pending.as_ref().unwrap();
        let mut draft = BatchDraft::new(&batch.task_id);
        draft.pick("call-ask", 0, 3, "PostgreSQL", false, true);
        draft.pick("call-ask", 1, 3, "Authentication", true, true);
        draft.pick("call-ask", 1, 3, "Caching", true, true);
        draft.write("call-ask", 2, 3, " Use the existing backup policy ");
        let decision = draft.submit(batch).unwrap();
        decision_message(batch, &decision, "ask-response-1".to_owned()).unwrap()
    };
    assert_eq!(
        sent(decide(&paused)),
        response_params("q2_ask_user_response.request.json")
    );
    // A lone question cannot be rejected in the extension: the draft says so, nothing is sent.
    let rejected = decision_message(batch, &super::draft::reject_all(None), "m".to_owned());
    assert!(rejected.is_err(), "{rejected:?}");

    let view = decided("q1_ask_user_request.sse", decide, "q2_ask_user_resume.sse");
    assert_consistent(&view);
    assert!(view.pending.is_none());
    assert_eq!(status(&view, "call-ask"), Some(ToolStatus::Approved));
    check(&view, expect_file!["snapshots/extension_q2_answered.txt"]);
}
