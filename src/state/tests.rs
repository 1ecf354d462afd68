//! The reducer over recorded streams: kagent 0.10.4's (crates/protocol/tests/fixtures) and our
//! own server's (tests/fixtures), compared as whole view models against snapshots in
//! `snapshots/` (`UPDATE_EXPECT=1 cargo test -p signoff-ui --lib` re-blesses them).

use std::fmt::Write as _;
use std::path::PathBuf;

use expect_test::{expect_file, ExpectFile};
use serde_json::Value;
use signoff_protocol::codec;
use signoff_protocol::hitl::question::answers_from_result;
use signoff_protocol::hitl::{Dialect, Question, ASK_USER};
use signoff_protocol::sse::{SseFrame, SseParser};
use signoff_protocol::{ProtocolVersion, StreamEvent, Task};

use super::view::{ChatView, ItemKind};
use super::{replay, ToolStatus};

mod cards;
mod compose;
mod ran;
mod reconnect;
mod relayed;
mod usage;

/// kagent 0.10.4's recorded traffic: one copy, in the protocol crate.
pub(super) fn kagent_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("crates/protocol/tests/fixtures/kagent-0.10.4")
}

pub(super) fn read(path: PathBuf) -> String {
    match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(err) => panic!("cannot read fixture {}: {err}", path.display()),
    }
}

/// Decodes a recorded SSE answer with the same parser and codec the browser uses.
pub(super) fn events_from_sse(text: &str, version: ProtocolVersion) -> Vec<StreamEvent> {
    let mut parser = SseParser::new(1 << 22);
    let mut frames = parser.feed(text.as_bytes()).unwrap();
    frames.extend(parser.finish().unwrap());
    frames
        .into_iter()
        .filter_map(|frame| match frame {
            SseFrame::Event(event) => Some(event.data),
            SseFrame::Done => None,
        })
        .map(|data| {
            codec::decode_stream_response(version, &data)
                .unwrap()
                .unwrap()
        })
        .collect()
}

pub(super) fn kagent_stream(name: &str) -> Vec<StreamEvent> {
    events_from_sse(
        &read(kagent_dir().join(format!("{name}.sse"))),
        ProtocolVersion::V0_3,
    )
}

/// The user message a recorded request sent (the decision, for `*_resume`).
pub(super) fn kagent_request_message(name: &str) -> StreamEvent {
    let body: Value =
        serde_json::from_str(&read(kagent_dir().join(format!("{name}.request.json")))).unwrap();
    let params = codec::decode_send_params(ProtocolVersion::V0_3, &body["params"]).unwrap();
    StreamEvent::Message(params.message)
}

pub(super) fn kagent_task(name: &str) -> Task {
    let body: Value =
        serde_json::from_str(&read(kagent_dir().join(format!("{name}.response.json")))).unwrap();
    codec::decode_task(ProtocolVersion::V0_3, &body["result"]).unwrap()
}

pub(super) fn run(events: &[StreamEvent]) -> ChatView {
    let mut view = ChatView::default();
    for event in events {
        view.apply(event);
    }
    view
}

fn short(text: &str) -> String {
    let line = text.replace('\n', "⏎");
    if line.chars().count() > 90 {
        format!("{}…", line.chars().take(90).collect::<String>())
    } else {
        line
    }
}

/// The whole view model as stable text (ids of tasks shortened to their first 8 characters).
pub(super) fn describe(view: &ChatView) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "status: {:?}", view.status);
    let _ = writeln!(out, "task state: {:?}", view.task_state());
    let _ = writeln!(out, "usage: {:?}", view.usage);
    match &view.pending {
        Some(batch) => {
            let ids: Vec<&str> = batch
                .requests
                .iter()
                .map(|request| request.id.as_str())
                .collect();
            let _ = writeln!(out, "pending: {:?} {:?}", batch.dialect, ids);
        }
        None => {
            let _ = writeln!(out, "pending: none");
        }
    }
    for item in &view.items {
        let streaming = if item.streaming { " (streaming)" } else { "" };
        let _ = writeln!(out, "{:?}{streaming}: {}", item.kind, short(&item.text));
        for key in &item.tool_keys {
            let Some(tool) = view.tool(key) else {
                let _ = writeln!(out, "  missing card {key}");
                continue;
            };
            let _ = writeln!(
                out,
                "  [{}] {} {} args={}",
                tool.status.label(),
                tool.name,
                tool.id,
                short(&tool.args.to_string())
            );
            if let Some(questions) = Question::list_from_args(&tool.args) {
                for question in questions.iter().filter(|_| tool.name == ASK_USER) {
                    let _ = writeln!(
                        out,
                        "    asks {:?} choices={:?} multiple={}",
                        question.question, question.choices, question.multiple
                    );
                }
            }
            if let Some(answers) = tool.result.as_ref().and_then(answers_from_result) {
                for (question, answer) in answers {
                    let _ = writeln!(out, "    answered {question:?} {answer:?}");
                }
            }
            if let Some(edited) = &tool.edited_args {
                let _ = writeln!(out, "    edited={edited}");
            }
            if let Some(reason) = &tool.reason {
                let _ = writeln!(out, "    reason={reason}");
            }
            if let Some(result) = &tool.result {
                let _ = writeln!(
                    out,
                    "    result{}={}",
                    if tool.is_error { "(error)" } else { "" },
                    short(&result.to_string())
                );
            }
        }
    }
    out
}

pub(super) fn check(view: &ChatView, expect: ExpectFile) {
    expect.assert_eq(&describe(view));
}

/// Every card appears under exactly one item, and every item key is unique.
pub(super) fn assert_consistent(view: &ChatView) {
    let mut keys: Vec<&str> = view.items.iter().map(|item| item.key.as_str()).collect();
    keys.sort_unstable();
    keys.dedup();
    assert_eq!(keys.len(), view.items.len(), "duplicate item keys");
    let shown: usize = view.items.iter().map(|item| item.tool_keys.len()).sum();
    assert_eq!(shown, view.tools.len(), "every card shows under one item");
}

#[test]
fn kagent_plain_text_shows_one_answer() {
    let view = run(&kagent_stream("a_plain_text"));
    assert_consistent(&view);
    check(&view, expect_file!["snapshots/kagent_a_plain_text.txt"]);
}

#[test]
fn kagent_token_streaming_gives_the_same_transcript() {
    let mut streamed = run(&kagent_stream("s_a_plain_text_llmstream"));
    let whole = run(&kagent_stream("a_plain_text"));
    // The two recordings differ only in the token counts the model reported.
    streamed.usage = whole.usage;
    assert_consistent(&streamed);
    assert_eq!(describe(&streamed), describe(&whole));
}

#[test]
fn kagent_partial_chunks_show_while_they_stream() {
    let events = kagent_stream("s_a_plain_text_llmstream");
    // After the first two partial chunks, their text shows in one streaming bubble.
    let view = run(&events[..4]);
    let agent: Vec<_> = view
        .items
        .iter()
        .filter(|item| item.kind == ItemKind::Agent)
        .collect();
    assert_eq!(agent.len(), 1);
    assert_eq!(agent[0].text, "Hello! This is a plain scripted answer");
    assert!(agent[0].streaming);
}

#[test]
fn kagent_tool_without_approval_completes() {
    let view = run(&kagent_stream("b_tool_no_approval"));
    assert_consistent(&view);
    assert_eq!(view.tools[0].status, ToolStatus::Completed);
    check(
        &view,
        expect_file!["snapshots/kagent_b_tool_no_approval.txt"],
    );
}

#[test]
fn kagent_interrupt_is_a_pending_batch_in_kagent_terms() {
    let view = run(&kagent_stream("c1_interrupt"));
    assert_consistent(&view);
    let batch = view.pending.as_ref().unwrap();
    assert_eq!(batch.dialect, Dialect::Kagent);
    assert_eq!(
        batch
            .requests
            .iter()
            .map(|request| request.id.as_str())
            .collect::<Vec<_>>(),
        ["call_write_a", "call_delete_a"]
    );
    assert_eq!(
        batch.announcement(),
        "2 calls wait for your approval: write_file, delete_file"
    );
    check(&view, expect_file!["snapshots/kagent_c1_interrupt.txt"]);
}

#[test]
fn kagent_approve_all_keeps_approved_and_attaches_results() {
    let mut events = kagent_stream("c1_interrupt");
    events.push(kagent_request_message("c2_resume"));
    events.extend(kagent_stream("c2_resume"));
    let view = run(&events);
    assert_consistent(&view);
    assert!(view.pending.is_none());
    check(&view, expect_file!["snapshots/kagent_c2_approved.txt"]);
}

#[test]
fn kagent_reject_all_quotes_the_reason() {
    let mut events = kagent_stream("d1_interrupt");
    events.push(kagent_request_message("d2_resume"));
    events.extend(kagent_stream("d2_resume"));
    let view = run(&events);
    assert_consistent(&view);
    check(&view, expect_file!["snapshots/kagent_d2_rejected.txt"]);
}

#[test]
fn kagent_mixed_batch_decides_each_call() {
    let mut events = kagent_stream("e1_interrupt");
    events.push(kagent_request_message("e2_resume"));
    events.extend(kagent_stream("e2_resume"));
    let view = run(&events);
    assert_consistent(&view);
    let status = |id: &str| {
        view.tools
            .iter()
            .find(|tool| tool.id == id)
            .map(|tool| tool.status)
    };
    assert_eq!(status("call_write_b"), Some(ToolStatus::Approved));
    assert_eq!(status("call_delete_b"), Some(ToolStatus::Rejected));
    check(&view, expect_file!["snapshots/kagent_e2_mixed.txt"]);
}

#[test]
fn kagent_streaming_llm_batch_matches_the_plain_one() {
    let mut events = kagent_stream("s_c1_interrupt");
    events.push(kagent_request_message("s_c2_resume"));
    events.extend(kagent_stream("s_c2_resume"));
    let view = run(&events);
    assert_consistent(&view);
    assert!(view.items.iter().all(|item| !item.streaming));
    check(&view, expect_file!["snapshots/kagent_s_c2_streaming.txt"]);
}

/// Cards and batch, ignoring item keys (a stored task has no artifact ids for streamed text).
pub(super) fn cards(view: &ChatView) -> Vec<(String, ToolStatus, Option<Value>, Option<String>)> {
    view.tools
        .iter()
        .map(|tool| {
            (
                tool.id.clone(),
                tool.status,
                tool.result.clone(),
                tool.reason.clone(),
            )
        })
        .collect()
}

#[test]
fn a_stored_paused_task_rebuilds_the_same_batch() {
    let live = run(&kagent_stream("c1_interrupt"));
    let stored = replay([&kagent_task("f1_tasks_get_paused")]);
    assert_consistent(&stored);
    assert_eq!(cards(&stored), cards(&live));
    assert_eq!(stored.pending, live.pending);
    assert_eq!(stored.status, live.status);
    check(
        &stored,
        expect_file!["snapshots/kagent_f1_replay_paused.txt"],
    );
}

#[test]
fn a_stored_completed_task_rebuilds_the_same_cards() {
    let mut events = kagent_stream("c1_interrupt");
    events.push(kagent_request_message("c2_resume"));
    events.extend(kagent_stream("c2_resume"));
    let live = run(&events);
    let stored = replay([&kagent_task("f2_tasks_get_completed")]);
    assert_consistent(&stored);
    assert_eq!(cards(&stored), cards(&live));
    assert!(stored.pending.is_none());
    check(
        &stored,
        expect_file!["snapshots/kagent_f2_replay_completed.txt"],
    );
}

#[test]
fn a_live_stream_replayed_event_by_event_twice_changes_nothing() {
    // The server echoes our own message, and a resubscribe can repeat a snapshot: applying
    // an event again must not duplicate anything.
    let events = kagent_stream("c1_interrupt");
    let once = run(&events);
    let mut twice = events.clone();
    twice.extend(events);
    assert_eq!(describe(&run(&twice)), describe(&once));
}

// ---- streams recorded from our own server (tests/fixtures/signoff) ----------------------

fn ours(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/signoff")
        .join(name)
}

fn our_stream(name: &str) -> Vec<StreamEvent> {
    events_from_sse(&read(ours(name)), ProtocolVersion::V0_3)
}

fn our_session(name: &str) -> Vec<Task> {
    let body: Value = serde_json::from_str(&read(ours(name))).unwrap();
    body["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|task| codec::decode_task(ProtocolVersion::V0_3, task).unwrap())
        .collect()
}

#[test]
fn our_batch_pauses_with_two_calls_and_the_free_one_completed() {
    let view = run(&our_stream("batch1.sse"));
    assert_consistent(&view);
    let batch = view.pending.as_ref().unwrap();
    assert_eq!(batch.dialect, Dialect::Native);
    assert_eq!(batch.keys.len(), 2);
    check(&view, expect_file!["snapshots/ours_batch1.txt"]);
}

#[test]
fn our_mixed_decision_with_edited_arguments() {
    let mut events = our_stream("batch1.sse");
    events.extend(our_stream("batch2.sse"));
    let view = run(&events);
    assert_consistent(&view);
    let write = view
        .tools
        .iter()
        .find(|tool| tool.name == "write_file")
        .unwrap();
    assert_eq!(write.status, ToolStatus::Approved);
    assert_eq!(write.edited_args.as_ref().unwrap()["content"], "edited");
    let delete = view
        .tools
        .iter()
        .find(|tool| tool.name == "delete_file")
        .unwrap();
    assert_eq!(
        (delete.status, delete.reason.as_deref()),
        (ToolStatus::Rejected, Some("keep it"))
    );
    check(&view, expect_file!["snapshots/ours_batch2.txt"]);
}

#[test]
fn our_stored_task_rebuilds_the_same_cards() {
    let mut events = our_stream("batch1.sse");
    events.extend(our_stream("batch2.sse"));
    let live = run(&events);
    let stored = replay(&our_session("batch_session.json"));
    assert_consistent(&stored);
    assert_eq!(cards(&stored), cards(&live));
    assert_eq!(
        stored.tools,
        live.tools
            .iter()
            .map(|tool| {
                let mut tool = tool.clone();
                tool.owner = stored
                    .tool(&tool.key)
                    .map(|shown| shown.owner.clone())
                    .unwrap_or_default();
                tool
            })
            .collect::<Vec<_>>()
    );
    assert_eq!(stored.status, live.status);
    check(&stored, expect_file!["snapshots/ours_batch_replay.txt"]);
}

#[test]
fn our_text_streams_in_chunks_into_one_bubble() {
    let events = our_stream("count.sse");
    let partway = run(&events[..4]);
    let agent: Vec<_> = partway
        .items
        .iter()
        .filter(|item| item.kind == ItemKind::Agent)
        .collect();
    assert_eq!((agent[0].text.as_str(), agent[0].streaming), ("1, 2", true));
    let done = run(&events);
    check(&done, expect_file!["snapshots/ours_count.txt"]);
}

#[test]
fn our_multi_round_task_pauses_then_resumes() {
    let paused = run(&our_stream("rounds1.sse"));
    assert_consistent(&paused);
    assert_eq!(
        paused.pending.as_ref().map(|batch| batch.requests.len()),
        Some(1)
    );
    let replayed = replay(&our_session("rounds_session_paused.json"));
    assert_eq!(cards(&replayed), cards(&paused));
    assert_eq!(replayed.pending, paused.pending);

    let mut events = our_stream("rounds1.sse");
    events.extend(our_stream("rounds2.sse"));
    let done = run(&events);
    assert_consistent(&done);
    assert!(done.pending.is_none());
    let replayed = replay(&our_session("rounds_session_done.json"));
    assert_eq!(cards(&replayed), cards(&done));
    check(&done, expect_file!["snapshots/ours_rounds_done.txt"]);
}

#[test]
fn a_batch_decided_elsewhere_shows_decided_after_a_resubscribe() {
    // This tab saw the pause; another tab decided. The resumed events (without our decision
    // message) must leave no pending batch and show the outcome from the results.
    let mut view = run(&our_stream("batch1.sse"));
    let resumed: Vec<StreamEvent> = our_stream("batch2.sse")
        .into_iter()
        .map(|mut event| {
            if let StreamEvent::StatusUpdate(update) = &mut event {
                if let Some(message) = &mut update.status.message {
                    message.parts.retain(|part| {
                        part.as_data()
                            .is_none_or(|data| data.get("decision_type").is_none())
                    });
                }
            }
            event
        })
        .collect();
    for event in &resumed {
        view.apply(event);
    }
    assert!(view.pending.is_none());
    let status = |name: &str| {
        view.tools
            .iter()
            .find(|tool| tool.name == name)
            .map(|tool| tool.status)
    };
    assert_eq!(status("write_file"), Some(ToolStatus::Approved));
    assert_eq!(status("delete_file"), Some(ToolStatus::Rejected));
}

#[test]
fn a_subagents_calls_nest_under_the_agent_tool_call_and_finish_there() {
    let paused = run(&our_stream("subagent1.sse"));
    assert_consistent(&paused);
    let parent = paused
        .tools
        .iter()
        .find(|tool| tool.name == "default__demo")
        .unwrap();
    let nested = super::nesting::nested_keys(&paused, parent);
    assert_eq!(nested.len(), 2);
    let batch = paused.pending.as_ref().unwrap();
    assert_eq!(batch.keys, nested);
    for key in &nested {
        let tool = paused.tool(key).unwrap();
        assert_eq!(tool.status, ToolStatus::PendingApproval);
        assert!(super::nesting::is_nested(&paused, tool));
        assert_eq!(tool.via.as_ref().unwrap().agent, "default/demo");
    }
    assert!(!super::nesting::is_nested(&paused, parent));
    assert_eq!(
        super::nesting::nested_label(&paused, &parent.key, "default/boss").as_deref(),
        Some("default/demo asks through default/boss")
    );

    let mut events = our_stream("subagent1.sse");
    events.extend(our_stream("subagent2.sse"));
    let done = run(&events);
    assert_consistent(&done);
    assert!(done.pending.is_none());
    for key in &nested {
        let tool = done.tool(key).unwrap();
        // Approved stays approved (invariant 3); the result is there.
        assert_eq!(tool.status, ToolStatus::Approved, "{key}");
        assert!(tool.result.is_some());
    }
    let stored = replay(&our_session("subagent_session.json"));
    assert_consistent(&stored);
    assert_eq!(cards(&stored), cards(&done));
}
