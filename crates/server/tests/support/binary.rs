//! The real `signoff` binary as a child process: started on port 0 with a data folder (plus
//! flags and environment of the test's choosing), then killed (SIGKILL: no last writes) or
//! stopped as an orchestrator stops it (SIGTERM: graceful shutdown).

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};

use super::database::database_url;
use super::wait::within;

/// Variables of the test's own environment that would change what the binary does; each start
/// removes them, and a test that wants one passes it.
const CLEARED_ENV: [&str; 5] = [
    "SIGNOFF_DATABASE_URL",
    "SIGNOFF_UI_DIR",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "SIGNOFF_LOG_FORMAT",
];

/// A running `signoff` binary; killed when dropped, so a failing test leaves no server behind.
pub struct Binary {
    child: Option<Child>,
    /// `http://127.0.0.1:PORT`, where it listens.
    pub base: String,
    /// The log line that said where it listens, as written (text or JSON).
    pub listening_line: String,
}

/// Starts the binary on port 0 with `data_dir` (and its test database), `args` and `env` added,
/// and waits until it listens.
pub async fn start_binary(data_dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Binary {
    start_binary_at(
        Path::new(env!("CARGO_BIN_EXE_signoff")),
        data_dir,
        args,
        env,
    )
    .await
}

/// [`start_binary`] of another build of `signoff`, at `program`.
pub async fn start_binary_at(
    program: &Path,
    data_dir: &Path,
    args: &[&str],
    env: &[(&str, &str)],
) -> Binary {
    let mut command = Command::new(program);
    command
        .args(["--addr", "127.0.0.1:0", "--data-dir"])
        .arg(data_dir)
        .args(args)
        .env("RUST_LOG", "info")
        .env("NO_COLOR", "1");
    for name in CLEARED_ENV {
        command.env_remove(name);
    }
    if let Some(url) = database_url(data_dir).await {
        command.env("SIGNOFF_DATABASE_URL", url);
    }
    command.envs(env.iter().copied());
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (base, listening_line) = tokio::task::spawn_blocking(move || {
        let mut lines = BufReader::new(stdout).lines();
        let mut found = None;
        for line in lines.by_ref() {
            let line = line.unwrap();
            if let Some(at) = line.find("listening on http://") {
                let url = line[at + "listening on ".len()..].trim();
                let url: String = url
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || ":/.".contains(*c))
                    .collect();
                found = Some((url, line));
                break;
            }
        }
        // Keep draining the log so the server never blocks on a full pipe.
        std::thread::spawn(move || for _ in lines {});
        found.expect("the server logs where it listens")
    })
    .await
    .unwrap();
    Binary {
        child: Some(child),
        base,
        listening_line,
    }
}

impl Binary {
    /// SIGKILL: no graceful shutdown, no last writes.
    pub fn kill(self) {
        drop(self);
    }

    /// SIGTERM, then waits for the process to exit (after its graceful shutdown).
    pub async fn terminate(mut self) -> ExitStatus {
        let mut child = self.child.take().unwrap();
        let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id()).unwrap());
        nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
        within(
            "the server to exit after SIGTERM",
            tokio::task::spawn_blocking(move || child.wait().unwrap()),
        )
        .await
        .unwrap()
    }
}

impl Drop for Binary {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            // std's kill() is SIGKILL on Unix.
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}
