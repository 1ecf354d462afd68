//! The accept loop: HTTP/1 connections served with the limits a server on an open network
//! needs (axum's `serve` sets none). A client that stalls while sending a request's headers is
//! disconnected after the read timeout (so is a keep-alive connection that sends no next
//! request), and at shutdown open connections get at most [`SHUTDOWN_GRACE`] (or the read
//! timeout, if shorter) to finish, so a stalled or trickling client can neither hold
//! connections forever nor keep SIGTERM from stopping the server. The body's side of the timeout is `RequestBodyTimeoutLayer` (`run`).

use std::future::Future;
use std::time::Duration;

use axum::Router;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

/// Longest wait at shutdown for open connections to finish their requests. Streams and
/// blocking sends end at once (`Runtime::begin_shutdown`); what is left is a slow client.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

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
        let tcp = match accepted {
            Ok((tcp, _peer)) => tcp,
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
        let service = TowerToHyperService::new(app.clone());
        let closing = closing.clone();
        connections.spawn(async move {
            let mut builder = http1::Builder::new();
            builder
                .timer(TokioTimer::new())
                .header_read_timeout(read_timeout);
            let connection = builder.serve_connection(TokioIo::new(tcp), service);
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

/// Errors of one connection that was being accepted, not of the listener.
fn is_connection_error(err: &std::io::Error) -> bool {
    matches!(
        err.kind(),
        std::io::ErrorKind::ConnectionRefused
            | std::io::ErrorKind::ConnectionAborted
            | std::io::ErrorKind::ConnectionReset
    )
}
