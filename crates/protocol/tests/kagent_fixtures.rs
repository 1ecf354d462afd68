//! The recorded kagent 0.10.4 traffic (tests/fixtures/kagent-0.10.4, see its README) decodes
//! into the model, whatever the chunking, and its approval dialect reads into the HITL types.

// Helpers outside #[test] functions panic on bad fixtures too; that is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{
    decode_frames, fixture_bytes, fixture_json, fixtures, parse_chunks, status_messages,
    stream_events,
};
use proptest::prelude::*;
use serde_json::{json, Value};
use signoff_protocol::codec::{self, Method};
use signoff_protocol::hitl::{
    resolve, ApprovalInterrupt, Decision, DecisionKind, Dialect, ToolCall, ToolResult, Verdict,
};
use signoff_protocol::jsonrpc::{Request, Response};
use signoff_protocol::sse::SseFrame;
use signoff_protocol::{ProtocolVersion, StreamEvent, TaskState};

const V03: ProtocolVersion = ProtocolVersion::V0_3;

#[test]
fn every_recorded_stream_decodes_into_the_model() {
    for (name, _) in fixtures(".sse") {
        let events = stream_events(&name);
        assert!(events.len() >= 4, "{name}: only {} events", events.len());
        // Every recorded turn ends with one final status update and nothing after it.
        let Some(StreamEvent::StatusUpdate(last)) = events.last() else {
            panic!("{name}: the last event is not a status update");
        };
        assert!(last.is_final, "{name}");
        assert!(last.status.state.ends_stream(), "{name}");
        let finals = events
            .iter()
            .filter(|event| matches!(event, StreamEvent::StatusUpdate(update) if update.is_final))
            .count();
        assert_eq!(finals, 1, "{name}");
    }
}

#[test]
fn every_recorded_response_decodes_into_a_task() {
    for (name, _) in fixtures(".response.json") {
        let response = Response::from_value(fixture_json(&name)).unwrap();
        let result = response.outcome.unwrap();
        let task = codec::decode_task(V03, &result).unwrap_or_else(|err| panic!("{name}: {err}"));
        assert!(!task.history.is_empty(), "{name}");
    }
}

#[test]
fn every_recorded_request_decodes_by_its_method() {
    for (name, _) in fixtures(".request.json") {
        let request: Request = serde_json::from_value(fixture_json(&name)).unwrap();
        let params = request.params.unwrap();
        match Method::from_name(V03, &request.method) {
            Some(Method::SendStreamingMessage) => {
                let params = codec::decode_send_params(V03, &params)
                    .unwrap_or_else(|err| panic!("{name}: {err}"));
                assert!(!params.message.parts.is_empty());
            }
            Some(Method::GetTask) => {
                let query = codec::decode_task_query(V03, &params).unwrap();
                assert_eq!(query.id, "ebba61f6-5b09-4881-9e7b-d492c1a4cee0");
            }
            other => panic!("{name}: unexpected method {other:?}"),
        }
    }
}

#[test]
fn the_recorded_agent_card_reads_as_a_v03_jsonrpc_agent() {
    let card = codec::decode_agent_card(&fixture_json("agent_card.json")).unwrap();
    assert_eq!(
        codec::decode_card_interfaces(&fixture_json("agent_card.json")),
        card.interfaces
    );
    assert_eq!(card.name, "hitl_harness");
    assert_eq!(card.version, "0.10.4");
    assert!(card.capabilities.streaming);
    assert!(card.capabilities.state_transition_history);
    let best = card.best_interface().unwrap();
    assert_eq!(best.url, "http://127.0.0.1:18080/");
    assert_eq!(best.version, V03);
}

#[test]
fn streams_give_the_same_frames_whole_and_byte_by_byte() {
    for (name, _) in fixtures(".sse") {
        let bytes = fixture_bytes(&name);
        let whole = parse_chunks([bytes.as_slice()]);
        let bytewise = parse_chunks(bytes.chunks(1));
        assert_eq!(whole, bytewise, "{name}");
        assert!(whole
            .iter()
            .all(|frame| matches!(frame, SseFrame::Event(_))));
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Any chunking of any recorded stream gives the same events as the whole stream.
    #[test]
    fn any_chunking_gives_the_same_events(
        file in 0usize..11,
        cuts in proptest::collection::vec(any::<prop::sample::Index>(), 0..40),
    ) {
        let files = fixtures(".sse");
        let (name, _) = &files[file % files.len()];
        let bytes = fixture_bytes(name);
        let mut cuts: Vec<usize> = cuts.iter().map(|cut| cut.index(bytes.len() + 1)).collect();
        cuts.sort_unstable();
        let mut chunks = Vec::new();
        let mut start = 0;
        for cut in cuts {
            chunks.push(&bytes[start..cut]);
            start = cut;
        }
        chunks.push(&bytes[start..]);
        let frames = parse_chunks(chunks);
        prop_assert_eq!(&frames, &parse_chunks([bytes.as_slice()]));
        prop_assert_eq!(decode_frames(name, &frames), stream_events(name));
    }
}

/// The final `input-required` status of an interrupt stream.
fn final_interrupt(name: &str) -> ApprovalInterrupt {
    let events = stream_events(name);
    let StreamEvent::StatusUpdate(update) = events.last().unwrap() else {
        panic!("{name}: the last event is not a status update");
    };
    assert_eq!(update.status.state, TaskState::InputRequired, "{name}");
    ApprovalInterrupt::from_status(&update.status)
        .unwrap_or_else(|| panic!("{name}: no interrupt in the final status"))
}

#[test]
fn kagent_interrupts_read_with_the_original_call_ids() {
    for (name, suffix) in [
        ("c1_interrupt.sse", "a"),
        ("d1_interrupt.sse", "r"),
        ("e1_interrupt.sse", "b"),
        ("s_c1_interrupt.sse", "x"),
    ] {
        let interrupt = final_interrupt(name);
        assert_eq!(interrupt.dialect, Dialect::Kagent, "{name}");
        let ids: Vec<&str> = interrupt.ids().collect();
        assert_eq!(
            ids,
            [
                format!("call_write_{suffix}"),
                format!("call_delete_{suffix}")
            ],
            "{name}"
        );
        let write = &interrupt.action_requests[0];
        assert_eq!(write.name, "write_file");
        assert_eq!(write.args["path"], json!(format!("notes_{suffix}.txt")));
        assert_eq!(
            write.description.as_deref(),
            Some("Tool 'write_file' requires approval before execution.")
        );
        let delete = &interrupt.action_requests[1];
        assert_eq!(delete.name, "delete_file");
        assert_eq!(delete.args, json!({"path": format!("old_{suffix}.txt")}));
    }
}

#[test]
fn a_paused_task_from_tasks_get_holds_the_same_interrupt() {
    let response = Response::from_value(fixture_json("f1_tasks_get_paused.response.json")).unwrap();
    let task = codec::decode_task(V03, &response.outcome.unwrap()).unwrap();
    let interrupt = ApprovalInterrupt::from_status(&task.status).unwrap();
    assert_eq!(interrupt, final_interrupt("c1_interrupt.sse"));

    let response =
        Response::from_value(fixture_json("f2_tasks_get_completed.response.json")).unwrap();
    let task = codec::decode_task(V03, &response.outcome.unwrap()).unwrap();
    assert_eq!(task.status.state, TaskState::Completed);
    assert_eq!(ApprovalInterrupt::from_status(&task.status), None);
}

#[test]
fn tool_calls_are_read_but_confirmations_are_not_tool_calls() {
    let events = stream_events("c1_interrupt.sse");
    let calls: Vec<ToolCall> = status_messages(&events)
        .into_iter()
        .flat_map(|message| message.parts.iter().filter_map(ToolCall::from_part))
        .collect();
    let ids: Vec<&str> = calls.iter().map(|call| call.id.as_str()).collect();
    assert_eq!(ids, ["call_write_a", "call_delete_a", "call_read_a"]);
}

/// The user message of a recorded decision request.
fn decision_request(name: &str) -> (Decision, Value) {
    let request: Request = serde_json::from_value(fixture_json(name)).unwrap();
    let params = codec::decode_send_params(V03, &request.params.unwrap()).unwrap();
    let data = params.message.parts[0].as_data().unwrap().clone();
    let decision = Decision::from_message(&params.message).unwrap().unwrap();
    (decision, data)
}

#[test]
fn kagent_decision_requests_parse_and_are_written_back_identically() {
    let (approve, data) = decision_request("c2_resume.request.json");
    assert_eq!(approve, Decision::approve_all());
    assert_eq!(approve.to_data(Dialect::Kagent), data);

    let (reject, data) = decision_request("d2_resume.request.json");
    assert_eq!(
        reject,
        Decision::deny_all(Some(
            "Not allowed: the sandbox is read-only today.".to_owned()
        ))
    );
    assert_eq!(reject.to_data(Dialect::Kagent), data);

    let (batch, data) = decision_request("e2_resume.request.json");
    let DecisionKind::Batch {
        decisions,
        rejection_reasons,
    } = &batch.kind
    else {
        panic!("not a batch: {batch:?}");
    };
    assert_eq!(decisions["call_write_b"], Verdict::Approve);
    assert_eq!(decisions["call_delete_b"], Verdict::Deny);
    assert_eq!(
        rejection_reasons["call_delete_b"],
        "Keep old_b.txt, it is still needed."
    );
    assert_eq!(batch.to_data(Dialect::Kagent), data);
    assert_eq!(batch.summary(), "Batch decision: 1 approved, 1 rejected");

    // The batch is complete for the interrupt it answers.
    let resolved = resolve(&final_interrupt("e1_interrupt.sse").action_requests, &batch).unwrap();
    let verdicts: Vec<(&str, Verdict)> = resolved
        .iter()
        .map(|call| (call.request.id.as_str(), call.verdict))
        .collect();
    assert_eq!(
        verdicts,
        [
            ("call_write_b", Verdict::Approve),
            ("call_delete_b", Verdict::Deny)
        ]
    );
}

#[test]
fn kagent_results_say_which_calls_were_rejected_and_why() {
    let results = |name: &str| -> Vec<ToolResult> {
        status_messages(&stream_events(name))
            .into_iter()
            .flat_map(|message| {
                message
                    .parts
                    .iter()
                    .filter_map(ToolResult::from_part)
                    .collect::<Vec<_>>()
            })
            .collect()
    };
    let approved = results("c2_resume.sse");
    assert_eq!(approved.len(), 2);
    assert!(approved
        .iter()
        .all(|result| !result.is_rejected() && !result.is_error()));

    let rejected = results("d2_resume.sse");
    assert!(rejected.iter().all(ToolResult::is_rejected));
    assert_eq!(
        rejected[0].rejection_reason(),
        Some("Not allowed: the sandbox is read-only today.")
    );

    let mixed = results("e2_resume.sse");
    let summary: Vec<(&str, bool, Option<&str>)> = mixed
        .iter()
        .map(|result| {
            (
                result.id.as_str(),
                result.is_rejected(),
                result.rejection_reason(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            ("call_write_b", false, None),
            (
                "call_delete_b",
                true,
                Some("Keep old_b.txt, it is still needed.")
            ),
        ]
    );
}
