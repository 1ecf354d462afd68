//! The reducer over kagent 0.10.4's recorded `ask_user` traffic (the `m`, `n` and `o` scenarios
//! of crates/protocol/tests/fixtures/kagent-0.10.4): questions wait as a batch, and their answers
//! show once kagent's result comes, compared against snapshots in `snapshots/`.

use expect_test::expect_file;
use signoff_protocol::hitl::Dialect;
use signoff_protocol::StreamEvent;

use super::draft::BatchDraft;
use super::tests::{assert_consistent, check, kagent_request_message, kagent_stream, run};
use super::{ChatStatus, ToolStatus};

/// An interrupt stream, the recorded decision, then its answer stream.
fn decided(interrupt: &str, decision: &str) -> Vec<StreamEvent> {
    let mut events = kagent_stream(interrupt);
    events.push(kagent_request_message(decision));
    events.extend(kagent_stream(decision));
    events
}

fn status(view: &super::ChatView, id: &str) -> Option<ToolStatus> {
    view.tools
        .iter()
        .find(|tool| tool.id == id)
        .map(|tool| tool.status)
}

#[test]
fn kagent_question_waits_as_a_batch_of_one_question() {
    let view = run(&kagent_stream("m1_ask_user_interrupt"));
    assert_consistent(&view);
    assert_eq!(view.status, ChatStatus::AwaitingApproval);
    let batch = view.pending.as_ref().unwrap();
    assert_eq!(batch.dialect, Dialect::Kagent);
    assert!(batch.requests[0].questions().is_some());
    assert_eq!(batch.announcement(), "A question waits for your answer");
    check(&view, expect_file!["snapshots/kagent_m1_question.txt"]);
}

#[test]
fn kagent_answers_show_on_the_question_card() {
    let view = run(&decided("m1_ask_user_interrupt", "m2_ask_user_answer"));
    assert_consistent(&view);
    assert!(view.pending.is_none());
    // An approved call keeps its status; its result attaches (ARCHITECTURE.md, invariant 3).
    assert_eq!(status(&view, "call_ask_m"), Some(ToolStatus::Approved));
    check(&view, expect_file!["snapshots/kagent_m2_answered.txt"]);

    let view = run(&decided("n1_ask_user_interrupt", "n2_ask_user_answer"));
    assert_consistent(&view);
    check(&view, expect_file!["snapshots/kagent_n2_answered.txt"]);
}

#[test]
fn answers_without_a_decision_type_are_a_new_turn_not_an_answer() {
    let view = run(&decided(
        "m3_ask_user_interrupt",
        "m4_answers_without_decision_type",
    ));
    assert_consistent(&view);
    check(&view, expect_file!["snapshots/kagent_m4_not_an_answer.txt"]);
}

#[test]
fn kagent_question_and_write_wait_together_and_submit_runs_both() {
    let paused = run(&kagent_stream("o1_ask_user_and_write_interrupt"));
    assert_consistent(&paused);
    check(
        &paused,
        expect_file!["snapshots/kagent_o1_question_and_write.txt"],
    );
    // What the card sends is what kagent's own UI sends (o2), and nothing else is offered.
    let batch = paused.pending.as_ref().unwrap();
    let mut draft = BatchDraft::new(&batch.task_id);
    draft.pick("call_ask_o", 0, 1, "hello", false, true);
    let decision = draft.submit(batch).unwrap();
    let StreamEvent::Message(sent) = kagent_request_message("o2_answer_and_approve") else {
        panic!("the request holds a message");
    };
    assert_eq!(
        decision.to_parts(Dialect::Kagent),
        sent.parts
            .iter()
            .map(|part| {
                let mut part = part.clone();
                part.metadata = None;
                part
            })
            .collect::<Vec<_>>()
    );

    let view = run(&decided(
        "o1_ask_user_and_write_interrupt",
        "o2_answer_and_approve",
    ));
    assert_eq!(status(&view, "call_write_o"), Some(ToolStatus::Approved));
    check(
        &view,
        expect_file!["snapshots/kagent_o2_answered_and_ran.txt"],
    );
}

#[test]
fn a_rejection_kagent_overrode_shows_what_really_ran() {
    // kagent ran the write although the message rejected it: the card says it ran.
    let view = run(&decided(
        "o3_ask_user_and_write_interrupt",
        "o4_answers_with_batch_reject",
    ));
    assert_consistent(&view);
    assert_eq!(status(&view, "call_write_o"), Some(ToolStatus::Approved));
    check(
        &view,
        expect_file!["snapshots/kagent_o4_rejection_overridden.txt"],
    );

    let view = run(&decided(
        "o5_ask_user_and_write_interrupt",
        "o6_approve_without_answers",
    ));
    assert_consistent(&view);
    check(&view, expect_file!["snapshots/kagent_o6_unanswered.txt"]);
}
