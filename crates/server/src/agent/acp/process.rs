//! One ACP agent's process: started in its own process group in its working folder, with the
//! environment its entry gives, and killed with everything it started when dropped (agents do
//! not exit when their stdin closes). What it writes to stdout is read line by line, in order,
//! into one channel; what it writes to stderr goes to the log with its secrets masked.

use std::process::Stdio;
use std::sync::Mutex;

use process_wrap::tokio::{ChildWrapper, CommandWrap, ProcessGroup};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWriteExt, BufReader};
use tokio::process::ChildStdin;
use tokio::sync::mpsc;

use super::wire::{self, FromAgent};
use crate::agent::config::AcpLaunch;

/// The longest line read from an agent: a longer one ends its session.
const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;
/// Messages read ahead of the session that handles them.
const READ_AHEAD: usize = 256;
/// The longest stderr line logged.
const MAX_LOG_LINE: usize = 2_000;

/// What the reader passes on: a message, or why the agent's output ended.
#[derive(Debug)]
pub enum Read {
    Message(Box<FromAgent>),
    Ended(String),
}

/// A running agent process.
pub struct AgentProcess {
    /// `None` once it is being ended.
    child: Mutex<Option<Box<dyn ChildWrapper>>>,
    stdin: tokio::sync::Mutex<ChildStdin>,
}

impl AgentProcess {
    /// Starts the agent; `label` names it in the log. The receiver gets its messages.
    pub fn start(
        launch: &AcpLaunch,
        label: &str,
    ) -> Result<(AgentProcess, mpsc::Receiver<Read>), String> {
        let mut command = tokio::process::Command::new(&launch.program);
        command
            .args(&launch.args)
            .env_clear()
            .envs(launch.env.iter().cloned())
            .current_dir(&launch.cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut wrapped = CommandWrap::from(command);
        wrapped.wrap(ProcessGroup::leader());
        let mut child = wrapped
            .spawn()
            .map_err(|err| format!("cannot start {:?}: {err}", launch.program))?;
        let (Some(stdin), Some(stdout), Some(stderr)) = (
            child.stdin().take(),
            child.stdout().take(),
            child.stderr().take(),
        ) else {
            let _ = child.start_kill();
            return Err("the agent's stdio could not be opened".into());
        };
        let (sender, receiver) = mpsc::channel(READ_AHEAD);
        tokio::spawn(read_stdout(stdout, sender));
        tokio::spawn(log_stderr(stderr, label.to_owned(), launch.secrets.clone()));
        let process = AgentProcess {
            child: Mutex::new(Some(child)),
            stdin: tokio::sync::Mutex::new(stdin),
        };
        Ok((process, receiver))
    }

    /// Writes one line to the agent.
    pub async fn send(&self, line: String) -> Result<(), String> {
        let mut stdin = self.stdin.lock().await;
        let mut bytes = line.into_bytes();
        bytes.push(b'\n');
        stdin
            .write_all(&bytes)
            .await
            .map_err(|err| format!("cannot write to the agent: {err}"))?;
        stdin
            .flush()
            .await
            .map_err(|err| format!("cannot write to the agent: {err}"))
    }

    /// The process id.
    #[cfg(test)]
    pub fn id(&self) -> Option<u32> {
        self.child.lock().ok()?.as_ref()?.id()
    }
}

impl Drop for AgentProcess {
    /// Ends the whole group (`node` started by a wrapper script, and what the agent started):
    /// asked first, so the agent can write its session's history down (Claude Code killed at
    /// once may leave a session it cannot load again), then killed after [`GRACE`].
    fn drop(&mut self) {
        let Some(mut child) = self.child.lock().ok().and_then(|mut child| child.take()) else {
            return;
        };
        let _ = child.signal(libc::SIGTERM);
        std::thread::spawn(move || {
            std::thread::sleep(GRACE);
            let _ = child.start_kill();
            let _ = child.try_wait();
        });
    }
}

/// How long an ended agent may take to exit before it is killed.
const GRACE: std::time::Duration = std::time::Duration::from_secs(2);

/// Reads the agent's stdout into `sender` until it ends, a line is too long or unreadable, or
/// nobody listens any more.
async fn read_stdout(stdout: impl AsyncRead + Unpin, sender: mpsc::Sender<Read>) {
    let mut reader = BufReader::new(stdout);
    let mut line = Vec::new();
    let ended = loop {
        line.clear();
        match read_capped(&mut reader, &mut line).await {
            Ok(0) => break "the agent's process ended".to_owned(),
            Ok(_) if line.len() > MAX_LINE_BYTES => {
                break format!("the agent sent a message over {MAX_LINE_BYTES} bytes")
            }
            Ok(_) => {}
            Err(err) => break format!("cannot read from the agent: {err}"),
        }
        let text = String::from_utf8_lossy(&line);
        let text = text.trim();
        if text.is_empty() {
            continue;
        }
        let read = match wire::read_line(text) {
            Ok(message) => Read::Message(Box::new(message)),
            Err(err) => {
                let _ = sender.send(Read::Ended(err.to_string())).await;
                return;
            }
        };
        if sender.send(read).await.is_err() {
            return;
        }
    };
    let _ = sender.send(Read::Ended(ended)).await;
}

/// Reads up to and including the next newline into `line`, stopping once it holds more than
/// [`MAX_LINE_BYTES`] (so a line without an end cannot take the server's memory).
async fn read_capped(
    reader: &mut (impl tokio::io::AsyncBufRead + Unpin),
    line: &mut Vec<u8>,
) -> std::io::Result<usize> {
    loop {
        let available = reader.fill_buf().await?;
        if available.is_empty() {
            return Ok(line.len());
        }
        let (taken, done) = match available.iter().position(|byte| *byte == b'\n') {
            Some(end) => (end + 1, true),
            None => (available.len(), false),
        };
        line.extend_from_slice(&available[..taken]);
        reader.consume(taken);
        if done || line.len() > MAX_LINE_BYTES {
            return Ok(line.len());
        }
    }
}

/// Logs the agent's stderr line by line, each secret of its environment masked.
async fn log_stderr(stderr: impl AsyncRead + Unpin, label: String, secrets: Vec<String>) {
    let mut lines = BufReader::new(stderr).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        let mut line = mask(&line, &secrets);
        if line.len() > MAX_LOG_LINE {
            let mut end = MAX_LOG_LINE;
            while !line.is_char_boundary(end) {
                end -= 1;
            }
            line.truncate(end);
        }
        tracing::info!(agent = %label, "acp agent stderr: {line}");
    }
}

/// `line` with every secret replaced.
fn mask(line: &str, secrets: &[String]) -> String {
    secrets.iter().fold(line.to_owned(), |line, secret| {
        line.replace(secret.as_str(), "[secret]")
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn launch(script: &str) -> AcpLaunch {
        AcpLaunch {
            program: "sh".into(),
            args: vec!["-c".into(), script.into()],
            env: vec![("PATH".into(), std::env::var("PATH").unwrap())],
            secrets: vec!["sk-live".into()],
            cwd: std::env::temp_dir(),
            allow: Vec::new(),
            max_sessions: 1,
        }
    }

    #[test]
    fn secrets_never_reach_the_log() {
        assert_eq!(
            mask("key sk-live rejected", &["sk-live".into()]),
            "key [secret] rejected"
        );
    }

    #[tokio::test]
    async fn lines_come_in_order_and_a_bad_line_ends_the_output() {
        let (_process, mut from) = AgentProcess::start(
            &launch(
                r#"echo '{"jsonrpc":"2.0","id":1,"result":{}}'; echo; echo 'not json'; sleep 30"#,
            ),
            "test",
        )
        .unwrap();
        assert!(matches!(
            from.recv().await,
            Some(Read::Message(message)) if matches!(*message, FromAgent::Response { id: 1, .. })
        ));
        assert!(matches!(from.recv().await, Some(Read::Ended(why)) if why.contains("not JSON")));
    }

    #[tokio::test]
    async fn dropping_the_process_kills_its_whole_group() {
        let (process, mut from) =
            AgentProcess::start(&launch("sleep 300 & echo \"$!\"; wait"), "test").unwrap();
        let leader = process.id().unwrap();
        // The child's pid came out as a line that is not JSON: that ends the reading.
        let Some(Read::Ended(why)) = from.recv().await else {
            panic!()
        };
        let grandchild: i32 = why.rsplit(": ").next().unwrap().trim().parse().unwrap();
        drop(process);
        for _ in 0..100 {
            let gone = nix_gone(grandchild) && nix_gone(leader as i32);
            if gone {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        panic!("the process group outlived its AgentProcess");
    }

    /// Whether no process `pid` runs (a zombie counts as gone).
    fn nix_gone(pid: i32) -> bool {
        let status = std::fs::read_to_string(format!("/proc/{pid}/stat"));
        match status {
            Err(_) => true,
            Ok(stat) => stat
                .split(") ")
                .nth(1)
                .is_some_and(|rest| rest.starts_with('Z')),
        }
    }
}
