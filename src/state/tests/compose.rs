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
