//! The JSON-RPC 2.0 envelope and the A2A error codes (docs/wire.md, Envelope and Error codes).
//!
//! The envelope is the same in both A2A versions; only method names, params and results differ,
//! and those are the codecs' business.

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::Value;

/// A request id: a string, a number, or null (JSON-RPC allows all three).
///
/// A response carries the id exactly as the request spelled it: a number that is not an `i64`
/// (`1.5`, `18446744073709551616`) is kept as its text in [`Id::OtherNumber`] and written back
/// verbatim by [`Response::to_json`] (read it with [`request_id`]).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Id {
    Number(i64),
    String(String),
    Null,
    /// Any other JSON number, as the exact text the caller sent.
    OtherNumber(String),
}

impl Id {
    /// The id of a JSON value, if it is a valid id (string, number or null).
    pub fn from_value(value: &Value) -> Option<Id> {
        match value {
            Value::Null => Some(Id::Null),
            Value::String(text) => Some(Id::String(text.clone())),
            Value::Number(number) => Some(match number.as_i64() {
                Some(n) => Id::Number(n),
                None => Id::OtherNumber(number.to_string()),
            }),
            Value::Bool(_) | Value::Array(_) | Value::Object(_) => None,
        }
    }

    fn from_raw(raw: &RawValue) -> Option<Id> {
        let text = raw.get().trim();
        if text.starts_with(['-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9']) {
            return Some(match text.parse::<i64>() {
                // `-0` or `007` would not come back as sent from an i64.
                Ok(n) if n.to_string() == text => Id::Number(n),
                Ok(_) | Err(_) => Id::OtherNumber(text.to_owned()),
            });
        }
        serde_json::from_str::<Value>(text)
            .ok()
            .and_then(|value| Id::from_value(&value))
    }
}

impl Serialize for Id {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Id::Number(n) => serializer.serialize_i64(*n),
            Id::String(text) => serializer.serialize_str(text),
            Id::Null => serializer.serialize_unit(),
            // Written as the raw text by serde_json's writers; a `Value` can only approximate it.
            Id::OtherNumber(text) => match RawValue::from_string(text.clone()) {
                Ok(raw) => raw.serialize(serializer),
                Err(_) => serializer.serialize_unit(),
            },
        }
    }
}

impl<'de> Deserialize<'de> for Id {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        Id::from_value(&value)
            .ok_or_else(|| serde::de::Error::custom("an id must be a string, a number or null"))
    }
}

/// The `id` of a request body exactly as sent, or `None` when the body is not a JSON object or
/// its id is absent or not a string, number or null.
pub fn request_id(body: &[u8]) -> Option<Id> {
    #[derive(Deserialize)]
    struct IdOnly<'a> {
        // A present `null` is an id too (serde would read it as an absent `Option`).
        #[serde(borrow, default, deserialize_with = "present_raw")]
        id: Option<&'a RawValue>,
    }
    fn present_raw<'de, D: serde::Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<&'de RawValue>, D::Error> {
        <&RawValue>::deserialize(deserializer).map(Some)
    }
    // Serde would also read a struct from an array (`[1]`): only an object has an id.
    if body.iter().find(|byte| !byte.is_ascii_whitespace()) != Some(&b'{') {
        return None;
    }
    let only: IdOnly<'_> = serde_json::from_slice(body).ok()?;
    only.id.and_then(Id::from_raw)
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
        serde_json::to_value(self.wire()).unwrap_or(Value::Null)
    }

    pub fn from_value(value: Value) -> Result<Self, EnvelopeError> {
        // Read through a borrow, as the codecs read their wire types: a second deserializer
        // (the owned `Value`'s) would be one more copy of serde's code in the browser's wasm.
        let wire =
            WireResponse::deserialize(&value).map_err(|err| EnvelopeError(err.to_string()))?;
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

impl Response {
    /// The response as JSON text, with the id exactly as the request spelled it.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|_| {
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"internal error"}}"#
                .to_owned()
        })
    }

    /// A success response as JSON text whose `result` is `raw_result`, already JSON (for
    /// results stored encoded, which need not be parsed and encoded again).
    pub fn success_json_with_raw_result(id: &Id, raw_result: &str) -> String {
        let id = serde_json::to_string(id).unwrap_or_else(|_| "null".to_owned());
        let mut out = String::with_capacity(raw_result.len() + id.len() + 40);
        out.push_str(r#"{"jsonrpc":"2.0","id":"#);
        out.push_str(&id);
        out.push_str(r#","result":"#);
        out.push_str(raw_result);
        out.push('}');
        out
    }

    fn wire(&self) -> WireResponse {
        let (result, error) = match &self.outcome {
            Ok(result) => (Some(result.clone()), None),
            Err(error) => (None, Some(error.clone())),
        };
        WireResponse {
            jsonrpc: "2.0".to_owned(),
            id: self.id.clone(),
            result,
            error,
        }
    }
}

impl Serialize for Response {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.wire().serialize(serializer)
    }
}

/// A response that is not a JSON-RPC response.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a JSON-RPC response: {0}")]
pub struct EnvelopeError(pub String);

/// The error codes of docs/wire.md, Error codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorCode {
    ParseError,
    InvalidRequest,
    MethodNotFound,
    InvalidParams,
    InternalError,
    TaskNotFound,
    TaskNotCancelable,
    /// Push-notification config methods: this server sends no push notifications.
    PushNotificationNotSupported,
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
            ErrorCode::PushNotificationNotSupported => -32003,
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
            ErrorCode::PushNotificationNotSupported,
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
            ErrorCode::PushNotificationNotSupported => "PUSH_NOTIFICATION_NOT_SUPPORTED",
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
    fn ids_come_back_exactly_as_sent() {
        for raw in [
            "1.5",
            "18446744073709551616",
            "-0",
            "1e3",
            "7",
            "\"x\"",
            "null",
        ] {
            let body = format!(r#"{{"jsonrpc":"2.0","id":{raw},"method":"m"}}"#);
            let id = request_id(body.as_bytes()).unwrap();
            let response = Response::error(id, ErrorCode::ParseError.with_message("m"));
            assert!(
                response.to_json().contains(&format!(r#""id":{raw},"#)),
                "{raw}: {}",
                response.to_json()
            );
        }
        assert_eq!(request_id(br#"{"id":[1]}"#), None);
        assert_eq!(request_id(b"[1]"), None);
        assert_eq!(request_id(br#"{"method":"m"}"#), None);
    }

    #[test]
    fn a_raw_result_is_spliced_in_as_is() {
        let text = Response::success_json_with_raw_result(
            &Id::OtherNumber("1.5".into()),
            r#"{"kind":"task"}"#,
        );
        assert_eq!(
            text,
            r#"{"jsonrpc":"2.0","id":1.5,"result":{"kind":"task"}}"#
        );
        let parsed = Response::from_value(serde_json::from_str(&text).unwrap()).unwrap();
        assert_eq!(parsed.outcome, Ok(json!({"kind": "task"})));
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
