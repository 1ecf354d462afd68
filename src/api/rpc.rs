//! A2A JSON-RPC over gloo-net, always in v0.3 (the server's relay translates for remote
//! agents that offer only v1.0: docs/wire.md, Versions); streaming methods read SSE from the
//! response body through `signoff-protocol`'s parser. Only the v0.3 codec's own entry points
//! are called, so the v1.0 codec stays out of the wasm.

use std::cell::Cell;

use serde_json::Value;
use signoff_protocol::codec::{self, v03_only, Method};
use signoff_protocol::hitl::extension;
use signoff_protocol::jsonrpc::{Id, Request, Response};
use signoff_protocol::{
    Message, SendConfiguration, SendMessageParams, StreamEvent, Task, TaskIdParams, TaskQueryParams,
};

use super::http::{self, Abort};
use super::ApiError;
use crate::state::route::encode;

/// Seconds without a byte from a stream before it counts as dead. The server sends a
/// keep-alive comment every 15 s, so this only fires when the connection is really gone.
pub const STREAM_IDLE_SECS: u32 = 60;
/// Largest single SSE event accepted (a whole task snapshot fits easily).
const MAX_EVENT_BYTES: usize = 4 * 1024 * 1024;

thread_local! {
    static NEXT_ID: Cell<i64> = const { Cell::new(1) };
}

fn next_id() -> Id {
    NEXT_ID.with(|next| {
        let id = next.get();
        next.set(id + 1);
        Id::Number(id)
    })
}

/// Where to talk to one agent, and how. The URL is always the server's endpoint for the agent
/// on this origin: the server relays remote agents, and the browser could not reach them
/// directly anyway.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    pub url: String,
    /// The card declares kagent's HITL extension: every request activates it.
    pub hitl_extension: bool,
}

impl Endpoint {
    /// The server's endpoint for an agent, without extensions (when its card is not read).
    pub fn fallback(namespace: &str, agent: &str) -> Self {
        Endpoint {
            url: format!("/api/a2a/{}/{}", encode(namespace), encode(agent)),
            hitl_extension: false,
        }
    }
}

/// Reads the agent's card for the extensions it declares. Its interfaces are not read: every
/// agent is spoken to in v0.3 at the server's endpoint for it (our agents serve v0.3, and the
/// relay serves it for remote agents that offer only v1.0).
pub async fn endpoint(namespace: &str, agent: &str) -> Endpoint {
    let fallback = Endpoint::fallback(namespace, agent);
    let card_url = format!("{}/.well-known/agent-card.json", fallback.url);
    let Ok(body) = http::get_json(&card_url).await else {
        return fallback;
    };
    Endpoint {
        hitl_extension: extension::is_declared(&codec::decode_card_extensions(&body)),
        ..fallback
    }
}

async fn post(
    endpoint: &Endpoint,
    method: Method,
    params: Value,
    abort: Option<&Abort>,
) -> Result<gloo_net::http::Response, ApiError> {
    let request = Request::new(next_id(), v03_only::method_name(method), params);
    let body = serde_json::to_string(&request).map_err(|err| ApiError::Decode(err.to_string()))?;
    let signal = abort.and_then(Abort::signal);
    let mut request = gloo_net::http::Request::post(&endpoint.url)
        .header("A2A-Version", v03_only::VERSION.as_str())
        .header("Accept", "text/event-stream, application/json")
        .abort_signal(signal.as_ref());
    if endpoint.hitl_extension {
        request = request.header(
            extension::activation_header(v03_only::VERSION),
            extension::URI,
        );
    }
    http::send(request, Some(body)).await
}

fn rpc_error(error: signoff_protocol::jsonrpc::ErrorObject) -> ApiError {
    ApiError::Rpc {
        code: error.code,
        message: error.message,
    }
}

/// A plain (non-streaming) call: the `result` value.
async fn call(endpoint: &Endpoint, method: Method, params: Value) -> Result<Value, ApiError> {
    let response = post(endpoint, method, params, None).await?;
    let body = http::json(&response).await?;
    let response = Response::from_value(body).map_err(|err| ApiError::Decode(err.to_string()))?;
    response.outcome.map_err(rpc_error)
}

/// A streaming call: each event goes to `on_event` as it arrives. Ends when the server closes
/// the stream; the abort handle stops it early.
async fn stream(
    endpoint: &Endpoint,
    method: Method,
    params: Value,
    abort: &Abort,
    on_event: &mut dyn FnMut(StreamEvent),
) -> Result<(), ApiError> {
    let response = post(endpoint, method, params, Some(abort)).await?;
    let content_type = response.headers().get("content-type").unwrap_or_default();
    if !content_type.contains("text/event-stream") {
        // A server may answer a streaming method with one JSON-RPC response (an error, mostly).
        let body = http::json(&response).await?;
        let response =
            Response::from_value(body).map_err(|err| ApiError::Decode(err.to_string()))?;
        let result = response.outcome.map_err(rpc_error)?;
        let event = v03_only::decode_send_result(&result)
            .map_err(|err| ApiError::Decode(err.to_string()))?;
        on_event(event);
        return Ok(());
    }
    http::read_sse(
        &response,
        STREAM_IDLE_SECS,
        MAX_EVENT_BYTES,
        abort,
        &mut |event| {
            let decoded = v03_only::decode_stream_response(&event.data)
                .map_err(|err| ApiError::Decode(err.to_string()))?;
            on_event(decoded.map_err(rpc_error)?);
            Ok(())
        },
    )
    .await
}

/// `message/stream`.
pub async fn send_streaming(
    endpoint: &Endpoint,
    message: &Message,
    abort: &Abort,
    on_event: &mut dyn FnMut(StreamEvent),
) -> Result<(), ApiError> {
    let params = v03_only::encode_send_params(&SendMessageParams {
        message: message.clone(),
        configuration: None,
        metadata: None,
    });
    stream(
        endpoint,
        Method::SendStreamingMessage,
        params,
        abort,
        on_event,
    )
    .await
}

/// `message/send` of a message for the working task, answered as soon as
/// the server took it (`blocking: false`): the open stream of the turn shows its delivery.
pub async fn send_queued(endpoint: &Endpoint, message: &Message) -> Result<(), ApiError> {
    let params = v03_only::encode_send_params(&SendMessageParams {
        message: message.clone(),
        configuration: Some(SendConfiguration {
            blocking: Some(false),
            push: None,
            ..SendConfiguration::default()
        }),
        metadata: None,
    });
    call(endpoint, Method::SendMessage, params).await?;
    Ok(())
}

/// `tasks/resubscribe`: the rest of a running turn.
pub async fn resubscribe(
    endpoint: &Endpoint,
    task_id: &str,
    abort: &Abort,
    on_event: &mut dyn FnMut(StreamEvent),
) -> Result<(), ApiError> {
    let params = v03_only::encode_task_id_params(&TaskIdParams {
        id: task_id.to_owned(),
        metadata: None,
    });
    stream(endpoint, Method::SubscribeToTask, params, abort, on_event).await
}

/// `tasks/cancel`: the task as it ended.
pub async fn cancel(endpoint: &Endpoint, task_id: &str) -> Result<Task, ApiError> {
    let params = v03_only::encode_task_id_params(&TaskIdParams {
        id: task_id.to_owned(),
        metadata: None,
    });
    let result = call(endpoint, Method::CancelTask, params).await?;
    v03_only::decode_task(&result).map_err(|err| ApiError::Decode(err.to_string()))
}

/// `tasks/get`.
pub async fn get_task(endpoint: &Endpoint, task_id: &str) -> Result<Task, ApiError> {
    let params = v03_only::encode_task_query(&TaskQueryParams {
        id: task_id.to_owned(),
        history_length: None,
        metadata: None,
    });
    let result = call(endpoint, Method::GetTask, params).await?;
    v03_only::decode_task(&result).map_err(|err| ApiError::Decode(err.to_string()))
}
