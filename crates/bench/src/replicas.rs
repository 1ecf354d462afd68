//! The approve-cycle load on one replica with SQLite, one replica on PostgreSQL, and three
//! replicas on one PostgreSQL with each chat spread across them (its prompt on one replica,
//! its approval on the next, as a load balancer without sticky sessions sends them).

use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use crate::client::A2aClient;
use crate::error::{BenchError, Result};
use crate::progress;
use crate::server::ServerProcess;
use crate::server_bench;
use crate::stats::{percentile, Figure};

const GROUP: &str = "replicas (concurrent approve cycles)";

/// The three set-ups, `chats` concurrent approve cycles each. Without `postgres` (an admin URL
/// of a PostgreSQL the bench may create databases on) only the SQLite row is measured.
pub async fn figures(
    binary: &Path,
    work_dir: &Path,
    postgres: Option<&str>,
    chats: usize,
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
            chats,
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
        vec![
            Figure::samples(GROUP, &format!("{name}: end-to-end"), "ms", &self.e2e).with_note(
                format!(
                "{chats} chats at once, prompt -> pause -> approve -> completed; p99 {p99:.0} ms"
            ),
            ),
            Figure::value(GROUP, &format!("{name}: throughput"), "chats/s", throughput).with_note(
                format!("completed cycles / wall {:.1} s", self.wall.as_secs_f64()),
            ),
            errors,
        ]
    }
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
    chats: usize,
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
    let (e2e, errors, wall) = server_bench::approve_cycles(&clients, chats).await;
    for server in servers {
        server.stop().await?;
    }
    Ok(Outcome { e2e, errors, wall })
}
