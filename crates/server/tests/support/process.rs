//! The real `signoff` binary as a child process of the test: started on port 0, found by the
//! address it logs, and killed with SIGKILL (no graceful shutdown, no last writes) when the
//! test says so or drops it.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

use super::database::database_url;

/// The `signoff` binary on port 0 with `data_dir` and its test database; returns it with its
/// base URL.
pub async fn start_binary(data_dir: &Path) -> (Server, String) {
    let database = database_url(data_dir).await;
    start_binary_on(data_dir, database.as_deref()).await
}

/// The `signoff` binary on port 0 with `data_dir` and `database` (a PostgreSQL URL; SQLite in
/// `data_dir` when `None`); returns it with its base URL.
pub async fn start_binary_on(data_dir: &Path, database: Option<&str>) -> (Server, String) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_signoff"));
    if let Some(url) = database {
        command.env("SIGNOFF_DATABASE_URL", url);
    }
    let mut child = command
        .args(["--addr", "127.0.0.1:0", "--data-dir"])
        .arg(data_dir)
        .env("RUST_LOG", "info")
        .env("NO_COLOR", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let base = tokio::task::spawn_blocking(move || {
        let mut lines = BufReader::new(stdout).lines();
        let mut base = None;
        for line in lines.by_ref() {
            let line = line.unwrap();
            if let Some(at) = line.find("listening on http://") {
                let url = line[at + "listening on ".len()..].trim();
                let url: String = url
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || ":/.".contains(*c))
                    .collect();
                base = Some(url);
                break;
            }
        }
        // Keep draining the log so the server never blocks on a full pipe.
        std::thread::spawn(move || for _ in lines {});
        base.expect("the server logs where it listens")
    })
    .await
    .unwrap();
    (Server(child), base)
}

/// The running binary; killed when dropped, so a failing test leaves no server behind.
pub struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        // std's kill() is SIGKILL on Unix: no graceful shutdown, no last writes.
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

pub fn kill(server: Server) {
    drop(server);
}
