//! The accept loop: HTTP/1 connections served with the limits a server on an open network
//! needs (axum's `serve` sets none). A client that stalls while sending a request's headers is
//! disconnected after the read timeout (so is a keep-alive connection that sends no next
//! request), and at shutdown open connections get at most [`SHUTDOWN_GRACE`] (or the read
//! timeout, if shorter) to finish, so a stalled or trickling client can neither hold
//! connections forever nor keep SIGTERM from stopping the server. The body's side of the timeout is `RequestBodyTimeoutLayer` (`run`).
//!
//! A connection is closed the lingering way ([`Lingering`]): an answer given before the request's
//! body was read (a 413, a 401) is followed by the rest of the body, read and dropped, so a
//! client that sends its whole body before it reads (Python's `urllib`) gets the answer instead
//! of a reset.
//!
//! A request that may change something (a message, a decision) is served in a task of its own
//! ([`serve_request`]), so it runs to its end once it has been read, whether or not its client
//! waits for the answer.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{ready, Context, Poll};
use std::time::Duration;

use axum::http::{Method, Request};
use axum::response::{IntoResponse, Response};
use axum::Router;
use futures_util::future::Either;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;
use tokio::time::{Instant, Sleep};
use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};
use tracing::Instrument;

/// Longest wait at shutdown for open connections to finish their requests. Streams and
/// blocking sends end at once (`Runtime::begin_shutdown`); what is left is a slow client.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// How much of what a client still sends is read and dropped when its connection closes.
const LINGER_BYTES: usize = 16 * 1024 * 1024;
/// How long a closing connection reads what its client still sends, at most.
const LINGER_TIME: Duration = Duration::from_secs(5);
/// How long a closing connection waits for its client's next bytes (or its close).
const LINGER_QUIET: Duration = Duration::from_secs(2);

/// Serves `app` on `listener` until `shutdown` completes; then stops accepting, asks each open
/// connection to close after its current request, and waits a little for them.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    read_timeout: Duration,
    shutdown: impl Future<Output = ()>,
) {
    let closing = CancellationToken::new();
    let mut connections = JoinSet::new();
    tokio::pin!(shutdown);
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = &mut shutdown => break,
        };
        // Reap finished connections, so the set holds only open ones.
        while connections.try_join_next().is_some() {}
        let (tcp, peer) = match accepted {
            Ok(accepted) => accepted,
            Err(err) => {
                tracing::warn!("could not accept a connection: {err}");
                // Out of file descriptors or the like: give it a moment instead of spinning.
                if !is_connection_error(&err) {
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
                continue;
            }
        };
        // Without TCP_NODELAY a streamed event that follows the headers on a reused connection
        // waits for the client's delayed ACK: ~40 ms on every turn (bench: time to pause 43.9
        // -> 6.7 ms).
        if let Err(err) = tcp.set_nodelay(true) {
            tracing::warn!("could not set TCP_NODELAY: {err}");
        }
        let app = TowerToHyperService::new(app.clone());
        // The peer's address, for `--auth proxy`'s trusted proxies.
        let service = hyper::service::service_fn(move |mut request: Request<Incoming>| {
            request
                .extensions_mut()
                .insert(axum::extract::ConnectInfo(peer));
            serve_request(&app, request)
        });
        let closing = closing.clone();
        let io = Lingering::new(tcp, closing.clone());
        connections.spawn(async move {
            let mut builder = http1::Builder::new();
            builder
                .timer(TokioTimer::new())
                .header_read_timeout(read_timeout);
            let connection = builder.serve_connection(TokioIo::new(io), service);
            tokio::pin!(connection);
            tokio::select! {
                _served = connection.as_mut() => return,
                () = closing.cancelled() => connection.as_mut().graceful_shutdown(),
            }
            // Errors of a connection (a client gone, a header timeout) are the client's.
            let _served = connection.await;
        });
    }
    drop(listener);
    closing.cancel();
    let drained = tokio::time::timeout(read_timeout.min(SHUTDOWN_GRACE), async {
        while connections.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        tracing::warn!(
            open = connections.len(),
            "closing connections that did not finish their requests in time to shut down"
        );
        connections.shutdown().await;
    }
}

/// Serves one request. One that may change something (any method but GET, HEAD and OPTIONS) is
/// served in a task of its own, spawned here, when hyper hands the request over: hyper drops a
/// request's future when its connection closes, even before it first polls it, and a message
/// or a decision the client sent whole must still be applied all the way (written, announced,
/// its runner started), never lost before its commit or cut between its commit and what
/// follows. Its body, read by the connection, is still there for the task.
fn serve_request(
    app: &TowerToHyperService<Router>,
    request: Request<Incoming>,
) -> impl Future<Output = Result<Response, std::convert::Infallible>> + Send + 'static {
    let detach = !matches!(
        *request.method(),
        Method::GET | Method::HEAD | Method::OPTIONS
    );
    let serving = hyper::service::Service::call(app, request);
    if !detach {
        return Either::Left(serving);
    }
    let running = tokio::spawn(serving.in_current_span());
    Either::Right(async move {
        match running.await {
            Ok(served) => served,
            // Handlers' panics are answered inside the app (`CatchPanicLayer`); this is a bug.
            Err(err) => {
                tracing::error!(error = %err, "a request's task did not finish");
                Ok(super::HttpError::Internal.into_response())
            }
        }
    })
}

/// A connection's socket that closes the lingering way. When hyper closes a connection whose
/// client may still be sending (an answer given without reading the whole body), closing the
/// socket at once would make the kernel answer the unread bytes with a reset, and a client that
/// sends its whole body before it reads would lose the answer with it. So its shutdown sends
/// the FIN after the answer, then reads and drops what the client still sends until it closes,
/// up to [`LINGER_BYTES`] and [`LINGER_TIME`] (less if it goes quiet for [`LINGER_QUIET`]).
/// The server's shutdown ends the lingering.
struct Lingering {
    tcp: TcpStream,
    /// Cancelled at the server's shutdown.
    closing: CancellationToken,
    close: Close,
}

/// How far the connection's close has come.
enum Close {
    Open,
    /// The FIN is sent; what the client still sends is read and dropped.
    Draining(Linger),
    Done,
}

struct Linger {
    drained: usize,
    until: Pin<Box<Sleep>>,
    quiet: Pin<Box<Sleep>>,
    /// The server's shutdown, which ends the lingering too.
    stopping: Pin<Box<WaitForCancellationFutureOwned>>,
}

impl Lingering {
    fn new(tcp: TcpStream, closing: CancellationToken) -> Lingering {
        Lingering {
            tcp,
            closing,
            close: Close::Open,
        }
    }

    /// Reads and drops what the client sends until it closes or a bound is reached.
    fn poll_drain(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        let Close::Draining(linger) = &mut self.close else {
            return Poll::Ready(());
        };
        let mut scratch = [0u8; 8 * 1024];
        loop {
            let ended = linger.until.as_mut().poll(cx).is_ready()
                || linger.quiet.as_mut().poll(cx).is_ready()
                || linger.stopping.as_mut().poll(cx).is_ready();
            if ended {
                return Poll::Ready(());
            }
            let mut buf = ReadBuf::new(&mut scratch);
            match ready!(Pin::new(&mut self.tcp).poll_read(cx, &mut buf)) {
                Ok(()) if !buf.filled().is_empty() => {
                    linger.drained += buf.filled().len();
                    if linger.drained >= LINGER_BYTES {
                        return Poll::Ready(());
                    }
                    linger.quiet.as_mut().reset(Instant::now() + LINGER_QUIET);
                }
                // The client closed (or is gone): nothing more can be lost.
                Ok(()) | Err(_) => return Poll::Ready(()),
            }
        }
    }
}

impl AsyncRead for Lingering {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.tcp).poll_read(cx, buf)
    }
}

impl AsyncWrite for Lingering {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.tcp).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.tcp).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.tcp.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.tcp).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if let Close::Open = this.close {
            ready!(Pin::new(&mut this.tcp).poll_shutdown(cx))?;
            let now = Instant::now();
            this.close = Close::Draining(Linger {
                drained: 0,
                until: Box::pin(tokio::time::sleep_until(now + LINGER_TIME)),
                quiet: Box::pin(tokio::time::sleep_until(now + LINGER_QUIET)),
                stopping: Box::pin(this.closing.clone().cancelled_owned()),
            });
        }
        ready!(this.poll_drain(cx));
        this.close = Close::Done;
        Poll::Ready(Ok(()))
    }
}

/// Errors of one connection that was being accepted, not of the listener.
fn is_connection_error(err: &std::io::Error) -> bool {
    matches!(
        err.kind(),
        std::io::ErrorKind::ConnectionRefused
            | std::io::ErrorKind::ConnectionAborted
            | std::io::ErrorKind::ConnectionReset
    )
}
