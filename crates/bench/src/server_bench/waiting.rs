//! The server's memory per waiting approval: RSS and anonymous RSS of a fresh server before
//! and after it holds `waiting_small` (10,000) and then `waiting_large` (100,000) paused chats,
//! each waiting on one batch (two held calls: write a.txt, delete b.txt), divided by how many
//! wait. Nobody decides them; the server stops with them all waiting.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use super::{client_for, rss_readings, Counts};
use crate::client::A2aClient;
use crate::error::{BenchError, Result};
use crate::progress;
use crate::scenario;
use crate::server::ServerProcess;
use crate::stats::{Figure, Summary};

const GROUP: &str = "memory per waiting approval (fresh server)";

/// Approve cycles before the first reading: every pool and cache the first chats open, so the
/// readings after hold only what waiting adds.
const WARM_UP: usize = 20;

/// The longest the pausing of one level may take (100,000 chats take minutes over A2A on two
/// cores); past it the level reports the chats it holds.
const LEVEL_LIMIT: Duration = Duration::from_secs(20 * 60);

/// One reading of the server: VmRSS (the median of a few) and RssAnon, in bytes.
#[derive(Debug, Clone, Copy)]
struct Reading {
    rss: f64,
    anon: f64,
}

impl Reading {
    async fn of(server: &ServerProcess) -> Result<Reading> {
        let rss = Summary::of(&rss_readings(server).await)
            .map(|s| s.median * 1024.0 * 1024.0)
            .ok_or_else(|| BenchError::Server("could not read the server's VmRSS".into()))?;
        let (anon, _) = server.rss_anon_file_bytes()?;
        Ok(Reading {
            rss,
            anon: anon as f64,
        })
    }
}

pub async fn waiting(binary: &Path, work_dir: &Path, counts: &Counts) -> Vec<Figure> {
    match measure(binary, &work_dir.join("waiting"), counts).await {
        Ok(figures) => figures,
        Err(err) => vec![Figure::missing(
            GROUP,
            "memory per waiting approval",
            "bytes",
            err.to_string(),
        )],
    }
}

async fn measure(binary: &Path, data_dir: &Path, counts: &Counts) -> Result<Vec<Figure>> {
    let server = ServerProcess::start(binary, data_dir, None).await?;
    let outcome = levels(&server, counts).await;
    let _ = server.stop().await;
    outcome
}

/// Warms the server up, reads it, then pauses chats up to each level and reads it again.
async fn levels(server: &ServerProcess, counts: &Counts) -> Result<Vec<Figure>> {
    // The prompt reads c.txt; give it something to read.
    let c_txt = server.sandbox().join("c.txt");
    std::fs::write(&c_txt, "hello from c.txt\n").map_err(|err| BenchError::io(&c_txt, err))?;
    let client = client_for(server, "demo");
    for _ in 0..WARM_UP {
        let (_, paused) = scenario::pause(&client).await?;
        scenario::approve(&client, &paused).await?;
    }
    let before = Reading::of(server).await?;
    let mut figures = vec![
        Figure::value(GROUP, "RSS before", "MiB", mib(before.rss)).with_note(format!(
            "after {WARM_UP} approve cycles, none waiting; anonymous {:.1} MiB",
            mib(before.anon)
        )),
    ];
    let (mut waiting, mut errors, mut first_error) = (0, 0, None);
    for level in [counts.waiting_small, counts.waiting_large] {
        let more = level.saturating_sub(waiting);
        progress(format_args!(
            "waiting: pausing {more} more chats to {level} waiting ({} at a time)",
            counts.footprint_workers
        ));
        let started = Instant::now();
        let (paused, failed, first) = pause_many(&client, more, counts.footprint_workers).await;
        let secs = started.elapsed().as_secs_f64();
        waiting += paused;
        errors += failed;
        first_error = first_error.or(first);
        let after = Reading::of(server).await?;
        figures.extend(level_figures(before, after, waiting, server.db_bytes()));
        figures.push(
            Figure::value(
                GROUP,
                &format!("{waiting} waiting: pausing rate"),
                "chats/s",
                paused as f64 / secs,
            )
            .with_note(format!(
                "{paused} chats prompt -> input-required, {} clients, {secs:.0} s",
                counts.footprint_workers
            )),
        );
    }
    if errors > 0 {
        figures.push(
            Figure::value(GROUP, "errors", "count", errors as f64)
                .with_note(format!("first: {}", first_error.unwrap_or_default())),
        );
    }
    Ok(figures)
}

/// `count` chats paused by `workers` clients at a time; how many paused, how many failed, and
/// the first failure.
async fn pause_many(
    client: &Arc<A2aClient>,
    count: usize,
    workers: usize,
) -> (usize, usize, Option<String>) {
    let job_client = client.clone();
    let outcomes = scenario::run_pool(count, workers, Instant::now() + LEVEL_LIMIT, move |_| {
        let client = job_client.clone();
        // Only the count is kept: 100,000 task ids would be the bench's memory, not the
        // server's, but the bench is a process of its own either way.
        async move { scenario::pause(&client).await.map(|_| ()) }
    })
    .await;
    let (paused, failed, first) = scenario::split(outcomes);
    (paused.len(), failed, first)
}

fn mib(bytes: f64) -> f64 {
    bytes / (1024.0 * 1024.0)
}

/// The figures of one level: what `waiting` paused chats add to `before`, per chat.
fn level_figures(before: Reading, after: Reading, waiting: usize, db_bytes: u64) -> Vec<Figure> {
    let per = |from: f64, to: f64| (to - from) / waiting.max(1) as f64;
    vec![
        Figure::value(
            GROUP,
            &format!("{waiting} waiting: RSS per waiting approval"),
            "bytes",
            per(before.rss, after.rss),
        )
        .with_note(format!(
            "(VmRSS with them waiting - before) / waiting: {:.1} -> {:.1} MiB; one batch of two \
             held calls each",
            mib(before.rss),
            mib(after.rss)
        )),
        Figure::value(
            GROUP,
            &format!("{waiting} waiting: anonymous RSS per waiting approval"),
            "bytes",
            per(before.anon, after.anon),
        )
        .with_note(format!(
            "the same of RssAnon (heap, stacks; no file pages): {:.1} -> {:.1} MiB",
            mib(before.anon),
            mib(after.anon)
        )),
        Figure::value(
            GROUP,
            &format!("{waiting} waiting: database per waiting approval"),
            "bytes",
            db_bytes as f64 / waiting.max(1) as f64,
        )
        .with_note("signoff.db + WAL on disk / waiting (the warm-up's chats included)"),
    ]
}

#[cfg(test)]
mod tests {
    use super::{level_figures, Reading};

    #[test]
    fn a_level_divides_what_waiting_added_by_how_many_wait() {
        let before = Reading {
            rss: 10_000_000.0,
            anon: 4_000_000.0,
        };
        let after = Reading {
            rss: 30_000_000.0,
            anon: 14_000_000.0,
        };
        let figures = level_figures(before, after, 10_000, 50_000_000);
        let values: Vec<Option<f64>> = figures
            .iter()
            .map(|figure| figure.summary.map(|s| s.median))
            .collect();
        assert_eq!(values, vec![Some(2_000.0), Some(1_000.0), Some(5_000.0)]);
    }
}
