//! One test per decision rule of docs/wire.md (Decision rules): each accepts the good case and
//! refuses the bad one with the message the person will read. The rules are pure functions over
//! "the pending batch" and "the decision"; nothing in them touches a store.

// Helpers outside #[test] functions panic on bad input too; that is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::{json, Value};
use signoff_protocol::hitl::{
    resolve, ActionRequest, ApprovalInterrupt, Decision, DecisionError, ResolvedCall, Verdict,
};
use signoff_protocol::{Message, Part, Role, TaskState, TaskStatus};

/// The batch every case decides: two held calls.
fn pending() -> Vec<ActionRequest> {
    [
        (
            "call_1",
            "write_file",
            json!({"path": "notes.txt", "content": "hi"}),
        ),
        ("call_2", "delete_file", json!({"path": "old.txt"})),
    ]
    .into_iter()
    .map(|(id, name, args)| ActionRequest {
        id: id.to_owned(),
        name: name.to_owned(),
        args,
        description: None,
        server: None,
        approval_id: None,
        via: None,
        metadata: Default::default(),
    })
    .collect()
}

/// One resolved call in a line: `call_1: approve`, `call_2: deny (keep it)`,
/// `call_1: approve with {"path":"safe.txt"}`.
fn render(call: &ResolvedCall) -> String {
    let mut line = format!("{}: ", call.request.id);
    match call.verdict {
        Verdict::Approve => line.push_str("approve"),
        Verdict::Deny => line.push_str("deny"),
    }
    if let Some(reason) = &call.reason {
        line.push_str(&format!(" ({reason})"));
    }
    if let Some(args) = &call.modified_args {
        line.push_str(&format!(" with {args}"));
    }
    line
}

/// Parses and resolves a decision DataPart against [`pending`]; compares the outcome.
fn check(data: Value, expect: Result<&[&str], &str>) {
    let outcome = Decision::from_data(&data)
        .and_then(|decision| resolve(&pending(), &decision))
        .map(|calls| calls.iter().map(render).collect::<Vec<_>>())
        .map_err(|err| err.to_string());
    let expect = expect
        .map(|lines| {
            lines
                .iter()
                .map(|line| line.to_string())
                .collect::<Vec<_>>()
        })
        .map_err(str::to_owned);
    assert_eq!(outcome, expect, "decision {data}");
}

#[test]
fn approve_all_and_deny_all_decide_every_pending_call() {
    check(
        json!({"decision_type": "approve"}),
        Ok(&["call_1: approve", "call_2: approve"]),
    );
    check(
        json!({"decision_type": "deny", "reason": "too risky"}),
        Ok(&["call_1: deny (too risky)", "call_2: deny (too risky)"]),
    );
    check(
        json!({"decision_type": "deny"}),
        Ok(&["call_1: deny", "call_2: deny"]),
    );
    check(
        json!({"decision_type": "maybe"}),
        Err("unknown decision_type \"maybe\" (expected \"approve\", \"deny\", \"reject\" or \"batch\")"),
    );
    check(
        json!({"decision_type": 1}),
        Err("decision_type must be a string"),
    );
    check(json!(["approve"]), Err("a decision must be a JSON object"));
    check(
        json!({"decision_type": "deny", "reason": 7}),
        Err("reason must be a string"),
    );
}

#[test]
fn synonyms_reject_and_rejection_reason_are_accepted() {
    check(
        json!({"decision_type": "reject", "rejection_reason": "keep it"}),
        Ok(&["call_1: deny (keep it)", "call_2: deny (keep it)"]),
    );
    check(
        json!({"decision_type": "batch", "decisions": {"call_1": "approve", "call_2": "reject"}}),
        Ok(&["call_1: approve", "call_2: deny"]),
    );
}

#[test]
fn a_batch_must_name_every_pending_call() {
    check(
        json!({"decision_type": "batch",
               "decisions": {"call_1": "approve", "call_2": "deny"},
               "rejection_reasons": {"call_2": "keep it"}}),
        Ok(&["call_1: approve", "call_2: deny (keep it)"]),
    );
    // kagent 0.10.4 silently approves a call missing from a batch; we refuse.
    check(
        json!({"decision_type": "batch", "decisions": {"call_1": "approve"}}),
        Err("batch misses pending call call_2"),
    );
    check(
        json!({"decision_type": "batch", "decisions": {}}),
        Err("batch misses pending call call_1"),
    );
    check(
        json!({"decision_type": "batch"}),
        Err("a batch decision needs a decisions object keyed by call id"),
    );
}

#[test]
fn a_batch_must_name_no_other_call() {
    check(
        json!({"decision_type": "batch",
               "decisions": {"call_1": "approve", "call_2": "deny", "call_9": "approve"}}),
        Err("batch names call_9, which is not pending"),
    );
    check(
        json!({"decision_type": "batch", "decisions": {"call_1": "approve", "call_2": "maybe"}}),
        Err("decision for call_2 must be \"approve\" or \"deny\", not \"maybe\""),
    );
}

#[test]
fn rejection_reasons_belong_to_rejected_calls() {
    check(
        json!({"decision_type": "batch",
               "decisions": {"call_1": "approve", "call_2": "deny"},
               "rejection_reasons": {"call_1": "why"}}),
        Err("rejection reason for call_1, which is not rejected"),
    );
    check(
        json!({"decision_type": "batch",
               "decisions": {"call_1": "approve", "call_2": "deny"},
               "rejection_reasons": {"call_9": "why"}}),
        Err("rejection reason for call_9, which is not pending"),
    );
    check(
        json!({"decision_type": "batch",
               "decisions": {"call_1": "approve", "call_2": "deny"},
               "rejection_reasons": {"call_2": 3}}),
        Err("rejection_reasons must be an object of strings keyed by call id"),
    );
}

#[test]
fn modified_args_must_be_an_object_for_an_approved_call() {
    check(
        json!({"decision_type": "approve", "modified_args": {"call_1": {"path": "safe.txt"}}}),
        Ok(&[
            "call_1: approve with {\"path\":\"safe.txt\"}",
            "call_2: approve",
        ]),
    );
    check(
        json!({"decision_type": "batch",
               "decisions": {"call_1": "approve", "call_2": "deny"},
               "modified_args": {"call_1": {"path": "safe.txt"}}}),
        Ok(&[
            "call_1: approve with {\"path\":\"safe.txt\"}",
            "call_2: deny",
        ]),
    );
    check(
        json!({"decision_type": "batch",
               "decisions": {"call_1": "approve", "call_2": "deny"},
               "modified_args": {"call_2": {"path": "x"}}}),
        Err("modified_args for call_2, which is not approved"),
    );
    check(
        json!({"decision_type": "deny", "modified_args": {"call_1": {"path": "x"}}}),
        Err("modified_args for call_1, which is not approved"),
    );
    check(
        json!({"decision_type": "approve", "modified_args": {"call_1": "safe.txt"}}),
        Err("modified_args for call_1 must be an object"),
    );
    check(
        json!({"decision_type": "approve", "modified_args": {"call_9": {}}}),
        Err("modified_args for call_9, which is not pending"),
    );
    check(
        json!({"decision_type": "approve", "modified_args": ["call_1"]}),
        Err("modified_args must be an object keyed by call id"),
    );
}

/// A user message with only this text.
fn text_message(text: &str) -> Message {
    Message::new("m", Role::User, vec![Part::text(text)])
}

#[test]
fn plain_text_decides_only_when_it_is_clear() {
    let check_text = |text: &str, expect: Result<&str, &str>| {
        let outcome = Decision::from_message_or_text(&text_message(text))
            .map(|decision| decision.summary())
            .map_err(|err| err.to_string());
        assert_eq!(
            outcome,
            expect.map(str::to_owned).map_err(str::to_owned),
            "text {text:?}"
        );
    };
    for word in [
        "approve",
        "Approved.",
        "yes",
        "Proceed!",
        "continue",
        "yes, please go ahead",
    ] {
        check_text(word, Ok("Approved"));
    }
    for text in [
        "deny",
        "Reject",
        "no",
        "cancel that",
        "stop",
        "No, keep old.txt",
    ] {
        check_text(text, Ok(&format!("Rejected: {text}")));
    }
    // Any other text is a reply the model reads: it rejects, with itself as the reason.
    for text in [
        "maybe later",
        "yes but delete only old.txt",
        "yes... no",
        "write it to drafts/notes.txt instead",
    ] {
        check_text(text, Ok(&format!("Rejected: {text}")));
    }
    // Blank, or only polite words: no decision; the person is asked again.
    for text in ["", "  ", "ok", "sure, go ahead", "thanks!"] {
        check_text(text, Err("no decision: say approve or reject"));
    }
}

#[test]
fn a_decision_part_wins_over_text_and_a_bad_one_is_an_error() {
    let mut message = text_message("no");
    message
        .parts
        .push(Part::data(json!({"decision_type": "approve"})));
    assert_eq!(
        Decision::from_message_or_text(&message),
        Ok(Decision::approve_all())
    );
    // A DataPart without decision_type is not a decision; the text decides.
    let message = Message::new(
        "m",
        Role::User,
        vec![Part::data(json!({"note": 1})), Part::text("yes")],
    );
    assert_eq!(Decision::from_message(&message), Ok(None));
    assert_eq!(
        Decision::from_message_or_text(&message),
        Ok(Decision::approve_all())
    );
    let message = Message::new(
        "m",
        Role::User,
        vec![
            Part::data(json!({"decision_type": "perhaps"})),
            Part::text("yes"),
        ],
    );
    assert_eq!(
        Decision::from_message_or_text(&message),
        Err(DecisionError::UnknownType("perhaps".to_owned()))
    );
}

#[test]
fn only_an_input_required_task_waits_on_an_interrupt() {
    let interrupt = ApprovalInterrupt::new(pending());
    let status = |state| TaskStatus {
        state,
        message: Some(Message::new("m", Role::Agent, interrupt.to_parts())),
        timestamp: None,
    };
    assert_eq!(
        ApprovalInterrupt::from_status(&status(TaskState::InputRequired)),
        Some(interrupt.clone())
    );
    for state in [
        TaskState::Completed,
        TaskState::Working,
        TaskState::Canceled,
    ] {
        assert_eq!(
            ApprovalInterrupt::from_status(&status(state)),
            None,
            "{state:?}"
        );
    }
    let without_interrupt = TaskStatus {
        state: TaskState::InputRequired,
        message: Some(text_message("which file?")),
        timestamp: None,
    };
    assert_eq!(ApprovalInterrupt::from_status(&without_interrupt), None);
}
