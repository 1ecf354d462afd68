//! A loopback stand-in for a kagent agent that replays streams and records the requests it
//! gets: kagent 0.10.4's recorded streams (crates/protocol/tests/fixtures/kagent-0.10.4), or
//! the streams of kagent's HITL extension written from its documentation
//! (crates/protocol/tests/fixtures/kagent-hitl-v1). Served by axum, as the server is.

use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::header::{CONNECTION, CONTENT_TYPE};
use axum::http::{HeaderMap, HeaderValue, Method, Uri, Version};
use axum::response::{IntoResponse, Response};
use axum::Router;
use serde_json::Value;

/// The URI of kagent's HITL extension: a message carrying its payload is a decision.
const HITL_URI: &str = "https://kagent.dev/extensions/hitl/v1";

/// Every request body the stand-in got, in order.
pub type Received = Arc<Mutex<Vec<Value>>>;

/// Every request's head (request line and headers, lower-cased), in order.
pub type Heads = Arc<Mutex<Vec<String>>>;

/// A stand-in for a kagent 0.10.4 agent: serves its recorded card, answers the first message
/// with the recorded `interrupt` stream and a decision with the recorded `resume` stream, and
/// keeps every request body it got.
pub async fn fake_kagent(interrupt: &str, resume: &str) -> (String, Received) {
    let (url, bodies, _) = serve("kagent-0.10.4", interrupt, resume).await;
    (url, bodies)
}

/// A stand-in for a kagent agent that speaks its HITL extension (A2A v1.0): serves a card that
/// declares the extension, replays `interrupt` and, for a message carrying the extension's
/// response, `resume`. Keeps every request body, and every request's head (lower-cased), so a
/// test can check the activation header.
pub async fn fake_kagent_hitl(interrupt: &str, resume: &str) -> (String, Received, Heads) {
    serve("kagent-hitl-v1", interrupt, resume).await
}

/// The agents-file entry of a kagent agent `name` (namespace `kagent`) at the stand-in's `url`.
pub fn agent_toml(name: &str, url: &str) -> String {
    format!(
        "[[agents]]\nname = \"{name}\"\nnamespace = \"kagent\"\nremote = {{ url = \"{url}\" }}\n"
    )
}

/// What the stand-in answers with, and what it keeps.
struct Stub {
    card: Bytes,
    interrupt: Bytes,
    resume: Bytes,
    received: Received,
    heads: Heads,
}

async fn serve(dir: &str, interrupt: &str, resume: &str) -> (String, Received, Heads) {
    let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("crates/protocol/tests/fixtures")
        .join(dir);
    let load = |name: &str| {
        Bytes::from(
            std::fs::read(fixtures.join(name))
                .unwrap_or_else(|err| panic!("fixture {name}: {err}")),
        )
    };
    let stub = Arc::new(Stub {
        card: load("agent_card.json"),
        interrupt: load(interrupt),
        resume: load(resume),
        received: Arc::default(),
        heads: Arc::default(),
    });
    let (received, heads) = (stub.received.clone(), stub.heads.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    // Any path: a GET is the card, anything else a JSON-RPC request.
    let app = Router::new().fallback(answer).with_state(stub);
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, received, heads)
}

async fn answer(
    State(stub): State<Arc<Stub>>,
    method: Method,
    uri: Uri,
    version: Version,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let (content_type, body) = if method == Method::GET {
        ("application/json", stub.card.clone())
    } else {
        let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        let message = &request["params"]["message"];
        let is_decision = message["parts"].as_array().is_some_and(|parts| {
            parts
                .iter()
                .any(|part| part["data"]["decision_type"].is_string())
        }) || message["metadata"][HITL_URI]["type"].is_string();
        if let Ok(mut received) = stub.received.lock() {
            received.push(request);
        }
        if let Ok(mut heads) = stub.heads.lock() {
            heads.push(head(&method, &uri, version, &headers));
        }
        let stream = if is_decision {
            &stub.resume
        } else {
            &stub.interrupt
        };
        ("text/event-stream", stream.clone())
    };
    let mut response = ([(CONTENT_TYPE, content_type)], body).into_response();
    // kagent echoes the extension it activated.
    if activates_hitl(&headers) {
        response
            .headers_mut()
            .insert("a2a-extensions", HeaderValue::from_static(HITL_URI));
    }
    response
        .headers_mut()
        .insert(CONNECTION, HeaderValue::from_static("close"));
    response
}

/// Whether the request's `A2A-Extensions` list names the HITL extension.
fn activates_hitl(headers: &HeaderMap) -> bool {
    headers
        .get_all("a2a-extensions")
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .any(|uri| uri.trim().eq_ignore_ascii_case(HITL_URI))
}

/// The request's head as it came on the wire, lower-cased: its request line, then a
/// `name: value` line per header.
fn head(method: &Method, uri: &Uri, version: Version, headers: &HeaderMap) -> String {
    let mut head = format!("{method} {uri} {version:?}");
    for (name, value) in headers {
        head.push_str(&format!(
            "\r\n{name}: {}",
            String::from_utf8_lossy(value.as_bytes())
        ));
    }
    head.to_lowercase()
}
