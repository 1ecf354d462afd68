//! The server figures: time to pause and to resume, `message/send`
//! throughput, footprint with 10,000 paused tasks, 1,000 concurrent approve cycles (also with
//! a two-person rule and a quorum of two: `approvers`), and the time to pause behind real
//! network hops (an OpenAI-compatible stub, an MCP server on stdio), and what a coding agent
//! over ACP costs (`acp`), and the memory per waiting approval at 10,000 and 100,000
//! (`waiting`).

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use crate::client::A2aClient;
use crate::error::{BenchError, Result};
use crate::pin::Pinned;
use crate::progress;
use crate::scenario;
use crate::server::ServerProcess;
use crate::stats::{percentile, Figure, Summary};

/// How many of everything; the counts by default, scaled down for a quick look.
#[derive(Debug, Clone, Copy)]
pub struct Counts {
    /// Sequential chats for time to pause and resume (the issue: at least 200).
    pub latency_chats: usize,
    pub throughput_clients: [usize; 3],
    /// Seconds of each throughput level before measuring, then the measured windows.
    pub throughput_warmup: Duration,
    pub throughput_window: Duration,
    pub throughput_windows: usize,
    pub footprint_tasks: usize,
    /// Concurrent clients that pause and decide the footprint tasks.
    pub footprint_workers: usize,
    pub load_small: usize,
    pub load_large: usize,
    /// Sequential chats for each real-endpoint figure.
    pub endpoint_chats: usize,
    /// Chats of the bench's ACP agent, how many at a time, and the idle live sessions whose
    /// memory is measured.
    pub acp_chats: usize,
    pub acp_at_once: usize,
    pub acp_sessions: usize,
    /// Paused chats a fresh server holds for its memory per waiting approval, in two levels.
    pub waiting_small: usize,
    pub waiting_large: usize,
}

impl Counts {
    pub fn scaled(scale: f64) -> Counts {
        let n = |full: usize, floor: usize| ((full as f64 * scale).round() as usize).max(floor);
        Counts {
            latency_chats: n(200, 10),
            throughput_clients: [1, 16, 64],
            throughput_warmup: Duration::from_secs(1),
            throughput_window: Duration::from_secs(1),
            throughput_windows: n(5, 2),
            footprint_tasks: n(10_000, 100),
            footprint_workers: 32,
            load_small: n(100, 10),
            load_large: n(1_000, 20),
            endpoint_chats: n(200, 10),
            acp_chats: n(200, 20),
            acp_at_once: 20,
            acp_sessions: n(50, 10),
            waiting_small: n(10_000, 100),
            waiting_large: n(100_000, 1_000),
        }
    }
}

/// The longest any one phase may take; past it the phase stops and reports what it has.
const PHASE_LIMIT: Duration = Duration::from_secs(150);

fn client_for(server: &ServerProcess, agent: &str) -> Arc<A2aClient> {
    Arc::new(A2aClient::new(
        pooled_http(),
        server.endpoint("default", agent),
    ))
}

/// One connection pool per phase (or per person), as a fleet of browsers would have.
fn pooled_http() -> reqwest::Client {
    reqwest::Client::builder()
        .pool_idle_timeout(Duration::from_secs(30))
        .build()
        .unwrap_or_default()
}

/// Time to pause and time to resume, one chat at a time, with client and server on separate
/// CPUs where there are two.
pub async fn latency(server: &ServerProcess, counts: &Counts) -> Vec<Figure> {
    const GROUP: &str = "latency (one chat at a time)";
    let pinned = Pinned::apart(server.pid);
    let placement = match &pinned {
        Ok(pinned) => pinned.note.clone(),
        Err(why) => format!("not pinned: {why}"),
    };
    let client = client_for(server, "demo");
    progress(format_args!(
        "latency: {} chats to their pause, then their approvals",
        counts.latency_chats
    ));
    // Warm-up: connections, SQLite pages, allocator.
    for _ in 0..10 {
        if let Ok((_, paused)) = scenario::pause(&client).await {
            let _ = scenario::approve(&client, &paused).await;
        }
    }
    let mut pause_ms = Vec::new();
    let mut paused = Vec::new();
    let mut errors = Vec::new();
    let deadline = Instant::now() + PHASE_LIMIT / 2;
    for _ in 0..counts.latency_chats {
        if Instant::now() > deadline {
            errors.push("stopped at the phase's time limit".to_owned());
            break;
        }
        match scenario::pause(&client).await {
            Ok((ms, one)) => {
                pause_ms.push(ms);
                paused.push(one);
            }
            Err(err) => errors.push(err.to_string()),
        }
    }
    let mut first_ms = Vec::new();
    let mut completed_ms = Vec::new();
    let mut chunks = Vec::new();
    for one in &paused {
        match scenario::approve(&client, one).await {
            Ok(resumed) => {
                first_ms.push(resumed.first_ms);
                completed_ms.push(resumed.completed_ms);
                chunks.push(resumed.text_chunks as f64);
            }
            Err(err) => errors.push(err.to_string()),
        }
    }
    drop(client);
    drop(pinned);
    let chunks = Summary::of(&chunks).map_or(0.0, |s| s.median);
    let mut figures = vec![
        Figure::samples(GROUP, "time to pause", "ms", &pause_ms).with_note(
            "POST message/stream (write a.txt, delete b.txt, read c.txt) -> final input-required",
        ),
        Figure::samples(GROUP, "time to resume: first event", "ms", &first_ms).with_note(format!(
            "POST of the approve decision -> its stream's first event (working); {placement}"
        )),
        Figure::samples(GROUP, "time to resume: completed", "ms", &completed_ms).with_note(
            format!(
                "POST of the approve decision -> final completed; includes the scripted model's \
                 15 ms pause between its {chunks:.0} answer chunks"
            ),
        ),
    ];
    if !errors.is_empty() {
        figures.push(errors_figure(GROUP, "errors", &errors));
    }
    figures
}

pub(crate) fn errors_figure(group: &str, name: &str, errors: &[String]) -> Figure {
    let first = errors.first().cloned().unwrap_or_default();
    Figure::value(group, name, "count", errors.len() as f64).with_note(format!("first: {first}"))
}

/// `message/send` plain chats per second with 1, 16 and 64 concurrent clients.
pub async fn throughput(server: &ServerProcess, counts: &Counts) -> Vec<Figure> {
    const GROUP: &str = "throughput (message/send, plain chat)";
    let mut figures = Vec::new();
    for clients in counts.throughput_clients {
        progress(format_args!("throughput: {clients} concurrent clients"));
        let client = client_for(server, "demo");
        let start = Instant::now();
        let measure_from = start + counts.throughput_warmup;
        let end = measure_from + counts.throughput_window * counts.throughput_windows as u32;
        let cpu_before = server.cpu_seconds().ok();
        let mut handles = Vec::new();
        for _ in 0..clients {
            let client = client.clone();
            handles.push(tokio::spawn(async move {
                let mut done: Vec<(Instant, f64)> = Vec::new();
                let mut errors: Vec<String> = Vec::new();
                while Instant::now() < end {
                    match scenario::plain(&client).await {
                        Ok(ms) => done.push((Instant::now(), ms)),
                        Err(err) => errors.push(err.to_string()),
                    }
                }
                (done, errors)
            }));
        }
        let mut done = Vec::new();
        let mut errors = Vec::new();
        for handle in handles {
            match handle.await {
                Ok((one_done, one_errors)) => {
                    done.extend(one_done);
                    errors.extend(one_errors);
                }
                Err(err) => errors.push(err.to_string()),
            }
        }
        let cpu =
            cpu_before.and_then(|before| server.cpu_seconds().ok().map(|after| after - before));
        let window = counts.throughput_window.as_secs_f64();
        let rates: Vec<f64> = (0..counts.throughput_windows)
            .map(|index| {
                let from = measure_from + counts.throughput_window * index as u32;
                let to = from + counts.throughput_window;
                let count = done
                    .iter()
                    .filter(|(at, _)| *at >= from && *at < to)
                    .count();
                count as f64 / window
            })
            .collect();
        let latencies: Vec<f64> = done
            .iter()
            .filter(|(at, _)| *at >= measure_from)
            .map(|(_, ms)| *ms)
            .collect();
        let elapsed = (Instant::now() - start).as_secs_f64();
        let mut note = format!(
            "chats completed per {window:.0} s window, {} windows after {:.0} s of warm-up",
            counts.throughput_windows,
            counts.throughput_warmup.as_secs_f64()
        );
        if let Some(cpu) = cpu {
            note.push_str(&format!(
                "; server CPU {:.0}% of one core",
                100.0 * cpu / elapsed
            ));
        }
        figures.push(
            Figure::samples(GROUP, &format!("{clients} client(s)"), "chats/s", &rates)
                .with_note(note),
        );
        figures.push(
            Figure::samples(
                GROUP,
                &format!("{clients} client(s): latency"),
                "ms",
                &latencies,
            )
            .with_note("one message/send, POST to its answer"),
        );
        if !errors.is_empty() {
            figures.push(errors_figure(
                GROUP,
                &format!("{clients} client(s): errors"),
                &errors,
            ));
        }
    }
    figures
}

/// N chats at once, each going through one full approve cycle.
async fn load_once(
    server: &ServerProcess,
    chats: usize,
) -> (Vec<f64>, Vec<String>, Option<f64>, Duration) {
    let client = client_for(server, "demo");
    let cpu_before = server.cpu_seconds().ok();
    let (e2e, errors, wall) = approve_cycles(&[client], chats).await;
    let cpu = cpu_before.and_then(|before| server.cpu_seconds().ok().map(|after| after - before));
    (e2e, errors, cpu, wall)
}

/// `chats` approve cycles started together: chat `i` pauses through `clients[i % n]` and is
/// approved through the next client (the same one when there is one), as a load balancer
/// without sticky sessions spreads them. Each cycle's milliseconds, the errors, and the wall
/// time.
pub async fn approve_cycles(
    clients: &[Arc<A2aClient>],
    chats: usize,
) -> (Vec<f64>, Vec<String>, Duration) {
    let barrier = Arc::new(tokio::sync::Barrier::new(chats));
    let started = Instant::now();
    let mut handles = Vec::with_capacity(chats);
    for chat in 0..chats {
        let prompt_on = clients[chat % clients.len()].clone();
        let approve_on = clients[(chat + 1) % clients.len()].clone();
        let barrier = barrier.clone();
        handles.push(tokio::spawn(async move {
            barrier.wait().await;
            let start = Instant::now();
            let cycle = async {
                let (_, paused) = scenario::pause(&prompt_on).await?;
                scenario::approve(&approve_on, &paused).await?;
                Ok::<f64, BenchError>(scenario::ms(start, Instant::now()))
            };
            match tokio::time::timeout(PHASE_LIMIT, cycle).await {
                Ok(outcome) => outcome,
                Err(_) => Err(BenchError::Timeout(format!(
                    "a cycle took longer than {PHASE_LIMIT:?}"
                ))),
            }
        }));
    }
    let mut e2e = Vec::with_capacity(chats);
    let mut errors = Vec::new();
    for handle in handles {
        match handle.await {
            Ok(Ok(ms)) => e2e.push(ms),
            Ok(Err(err)) => errors.push(err.to_string()),
            Err(err) => errors.push(err.to_string()),
        }
    }
    (e2e, errors, Instant::now() - started)
}

/// 100 and then 1,000 concurrent approve cycles.
pub async fn load(server: &ServerProcess, counts: &Counts) -> Vec<Figure> {
    const GROUP: &str = "load (concurrent approve cycles)";
    let mut figures = Vec::new();
    let mut p99s = Vec::new();
    for chats in [counts.load_small, counts.load_large] {
        progress(format_args!("load: {chats} concurrent approve cycles"));
        let (e2e, errors, cpu, wall) = load_once(server, chats).await;
        let mut sorted = e2e.clone();
        sorted.sort_by(f64::total_cmp);
        if !sorted.is_empty() {
            p99s.push((chats, percentile(&sorted, 0.99)));
        }
        figures.push(
            Figure::samples(GROUP, &format!("{chats} chats: end-to-end"), "ms", &e2e).with_note(
                format!(
                    "all start together; POST of the prompt -> approve -> completed; wall {:.1} s",
                    wall.as_secs_f64()
                ),
            ),
        );
        let mut errors_fig = Figure::value(
            GROUP,
            &format!("{chats} chats: errors"),
            "count",
            errors.len() as f64,
        );
        if let Some(first) = errors.first() {
            errors_fig = errors_fig.with_note(format!("first: {first}"));
        }
        figures.push(errors_fig);
        match cpu {
            Some(cpu) => figures.push(
                Figure::value(GROUP, &format!("{chats} chats: server CPU"), "s", cpu).with_note(
                    format!(
                        "user+system from /proc; {:.2} ms per chat",
                        1000.0 * cpu / chats as f64
                    ),
                ),
            ),
            None => figures.push(Figure::missing(
                GROUP,
                &format!("{chats} chats: server CPU"),
                "s",
                "could not read /proc",
            )),
        }
    }
    if let [(small, p99_small), (large, p99_large)] = p99s[..] {
        figures.push(
            Figure::value(
                GROUP,
                &format!("p99 growth {small} -> {large} chats"),
                "x",
                p99_large / p99_small,
            )
            .with_note(format!(
                "p99 {p99_small:.0} ms -> {p99_large:.0} ms for {:.0}x the chats",
                large as f64 / small as f64
            )),
        );
    }
    figures
}

/// Several readings of the server's RSS, a moment apart, after a short settle.
async fn rss_readings(server: &ServerProcess) -> Vec<f64> {
    tokio::time::sleep(Duration::from_millis(500)).await;
    let mut readings = Vec::new();
    for _ in 0..5 {
        if let Ok(bytes) = server.rss_bytes() {
            readings.push(bytes as f64 / (1024.0 * 1024.0));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    readings
}

/// RSS idle, with 10,000 paused tasks, and after deciding them, on a fresh server.
pub async fn footprint(binary: &Path, work_dir: &Path, counts: &Counts) -> Result<Vec<Figure>> {
    const GROUP: &str = "footprint (fresh server)";
    let server = ServerProcess::start(binary, &work_dir.join("footprint"), None).await?;
    let client = client_for(&server, "demo");
    let idle = rss_readings(&server).await;
    let tasks = counts.footprint_tasks;
    progress(format_args!(
        "footprint: pausing {tasks} chats ({} at a time)",
        counts.footprint_workers
    ));
    let pausing = Instant::now();
    let job_client = client.clone();
    let outcomes = scenario::run_pool(
        tasks,
        counts.footprint_workers,
        pausing + PHASE_LIMIT,
        move |_| {
            let client = job_client.clone();
            async move { scenario::pause(&client).await.map(|(_, paused)| paused) }
        },
    )
    .await;
    let pause_secs = pausing.elapsed().as_secs_f64();
    let (paused, pause_errors, first_pause_error) = scenario::split(outcomes);
    let with_paused = rss_readings(&server).await;
    let db_paused = server.db_bytes();
    progress(format_args!(
        "footprint: approving {} paused chats",
        paused.len()
    ));
    let deciding = Instant::now();
    let paused = Arc::new(paused);
    let job_client = client.clone();
    let job_paused = paused.clone();
    let outcomes = scenario::run_pool(
        paused.len(),
        counts.footprint_workers,
        deciding + PHASE_LIMIT,
        move |index| {
            let client = job_client.clone();
            let paused = job_paused.clone();
            async move { scenario::approve(&client, &paused[index]).await }
        },
    )
    .await;
    let decide_secs = deciding.elapsed().as_secs_f64();
    let (decided, decide_errors, first_decide_error) = scenario::split(outcomes);
    let after_decided = rss_readings(&server).await;
    let peak = server.peak_rss_bytes().ok();
    server.stop().await?;

    let median = |readings: &[f64]| Summary::of(readings).map(|s| s.median);
    let mut figures = vec![
        Figure::samples(GROUP, "RSS idle", "MiB", &idle)
            .with_note("after start, before any chat; 5 readings of VmRSS"),
        Figure::samples(
            GROUP,
            &format!("RSS with {} tasks paused", paused.len()),
            "MiB",
            &with_paused,
        )
        .with_note("the tasks stay input-required; 5 readings"),
        Figure::samples(
            GROUP,
            &format!("RSS after {} decided", decided.len()),
            "MiB",
            &after_decided,
        )
        .with_note(format!(
            "every paused task approved and completed; peak RSS (VmHWM) {:.1} MiB",
            peak.map_or(f64::NAN, |bytes| bytes as f64 / (1024.0 * 1024.0))
        )),
    ];
    if let (Some(idle), Some(paused_rss)) = (median(&idle), median(&with_paused)) {
        if !paused.is_empty() {
            figures.push(
                Figure::value(
                    GROUP,
                    "RSS per paused task",
                    "bytes",
                    (paused_rss - idle) * 1024.0 * 1024.0 / paused.len() as f64,
                )
                .with_note("(RSS with them paused - RSS idle) / paused tasks"),
            );
            figures.push(
                Figure::value(
                    GROUP,
                    "database per paused task",
                    "bytes",
                    db_paused as f64 / paused.len() as f64,
                )
                .with_note("signoff.db + WAL on disk / paused tasks"),
            );
        }
    }
    figures.push(
        Figure::value(
            GROUP,
            &format!("pausing rate ({} clients)", counts.footprint_workers),
            "chats/s",
            paused.len() as f64 / pause_secs,
        )
        .with_note("how fast the paused tasks were made: prompt -> input-required"),
    );
    figures.push(
        Figure::value(
            GROUP,
            &format!("approving rate ({} clients)", counts.footprint_workers),
            "chats/s",
            decided.len() as f64 / decide_secs,
        )
        .with_note("approve -> completed"),
    );
    if pause_errors + decide_errors > 0 {
        figures.push(
            Figure::value(
                GROUP,
                "errors",
                "count",
                (pause_errors + decide_errors) as f64,
            )
            .with_note(format!(
                "first: {}",
                first_pause_error.or(first_decide_error).unwrap_or_default()
            )),
        );
    }
    Ok(figures)
}

mod acp;
mod approvers;
mod endpoints;
mod gateway;
mod idle;
mod reach;
mod slack;
mod waiting;
mod web_push;
pub use acp::acp;
pub use approvers::approvers;
pub use endpoints::endpoints;
pub use gateway::gateway;
pub use idle::idle_deployed;
pub use reach::reach;
pub use slack::slack;
pub use waiting::waiting;
pub use web_push::web_push;
