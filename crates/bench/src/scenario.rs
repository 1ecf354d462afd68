//! The chats every server figure is made of: a chat that pauses for approval, its approval,
//! a plain chat, and helpers to run many of them at once.

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use signoff_protocol::{StreamEvent, TaskState};
use tokio::time::Instant;

use crate::client::{self, A2aClient};
use crate::error::{BenchError, Result};

/// The prompt: two calls that need approval and one that runs at once.
pub const PROMPT: &str = "write a.txt: x and delete b.txt and read c.txt";
/// A chat with no tool call and one text chunk: the scripted model answers `count to 1` with
/// "1" and no pause, so its time is the server's alone.
pub const PLAIN: &str = "count to 1";

/// A task waiting for a decision.
#[derive(Debug, Clone)]
pub struct Paused {
    pub task_id: String,
    pub context_id: String,
}

/// Milliseconds between two instants.
pub fn ms(from: Instant, to: Instant) -> f64 {
    to.saturating_duration_since(from).as_secs_f64() * 1000.0
}

/// Sends the prompt and reads its stream to the final `input-required` event.
/// Returns the milliseconds from the POST to that event.
pub async fn pause(client: &A2aClient) -> Result<(f64, Paused)> {
    let start = Instant::now();
    let events = client.stream(client::user_text(PROMPT)).await?;
    let paused_at = client::ended_in(&events, TaskState::InputRequired)?;
    let (task_id, context_id) = client::ids_of(&events)
        .ok_or_else(|| BenchError::Unexpected("the stream named no task".into()))?;
    Ok((
        ms(start, paused_at),
        Paused {
            task_id,
            context_id,
        },
    ))
}

/// What approving a paused task took.
#[derive(Debug, Clone, Copy)]
pub struct Resumed {
    /// From the POST of the decision to its stream's first event.
    pub first_ms: f64,
    /// From the POST of the decision to the final `completed` event.
    pub completed_ms: f64,
    /// Text chunks of the answer after the results (the scripted model pauses between them).
    pub text_chunks: usize,
}

/// Approves every held call of `paused` and reads the stream to `completed`.
pub async fn approve(client: &A2aClient, paused: &Paused) -> Result<Resumed> {
    let start = Instant::now();
    let events = client
        .stream(client::approve(&paused.task_id, &paused.context_id))
        .await?;
    let completed_at = client::ended_in(&events, TaskState::Completed)?;
    let first = events
        .first()
        .ok_or_else(|| BenchError::Unexpected("an empty decision stream".into()))?;
    if client::state_of(&first.event) != Some(TaskState::Working) {
        return Err(BenchError::Unexpected(format!(
            "the decision's first event is not `working`: {:?}",
            first.event
        )));
    }
    let text_chunks = events
        .iter()
        .filter(|received| matches!(received.event, StreamEvent::ArtifactUpdate(_)))
        .count();
    Ok(Resumed {
        first_ms: ms(start, first.at),
        completed_ms: ms(start, completed_at),
        text_chunks,
    })
}

/// A plain chat with `message/send`; the milliseconds it took.
pub async fn plain(client: &A2aClient) -> Result<f64> {
    let start = Instant::now();
    let result = client.send(client::user_text(PLAIN)).await?;
    let state = client::state_of(&result);
    if state != Some(TaskState::Completed) {
        return Err(BenchError::Unexpected(format!(
            "a plain chat ended {state:?}, not completed"
        )));
    }
    Ok(ms(start, Instant::now()))
}

/// The outcomes of `count` jobs run by `workers` concurrent workers, in job order.
/// `job(index)` runs one job. No job starts after `deadline`: those not started by then are
/// errors, so a slow phase ends with the figures it has.
pub async fn run_pool<T, F, Fut>(
    count: usize,
    workers: usize,
    deadline: Instant,
    job: F,
) -> Vec<Result<T>>
where
    T: Send + 'static,
    F: Fn(usize) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<T>> + Send + 'static,
{
    let next = Arc::new(AtomicUsize::new(0));
    let job = Arc::new(job);
    let mut handles = Vec::new();
    for _ in 0..workers.clamp(1, count.max(1)) {
        let next = next.clone();
        let job = job.clone();
        handles.push(tokio::spawn(async move {
            let mut done = Vec::new();
            loop {
                let index = next.fetch_add(1, Ordering::Relaxed);
                if index >= count {
                    return done;
                }
                if Instant::now() > deadline {
                    done.push((
                        index,
                        Err(BenchError::Timeout(
                            "not started: the phase reached its time limit".into(),
                        )),
                    ));
                    continue;
                }
                done.push((index, job(index).await));
            }
        }));
    }
    let mut all: Vec<(usize, Result<T>)> = Vec::with_capacity(count);
    for handle in handles {
        match handle.await {
            Ok(done) => all.extend(done),
            Err(err) => all.push((usize::MAX, Err(BenchError::Unexpected(err.to_string())))),
        }
    }
    all.sort_by_key(|(index, _)| *index);
    all.into_iter().map(|(_, outcome)| outcome).collect()
}

/// Splits outcomes into values and errors, keeping the first error's text.
pub fn split<T>(outcomes: Vec<Result<T>>) -> (Vec<T>, usize, Option<String>) {
    let mut values = Vec::new();
    let mut errors = 0;
    let mut first_error = None;
    for outcome in outcomes {
        match outcome {
            Ok(value) => values.push(value),
            Err(err) => {
                errors += 1;
                first_error.get_or_insert_with(|| err.to_string());
            }
        }
    }
    (values, errors, first_error)
}
