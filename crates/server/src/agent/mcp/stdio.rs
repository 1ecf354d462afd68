//! A stdio MCP server's process as an rmcp transport: the process (in its own process group,
//! so stopping it stops what it started) and its pipes, its stdout read line by line through
//! `codex::mark` so Codex's approval requests reach Signoff whole. rmcp's own child-process
//! transport reads stdout itself, leaving no place for that.

use std::future::Future;
use std::io;
use std::process::Stdio as Pipes;

use process_wrap::tokio::{ChildWrapper, CommandWrap};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::transport::Transport;
use rmcp::RoleClient;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream};
use tokio::process::{ChildStderr, ChildStdin, ChildStdout};

use super::codex;

/// How much of the server's output may wait, read but not yet taken by rmcp.
const RELAY_BUFFER: usize = 256 * 1024;

/// A running stdio server and the transport over its pipes; dropping it kills the process.
pub struct StdioChild {
    child: Option<Box<dyn ChildWrapper>>,
    io: AsyncRwTransport<RoleClient, DuplexStream, ChildStdin>,
}

impl StdioChild {
    /// Starts `command` with piped stdin, stdout and stderr; returns the transport and the
    /// stderr, which the caller reads.
    pub fn spawn(mut command: CommandWrap) -> io::Result<(StdioChild, Option<ChildStderr>)> {
        command
            .command_mut()
            .stdin(Pipes::piped())
            .stdout(Pipes::piped())
            .stderr(Pipes::piped());
        let mut child = command.spawn()?;
        let stdin = child
            .stdin()
            .take()
            .ok_or_else(|| io::Error::other("the server's stdin was not piped"))?;
        let stdout = child
            .stdout()
            .take()
            .ok_or_else(|| io::Error::other("the server's stdout was not piped"))?;
        let stderr = child.stderr().take();
        let (reader, writer) = tokio::io::duplex(RELAY_BUFFER);
        tokio::spawn(relay(stdout, writer));
        let io = AsyncRwTransport::new_client(reader, stdin);
        Ok((
            StdioChild {
                child: Some(child),
                io,
            },
            stderr,
        ))
    }
}

/// Copies the server's stdout to rmcp's end, line by line, Codex's approval requests renamed.
/// It ends when either side does; rmcp then sees the end of its input.
async fn relay(stdout: ChildStdout, mut to: DuplexStream) {
    let mut from = BufReader::new(stdout);
    let mut line = Vec::new();
    loop {
        line.clear();
        match from.read_until(b'\n', &mut line).await {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        let marked = std::str::from_utf8(&line)
            .ok()
            .and_then(|text| codex::mark(text.trim_end()));
        let written = match marked {
            Some(text) => to.write_all(format!("{text}\n").as_bytes()).await,
            None => to.write_all(&line).await,
        };
        if written.is_err() {
            break;
        }
    }
}

impl Transport<RoleClient> for StdioChild {
    type Error = io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.io.send(item)
    }

    fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<RoleClient>>> + Send {
        self.io.receive()
    }

    /// Closes the server's stdin, then stops the process (and its group).
    async fn close(&mut self) -> Result<(), Self::Error> {
        let closed = self.io.close().await;
        if let Some(mut child) = self.child.take() {
            Box::into_pin(child.kill()).await?;
        }
        closed
    }
}

impl Drop for StdioChild {
    fn drop(&mut self) {
        // A process left running would outlive its connection. The group is killed here and
        // now, not in a task: a runtime that is shutting down (a test that panicked, the
        // server's end) may never run one, and the program's own children (node's codex)
        // would live on. It is reaped in the background where a runtime still runs.
        if let Some(mut child) = self.child.take() {
            if let Err(error) = child.start_kill() {
                tracing::warn!("a stdio MCP server could not be stopped: {error}");
            }
            if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                runtime.spawn(async move {
                    let _ = child.wait().await;
                });
            }
        }
    }
}
