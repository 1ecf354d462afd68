//! kagent 0.10.4's `ask_user` questions in the recorded traffic (tests/fixtures/kagent-0.10.4,
//! the `m`, `n` and `o` scenarios of its README): the questions read from the pause, the answers
//! parse and are written back byte for byte, the results pair each answer with its question, and
//! the decision rules refuse what kagent would misread.

// Helpers outside #[test] functions panic on bad fixtures too; that is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{fixture_json, status_messages, stream_events};
use serde_json::Value;
use signoff_protocol::codec;
use signoff_protocol::hitl::question::{answers_from_result, Question};
use signoff_protocol::hitl::{
    resolve, ApprovalInterrupt, Decision, DecisionError, DecisionKind, Dialect, ToolResult, Verdict,
};
use signoff_protocol::jsonrpc::Request;
use signoff_protocol::{Message, ProtocolVersion, StreamEvent, TaskState};

const V03: ProtocolVersion = ProtocolVersion::V0_3;

fn final_interrupt(name: &str) -> ApprovalInterrupt {
    let events = stream_events(name);
    let StreamEvent::StatusUpdate(update) = events.last().unwrap() else {
        panic!("{name}: the last event is not a status update");
    };
    assert_eq!(update.status.state, TaskState::InputRequired, "{name}");
    ApprovalInterrupt::from_status(&update.status).unwrap()
}

fn request_message(name: &str) -> Message {
    let request: Request = serde_json::from_value(fixture_json(name)).unwrap();
    codec::decode_send_params(V03, &request.params.unwrap())
        .unwrap()
        .message
}

/// The decision a recorded request sent, and its DataPart's data as sent.
fn decision_request(name: &str) -> (Decision, Value) {
    let message = request_message(name);
    let data = message.parts[0].as_data().unwrap().clone();
    (Decision::from_message(&message).unwrap().unwrap(), data)
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|item| (*item).to_owned()).collect()
}

fn results(name: &str) -> Vec<ToolResult> {
    status_messages(&stream_events(name))
        .into_iter()
        .flat_map(|message| message.parts.iter().filter_map(ToolResult::from_part))
        .collect()
}

#[test]
fn the_pause_holds_the_questions_as_the_model_asked_them() {
    let single = final_interrupt("m1_ask_user_interrupt.sse");
    assert_eq!(single.dialect, Dialect::Kagent);
    assert_eq!(single.ids().collect::<Vec<_>>(), ["call_ask_m"]);
    assert_eq!(
        single.action_requests[0].questions(),
        Some(vec![Question {
            question: "Which environment should I deploy to?".to_owned(),
            choices: strings(&["dev", "staging", "prod"]),
            multiple: false,
            ..Question::default()
        }])
    );

    let two = final_interrupt("n1_ask_user_interrupt.sse").action_requests[0]
        .questions()
        .unwrap();
    assert_eq!(two.len(), 2);
    assert!(!two[0].multiple && two[1].multiple);
    assert_eq!(
        two[1].choices,
        strings(&["metrics", "tracing", "profiling"])
    );

    // A question and a gated call in one pause: the question first, then the call to approve.
    let mixed = final_interrupt("o1_ask_user_and_write_interrupt.sse");
    assert_eq!(
        mixed.ids().collect::<Vec<_>>(),
        ["call_ask_o", "call_write_o"]
    );
    assert!(mixed.action_requests[0].questions().is_some());
    assert_eq!(mixed.action_requests[1].questions(), None);
    assert!(mixed.dialect.answers_approve_every_call());
}

#[test]
fn answers_parse_and_are_written_back_identically() {
    for (name, answers) in [
        (
            "m2_ask_user_answer.request.json",
            vec![strings(&["staging"])],
        ),
        (
            "n2_ask_user_answer.request.json",
            vec![strings(&["info"]), strings(&["metrics", "tracing"])],
        ),
        (
            "o2_answer_and_approve.request.json",
            vec![strings(&["hello"])],
        ),
    ] {
        let (decision, data) = decision_request(name);
        assert_eq!(decision, Decision::answer(answers), "{name}");
        assert_eq!(decision.to_data(Dialect::Kagent), data, "{name}");
        // The text kagent's UI sends beside the answers.
        assert_eq!(decision.summary(), request_message(name).text(), "{name}");
    }

    // Rejecting the write while answering: parsed, and written back as it came.
    let (batch, data) = decision_request("o4_answers_with_batch_reject.request.json");
    assert!(matches!(batch.kind, DecisionKind::Batch { .. }));
    assert_eq!(batch.answers, vec![strings(&["hello"])]);
    assert_eq!(batch.to_data(Dialect::Kagent), data);

    // Answers without a decision_type are no decision (kagent starts a new turn with them).
    let message = request_message("m4_answers_without_decision_type.request.json");
    assert_eq!(Decision::from_message(&message), Ok(None));
}

#[test]
fn results_pair_each_answer_with_its_question() {
    let answered = |name: &str| {
        let result = results(name)
            .into_iter()
            .find(|result| result.name == "ask_user")
            .unwrap_or_else(|| panic!("{name}: no ask_user result"));
        answers_from_result(&result.response).unwrap()
    };
    assert_eq!(
        answered("m2_ask_user_answer.sse"),
        [(
            "Which environment should I deploy to?".to_owned(),
            strings(&["staging"])
        )]
    );
    assert_eq!(answered("n2_ask_user_answer.sse").len(), 2);
    // Approving without answers leaves the question unanswered, and the write still runs.
    assert_eq!(
        answered("o6_approve_without_answers.sse")[0].1,
        Vec::<String>::new()
    );
    let o4 = results("o4_answers_with_batch_reject.sse");
    let write = o4
        .iter()
        .find(|result| result.name == "write_file")
        .unwrap();
    assert!(
        !write.is_rejected(),
        "kagent ran the write over the rejection"
    );
}

#[test]
fn the_rules_refuse_what_kagent_would_misread() {
    let pending = final_interrupt("o1_ask_user_and_write_interrupt.sse").action_requests;
    // Answering approves the question, and with kagent the write too: said as one approve.
    let (approve, _) = decision_request("o2_answer_and_approve.request.json");
    let resolved = resolve(&pending, &approve).unwrap();
    assert_eq!(resolved[0].answers, Some(vec![strings(&["hello"])]));
    assert_eq!(resolved[1].verdict, Verdict::Approve);
    // The batch that kagent turns into a run misses the question's own verdict.
    let (batch, _) = decision_request("o4_answers_with_batch_reject.request.json");
    assert_eq!(
        resolve(&pending, &batch),
        Err(DecisionError::BatchMissesCall("call_ask_o".to_owned()))
    );
    // An approval without answers leaves a question unanswered.
    let (bare, _) = decision_request("o6_approve_without_answers.request.json");
    assert_eq!(
        resolve(&pending, &bare),
        Err(DecisionError::MissingAnswer(
            "Which greeting should notes_o.txt use?".to_owned()
        ))
    );
}
