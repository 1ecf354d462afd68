//! `tools/call` to a streamable-HTTP server of the stateless 2026-07-28 revision, sent from the
//! calling task itself, on a kept-alive connection: one POST, its answer read from a JSON body
//! or an event stream. Through rmcp's client the same call opened a TCP connection of its own
//! (its default HTTP client keeps none idle) and passed rmcp's service loop, a send task and its
//! transport worker each way: a quarter of a gateway call's instructions, and a connect and an
//! accept on each call (crates/bench/README.md, "Where the gateway's time goes"). The rmcp
//! session still discovers the server, lists its tools and notices it go away; only the
//! calls take the short way. The request is rmcp's own (its model types, serialized as it
//! serializes them), with the envelope and routing headers the revision asks for; a call whose
//! tool wants `Mcp-Param-*` headers (`x-mcp-header` in its schema) or whose name cannot travel
//! as a plain header value goes through rmcp, which writes those.
//!
//! The revision has no back channel: a server asks through an `input_required` result, which
//! the caller answers and sends again (`Connection::call`); progress notifications on the
//! stream are read past, as rmcp's client ignores them. Dropping the call drops the request,
//! which is how this revision cancels.

use std::collections::HashSet;
use std::sync::atomic::{AtomicI64, Ordering};

use futures_util::StreamExt;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, ACCEPT, CONTENT_TYPE};
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResponse, CallToolResult, ClientJsonRpcMessage,
    ClientRequest, ErrorData, ProtocolVersion, RequestId, RequestMetaObject, Tool,
};
use serde_json::Value;
use sse_stream::SseStream;

use super::asking::client_info;

/// The revision whose calls go this way.
pub const REVISION: ProtocolVersion = ProtocolVersion::V_2026_07_28;

/// The most redirects one call follows (rmcp's limit).
const MAX_REDIRECTS: usize = 10;

/// The largest answer read (a JSON body, or one event of a stream).
const MAX_ANSWER_BYTES: usize = 64 * 1024 * 1024;

/// The HTTP client of one server's direct calls. Unlike rmcp's (which opens a connection per
/// request, so that a body it left unread never stalls the next request on a reused
/// connection), it keeps connections alive: every answer is read to its end, and a stream left
/// early is dropped with its connection. Redirects are followed within the server's origin
/// only, as rmcp's are.
pub fn http_client() -> reqwest::Client {
    let same_origin = reqwest::redirect::Policy::custom(|attempt| {
        let same = attempt
            .previous()
            .last()
            .is_some_and(|from| from.origin() == attempt.url().origin());
        if same && attempt.previous().len() <= MAX_REDIRECTS {
            attempt.follow()
        } else {
            attempt.stop()
        }
    });
    reqwest::Client::builder()
        .redirect(same_origin)
        .build()
        .unwrap_or_default()
}

/// How a direct call failed.
#[derive(Debug, Clone, PartialEq)]
pub enum DirectError {
    /// The request or its answer broke on the way (the server went away): the connection is
    /// reset, as rmcp's would be.
    Broken(String),
    /// The server answered with an error.
    Rejected(String),
}

/// One server's calls, sent straight.
pub struct Direct {
    http: reqwest::Client,
    url: String,
    /// The agents file's headers, and the revision's fixed ones.
    headers: HeaderMap,
    /// The envelope every request of the revision carries in `params._meta`.
    meta: RequestMetaObject,
    /// The server's tools whose calls may go this way.
    plain: HashSet<String>,
    next_id: AtomicI64,
}

impl Direct {
    /// The direct way to the server at `url`, for the tools it listed.
    pub fn new(
        http: reqwest::Client,
        url: &str,
        custom: &[(http::HeaderName, http::HeaderValue)],
        tools: &[Tool],
    ) -> Direct {
        let mut headers: HeaderMap = custom.iter().cloned().collect();
        headers.insert(
            ACCEPT,
            HeaderValue::from_static("application/json, text/event-stream"),
        );
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        headers.insert(
            HeaderName::from_static("mcp-protocol-version"),
            HeaderValue::from_static(REVISION.as_str()),
        );
        headers.insert(
            HeaderName::from_static("mcp-method"),
            HeaderValue::from_static("tools/call"),
        );
        let info = client_info();
        let meta =
            RequestMetaObject::with_client_context(REVISION, info.client_info, info.capabilities);
        let plain = tools
            .iter()
            .filter(|tool| plain_header(&tool.name) && !wants_param_headers(tool))
            .map(|tool| tool.name.to_string())
            .collect();
        Direct {
            http,
            url: url.to_owned(),
            headers,
            meta,
            plain,
            next_id: AtomicI64::new(1),
        }
    }

    /// Whether calls of `tool` (its name on the server) go this way.
    pub fn takes(&self, tool: &str) -> bool {
        self.plain.contains(tool)
    }

    /// Sends one `tools/call` and reads its answer.
    pub async fn call_once(
        &self,
        mut params: CallToolRequestParams,
    ) -> Result<CallToolResponse, DirectError> {
        let id = RequestId::Number(self.next_id.fetch_add(1, Ordering::Relaxed));
        let name = HeaderValue::from_str(&params.name)
            .map_err(|_| DirectError::Rejected("the tool's name is no header value".into()))?;
        params
            .meta
            .get_or_insert_with(RequestMetaObject::new)
            .extend(self.meta.clone());
        let request = ClientJsonRpcMessage::request(
            ClientRequest::CallToolRequest(CallToolRequest::new(params)),
            id.clone(),
        );
        let body = serde_json::to_vec(&request)
            .map_err(|error| DirectError::Rejected(format!("unwritable request: {error}")))?;
        let response = self
            .http
            .post(&self.url)
            .headers(self.headers.clone())
            .header(HeaderName::from_static("mcp-name"), name)
            .body(body)
            .send()
            .await
            .map_err(|error| DirectError::Broken(error.to_string()))?;
        let status = response.status();
        let is_stream = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .is_some_and(|value| value.starts_with("text/event-stream"));
        if is_stream && status.is_success() {
            return answer_from_stream(response, &id).await;
        }
        let body = body_of(response).await?;
        match serde_json::from_slice::<Value>(&body) {
            Ok(message) => answer_of(message, &id).unwrap_or_else(|| {
                Err(DirectError::Rejected(
                    "it answered with another message than the call's answer".into(),
                ))
            }),
            Err(_) if !status.is_success() => {
                Err(DirectError::Rejected(format!("it answered HTTP {status}")))
            }
            Err(error) => Err(DirectError::Rejected(format!(
                "an unreadable answer: {error}"
            ))),
        }
    }
}

/// A JSON answer's body, read to its end (so its connection can be used again), up to
/// [`MAX_ANSWER_BYTES`].
async fn body_of(mut response: reqwest::Response) -> Result<Vec<u8>, DirectError> {
    let mut body = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|error| DirectError::Broken(error.to_string()))?
    {
        if body.len() + chunk.len() > MAX_ANSWER_BYTES {
            return Err(DirectError::Rejected(format!(
                "an answer over {MAX_ANSWER_BYTES} bytes"
            )));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// The answer to request `id` in an event stream: the first response or error that names it.
async fn answer_from_stream(
    response: reqwest::Response,
    id: &RequestId,
) -> Result<CallToolResponse, DirectError> {
    let mut events = SseStream::from_bytes_stream(response.bytes_stream());
    while let Some(event) = events.next().await {
        let event = event.map_err(|error| DirectError::Broken(error.to_string()))?;
        let Some(data) = event.data.filter(|data| !data.trim().is_empty()) else {
            continue;
        };
        if data.len() > MAX_ANSWER_BYTES {
            return Err(DirectError::Rejected(format!(
                "an event of {} bytes; the limit is {MAX_ANSWER_BYTES}",
                data.len()
            )));
        }
        let Ok(message) = serde_json::from_str::<Value>(&data) else {
            tracing::debug!("an unreadable MCP event was skipped");
            continue;
        };
        if let Some(answer) = answer_of(message, id) {
            return answer;
        }
    }
    Err(DirectError::Broken(
        "the event stream ended without an answer".into(),
    ))
}

/// What a JSON-RPC message says of the call `id`: `None` if it is not its answer (progress and
/// log notifications, which rmcp's client reads past too; a request, which has no back channel
/// in this revision). A result is read by its `resultType`, the discriminator the revision
/// gives every result, into the type rmcp's `call_tool_once` would have read it as: going
/// through rmcp's untagged `ServerResult`, which tries each kind of result in turn, cost a
/// tenth of a gateway call's instructions.
fn answer_of(message: Value, id: &RequestId) -> Option<Result<CallToolResponse, DirectError>> {
    let Value::Object(mut message) = message else {
        return None;
    };
    if message.contains_key("method") {
        return None;
    }
    let ours = match message.get("id") {
        None | Some(Value::Null) => message.contains_key("error"),
        Some(got) => serde_json::from_value::<RequestId>(got.clone()).is_ok_and(|got| got == *id),
    };
    if !ours {
        return None;
    }
    if let Some(error) = message.remove("error") {
        let error = serde_json::from_value::<ErrorData>(error).map_or_else(
            |_| "an unreadable error".to_owned(),
            |error| error.message.into(),
        );
        return Some(Err(DirectError::Rejected(error)));
    }
    let result = message.remove("result")?;
    let kind = result.get("resultType").and_then(Value::as_str);
    let read = match kind {
        Some("input_required") => {
            serde_json::from_value(result).map(CallToolResponse::InputRequired)
        }
        Some("task") => serde_json::from_value(result).map(CallToolResponse::Task),
        _ => serde_json::from_value::<CallToolResult>(result).map(CallToolResponse::Complete),
    };
    Some(read.map_err(|error| DirectError::Rejected(format!("an unreadable result: {error}"))))
}

/// Whether a tool name can travel as `Mcp-Name` as it is (rmcp wraps other names in base64).
fn plain_header(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(|byte| byte.is_ascii_graphic()) && !name.starts_with("=?")
}

/// Whether a tool's schema marks arguments to be mirrored as `Mcp-Param-*` headers.
fn wants_param_headers(tool: &Tool) -> bool {
    serde_json::to_string(&*tool.input_schema)
        .map_or(true, |schema| schema.contains("x-mcp-header"))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(name: &str, schema: serde_json::Value) -> Tool {
        serde_json::from_value(json!({"name": name, "inputSchema": schema})).unwrap()
    }

    #[test]
    fn a_tool_that_wants_param_headers_or_an_odd_name_is_left_to_rmcp() {
        let tools = [
            tool("read_file", json!({"type": "object"})),
            tool(
                "route",
                json!({"type": "object", "properties": {"region": {"type": "string", "x-mcp-header": "Region"}}}),
            ),
            tool("späť", json!({"type": "object"})),
            tool(" padded", json!({"type": "object"})),
        ];
        let direct = Direct::new(
            reqwest::Client::new(),
            "http://127.0.0.1:1/mcp",
            &[],
            &tools,
        );
        assert!(direct.takes("read_file"));
        assert!(!direct.takes("route"));
        assert!(!direct.takes("späť"));
        assert!(!direct.takes(" padded"));
        assert!(!direct.takes("unlisted"));
    }

    #[test]
    fn an_answer_is_a_result_an_input_request_or_the_servers_error() {
        let id = RequestId::Number(7);
        let read = |value: serde_json::Value| answer_of(value, &id);
        let done = read(json!({"jsonrpc": "2.0", "id": 7, "result":
            {"content": [{"type": "text", "text": "hi"}], "isError": false, "resultType": "complete"}}));
        assert!(
            matches!(done, Some(Ok(CallToolResponse::Complete(_)))),
            "{done:?}"
        );
        let asked = read(json!({"jsonrpc": "2.0", "id": 7, "result":
            {"resultType": "input_required", "requestState": "round-1"}}));
        assert!(
            matches!(asked, Some(Ok(CallToolResponse::InputRequired(_)))),
            "{asked:?}"
        );
        let refused = read(json!({"jsonrpc": "2.0", "id": 7, "error":
            {"code": -32602, "message": "no such tool"}}));
        assert!(
            matches!(&refused, Some(Err(DirectError::Rejected(why))) if why == "no such tool"),
            "{refused:?}"
        );
        let progress = read(json!({"jsonrpc": "2.0", "method": "notifications/progress",
            "params": {"progressToken": 1, "progress": 1}}));
        assert!(progress.is_none());
        let another = read(json!({"jsonrpc": "2.0", "id": 8, "result":
            {"content": [], "resultType": "complete"}}));
        assert!(another.is_none());
        let unreadable = read(json!({"jsonrpc": "2.0", "id": 7, "result":
            {"content": "not a list", "resultType": "complete"}}));
        assert!(
            matches!(unreadable, Some(Err(DirectError::Rejected(_)))),
            "{unreadable:?}"
        );
    }
}
