//! A scriptable loopback HTTP server standing in for an upstream (an OpenAI-compatible endpoint,
//! a remote A2A agent), and the answers it gives.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, Method};
use axum::response::Response;
use futures_util::StreamExt;
use serde_json::Value;
use tokio::sync::oneshot;

/// One request the stub received.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub method: Method,
    /// Path and query.
    pub uri: String,
    pub headers: HeaderMap,
    pub body: Bytes,
}

impl Recorded {
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap()
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).map(|value| value.to_str().unwrap())
    }
}

type Handler = Arc<dyn Fn(&Recorded) -> Response + Send + Sync>;

#[derive(Clone)]
struct StubState {
    requests: Arc<Mutex<Vec<Recorded>>>,
    handler: Handler,
}

pub struct Stub {
    pub base: String,
    pub requests: Arc<Mutex<Vec<Recorded>>>,
    _shutdown: oneshot::Sender<()>,
}

impl Stub {
    /// Serves on a port of 127.0.0.1; `handler` answers each request (after it is recorded).
    pub async fn start(handler: impl Fn(&Recorded) -> Response + Send + Sync + 'static) -> Stub {
        let requests = Arc::new(Mutex::new(Vec::new()));
        let state = StubState {
            requests: requests.clone(),
            handler: Arc::new(handler),
        };
        let app = axum::Router::new().fallback(record).with_state(state);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (shutdown, stopped) = oneshot::channel::<()>();
        tokio::spawn(async move {
            axum::serve(listener, app)
                .with_graceful_shutdown(async move {
                    let _ = stopped.await;
                })
                .await
                .unwrap();
        });
        Stub {
            base: format!("http://{addr}"),
            requests,
            _shutdown: shutdown,
        }
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.requests.lock().unwrap().clone()
    }
}

async fn record(State(state): State<StubState>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let body = axum::body::to_bytes(body, usize::MAX).await.unwrap();
    let recorded = Recorded {
        method: parts.method,
        uri: parts.uri.to_string(),
        headers: parts.headers,
        body,
    };
    state.requests.lock().unwrap().push(recorded.clone());
    (state.handler)(&recorded)
}

pub fn fixture(path: &str) -> Vec<u8> {
    let full = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(path);
    std::fs::read(&full).unwrap_or_else(|err| panic!("{}: {err}", full.display()))
}

/// Cuts bytes into pieces of `size` (the last one shorter): chunk boundaries that fall inside
/// lines, JSON strings and UTF-8 characters alike.
pub fn pieces(bytes: &[u8], size: usize) -> Vec<Bytes> {
    bytes.chunks(size).map(Bytes::copy_from_slice).collect()
}

fn sse_response(body: Body) -> Response {
    Response::builder()
        .header("content-type", "text/event-stream")
        .header("cache-control", "no-cache")
        .body(body)
        .unwrap()
}

/// A `text/event-stream` answer sent in small pieces, each one written separately.
pub fn sse(bytes: Vec<u8>) -> Response {
    let chunks = pieces(&bytes, 173);
    let body = futures_util::stream::iter(chunks).then(|chunk| async move {
        // Not a wait for anything: the pause is what makes each piece its own write, so the
        // reader meets chunk boundaries inside lines and characters (what is under test).
        tokio::time::sleep(Duration::from_millis(1)).await;
        Ok::<Bytes, std::io::Error>(chunk)
    });
    sse_response(Body::from_stream(body))
}

pub fn json_response(status: u16, body: &Value) -> Response {
    Response::builder()
        .status(status)
        .header("content-type", "application/json")
        .body(Body::from(body.to_string()))
        .unwrap()
}

/// Sends `first`, then waits for `gate` before sending `rest`: a stream that a buffering relay
/// could never deliver in time.
pub fn gated_sse(first: Vec<u8>, rest: Vec<u8>, gate: oneshot::Receiver<()>) -> Response {
    let first =
        futures_util::stream::once(async move { Ok::<Bytes, std::io::Error>(first.into()) });
    let rest = futures_util::stream::once(async move {
        let _ = gate.await;
        Ok::<Bytes, std::io::Error>(rest.into())
    });
    sse_response(Body::from_stream(first.chain(rest)))
}

/// Tells `dropped` when it is dropped (with the response body that owns it).
pub struct DropSignal(Option<oneshot::Sender<()>>);

impl Drop for DropSignal {
    fn drop(&mut self) {
        if let Some(sender) = self.0.take() {
            let _ = sender.send(());
        }
    }
}

/// Sends `first`, then nothing more, ever; `dropped` fires when the client goes away (hyper
/// drops the body of a closed connection).
pub fn held_sse(first: Vec<u8>, dropped: oneshot::Sender<()>) -> Response {
    let guard = DropSignal(Some(dropped));
    let first =
        futures_util::stream::once(async move { Ok::<Bytes, std::io::Error>(first.into()) });
    let never = futures_util::stream::once(async move {
        let _guard = guard;
        std::future::pending::<()>().await;
        Ok::<Bytes, std::io::Error>(Bytes::new())
    });
    sse_response(Body::from_stream(first.chain(never)))
}
