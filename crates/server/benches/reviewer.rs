//! Bench: the latency a first reviewer adds to a call that would wait for a person, over a
//! local endpoint. The runner asks the reviewer between screening a turn's calls and the commit
//! that records them, one call at a time, so a review's whole duration is what it adds before
//! the call runs (approved) or its card shows (asked): measured here as `Reviewer::review`,
//! the server's own code, against an HTTP endpoint and an OpenAI-compatible model served on
//! loopback (answering at once, so the figure is Signoff's side and the loopback round trip),
//! and a command (`/bin/sh` echoing an answer: mostly the process's start). Median and p90 of
//! each. Run with `cargo bench -p signoff-server --bench reviewer` (`-- --rounds N`).

#![allow(clippy::print_stdout, clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::Instant;

use axum::routing::post;
use axum::{Json, Router};
use serde_json::{json, Value};
use signoff_server::agent::config::{ReviewerKind, ReviewerMode, ReviewerSpec};
use signoff_server::agent::model::ChatMessage;
use signoff_server::agent::reviewer::{ReviewRequest, Reviewer};

const ROUNDS: usize = 1000;
const WARM_UP: usize = 50;

const ANSWER: &str =
    r#"{"outcome":"approve","risk":"low","reason":"it writes the note asked for"}"#;

fn spec(kind: ReviewerKind) -> ReviewerSpec {
    ReviewerSpec {
        kind,
        mode: ReviewerMode::Live,
        timeout: Some("5s".into()),
        base_url: None,
        model: None,
        api_key_env: None,
        url: None,
        command: None,
    }
}

fn quantile(samples: &mut [f64], q: f64) -> f64 {
    samples.sort_by(|a, b| a.total_cmp(b));
    let index = ((samples.len() as f64 - 1.0) * q).round() as usize;
    samples[index]
}

fn main() {
    let mut args = std::env::args().skip(1);
    let mut rounds = ROUNDS;
    while let Some(arg) = args.next() {
        if arg == "--rounds" {
            rounds = args.next().and_then(|n| n.parse().ok()).unwrap();
        }
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(bench(rounds));
}

async fn bench(rounds: usize) {
    let app = Router::new()
        .route(
            "/review",
            post(|Json(_): Json<Value>| async {
                Json(serde_json::from_str::<Value>(ANSWER).unwrap())
            }),
        )
        .route(
            "/v1/chat/completions",
            post(|Json(_): Json<Value>| async {
                let chunk = json!({"choices": [{"index": 0, "delta": {"content": ANSWER}}]});
                (
                    [("content-type", "text/event-stream")],
                    format!("data: {chunk}\n\ndata: [DONE]\n\n"),
                )
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });

    let mut http = spec(ReviewerKind::Http);
    http.url = Some(format!("{base}/review"));
    let mut model = spec(ReviewerKind::Model);
    model.base_url = Some(format!("{base}/v1"));
    model.model = Some("reviewer".into());
    let mut command = spec(ReviewerKind::Command);
    command.command = Some(vec![
        "/bin/sh".into(),
        "-c".into(),
        format!("cat >/dev/null; echo '{ANSWER}'"),
    ]);

    let transcript = vec![ChatMessage::User {
        text: "write notes.txt: the plan for Monday".into(),
        message_id: None,
        asked: None,
    }];
    let args = json!({"path": "notes.txt", "content": "the plan for Monday"});
    let request = ReviewRequest {
        agent: "default/demo",
        task_id: "t-bench",
        requester: "alice",
        call_id: "call_1",
        tool: "write_file",
        description: "Writes a file in the sandbox",
        args: &args,
        waits_because: "The tool requires approval",
        transcript: &transcript,
    };
    println!(
        "reviewer: the latency one review adds to a call that would wait for a person, over a \
         local endpoint ({rounds} reviews each, one at a time)"
    );
    println!("  {:<34} {:>12} {:>12}", "", "median ms", "p90 ms");
    for (name, spec, count) in [
        ("http endpoint (loopback)", http, rounds),
        ("model, OpenAI-compatible (loopback)", model, rounds),
        ("command (/bin/sh)", command, rounds.min(300)),
    ] {
        let reviewer = Reviewer::from_spec(&spec, "bench", Path::new("/")).unwrap();
        let mut samples = Vec::with_capacity(count);
        for round in 0..WARM_UP + count {
            let started = Instant::now();
            let review = reviewer.review(&request).await;
            let took = started.elapsed().as_secs_f64() * 1000.0;
            assert_eq!(review.outcome.as_str(), "approve", "{review:?}");
            if round >= WARM_UP {
                samples.push(took);
            }
        }
        let median = quantile(&mut samples, 0.5);
        let p90 = quantile(&mut samples, 0.9);
        println!("  {name:<34} {median:>12.3} {p90:>12.3}");
    }
    println!(
        "  (a call no reviewer sees, one a rule, grant or policy settled, gets none of this: \
         the reviewer is not asked)"
    );
}
