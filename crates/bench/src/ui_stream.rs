//! A loopback server for the UI figures: it serves the built UI (dist/) and stands in for
//! Signoff's API, answering `message/stream` with a canned A2A v0.3 stream as fast as the
//! socket takes it. The message text picks the stream: `chunks N` is one answer in N text
//! chunks, `tools N` is N tool calls with their results and a closing line.
//!
//! The first events (through the first text chunk or tool call) go out at once; the rest wait
//! for [`StreamServer::release`] and then go out at once, as fast as the socket takes them. The
//! bench releases them once the page shows the first event and it has read the main thread's
//! clock, so that clock then counts only the work of the rest.

use std::convert::Infallible;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{header, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use futures_util::stream::{self, StreamExt};
use serde_json::{json, Value};
use signoff_protocol::codec;
use signoff_protocol::jsonrpc::{Id, Response as RpcResponse};
use signoff_protocol::rest::{AgentEntry, AgentList, PolicyList, SessionList, ToolEntry};
use signoff_protocol::{
    Artifact, Message, Part, ProtocolVersion, Role, StreamEvent, TaskArtifactUpdateEvent,
    TaskState, TaskStatus, TaskStatusUpdateEvent,
};
use tokio::sync::{oneshot, Notify};

use crate::error::{BenchError, Result};

/// Sent before the gate: `submitted`, `working` and the first chunk or tool call.
pub const FIRST_EVENTS: usize = 3;

/// Markers in the text: the first chunk renders as `<em>`, the last as `<strong>` (the page
/// watches for that one).
pub const FIRST_TEXT: &str = "*first* ";
pub const LAST_TEXT: &str = "**last**";

#[derive(Clone)]
struct Shared {
    dist: Arc<PathBuf>,
    /// Numbers the streamed tasks, so every run is a new task and session.
    next_task: Arc<AtomicU64>,
    /// Holds each stream after its first events until the bench releases it (a permit is kept
    /// if the release comes first).
    gate: Arc<Notify>,
}

pub struct StreamServer {
    /// `http://127.0.0.1:PORT`
    pub base: String,
    gate: Arc<Notify>,
    /// Stops the server when dropped.
    _stop: oneshot::Sender<()>,
}

impl StreamServer {
    pub async fn start(dist: &Path) -> Result<StreamServer> {
        let gate = Arc::new(Notify::new());
        let shared = Shared {
            dist: Arc::new(dist.to_owned()),
            next_task: Arc::new(AtomicU64::new(1)),
            gate: gate.clone(),
        };
        let app = axum::Router::new()
            .route("/api/agents", get(agents))
            .route(
                "/api/sessions",
                get(|| async {
                    axum::Json(SessionList {
                        sessions: Vec::new(),
                    })
                }),
            )
            // The chat page lists the person's policies beside the chat; none here.
            .route(
                "/api/policies",
                get(|| async {
                    axum::Json(PolicyList {
                        policies: Vec::new(),
                    })
                }),
            )
            .route("/api/a2a/{namespace}/{agent}", post(rpc))
            .route("/api/{*rest}", get(|| async { StatusCode::NOT_FOUND }))
            .fallback(get(static_file))
            .with_state(shared);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .map_err(|err| BenchError::io("127.0.0.1:0", err))?;
        let addr = listener
            .local_addr()
            .map_err(|err| BenchError::io("127.0.0.1:0", err))?;
        let (stop, stopped) = oneshot::channel::<()>();
        tokio::spawn(async move {
            let served = axum::serve(listener, app)
                .with_graceful_shutdown(async move {
                    let _ = stopped.await;
                })
                .await;
            // Ends with the bench; a failure shows as runs that never finish.
            drop(served);
        });
        Ok(StreamServer {
            base: format!("http://{addr}"),
            gate,
            _stop: stop,
        })
    }

    /// Lets the held stream send the rest of its events.
    pub fn release(&self) {
        self.gate.notify_one();
    }
}

/// The agents list in the REST contract's types, which the UI refuses to read otherwise.
async fn agents() -> axum::Json<AgentList> {
    axum::Json(AgentList {
        agents: vec![AgentEntry {
            namespace: "default".to_owned(),
            name: "bench".to_owned(),
            description: "canned streams for the bench".to_owned(),
            url: "/api/a2a/default/bench".to_owned(),
            card_url: "/api/a2a/default/bench/.well-known/agent-card.json".to_owned(),
            tools: vec![ToolEntry {
                name: "read_file".to_owned(),
                description: "Read a file.".to_owned(),
                source: "files".to_owned(),
                requires_approval: false,
                approval: None,
            }],
            require_approval: Vec::new(),
            unavailable_sources: Some(Vec::new()),
            remote: false,
            reachable: None,
            skills: None,
            cancelable: None,
            answers_prompts: None,
        }],
    })
}

async fn static_file(State(shared): State<Shared>, uri: Uri) -> Response {
    let path = uri.path().trim_start_matches('/');
    let safe = !path.is_empty() && !path.split('/').any(|part| part == ".." || part.is_empty());
    let file = if safe {
        shared.dist.join(path)
    } else {
        shared.dist.join("index.html")
    };
    // Routes of the single-page app fall back to index.html.
    let file = if file.is_file() {
        file
    } else {
        shared.dist.join("index.html")
    };
    let kind = match file.extension().and_then(|ext| ext.to_str()) {
        Some("wasm") => "application/wasm",
        Some("js") => "text/javascript",
        Some("css") => "text/css",
        Some("html") => "text/html; charset=utf-8",
        Some(_) | None => "application/octet-stream",
    };
    match tokio::fs::read(&file).await {
        Ok(bytes) => ([(header::CONTENT_TYPE, kind)], bytes).into_response(),
        Err(_) => StatusCode::NOT_FOUND.into_response(),
    }
}

/// What a streamed test chat holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Canned {
    /// One answer in this many text chunks.
    Chunks(usize),
    /// This many tool calls, each with its result, then one line of text.
    Tools(usize),
}

impl Canned {
    /// The message that asks for this stream.
    pub fn prompt(self) -> String {
        match self {
            Canned::Chunks(n) => format!("chunks {n}"),
            Canned::Tools(n) => format!("tools {n}"),
        }
    }

    fn parse(text: &str) -> Option<Canned> {
        let (kind, n) = text.trim().split_once(' ')?;
        let n: usize = n.trim().parse().ok()?;
        match kind {
            "chunks" => Some(Canned::Chunks(n.max(2))),
            "tools" => Some(Canned::Tools(n.max(1))),
            _ => None,
        }
    }

    /// How many events the stream has.
    pub fn events(self) -> usize {
        match self {
            Canned::Chunks(n) => n + 3,
            Canned::Tools(n) => 2 * n + 4,
        }
    }
}

async fn rpc(State(shared): State<Shared>, body: Bytes) -> Response {
    let request: Value = match serde_json::from_slice(&body) {
        Ok(value) => value,
        Err(err) => return (StatusCode::BAD_REQUEST, err.to_string()).into_response(),
    };
    let id: Id = serde_json::from_value(request["id"].clone()).unwrap_or(Id::Null);
    let message = codec::decode_send_params(ProtocolVersion::V0_3, &request["params"])
        .map(|params| params.message);
    let (canned, message) = match message {
        Ok(message) => match Canned::parse(&message.text()) {
            Some(canned) => (canned, message),
            None => {
                return (StatusCode::BAD_REQUEST, "say `chunks N` or `tools N`").into_response()
            }
        },
        Err(err) => return (StatusCode::BAD_REQUEST, err.to_string()).into_response(),
    };
    let number = shared.next_task.fetch_add(1, Ordering::Relaxed);
    let task = format!("bench-task-{number}");
    let context = message
        .context_id
        .clone()
        .unwrap_or_else(|| format!("bench-session-{number}"));
    let events = canned_events(canned, &task, &context, message);
    let frames: Vec<Bytes> = events
        .iter()
        .map(|event| {
            let response = RpcResponse::success(
                id.clone(),
                codec::encode_event(ProtocolVersion::V0_3, event),
            );
            Bytes::from(format!("data: {}\n\n", response.to_value()))
        })
        .collect();
    let mut frames = frames.into_iter();
    let first: Vec<Bytes> = frames.by_ref().take(FIRST_EVENTS).collect();
    let rest: Vec<Bytes> = frames.collect();
    let gate = shared.gate.clone();
    let later = stream::once(async move {
        gate.notified().await;
        stream::iter(rest)
    })
    .flatten();
    let body = stream::iter(first)
        .chain(later)
        .map(Ok::<Bytes, Infallible>);
    (
        [
            (header::CONTENT_TYPE, "text/event-stream"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        Body::from_stream(body),
    )
        .into_response()
}

fn status(task: &str, context: &str, state: TaskState, message: Option<Message>) -> StreamEvent {
    StreamEvent::StatusUpdate(TaskStatusUpdateEvent {
        task_id: task.to_owned(),
        context_id: context.to_owned(),
        status: TaskStatus {
            state,
            message,
            timestamp: Some("2026-11-22T00:00:00.000Z".to_owned()),
        },
        is_final: state.ends_stream(),
        metadata: None,
    })
}

fn agent_message(task: &str, context: &str, id: String, parts: Vec<Part>) -> Message {
    let mut message = Message::new(id, Role::Agent, parts);
    message.task_id = Some(task.to_owned());
    message.context_id = Some(context.to_owned());
    message
}

fn chunk(task: &str, context: &str, text: String, append: bool, last: bool) -> StreamEvent {
    StreamEvent::ArtifactUpdate(TaskArtifactUpdateEvent {
        task_id: task.to_owned(),
        context_id: context.to_owned(),
        artifact: Artifact {
            artifact_id: format!("{task}-answer"),
            name: None,
            description: None,
            parts: vec![Part::text(text)],
            metadata: None,
        },
        append,
        last_chunk: last,
        metadata: None,
    })
}

/// The whole stream of one canned chat, `submitted` first and `completed` last.
fn canned_events(canned: Canned, task: &str, context: &str, mut user: Message) -> Vec<StreamEvent> {
    user.task_id = Some(task.to_owned());
    user.context_id = Some(context.to_owned());
    let mut events = vec![
        status(task, context, TaskState::Submitted, Some(user)),
        status(task, context, TaskState::Working, None),
    ];
    match canned {
        Canned::Chunks(n) => {
            for index in 0..n {
                let text = if index == 0 {
                    FIRST_TEXT.to_owned()
                } else if index == n - 1 {
                    LAST_TEXT.to_owned()
                } else if index % 100 == 0 {
                    // Paragraphs, as a long answer has.
                    format!("word{index}.\n\n")
                } else {
                    format!("word{index} ")
                };
                events.push(chunk(task, context, text, index > 0, index == n - 1));
            }
        }
        Canned::Tools(n) => {
            for index in 0..n {
                let call = format!("call_{index}");
                let path = format!("file{index}.txt");
                events.push(status(
                    task,
                    context,
                    TaskState::Working,
                    Some(agent_message(
                        task,
                        context,
                        format!("{task}-call-{index}"),
                        vec![Part::data(
                            json!({"id": call, "name": "read_file", "args": {"path": path}}),
                        )
                        .with_metadata("kagent_type", json!("function_call"))],
                    )),
                ));
                events.push(status(
                    task,
                    context,
                    TaskState::Working,
                    Some(agent_message(
                        task,
                        context,
                        format!("{task}-result-{index}"),
                        vec![
                            Part::data(json!({"id": call, "name": "read_file", "response": {
                            "content": [{"type": "text", "text": format!("the text of {path}")}],
                            "isError": false}}))
                            .with_metadata("kagent_type", json!("function_response")),
                        ],
                    )),
                ));
            }
            events.push(chunk(task, context, LAST_TEXT.to_owned(), false, true));
        }
    }
    events.push(status(task, context, TaskState::Completed, None));
    events
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canned_streams_have_the_counted_events_and_end_completed() {
        for canned in [Canned::Chunks(10), Canned::Tools(3)] {
            let user = Message::new("m", Role::User, vec![Part::text(canned.prompt())]);
            let events = canned_events(canned, "t", "c", user);
            assert_eq!(events.len(), canned.events(), "{canned:?}");
            assert!(matches!(
                events.last(),
                Some(StreamEvent::StatusUpdate(update)) if update.status.state == TaskState::Completed && update.is_final
            ));
            assert_eq!(Canned::parse(&canned.prompt()), Some(canned));
        }
        assert_eq!(Canned::parse("hello"), None);
    }
}
