//! Time to Slack: how long after a batch pauses its message reaches Slack's Web API
//! (`chat.postMessage` at a stand-in started here) through the Slack app channel, which sends
//! from the outbox like every channel. `load_large` (1,000) batches are held first, all at
//! once (their own figure), and stay pending while `latency_chats` more pause one at a time.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use tokio::time::Instant;

use super::reach::Seen;
use super::{errors_figure, pooled_http, Counts, PHASE_LIMIT};
use crate::client::A2aClient;
use crate::error::{BenchError, Result};
use crate::progress;
use crate::scenario::{self, ms};
use crate::server::ServerProcess;
use crate::stats::Figure;

const GROUP: &str = "slack (a paused batch posted by the Slack app channel)";

const AGENTS: &str = "[[agents]]\nname = \"demo\"\n\n[[agents.tools]]\nkind = \"builtin_files\"\n\
    require_approval = [\"write_file\", \"delete_file\"]\n";

/// The task a posted message's Approve button names (`{batch_id}:{task_id}`).
fn task_of_post(body: &Value) -> Option<String> {
    let blocks = body["blocks"].as_array()?;
    let value = blocks
        .iter()
        .flat_map(|block| block["elements"].as_array().into_iter().flatten())
        .find(|element| element["action_id"] == "signoff_approve")?["value"]
        .as_str()?;
    Some(value.split_once(':')?.1.to_owned())
}

/// A stand-in for Slack's Web API that records when each task's message was posted; its URL.
async fn stand_in(seen: Arc<Seen>) -> Result<String> {
    let posted = std::sync::atomic::AtomicU64::new(0);
    let posted = Arc::new(posted);
    let app = axum::Router::new().route(
        "/api/{method}",
        axum::routing::post(
            move |axum::extract::Path(method): axum::extract::Path<String>, body: String| {
                let (seen, posted) = (seen.clone(), posted.clone());
                async move {
                    let body: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
                    if method == "chat.postMessage" {
                        if let Some(task) = task_of_post(&body) {
                            seen.record(task);
                        }
                        let n = posted.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let ts = format!("1.{n:06}");
                        return axum::Json(
                            json!({"ok": true, "channel": body["channel"], "ts": ts}),
                        );
                    }
                    axum::Json(json!({"ok": true}))
                }
            },
        ),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|err| BenchError::Unexpected(format!("the Slack stand-in: {err}")))?;
    let url = format!(
        "http://{}/api",
        listener
            .local_addr()
            .map_err(|err| BenchError::Unexpected(format!("the Slack stand-in: {err}")))?
    );
    tokio::spawn(async move { axum::serve(listener, app).await });
    Ok(url)
}

/// The notifications file of one Slack app channel to `api_url`, its secrets beside it in
/// `dir`; the file's path.
fn notifications_file(dir: &Path, api_url: &str) -> Result<std::path::PathBuf> {
    let write = |name: &str, text: &str| {
        std::fs::write(dir.join(name), text)
            .map_err(|err| BenchError::Unexpected(format!("writing {name}: {err}")))
    };
    std::fs::create_dir_all(dir)
        .map_err(|err| BenchError::Unexpected(format!("{}: {err}", dir.display())))?;
    write("bot-token", "xoxb-bench")?;
    write("signing-secret", "bench-signing-secret")?;
    let file = dir.join("notifications.toml");
    write(
        "notifications.toml",
        &format!(
            "[[channels]]\nname = \"bench-slack\"\nkind = \"slack_app\"\n[channels.slack]\n\
             bot_token_file = \"{}\"\nsigning_secret_file = \"{}\"\nchannel = \"C0BENCH\"\n\
             api_url = \"{api_url}\"\n",
            dir.join("bot-token").display(),
            dir.join("signing-secret").display()
        ),
    )?;
    Ok(file)
}

/// One pause: its task, when the prompt was sent and when the client saw the pause.
async fn hold(client: &A2aClient) -> Result<(String, Instant, Instant)> {
    let sent = Instant::now();
    let (pause_ms, paused) = scenario::pause(client).await?;
    let paused_at = sent + Duration::from_secs_f64(pause_ms / 1000.0);
    Ok((paused.task_id, sent, paused_at))
}

pub async fn slack(binary: &Path, work_dir: &Path, counts: &Counts) -> Vec<Figure> {
    match measure(binary, &work_dir.join("slack"), counts).await {
        Ok(figures) => figures,
        Err(err) => vec![Figure::missing(
            GROUP,
            "pause -> post",
            "ms",
            err.to_string(),
        )],
    }
}

async fn measure(binary: &Path, dir: &Path, counts: &Counts) -> Result<Vec<Figure>> {
    let seen = Arc::new(Seen::default());
    let api_url = stand_in(seen.clone()).await?;
    let file = notifications_file(&dir.join("config"), &api_url)?;
    let args = [
        "--notifications".to_owned(),
        file.display().to_string(),
        "--public-url".to_owned(),
        "http://127.0.0.1".to_owned(),
    ];
    let server =
        ServerProcess::start_with_args(binary, &dir.join("data"), Some(AGENTS), &args).await?;
    let client = Arc::new(A2aClient::new(
        pooled_http(),
        server.endpoint("default", "demo"),
    ));
    let mut errors = Vec::new();

    let pending = counts.load_large;
    progress(format_args!("slack: {pending} batches paused at once"));
    let mut handles = Vec::with_capacity(pending);
    for _ in 0..pending {
        let client = client.clone();
        handles.push(tokio::spawn(async move { hold(&client).await }));
    }
    let mut crowd = Vec::new();
    for handle in handles {
        match handle.await {
            Ok(Ok(one)) => crowd.push(one),
            Ok(Err(err)) => errors.push(err.to_string()),
            Err(err) => errors.push(err.to_string()),
        }
    }
    let tasks: Vec<String> = crowd.iter().map(|(task, ..)| task.clone()).collect();
    seen.all(&tasks, PHASE_LIMIT).await;
    let crowd_ms = posted_after(&crowd, &seen, |(_, sent, _)| *sent, &mut errors);

    let sequential = counts.latency_chats;
    progress(format_args!(
        "slack: {sequential} batches one at a time, {pending} pending"
    ));
    let mut alone = Vec::new();
    for _ in 0..sequential {
        match hold(&client).await {
            Ok(one) => {
                seen.all(std::slice::from_ref(&one.0), Duration::from_secs(10))
                    .await;
                alone.push(one);
            }
            Err(err) => errors.push(err.to_string()),
        }
    }
    let from_pause = posted_after(&alone, &seen, |(_, _, paused)| *paused, &mut errors);
    let from_prompt = posted_after(&alone, &seen, |(_, sent, _)| *sent, &mut Vec::new());
    server.stop().await?;
    Ok(vec![
        Figure::samples(GROUP, &format!("pause -> post, {pending} pending"), "ms", &from_pause)
            .with_note(
                "the client's input-required event -> chat.postMessage at the stand-in: the \
                 outbox's wake (5 ms settle), claim, the batch's read for previews, the post",
            ),
        Figure::samples(GROUP, &format!("prompt -> post, {pending} pending"), "ms", &from_prompt)
            .with_note("the same from the prompt sent, the scripted model's turn and the pause's commit included"),
        Figure::samples(GROUP, &format!("prompt -> post, {pending} paused at once"), "ms", &crowd_ms)
            .with_note("each of the prompts sent together, to its post; one sender, 64 deliveries at once"),
        errors_figure(GROUP, "errors", &errors),
    ])
}

/// The milliseconds from `from` of each pause to its post; a pause never posted is an error.
fn posted_after(
    held: &[(String, Instant, Instant)],
    seen: &Seen,
    from: impl Fn(&(String, Instant, Instant)) -> Instant,
    errors: &mut Vec<String>,
) -> Vec<f64> {
    let mut times = Vec::with_capacity(held.len());
    for one in held {
        match seen.of(&one.0) {
            Some(at) => times.push(ms(from(one), at)),
            None => errors.push("a paused batch was never posted to Slack".to_owned()),
        }
    }
    times
}

#[cfg(test)]
mod tests {
    use super::task_of_post;
    use serde_json::json;

    #[test]
    fn a_posts_task_is_the_one_its_approve_button_names() {
        let body = json!({"blocks": [{"type": "section"}, {"type": "actions", "elements": [
            {"action_id": "signoff_approve", "value": "7:task-1"},
            {"action_id": "signoff_reject", "value": "7:task-1"},
        ]}]});
        assert_eq!(task_of_post(&body).as_deref(), Some("task-1"));
        assert_eq!(task_of_post(&json!({"blocks": []})), None);
    }
}
