//! The OpenAI-compatible model: one streamed Chat Completions call per turn (OpenAI, Ollama,
//! vLLM, llama.cpp and the like). Text deltas go out as they arrive; tool-call deltas are
//! assembled by index into whole calls, sent when the answer ends.
//!
//! ```toml
//! model = { kind = "openai", base_url = "https://api.openai.com/v1", model = "gpt-4o-mini",
//!           api_key_env = "OPENAI_API_KEY" }
//! ```

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use futures_util::stream;
use serde_json::{json, Map, Value};
use signoff_protocol::sse::{SseFrame, SseParser};

use super::config::{ConfigError, OpenAiSpec};
use super::model::{
    ChatMessage, Model, ModelError, ModelEvent, ModelRequest, ModelStream, ModelToolCall, Usage,
};
use super::tools::{result_text, ToolSpec};

/// Seconds to connect and get the answer's headers when the agents file gives none.
const DEFAULT_TIMEOUT_SECS: u64 = 60;

/// The largest single SSE event accepted from the model server: a chunk is small, so this only
/// stops a misbehaving server from making us buffer without bound.
const MAX_EVENT_BYTES: usize = 4 * 1024 * 1024;

/// A resolved configuration: the key read from its variable.
#[derive(Clone)]
pub struct OpenAiConfig {
    pub base_url: String,
    pub model: String,
    pub api_key: Option<String>,
    /// Where the key came from, named in error messages (the key never is).
    pub api_key_env: Option<String>,
    pub timeout: Duration,
    pub temperature: Option<f64>,
    pub max_tokens: Option<u32>,
}

impl fmt::Debug for OpenAiConfig {
    // Written by hand so that the key never reaches a log line.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiConfig")
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "<set>"))
            .field("api_key_env", &self.api_key_env)
            .field("timeout", &self.timeout)
            .field("temperature", &self.temperature)
            .field("max_tokens", &self.max_tokens)
            .finish()
    }
}

impl OpenAiConfig {
    /// Resolves a spec; `env` looks up environment variables (a parameter so tests need not
    /// change the process environment). `at` is the spec's path in the agents file.
    pub fn from_spec(
        spec: &OpenAiSpec,
        at: &str,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<OpenAiConfig, ConfigError> {
        let invalid = |field: &str, message: String| ConfigError::Invalid {
            path: format!("{at}.{field}"),
            message,
        };
        let base_url = spec.base_url.trim().trim_end_matches('/').to_owned();
        let parsed = reqwest::Url::parse(&base_url).map_err(|err| {
            invalid(
                "base_url",
                format!("{:?} is not a URL: {err}", spec.base_url),
            )
        })?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(invalid(
                "base_url",
                format!("{:?} must start with http:// or https://", spec.base_url),
            ));
        }
        if spec.model.trim().is_empty() {
            return Err(invalid(
                "model",
                "name the model, such as \"gpt-4o-mini\"".into(),
            ));
        }
        let api_key = match &spec.api_key_env {
            None => None,
            Some(name) => match env(name) {
                Some(key) if !key.trim().is_empty() => Some(key.trim().to_owned()),
                Some(_) | None => {
                    return Err(invalid(
                        "api_key_env",
                        format!("the environment variable {name} is not set or empty"),
                    ))
                }
            },
        };
        Ok(OpenAiConfig {
            base_url,
            model: spec.model.clone(),
            api_key,
            api_key_env: spec.api_key_env.clone(),
            timeout: Duration::from_secs(spec.timeout_secs.unwrap_or(DEFAULT_TIMEOUT_SECS).max(1)),
            temperature: spec.temperature,
            max_tokens: spec.max_tokens,
        })
    }
}

/// A Chat Completions endpoint as a [`Model`].
#[derive(Debug, Clone)]
pub struct OpenAiModel {
    client: reqwest::Client,
    config: Arc<OpenAiConfig>,
}

impl OpenAiModel {
    pub fn new(config: OpenAiConfig) -> Result<OpenAiModel, ConfigError> {
        let client = reqwest::Client::builder()
            .connect_timeout(config.timeout)
            .build()
            .map_err(|err| ConfigError::Invalid {
                path: "model".into(),
                message: format!("cannot set up an HTTP client: {err}"),
            })?;
        Ok(OpenAiModel {
            client,
            config: Arc::new(config),
        })
    }

    /// The model of an agents-file spec, its key read from the process environment.
    pub fn from_spec(spec: &OpenAiSpec, at: &str) -> Result<OpenAiModel, ConfigError> {
        OpenAiModel::new(OpenAiConfig::from_spec(spec, at, |name| {
            std::env::var(name).ok()
        })?)
    }
}

impl Model for OpenAiModel {
    fn turn(&self, request: ModelRequest) -> ModelStream {
        let body = request_body(&self.config, &request);
        let turn = Turn {
            client: self.client.clone(),
            config: self.config.clone(),
            body: Some(body),
            response: None,
            parser: SseParser::new(MAX_EVENT_BYTES),
            queue: VecDeque::new(),
            calls: BTreeMap::new(),
            finish_reason: None,
            done: false,
        };
        // The stream owns the HTTP response: dropping it (cancel, timeout) drops the connection,
        // which aborts the request at the model server.
        Box::pin(stream::unfold(turn, |mut turn| async move {
            let item = turn.next_event().await?;
            Some((item, turn))
        }))
    }
}

// ---- the request ------------------------------------------------------------------------------

/// The Chat Completions request of one turn.
pub fn request_body(config: &OpenAiConfig, request: &ModelRequest) -> Value {
    let mut messages = Vec::new();
    if !request.instruction.trim().is_empty() {
        messages.push(json!({"role": "system", "content": request.instruction}));
    }
    // The model reads its calls back in its own ids, where the runtime kept them.
    let labels: HashMap<&str, &str> = request
        .messages
        .iter()
        .flat_map(|message| match message {
            ChatMessage::Assistant { tool_calls, .. } => tool_calls.as_slice(),
            ChatMessage::User { .. } | ChatMessage::Tool { .. } => &[],
        })
        .map(|call| (call.id.as_str(), call.model_label()))
        .collect();
    messages.extend(request.messages.iter().map(|entry| message(entry, &labels)));
    let mut body = json!({
        "model": config.model,
        "messages": messages,
        "stream": true,
        "stream_options": {"include_usage": true},
    });
    if !request.tools.is_empty() {
        body["tools"] = Value::Array(request.tools.iter().map(tool).collect());
    }
    if let Some(temperature) = config.temperature {
        body["temperature"] = json!(temperature);
    }
    if let Some(max_tokens) = config.max_tokens {
        body["max_tokens"] = json!(max_tokens);
    }
    body
}

fn tool(spec: &ToolSpec) -> Value {
    // A schema without `type` (some MCP servers send `{}`) is not accepted by every endpoint.
    let usable = spec
        .input_schema
        .as_object()
        .is_some_and(|schema| !schema.is_empty());
    let parameters = if usable {
        spec.input_schema.clone()
    } else {
        json!({"type": "object", "properties": {}})
    };
    json!({
        "type": "function",
        "function": {
            "name": spec.name,
            "description": spec.description,
            "parameters": parameters,
        },
    })
}

/// One transcript entry as a Chat Completions message; calls are named by their labels.
fn message(message: &ChatMessage, labels: &HashMap<&str, &str>) -> Value {
    match message {
        ChatMessage::User { text, .. } => json!({"role": "user", "content": text}),
        ChatMessage::Assistant { text, tool_calls } => {
            let mut out = json!({"role": "assistant"});
            // An assistant turn that only calls tools has `content: null` in OpenAI's own
            // transcripts; some servers refuse an empty string there.
            out["content"] = if text.is_empty() && !tool_calls.is_empty() {
                Value::Null
            } else {
                Value::String(text.clone())
            };
            if !tool_calls.is_empty() {
                out["tool_calls"] = tool_calls
                    .iter()
                    .map(|call| {
                        json!({
                            "id": call.model_label(),
                            "type": "function",
                            "function": {"name": call.name, "arguments": call.args.to_string()},
                        })
                    })
                    .collect();
            }
            out
        }
        ChatMessage::Tool {
            call_id,
            response,
            edited_from,
            ..
        } => json!({
            "role": "tool",
            "tool_call_id": labels.get(call_id.as_str()).copied().unwrap_or(call_id),
            "content": tool_content(response, edited_from.as_ref()),
        }),
    }
}

/// A tool result as the model reads it: a successful call's text, a failure's text marked as
/// an error, a rejection as its JSON (`{"status":"rejected","reason":…}`) so the model sees the
/// person's reason. When the person edited the arguments, the assistant turn already carries
/// the arguments that ran; the result says so and shows what the model had proposed.
pub fn tool_content(response: &Value, edited_from: Option<&Value>) -> String {
    let is_result = response.get("content").is_some_and(Value::is_array);
    let failed = response.get("isError").and_then(Value::as_bool) == Some(true);
    let result = if is_result && failed {
        json!({"error": result_text(response)})
    } else if is_result {
        Value::String(result_text(response))
    } else {
        // A rejection, or any other shape: the JSON as it is.
        response.clone()
    };
    match edited_from {
        Some(proposed) => json!({
            "note": "the person edited the arguments before the call ran",
            "proposed": proposed,
            "result": result,
        })
        .to_string(),
        None => match result.as_str() {
            Some(text) => text.to_owned(),
            None => result.to_string(),
        },
    }
}

// ---- the streamed answer ----------------------------------------------------------------------

/// One tool call being assembled from its deltas.
#[derive(Debug, Default)]
struct PartialCall {
    id: String,
    name: String,
    arguments: String,
}

/// The state of one streamed turn.
struct Turn {
    client: reqwest::Client,
    config: Arc<OpenAiConfig>,
    /// The request body, until the request is sent (on the first poll).
    body: Option<Value>,
    response: Option<reqwest::Response>,
    parser: SseParser,
    /// Events parsed but not yet handed out (one network chunk may hold many).
    queue: VecDeque<Result<ModelEvent, ModelError>>,
    /// Tool calls by their `index` in the deltas.
    calls: BTreeMap<u64, PartialCall>,
    finish_reason: Option<String>,
    done: bool,
}

impl Turn {
    async fn next_event(&mut self) -> Option<Result<ModelEvent, ModelError>> {
        loop {
            if let Some(item) = self.queue.pop_front() {
                if item.is_err() {
                    // After an error nothing more is read.
                    self.queue.clear();
                    self.done = true;
                }
                return Some(item);
            }
            if self.done {
                return None;
            }
            if let Some(body) = self.body.take() {
                match self.send(body).await {
                    Ok(response) => self.response = Some(response),
                    Err(err) => {
                        self.done = true;
                        return Some(Err(err));
                    }
                }
            }
            let Some(response) = self.response.as_mut() else {
                self.done = true;
                return None;
            };
            match response.chunk().await {
                Ok(Some(bytes)) => match self.parser.feed(&bytes) {
                    Ok(frames) => self.read_frames(frames),
                    Err(err) => self.fail(format!("its streamed answer could not be read ({err})")),
                },
                Ok(None) => match self.parser.finish() {
                    Ok(frames) => {
                        self.read_frames(frames);
                        if !self.done {
                            self.end_of_body();
                        }
                    }
                    Err(err) => self.fail(format!("its streamed answer could not be read ({err})")),
                },
                Err(err) => {
                    tracing::warn!(error = %err, "reading the model's answer failed");
                    self.fail("the connection to the model broke off mid-answer".into());
                }
            }
        }
    }

    fn fail(&mut self, message: String) {
        self.queue.push_back(Err(ModelError::Failed(message)));
    }

    async fn send(&self, body: Value) -> Result<reqwest::Response, ModelError> {
        let url = format!("{}/chat/completions", self.config.base_url);
        let mut request = self
            .client
            .post(&url)
            .header(reqwest::header::ACCEPT, "text/event-stream")
            .json(&body);
        if let Some(key) = &self.config.api_key {
            request = request.bearer_auth(key);
        }
        let sent = tokio::time::timeout(self.config.timeout, request.send()).await;
        let response = match sent {
            Err(_elapsed) => {
                return Err(ModelError::Failed(format!(
                    "the model endpoint did not answer within {} s",
                    self.config.timeout.as_secs()
                )))
            }
            Ok(Err(err)) => {
                tracing::warn!(url = %url, error = %err, "cannot reach the model");
                return Err(ModelError::Unreachable);
            }
            Ok(Ok(response)) => response,
        };
        let status = response.status();
        if status.is_success() {
            return Ok(response);
        }
        // The body may say more; it goes to the log (trimmed), never to the person, since
        // endpoints echo parts of keys and requests in it.
        let detail = response.text().await.unwrap_or_default();
        let detail: String = detail.chars().take(500).collect();
        tracing::warn!(url = %url, status = status.as_u16(), body = %detail, "the model refused a request");
        Err(http_error(&self.config, status.as_u16()))
    }

    fn read_frames(&mut self, frames: Vec<SseFrame>) {
        for frame in frames {
            if self.done {
                return;
            }
            match frame {
                SseFrame::Done => self.finish(),
                SseFrame::Event(event) => match serde_json::from_str::<Value>(&event.data) {
                    Ok(chunk) => self.read_chunk(&chunk),
                    Err(err) => {
                        tracing::warn!(error = %err, "the model sent a chunk that is not JSON");
                        self.queue.push_back(Err(ModelError::BadAnswer));
                        self.done = true;
                    }
                },
            }
        }
    }

    fn read_chunk(&mut self, chunk: &Value) {
        if let Some(error) = chunk.get("error") {
            // Endpoints report failures mid-stream this way (overload, content filter).
            tracing::warn!(error = %error, "the model reported an error mid-answer");
            self.fail("the model service reported an error while answering".into());
            return;
        }
        if let Some(usage) = chunk.get("usage").filter(|usage| usage.is_object()) {
            let count = |key: &str| usage.get(key).and_then(Value::as_u64).unwrap_or(0);
            self.queue.push_back(Ok(ModelEvent::Usage(Usage {
                prompt_tokens: count("prompt_tokens"),
                completion_tokens: count("completion_tokens"),
            })));
        }
        let Some(choices) = chunk.get("choices").and_then(Value::as_array) else {
            return;
        };
        // We ask for one answer (`n` unset), so only choice 0 counts.
        let Some(choice) = choices
            .iter()
            .find(|choice| choice.get("index").and_then(Value::as_u64).unwrap_or(0) == 0)
        else {
            return;
        };
        if let Some(delta) = choice.get("delta") {
            if let Some(text) = delta.get("content").and_then(Value::as_str) {
                if !text.is_empty() {
                    self.queue.push_back(Ok(ModelEvent::Text(text.to_owned())));
                }
            }
            if let Some(deltas) = delta.get("tool_calls").and_then(Value::as_array) {
                for (position, call) in deltas.iter().enumerate() {
                    self.read_tool_delta(position, call);
                }
            }
        }
        if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
            self.finish_reason = Some(reason.to_owned());
        }
    }

    /// Merges one tool-call delta: the first delta of a call has its id and name, later ones
    /// append pieces of the arguments' JSON text.
    fn read_tool_delta(&mut self, position: usize, delta: &Value) {
        let index = delta
            .get("index")
            .and_then(Value::as_u64)
            .unwrap_or(position as u64);
        let call = self.calls.entry(index).or_default();
        if let Some(id) = delta.get("id").and_then(Value::as_str) {
            if call.id.is_empty() {
                call.id = id.to_owned();
            }
        }
        if let Some(function) = delta.get("function") {
            if let Some(name) = function.get("name").and_then(Value::as_str) {
                call.name.push_str(name);
            }
            if let Some(arguments) = function.get("arguments").and_then(Value::as_str) {
                call.arguments.push_str(arguments);
            }
        }
    }

    /// `data: [DONE]`: the answer is complete; hand out the assembled calls.
    fn finish(&mut self) {
        let calls = std::mem::take(&mut self.calls);
        for call in calls.into_values() {
            match complete_call(call) {
                Ok(call) => self.queue.push_back(Ok(ModelEvent::ToolCall(call))),
                Err(message) => {
                    self.fail(message);
                    break;
                }
            }
        }
        self.done = true;
    }

    /// The body ended without `[DONE]`: complete if the answer said it was finished (some
    /// servers omit the marker), else it broke off.
    fn end_of_body(&mut self) {
        if self.finish_reason.is_some() {
            self.finish();
        } else {
            self.fail("the model's answer ended before it was complete".into());
            self.done = true;
        }
    }
}

/// A whole tool call from its assembled deltas; its arguments must be a JSON object.
fn complete_call(call: PartialCall) -> Result<ModelToolCall, String> {
    if call.name.is_empty() {
        return Err("the model sent a tool call without a tool name".into());
    }
    let text = call.arguments.trim();
    let args = if text.is_empty() {
        Value::Object(Map::new())
    } else {
        serde_json::from_str::<Value>(text).map_err(|err| {
            format!(
                "the model called {} with arguments that are not valid JSON ({err})",
                call.name
            )
        })?
    };
    if !args.is_object() {
        return Err(format!(
            "the model called {} with arguments that are not a JSON object",
            call.name
        ));
    }
    // Some local servers leave ids out: the runtime gives every call its own id anyway.
    Ok(ModelToolCall::new(call.id, call.name, args))
}

/// What a person reads for an HTTP error status of the endpoint.
fn http_error(config: &OpenAiConfig, status: u16) -> ModelError {
    let message = match status {
        401 | 403 => match &config.api_key_env {
            Some(name) => {
                format!("the model endpoint did not accept the API key from {name} (HTTP {status})")
            }
            None => format!(
                "the model endpoint wants an API key; set api_key_env in the agents file \
                 (HTTP {status})"
            ),
        },
        404 => format!(
            "the model endpoint has no model {:?} or no chat completions API at its base URL \
             (HTTP 404)",
            config.model
        ),
        408 | 504 => format!("the model endpoint timed out (HTTP {status})"),
        413 => "the conversation is too large for the model endpoint (HTTP 413)".to_owned(),
        429 => "the model endpoint is rate limiting or out of quota; try again later (HTTP 429)"
            .to_owned(),
        400..=499 => format!("the model endpoint refused the request (HTTP {status})"),
        500..=599 => format!("the model service failed on its side (HTTP {status})"),
        _ => format!("the model endpoint answered with an unexpected HTTP {status}"),
    };
    ModelError::Failed(message)
}

#[cfg(test)]
mod tests;
