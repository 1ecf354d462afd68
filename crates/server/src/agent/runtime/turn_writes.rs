//! A runner's writes to its own task around a model turn: moving it to working, the answer's
//! chunks as they stream, what the model did beside its answer, and the answer that completes
//! the task. Each is one guarded commit, so a task that is over (canceled meanwhile) stays so.

use signoff_protocol::{Part, StreamEvent, TaskState};

use crate::agent::model::ChatMessage;
use crate::agent::view;
use crate::store::{Commit, Guard, StoreError};

use super::transcript::transcript_value;
use super::{AgentError, Result, Runtime};

/// The writes of one runner to one task, with the answer that is streaming now.
pub(super) struct TurnWrites<'a> {
    runtime: &'a Runtime,
    task_id: &'a str,
    context_id: &'a str,
    answer: AnswerStream,
}

impl<'a> TurnWrites<'a> {
    pub(super) fn new(runtime: &'a Runtime, task_id: &'a str, context_id: &'a str) -> Self {
        TurnWrites {
            runtime,
            task_id,
            context_id,
            answer: AnswerStream::new(),
        }
    }

    /// Moves a submitted task to `working`, the runner's first write.
    pub(super) async fn working(&self) -> Result<()> {
        let working = view::status_event(
            self.task_id,
            self.context_id,
            TaskState::Working,
            None,
            None,
        );
        let commit = Commit {
            state: Some(TaskState::Working),
            ..step_commit()
        };
        self.runtime
            .commit(self.task_id, vec![working], commit)
            .await?;
        Ok(())
    }

    /// One event of the turn while the task is not over.
    pub(super) async fn step(&self, event: StreamEvent) -> Result<()> {
        self.runtime
            .commit(self.task_id, vec![event], step_commit())
            .await?;
        Ok(())
    }

    /// A chunk of the answer: held back, and the one held before it written.
    pub(super) async fn chunk(&mut self, chunk: String) -> Result<()> {
        match self.answer.push(self.task_id, self.context_id, chunk) {
            Some(event) => self.step(event).await,
            None => Ok(()),
        }
    }

    /// Ends the answer so far: its held chunk is written as its last.
    pub(super) async fn close_answer(&mut self) -> Result<()> {
        match self.answer.close(self.task_id, self.context_id) {
            Some(event) => self.step(event).await,
            None => Ok(()),
        }
    }

    /// What the model did beside its answer (a call it ran itself, a thought) as one working
    /// status update. The answer so far ends first, so text after it streams as a new answer,
    /// below it.
    pub(super) async fn aside(&mut self, parts: Vec<Part>) -> Result<()> {
        let (task_id, context_id) = (self.task_id, self.context_id);
        let mut events: Vec<StreamEvent> =
            self.answer.close(task_id, context_id).into_iter().collect();
        let message = view::agent_message(task_id, context_id, parts);
        events.push(view::status_event(
            task_id,
            context_id,
            TaskState::Working,
            Some(message),
            None,
        ));
        self.runtime.commit(task_id, events, step_commit()).await?;
        Ok(())
    }

    /// Completes the task with a turn that asked for no calls: its text closes the transcript,
    /// and the completed status carries the tokens used. Returns `false`, with the text kept
    /// in the transcript, when a message is waiting (the commit then leaves the task working,
    /// so the runner takes another turn).
    pub(super) async fn complete(
        &self,
        usage: (u64, u64),
        transcript: &mut Vec<ChatMessage>,
        text: String,
        as_message: bool,
    ) -> Result<bool> {
        let (task_id, context_id) = (self.task_id, self.context_id);
        // An answer given as one message is the completed status's message.
        let reply =
            as_message.then(|| view::agent_message(task_id, context_id, vec![Part::text(&text)]));
        transcript.push(ChatMessage::Assistant {
            text,
            tool_calls: Vec::new(),
        });
        let metadata = view::usage_metadata(usage.0, usage.1);
        let done = view::status_event(
            task_id,
            context_id,
            TaskState::Completed,
            reply,
            Some(metadata),
        );
        let commit = Commit {
            state: Some(TaskState::Completed),
            transcript: Some(transcript_value(transcript)?),
            unless_queued: true,
            ..step_commit()
        };
        match self.runtime.commit(task_id, vec![done], commit).await {
            Err(AgentError::Store(StoreError::MessagesWaiting)) => Ok(false),
            completed => {
                completed?;
                Ok(true)
            }
        }
    }
}

/// A commit of one step of a turn, while the task is not over.
fn step_commit() -> Commit {
    Commit {
        guard: Some(Guard::NotTerminal),
        ..Commit::default()
    }
}

/// The turn's answer text as it streams: artifact updates on one artifact, one chunk held back
/// so that the last can say `lastChunk`.
struct AnswerStream {
    artifact_id: String,
    held: Option<String>,
    sent_any: bool,
}

impl AnswerStream {
    fn new() -> AnswerStream {
        AnswerStream {
            artifact_id: view::new_id(),
            held: None,
            sent_any: false,
        }
    }

    /// Holds `chunk` back, and gives the update of the chunk held before it, if any.
    fn push(&mut self, task_id: &str, context_id: &str, chunk: String) -> Option<StreamEvent> {
        if chunk.is_empty() {
            return None;
        }
        let previous = self.held.replace(chunk)?;
        let event = view::text_chunk(
            task_id,
            context_id,
            &self.artifact_id,
            previous,
            self.sent_any,
            false,
        );
        self.sent_any = true;
        Some(event)
    }

    /// Ends the answer: the held chunk as its last, if any; text after it starts a new one.
    fn close(&mut self, task_id: &str, context_id: &str) -> Option<StreamEvent> {
        let last = self.held.take()?;
        let event = view::text_chunk(
            task_id,
            context_id,
            &self.artifact_id,
            last,
            self.sent_any,
            true,
        );
        *self = AnswerStream::new();
        Some(event)
    }
}
