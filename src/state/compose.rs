//! What sending the composer's text would do to the chat as it stands, so the composer can say so
//! before the person sends (docs/wire.md, Methods): a new turn, a message queued for the working
//! task, or a reply to a paused task, which decides its batch.

use signoff_protocol::hitl::{Decision, DecisionKind};
use signoff_protocol::TaskState;

use super::view::{ChatStatus, ChatView};

/// Where a message typed now would go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SendEffect {
    /// A new turn (a new task, or the answer to the agent's free question).
    NewTurn,
    /// Queued on the working task: it joins the conversation before the agent's next step.
    Queue { task_id: String },
    /// A reply to the paused task: it decides the pending batch of `calls` calls; `question`
    /// when one of them is a question, which is answered or declined, not approved.
    Reply {
        task_id: String,
        calls: usize,
        question: bool,
        reply: Reply,
    },
    /// Nothing can be sent yet (the turn has no task id so far).
    Wait,
    /// A reply the person may not send, and why: a requester who may not approve a routed
    /// batch (`state::routing::requester_reply`) may only reject it.
    Refused(String),
}

/// How a reply to a paused task reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// A decision in words ("approve all", "reject"): its summary.
    Decision(String),
    /// Any other text: every pending call is rejected with it as the reason.
    RejectsWithReason,
    /// Blank or only polite words ("ok"): it decides nothing and the server refuses it.
    Unclear,
}

/// What sending `text` would do now.
pub fn send_effect(view: &ChatView, text: &str) -> SendEffect {
    match (&view.status, &view.pending, &view.task_id) {
        (ChatStatus::AwaitingApproval, Some(batch), _) => SendEffect::Reply {
            task_id: batch.task_id.clone(),
            calls: batch.requests.len(),
            question: batch
                .requests
                .iter()
                .any(|request| request.questions().is_some()),
            reply: match (Decision::from_text(text), Decision::from_reply(text)) {
                (Some(decision), _) => Reply::Decision(decision.summary()),
                (None, Some(decision))
                    if matches!(decision.kind, DecisionKind::DenyAll { reason: Some(_) }) =>
                {
                    Reply::RejectsWithReason
                }
                (None, _) => Reply::Unclear,
            },
        },
        (ChatStatus::Working | ChatStatus::ExecutingTools, _, Some(task))
            if view.task_state() == Some(TaskState::Working) =>
        {
            SendEffect::Queue {
                task_id: task.clone(),
            }
        }
        (
            ChatStatus::Thinking
            | ChatStatus::Working
            | ChatStatus::ExecutingTools
            | ChatStatus::Reconnecting,
            _,
            _,
        ) => SendEffect::Wait,
        (ChatStatus::AwaitingApproval | ChatStatus::Ready | ChatStatus::Error(_), _, _) => {
            SendEffect::NewTurn
        }
    }
}

/// `n` calls in words: "the pending call", "the 2 pending calls".
pub fn pending_calls(n: usize) -> String {
    if n == 1 {
        "the pending call".to_owned()
    } else {
        format!("the {n} pending calls")
    }
}

impl SendEffect {
    /// What the composer says before the person sends, when it is not a plain new turn.
    pub fn hint(&self) -> Option<String> {
        match self {
            SendEffect::NewTurn | SendEffect::Wait => None,
            SendEffect::Refused(why) => Some(why.clone()),
            SendEffect::Queue { .. } => Some(
                "The agent is working: your message waits and joins the conversation before its \
                 next step."
                    .to_owned(),
            ),
            SendEffect::Reply {
                question: true,
                reply,
                ..
            } => Some(match reply {
                Reply::Decision(summary) => {
                    format!("Sending this decides the question: {summary}.")
                }
                Reply::RejectsWithReason => {
                    "Sending this will decline the question, with your message as the reason."
                        .to_owned()
                }
                Reply::Unclear => "Not a decision yet: answer the question above, or write what \
                     the agent should do instead (that declines it with your words as the reason)."
                    .to_owned(),
            }),
            SendEffect::Reply { calls, reply, .. } => Some(match reply {
                Reply::Decision(summary) => {
                    format!("Sending this decides {}: {summary}.", pending_calls(*calls))
                }
                Reply::RejectsWithReason => format!(
                    "Sending this will reject {}, with your message as the reason.",
                    pending_calls(*calls)
                ),
                Reply::Unclear => format!(
                    "Not a decision yet: say approve or reject, or write what the agent should do \
                     instead (that rejects {} with your words as the reason).",
                    pending_calls(*calls)
                ),
            }),
        }
    }

    /// Whether the Send button may send this.
    pub fn can_send(&self) -> bool {
        match self {
            SendEffect::NewTurn | SendEffect::Queue { .. } => true,
            SendEffect::Reply { reply, .. } => *reply != Reply::Unclear,
            SendEffect::Wait | SendEffect::Refused(_) => false,
        }
    }
}
