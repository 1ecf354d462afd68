//! Sending while the agent works or waits: what the composer says it will do, and a queued
//! message's bubble from "queued" to "delivered", over our server's recorded streams.

use signoff_protocol::{Message, Part, Role, StreamEvent, TaskState, TaskStatus};

use super::super::compose::{send_effect, Reply, SendEffect};
use super::super::view::ChatStatus;
use super::{our_stream, run};

fn user_message(id: &str, task: &str, text: &str) -> Message {
    let mut message = Message::new(id, Role::User, vec![Part::text(text)]);
    message.task_id = Some(task.to_owned());
    message
}

#[test]
fn a_message_to_the_working_task_is_queued_then_delivered() {
    let events = our_stream("count.sse");
    // The turn as it streams: the task works, a few numbers in.
    let mut view = run(&events[..4]);
    assert_eq!(view.status, ChatStatus::Working);
    let task = view.task_id.clone().unwrap();
    let effect = send_effect(&view, "and then stop at 3");
    assert_eq!(
        effect,
        SendEffect::Queue {
            task_id: task.clone()
        }
    );
    assert!(effect.can_send());
    assert!(effect.hint().unwrap().contains("waits"));

    let message = user_message("m-queued", &task, "and then stop at 3");
    view.queue(&message);
    assert!(view.queued.contains("m-queued"));
    assert_eq!(view.status, ChatStatus::Working, "the turn goes on");
    assert_eq!(view.items.last().unwrap().text, "and then stop at 3");

    // The server delivers it: a working status update that carries the message as sent.
    let context = view.context_id.clone().unwrap();
    let delivered = StreamEvent::StatusUpdate(signoff_protocol::TaskStatusUpdateEvent {
        task_id: task.clone(),
        context_id: context,
        status: TaskStatus {
            state: TaskState::Working,
            message: Some(message),
            timestamp: None,
        },
        is_final: false,
        metadata: None,
    });
    view.apply(&delivered);
    assert!(view.queued.is_empty());
    assert!(view.delivered.contains("m-queued"));
    let bubbles = view
        .items
        .iter()
        .filter(|item| item.key == "m-queued")
        .count();
    assert_eq!(bubbles, 1, "the echo does not add a second bubble");

    // A refused one goes away.
    view.queue(&user_message("m-refused", &task, "more"));
    view.unqueue("m-refused");
    assert!(view.item("m-refused").is_none());
    assert!(view.queued.is_empty());
}

#[test]
fn a_reply_to_a_paused_batch_says_what_it_will_decide() {
    let view = run(&our_stream("batch1.sse"));
    assert_eq!(view.status, ChatStatus::AwaitingApproval);
    let effect = send_effect(&view, "write it to drafts/notes.txt instead");
    let SendEffect::Reply { calls, reply, .. } = &effect else {
        panic!("expected a reply, got {effect:?}");
    };
    assert_eq!((*calls, reply), (2, &Reply::RejectsWithReason));
    assert_eq!(
        effect.hint().unwrap(),
        "Sending this will reject the 2 pending calls, with your message as the reason."
    );
    let approve = send_effect(&view, "approve all");
    assert!(matches!(
        &approve,
        SendEffect::Reply {
            reply: Reply::Decision(_),
            ..
        }
    ));
    assert!(approve
        .hint()
        .unwrap()
        .starts_with("Sending this decides the 2 pending calls"));
    let unclear = send_effect(&view, "ok");
    assert!(!unclear.can_send());
    // A finished chat starts a new turn.
    let done = run(&our_stream("count.sse"));
    assert_eq!(send_effect(&done, "hi"), SendEffect::NewTurn);
    assert_eq!(send_effect(&done, "hi").hint(), None);
}

#[test]
fn a_reply_to_a_waiting_question_says_it_answers_or_declines_not_approves() {
    let mut view = run(&our_stream("batch1.sse"));
    let batch = view.pending.as_mut().unwrap();
    batch.requests.truncate(1);
    batch.keys.truncate(1);
    batch.requests[0].name = signoff_protocol::hitl::ASK_USER.to_owned();
    batch.requests[0].args =
        serde_json::json!({"questions": [{"question": "Which database?", "choices": ["SQLite"]}]});
    let unclear = send_effect(&view, "ok").hint().unwrap();
    assert!(
        unclear.starts_with("Not a decision yet: answer the question above"),
        "{unclear}"
    );
    assert!(!unclear.contains("approve"), "{unclear}");
    assert_eq!(
        send_effect(&view, "use the other one").hint().unwrap(),
        "Sending this will decline the question, with your message as the reason."
    );
}

#[test]
fn a_batch_without_a_bar_brings_its_question_or_its_only_call_into_view() {
    let mut view = run(&our_stream("batch1.sse"));
    let batch = view.pending.as_mut().unwrap();
    // Two calls, no question: the bar comes into view, no card does.
    assert!(batch.has_bar());
    assert_eq!(batch.call_to_reveal(), None);
    // A question beside a call: the question, whose Submit decides the pause.
    batch.requests[1].name = signoff_protocol::hitl::ASK_USER.to_owned();
    batch.requests[1].args =
        serde_json::json!({"questions": [{"question": "Which database?", "choices": ["SQLite"]}]});
    let question = batch.requests[1].id.clone();
    assert!(!batch.has_bar());
    assert_eq!(batch.call_to_reveal(), Some(question.as_str()));
    // A lone call: its card.
    batch.requests.truncate(1);
    batch.keys.truncate(1);
    let only = batch.requests[0].id.clone();
    assert_eq!(batch.call_to_reveal(), Some(only.as_str()));
}
