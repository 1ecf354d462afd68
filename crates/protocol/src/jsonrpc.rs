//! The JSON-RPC 2.0 envelope and the A2A error codes (spec/wire.md §7).
//!
//! The envelope is the same in both A2A versions; only method names, params and results differ,
//! and those are the codecs' business.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A request id: a string, a number, or null (JSON-RPC allows all three).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Id {
    Number(i64),
    String(String),
    Null,
}

/// A JSON-RPC request as it arrives; `params` is decoded later by the codec of its version.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Request {
    pub jsonrpc: String,
    /// Absent for notifications; A2A has none, so an absent id is answered like `null`.
    /// A present `"id": null` is `Some(Id::Null)`, not `None`.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present_id"
    )]
    pub id: Option<Id>,
    pub method: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<Value>,
}

/// Serde maps a present `null` to `None` for an `Option`; an id that is there, even `null`, is `Some`.
fn present_id<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Option<Id>, D::Error> {
    Id::deserialize(deserializer).map(Some)
}

impl Request {
    pub fn new(id: Id, method: impl Into<String>, params: Value) -> Self {
        Request {
            jsonrpc: "2.0".to_owned(),
            id: Some(id),
            method: method.into(),
            params: Some(params),
        }
    }
}

/// The error object of a failed call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorObject {
    pub code: i64,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

/// A response: exactly one of `result` and `error`.
#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    pub id: Id,
    pub outcome: Result<Value, ErrorObject>,
}

/// The wire shape of [`Response`], kept private so the "exactly one of" rule holds in Rust.
#[derive(Serialize, Deserialize)]
struct WireResponse {
    jsonrpc: String,
    id: Id,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    result: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    error: Option<ErrorObject>,
}

impl Response {
    pub fn success(id: Id, result: Value) -> Self {
        Response {
            id,
            outcome: Ok(result),
        }
    }

    pub fn error(id: Id, error: ErrorObject) -> Self {
        Response {
            id,
            outcome: Err(error),
        }
    }

    pub fn to_value(&self) -> Value {
        let (result, error) = match &self.outcome {
            Ok(result) => (Some(result.clone()), None),
            Err(error) => (None, Some(error.clone())),
        };
        let wire = WireResponse {
            jsonrpc: "2.0".to_owned(),
            id: self.id.clone(),
            result,
            error,
        };
        serde_json::to_value(wire).unwrap_or(Value::Null)
    }

    pub fn from_value(value: Value) -> Result<Self, EnvelopeError> {
        let wire: WireResponse =
            serde_json::from_value(value).map_err(|err| EnvelopeError(err.to_string()))?;
        let outcome = match (wire.result, wire.error) {
            (Some(result), None) => Ok(result),
            (None, Some(error)) => Err(error),
            // JSON-RPC forbids both and neither; a `null` result deserializes as `None`.
            (None, None) => Ok(Value::Null),
            (Some(_), Some(_)) => {
                return Err(EnvelopeError(
                    "a response holds both result and error".to_owned(),
                ))
            }
        };
        Ok(Response {
            id: wire.id,
            outcome,
        })
    }
}

impl Serialize for Response {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.to_value().serialize(serializer)
    }
}

/// A response that is not a JSON-RPC response.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a JSON-RPC response: {0}")]
pub struct EnvelopeError(pub String);

/// The error codes of spec/wire.md §7.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorCode {
    ParseError,
    InvalidRequest,
    MethodNotFound,
    InvalidParams,
    InternalError,
    TaskNotFound,
    TaskNotCancelable,
    UnsupportedOperation,
    VersionNotSupported,
}

impl ErrorCode {
    pub fn code(self) -> i64 {
        match self {
            ErrorCode::ParseError => -32700,
            ErrorCode::InvalidRequest => -32600,
            ErrorCode::MethodNotFound => -32601,
            ErrorCode::InvalidParams => -32602,
            ErrorCode::InternalError => -32603,
            ErrorCode::TaskNotFound => -32001,
            ErrorCode::TaskNotCancelable => -32002,
            ErrorCode::UnsupportedOperation => -32004,
            ErrorCode::VersionNotSupported => -32009,
        }
    }

    pub fn from_code(code: i64) -> Option<Self> {
        [
            ErrorCode::ParseError,
            ErrorCode::InvalidRequest,
            ErrorCode::MethodNotFound,
            ErrorCode::InvalidParams,
            ErrorCode::InternalError,
            ErrorCode::TaskNotFound,
            ErrorCode::TaskNotCancelable,
            ErrorCode::UnsupportedOperation,
            ErrorCode::VersionNotSupported,
        ]
        .into_iter()
        .find(|candidate| candidate.code() == code)
    }

    /// The `reason` of v1.0's `google.rpc.ErrorInfo`: the error's name in upper snake case.
    pub fn reason(self) -> &'static str {
        match self {
            ErrorCode::ParseError => "PARSE_ERROR",
            ErrorCode::InvalidRequest => "INVALID_REQUEST",
            ErrorCode::MethodNotFound => "METHOD_NOT_FOUND",
            ErrorCode::InvalidParams => "INVALID_PARAMS",
            ErrorCode::InternalError => "INTERNAL_ERROR",
            ErrorCode::TaskNotFound => "TASK_NOT_FOUND",
            ErrorCode::TaskNotCancelable => "TASK_NOT_CANCELABLE",
            ErrorCode::UnsupportedOperation => "UNSUPPORTED_OPERATION",
            ErrorCode::VersionNotSupported => "VERSION_NOT_SUPPORTED",
        }
    }

    /// An error object without `data`; the codec of the request's version adds what it needs.
    pub fn with_message(self, message: impl Into<String>) -> ErrorObject {
        ErrorObject {
            code: self.code(),
            message: message.into(),
            data: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn ids_may_be_string_number_or_null() {
        for (raw, id) in [
            (json!("a-1"), Id::String("a-1".into())),
            (json!(7), Id::Number(7)),
            (json!(null), Id::Null),
        ] {
            let request: Request =
                serde_json::from_value(json!({"jsonrpc":"2.0","id":raw,"method":"m"})).unwrap();
            assert_eq!(request.id, Some(id));
        }
    }

    #[test]
    fn response_round_trips_and_refuses_both_result_and_error() {
        let ok = Response::success(Id::Number(1), json!({"x": 1}));
        assert_eq!(Response::from_value(ok.to_value()).unwrap(), ok);
        let err = Response::error(Id::Null, ErrorCode::ParseError.with_message("bad json"));
        assert_eq!(
            err.to_value(),
            json!({"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"bad json"}})
        );
        let both = json!({"jsonrpc":"2.0","id":1,"result":1,"error":{"code":1,"message":"m"}});
        assert!(Response::from_value(both).is_err());
    }

    #[test]
    fn every_code_maps_back() {
        for code in [
            -32700, -32600, -32601, -32602, -32603, -32001, -32002, -32004, -32009,
        ] {
            assert_eq!(ErrorCode::from_code(code).map(ErrorCode::code), Some(code));
        }
    }
}
