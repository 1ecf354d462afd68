//! The server under test: the real `signoff` binary, started on a free loopback port with a
//! fresh data folder, and watched from outside through /proc (RSS, CPU time), so the bench
//! needs no hook inside the server.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use tokio::process::{Child, Command};

use crate::error::{BenchError, Result};

/// How long a server may take to answer its first request.
const START_TIMEOUT: Duration = Duration::from_secs(60);

pub struct ServerProcess {
    /// Killed on drop, so a failed phase never leaves a server behind.
    child: Child,
    pub pid: u32,
    /// `http://127.0.0.1:PORT`
    pub base: String,
    pub data_dir: PathBuf,
    log: PathBuf,
}

impl ServerProcess {
    /// Starts `binary` with a fresh `data_dir` (which must not exist yet) and, if given, an
    /// agents file with `agents_toml`; waits until it answers `GET /api/agents`.
    pub async fn start(
        binary: &Path,
        data_dir: &Path,
        agents_toml: Option<&str>,
    ) -> Result<ServerProcess> {
        Self::start_with(binary, data_dir, agents_toml, None, None, &[]).await
    }

    /// Like [`ServerProcess::start`], with more command-line arguments (`--auth tokens ...`).
    pub async fn start_with_args(
        binary: &Path,
        data_dir: &Path,
        agents_toml: Option<&str>,
        args: &[String],
    ) -> Result<ServerProcess> {
        Self::start_with(binary, data_dir, agents_toml, None, None, args).await
    }

    /// One of several replicas sharing `database` (a PostgreSQL URL) and `data_dir` (their
    /// file sandbox, as a shared volume would be); `data_dir` may exist already.
    pub async fn start_replica(
        binary: &Path,
        data_dir: &Path,
        database: &str,
    ) -> Result<ServerProcess> {
        Self::start_with(binary, data_dir, None, None, Some(database), &[]).await
    }

    /// Like [`ServerProcess::start`], serving the built UI in `ui_dir` (trunk's dist/).
    pub async fn start_with_ui(
        binary: &Path,
        data_dir: &Path,
        ui_dir: &Path,
    ) -> Result<ServerProcess> {
        Self::start_with(binary, data_dir, None, Some(ui_dir), None, &[]).await
    }

    async fn start_with(
        binary: &Path,
        data_dir: &Path,
        agents_toml: Option<&str>,
        ui_dir: Option<&Path>,
        database: Option<&str>,
        args: &[String],
    ) -> Result<ServerProcess> {
        if database.is_none() && data_dir.exists() {
            return Err(BenchError::Server(format!(
                "{} exists; every server gets a fresh data folder",
                data_dir.display()
            )));
        }
        std::fs::create_dir_all(data_dir).map_err(|err| BenchError::io(data_dir, err))?;
        let port = free_port()?;
        let log = data_dir.join(format!("server-{port}.log"));
        let log_file = std::fs::File::create(&log).map_err(|err| BenchError::io(&log, err))?;
        let log_err = log_file
            .try_clone()
            .map_err(|err| BenchError::io(&log, err))?;
        let mut command = Command::new(binary);
        command
            .arg("--addr")
            .arg(format!("127.0.0.1:{port}"))
            .arg("--data-dir")
            .arg(data_dir);
        if let Some(toml) = agents_toml {
            let path = data_dir.join("agents.toml");
            std::fs::write(&path, toml).map_err(|err| BenchError::io(&path, err))?;
            command.arg("--agents").arg(&path);
        }
        if let Some(ui_dir) = ui_dir {
            command.arg("--ui-dir").arg(ui_dir);
        }
        if let Some(database) = database {
            command.env("SIGNOFF_DATABASE_URL", database);
        }
        command.args(args);
        let child = command
            .stdin(Stdio::null())
            .stdout(Stdio::from(log_file))
            .stderr(Stdio::from(log_err))
            .kill_on_drop(true)
            .spawn()
            .map_err(|err| BenchError::io(binary, err))?;
        let pid = child
            .id()
            .ok_or_else(|| BenchError::Server("the server exited at once".into()))?;
        let mut server = ServerProcess {
            child,
            pid,
            base: format!("http://127.0.0.1:{port}"),
            data_dir: data_dir.to_owned(),
            log,
        };
        server.wait_ready().await?;
        Ok(server)
    }

    async fn wait_ready(&mut self) -> Result<()> {
        let http = reqwest::Client::new();
        let url = format!("{}/api/agents", self.base);
        let deadline = tokio::time::Instant::now() + START_TIMEOUT;
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(BenchError::Server(format!(
                    "exited with {status} before answering: {}",
                    self.log_tail()
                )));
            }
            if let Ok(response) = http.get(&url).send().await {
                // 401: up, and asking for a token (`--auth tokens`).
                let status = response.status();
                if status.is_success() || status == reqwest::StatusCode::UNAUTHORIZED {
                    return Ok(());
                }
            }
            if tokio::time::Instant::now() > deadline {
                return Err(BenchError::Timeout(format!(
                    "the server did not answer {url} within {START_TIMEOUT:?}: {}",
                    self.log_tail()
                )));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The JSON-RPC endpoint of an agent.
    pub fn endpoint(&self, namespace: &str, agent: &str) -> String {
        format!("{}/api/a2a/{namespace}/{agent}", self.base)
    }

    /// Resident set size now (VmRSS).
    pub fn rss_bytes(&self) -> Result<u64> {
        self.status_kib("VmRSS:").map(|kib| kib * 1024)
    }

    /// Of the resident set now: anonymous memory (heap, stacks) and file pages (mostly the
    /// binary's own code and read-only data), in bytes.
    pub fn rss_anon_file_bytes(&self) -> Result<(u64, u64)> {
        Ok((
            self.status_kib("RssAnon:")? * 1024,
            self.status_kib("RssFile:")? * 1024,
        ))
    }

    /// The highest resident set size so far (VmHWM).
    pub fn peak_rss_bytes(&self) -> Result<u64> {
        self.status_kib("VmHWM:").map(|kib| kib * 1024)
    }

    fn status_kib(&self, field: &str) -> Result<u64> {
        let path = format!("/proc/{}/status", self.pid);
        let text = std::fs::read_to_string(&path).map_err(|err| BenchError::io(&path, err))?;
        text.lines()
            .find_map(|line| line.strip_prefix(field))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|kib| kib.parse().ok())
            .ok_or_else(|| BenchError::Server(format!("no {field} in {path}")))
    }

    /// User plus system CPU time the server has used so far.
    pub fn cpu_seconds(&self) -> Result<f64> {
        // utime and stime: fields 14 and 15 of the line.
        self.stat_seconds(11, 12)
    }

    /// User plus system CPU time of the server's children that have ended and been waited for
    /// (the agents it ran), so far.
    pub fn children_cpu_seconds(&self) -> Result<f64> {
        // cutime and cstime: fields 16 and 17.
        self.stat_seconds(13, 14)
    }

    /// Two clock-tick fields of /proc/PID/stat added up, in seconds; `0` is field 3.
    fn stat_seconds(&self, user: usize, system: usize) -> Result<f64> {
        let path = format!("/proc/{}/stat", self.pid);
        let text = std::fs::read_to_string(&path).map_err(|err| BenchError::io(&path, err))?;
        // The command name (field 2) may hold spaces; fields after it are plain numbers.
        let after_name = text
            .rsplit_once(')')
            .map(|(_, rest)| rest)
            .ok_or_else(|| BenchError::Server(format!("unreadable {path}")))?;
        let fields: Vec<&str> = after_name.split_whitespace().collect();
        let ticks = |index: usize| -> Result<f64> {
            fields
                .get(index)
                .and_then(|value| value.parse::<u64>().ok())
                .map(|value| value as f64)
                .ok_or_else(|| BenchError::Server(format!("unreadable {path}")))
        };
        Ok((ticks(user)? + ticks(system)?) / clock_ticks_per_second())
    }

    /// Bytes of the database on disk (the file, its WAL and shared memory).
    pub fn db_bytes(&self) -> u64 {
        ["signoff.db", "signoff.db-wal", "signoff.db-shm"]
            .iter()
            .filter_map(|name| std::fs::metadata(self.data_dir.join(name)).ok())
            .map(|meta| meta.len())
            .sum()
    }

    /// The sandbox of the built-in file tools.
    pub fn sandbox(&self) -> PathBuf {
        self.data_dir.join("sandbox")
    }

    /// The end of the server's log, for error messages.
    pub fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        let start = lines.len().saturating_sub(8);
        lines[start..].join(" | ")
    }

    /// Stops the server with SIGTERM (graceful), or kills it if it does not stop in time.
    pub async fn stop(mut self) -> Result<()> {
        let term = Command::new("kill")
            .arg("-TERM")
            .arg(self.pid.to_string())
            .status()
            .await;
        let stopped = match term {
            Ok(status) if status.success() => {
                tokio::time::timeout(Duration::from_secs(20), self.child.wait())
                    .await
                    .is_ok()
            }
            Ok(_) | Err(_) => false,
        };
        if !stopped {
            self.child
                .kill()
                .await
                .map_err(|err| BenchError::io(&self.log, err))?;
        }
        Ok(())
    }
}

/// A port that was free a moment ago (the server binds it right after).
pub(crate) fn free_port() -> Result<u16> {
    let listener = std::net::TcpListener::bind(("127.0.0.1", 0))
        .map_err(|err| BenchError::io("127.0.0.1:0", err))?;
    let port = listener
        .local_addr()
        .map_err(|err| BenchError::io("127.0.0.1:0", err))?
        .port();
    Ok(port)
}

/// `getconf CLK_TCK` (100 on Linux unless configured otherwise).
fn clock_ticks_per_second() -> f64 {
    static TICKS: std::sync::OnceLock<f64> = std::sync::OnceLock::new();
    *TICKS.get_or_init(|| {
        std::process::Command::new("getconf")
            .arg("CLK_TCK")
            .output()
            .ok()
            .and_then(|out| String::from_utf8(out.stdout).ok())
            .and_then(|text| text.trim().parse::<f64>().ok())
            .filter(|ticks| *ticks > 0.0)
            .unwrap_or(100.0)
    })
}
