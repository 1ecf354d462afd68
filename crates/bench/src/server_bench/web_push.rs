//! Time to a device: how long after a batch pauses its Web Push reaches the push service (a
//! stand-in started here, one device enrolled) through the outbox, like every channel.
//! `load_large` (1,000) batches are held first, all at once, and stay pending while
//! `latency_chats` more pause one at a time; each of those is the only push under way, so the
//! stand-in's next push is its own (the payload is encrypted to the device: the stand-in cannot
//! read whose it is, and need not).

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::json;
use tokio::time::Instant;

use super::{errors_figure, pooled_http, Counts, PHASE_LIMIT};
use crate::client::A2aClient;
use crate::error::{BenchError, Result};
use crate::progress;
use crate::scenario::{self, ms};
use crate::server::ServerProcess;
use crate::stats::Figure;

const GROUP: &str = "web push (a paused batch pushed to an enrolled device)";

const AGENTS: &str = "[[agents]]\nname = \"demo\"\n\n[[agents.tools]]\nkind = \"builtin_files\"\n\
    require_approval = [\"write_file\", \"delete_file\"]\n";

// A browser's subscription keys (RFC 8291's example): the server encrypts to them.
const P256DH: &str =
    "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4";
const AUTH: &str = "BTBZMqHH6r4Tts7J_aSIgg";

/// When each push reached the stand-in, in order.
type Arrivals = Arc<Mutex<Vec<Instant>>>;

fn arrivals(seen: &Arrivals) -> Vec<Instant> {
    seen.lock().map(|seen| seen.clone()).unwrap_or_default()
}

/// A push service that takes every push (201) and records when; its endpoint.
async fn stand_in(seen: Arrivals) -> Result<String> {
    let app = axum::Router::new().route(
        "/push/bench",
        axum::routing::post(move || {
            let seen = seen.clone();
            async move {
                if let Ok(mut seen) = seen.lock() {
                    seen.push(Instant::now());
                }
                axum::http::StatusCode::CREATED
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|err| BenchError::Unexpected(format!("the push stand-in: {err}")))?;
    let at = listener
        .local_addr()
        .map_err(|err| BenchError::Unexpected(format!("the push stand-in: {err}")))?;
    tokio::spawn(async move { axum::serve(listener, app).await });
    Ok(format!("http://{at}/push/bench"))
}

/// Waits until `count` pushes arrived, or `limit` passed.
async fn until(seen: &Arrivals, count: usize, limit: Duration) {
    let deadline = Instant::now() + limit;
    while arrivals(seen).len() < count && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

pub async fn web_push(binary: &Path, work_dir: &Path, counts: &Counts) -> Vec<Figure> {
    match measure(binary, &work_dir.join("web-push"), counts).await {
        Ok(figures) => figures,
        Err(err) => vec![Figure::missing(
            GROUP,
            "pause -> push",
            "ms",
            err.to_string(),
        )],
    }
}

async fn measure(binary: &Path, dir: &Path, counts: &Counts) -> Result<Vec<Figure>> {
    let seen: Arrivals = Arc::default();
    let endpoint = stand_in(seen.clone()).await?;
    let config = dir.join("config");
    std::fs::create_dir_all(&config)
        .map_err(|err| BenchError::Unexpected(format!("{}: {err}", config.display())))?;
    let file = config.join("notifications.toml");
    std::fs::write(
        &file,
        "[[channels]]\nname = \"devices\"\nkind = \"web_push\"\n",
    )
    .map_err(|err| BenchError::Unexpected(format!("writing {}: {err}", file.display())))?;
    let args = [
        "--notifications".to_owned(),
        file.display().to_string(),
        "--public-url".to_owned(),
        "http://127.0.0.1".to_owned(),
        "--push-allow".to_owned(),
        "127.0.0.1/32".to_owned(),
    ];
    let server =
        ServerProcess::start_with_args(binary, &dir.join("data"), Some(AGENTS), &args).await?;
    let http = pooled_http();
    let enrolled = http
        .post(format!("{}/api/push/subscriptions", server.base))
        .header("content-type", "application/json")
        .body(
            json!({"device": "bench", "subscription": {"endpoint": endpoint,
                "keys": {"p256dh": P256DH, "auth": AUTH}}})
            .to_string(),
        )
        .send()
        .await
        .map_err(|err| BenchError::Unexpected(format!("enrolling the device: {err}")))?;
    if enrolled.status().as_u16() != 201 {
        return Err(BenchError::Unexpected(format!(
            "enrolling the device: HTTP {}",
            enrolled.status()
        )));
    }
    let client = Arc::new(A2aClient::new(http, server.endpoint("default", "demo")));
    let mut errors = Vec::new();

    let pending = counts.load_large;
    progress(format_args!("web push: {pending} batches paused at once"));
    let mut handles = Vec::with_capacity(pending);
    for _ in 0..pending {
        let client = client.clone();
        handles.push(tokio::spawn(async move { scenario::pause(&client).await }));
    }
    let mut held = 0;
    for handle in handles {
        match handle.await {
            Ok(Ok(_)) => held += 1,
            Ok(Err(err)) => errors.push(err.to_string()),
            Err(err) => errors.push(err.to_string()),
        }
    }
    until(&seen, held, PHASE_LIMIT).await;
    if arrivals(&seen).len() < held {
        errors.push(format!(
            "{} of the {held} paused batches were pushed",
            arrivals(&seen).len()
        ));
    }

    let sequential = counts.latency_chats;
    progress(format_args!(
        "web push: {sequential} batches one at a time, {pending} pending"
    ));
    let mut from_pause = Vec::new();
    for _ in 0..sequential {
        let before = arrivals(&seen).len();
        let sent = Instant::now();
        match scenario::pause(&client).await {
            Ok((pause_ms, _)) => {
                let paused_at = sent + Duration::from_secs_f64(pause_ms / 1000.0);
                until(&seen, before + 1, Duration::from_secs(10)).await;
                match arrivals(&seen).get(before) {
                    Some(at) => from_pause.push(ms(paused_at, *at)),
                    None => errors.push("a paused batch was never pushed".to_owned()),
                }
            }
            Err(err) => errors.push(err.to_string()),
        }
    }
    server.stop().await?;
    Ok(vec![
        Figure::samples(
            GROUP,
            &format!("pause -> push, {pending} pending"),
            "ms",
            &from_pause,
        )
        .with_note(
            "the client's input-required event -> the push at the stand-in: the outbox's \
                 wake (5 ms settle), claim, the batch's and the person's reads, the devices' \
                 read, the encryption (RFC 8291) and the VAPID JWT, the POST",
        ),
        errors_figure(GROUP, "errors", &errors),
    ])
}
