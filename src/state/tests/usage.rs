//! Token usage: each turn counted once for the session total, and tied to the answer it
//! produced, over kagent's recorded approval round trip (its counts repeat on several events).

use super::super::replay;
use super::super::Usage;
use super::{kagent_request_message, kagent_stream, kagent_task, our_stream, run};

fn usage(prompt: u64, completion: u64, total: u64) -> Usage {
    Usage {
        prompt,
        completion,
        total,
    }
}

#[test]
fn each_turn_counts_once_in_the_session_total() {
    let paused = run(&kagent_stream("c1_interrupt"));
    assert_eq!(paused.session_usage(), Some(usage(87, 25, 112)));

    let mut events = kagent_stream("c1_interrupt");
    events.push(kagent_request_message("c2_resume"));
    events.extend(kagent_stream("c2_resume"));
    let done = run(&events);
    assert_eq!(
        done.session_usage(),
        Some(usage(87 + 105, 25 + 85, 112 + 190))
    );

    // The same events again (a resubscribe replays them) change nothing.
    let mut twice = events.clone();
    twice.extend(events);
    assert_eq!(run(&twice).session_usage(), done.session_usage());
}

#[test]
fn each_answer_shows_the_tokens_of_its_own_turn() {
    let mut events = kagent_stream("c1_interrupt");
    events.push(kagent_request_message("c2_resume"));
    events.extend(kagent_stream("c2_resume"));
    let view = run(&events);
    let keys: Vec<String> = view.items.iter().map(|item| item.key.clone()).collect();
    // Every turn belongs to some answer: the answers add up to the session.
    assert_eq!(view.answer_usage(&keys), view.session_usage());
    // The final answer shows the resumed turn only.
    let last = view
        .items
        .iter()
        .rev()
        .find(|item| item.kind == super::super::ItemKind::Agent && !item.text.is_empty())
        .map(|item| item.key.clone())
        .unwrap();
    assert_eq!(view.answer_usage(&[last]), Some(usage(105, 85, 190)));
    // The person's messages carry no counts.
    let user: Vec<String> = view
        .items
        .iter()
        .filter(|item| item.kind == super::super::ItemKind::User)
        .map(|item| item.key.clone())
        .collect();
    assert_eq!(view.answer_usage(&user), None);
}

#[test]
fn a_chat_without_counts_reports_none() {
    assert_eq!(run(&[]).session_usage(), None);
    // The person's message alone: nothing reported yet.
    assert_eq!(
        run(&[kagent_request_message("c1_interrupt")]).session_usage(),
        None
    );
}

#[test]
fn a_stored_task_gives_the_same_counts_as_its_live_streams() {
    let mut events = kagent_stream("c1_interrupt");
    events.push(kagent_request_message("c2_resume"));
    events.extend(kagent_stream("c2_resume"));
    let live = run(&events);
    let stored = replay(&[kagent_task("f2_tasks_get_completed")]);
    assert_eq!(stored.session_usage(), live.session_usage());
}

/// Our own server's chats: reloaded from the task the server folds from its stored events
/// (`GET /api/sessions/{id}`), they count every run's tokens as their stream did, an answer
/// streamed as artifacts (no message to carry its counts) included.
#[test]
fn our_stored_chats_count_the_tokens_their_streams_did() {
    use signoff_protocol::StreamEvent;
    use signoff_server::agent::view as server_view;

    for names in [&["count.sse"][..], &["batch1.sse", "batch2.sse"]] {
        let events: Vec<StreamEvent> = names.iter().flat_map(|name| our_stream(name)).collect();
        let live = run(&events);
        assert!(live.session_usage().is_some(), "{names:?} report counts");
        let (task_id, context_id) = events
            .iter()
            .find_map(|event| match event {
                StreamEvent::StatusUpdate(update) => {
                    Some((update.task_id.clone(), update.context_id.clone()))
                }
                StreamEvent::Task(task) => Some((task.id.clone(), task.context_id.clone())),
                StreamEvent::Message(_) | StreamEvent::ArtifactUpdate(_) => None,
            })
            .unwrap();
        let mut stored = server_view::empty_task(&task_id, &context_id);
        for event in &events {
            server_view::apply(&mut stored, event);
        }
        let reloaded = replay([&stored]);
        assert_eq!(reloaded.session_usage(), live.session_usage(), "{names:?}");
        let answers = |view: &super::super::view::ChatView| {
            view.items
                .iter()
                .map(|item| view.answer_usage(std::slice::from_ref(&item.key)))
                .collect::<Vec<_>>()
        };
        assert_eq!(answers(&reloaded), answers(&live), "{names:?}");
    }
}

/// A turn of ours that paused on its calls before it said anything has no answer of its own:
/// its tokens show on the answer its task gives once the calls are decided, so the answers
/// still add up to the session.
#[test]
fn a_paused_turn_without_words_counts_on_its_tasks_next_answer() {
    use signoff_protocol::{StreamEvent, TaskState};

    let counts = |prompt: u64, completion: u64| {
        serde_json::from_value(serde_json::json!({"kagent_usage_metadata": {
            "promptTokenCount": prompt, "candidatesTokenCount": completion,
            "totalTokenCount": prompt + completion}}))
        .unwrap()
    };
    let mut events: Vec<StreamEvent> = ["batch1.sse", "batch2.sse"]
        .iter()
        .flat_map(|name| our_stream(name))
        .collect();
    for event in &mut events {
        if let StreamEvent::StatusUpdate(update) = event {
            if update.status.state == TaskState::InputRequired {
                update.metadata = Some(counts(30, 9));
            } else if update.status.state == TaskState::Completed {
                update.metadata = Some(counts(50, 7));
            }
        }
    }
    let view = run(&events);
    assert_eq!(view.session_usage(), Some(usage(80, 16, 96)));
    let answers: Vec<Usage> = view
        .items
        .iter()
        .filter_map(|item| view.answer_usage(std::slice::from_ref(&item.key)))
        .collect();
    assert_eq!(
        answers,
        vec![usage(80, 16, 96)],
        "the answer after the decision"
    );
}

/// A chat whose agent took no model turn (a call a program asked about) reports counts of
/// zero: it shows no "0 tokens".
#[test]
fn counts_of_zero_show_nothing() {
    let sse = super::read(super::ours("count.sse"));
    let mut zeroed = String::new();
    let mut rest = sse.as_str();
    while let Some(at) = rest.find("TokenCount\":") {
        let (head, tail) = rest.split_at(at + "TokenCount\":".len());
        zeroed.push_str(head);
        zeroed.push('0');
        rest = tail.trim_start_matches(|c: char| c.is_ascii_digit());
    }
    zeroed.push_str(rest);
    assert_ne!(zeroed, sse, "the recorded stream reports counts");
    let view = run(&super::events_from_sse(
        &zeroed,
        super::ProtocolVersion::V0_3,
    ));
    assert_eq!(view.session_usage(), None);
    let keys: Vec<String> = view.items.iter().map(|item| item.key.clone()).collect();
    assert_eq!(view.answer_usage(&keys), None);
}
