//! kagent's HITL extension (docs/wire.md, kagent's HITL extension) over the streams written from
//! its documentation (tests/fixtures/kagent-hitl-v1): every event round-trips through the v1.0
//! codec unchanged, the pauses read as interrupts keyed by call id with their approval ids, and
//! decisions are written exactly as the documented responses (the `*.request.json` goldens).

// Helpers outside #[test] functions panic on bad input too; that is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde_json::{json, Value};
use signoff_protocol::codec;
use signoff_protocol::hitl::extension::{self, URI};
use signoff_protocol::hitl::{
    resolve, ApprovalInterrupt, Decision, DecisionError, DecisionKind, Dialect, Verdict,
};
use signoff_protocol::sse::SseFrame;
use signoff_protocol::{
    Message, Metadata, Part, ProtocolVersion, Role, SendMessageParams, StreamEvent,
};

const V10: ProtocolVersion = ProtocolVersion::V1_0;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/kagent-hitl-v1/")
        .join(name)
}

fn fixture_json(name: &str) -> Value {
    serde_json::from_slice(&std::fs::read(fixture(name)).unwrap()).unwrap()
}

/// Each event of a stream as its wire `result` and as decoded.
fn stream(name: &str) -> Vec<(Value, StreamEvent)> {
    let bytes = std::fs::read(fixture(name)).unwrap();
    common::parse_chunks([bytes.as_slice()])
        .into_iter()
        .map(|frame| match frame {
            SseFrame::Event(event) => {
                let envelope: Value = serde_json::from_str(&event.data).unwrap();
                let decoded = codec::decode_stream_response(V10, &event.data)
                    .unwrap_or_else(|err| panic!("{name}: {err}"))
                    .unwrap_or_else(|err| panic!("{name}: error {err:?}"));
                (envelope["result"].clone(), decoded)
            }
            SseFrame::Done => panic!("{name}: unexpected [DONE]"),
        })
        .collect()
}

/// The interrupt the stream's last event pauses with.
fn pause(name: &str) -> ApprovalInterrupt {
    let (_, last) = stream(name).pop().unwrap();
    let StreamEvent::StatusUpdate(update) = last else {
        panic!("{name} does not end with a status update");
    };
    ApprovalInterrupt::from_status(&update.status).unwrap()
}

/// What a client sends on the paused task: `message/stream` params in v1.0.
fn sent_params(message: Message) -> Value {
    let mut message = message;
    message.task_id = Some("task-123".to_owned());
    message.context_id = Some("conversation-456".to_owned());
    codec::encode_send_params(
        V10,
        &SendMessageParams {
            message,
            configuration: None,
            metadata: None,
        },
    )
}

#[test]
fn every_event_round_trips_through_the_v10_codec_unchanged() {
    for name in [
        "p1_tool_approval_request.sse",
        "p2_tool_approval_resume.sse",
        "q1_ask_user_request.sse",
        "q2_ask_user_resume.sse",
    ] {
        for (wire, event) in stream(name) {
            assert_eq!(codec::encode_event(V10, &event), wire, "{name}");
        }
    }
    for name in [
        "p2_tool_approval_response.request.json",
        "q2_ask_user_response.request.json",
    ] {
        let params = fixture_json(name)["params"].clone();
        let decoded = codec::decode_send_params(V10, &params).unwrap();
        assert_eq!(decoded.message.extensions, vec![URI.to_owned()], "{name}");
        assert_eq!(codec::encode_send_params(V10, &decoded), params, "{name}");
        // v0.3 carries the same message with its `extensions`.
        let v03 = codec::encode_send_params(ProtocolVersion::V0_3, &decoded);
        assert_eq!(v03["message"]["extensions"], json!([URI]), "{name}");
        assert_eq!(
            codec::decode_send_params(ProtocolVersion::V0_3, &v03).unwrap(),
            decoded
        );
    }
}

#[test]
fn the_card_declares_the_extension() {
    let wire = fixture_json("agent_card.json");
    assert_eq!(codec::decode_card_extensions(&wire), vec![URI.to_owned()]);
    let card = codec::decode_agent_card(&wire).unwrap();
    assert!(extension::is_declared(&card.capabilities.extensions));
    let again = codec::encode_agent_card(&card, codec::CardFlavor::StrictV1);
    assert_eq!(again["capabilities"]["extensions"], json!([{"uri": URI}]));
    assert_eq!(extension::activation_header(V10), "A2A-Extensions");
    assert_eq!(
        extension::activation_header(ProtocolVersion::V0_3),
        "X-A2A-Extensions"
    );
}

#[test]
fn tool_approvals_are_keyed_by_call_id_and_answered_by_approval_id() {
    let interrupt = pause("p1_tool_approval_request.sse");
    assert_eq!(interrupt.dialect, Dialect::KagentExtension);
    let ids: Vec<(&str, Option<&str>)> = interrupt
        .action_requests
        .iter()
        .map(|request| (request.id.as_str(), request.approval_id.as_deref()))
        .collect();
    assert_eq!(
        ids,
        [
            ("call-delete", Some("approval-21")),
            ("call-restart", Some("approval-22"))
        ]
    );
    assert_eq!(
        interrupt.action_requests[1].args,
        json!({"name": "api", "namespace": "production"})
    );
    let reason = "The file is still used by the migration job";
    let decision = Decision {
        kind: DecisionKind::Batch {
            decisions: BTreeMap::from([
                ("call-delete".to_owned(), Verdict::Deny),
                ("call-restart".to_owned(), Verdict::Approve),
            ]),
            rejection_reasons: BTreeMap::from([("call-delete".to_owned(), reason.to_owned())]),
        },
        modified_args: BTreeMap::new(),
        answers: Vec::new(),
    };
    let message = decision
        .to_message(
            interrupt.dialect,
            &interrupt.action_requests,
            "approval-response-1".to_owned(),
        )
        .unwrap();
    let golden = fixture_json("p2_tool_approval_response.request.json");
    assert_eq!(sent_params(message.clone()), golden["params"]);
    // Read back against the pause it answers, it is the same decision in call ids.
    let read = extension::decision_from_message(&message, &interrupt.action_requests).unwrap();
    assert_eq!(read, decision);
    let calls = resolve(&interrupt.action_requests, &read).unwrap();
    assert_eq!(calls[0].reason.as_deref(), Some(reason));
    // A message without the extension is no decision of it.
    let mut undeclared = message;
    undeclared.extensions.clear();
    assert_eq!(
        extension::decision_from_message(&undeclared, &interrupt.action_requests),
        None
    );
}

#[test]
fn a_question_is_answered_by_its_request_id() {
    let interrupt = pause("q1_ask_user_request.sse");
    let [question] = interrupt.action_requests.as_slice() else {
        panic!("one question call expected");
    };
    assert_eq!(question.approval_id.as_deref(), Some("approval-question-1"));
    let questions = question.questions().unwrap();
    assert_eq!(questions.len(), 3);
    assert!(questions[1].multiple && questions[2].is_free_text());
    let answers = vec![
        vec!["PostgreSQL".to_owned()],
        vec!["Authentication".to_owned(), "Caching".to_owned()],
        vec!["Use the existing backup policy".to_owned()],
    ];
    let decision = Decision::answer(answers);
    let message = decision
        .to_message(
            interrupt.dialect,
            &interrupt.action_requests,
            "ask-response-1".to_owned(),
        )
        .unwrap();
    let golden = fixture_json("q2_ask_user_response.request.json");
    assert_eq!(sent_params(message.clone()), golden["params"]);
    assert_eq!(
        extension::decision_from_message(&message, &interrupt.action_requests),
        Some(decision)
    );
    // The extension has no rejection of a question, and an answer must fit its question.
    let requests = &interrupt.action_requests;
    assert_eq!(
        Decision::deny_all(None).to_message(interrupt.dialect, requests, "m".to_owned()),
        Err(DecisionError::QuestionNotAnswered(question.id.clone()))
    );
    let unknown = Decision::answer(vec![
        vec!["Oracle".to_owned()],
        vec!["Caching".to_owned()],
        vec!["no".to_owned()],
    ]);
    assert!(matches!(
        extension::response_payload(requests, &unknown),
        Err(DecisionError::UnknownOption { .. })
    ));
    assert!(!interrupt.dialect.can_reject_a_lone_question());
}

fn agent_message(payload: Value) -> Message {
    let mut message = Message::new("m", Role::Agent, vec![Part::text("Approval required")]);
    message.extensions = vec![URI.to_owned()];
    let mut metadata = Metadata::new();
    metadata.insert(URI.to_owned(), payload);
    message.metadata = Some(metadata);
    message
}

#[test]
fn a_subagents_pause_is_decided_on_its_nested_tools() {
    // The documentation's Case 4: the parent's remote-agent call is not what is decided.
    let message = agent_message(json!({
        "type": "tool_approval_request",
        "hint": "Remote agent k8s_agent requires approval",
        "tools": [{"id": "parent-approval-1", "call_id": "parent-call-1", "name": "k8s_agent",
                   "args": {"request": "Remove the obsolete pod"}}],
        "nested": {"subagent_name": "k8s_agent", "task_id": "child-task-1",
                   "context_id": "child-context-1",
                   "tools": [{"id": "child-approval-1", "call_id": "child-call-1",
                              "name": "delete_pod",
                              "args": {"name": "obsolete", "namespace": "production"}}]}
    }));
    let interrupt = ApprovalInterrupt::from_message(&message).unwrap();
    let [request] = interrupt.action_requests.as_slice() else {
        panic!("one nested call expected");
    };
    assert_eq!(request.id, "child-call-1");
    assert_eq!(request.server.as_deref(), Some("k8s_agent"));
    assert_eq!(
        extension::response_payload(&interrupt.action_requests, &Decision::deny_all(None)),
        Ok(json!({"type": "tool_approval_response",
                  "approvals": [{"id": "child-approval-1", "approved": false}]}))
    );
    // A nested question is answered with the child's id.
    let message = agent_message(json!({
        "type": "ask_user_request", "id": "adk-hitl-id",
        "questions": [{"question": "Which resource?"}],
        "nested": {"subagent_name": "hitl_agent", "task_id": "child-task",
                   "tools": [{"id": "ask-1", "call_id": "ask-1", "name": "ask_user",
                              "args": {"questions": [{"question": "Which resource?"}]}}]}
    }));
    let interrupt = ApprovalInterrupt::from_message(&message).unwrap();
    let answer = Decision::answer(vec![vec!["pod/api".to_owned()]]);
    assert_eq!(
        extension::response_payload(&interrupt.action_requests, &answer),
        Ok(
            json!({"type": "ask_user_response", "id": "ask-1", "answers": [{"answer": ["pod/api"]}]})
        )
    );
}

#[test]
fn what_the_extension_cannot_say_is_refused() {
    let interrupt = pause("p1_tool_approval_request.sse");
    let requests = &interrupt.action_requests;
    let mut edited = Decision::approve_all();
    edited
        .modified_args
        .insert("call-delete".to_owned(), json!({"path": "/tmp/other"}));
    assert_eq!(
        extension::response_payload(requests, &edited),
        Err(DecisionError::EditsNotCarried("call-delete".to_owned()))
    );
    assert!(!interrupt.dialect.supports_modified_args());
    assert!(!interrupt.dialect.answers_approve_every_call());
    // A decision that breaks the decision rules is refused as it would be natively.
    let partial = Decision {
        kind: DecisionKind::Batch {
            decisions: BTreeMap::from([("call-delete".to_owned(), Verdict::Approve)]),
            rejection_reasons: BTreeMap::new(),
        },
        modified_args: BTreeMap::new(),
        answers: Vec::new(),
    };
    assert_eq!(
        extension::response_payload(requests, &partial),
        Err(DecisionError::BatchMissesCall("call-restart".to_owned()))
    );
    // A question beside a call (kagent sends it as a tool to approve) can only be rejected.
    let mixed = agent_message(json!({
        "type": "tool_approval_request",
        "tools": [
            {"id": "a-1", "call_id": "c-1", "name": "ask_user",
             "args": {"questions": [{"question": "Why?"}]}},
            {"id": "a-2", "call_id": "c-2", "name": "delete_file", "args": {"path": "x"}}
        ]
    }));
    let interrupt = ApprovalInterrupt::from_message(&mixed).unwrap();
    let answered = Decision::answer(vec![vec!["because".to_owned()]]);
    assert_eq!(
        extension::response_payload(&interrupt.action_requests, &answered),
        Err(DecisionError::AnswersBesideCalls("c-1".to_owned()))
    );
    assert_eq!(
        extension::response_payload(
            &interrupt.action_requests,
            &Decision::deny_all(Some("no".to_owned()))
        ),
        Ok(json!({"type": "tool_approval_response", "approvals": [
            {"id": "a-1", "approved": false, "rejection_reason": "no"},
            {"id": "a-2", "approved": false, "rejection_reason": "no"}
        ]}))
    );
}

#[test]
fn a_malformed_request_is_no_interrupt() {
    for payload in [
        json!({"type": "tool_approval_request", "tools": []}),
        json!({"type": "tool_approval_request", "tools": [{"id": "a", "name": "x", "args": {}}]}),
        json!({"type": "tool_approval_request", "tools": [{"id": "a", "call_id": "c", "name": "x", "args": []}]}),
        json!({"type": "ask_user_request", "questions": [{"question": "Why?"}]}),
        json!({"type": "ask_user_request", "id": "q", "questions": []}),
        json!({"type": "tool_approval_response", "approvals": [{"id": "a", "approved": true}]}),
        json!({"tools": []}),
    ] {
        assert_eq!(
            ApprovalInterrupt::from_message(&agent_message(payload.clone())),
            None,
            "{payload}"
        );
    }
}
