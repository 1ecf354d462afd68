//! A2A JSON-RPC over gloo-net: the agent card picks the protocol version, streaming methods
//! read SSE from the response body through `signoff-protocol`'s parser.

use std::cell::Cell;

use serde_json::Value;
use signoff_protocol::codec::{self, Method};
use signoff_protocol::hitl::extension;
use signoff_protocol::jsonrpc::{Id, Request, Response};
use signoff_protocol::{
    Message, ProtocolVersion, SendConfiguration, SendMessageParams, StreamEvent, Task,
    TaskIdParams, TaskQueryParams,
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

/// Where and in which A2A version to talk to one agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    pub url: String,
    pub version: ProtocolVersion,
    /// The card declares kagent's HITL extension: every request activates it.
    pub hitl_extension: bool,
}

impl Endpoint {
    /// The server's own endpoint for an agent, in v0.3 (what every A2A agent speaks).
    pub fn fallback(namespace: &str, agent: &str) -> Self {
        Endpoint {
            url: format!("/api/a2a/{}/{}", encode(namespace), encode(agent)),
            version: ProtocolVersion::V0_3,
            hitl_extension: false,
        }
    }
}

fn same_origin(url: &str) -> bool {
    let origin = web_sys::window()
        .and_then(|window| window.location().origin().ok())
        .unwrap_or_default();
    url.starts_with('/') || (!origin.is_empty() && url.starts_with(&format!("{origin}/")))
}

/// Reads the agent's card and picks v1.0 when it offers it. The URL stays on this origin: the
/// server relays remote agents, and the browser could not reach them directly anyway.
pub async fn endpoint(namespace: &str, agent: &str) -> Endpoint {
    let fallback = Endpoint::fallback(namespace, agent);
    let card_url = format!("{}/.well-known/agent-card.json", fallback.url);
    let Ok(body) = http::get_json(&card_url).await else {
        return fallback;
    };
    // The interfaces only: the whole card's decoding would be 7 KB of the download.
    let interfaces = codec::decode_card_interfaces(&body);
    let hitl_extension = extension::is_declared(&codec::decode_card_extensions(&body));
    match interfaces.iter().max_by_key(|interface| interface.version) {
        Some(interface) if same_origin(&interface.url) => Endpoint {
            url: interface.url.clone(),
            version: interface.version,
            hitl_extension,
        },
        Some(interface) => Endpoint {
            url: fallback.url,
            version: interface.version,
            hitl_extension,
        },
        None => Endpoint {
            hitl_extension,
            ..fallback
        },
    }
}

async fn post(
    endpoint: &Endpoint,
    method: Method,
    params: Value,
    abort: Option<&Abort>,
) -> Result<gloo_net::http::Response, ApiError> {
    let request = Request::new(next_id(), method.name(endpoint.version), params);
    let body = serde_json::to_string(&request).map_err(|err| ApiError::Decode(err.to_string()))?;
    let signal = abort.and_then(Abort::signal);
    let mut request = gloo_net::http::Request::post(&endpoint.url)
        .header("A2A-Version", endpoint.version.as_str())
        .header("Accept", "text/event-stream, application/json")
        .abort_signal(signal.as_ref());
    if endpoint.hitl_extension {
        request = request.header(
            extension::activation_header(endpoint.version),
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
        let event = codec::decode_send_result(endpoint.version, &result)
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
            let decoded = codec::decode_stream_response(endpoint.version, &event.data)
                .map_err(|err| ApiError::Decode(err.to_string()))?;
            on_event(decoded.map_err(rpc_error)?);
            Ok(())
        },
    )
    .await
}

/// `message/stream` (v1.0 `SendStreamingMessage`).
pub async fn send_streaming(
    endpoint: &Endpoint,
    message: &Message,
    abort: &Abort,
    on_event: &mut dyn FnMut(StreamEvent),
) -> Result<(), ApiError> {
    let params = codec::encode_send_params(
        endpoint.version,
        &SendMessageParams {
            message: message.clone(),
            configuration: None,
            metadata: None,
        },
    );
    stream(
        endpoint,
        Method::SendStreamingMessage,
        params,
        abort,
        on_event,
    )
    .await
}

/// `message/send` (v1.0 `SendMessage`) of a message for the working task, answered as soon as
/// the server took it (`blocking: false`): the open stream of the turn shows its delivery.
pub async fn send_queued(endpoint: &Endpoint, message: &Message) -> Result<(), ApiError> {
    let params = codec::encode_send_params(
        endpoint.version,
        &SendMessageParams {
            message: message.clone(),
            configuration: Some(SendConfiguration {
                blocking: Some(false),
                ..SendConfiguration::default()
            }),
            metadata: None,
        },
    );
    call(endpoint, Method::SendMessage, params).await?;
    Ok(())
}

/// `tasks/resubscribe` (v1.0 `SubscribeToTask`): the rest of a running turn.
pub async fn resubscribe(
    endpoint: &Endpoint,
    task_id: &str,
    abort: &Abort,
    on_event: &mut dyn FnMut(StreamEvent),
) -> Result<(), ApiError> {
    let params = codec::encode_task_id_params(
        endpoint.version,
        &TaskIdParams {
            id: task_id.to_owned(),
            metadata: None,
        },
    );
    stream(endpoint, Method::SubscribeToTask, params, abort, on_event).await
}

/// `tasks/cancel` (v1.0 `CancelTask`): the task as it ended.
pub async fn cancel(endpoint: &Endpoint, task_id: &str) -> Result<Task, ApiError> {
    let params = codec::encode_task_id_params(
        endpoint.version,
        &TaskIdParams {
            id: task_id.to_owned(),
            metadata: None,
        },
    );
    let result = call(endpoint, Method::CancelTask, params).await?;
    codec::decode_task(endpoint.version, &result).map_err(|err| ApiError::Decode(err.to_string()))
}

/// `tasks/get` (v1.0 `GetTask`).
pub async fn get_task(endpoint: &Endpoint, task_id: &str) -> Result<Task, ApiError> {
    let params = codec::encode_task_query(
        endpoint.version,
        &TaskQueryParams {
            id: task_id.to_owned(),
            history_length: None,
            metadata: None,
        },
    );
    let result = call(endpoint, Method::GetTask, params).await?;
    codec::decode_task(endpoint.version, &result).map_err(|err| ApiError::Decode(err.to_string()))
}
