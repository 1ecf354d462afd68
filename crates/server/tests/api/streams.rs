//! A message's stream as the runtime hands it out (`Runtime::stream_message`): the events the
//! message committed first, then the live ones, each once and in order; its runner starts when
//! the stream's events are taken, or when the stream is dropped unread.

use std::sync::Arc;

use futures_util::StreamExt;
use signoff_protocol::{Message, Part, Role, StreamEvent, TaskState};
use signoff_server::agent::runtime::{Opening, StreamEnd};
use signoff_server::agent::scripted::ScriptedModel;
use signoff_server::agent::tools::Toolbox;
use signoff_server::agent::{Agent, Decider, Limits, Runtime};
use signoff_server::store::Store;

use crate::support::*;

fn scripted() -> Arc<Agent> {
    Arc::new(Agent {
        namespace: "default".into(),
        name: "demo".into(),
        description: String::new(),
        instruction: String::new(),
        model: Arc::new(ScriptedModel::default()),
        tools: Toolbox::new(),
        approvals: Default::default(),
        subagents: Default::default(),
        serve_mcp: false,
        reviewer: None,
    })
}

fn message(text: &str) -> Message {
    Message::new(
        uuid::Uuid::new_v4().to_string(),
        Role::User,
        vec![Part::text(text)],
    )
}

#[tokio::test]
async fn a_messages_stream_sends_its_committed_events_then_the_live_ones_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&test_database(dir.path()).await).await.unwrap();
    let agent = scripted();
    let runtime = Runtime::new(store.clone(), vec![agent.clone()], Limits::default());

    let stream = runtime
        .stream_message(
            &Decider::subject("local"),
            &agent,
            message("count to 3"),
            None,
            Opening::Committed,
        )
        .await
        .unwrap();
    assert!(stream.snapshot.is_none());
    let events: Vec<_> = within("the turn's events", stream.events().collect()).await;
    let events: Vec<_> = events.into_iter().map(Result::unwrap).collect();
    let numbers: Vec<i64> = events.iter().map(|event| event.seq).collect();
    let expected: Vec<i64> = (1..=events.len() as i64).collect();
    assert_eq!(numbers, expected, "every event once, in order");
    let StreamEvent::StatusUpdate(first) = events[0].event().unwrap() else {
        panic!("the stream opens with a status update");
    };
    assert_eq!(first.status.state, TaskState::Submitted);
    let last = events.last().unwrap();
    assert!(last.is_final);
    let StreamEvent::StatusUpdate(last) = last.event().unwrap() else {
        panic!("the stream ends with a status update");
    };
    assert_eq!(last.status.state, TaskState::Completed);

    // Opening with a snapshot: the task as of its first event, then the rest.
    let stream = runtime
        .stream_message(
            &Decider::subject("local"),
            &agent,
            message("count to 2"),
            None,
            Opening::Snapshot,
        )
        .await
        .unwrap();
    let snapshot = stream.snapshot.clone().unwrap();
    assert_eq!(snapshot.status.state, TaskState::Submitted);
    let events: Vec<_> = within("the turn's events", stream.events().collect()).await;
    assert_eq!(events.first().unwrap().as_ref().unwrap().seq, 2);
    assert!(events.last().unwrap().as_ref().unwrap().is_final);

    // A stream dropped unread still starts its runner.
    let dropped = runtime
        .stream_message(
            &Decider::subject("local"),
            &agent,
            message("count to 2"),
            None,
            Opening::Committed,
        )
        .await
        .unwrap();
    let task = dropped.task_id().to_owned();
    drop(dropped);
    within(
        "the dropped stream's task to end",
        runtime.log().wait_final(&task, 0),
    )
    .await
    .unwrap();
    let now = runtime
        .subscribe(&Decider::subject("local"), &task, StreamEnd::Final)
        .await
        .unwrap();
    assert_eq!(now.snapshot.unwrap().status.state, TaskState::Completed);
    runtime.shutdown(std::time::Duration::from_secs(5)).await;
    store.close().await;
}
