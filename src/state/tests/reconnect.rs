//! A stream that breaks mid-turn (the server restarted): the chat says it is reconnecting,
//! and the resubscribe's events, which repeat what was already shown, finish the same turn.

use super::super::view::ChatStatus;
use super::{our_stream, run};

#[test]
fn a_stream_lost_mid_turn_reconnects_and_the_resubscribe_finishes_the_turn() {
    let events = our_stream("count.sse");
    let done = run(&events);

    let mut view = run(&events[..4]);
    let task = view.task_id.clone();
    assert!(task.is_some());
    assert_eq!(view.stream_lost(), task);
    assert_eq!(view.status, ChatStatus::Reconnecting);
    assert_eq!(view.status.label(), "Connection lost: reconnecting…");
    assert!(view.status.is_busy(), "Stop still applies");
    assert!(view.items.iter().all(|item| !item.streaming));

    // The resubscribe replays the task from its start, then the rest of the turn.
    for event in &events {
        view.apply(event);
    }
    assert_eq!(view.status, ChatStatus::Ready);
    assert_eq!(view.items, done.items);
}

#[test]
fn a_stream_that_ends_at_rest_or_before_its_task_is_known_is_not_followed() {
    let mut done = run(&our_stream("count.sse"));
    assert_eq!(done.stream_lost(), None);
    assert_eq!(done.status, ChatStatus::Ready);

    let mut sent = super::super::view::ChatView::default();
    sent.send(&signoff_protocol::Message::new(
        "m-1".to_owned(),
        signoff_protocol::Role::User,
        vec![signoff_protocol::Part::text("count to 3")],
    ));
    assert_eq!(sent.stream_lost(), None);
    assert_eq!(sent.status, ChatStatus::Thinking);
}

#[test]
fn a_turn_the_restarted_server_finished_while_the_chat_was_away_shows_its_whole_answer() {
    // Recorded: "count to 200" streamed until the server stopped at "21", and the resubscribe
    // after the restart, when the resumed turn had already finished: the task as it ended,
    // with the interrupted answer and the resumed turn's whole one.
    let mut view = run(&our_stream("restart-before.sse"));
    assert!(view.stream_lost().is_some());
    for event in &our_stream("restart-after.sse") {
        view.apply(event);
    }
    assert_eq!(view.status, ChatStatus::Ready);
    let texts: Vec<&str> = view.items.iter().map(|item| item.text.as_str()).collect();
    assert!(
        texts.iter().any(|text| text.ends_with("199, 200")),
        "{texts:?}"
    );
}

#[test]
fn a_resumed_answer_that_starts_as_the_interrupted_one_is_its_own_and_streams_on() {
    use signoff_protocol::{StreamEvent, TaskArtifactUpdateEvent, TaskState};
    // The chat saw "1, 2, 3" of the first answer; it resubscribes while the restarted server's
    // resumed turn has streamed "1, 2, 3" of its own answer, so the task it reads holds two
    // answers with the same text so far. The second is not a copy of the first (kagent's status
    // message repeated as an artifact is): its later chunks must show.
    let before = our_stream("restart-before.sse");
    let mut chunks = 0;
    let seen = before.iter().position(|event| {
        chunks += usize::from(matches!(event, StreamEvent::ArtifactUpdate(_)));
        chunks == 3
    });
    let mut view = run(&before[..=seen.unwrap()]);
    assert!(view.stream_lost().is_some());
    let Some(StreamEvent::Task(ended)) = our_stream("restart-after.sse").into_iter().next() else {
        panic!("the resubscribe answers with the task");
    };
    let (interrupted, resumed) = (&ended.artifacts[0], &ended.artifacts[1]);
    let mut racing = ended.clone();
    racing.status.state = TaskState::Working;
    racing.metadata = None;
    racing.artifacts = vec![interrupted.clone(), resumed.clone()];
    for artifact in &mut racing.artifacts {
        artifact.parts.truncate(3);
    }
    view.apply(&StreamEvent::Task(racing));
    for part in &resumed.parts[3..] {
        let mut artifact = resumed.clone();
        artifact.parts = vec![part.clone()];
        view.apply(&StreamEvent::ArtifactUpdate(TaskArtifactUpdateEvent {
            task_id: ended.id.clone(),
            context_id: ended.context_id.clone(),
            artifact,
            append: true,
            last_chunk: false,
            metadata: None,
        }));
    }
    view.apply(&StreamEvent::Task(ended));
    assert_eq!(view.status, ChatStatus::Ready);
    let texts: Vec<&str> = view.items.iter().map(|item| item.text.as_str()).collect();
    assert!(
        texts.iter().any(|text| text.ends_with("199, 200")),
        "{texts:?}"
    );
}
