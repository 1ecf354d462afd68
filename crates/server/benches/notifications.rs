//! Bench: what notifications cost. (a) The time to pause a chat (`message/send` of a prompt with
//! two calls that need approval, to its `input-required` answer) and to approve it over REST,
//! one chat at a time, against a server with neither a channel nor a push config and one with a
//! webhook channel whose chats each set an A2A push config in their `message/send` (the outbox
//! rows, the webhook's and the push's, are written in the pause's and the decision's own
//! commits), interleaved so that both see the same machine; median and p90 of each, and the
//! difference. Each round waits until the receiver has taken its notifications, so no request
//! is timed while a sender works beside it. (b) How many notifications one server delivers per second to a local receiver
//! with 1,000 paused batches waiting at once (each a webhook and a push): the receiver holds its
//! answers while the chats pause, then lets them all through, and the time runs until it has
//! taken the last. On SQLite, and on PostgreSQL too when
//! `SIGNOFF_TEST_POSTGRES_URL` names one (a fresh database each, dropped at the end). Run with
//! `cargo bench -p signoff-server --bench notifications` (`-- --chats N --pending N` to change
//! the counts).

#![allow(clippy::print_stdout, clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use signoff_server::Config;
use sqlx::{Connection, Executor};

/// Chats paused (and approved) on each server for (a), after `WARM_UP` of each.
const CHATS: usize = 300;
const WARM_UP: usize = 30;
/// Paused batches waiting at once for (b).
const PENDING: usize = 1000;
/// Clients pausing the chats of (b) at once.
const PAUSERS: usize = 16;
const PROMPT: &str = "write a.txt: x and delete b.txt and read c.txt";
const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

fn main() {
    let mut args = std::env::args().skip(1);
    let (mut chats, mut pending) = (CHATS, PENDING);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--chats" => chats = args.next().and_then(|n| n.parse().ok()).unwrap(),
            "--pending" => pending = args.next().and_then(|n| n.parse().ok()).unwrap(),
            _ => {} // cargo bench passes --bench
        }
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        bench(None, chats, pending).await;
        if let Ok(admin) = std::env::var("SIGNOFF_TEST_POSTGRES_URL") {
            bench(Some(&admin), chats, pending).await;
        }
    });
}

/// The receiver: answers 204 to every POST once its gate is open, and counts them.
struct Receiver {
    url: String,
    taken: Arc<AtomicUsize>,
    gate: tokio::sync::watch::Sender<bool>,
}

impl Receiver {
    /// Waits until the receiver has taken `count` notifications in all: what the servers sent
    /// is delivered before the next request is timed, so no request is timed while a sender
    /// works beside it.
    async fn until_taken(&self, count: usize) {
        let started = Instant::now();
        while self.taken.load(Ordering::SeqCst) < count {
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "notifications lost"
            );
            tokio::time::sleep(Duration::from_micros(200)).await;
        }
    }
}

async fn receiver(open: bool) -> Receiver {
    let taken = Arc::new(AtomicUsize::new(0));
    let (gate, opened) = tokio::sync::watch::channel(open);
    let counter = taken.clone();
    let app = axum::Router::new().route(
        "/hook",
        axum::routing::post(move |_body: axum::body::Bytes| {
            let (counter, mut opened) = (counter.clone(), opened.clone());
            async move {
                let _ = opened.wait_for(|open| *open).await;
                counter.fetch_add(1, Ordering::SeqCst);
                axum::http::StatusCode::NO_CONTENT
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    Receiver { url, taken, gate }
}

/// A server in-process on port 0 with a fresh database (in `data`, or a new one on the
/// PostgreSQL of `admin`), with a webhook channel to `hook` if given (and push notifications
/// allowed to this host's receivers); its base URL.
async fn serve(data: &Path, admin: Option<&str>, hook: Option<&str>) -> String {
    std::fs::create_dir_all(data).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let mut config = Config::new(data);
    config.public_url = Some(base.clone());
    if let Some(admin) = admin {
        config.database_url = Some(create_database(admin).await);
    }
    if let Some(url) = hook {
        config.push_allow = vec!["127.0.0.1/32".into()];
        let secret = data.join("hook.secret");
        std::fs::write(&secret, SECRET).unwrap();
        let file = data.join("notifications.toml");
        std::fs::write(
            &file,
            format!(
                "[delivery]\ntimeout = \"120s\"\n\n[[channels]]\nname = \"hook\"\nkind = \
                 \"webhook\"\nurl = \"{url}\"\nsecret_file = \"{}\"\n",
                secret.display()
            ),
        )
        .unwrap();
        config.notifications = Some(file);
    }
    std::fs::write(data.join("c.txt"), "hello\n").ok();
    tokio::spawn(signoff_server::run(
        listener,
        config,
        std::future::pending(),
    ));
    let client = reqwest::Client::new();
    for _ in 0..200 {
        if let Ok(response) = client.get(format!("{base}/healthz")).send().await {
            if response.status().is_success() {
                break;
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    base
}

/// The databases this bench made, dropped at the end.
static DATABASES: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

async fn create_database(admin: &str) -> String {
    let name = format!("signoff_bench_{}", uuid::Uuid::new_v4().simple());
    let mut connection = sqlx::PgConnection::connect(admin).await.unwrap();
    connection
        .execute(format!("CREATE DATABASE {name}").as_str())
        .await
        .unwrap();
    DATABASES.lock().unwrap().push(name.clone());
    let (server, _) = admin.split('?').next().unwrap().rsplit_once('/').unwrap();
    format!("{server}/{name}")
}

async fn drop_databases(admin: &str) {
    let names = std::mem::take(&mut *DATABASES.lock().unwrap());
    let Ok(mut connection) = sqlx::PgConnection::connect(admin).await else {
        return;
    };
    for name in names {
        let _ = connection
            .execute(format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)").as_str())
            .await;
    }
}

/// Pauses one chat with `message/send`, setting a push config to `push` if given; the
/// milliseconds it took and the task's id.
async fn pause(client: &reqwest::Client, base: &str, push: Option<&str>) -> (f64, String) {
    let mut body = json!({"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {
        "message": {"kind": "message", "messageId": uuid::Uuid::new_v4().to_string(),
                    "role": "user", "parts": [{"kind": "text", "text": PROMPT}]}}});
    if let Some(url) = push {
        body["params"]["configuration"] = json!({"pushNotificationConfig": {"url": url}});
    }
    let started = Instant::now();
    let answer: Value = client
        .post(format!("{base}/api/a2a/default/demo"))
        .json(&body)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let took = started.elapsed().as_secs_f64() * 1000.0;
    let task = &answer["result"];
    assert_eq!(task["status"]["state"], "input-required", "{answer}");
    (took, task["id"].as_str().unwrap().to_owned())
}

/// Approves `task` over REST; the milliseconds the answer took.
async fn approve(client: &reqwest::Client, base: &str, task: &str) -> f64 {
    let started = Instant::now();
    let response = client
        .post(format!("{base}/api/approvals/{task}"))
        .json(&json!({"decision_type": "approve"}))
        .send()
        .await
        .unwrap();
    let status = response.status();
    let text = response.text().await.unwrap();
    assert!(status.is_success(), "{status}: {text}");
    started.elapsed().as_secs_f64() * 1000.0
}

/// The median and the 90th percentile of `samples`.
fn spread(samples: &mut [f64]) -> (f64, f64) {
    samples.sort_by(f64::total_cmp);
    let at = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize];
    (at(0.5), at(0.9))
}

/// `signoff_notifications_queued` of `base`'s /metrics.
async fn queued(client: &reqwest::Client, base: &str) -> Option<usize> {
    let text = client
        .get(format!("{base}/metrics"))
        .send()
        .await
        .ok()?
        .text()
        .await
        .ok()?;
    text.lines()
        .find_map(|line| line.strip_prefix("signoff_notifications_queued "))
        .and_then(|n| n.trim().parse().ok())
}

async fn bench(admin: Option<&str>, chats: usize, pending: usize) {
    let backend = if admin.is_some() {
        "PostgreSQL"
    } else {
        "SQLite"
    };
    let work = tempfile::tempdir().unwrap();
    let client = reqwest::Client::new();

    // (a) Interleaved: one chat on each server in turn, then their approvals in turn.
    let hook = receiver(true).await;
    let plain = serve(&work.path().join("plain"), admin, None).await;
    let notifying = serve(&work.path().join("notifying"), admin, Some(&hook.url)).await;
    let servers = [&plain, &notifying];
    let pushes = [None, Some(hook.url.as_str())];
    let mut paused: [Vec<String>; 2] = Default::default();
    let mut pause_ms: [Vec<f64>; 2] = Default::default();
    // Each event of the notifying server is told twice: to the webhook and to the push config.
    let mut told = 0;
    for round in 0..WARM_UP + chats {
        for (index, base) in servers.iter().enumerate() {
            let (took, task) = pause(&client, base, pushes[index]).await;
            if round >= WARM_UP {
                pause_ms[index].push(took);
            }
            paused[index].push(task);
        }
        told += 2;
        hook.until_taken(told).await;
    }
    let mut decide_ms: [Vec<f64>; 2] = Default::default();
    for (round, tasks) in paused[0].iter().zip(&paused[1]).enumerate() {
        for (index, (base, task)) in servers.iter().zip([tasks.0, tasks.1]).enumerate() {
            let took = approve(&client, base, task).await;
            if round >= WARM_UP {
                decide_ms[index].push(took);
            }
        }
        told += 2;
        hook.until_taken(told).await;
    }
    println!("{backend}: {chats} chats on each server, one at a time, interleaved");
    for (what, samples) in [
        ("pause (message/send -> input-required)", &mut pause_ms),
        (
            "approve (POST /api/approvals/{task}: decided, its calls run)",
            &mut decide_ms,
        ),
    ] {
        let (without, without_p90) = spread(&mut samples[0]);
        let (with, with_p90) = spread(&mut samples[1]);
        println!("  {what}");
        println!("    neither            median {without:7.3} ms   p90 {without_p90:7.3} ms");
        println!(
            "    webhook and push   median {with:7.3} ms   p90 {with_p90:7.3} ms   \
             ({:+.3} ms median, {:+.3} ms p90)",
            with - without,
            with_p90 - without_p90
        );
    }

    // (b) `pending` batches paused while the receiver holds its answers, then let through: a
    // webhook notification and a push of each.
    let held = receiver(false).await;
    let notes = 2 * pending;
    let base = serve(&work.path().join("delivering"), admin, Some(&held.url)).await;
    let next = Arc::new(AtomicUsize::new(0));
    let mut pausers = Vec::new();
    for _ in 0..PAUSERS {
        let (client, base, next) = (client.clone(), base.clone(), next.clone());
        let push = held.url.clone();
        pausers.push(tokio::spawn(async move {
            while next.fetch_add(1, Ordering::SeqCst) < pending {
                pause(&client, &base, Some(&push)).await;
            }
        }));
    }
    for pauser in pausers {
        pauser.await.unwrap();
    }
    while queued(&client, &base).await != Some(notes) {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let started = Instant::now();
    held.gate.send_replace(true);
    while held.taken.load(Ordering::SeqCst) < notes {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let took = started.elapsed().as_secs_f64();
    while queued(&client, &base).await != Some(0) {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    println!(
        "  delivery: {pending} paused batches waiting ({notes} notifications, a webhook's and a \
         push's each), all taken by the receiver in {:.3} s: {:.0} notifications/s",
        took,
        notes as f64 / took
    );
    if let Some(admin) = admin {
        drop_databases(admin).await;
    }
}
