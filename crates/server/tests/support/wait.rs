//! Bounded waits: every wait in the tests ends, and names what it waited for when it gives up.
//! Nothing here assumes how long something takes; the bounds only turn a hang into a failure.

use std::future::Future;
use std::time::Duration;

use serde_json::{json, Value};

use super::a2a::request;
use super::app::{TestApp, DEMO};

/// How long any one wait may take before the test fails.
pub const PATIENCE: Duration = Duration::from_secs(30);

/// How often [`eventually`] looks again.
const POLL: Duration = Duration::from_millis(20);

/// `future`'s output; panics naming `what` if it takes longer than [`PATIENCE`].
pub async fn within<T>(what: &str, future: impl Future<Output = T>) -> T {
    match tokio::time::timeout(PATIENCE, future).await {
        Ok(value) => value,
        Err(_) => panic!("{what}: not within {} s", PATIENCE.as_secs()),
    }
}

/// Asks `check` until it answers `Some`, and returns that. For conditions that nothing
/// announces (a port that starts listening, a row that appears), so they are looked at again
/// every few milliseconds; panics naming `what` after [`PATIENCE`].
pub async fn eventually<T, F, Fut>(what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    within(what, async {
        loop {
            if let Some(value) = check().await {
                return value;
            }
            tokio::time::sleep(POLL).await;
        }
    })
    .await
}

/// The A2A states after which a task never changes again.
const TERMINAL: [&str; 4] = ["completed", "canceled", "failed", "rejected"];

/// Waits until `task` is in `state` (a v0.3 state name) and returns the task as `tasks/get`
/// then shows it. It follows the task (`tasks/resubscribe`), so it wakes on the change itself;
/// a task at rest (paused, or not yet picked up after a restart) has no live stream, so it is
/// followed again until something moves it. A task that ends in another state fails at once.
pub async fn wait_for_state(app: &TestApp, task: &str, state: &str) -> Value {
    wait_for_state_at(app, DEMO, task, state).await
}

/// [`wait_for_state`] for a task of the agent at `path`.
pub async fn wait_for_state_at(app: &TestApp, path: &str, task: &str, state: &str) -> Value {
    let what = format!("task {task} to be {state}");
    within(&what, async {
        loop {
            let follow = request("tasks/resubscribe", json!({"id": task}));
            let mut events = app.open_stream_at(path, None, follow).await;
            let mut last = String::new();
            while let Some(event) = events.next().await {
                assert!(event.get("error").is_none(), "{what}: {event}");
                // The snapshot first (a task), then status updates.
                let result = &event["result"];
                if let Some(now) = result["status"]["state"].as_str() {
                    if now == state {
                        let got = app
                            .rpc_at(path, None, request("tasks/get", json!({"id": task})))
                            .await;
                        return got["result"].clone();
                    }
                    now.clone_into(&mut last);
                }
            }
            assert!(
                !TERMINAL.contains(&last.as_str()),
                "{what}: it ended {last}"
            );
            tokio::time::sleep(POLL).await;
        }
    })
    .await
}
