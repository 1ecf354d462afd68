//! What shipping Signoff costs: the static binary's size (stripped, the UI inside), the
//! container image's size, and how long a fresh `signoff` takes from its start to `/readyz`
//! answering 200, on SQLite and on PostgreSQL (a fresh database each start: migrations included).

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use tokio::process::Command;
use tokio::time::Instant;

use crate::error::{BenchError, Result};
use crate::progress;
use crate::replicas::create_database;
use crate::server::free_port;
use crate::stats::Figure;

const GROUP: &str = "shipping";
/// Starts measured per database.
const STARTS: usize = 5;
/// How long one start may take before it counts as failed.
const START_TIMEOUT: Duration = Duration::from_secs(60);
/// How often `/readyz` is asked while the server starts.
const POLL: Duration = Duration::from_millis(2);

/// The sizes (each missing, saying why, when not given) and the start times.
pub async fn figures(
    binary: &Path,
    work_dir: &Path,
    postgres: Option<&str>,
    static_binary: Option<&Path>,
    image_bytes: Option<u64>,
) -> Vec<Figure> {
    let mut figures = Vec::new();
    let size_name = "static binary (stripped, UI inside)";
    figures.push(match static_binary.map(std::fs::metadata) {
        Some(Ok(meta)) => Figure::value(GROUP, size_name, "MiB", mib(meta.len()))
            .with_note(version_of(static_binary.unwrap_or(binary))),
        Some(Err(err)) => Figure::missing(GROUP, size_name, "MiB", err.to_string()),
        None => Figure::missing(
            GROUP,
            size_name,
            "MiB",
            "not built (scripts/build-static.sh)",
        ),
    });
    let image_name = "container image (podman)";
    figures.push(match image_bytes {
        Some(bytes) => Figure::value(GROUP, image_name, "MiB", mib(bytes)),
        None => Figure::missing(GROUP, image_name, "MiB", "not built (scripts/image.sh)"),
    });

    let sqlite = "start to /readyz 200, SQLite";
    figures.push(
        match start_times(binary, &work_dir.join("ship-sqlite"), None).await {
            Ok(samples) => Figure::samples(GROUP, sqlite, "ms", &samples),
            Err(err) => Figure::missing(GROUP, sqlite, "ms", err.to_string()),
        },
    );
    let pg = "start to /readyz 200, PostgreSQL (fresh database)";
    figures.push(match postgres {
        Some(admin) => match start_times(binary, &work_dir.join("ship-pg"), Some(admin)).await {
            Ok(samples) => Figure::samples(GROUP, pg, "ms", &samples),
            Err(err) => Figure::missing(GROUP, pg, "ms", err.to_string()),
        },
        None => Figure::missing(
            GROUP,
            pg,
            "ms",
            "no PostgreSQL (scripts/bench.sh starts one)",
        ),
    });
    figures
}

/// What `binary --version` says (which commit the size is of).
fn version_of(binary: &Path) -> String {
    std::process::Command::new(binary)
        .arg("--version")
        .output()
        .ok()
        .and_then(|out| String::from_utf8(out.stdout).ok())
        .map(|text| text.trim().to_owned())
        .unwrap_or_else(|| "its --version failed".to_owned())
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

/// [`STARTS`] fresh starts of `binary`, each with a new data folder (and, with `postgres`, a new
/// database): milliseconds from spawning it to its first `/readyz` 200.
async fn start_times(binary: &Path, dir: &Path, postgres: Option<&str>) -> Result<Vec<f64>> {
    let http = reqwest::Client::new();
    let mut samples = Vec::with_capacity(STARTS);
    for start in 0..STARTS {
        let data_dir = dir.join(format!("start-{start}"));
        std::fs::create_dir_all(&data_dir).map_err(|err| BenchError::io(&data_dir, err))?;
        let database = match postgres {
            Some(admin) => Some(create_database(admin, 100 + start)?),
            None => None,
        };
        let port = free_port()?;
        let url = format!("http://127.0.0.1:{port}/readyz");
        let mut command = Command::new(binary);
        command
            .arg("--addr")
            .arg(format!("127.0.0.1:{port}"))
            .arg("--data-dir")
            .arg(&data_dir)
            .env_remove("SIGNOFF_DATABASE_URL")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true);
        if let Some(database) = &database {
            command.env("SIGNOFF_DATABASE_URL", database);
        }
        let began = Instant::now();
        let mut child = command.spawn().map_err(|err| BenchError::io(binary, err))?;
        loop {
            if let Ok(Some(status)) = child.try_wait() {
                return Err(BenchError::Server(format!(
                    "exited with {status} before /readyz answered"
                )));
            }
            if let Ok(response) = http.get(&url).send().await {
                if response.status().is_success() {
                    break;
                }
            }
            if began.elapsed() > START_TIMEOUT {
                return Err(BenchError::Timeout(format!(
                    "/readyz did not answer 200 within {START_TIMEOUT:?}"
                )));
            }
            tokio::time::sleep(POLL).await;
        }
        samples.push(began.elapsed().as_secs_f64() * 1000.0);
        child
            .kill()
            .await
            .map_err(|err| BenchError::io(binary, err))?;
    }
    progress(format_args!(
        "shipping: {STARTS} starts{}",
        if postgres.is_some() {
            " on PostgreSQL"
        } else {
            " on SQLite"
        }
    ));
    Ok(samples)
}
