//! `spawn_app()` and the client helpers every test uses.

use std::net::SocketAddr;
use std::time::Duration;

use futures_util::StreamExt;
use serde_json::{json, Value};
use signoff_server::Config;
use tokio::sync::oneshot;

pub struct TestApp {
    pub base: String,
    pub client: reqwest::Client,
    pub data_dir: tempfile::TempDir,
    shutdown: Option<oneshot::Sender<()>>,
    server: Option<tokio::task::JoinHandle<Result<(), signoff_server::ServerError>>>,
}

pub async fn spawn_app() -> TestApp {
    spawn_with(|_| {}).await
}

/// Starts a server with a fresh data folder; `configure` may change the config first.
pub async fn spawn_with(configure: impl FnOnce(&mut Config)) -> TestApp {
    let data_dir = tempfile::tempdir().unwrap();
    spawn_in(data_dir, configure).await
}

pub async fn spawn_in(data_dir: tempfile::TempDir, configure: impl FnOnce(&mut Config)) -> TestApp {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr: SocketAddr = listener.local_addr().unwrap();
    let mut config = Config::new(data_dir.path());
    configure(&mut config);
    let (sender, receiver) = oneshot::channel::<()>();
    let server = tokio::spawn(signoff_server::run(listener, config, async move {
        let _ = receiver.await;
    }));
    TestApp {
        base: format!("http://{addr}"),
        client: reqwest::Client::new(),
        data_dir,
        shutdown: Some(sender),
        server: Some(server),
    }
}

impl TestApp {
    /// A client for a server running elsewhere (the real binary) with data in `data_dir`.
    pub fn external(base: String, data_dir: tempfile::TempDir) -> TestApp {
        TestApp {
            base,
            client: reqwest::Client::new(),
            data_dir,
            shutdown: None,
            server: None,
        }
    }

    /// Hands back the data folder without stopping anything (for an external server).
    pub fn into_data_dir(mut self) -> tempfile::TempDir {
        self.shutdown.take();
        self.server.take();
        let dir = tempfile::tempdir().unwrap();
        std::mem::replace(&mut self.data_dir, dir)
    }

    pub fn endpoint(&self) -> String {
        format!("{}/api/a2a/default/demo", self.base)
    }

    pub fn sandbox(&self) -> std::path::PathBuf {
        self.data_dir.path().join("sandbox")
    }

    /// Stops the server gracefully and hands back its data folder.
    pub async fn stop(mut self) -> tempfile::TempDir {
        if let Some(sender) = self.shutdown.take() {
            let _ = sender.send(());
        }
        if let Some(server) = self.server.take() {
            tokio::time::timeout(Duration::from_secs(30), server)
                .await
                .expect("server stops within 30 s")
                .unwrap()
                .unwrap();
        }
        self.data_dir
    }

    fn post(
        &self,
        version: Option<&str>,
        token: Option<&str>,
        body: &Value,
    ) -> reqwest::RequestBuilder {
        let mut request = self.client.post(self.endpoint()).json(body);
        if let Some(version) = version {
            request = request.header("A2A-Version", version);
        }
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        request
    }

    /// A unary JSON-RPC call; returns the whole response object.
    pub async fn rpc(&self, version: Option<&str>, body: Value) -> Value {
        self.rpc_as(version, None, body).await
    }

    pub async fn rpc_as(&self, version: Option<&str>, token: Option<&str>, body: Value) -> Value {
        let response = self.post(version, token, &body).send().await.unwrap();
        assert_eq!(response.status(), 200, "JSON-RPC answers HTTP 200");
        response.json().await.unwrap()
    }

    /// A streaming JSON-RPC call, read to its end: every SSE `data:` payload, parsed.
    pub async fn stream(&self, version: Option<&str>, body: Value) -> Vec<Value> {
        self.stream_as(version, None, body).await
    }

    pub async fn stream_as(
        &self,
        version: Option<&str>,
        token: Option<&str>,
        body: Value,
    ) -> Vec<Value> {
        let mut events = self.open_stream(version, token, body).await;
        let mut out = Vec::new();
        while let Some(event) = events.next().await {
            out.push(event);
        }
        out
    }

    /// A streaming call whose events are read one at a time.
    pub async fn open_stream(
        &self,
        version: Option<&str>,
        token: Option<&str>,
        body: Value,
    ) -> SseStream {
        let response = self.post(version, token, &body).send().await.unwrap();
        assert_eq!(response.status(), 200);
        let kind = response
            .headers()
            .get("content-type")
            .and_then(|value| value.to_str().ok())
            .unwrap_or("")
            .to_owned();
        assert!(kind.starts_with("text/event-stream"), "content type {kind}");
        SseStream {
            body: Box::pin(response.bytes_stream()),
            buffer: Vec::new(),
        }
    }

    pub async fn get(&self, path: &str) -> (u16, Value) {
        self.get_as(path, None).await
    }

    pub async fn get_as(&self, path: &str, token: Option<&str>) -> (u16, Value) {
        let mut request = self.client.get(format!("{}{path}", self.base));
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        let body = response.json().await.unwrap_or(Value::Null);
        (status, body)
    }

    pub async fn post_json_as(
        &self,
        path: &str,
        token: Option<&str>,
        body: &Value,
    ) -> (u16, Value) {
        let mut request = self.client.post(format!("{}{path}", self.base)).json(body);
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        let body = response.json().await.unwrap_or(Value::Null);
        (status, body)
    }
}

/// Reads SSE frames off a response body and yields each `data:` payload as JSON.
pub struct SseStream {
    body: std::pin::Pin<Box<dyn futures_util::Stream<Item = reqwest::Result<bytes::Bytes>> + Send>>,
    buffer: Vec<u8>,
}

impl SseStream {
    /// The next event's data, or `None` when the stream ends. Panics after 60 s of silence.
    pub async fn next(&mut self) -> Option<Value> {
        loop {
            if let Some(end) = find(&self.buffer, b"\n\n") {
                let frame: Vec<u8> = self.buffer.drain(..end + 2).collect();
                let text = String::from_utf8(frame).unwrap();
                let data: Vec<&str> = text
                    .lines()
                    .filter_map(|line| line.strip_prefix("data:"))
                    .map(str::trim_start)
                    .collect();
                if data.is_empty() {
                    continue; // a comment (keep-alive)
                }
                return Some(serde_json::from_str(&data.join("\n")).unwrap());
            }
            let chunk = tokio::time::timeout(Duration::from_secs(60), self.body.next())
                .await
                .expect("an SSE event within 60 s");
            match chunk {
                Some(chunk) => self.buffer.extend_from_slice(&chunk.unwrap()),
                None => return None,
            }
        }
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .position(|window| window == needle)
}

/// A v0.3 user message.
pub fn message_v03(text: &str, task_id: Option<&str>, context_id: Option<&str>) -> Value {
    let mut message = json!({
        "kind": "message",
        "messageId": uuid::Uuid::new_v4().to_string(),
        "role": "user",
        "parts": [{"kind": "text", "text": text}],
    });
    if let Some(task_id) = task_id {
        message["taskId"] = json!(task_id);
    }
    if let Some(context_id) = context_id {
        message["contextId"] = json!(context_id);
    }
    message
}

/// A v1.0 user message.
pub fn message_v10(text: &str, task_id: Option<&str>, context_id: Option<&str>) -> Value {
    let mut message = json!({
        "messageId": uuid::Uuid::new_v4().to_string(),
        "role": "ROLE_USER",
        "parts": [{"text": text}],
    });
    if let Some(task_id) = task_id {
        message["taskId"] = json!(task_id);
    }
    if let Some(context_id) = context_id {
        message["contextId"] = json!(context_id);
    }
    message
}

pub fn request(method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
}

/// The v0.3 `result` of each event, asserting none is an error.
pub fn results(events: &[Value]) -> Vec<Value> {
    events
        .iter()
        .map(|event| {
            assert!(
                event.get("error").is_none(),
                "unexpected error event {event}"
            );
            event["result"].clone()
        })
        .collect()
}

/// The states of the v0.3 status updates, in order.
pub fn states(results: &[Value]) -> Vec<String> {
    results
        .iter()
        .filter(|result| result["kind"] == "status-update")
        .map(|result| result["status"]["state"].as_str().unwrap().to_owned())
        .collect()
}

/// All streamed answer text, joined.
pub fn answer_text(results: &[Value]) -> String {
    results
        .iter()
        .filter(|result| result["kind"] == "artifact-update")
        .flat_map(|result| result["artifact"]["parts"].as_array().unwrap().clone())
        .filter_map(|part| part["text"].as_str().map(str::to_owned))
        .collect()
}

/// The DataParts of status-update messages with the given `kagent_type`.
pub fn data_parts(results: &[Value], kind: &str) -> Vec<Value> {
    results
        .iter()
        .filter(|result| result["kind"] == "status-update")
        .filter_map(|result| result["status"]["message"]["parts"].as_array().cloned())
        .flatten()
        .filter(|part| part["metadata"]["kagent_type"] == kind)
        .map(|part| part["data"].clone())
        .collect()
}

/// The task id of a v0.3 stream.
pub fn task_id(results: &[Value]) -> String {
    results[0]["taskId"]
        .as_str()
        .or_else(|| results[0]["id"].as_str())
        .unwrap()
        .to_owned()
}
