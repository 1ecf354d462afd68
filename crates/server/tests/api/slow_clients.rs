//! Clients that stall: a request whose headers or body stop coming is cut off after the read
//! timeout, and neither such a client nor one that trickles its body keeps the server from
//! stopping (without a limit, each held its connection, and a graceful stop waited for it,
//! forever). And clients that leave: a decision sent whole is applied even if its client
//! closes the connection at once.

use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::support::*;

/// A connection to `app` that has sent `bytes` and then nothing more.
async fn stalled(app: &TestApp, bytes: &[u8]) -> TcpStream {
    let address = app.base.trim_start_matches("http://");
    let mut socket = TcpStream::connect(address).await.unwrap();
    socket.write_all(bytes).await.unwrap();
    socket
}

/// Reads until the server closes the connection; what it said before.
async fn until_closed(what: &str, socket: &mut TcpStream) -> String {
    let mut said = Vec::new();
    // A reset is a close too.
    let _ = within(what, socket.read_to_end(&mut said)).await;
    String::from_utf8_lossy(&said).into_owned()
}

#[tokio::test]
async fn a_request_whose_headers_or_body_stop_coming_is_cut_off() {
    let app = spawn_with(|config| config.read_timeout_secs = 1).await;
    let mut headers = stalled(&app, b"GET /healthz HTTP/1.1\r\nHost: x\r\n").await;
    let mut body = stalled(
        &app,
        b"POST /api/approvals/t-1 HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n\
          Content-Length: 100\r\n\r\n{\"decision_type\"",
    )
    .await;
    let said = until_closed("a request whose headers stopped", &mut headers).await;
    assert!(!said.contains("200 OK"), "{said}");
    let said = until_closed("a request whose body stopped", &mut body).await;
    assert!(!said.contains("200 OK"), "{said}");
    // Others are served as before.
    let (status, health) = app.get("/healthz").await;
    assert_eq!(status, 200, "{health}");
    app.stop().await;
}

#[tokio::test]
async fn a_stalled_or_trickling_client_does_not_keep_the_server_from_stopping() {
    let app = spawn_with(|config| config.read_timeout_secs = 1).await;
    let _headers = stalled(&app, b"GET /healthz HTTP/1.1\r\nHost: x\r\n").await;
    let mut trickling = stalled(
        &app,
        b"POST /api/approvals/t-1 HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n\
          Content-Length: 1000000\r\n\r\n",
    )
    .await;
    // A space every 100 ms: never silent for the read timeout, never done.
    let trickle = tokio::spawn(async move {
        while trickling.write_all(b" ").await.is_ok() {
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
    });
    app.stop().await;
    trickle.abort();
}

/// Sends `body` as JSON to `path` of `app` over a connection of its own, and closes it at once,
/// without waiting for the answer.
async fn post_and_leave(app: &TestApp, path: &str, body: &Value) {
    let address = app.base.trim_start_matches("http://");
    let body = body.to_string();
    let request = format!(
        "POST {path} HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let mut socket = TcpStream::connect(address).await.unwrap();
    socket.write_all(request.as_bytes()).await.unwrap();
    drop(socket);
}

// On threads of its own, as the server runs: its connection then reads the client's close
// while the decision is on its way, as it does in production.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_decision_whose_client_leaves_at_once_is_applied_all_the_same() {
    let app = spawn_app().await;
    for round in 0..10 {
        let file = format!("left-{round}.txt");
        let paused = say(&app, &format!("write {file}: round {round}")).await;
        let (task, context) = (task_id(&paused), context_id(&paused));
        let approve = json!({"decision_type": "approve"});
        // Over A2A and over REST, by turns.
        if round % 2 == 0 {
            let body = message_request("message/send", decision(&task, &context, approve));
            post_and_leave(&app, DEMO, &body).await;
        } else {
            post_and_leave(&app, &format!("/api/approvals/{task}"), &approve).await;
        }
        wait_for_state(&app, &task, "completed").await;
        let written = std::fs::read_to_string(app.sandbox().join(&file)).unwrap();
        assert_eq!(written, format!("round {round}"), "round {round}");
    }
    app.stop().await;
}
