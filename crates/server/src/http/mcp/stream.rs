//! A `tools/call`'s answer while it waits: signs of life, the questions put to a client that
//! answers them itself (on the event stream in a handshake revision, as `input_required` in
//! 2026-07-28) and their withdrawal, then the call's answer.

use axum::body::Bytes;
use serde_json::{json, Value};
use signoff_protocol::rest::{ApprovalRequestState, RequestStatus};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::{answered, Asked, Waiting, INPUT_KEY, STILL_WAITING};
use crate::agent::approvals::args_sha256;
use crate::agent::asked::client::ClientQuestion;
use crate::agent::AgentError;
use crate::http::mcp_clients::{McpClients, Resume};
use crate::http::mcp_revision::Era;
use std::sync::Arc;

/// What a call's stream waits on.
pub(super) enum Phase {
    /// A call the gate allowed at once, running in the request itself.
    Running(futures_util::future::BoxFuture<'static, ApprovalRequestState>),
    /// A call held in a task.
    Waiting(Waiting),
}

/// Where the call of `phase` stands after up to [`STILL_WAITING`]: `None` while it still
/// waits or runs.
pub(super) async fn settled(phase: &mut Phase) -> Option<Result<ApprovalRequestState, AgentError>> {
    match phase {
        Phase::Waiting(waiting) => {
            let answer = waiting.settle(STILL_WAITING).await;
            let waits = matches!(&answer, Ok(state) if state.status == RequestStatus::Waiting);
            (!waits).then_some(answer)
        }
        Phase::Running(running) => tokio::time::timeout(STILL_WAITING, running)
            .await
            .ok()
            .map(Ok),
    }
}

/// One thing a call's answer says: a JSON-RPC message, or a sign of life that is none.
pub(super) enum Event {
    Message(Value),
    Comment(&'static str),
}

impl Event {
    pub(super) fn sse(self) -> Bytes {
        match self {
            Event::Message(message) => Bytes::from(format!("event: message\ndata: {message}\n\n")),
            Event::Comment(comment) => Bytes::from(format!(": {comment}\n\n")),
        }
    }
}

/// A call's answer: its wait, what its last message answers, and the questions put to its
/// client.
pub(super) struct Stream {
    phase: Phase,
    asked: Asked,
    id: Value,
    era: Era,
    progress: Option<Value>,
    beats: u64,
    questions: Option<mpsc::UnboundedReceiver<ClientQuestion>>,
    asks: OpenAsks,
}

/// What a stream says next.
pub(super) enum Next {
    /// The call's answer, or `None` while it still waits.
    Settled(Option<Result<ApprovalRequestState, AgentError>>),
    Question(ClientQuestion),
    /// The question channel closed: the call asks nothing more.
    NoMoreQuestions,
    Withdrawn(usize),
}

impl Stream {
    pub(super) fn new(
        phase: Phase,
        asked: Asked,
        id: Value,
        era: Era,
        progress: Option<Value>,
        questions: Option<mpsc::UnboundedReceiver<ClientQuestion>>,
        asks: OpenAsks,
    ) -> Stream {
        Stream {
            phase,
            asked,
            id,
            era,
            progress,
            beats: 0,
            questions,
            asks,
        }
    }

    /// The stream's next event, and whether it is its last: a sign of life while the call
    /// waits, a question for the client or its withdrawal, or the call's answer.
    pub(super) async fn next_event(&mut self) -> (Event, bool) {
        loop {
            let next = {
                let questions = async {
                    match self.questions.as_mut() {
                        Some(questions) => questions.recv().await,
                        None => std::future::pending().await,
                    }
                };
                tokio::select! {
                    answer = settled(&mut self.phase) => Next::Settled(answer),
                    question = questions => match question {
                        Some(question) => Next::Question(question),
                        None => Next::NoMoreQuestions,
                    },
                    at = self.asks.withdrawn() => Next::Withdrawn(at),
                }
            };
            match next {
                Next::Settled(None) => {
                    self.beats += 1;
                    return (still_waiting(self.progress.as_ref(), self.beats), false);
                }
                Next::Settled(Some(answer)) => {
                    let answer = answered(self.id.clone(), self.era, &self.asked, answer);
                    return (Event::Message(answer), true);
                }
                Next::Question(question) if self.era == Era::Stateless => {
                    if let Some(answer) = self.input_required(question).await {
                        return (Event::Message(answer), true);
                    }
                }
                Next::Question(question) => {
                    return (Event::Message(self.asks.put(question)), false)
                }
                Next::NoMoreQuestions => self.questions = None,
                Next::Withdrawn(at) => {
                    if let Some(event) = self.asks.withdraw(at) {
                        return (Event::Message(event), false);
                    }
                }
            }
        }
    }

    /// The call's last message, for a client that reads one JSON answer.
    pub(super) async fn last_message(&mut self) -> Value {
        loop {
            if let (Event::Message(message), true) = self.next_event().await {
                return message;
            }
        }
    }

    /// The 2026-07-28 answer that puts `question` to the client: `input_required`, with a
    /// `requestState` its retry resumes the call by. The question waits for that retry's
    /// answer (until it ends otherwise), and the call for whoever resumes it: this request
    /// ending does not cancel it. `None` if the state could not be made (the question then
    /// waits in the inbox alone).
    async fn input_required(&mut self, question: ClientQuestion) -> Option<Value> {
        let Phase::Waiting(waiting) = &mut self.phase else {
            return None;
        };
        let call = self.asked.call();
        let id = format!("signoff-elicitation-{}", uuid::Uuid::new_v4());
        let resume = Resume {
            sub: self.asks.caller.clone(),
            task: waiting.task_id.clone(),
            question: id.clone(),
            tool: call.name.clone(),
            args_sha256: args_sha256(&call.args),
            iat: chrono::Utc::now().timestamp(),
        };
        let clients = self.asks.clients.clone();
        let request_state = match clients.seal_resume(&waiting.runtime, &resume).await {
            Ok(request_state) => request_state,
            Err(why) => {
                tracing::warn!(error = %why, "a question could not be put to a 2026-07-28 client");
                return None;
            }
        };
        clients.ask(&resume.sub, &id, question.answer);
        // Forgotten once the question ends, answered or not, so nothing is kept for a client
        // that never comes back.
        let (caller, withdrawn) = (resume.sub, question.withdrawn);
        tokio::spawn(async move {
            withdrawn.cancelled().await;
            clients.forget(&caller, &id);
        });
        waiting.settled = true;
        let result = json!({
            "resultType": "input_required",
            "inputRequests": {INPUT_KEY: {"method": "elicitation/create", "params": question.params}},
            "requestState": request_state,
        });
        Some(json!({"jsonrpc": "2.0", "id": self.id, "result": result}))
    }
}

/// The questions a stream put to its client that may still be answered; the stream's end
/// forgets them (an answer after it goes nowhere).
pub(super) struct OpenAsks {
    pub(super) clients: Arc<McpClients>,
    pub(super) caller: String,
    /// Each request's id, and the token its question's end cancels.
    pub(super) open: Vec<(String, CancellationToken)>,
}

impl OpenAsks {
    /// The event that asks the client `question`: an `elicitation/create` request.
    fn put(&mut self, question: ClientQuestion) -> Value {
        let id = format!("signoff-elicitation-{}", uuid::Uuid::new_v4());
        self.clients.ask(&self.caller, &id, question.answer);
        let event = json!({
            "jsonrpc": "2.0",
            "id": id,
            "method": "elicitation/create",
            "params": question.params,
        });
        self.open.push((id, question.withdrawn));
        event
    }

    /// The place of an open question that ended (answered by the client or elsewhere).
    async fn withdrawn(&self) -> usize {
        if self.open.is_empty() {
            return std::future::pending().await;
        }
        let ended = self.open.iter().enumerate().map(|(at, (_, withdrawn))| {
            Box::pin(async move {
                withdrawn.cancelled().await;
                at
            })
        });
        futures_util::future::select_all(ended).await.0
    }

    /// Lets go of the question at `at`: a `notifications/cancelled` for its request if the
    /// client had not answered it.
    fn withdraw(&mut self, at: usize) -> Option<Value> {
        let (id, _) = self.open.swap_remove(at);
        self.clients.forget(&self.caller, &id).then(|| {
            json!({
                "jsonrpc": "2.0",
                "method": "notifications/cancelled",
                "params": {"requestId": id, "reason": "answered in Signoff, or no longer asked"},
            })
        })
    }
}

impl Drop for OpenAsks {
    fn drop(&mut self) {
        for (id, _) in &self.open {
            self.clients.forget(&self.caller, id);
        }
    }
}

/// The stream's sign of life while a call waits: a progress notification when the client gave a
/// token, else a comment.
pub(super) fn still_waiting(progress: Option<&Value>, beats: u64) -> Event {
    match progress {
        Some(token) => Event::Message(json!({
            "jsonrpc": "2.0",
            "method": "notifications/progress",
            "params": {"progressToken": token, "progress": beats, "message": "waiting for a sign-off"}
        })),
        None => Event::Comment("waiting for a sign-off"),
    }
}
