//! Time to reach an approver: how long after a person's message its held call shows on the
//! approvals stream of the person who must approve it (`GET /api/approvals/stream`, what the
//! inbox, the tab's title and the browser's notification read). Alice asks; a two-person rule
//! routes each call to group `sre`, of which bob is; bob's one stream stays open throughout.
//! Measured one chat at a time, then with `load_small` (100) and `load_large` (1,000) chats
//! held at once (the earlier ones still waiting: nobody decides them).

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio::sync::Notify;
use tokio::time::Instant;

use super::{errors_figure, pooled_http, Counts, PHASE_LIMIT};
use crate::client::A2aClient;
use crate::error::{BenchError, Result};
use crate::progress;
use crate::scenario::{self, ms};
use crate::server::ServerProcess;
use crate::stats::Figure;

const GROUP: &str = "reach (a held call on the approver's approvals stream)";

const TOKENS: &str = "alice-token=alice,bob-token=bob:sre";

const AGENTS: &str = "[[agents]]\nname = \"demo\"\napprovers = [\"group:sre\"]\n\
    requester_may_approve = false\n\n[[agents.tools]]\nkind = \"builtin_files\"\n\
    require_approval = [\"write_file\", \"delete_file\"]\n";

/// When each batch first arrived on the approver's stream (by a key its `pending` event names:
/// its task, or what its call asks), and a wake-up per arrival.
#[derive(Default)]
pub(super) struct Seen {
    at: Mutex<HashMap<String, Instant>>,
    arrived: Notify,
}

impl Seen {
    pub(super) fn record(&self, task_id: String) {
        if let Ok(mut at) = self.at.lock() {
            at.entry(task_id).or_insert_with(Instant::now);
        }
        self.arrived.notify_waiters();
    }

    pub(super) fn of(&self, task_id: &str) -> Option<Instant> {
        self.at.lock().ok()?.get(task_id).copied()
    }

    /// Waits until every key of `tasks` arrived, or `limit` passed.
    pub(super) async fn all(&self, tasks: &[String], limit: Duration) {
        let until = Instant::now() + limit;
        loop {
            let arrived = self.arrived.notified();
            if tasks.iter().all(|task| self.of(task).is_some()) {
                return;
            }
            if tokio::time::timeout_at(until, arrived).await.is_err() {
                return;
            }
        }
    }
}

/// The data of a `pending` event in one SSE frame (`None` for any other frame).
fn pending_data(frame: &str) -> Option<Value> {
    let mut pending = false;
    let mut data = None;
    for line in frame.lines() {
        if line == "event: pending" {
            pending = true;
        } else if let Some(rest) = line.strip_prefix("data: ") {
            data = Some(rest);
        }
    }
    serde_json::from_str(data.filter(|_| pending)?).ok()
}

/// A pending batch's task.
fn task_of(pending: &Value) -> Option<String> {
    pending["taskId"].as_str().map(str::to_owned)
}

/// Opens `token`'s approvals stream (without one: the stream of `--auth none`'s person) and
/// records each batch that arrives on it under `key` of its `pending` event, until the stream
/// ends (the server stops).
pub(super) async fn follow_stream(
    server: &ServerProcess,
    token: Option<&str>,
    key: fn(&Value) -> Option<String>,
    seen: Arc<Seen>,
) -> Result<()> {
    let url = format!("{}/api/approvals/stream", server.base);
    let request = pooled_http().get(&url);
    let request = match token {
        Some(token) => request.bearer_auth(token),
        None => request,
    };
    let mut response = request
        .send()
        .await
        .map_err(|err| BenchError::Unexpected(format!("{url}: {err}")))?;
    if !response.status().is_success() {
        return Err(BenchError::Unexpected(format!(
            "{url} answered {}",
            response.status()
        )));
    }
    tokio::spawn(async move {
        let mut buffer = String::new();
        while let Ok(Some(chunk)) = response.chunk().await {
            buffer.push_str(&String::from_utf8_lossy(&chunk));
            while let Some(end) = buffer.find("\n\n") {
                let frame: String = buffer.drain(..end + 2).collect();
                if let Some(key) = pending_data(&frame).as_ref().and_then(key) {
                    seen.record(key);
                }
            }
        }
    });
    Ok(())
}

/// One held call: alice's prompt to its pause; the task and when the prompt was sent.
async fn hold(alice: &A2aClient) -> Result<(String, Instant)> {
    let sent = Instant::now();
    let (_, paused) = scenario::pause(alice).await?;
    Ok((paused.task_id, sent))
}

/// The milliseconds from each prompt to its batch on the stream, and the tasks never seen.
fn reached(held: &[(String, Instant)], seen: &Seen) -> (Vec<f64>, usize) {
    let mut times = Vec::with_capacity(held.len());
    let mut missed = 0;
    for (task, sent) in held {
        match seen.of(task) {
            Some(at) => times.push(ms(*sent, at)),
            None => missed += 1,
        }
    }
    (times, missed)
}

/// `chats` held calls started together; their reach, and the errors.
async fn at_once(alice: &Arc<A2aClient>, seen: &Seen, chats: usize) -> (Vec<f64>, Vec<String>) {
    let barrier = Arc::new(tokio::sync::Barrier::new(chats));
    let mut handles = Vec::with_capacity(chats);
    for _ in 0..chats {
        let (alice, barrier) = (alice.clone(), barrier.clone());
        handles.push(tokio::spawn(async move {
            barrier.wait().await;
            hold(&alice).await
        }));
    }
    let (mut held, mut errors) = (Vec::new(), Vec::new());
    for handle in handles {
        match handle.await {
            Ok(Ok(one)) => held.push(one),
            Ok(Err(err)) => errors.push(err.to_string()),
            Err(err) => errors.push(err.to_string()),
        }
    }
    let tasks: Vec<String> = held.iter().map(|(task, _)| task.clone()).collect();
    seen.all(&tasks, PHASE_LIMIT).await;
    let (times, missed) = reached(&held, seen);
    errors.extend((0..missed).map(|_| "a held call never showed on the stream".to_owned()));
    (times, errors)
}

/// One chat at a time: each prompt's reach, and the errors.
async fn one_at_a_time(alice: &A2aClient, seen: &Seen, chats: usize) -> (Vec<f64>, Vec<String>) {
    let (mut times, mut errors) = (Vec::new(), Vec::new());
    for _ in 0..chats {
        match hold(alice).await {
            Ok(one) => {
                seen.all(std::slice::from_ref(&one.0), Duration::from_secs(10))
                    .await;
                let (mut reach, missed) = reached(std::slice::from_ref(&one), seen);
                times.append(&mut reach);
                if missed > 0 {
                    errors.push("a held call never showed on the stream".to_owned());
                }
            }
            Err(err) => errors.push(err.to_string()),
        }
    }
    (times, errors)
}

pub async fn reach(binary: &Path, work_dir: &Path, counts: &Counts) -> Vec<Figure> {
    match measure(binary, &work_dir.join("reach"), counts).await {
        Ok(figures) => figures,
        Err(err) => vec![Figure::missing(GROUP, "reach", "ms", err.to_string())],
    }
}

async fn measure(binary: &Path, data_dir: &Path, counts: &Counts) -> Result<Vec<Figure>> {
    let args = [
        "--auth".to_owned(),
        "tokens".to_owned(),
        "--tokens".to_owned(),
        TOKENS.to_owned(),
    ];
    let server = ServerProcess::start_with_args(binary, data_dir, Some(AGENTS), &args).await?;
    let seen = Arc::new(Seen::default());
    follow_stream(&server, Some("bob-token"), task_of, seen.clone()).await?;
    let alice = Arc::new(
        A2aClient::new(pooled_http(), server.endpoint("default", "demo")).with_token("alice-token"),
    );
    let sequential = counts.latency_chats;
    progress(format_args!(
        "reach: {sequential} held calls one at a time, bob's stream open"
    ));
    let (alone, mut errors) = one_at_a_time(&alice, &seen, sequential).await;
    let mut figures = vec![
        Figure::samples(GROUP, "one at a time", "ms", &alone).with_note(
            "alice's prompt sent -> its batch as a `pending` event on bob's approvals stream \
         (the scripted model's turn, the hold, its commit, the fan-out)",
        ),
    ];
    let mut waiting = alone.len();
    for chats in [counts.load_small, counts.load_large] {
        progress(format_args!("reach: {chats} held calls at once"));
        let (crowd, crowd_errors) = at_once(&alice, &seen, chats).await;
        errors.extend(crowd_errors);
        figures.push(
            Figure::samples(GROUP, &format!("{chats} held at once"), "ms", &crowd).with_note(
                format!(
                    "the same, for prompts sent together, {waiting} held before them still \
                     waiting; bob's one stream carries every batch"
                ),
            ),
        );
        waiting += crowd.len();
    }
    server.stop().await?;
    figures.push(errors_figure(GROUP, "errors", &errors));
    Ok(figures)
}

#[cfg(test)]
mod tests {
    use super::{pending_data, task_of};

    fn pending_task(frame: &str) -> Option<String> {
        task_of(&pending_data(frame)?)
    }

    #[test]
    fn a_pending_frame_names_its_task_and_a_decided_one_none() {
        let pending =
            "id: 7\nevent: pending\ndata: {\"taskId\":\"t-1\",\"agent\":\"default/demo\"}\n\n";
        assert_eq!(pending_task(pending).as_deref(), Some("t-1"));
        let decided = "id: 8\nevent: decided\ndata: {\"taskId\":\"t-1\",\"outcome\":\"rest\"}\n\n";
        assert_eq!(pending_task(decided), None);
        assert_eq!(pending_task(": heartbeat\n\n"), None);
    }
}
