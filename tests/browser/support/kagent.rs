//! A loopback stand-in for a kagent agent that replays streams and records the requests it
//! gets: kagent 0.10.4's recorded streams (crates/protocol/tests/fixtures/kagent-0.10.4), or
//! the streams of kagent's HITL extension written from its documentation
//! (crates/protocol/tests/fixtures/kagent-hitl-v1).

use std::sync::{Arc, Mutex};

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The URI of kagent's HITL extension: a message carrying its payload is a decision.
const HITL_URI: &str = "https://kagent.dev/extensions/hitl/v1";

/// A stand-in for a kagent 0.10.4 agent: serves its recorded card, answers the first message
/// with the recorded `interrupt` stream and a decision with the recorded `resume` stream, and
/// keeps every request body it got.
pub async fn fake_kagent(interrupt: &str, resume: &str) -> (String, Arc<Mutex<Vec<Value>>>) {
    let (url, bodies, _) = serve("kagent-0.10.4", interrupt, resume).await;
    (url, bodies)
}

/// A stand-in for a kagent agent that speaks its HITL extension (A2A v1.0): serves a card that
/// declares the extension, replays `interrupt` and, for a message carrying the extension's
/// response, `resume`. Keeps every request body, and every request's head (lower-cased), so a
/// test can check the activation header.
pub async fn fake_kagent_hitl(
    interrupt: &str,
    resume: &str,
) -> (String, Arc<Mutex<Vec<Value>>>, Arc<Mutex<Vec<String>>>) {
    serve("kagent-hitl-v1", interrupt, resume).await
}

async fn serve(
    dir: &str,
    interrupt: &str,
    resume: &str,
) -> (String, Arc<Mutex<Vec<Value>>>, Arc<Mutex<Vec<String>>>) {
    let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("crates/protocol/tests/fixtures")
        .join(dir);
    let load = |name: &str| {
        std::fs::read(fixtures.join(name)).unwrap_or_else(|err| panic!("fixture {name}: {err}"))
    };
    let (card, interrupt, resume) = (load("agent_card.json"), load(interrupt), load(resume));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    let received = Arc::new(Mutex::new(Vec::new()));
    let heads = Arc::new(Mutex::new(Vec::new()));
    let (seen, seen_heads) = (received.clone(), heads.clone());
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let (card, interrupt, resume, seen, seen_heads) = (
                card.clone(),
                interrupt.clone(),
                resume.clone(),
                seen.clone(),
                seen_heads.clone(),
            );
            tokio::spawn(async move {
                let mut buffer = Vec::new();
                let mut chunk = [0u8; 4096];
                let (head_end, length) = loop {
                    let read = socket.read(&mut chunk).await.unwrap_or(0);
                    if read == 0 {
                        return;
                    }
                    buffer.extend_from_slice(&chunk[..read]);
                    if let Some(end) = buffer.windows(4).position(|window| window == b"\r\n\r\n") {
                        let head = String::from_utf8_lossy(&buffer[..end]).to_lowercase();
                        let length = head
                            .lines()
                            .find_map(|line| line.strip_prefix("content-length:"))
                            .and_then(|value| value.trim().parse::<usize>().ok())
                            .unwrap_or(0);
                        break (end + 4, length);
                    }
                };
                while buffer.len() < head_end + length {
                    let read = socket.read(&mut chunk).await.unwrap_or(0);
                    if read == 0 {
                        break;
                    }
                    buffer.extend_from_slice(&chunk[..read]);
                }
                let (content_type, body) = if buffer.starts_with(b"GET") {
                    ("application/json", card)
                } else {
                    let request: Value =
                        serde_json::from_slice(&buffer[head_end..]).unwrap_or(Value::Null);
                    let message = &request["params"]["message"];
                    let is_decision = message["parts"].as_array().is_some_and(|parts| {
                        parts
                            .iter()
                            .any(|part| part["data"]["decision_type"].is_string())
                    }) || message["metadata"][HITL_URI]["type"].is_string();
                    if let Ok(mut seen) = seen.lock() {
                        seen.push(request);
                    }
                    if let Ok(mut heads) = seen_heads.lock() {
                        heads.push(String::from_utf8_lossy(&buffer[..head_end]).to_lowercase());
                    }
                    (
                        "text/event-stream",
                        if is_decision { resume } else { interrupt },
                    )
                };
                // kagent echoes the extension it activated.
                let request_head = String::from_utf8_lossy(&buffer[..head_end]).to_lowercase();
                let echo = if request_head.contains(&format!("a2a-extensions: {HITL_URI}")) {
                    format!("a2a-extensions: {HITL_URI}\r\n")
                } else {
                    String::new()
                };
                let head = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\n{echo}connection: close\r\n\r\n",
                    body.len()
                );
                let _ = socket.write_all(head.as_bytes()).await;
                let _ = socket.write_all(&body).await;
                let _ = socket.shutdown().await;
            });
        }
    });
    (url, received, heads)
}
