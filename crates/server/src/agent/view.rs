//! Tasks as clients see them: built by folding a task's stored events, and the event builders
//! the runtime uses, so replay and live streams agree (ARCHITECTURE.md, invariant 3).

use serde_json::Value;
use signoff_protocol::hitl::kagent::TokenUsage;
use signoff_protocol::hitl::keys;
use signoff_protocol::{
    Artifact, Message, Metadata, Part, Role, StreamEvent, Task, TaskArtifactUpdateEvent, TaskState,
    TaskStatus, TaskStatusUpdateEvent,
};

/// An empty task, before its first event.
pub fn empty_task(id: &str, context_id: &str) -> Task {
    Task {
        id: id.to_owned(),
        context_id: context_id.to_owned(),
        status: TaskStatus {
            state: TaskState::Submitted,
            message: None,
            timestamp: None,
        },
        history: Vec::new(),
        artifacts: Vec::new(),
        metadata: None,
    }
}

/// Applies one event to a task, as a2a-sdk's task manager does: a new status moves the previous
/// status message into the history; artifact chunks append to their artifact.
pub fn apply(task: &mut Task, event: &StreamEvent) {
    match event {
        StreamEvent::Task(snapshot) => *task = snapshot.clone(),
        StreamEvent::Message(message) => task.history.push(message.clone()),
        StreamEvent::StatusUpdate(update) => {
            // A run's token counts wait in the task's metadata while its status is current,
            // and go with its agent message into the history (as kagent stores them), so a
            // stored task keeps every run's counts and its status stays as it was sent.
            let current_usage = take_usage(&mut task.metadata);
            if let Some(mut previous) = task.status.message.take() {
                if let (Some(usage), Role::Agent) = (current_usage, previous.role) {
                    set_usage(&mut previous.metadata, usage);
                }
                task.history.push(previous);
            }
            task.status = update.status.clone();
            // (A status message that carries its counts itself, as a relayed kagent one
            // recorded by the relay does, needs no copy.)
            let carried = task.status.message.as_ref().is_some_and(|message| {
                message
                    .metadata
                    .as_ref()
                    .is_some_and(|metadata| metadata.contains_key(keys::USAGE_METADATA))
            });
            if let (Some(usage), false) = (
                update
                    .metadata
                    .as_ref()
                    .and_then(|metadata| metadata.get(keys::USAGE_METADATA)),
                carried,
            ) {
                set_usage(&mut task.metadata, usage.clone());
            }
            // A user message echoed by a status update (the message that started or resumed
            // the task) belongs to the history at once, as a2a-sdk keeps it.
            if task
                .status
                .message
                .as_ref()
                .is_some_and(|message| message.role == Role::User)
            {
                if let Some(message) = task.status.message.take() {
                    task.history.push(message);
                }
            }
        }
        StreamEvent::ArtifactUpdate(update) => {
            let existing = task
                .artifacts
                .iter_mut()
                .find(|artifact| artifact.artifact_id == update.artifact.artifact_id);
            match existing {
                Some(artifact) if update.append => {
                    artifact.parts.extend(update.artifact.parts.iter().cloned())
                }
                Some(artifact) => *artifact = update.artifact.clone(),
                None => task.artifacts.push(update.artifact.clone()),
            }
        }
    }
}

/// Takes the token counts out of `metadata` (dropping it when nothing else is left).
fn take_usage(metadata: &mut Option<Metadata>) -> Option<Value> {
    let map = metadata.as_mut()?;
    let usage = map.remove(keys::USAGE_METADATA);
    if map.is_empty() {
        *metadata = None;
    }
    usage
}

fn set_usage(metadata: &mut Option<Metadata>, usage: Value) {
    metadata
        .get_or_insert_with(Metadata::new)
        .insert(keys::USAGE_METADATA.to_owned(), usage);
}

/// Keeps the last `length` history messages (A2A `historyLength`).
pub fn trim_history(task: &mut Task, length: Option<u32>) {
    if let Some(length) = length {
        let length = length as usize;
        if task.history.len() > length {
            task.history.drain(..task.history.len() - length);
        }
    }
}

pub fn new_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// An agent message on a task.
pub fn agent_message(task_id: &str, context_id: &str, parts: Vec<Part>) -> Message {
    let mut message = Message::new(new_id(), Role::Agent, parts);
    message.task_id = Some(task_id.to_owned());
    message.context_id = Some(context_id.to_owned());
    message
}

/// A status update; it is final when the state ends the stream.
pub fn status_event(
    task_id: &str,
    context_id: &str,
    state: TaskState,
    message: Option<Message>,
    metadata: Option<Metadata>,
) -> StreamEvent {
    StreamEvent::StatusUpdate(TaskStatusUpdateEvent {
        task_id: task_id.to_owned(),
        context_id: context_id.to_owned(),
        status: TaskStatus {
            state,
            message,
            timestamp: Some(crate::store::now()),
        },
        is_final: state.ends_stream(),
        metadata,
    })
}

/// One chunk of streamed answer text.
pub fn text_chunk(
    task_id: &str,
    context_id: &str,
    artifact_id: &str,
    text: String,
    append: bool,
    last_chunk: bool,
) -> StreamEvent {
    StreamEvent::ArtifactUpdate(TaskArtifactUpdateEvent {
        task_id: task_id.to_owned(),
        context_id: context_id.to_owned(),
        artifact: Artifact {
            artifact_id: artifact_id.to_owned(),
            name: None,
            description: None,
            parts: vec![Part::text(text)],
            metadata: None,
        },
        append,
        last_chunk,
        metadata: None,
    })
}

/// A whole artifact of its own (one update, its last chunk).
pub fn whole_artifact(
    task_id: &str,
    context_id: &str,
    name: &str,
    parts: Vec<Part>,
) -> StreamEvent {
    StreamEvent::ArtifactUpdate(TaskArtifactUpdateEvent {
        task_id: task_id.to_owned(),
        context_id: context_id.to_owned(),
        artifact: Artifact {
            artifact_id: new_id(),
            name: Some(name.to_owned()),
            description: None,
            parts,
            metadata: None,
        },
        append: false,
        last_chunk: true,
        metadata: None,
    })
}

/// The token counts for the final event of a turn (docs/wire.md, A turn on the wire).
pub fn usage_metadata(prompt: u64, completion: u64) -> Metadata {
    TokenUsage::new(prompt, completion).to_metadata()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn usage_of(metadata: Option<&Metadata>) -> Option<(u64, u64)> {
        let usage = TokenUsage::from_metadata(metadata)?;
        Some((usage.prompt, usage.completion))
    }

    #[test]
    fn a_folded_task_keeps_each_runs_token_counts() {
        let mut task = empty_task("t-1", "c-1");
        let pause = status_event(
            "t-1",
            "c-1",
            TaskState::InputRequired,
            Some(agent_message("t-1", "c-1", vec![Part::text("waits")])),
            Some(usage_metadata(10, 5)),
        );
        let resumed = status_event("t-1", "c-1", TaskState::Working, None, None);
        // The answer streamed as an artifact: the completion has no message.
        let done = status_event(
            "t-1",
            "c-1",
            TaskState::Completed,
            None,
            Some(usage_metadata(7, 3)),
        );
        apply(&mut task, &pause);
        // While paused, the status is as it was sent; the counts wait in the task's metadata.
        let StreamEvent::StatusUpdate(sent) = &pause else {
            unreachable!()
        };
        assert_eq!(task.status, sent.status);
        assert_eq!(usage_of(task.metadata.as_ref()), Some((10, 5)));
        for event in [resumed, done] {
            apply(&mut task, &event);
        }
        let paused_message = task
            .history
            .iter()
            .find(|message| message.role == Role::Agent)
            .unwrap();
        assert_eq!(usage_of(paused_message.metadata.as_ref()), Some((10, 5)));
        assert_eq!(usage_of(task.metadata.as_ref()), Some((7, 3)));
    }
}
