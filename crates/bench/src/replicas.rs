//! The approve-cycle load on one replica with SQLite, one replica on PostgreSQL, and three
//! replicas on one PostgreSQL with each chat spread across them (its prompt on one replica,
//! its approval on the next, as a load balancer without sticky sessions sends them). On the
//! three, also how long a decision taken on one replica takes to show on another that follows
//! the task: what a person watching a chat served by another replica waits for.

use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use signoff_protocol::TaskState;
use tokio::sync::oneshot;
use tokio::time::Instant;

use crate::client::{self, A2aClient};
use crate::error::{BenchError, Result};
use crate::progress;
use crate::scenario;
use crate::server::ServerProcess;
use crate::server_bench;
use crate::stats::{percentile, Figure};

const GROUP: &str = "replicas (concurrent approve cycles)";

/// The longest a follower on another replica may take to answer, or to end after a decision.
const FOLLOW_LIMIT: Duration = Duration::from_secs(30);

/// The three set-ups, `chats` concurrent approve cycles each (and `handovers` decisions followed
/// on another replica, one at a time, where there are several). Without `postgres` (an admin
/// URL of a PostgreSQL the bench may create databases on) only the SQLite row is measured.
pub async fn figures(
    binary: &Path,
    work_dir: &Path,
    postgres: Option<&str>,
    chats: usize,
    handovers: usize,
) -> Vec<Figure> {
    let mut figures = Vec::new();
    let setups: [(&str, usize, bool); 3] = [
        ("1 replica, SQLite", 1, false),
        ("1 replica, PostgreSQL", 1, true),
        ("3 replicas, PostgreSQL", 3, true),
    ];
    for (index, (name, count, shared)) in setups.into_iter().enumerate() {
        let database = match (shared, postgres) {
            (false, _) => None,
            (true, Some(admin)) => match create_database(admin, index) {
                Ok(url) => Some(url),
                Err(err) => {
                    figures.push(Figure::missing(GROUP, name, "chats/s", err.to_string()));
                    continue;
                }
            },
            (true, None) => {
                figures.push(Figure::missing(
                    GROUP,
                    name,
                    "chats/s",
                    "no PostgreSQL (scripts/bench.sh starts one)",
                ));
                continue;
            }
        };
        progress(format_args!(
            "replicas: {name}, {chats} concurrent approve cycles"
        ));
        match run(
            binary,
            &work_dir.join(format!("replicas-{index}")),
            database.as_deref(),
            count,
            (chats, handovers),
        )
        .await
        {
            Ok(more) => figures.extend(more.into_figures(name, chats)),
            Err(err) => figures.push(Figure::missing(GROUP, name, "chats/s", err.to_string())),
        }
    }
    figures
}

/// What one set-up measured.
struct Outcome {
    e2e: Vec<f64>,
    errors: Vec<String>,
    wall: Duration,
    /// With several replicas: each decision's POST on one to its first event on another.
    handover: Option<(Vec<f64>, Vec<String>)>,
}

impl Outcome {
    fn into_figures(self, name: &str, chats: usize) -> Vec<Figure> {
        let mut sorted = self.e2e.clone();
        sorted.sort_by(f64::total_cmp);
        let p99 = if sorted.is_empty() {
            f64::NAN
        } else {
            percentile(&sorted, 0.99)
        };
        let throughput = self.e2e.len() as f64 / self.wall.as_secs_f64();
        let mut errors = Figure::value(
            GROUP,
            &format!("{name}: errors"),
            "count",
            self.errors.len() as f64,
        );
        if let Some(first) = self.errors.first() {
            errors = errors.with_note(format!("first: {first}"));
        }
        let mut figures = vec![
            Figure::samples(GROUP, &format!("{name}: end-to-end"), "ms", &self.e2e).with_note(
                format!(
                "{chats} chats at once, prompt -> pause -> approve -> completed; p99 {p99:.0} ms"
            ),
            ),
            Figure::value(GROUP, &format!("{name}: throughput"), "chats/s", throughput).with_note(
                format!("completed cycles / wall {:.1} s", self.wall.as_secs_f64()),
            ),
            errors,
        ];
        if let Some((handover, errors)) = self.handover {
            figures.push(
                Figure::samples(
                    GROUP,
                    &format!("{name}: decision on A -> first event on B"),
                    "ms",
                    &handover,
                )
                .with_note(
                    "one chat at a time, paused on replica A and followed on replica B \
                     (v1.0 SubscribeToTask from its paused snapshot); the approve POSTed to A \
                     -> B's stream's first event after it (working)",
                ),
            );
            if !errors.is_empty() {
                figures.push(server_bench::errors_figure(
                    GROUP,
                    &format!("{name}: decision on A -> first event on B: errors"),
                    &errors,
                ));
            }
        }
        figures
    }
}

/// How long after the approve POSTed to replica `a` the task's stream on replica `b` shows the
/// decision's first event; `rounds` chats one at a time (each paused on `a`).
async fn handovers(
    a: &Arc<A2aClient>,
    b: &Arc<A2aClient>,
    rounds: usize,
) -> (Vec<f64>, Vec<String>) {
    let (mut times, mut errors) = (Vec::with_capacity(rounds), Vec::new());
    for _ in 0..rounds {
        match handover(a, b).await {
            Ok(ms) => times.push(ms),
            Err(err) => errors.push(err.to_string()),
        }
    }
    (times, errors)
}

/// One chat: paused on `a`, followed on `b` from its paused snapshot, approved on `a`.
async fn handover(a: &A2aClient, b: &Arc<A2aClient>) -> Result<f64> {
    let (_, paused) = scenario::pause(a).await?;
    let (opened, snapshot) = oneshot::channel();
    let follower = {
        let (b, task) = (b.clone(), paused.task_id.clone());
        tokio::spawn(async move { b.follow_through(&task, opened).await })
    };
    // The decision is sent only once B's follower holds the paused snapshot: from then on it
    // can only learn of the decision from the other replica.
    if tokio::time::timeout(FOLLOW_LIMIT, snapshot).await.is_err() {
        follower.abort();
        return Err(BenchError::Timeout(
            "replica B sent no snapshot of the paused task".into(),
        ));
    }
    let sent = Instant::now();
    scenario::approve(a, &paused).await?;
    let events = tokio::time::timeout(FOLLOW_LIMIT, follower)
        .await
        .map_err(|_| BenchError::Timeout("replica B's stream did not end".into()))?
        .map_err(|err| BenchError::Unexpected(err.to_string()))??;
    // The first event is the snapshot (input-required); the next is the decision's.
    let first = events.get(1).ok_or_else(|| {
        BenchError::Unexpected("replica B streamed nothing after its snapshot".into())
    })?;
    if client::state_of(&first.event) != Some(TaskState::Working) {
        return Err(BenchError::Unexpected(format!(
            "replica B's first event after the decision is not `working`: {:?}",
            first.event
        )));
    }
    Ok(scenario::ms(sent, first.at))
}

/// A fresh database on the server at `admin`; its URL.
pub(crate) fn create_database(admin: &str, index: usize) -> Result<String> {
    let name = format!("signoff_bench_{}_{index}", std::process::id());
    let created = Command::new("psql")
        .args(["-qtA", admin, "-c", &format!("CREATE DATABASE {name}")])
        .output()
        .map_err(|err| BenchError::io("psql", err))?;
    if !created.status.success() {
        return Err(BenchError::Server(format!(
            "could not create a database: {}",
            String::from_utf8_lossy(&created.stderr).trim()
        )));
    }
    let server = admin.split('?').next().unwrap_or(admin);
    let (server, _) = server
        .rsplit_once('/')
        .ok_or_else(|| BenchError::Server(format!("a database URL without a path: {admin}")))?;
    Ok(format!("{server}/{name}"))
}

/// Starts `count` servers (sharing `database`, or one with SQLite), and runs `chats` approve
/// cycles at once: chat `i` pauses on server `i % count` and is approved on the next one.
async fn run(
    binary: &Path,
    data_dir: &Path,
    database: Option<&str>,
    count: usize,
    (chats, rounds): (usize, usize),
) -> Result<Outcome> {
    let mut servers = Vec::with_capacity(count);
    for _ in 0..count {
        let server = match database {
            Some(database) => ServerProcess::start_replica(binary, data_dir, database).await?,
            None => ServerProcess::start(binary, data_dir, None).await?,
        };
        servers.push(server);
    }
    // The prompt reads c.txt; the replicas share one sandbox.
    let c_txt = servers[0].sandbox().join("c.txt");
    std::fs::write(&c_txt, "hello from c.txt\n").map_err(|err| BenchError::io(&c_txt, err))?;
    let http = reqwest::Client::builder()
        .pool_idle_timeout(Duration::from_secs(30))
        .build()
        .unwrap_or_default();
    let clients: Vec<Arc<A2aClient>> = servers
        .iter()
        .map(|server| {
            Arc::new(A2aClient::new(
                http.clone(),
                server.endpoint("default", "demo"),
            ))
        })
        .collect();
    // Before the load, so its many tasks are not yet in the database.
    let handover = match &clients[..] {
        [a, b, ..] => {
            progress(format_args!(
                "replicas: {rounds} decisions on one replica followed on another"
            ));
            Some(handovers(a, b, rounds).await)
        }
        _ => None,
    };
    let (e2e, errors, wall) = server_bench::approve_cycles(&clients, chats).await;
    for server in servers {
        server.stop().await?;
    }
    Ok(Outcome {
        e2e,
        errors,
        wall,
        handover,
    })
}
