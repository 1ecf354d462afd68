//! Recording relayed chats as they pass (crates/server/README.md, Relayed chats): the bytes of
//! a remote's answer go to the caller unchanged, and a copy goes to a recorder task that
//! decodes them with the protocol crate's codecs (v0.3 or v1.0, kagent's dialect included) and
//! hands each event to the runtime, which stores it in the event log's version. A stream that
//! breaks off before its task rests is followed by a `tasks/get` to the remote, so the stored
//! state is the remote's.

use std::sync::Arc;

use axum::body::Bytes;
use serde_json::Value;
use signoff_protocol::codec::{self, Method};
use signoff_protocol::jsonrpc::{ErrorCode, Response as RpcResponse};
use signoff_protocol::sse::{SseFrame, SseParser};
use signoff_protocol::{ProtocolVersion, StreamEvent, Task};
use tokio::sync::mpsc;

use super::RemoteAgent;
use crate::agent::remote::CARD_TIMEOUT;
use crate::agent::runtime::RelayedExchange;
use crate::agent::{Decider, Runtime};

/// The largest SSE event or JSON answer the recorder reads; a larger one is passed on to the
/// caller but not recorded.
const MAX_RECORDED_BYTES: usize = 8 * 1024 * 1024;

/// What the relay sends the recorder task.
enum Chunk {
    Bytes(Bytes),
    /// The remote's answer ended as it should.
    End,
}

/// The relay's side of a recording: chunks of the remote's answer, sent on as they pass.
pub(super) struct Recording {
    sender: mpsc::UnboundedSender<Chunk>,
    recorder: tokio::task::JoinHandle<()>,
}

impl Recording {
    /// A recording of the relayed call `body`, or `None` for a call that records nothing.
    pub(super) fn start(
        runtime: &Arc<Runtime>,
        remote: &Arc<RemoteAgent>,
        who: &Decider,
        body: &[u8],
        version: ProtocolVersion,
    ) -> Option<Recording> {
        Recording::start_with(runtime, remote, who, body, version, |exchange| exchange)
    }

    /// A recording of a decision forwarded from `POST /api/approvals` (audited as REST).
    pub(super) fn start_rest(
        runtime: &Arc<Runtime>,
        remote: &Arc<RemoteAgent>,
        who: &Decider,
        body: &[u8],
        version: ProtocolVersion,
    ) -> Option<Recording> {
        Recording::start_with(
            runtime,
            remote,
            who,
            body,
            version,
            RelayedExchange::through_rest,
        )
    }

    /// `who` asked: a decision in the request is theirs, audited with how they signed in.
    fn start_with(
        runtime: &Arc<Runtime>,
        remote: &Arc<RemoteAgent>,
        who: &Decider,
        body: &[u8],
        version: ProtocolVersion,
        exchange_of: impl FnOnce(RelayedExchange) -> RelayedExchange,
    ) -> Option<Recording> {
        let request: Value = serde_json::from_slice(body).ok()?;
        let method = Method::from_name(version, request.get("method")?.as_str()?)?;
        let params = request.get("params").cloned().unwrap_or(Value::Null);
        let message = match method {
            Method::SendMessage | Method::SendStreamingMessage => {
                Some(codec::decode_send_params(version, &params).ok()?.message)
            }
            Method::GetTask | Method::CancelTask | Method::SubscribeToTask => None,
            Method::ListTasks => return None,
        };
        // A message to a task we hold: marked at once, before the remote answers.
        let live = message
            .as_ref()
            .and_then(|message| message.task_id.as_deref())
            .map(|task_id| LiveTask::mark(remote, task_id));
        let exchange = exchange_of(RelayedExchange::new(who, &remote.key(), message));
        let (sender, receiver) = mpsc::unbounded_channel();
        let recorder = Recorder {
            runtime: runtime.clone(),
            remote: remote.clone(),
            user: who.subject.clone(),
            version,
            method,
            exchange,
            last_task: None,
            rested: false,
            live,
        };
        let recorder = tokio::spawn(recorder.run(receiver));
        Some(Recording { sender, recorder })
    }

    pub(super) fn chunk(&self, bytes: &Bytes) {
        let _ = self.sender.send(Chunk::Bytes(bytes.clone()));
    }

    pub(super) fn end(&self) {
        let _ = self.sender.send(Chunk::End);
    }

    /// Waits until everything sent so far is recorded (the answer ended, or was cut).
    pub(super) async fn finished(self) {
        drop(self.sender);
        let _ = self.recorder.await;
    }
}

/// The recorder task of one relayed call.
struct Recorder {
    runtime: Arc<Runtime>,
    remote: Arc<RemoteAgent>,
    user: String,
    version: ProtocolVersion,
    method: Method,
    exchange: RelayedExchange,
    /// The task the answer was about, once known.
    last_task: Option<String>,
    /// Whether the last event left the task resting (a final event).
    rested: bool,
    /// The task marked as being recorded, while this recorder lives.
    live: Option<LiveTask>,
}

/// A task marked as having a relayed answer being recorded; unmarked when dropped.
struct LiveTask {
    remote: Arc<RemoteAgent>,
    task_id: String,
}

impl LiveTask {
    fn mark(remote: &Arc<RemoteAgent>, task_id: &str) -> LiveTask {
        if let Ok(mut live) = remote.live.lock() {
            *live.entry(task_id.to_owned()).or_default() += 1;
        }
        LiveTask {
            remote: remote.clone(),
            task_id: task_id.to_owned(),
        }
    }
}

impl Drop for LiveTask {
    fn drop(&mut self) {
        if let Ok(mut live) = self.remote.live.lock() {
            if let Some(count) = live.get_mut(&self.task_id) {
                *count -= 1;
                if *count == 0 {
                    live.remove(&self.task_id);
                }
            }
        }
    }
}

impl Recorder {
    async fn run(mut self, mut receiver: mpsc::UnboundedReceiver<Chunk>) {
        let mut ended = false;
        if self.method.is_streaming() {
            let mut parser = SseParser::new(MAX_RECORDED_BYTES);
            while let Some(chunk) = receiver.recv().await {
                let bytes = match chunk {
                    Chunk::Bytes(bytes) => bytes,
                    Chunk::End => {
                        ended = true;
                        break;
                    }
                };
                let Ok(frames) = parser.feed(&bytes) else {
                    tracing::warn!(remote = %self.remote.client.host(), "a relayed stream could not be read; not recorded further");
                    return;
                };
                for frame in frames {
                    if let SseFrame::Event(event) = frame {
                        self.record_data(&event.data).await;
                    }
                }
            }
        } else {
            let mut body = Vec::new();
            while let Some(chunk) = receiver.recv().await {
                match chunk {
                    Chunk::Bytes(bytes) if body.len() + bytes.len() <= MAX_RECORDED_BYTES => {
                        body.extend_from_slice(&bytes)
                    }
                    Chunk::Bytes(_) => return,
                    Chunk::End => {
                        ended = true;
                        break;
                    }
                }
            }
            if ended {
                self.record_answer(&body).await;
            }
        }
        // Cut off before the task rested: ask the remote where it stands.
        if !ended || (self.method.is_streaming() && !self.rested) {
            if let Some(task_id) = self.last_task.clone() {
                refresh(&self.runtime, &self.remote, &self.user, &task_id).await;
            }
        }
    }

    /// One SSE event of a streamed answer.
    async fn record_data(&mut self, data: &str) {
        match codec::decode_stream_response(self.version, data) {
            Ok(Ok(event)) => self.record(&event).await,
            Ok(Err(_)) => {} // the remote's error: nothing happened to record
            Err(err) => {
                tracing::warn!(remote = %self.remote.client.host(), error = %err, "a relayed event could not be decoded; not recorded");
            }
        }
    }

    /// The JSON answer of a call that does not stream.
    async fn record_answer(&mut self, body: &[u8]) {
        let Ok(value) = serde_json::from_slice::<Value>(body) else {
            return;
        };
        let Ok(response) = RpcResponse::from_value(value) else {
            return;
        };
        let result = match response.outcome {
            Ok(result) => result,
            Err(error)
                if self.method == Method::CancelTask
                    && error.code == ErrorCode::UnsupportedOperation.code() =>
            {
                // kagent 0.10: "Cancellation is not supported". The agents list says so from
                // now on, and the chat offers "Reject all and stop" instead of Stop.
                self.remote
                    .cancel_refused
                    .store(true, std::sync::atomic::Ordering::Relaxed);
                return;
            }
            Err(_) => return,
        };
        match self.method {
            Method::SendMessage => match codec::decode_send_result(self.version, &result) {
                Ok(event) => self.record(&event).await,
                Err(err) => {
                    tracing::warn!(remote = %self.remote.client.host(), error = %err, "a relayed answer could not be decoded; not recorded");
                }
            },
            Method::GetTask | Method::CancelTask => {
                if let Ok(task) = codec::decode_task(self.version, &result) {
                    self.refresh_known(&task).await;
                }
            }
            Method::SendStreamingMessage | Method::SubscribeToTask | Method::ListTasks => {}
        }
    }

    async fn record(&mut self, event: &StreamEvent) {
        if let Some(task_id) = task_of(event) {
            if self
                .live
                .as_ref()
                .is_none_or(|live| live.task_id != task_id)
            {
                self.live = Some(LiveTask::mark(&self.remote, task_id));
            }
            self.last_task = Some(task_id.to_owned());
        }
        self.rested = match event {
            StreamEvent::StatusUpdate(update) => update.is_final,
            StreamEvent::Task(task) => task.status.state.ends_stream(),
            StreamEvent::Message(_) => true,
            StreamEvent::ArtifactUpdate(_) => false,
        };
        // A resubscription replays a task we already hold: only its state is new.
        if self.method == Method::SubscribeToTask {
            if let StreamEvent::Task(task) = event {
                self.refresh_known(task).await;
                return;
            }
        }
        if let Err(err) = self.runtime.relay().record(&mut self.exchange, event).await {
            tracing::warn!(remote = %self.remote.client.host(), error = %err, "a relayed event could not be recorded");
        }
    }

    /// A task's state as the remote reports it, recorded for a task we hold of this user's.
    async fn refresh_known(&self, task: &Task) {
        if let Ok(Some(_)) = self.runtime.relay().task(&self.user, &task.id).await {
            if let Err(err) = self.runtime.relay().refresh(task).await {
                tracing::warn!(error = %err, "a relayed task's state could not be recorded");
            }
        }
    }
}

fn task_of(event: &StreamEvent) -> Option<&str> {
    match event {
        StreamEvent::Task(task) => Some(&task.id),
        StreamEvent::StatusUpdate(update) => Some(&update.task_id),
        StreamEvent::ArtifactUpdate(update) => Some(&update.task_id),
        StreamEvent::Message(message) => message.task_id.as_deref(),
    }
}

/// Asks the remote for a relayed task's state (`tasks/get`) and records it when it changed.
/// A remote that does not answer leaves the stored state as it is.
pub(super) async fn refresh(
    runtime: &Arc<Runtime>,
    remote: &Arc<RemoteAgent>,
    user: &str,
    task_id: &str,
) {
    match remote.get_task(user, task_id).await {
        Some(task) => {
            if let Err(err) = runtime.relay().refresh(&task).await {
                tracing::warn!(error = %err, "a relayed task's state could not be recorded");
            }
        }
        None => {
            tracing::info!(remote = %remote.client.host(), task = %task_id, "the remote agent did not report the task's state");
        }
    }
}

impl RemoteAgent {
    /// Whether a relayed answer about the task is being recorded now.
    pub(super) fn is_live(&self, task_id: &str) -> bool {
        self.live
            .lock()
            .map(|live| live.contains_key(task_id))
            .unwrap_or(false)
    }

    /// Whether it can cancel a task, as far as we know (`None`: not known).
    pub(super) fn cancelable(&self) -> Option<bool> {
        match self.cancel {
            Some(cancel) => Some(cancel),
            None if self
                .cancel_refused
                .load(std::sync::atomic::Ordering::Relaxed) =>
            {
                Some(false)
            }
            None => None,
        }
    }

    /// `namespace/name`, how sessions and tasks refer to this agent.
    pub(super) fn key(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }

    /// The remote's `tasks/get` of a task, in the version its card offers; `None` when it
    /// does not answer with one in time.
    pub(super) async fn get_task(&self, user: &str, task_id: &str) -> Option<Task> {
        self.client
            .get_task(user, task_id, CARD_TIMEOUT)
            .await
            .map_err(|why| tracing::debug!(remote = %self.client.host(), %why, "tasks/get"))
            .ok()
    }
}
