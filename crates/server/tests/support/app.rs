//! [`TestApp`]: the server started in-process on port 0 with a fresh data folder (or the real
//! binary, started by the test), the HTTP requests the tests make of it, and a graceful stop.

use std::path::{Path, PathBuf};

use serde_json::Value;
use signoff_server::Config;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use super::database::database_url;
use super::sse::SseStream;
use super::wait::within;

/// The demo agent's A2A endpoint (the default agents file's only agent).
pub const DEMO: &str = "/api/a2a/default/demo";

pub struct TestApp {
    pub base: String,
    pub client: reqwest::Client,
    pub data_dir: tempfile::TempDir,
    shutdown: Option<oneshot::Sender<()>>,
    server: Option<JoinHandle<Result<(), signoff_server::ServerError>>>,
}

/// The server with its default (demo) agents and a fresh data folder.
pub async fn spawn_app() -> TestApp {
    spawn_with(|_| {}).await
}

/// The server with a fresh data folder; `configure` may change the config first.
pub async fn spawn_with(configure: impl FnOnce(&mut Config)) -> TestApp {
    spawn_in(tempfile::tempdir().unwrap(), configure).await
}

/// The server with `agents_toml` as its agents file, in a fresh data folder.
pub async fn spawn_with_agents(agents_toml: &str, configure: impl FnOnce(&mut Config)) -> TestApp {
    let data_dir = tempfile::tempdir().unwrap();
    let agents = write_agents(data_dir.path(), agents_toml);
    spawn_in(data_dir, move |config| {
        config.agents_file = Some(agents);
        configure(config);
    })
    .await
}

/// Writes `agents_toml` as `agents.toml` in `dir` and returns its path.
pub fn write_agents(dir: &Path, agents_toml: &str) -> PathBuf {
    let path = dir.join("agents.toml");
    std::fs::write(&path, agents_toml).unwrap();
    path
}

/// The server on the data in `data_dir` (a restart keeps what the last run stored).
pub async fn spawn_in(data_dir: tempfile::TempDir, configure: impl FnOnce(&mut Config)) -> TestApp {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    spawn_on(listener, data_dir, configure).await
}

/// The server on `listener`, bound beforehand (a test that must know its address before it
/// configures the server: an identity provider's redirect URI).
pub async fn spawn_on(
    listener: tokio::net::TcpListener,
    data_dir: tempfile::TempDir,
    configure: impl FnOnce(&mut Config),
) -> TestApp {
    let addr = listener.local_addr().unwrap();
    let mut config = Config::new(data_dir.path());
    config.database_url = database_url(data_dir.path()).await;
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

    /// Hands back the data folder of an external server, which the test stops itself.
    pub fn into_data_dir(self) -> tempfile::TempDir {
        self.data_dir
    }

    /// Stops the server gracefully (it must stop, without an error) and hands back its data
    /// folder.
    pub async fn stop(mut self) -> tempfile::TempDir {
        if let Some(sender) = self.shutdown.take() {
            let _ = sender.send(());
        }
        if let Some(server) = self.server.take() {
            within("the server to stop", server).await.unwrap().unwrap();
        }
        self.data_dir
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// The demo agent's A2A endpoint, in full.
    pub fn endpoint(&self) -> String {
        self.url(DEMO)
    }

    /// The demo agent's sandbox folder.
    pub fn sandbox(&self) -> PathBuf {
        self.data_dir.path().join("sandbox")
    }

    pub fn post(&self, path: &str) -> reqwest::RequestBuilder {
        self.client.post(self.url(path))
    }

    /// A JSON-RPC request to the A2A endpoint at `path`.
    fn a2a(
        &self,
        path: &str,
        version: Option<&str>,
        token: Option<&str>,
        body: &Value,
    ) -> reqwest::RequestBuilder {
        let mut request = self.post(path).json(body);
        if let Some(version) = version {
            request = request.header("A2A-Version", version);
        }
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        request
    }

    /// A unary JSON-RPC call to the demo agent; returns the whole response object.
    pub async fn rpc(&self, version: Option<&str>, body: Value) -> Value {
        self.rpc_as(version, None, body).await
    }

    pub async fn rpc_as(&self, version: Option<&str>, token: Option<&str>, body: Value) -> Value {
        let response = self.a2a(DEMO, version, token, &body).send().await.unwrap();
        assert_eq!(response.status(), 200, "JSON-RPC answers HTTP 200");
        response.json().await.unwrap()
    }

    /// A unary JSON-RPC call to the agent at `path`; returns the whole response object.
    pub async fn rpc_at(&self, path: &str, version: Option<&str>, body: Value) -> Value {
        let response = self.a2a(path, version, None, &body).send().await.unwrap();
        assert_eq!(response.status(), 200, "JSON-RPC answers HTTP 200");
        response.json().await.unwrap()
    }

    /// A streaming call to the agent at `path` whose events are read one at a time.
    pub async fn open_stream_at(
        &self,
        path: &str,
        version: Option<&str>,
        body: Value,
    ) -> SseStream {
        let response = self.a2a(path, version, None, &body).send().await.unwrap();
        SseStream::new(response)
    }

    /// A streaming JSON-RPC call to the demo agent, read to its end: every event's data.
    pub async fn stream(&self, version: Option<&str>, body: Value) -> Vec<Value> {
        self.stream_as(version, None, body).await
    }

    pub async fn stream_as(
        &self,
        version: Option<&str>,
        token: Option<&str>,
        body: Value,
    ) -> Vec<Value> {
        self.open_stream(version, token, body).await.collect().await
    }

    /// A streaming v0.3 call to the agent at `path`, read to its end.
    pub async fn stream_at(&self, path: &str, body: &Value) -> Vec<Value> {
        let response = self.a2a(path, None, None, body).send().await.unwrap();
        SseStream::new(response).collect().await
    }

    /// A streaming call to the demo agent whose events are read one at a time.
    pub async fn open_stream(
        &self,
        version: Option<&str>,
        token: Option<&str>,
        body: Value,
    ) -> SseStream {
        let response = self.a2a(DEMO, version, token, &body).send().await.unwrap();
        SseStream::new(response)
    }

    /// Posts `body` as it is (no JSON encoding) to the demo agent, with `A2A-Version` bytes that
    /// need not be text; the response's text.
    pub async fn post_raw(&self, body: &str, version: Option<&[u8]>) -> String {
        let mut request = self
            .post(DEMO)
            .header("content-type", "application/json")
            .body(body.to_owned());
        if let Some(version) = version {
            let version = reqwest::header::HeaderValue::from_bytes(version).unwrap();
            request = request.header("A2A-Version", version);
        }
        let response = request.send().await.unwrap();
        assert_eq!(response.status(), 200, "JSON-RPC answers HTTP 200");
        response.text().await.unwrap()
    }

    pub async fn get(&self, path: &str) -> (u16, Value) {
        self.get_as(path, None).await
    }

    pub async fn get_as(&self, path: &str, token: Option<&str>) -> (u16, Value) {
        let request = self.client.get(self.url(path));
        answer(with_token(request, token)).await
    }

    pub async fn post_json_as(
        &self,
        path: &str,
        token: Option<&str>,
        body: &Value,
    ) -> (u16, Value) {
        answer(with_token(self.post(path).json(body), token)).await
    }

    /// A DELETE; its status.
    pub async fn delete(&self, path: &str) -> u16 {
        self.delete_as(path, None).await
    }

    /// A DELETE; its status and JSON body (`null` when it has none).
    pub async fn delete_json(&self, path: &str) -> (u16, Value) {
        answer(self.client.delete(self.url(path))).await
    }

    /// A DELETE as the user of `token`; its status.
    pub async fn delete_as(&self, path: &str, token: Option<&str>) -> u16 {
        let request = with_token(self.client.delete(self.url(path)), token);
        request.send().await.unwrap().status().as_u16()
    }
}

fn with_token(request: reqwest::RequestBuilder, token: Option<&str>) -> reqwest::RequestBuilder {
    match token {
        Some(token) => request.bearer_auth(token),
        None => request,
    }
}

/// The status and JSON body (null when there is none) of a REST call.
async fn answer(request: reqwest::RequestBuilder) -> (u16, Value) {
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}
