//! What the MCP gateway costs: a call that needs no approval through Signoff's MCP endpoint
//! (`/api/mcp/default/gate`, an agent with `serve_mcp = true` whose `read_file` comes from an
//! upstream MCP server over streamable HTTP: the Python test server of crates/server/tests/mcp)
//! against the same call straight to that upstream. One call at a time over loopback, each
//! client on its own initialized session; both sides measured alike: the same client code at
//! the same revision, each on its own kept-alive connection, warmed up, one straight call and
//! one through Signoff in turn. Then how fast a held call reaches the approver: many
//! `write_file` calls of `/api/mcp/default/held` sent at once, each timed from its request to
//! its batch on the approvals stream.

use std::path::Path;
use std::sync::Arc;

use serde_json::{json, Value};
use tokio::time::Instant;

use super::idle::{python_mcp_server, PythonMcp};
use super::reach::{follow_stream, Seen};
use super::{errors_figure, pooled_http, Counts, PHASE_LIMIT};
use crate::error::{BenchError, Result};
use crate::progress;
use crate::scenario::ms;
use crate::server::ServerProcess;
use crate::stats::{Figure, Summary};

const GROUP: &str = "gateway (an MCP call that needs no approval)";

/// The revisions measured, each spoken by both ends: a handshake one, and the stateless one
/// (which Signoff's own MCP client speaks to an upstream that offers it, as this one does).
const HANDSHAKE: &str = "2025-06-18";
const STATELESS: &str = "2026-07-28";

fn agents(upstream_port: u16) -> String {
    format!(
        "[[agents]]\nname = \"gate\"\ndescription = \"Gates an upstream MCP server\"\n\
         serve_mcp = true\n\n[[agents.tools]]\nkind = \"mcp_http\"\nname = \"upstream\"\n\
         url = \"http://127.0.0.1:{upstream_port}/mcp\"\ntransport = \"streamable_http\"\n\
         tools = [\"read_file\"]\n\n\
         [[agents]]\nname = \"held\"\ndescription = \"Holds every write\"\nserve_mcp = true\n\n\
         [[agents.tools]]\nkind = \"builtin_files\"\nrequire_approval = [\"write_file\"]\n"
    )
}

/// A minimal MCP client over streamable HTTP: one POST per JSON-RPC message, the answer read
/// from a JSON body or from the event stream the server answers with.
struct McpClient {
    http: reqwest::Client,
    url: String,
    revision: &'static str,
    session: Option<String>,
    next_id: u64,
}

impl McpClient {
    /// Connects as an SDK's client does: a handshake revision initializes first; the stateless
    /// one sends its envelope with every request instead.
    async fn connect(url: String, revision: &'static str) -> Result<McpClient> {
        let mut client = McpClient {
            http: pooled_http(),
            url,
            revision,
            session: None,
            next_id: 1,
        };
        if revision != STATELESS {
            client
                .request(
                    "initialize",
                    json!({"protocolVersion": revision, "capabilities": {},
                           "clientInfo": {"name": "signoff-bench", "version": "1"}}),
                )
                .await?;
            client.notify("notifications/initialized").await?;
        }
        Ok(client)
    }

    fn post(&self, body: &Value) -> reqwest::RequestBuilder {
        let mut request = self
            .http
            .post(&self.url)
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .header("mcp-protocol-version", self.revision);
        if self.revision == STATELESS {
            // The routing headers say what the body says.
            if let Some(method) = body["method"].as_str() {
                request = request.header("mcp-method", method);
            }
            if let Some(name) = body["params"]["name"].as_str() {
                request = request.header("mcp-name", name);
            }
        }
        let request = request.body(body.to_string());
        match &self.session {
            Some(session) => request.header("mcp-session-id", session),
            None => request,
        }
    }

    async fn notify(&self, method: &str) -> Result<()> {
        let body = json!({"jsonrpc": "2.0", "method": method});
        let response = self
            .post(&body)
            .send()
            .await
            .map_err(|err| self.failed(err))?;
        if !response.status().is_success() {
            return Err(BenchError::Unexpected(format!(
                "{}: {method} answered {}",
                self.url,
                response.status()
            )));
        }
        Ok(())
    }

    /// Sends one request and returns its result.
    async fn request(&mut self, method: &str, params: Value) -> Result<Value> {
        let id = self.next_id;
        self.next_id += 1;
        let mut params = params;
        if self.revision == STATELESS {
            params["_meta"] = json!({"io.modelcontextprotocol/protocolVersion": STATELESS,
                                     "io.modelcontextprotocol/clientCapabilities": {}});
        }
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let response = self
            .post(&body)
            .send()
            .await
            .map_err(|err| self.failed(err))?;
        if let Some(session) = response.headers().get("mcp-session-id") {
            self.session = session.to_str().ok().map(str::to_owned);
        }
        let status = response.status();
        let text = response.text().await.map_err(|err| self.failed(err))?;
        if !status.is_success() {
            return Err(BenchError::Unexpected(format!(
                "{}: {method} answered {status}: {text}",
                self.url
            )));
        }
        let answer = answer_of(&text, id).ok_or_else(|| {
            BenchError::Unexpected(format!("{}: no answer to {method} in {text:?}", self.url))
        })?;
        match answer.get("result") {
            Some(result) => Ok(result.clone()),
            None => Err(BenchError::Unexpected(format!(
                "{}: {method} failed: {answer}",
                self.url
            ))),
        }
    }

    fn failed(&self, err: reqwest::Error) -> BenchError {
        BenchError::Unexpected(format!("{}: {err}", self.url))
    }
}

/// The JSON-RPC answer with `id` in a body: JSON, or an event stream's `data:` lines.
fn answer_of(body: &str, id: u64) -> Option<Value> {
    let is_ours = |value: &Value| value.get("id") == Some(&json!(id));
    if let Ok(value) = serde_json::from_str::<Value>(body) {
        return is_ours(&value).then_some(value);
    }
    body.lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .filter_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
        .find(is_ours)
}

/// `calls` sequential `read_file` calls on `client`; each one's milliseconds.
async fn time_calls(client: &mut McpClient, tool: &str, calls: usize) -> Result<Vec<f64>> {
    let mut times = Vec::with_capacity(calls);
    for _ in 0..calls {
        let start = Instant::now();
        let result = client
            .request(
                "tools/call",
                json!({"name": tool, "arguments": {"path": "remote.txt"}}),
            )
            .await?;
        times.push(ms(start, Instant::now()));
        if result["isError"] == json!(true) {
            return Err(BenchError::Unexpected(format!("{tool} failed: {result}")));
        }
    }
    Ok(times)
}

pub async fn gateway(
    binary: &Path,
    work_dir: &Path,
    mcp_dir: Option<&Path>,
    counts: &Counts,
) -> Vec<Figure> {
    match measure(binary, &work_dir.join("gateway"), mcp_dir, counts).await {
        Ok(figures) => figures,
        Err(err) => vec![Figure::missing(GROUP, "gateway", "ms", err.to_string())],
    }
}

async fn measure(
    binary: &Path,
    data_dir: &Path,
    mcp_dir: Option<&Path>,
    counts: &Counts,
) -> Result<Vec<Figure>> {
    let (python, script) = python_mcp_server(mcp_dir)?;
    let upstream = PythonMcp::start(&python, &script).await?;
    let server =
        ServerProcess::start_with_args(binary, data_dir, Some(&agents(upstream.port)), &[]).await?;
    let calls = counts.endpoint_chats;
    let upstream_url = format!("http://127.0.0.1:{}/mcp", upstream.port);
    let gate_url = format!("{}/api/mcp/default/gate", server.base);
    let mut figures = Vec::new();
    for revision in [HANDSHAKE, STATELESS] {
        progress(format_args!(
            "gateway: {calls} read_file calls at {revision} straight to the upstream, then \
             through Signoff"
        ));
        figures.extend(cost_at(revision, &upstream_url, &gate_url, calls).await?);
    }
    figures.extend(cost_of_the_same_upstream_work(&figures));
    let held = counts.load_large;
    progress(format_args!(
        "gateway: {held} write_file calls held at once, the approvals stream open"
    ));
    let (reach, errors) = held_reach(&server, held).await?;
    server.stop().await?;
    figures.push(
        Figure::samples(
            GROUP,
            &format!("{held} held calls to the inbox"),
            "ms",
            &reach,
        )
        .with_note(
            "tools/call write_file on /api/mcp/default/held, sent together -> its batch as a \
                 `pending` event on the approver's approvals stream",
        ),
    );
    figures.push(errors_figure(GROUP, "errors", &errors));
    Ok(figures)
}

/// The path the `index`th held call writes (its batch's `pending` event shows it).
fn held_path(index: usize) -> String {
    format!("held-{index}.txt")
}

/// The path the call of a pending batch writes.
fn written_path(pending: &Value) -> Option<String> {
    pending["calls"].get(0)?["args"]["path"]
        .as_str()
        .map(str::to_owned)
}

/// `calls` held calls sent together, each on its own request; the milliseconds from each
/// request to its batch on the approvals stream, and the errors. The requests are dropped at
/// the end: each client goes away, so its call is canceled.
async fn held_reach(server: &ServerProcess, calls: usize) -> Result<(Vec<f64>, Vec<String>)> {
    let seen = Arc::new(Seen::default());
    follow_stream(server, None, written_path, seen.clone()).await?;
    let url = format!("{}/api/mcp/default/held", server.base);
    let http = pooled_http();
    let barrier = Arc::new(tokio::sync::Barrier::new(calls));
    let mut handles = Vec::with_capacity(calls);
    for index in 0..calls {
        let (http, url, barrier) = (http.clone(), url.clone(), barrier.clone());
        handles.push(tokio::spawn(async move {
            let body = json!({"jsonrpc": "2.0", "id": index, "method": "tools/call", "params":
                {"name": "write_file", "arguments": {"path": held_path(index), "content": "x"}}});
            barrier.wait().await;
            let sent = Instant::now();
            let response = http
                .post(&url)
                .header("accept", "application/json, text/event-stream")
                .header("content-type", "application/json")
                .header("mcp-protocol-version", HANDSHAKE)
                .body(body.to_string())
                .send()
                .await
                .map_err(|err| format!("held call {index}: {err}"))?;
            Ok::<_, String>((held_path(index), sent, response))
        }));
    }
    let (mut held, mut errors) = (Vec::new(), Vec::new());
    for handle in handles {
        match handle.await {
            Ok(Ok(one)) => held.push(one),
            Ok(Err(err)) => errors.push(err),
            Err(err) => errors.push(err.to_string()),
        }
    }
    let keys: Vec<String> = held.iter().map(|(path, _, _)| path.clone()).collect();
    seen.all(&keys, PHASE_LIMIT).await;
    let mut times = Vec::with_capacity(held.len());
    for (path, sent, _) in &held {
        match seen.of(path) {
            Some(at) => times.push(ms(*sent, at)),
            None => errors.push(format!(
                "the held call writing {path} never showed on the stream"
            )),
        }
    }
    Ok((times, errors))
}

/// The same `calls` read_file calls at `revision`, straight to the upstream and through
/// Signoff, and what Signoff adds.
async fn cost_at(
    revision: &'static str,
    upstream_url: &str,
    gate_url: &str,
    calls: usize,
) -> Result<Vec<Figure>> {
    let mut direct = McpClient::connect(upstream_url.to_owned(), revision).await?;
    let mut gated = McpClient::connect(gate_url.to_owned(), revision).await?;
    let tool = gated_name(&mut gated).await?;
    // A few of each first: connections opened, the upstream's session warm.
    time_calls(&mut direct, "read_file", 5).await?;
    time_calls(&mut gated, &tool, 5).await?;
    // One of each in turn, not all of one then all of the other: on a shared machine a load
    // that comes and goes then falls on both alike.
    let (mut straight, mut through) = (Vec::with_capacity(calls), Vec::with_capacity(calls));
    for _ in 0..calls {
        straight.extend(time_calls(&mut direct, "read_file", 1).await?);
        through.extend(time_calls(&mut gated, &tool, 1).await?);
    }
    let mut figures = vec![
        Figure::samples(GROUP, &format!("{revision}: straight"), "ms", &straight).with_note(
            "tools/call read_file on the Python MCP server over streamable HTTP, one at a time",
        ),
        Figure::samples(
            GROUP,
            &format!("{revision}: through Signoff"),
            "ms",
            &through,
        )
        .with_note(format!(
            "the same call as {tool} on /api/mcp/default/gate: screened (no approval \
                 needed), recorded and forwarded"
        )),
    ];
    if let (Some(straight), Some(through)) = (Summary::of(&straight), Summary::of(&through)) {
        figures.push(
            Figure::value(
                GROUP,
                &format!("{revision}: cost (median)"),
                "ms",
                through.median - straight.median,
            )
            .with_note("through Signoff's MCP endpoint - straight to the upstream, medians"),
        );
    }
    Ok(figures)
}

/// Signoff speaks the stateless revision to this upstream whatever its own client speaks, and
/// the upstream's two paths differ (at the handshake revision it answers in an event stream, on
/// a session): a handshake client's call through Signoff makes the upstream work of a stateless
/// straight call, so that is the straight call to set it against for what Signoff itself adds.
fn cost_of_the_same_upstream_work(figures: &[Figure]) -> Option<Figure> {
    let median = |name: String| {
        figures
            .iter()
            .find(|figure| figure.name == name)
            .and_then(|figure| figure.summary.as_ref())
            .map(|summary| summary.median)
    };
    let through = median(format!("{HANDSHAKE}: through Signoff"))?;
    let straight = median(format!("{STATELESS}: straight"))?;
    let figure = Figure::value(
        GROUP,
        &format!("{HANDSHAKE}: cost against the same upstream work (median)"),
        "ms",
        through - straight,
    )
    .with_note(format!(
        "{HANDSHAKE} through Signoff - {STATELESS} straight, medians: Signoff calls the upstream \
         at {STATELESS} whatever its client speaks"
    ));
    Some(figure)
}

/// The name the gateway lists the upstream's `read_file` under (its source may prefix it).
async fn gated_name(client: &mut McpClient) -> Result<String> {
    let listed = client.request("tools/list", json!({})).await?;
    listed["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|tool| tool["name"].as_str())
        .find(|name| name.ends_with("read_file"))
        .map(str::to_owned)
        .ok_or_else(|| BenchError::Unexpected(format!("the gateway lists no read_file: {listed}")))
}

#[cfg(test)]
mod tests {
    use super::{answer_of, held_path, written_path};
    use serde_json::json;

    #[test]
    fn a_pending_batch_names_the_path_its_held_call_writes() {
        let pending = json!({"taskId": "t", "calls": [{"id": "c", "name": "write_file",
            "args": {"path": held_path(7), "content": "x"}}]});
        assert_eq!(written_path(&pending), Some("held-7.txt".to_owned()));
        assert_eq!(written_path(&json!({"taskId": "t", "calls": []})), None);
    }

    #[test]
    fn an_answer_is_read_from_json_or_from_an_event_stream() {
        let json_body = r#"{"jsonrpc":"2.0","id":3,"result":{"ok":true}}"#;
        assert_eq!(
            answer_of(json_body, 3).unwrap()["result"],
            json!({"ok": true})
        );
        assert!(answer_of(json_body, 4).is_none());
        let stream = "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\n\n\
                      event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"ok\":true}}\n\n";
        assert_eq!(answer_of(stream, 3).unwrap()["result"], json!({"ok": true}));
    }
}
