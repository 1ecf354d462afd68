//! A loopback OpenAI-compatible Chat Completions endpoint for the "real endpoints" figures: it
//! answers at once, so what is measured is the server's work around a real HTTP hop.
//!
//! Its first answer in a chat asks for the same three calls as the scripted prompt
//! (`write_file`, `delete_file`, `read_file`); once the request carries tool results it answers
//! with text. Streams are shaped as OpenAI sends them: deltas, a `finish_reason`, a usage chunk
//! with no choices, then `data: [DONE]`.

use axum::body::Bytes;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::{json, Value};
use tokio::sync::oneshot;

use crate::error::{BenchError, Result};

pub struct OpenAiStub {
    /// `http://127.0.0.1:PORT/v1`, the `base_url` to configure.
    pub base_url: String,
    /// Stops the stub when dropped.
    _stop: oneshot::Sender<()>,
}

impl OpenAiStub {
    pub async fn start() -> Result<OpenAiStub> {
        let app = axum::Router::new().route("/v1/chat/completions", post(completions));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .map_err(|err| BenchError::io("127.0.0.1:0", err))?;
        let addr = listener
            .local_addr()
            .map_err(|err| BenchError::io("127.0.0.1:0", err))?;
        let (stop, stopped) = oneshot::channel::<()>();
        tokio::spawn(async move {
            let served = axum::serve(listener, app)
                .with_graceful_shutdown(async move {
                    let _ = stopped.await;
                })
                .await;
            // The stub dies with the bench; an error here only ends its phase early, and the
            // phase reports the failed chats.
            drop(served);
        });
        Ok(OpenAiStub {
            base_url: format!("http://{addr}/v1"),
            _stop: stop,
        })
    }
}

async fn completions(body: Bytes) -> Response {
    let request: Value = match serde_json::from_slice(&body) {
        Ok(value) => value,
        Err(err) => return (StatusCode::BAD_REQUEST, err.to_string()).into_response(),
    };
    let after_tools = request["messages"]
        .as_array()
        .and_then(|messages| messages.last())
        .is_some_and(|last| last["role"] == "tool");
    let chunks = if after_tools {
        text_answer()
    } else {
        tool_calls()
    };
    let mut sse = String::new();
    for chunk in chunks {
        sse.push_str("data: ");
        sse.push_str(&chunk.to_string());
        sse.push_str("\n\n");
    }
    sse.push_str("data: [DONE]\n\n");
    ([(header::CONTENT_TYPE, "text/event-stream")], sse).into_response()
}

fn chunk(delta: Value, finish_reason: Option<&str>) -> Value {
    json!({"id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 0,
           "model": "bench-stub",
           "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}]})
}

fn usage() -> Value {
    json!({"id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 0,
           "model": "bench-stub", "choices": [],
           "usage": {"prompt_tokens": 50, "completion_tokens": 20, "total_tokens": 70}})
}

fn call(index: usize, name: &str, args: Value) -> Value {
    json!({"index": index, "id": format!("call_bench_{index}"), "type": "function",
           "function": {"name": name, "arguments": args.to_string()}})
}

fn tool_calls() -> Vec<Value> {
    vec![
        chunk(
            json!({"role": "assistant", "content": null, "tool_calls": [
                call(0, "write_file", json!({"path": "a.txt", "content": "x"})),
                call(1, "delete_file", json!({"path": "b.txt"})),
                call(2, "read_file", json!({"path": "c.txt"})),
            ]}),
            None,
        ),
        chunk(json!({}), Some("tool_calls")),
        usage(),
    ]
}

fn text_answer() -> Vec<Value> {
    let mut chunks = vec![chunk(json!({"role": "assistant", "content": ""}), None)];
    for piece in ["I wrote a.txt, ", "deleted b.txt ", "and read c.txt."] {
        chunks.push(chunk(json!({"content": piece}), None));
    }
    chunks.push(chunk(json!({}), Some("stop")));
    chunks.push(usage());
    chunks
}
