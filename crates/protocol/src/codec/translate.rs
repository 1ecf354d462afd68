//! One A2A call carried across versions, for a relay between a client of one version and a
//! peer that offers only the other (docs/wire.md, Translation): the request decoded with the
//! client's codec and encoded with the peer's, each answer (a unary result, or one SSE event)
//! decoded with the peer's codec and encoded with the client's, errors included. What does not
//! translate is a JSON-RPC error saying why, never a dropped answer.

use serde_json::Value;

use super::{
    decode_event, decode_send_params, decode_send_result, decode_task, decode_task_id_params,
    decode_task_query, encode_event, encode_send_params, encode_task, encode_task_id_params,
    encode_task_query, error_object, DecodeError, Method,
};
use crate::jsonrpc::{request_id, ErrorCode, ErrorObject, Id, Request, Response};
use crate::model::{ProtocolVersion, StreamEvent};

/// A client's request, written in the peer's version.
#[derive(Debug, Clone, PartialEq)]
pub struct TranslatedRequest {
    pub method: Method,
    /// The whole JSON-RPC request: the client's id, the peer's method name and params.
    pub body: Value,
}

/// One answer of the peer, written in the client's version.
#[derive(Debug, Clone, PartialEq)]
pub struct TranslatedResponse {
    /// The JSON-RPC response as compact JSON (one line: one SSE event's data).
    pub json: String,
    /// Whether a stream in the client's version ends with it: an error, a message, or an event
    /// whose state ends a stream (v1.0 peers keep a subscription open across a pause; v0.3
    /// clients expect the end there).
    pub ends_stream: bool,
}

/// A request body in `from` -> the same request in `to`. The error is the one to answer the
/// client with, in `from`'s shape: the body is not JSON (`-32700`), not a JSON-RPC request
/// (`-32600`), a method `from` lacks or `to` has no counterpart of (`-32601`), or params that
/// do not decode (`-32602`, naming the JSON path).
pub fn request(
    from: ProtocolVersion,
    to: ProtocolVersion,
    body: &[u8],
) -> Result<TranslatedRequest, ErrorObject> {
    let value: Value = serde_json::from_slice(body).map_err(|err| {
        ErrorCode::ParseError.with_message(format!("the request is not JSON: {err}"))
    })?;
    let refuse = |code: ErrorCode, message: String| error_object(from, code, message);
    let request: Request = serde_json::from_value(value).map_err(|err| {
        refuse(
            ErrorCode::InvalidRequest,
            format!("not a JSON-RPC request: {err}"),
        )
    })?;
    if request.jsonrpc != "2.0" {
        return Err(refuse(
            ErrorCode::InvalidRequest,
            "jsonrpc must be \"2.0\"".to_owned(),
        ));
    }
    let Some(method) = Method::from_name(from, &request.method) else {
        return Err(refuse(
            ErrorCode::MethodNotFound,
            format!(
                "method {} is not relayed to this agent, which speaks A2A {} only: the relay \
                 translates {}",
                request.method,
                to.as_str(),
                translated_names(from, to).join(", ")
            ),
        ));
    };
    if !method.exists_in(to) {
        return Err(refuse(
            ErrorCode::MethodNotFound,
            format!(
                "method {} has no counterpart in A2A {}, which this agent speaks",
                request.method,
                to.as_str()
            ),
        ));
    }
    let params = request.params.unwrap_or(Value::Null);
    let params = params_in(method, from, to, &params)
        .map_err(|err| refuse(ErrorCode::InvalidParams, err.to_string()))?;
    let id = request_id(body).unwrap_or(Id::Null);
    let body =
        serde_json::to_value(Request::new(id, method.name(to), params)).unwrap_or(Value::Null);
    Ok(TranslatedRequest { method, body })
}

/// The `from` names of the methods that have a counterpart in `to`.
fn translated_names(from: ProtocolVersion, to: ProtocolVersion) -> Vec<&'static str> {
    Method::ALL
        .into_iter()
        .filter(|method| method.exists_in(from) && method.exists_in(to))
        .map(|method| method.name(from))
        .collect()
}

fn params_in(
    method: Method,
    from: ProtocolVersion,
    to: ProtocolVersion,
    params: &Value,
) -> Result<Value, DecodeError> {
    Ok(match method {
        Method::SendMessage | Method::SendStreamingMessage => {
            encode_send_params(to, &decode_send_params(from, params)?)
        }
        Method::GetTask => encode_task_query(to, &decode_task_query(from, params)?),
        Method::CancelTask | Method::SubscribeToTask => {
            encode_task_id_params(to, &decode_task_id_params(from, params)?)
        }
        // Only v1.0 has it, so it is never carried across versions.
        Method::ListTasks => params.clone(),
    })
}

/// One JSON-RPC response of the peer to `method` (a unary answer, or one SSE event's data) in
/// `from` -> the same response in `to`, with the client's `id`. An answer that does not read as
/// `from` becomes a `-32603` error that says what was wrong with it.
pub fn response(
    method: Method,
    from: ProtocolVersion,
    to: ProtocolVersion,
    id: &Id,
    data: &[u8],
) -> TranslatedResponse {
    let translated = serde_json::from_slice::<Value>(data)
        .map_err(|err| format!("not JSON: {err}"))
        .and_then(|value| Response::from_value(value).map_err(|err| err.to_string()))
        .and_then(|response| match response.outcome {
            Ok(result) => result_in(method, from, to, &result)
                .map(|(result, ends_stream)| (Ok(result), ends_stream))
                .map_err(|err| err.to_string()),
            Err(err) => Ok((Err(error(from, to, err)), true)),
        });
    let (outcome, ends_stream) = translated.unwrap_or_else(|problem| {
        let message = format!(
            "the agent's answer is not A2A {} as it should be, so it cannot be passed on in {}: \
             {problem}",
            from.as_str(),
            to.as_str()
        );
        (
            Err(error_object(to, ErrorCode::InternalError, message)),
            true,
        )
    });
    TranslatedResponse {
        json: Response {
            id: id.clone(),
            outcome,
        }
        .to_json(),
        ends_stream,
    }
}

/// A successful result, and whether a stream ends with it.
fn result_in(
    method: Method,
    from: ProtocolVersion,
    to: ProtocolVersion,
    result: &Value,
) -> Result<(Value, bool), DecodeError> {
    let event = match method {
        Method::SendMessage => decode_send_result(from, result)?,
        Method::SendStreamingMessage | Method::SubscribeToTask => decode_event(from, result)?,
        // A bare task in both versions (no `{"task": …}` wrapper in v1.0).
        Method::GetTask | Method::CancelTask => {
            let task = decode_task(from, result)?;
            let ends_stream = task.status.state.ends_stream();
            return Ok((encode_task(to, &task), ends_stream));
        }
        Method::ListTasks if from == to => return Ok((result.clone(), true)),
        Method::ListTasks => {
            return Err(DecodeError::new(
                "result",
                "ListTasks has no counterpart across versions",
            ))
        }
    };
    let ends_stream = match &event {
        StreamEvent::StatusUpdate(update) => update.is_final,
        StreamEvent::Task(task) => task.status.state.ends_stream(),
        StreamEvent::Message(_) => true,
        StreamEvent::ArtifactUpdate(_) => false,
    };
    Ok((encode_event(to, &event), ends_stream))
}

/// A peer's error object in the client's version. The codes are the same in both, but for
/// v1.0's `-32008` (extension support required) and `-32009` (version not supported), which
/// v0.3 lacks: a v0.3 client gets `-32603` with the peer's words and code. v1.0's `ErrorInfo`
/// detail is dropped for v0.3 and written for v1.0.
pub fn error(from: ProtocolVersion, to: ProtocolVersion, error: ErrorObject) -> ErrorObject {
    if from == to {
        return error;
    }
    match to {
        ProtocolVersion::V0_3 => match error.code {
            V10_EXTENSION_SUPPORT_REQUIRED | V10_VERSION_NOT_SUPPORTED => ErrorCode::InternalError
                .with_message(format!(
                    "{} (A2A v1.0 error {}, which v0.3 does not have)",
                    error.message, error.code
                )),
            code => ErrorObject {
                code,
                message: error.message,
                data: None,
            },
        },
        ProtocolVersion::V1_0 => match ErrorCode::from_code(error.code) {
            Some(code) => error_object(to, code, error.message),
            None => error,
        },
    }
}

/// v1.0's error codes that v0.3 does not have.
const V10_EXTENSION_SUPPORT_REQUIRED: i64 = -32008;
const V10_VERSION_NOT_SUPPORTED: i64 = -32009;
