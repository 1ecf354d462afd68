//! A relayed kagent chat as the server stores it: the server folds the recorded events into a
//! task (`signoff_server::agent::view`, the fold behind `GET /api/sessions/{id}`), and the
//! reducer rebuilds from that task the view the live stream gave (crates/server/README.md,
//! Relayed chats).

use signoff_protocol::{StreamEvent, TaskState};
use signoff_server::agent::runtime::as_recorded;
use signoff_server::agent::view as server_view;

use super::super::replay;
use super::super::view::ChatView;
use super::{assert_consistent, cards, describe, kagent_request_message, kagent_stream, run};

/// The task the server's log holds after these relayed events, folded as the server folds it.
fn stored(events: &[StreamEvent]) -> signoff_protocol::Task {
    let first = events
        .iter()
        .find_map(|event| match event {
            StreamEvent::StatusUpdate(update) => Some(update),
            StreamEvent::Task(_) | StreamEvent::Message(_) | StreamEvent::ArtifactUpdate(_) => None,
        })
        .unwrap();
    let mut task = server_view::empty_task(&first.task_id, &first.context_id);
    for event in events {
        server_view::apply(&mut task, &as_recorded(event.clone()));
    }
    task
}

/// The decision message as the recorder logs it: in a `working` status, as our runtime logs
/// a decision (kagent does not echo it).
fn recorded_decision(name: &str, task: &str, context: &str) -> StreamEvent {
    let StreamEvent::Message(mut message) = kagent_request_message(name) else {
        panic!("a request sends a message");
    };
    message.task_id = Some(task.to_owned());
    message.context_id = Some(context.to_owned());
    server_view::status_event(task, context, TaskState::Working, Some(message), None)
}

/// The two views show the same: transcript, cards, batch, and the token counts of the header
/// and of each answer. (`ChatView::usage`, the last event's counts, is not shown.)
fn assert_same_shown(reloaded: &ChatView, live: &ChatView, scenario: &str) {
    let shown = |view: &ChatView| {
        describe(view)
            .lines()
            .filter(|line| !line.starts_with("usage:"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert_eq!(shown(reloaded), shown(live), "{scenario}");
    assert!(
        live.session_usage().is_some(),
        "{scenario}: kagent reports counts"
    );
    assert_eq!(reloaded.session_usage(), live.session_usage(), "{scenario}");
    let answers = |view: &ChatView| {
        view.items
            .iter()
            .map(|item| view.answer_usage(std::slice::from_ref(&item.key)))
            .collect::<Vec<_>>()
    };
    assert_eq!(answers(reloaded), answers(live), "{scenario}");
}

#[test]
fn a_relayed_paused_kagent_chat_reloads_as_it_streamed() {
    for scenario in ["c1_interrupt", "s_c1_interrupt"] {
        let mut live_events = vec![kagent_request_message(scenario)];
        live_events.extend(kagent_stream(scenario));
        let live = run(&live_events);
        let reloaded = replay([&stored(&kagent_stream(scenario))]);
        assert_consistent(&reloaded);
        assert_eq!(cards(&reloaded), cards(&live), "{scenario}");
        assert_eq!(reloaded.pending, live.pending, "{scenario}");
        assert_eq!(reloaded.status, live.status, "{scenario}");
        assert_same_shown(&reloaded, &live, scenario);
    }
}

#[test]
fn a_relayed_kagent_chat_approved_in_the_chat_reloads_as_it_streamed() {
    for (interrupt, resume) in [
        ("c1_interrupt", "c2_resume"),
        ("s_c1_interrupt", "s_c2_resume"),
    ] {
        let paused = kagent_stream(interrupt);
        let (task, context) = match &paused[0] {
            StreamEvent::StatusUpdate(update) => {
                (update.task_id.clone(), update.context_id.clone())
            }
            StreamEvent::Task(_) | StreamEvent::Message(_) | StreamEvent::ArtifactUpdate(_) => {
                panic!("kagent starts with a status update")
            }
        };
        let mut live_events = vec![kagent_request_message(interrupt)];
        live_events.extend(paused.iter().cloned());
        live_events.push(kagent_request_message(resume));
        live_events.extend(kagent_stream(resume));
        let live = run(&live_events);

        let mut logged = paused.clone();
        logged.push(recorded_decision(resume, &task, &context));
        logged.extend(kagent_stream(resume));
        let reloaded = replay([&stored(&logged)]);
        assert_consistent(&reloaded);
        assert_eq!(cards(&reloaded), cards(&live), "{resume}");
        assert!(reloaded.pending.is_none());
        assert_eq!(reloaded.status, live.status, "{resume}");
        assert_same_shown(&reloaded, &live, resume);
    }
}
