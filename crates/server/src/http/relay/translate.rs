//! Relaying in v0.3 to a remote agent that offers only v1.0 (docs/wire.md, Translation): the
//! browser UI speaks only v0.3. The caller's request is written in v1.0 for the remote (method,
//! params, `A2A-Version`, the extension activation header), and each answer, SSE event or
//! error is read with the v1.0 codec and written in v0.3 for the caller, all through the
//! protocol crate's `codec::translate`. The recording reads the remote's own v1.0 bytes. What
//! does not translate ends the answer with a clear JSON-RPC error.

use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::http::{header, HeaderMap, HeaderValue};
use axum::response::{IntoResponse, Response};
use axum::Json;
use futures_util::stream;
use serde_json::Value;
use signoff_protocol::codec::{self, translate, CardFlavor, Method};
use signoff_protocol::jsonrpc::{ErrorCode, ErrorObject, Id, Response as RpcResponse};
use signoff_protocol::sse::{encode_comment, encode_data, SseFrame, SseParser};
use signoff_protocol::ProtocolVersion;
use tokio_util::sync::CancellationToken;

use super::record::Recording;
use super::{Passing, RelayedBody, RemoteAgent, RpcCall, FORWARDED};
use crate::agent::remote;
use crate::agent::Decider;
use crate::http::AppState;

/// The caller's version and the remote's.
const CLIENT: ProtocolVersion = ProtocolVersion::V0_3;
const REMOTE: ProtocolVersion = ProtocolVersion::V1_0;
/// The largest SSE event or JSON answer of the remote that is translated; a larger one ends
/// the answer with an error.
const MAX_TRANSLATED_BYTES: usize = 8 * 1024 * 1024;

impl RemoteAgent {
    /// Whether the remote's card offers v1.0 and not v0.3 (its client's card, else the last
    /// one it gave). A remote that gives no card is relayed unchanged, as it was before cards
    /// were read.
    pub(super) async fn offers_only_v10(&self) -> bool {
        self.client.version().await == REMOTE
    }

    /// The version to speak to the remote in calls of our own (`tasks/get`, a REST decision).
    pub(super) async fn own_calls_version(&self) -> ProtocolVersion {
        self.client.version().await
    }
}

/// The card served for a remote that offers only v1.0 also offers v0.3 at the relay (a lenient
/// card gets v0.3's main fields too, unless the caller asked for the strict v1.0 card).
pub(super) fn offer_v03(card: &mut Value, relay_url: &str, asked_v10: bool) {
    if remote::offers_only_v10(card) {
        let flavor = if asked_v10 {
            CardFlavor::StrictV1
        } else {
            CardFlavor::Lenient
        };
        codec::offer_card_interface(card, relay_url, CLIENT, flavor);
    }
}

/// The name of a response header echoed to the caller: the remote's v1.0 `A2A-Extensions` is
/// v0.3's `X-A2A-Extensions`.
pub(super) fn echoed_name(name: &'static str) -> &'static str {
    if name.eq_ignore_ascii_case("a2a-extensions") {
        "x-a2a-extensions"
    } else {
        name
    }
}

/// `POST` of a v0.3 caller to a remote that offers only v1.0: the call translated, relayed,
/// recorded in the remote's version, and its answer translated back.
pub(super) async fn relay(
    state: &AppState,
    remote: &Arc<RemoteAgent>,
    who: &Decider,
    headers: &HeaderMap,
    raw_query: Option<&str>,
    body: &[u8],
    shutdown: CancellationToken,
) -> Response {
    let user = who.subject.as_str();
    let call = RpcCall::of(body, CLIENT);
    let translated = match translate::request(CLIENT, REMOTE, body) {
        Ok(translated) => translated,
        Err(error) => return call.refuse(error),
    };
    let remote_body = translated.body.to_string();
    let recording = Recording::start(&state.runtime, remote, who, remote_body.as_bytes(), REMOTE);
    let query = raw_query.map(without_version);
    remote
        .forward(
            user,
            &remote_headers(headers),
            query.as_deref(),
            Bytes::from(remote_body),
            call,
            Passing {
                shutdown,
                recording,
                translation: Some(Translation {
                    method: translated.method,
                }),
            },
        )
        .await
}

/// The caller's headers for the remote: `A2A-Version: 1.0`, and the extensions the caller
/// activated under v1.0's header name.
fn remote_headers(headers: &HeaderMap) -> HeaderMap {
    let mut out = HeaderMap::new();
    for name in FORWARDED {
        if let Some(value) = headers.get(name) {
            out.insert(name, value.clone());
        }
    }
    out.remove("x-a2a-extensions");
    if let Some(extensions) = headers.get("x-a2a-extensions") {
        out.insert("a2a-extensions", extensions.clone());
    }
    out.insert("a2a-version", HeaderValue::from_static(REMOTE.as_str()));
    // The body is our own JSON now.
    out.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    out
}

/// A query string without its `A2A-Version` parameter (the header says 1.0 now).
fn without_version(query: &str) -> String {
    query
        .split('&')
        .filter(|pair| pair.split('=').next() != Some("A2A-Version"))
        .collect::<Vec<_>>()
        .join("&")
}

impl RpcCall {
    /// The caller's call refused before it reached the remote: JSON, or for a streaming method
    /// the stream's one event, as `error_response` answers.
    fn refuse(&self, error: ErrorObject) -> Response {
        let error = RpcResponse::error(self.id.clone(), error).to_json();
        if self.streaming {
            (
                [(header::CONTENT_TYPE, "text/event-stream")],
                encode_data(&error),
            )
                .into_response()
        } else {
            Json(serde_json::from_str::<Value>(&error).unwrap_or(Value::Null)).into_response()
        }
    }
}

/// What the relay needs to translate a call's answer: its method.
pub(super) struct Translation {
    method: Method,
}

impl Translation {
    /// The caller's body made from the remote's answer (`source_is_sse`: the remote answered
    /// with a stream), its content type, and whether it is a stream.
    pub(super) fn body(
        self,
        relayed: RelayedBody,
        id: Id,
        source_is_sse: bool,
    ) -> (Body, HeaderValue, bool) {
        let streaming = self.method.is_streaming();
        let content_type = HeaderValue::from_static(if streaming {
            "text/event-stream"
        } else {
            "application/json"
        });
        let translated = TranslatedBody {
            relayed,
            method: self.method,
            id,
            source_is_sse,
            parser: SseParser::new(MAX_TRANSLATED_BYTES),
            json: Vec::new(),
            ended: false,
        };
        let body = Body::from_stream(stream::unfold(translated, |mut translated| async move {
            let item = translated.next_chunk().await?;
            Some((Ok::<Bytes, std::io::Error>(item), translated))
        }));
        (body, content_type, streaming)
    }
}

/// The remote's answer, read as it comes and passed on translated: each SSE event as soon as it
/// is whole; a JSON answer once it ended.
struct TranslatedBody {
    relayed: RelayedBody,
    method: Method,
    /// The caller's id, on every answer.
    id: Id,
    source_is_sse: bool,
    parser: SseParser,
    json: Vec<u8>,
    ended: bool,
}

impl TranslatedBody {
    async fn next_chunk(&mut self) -> Option<Bytes> {
        while !self.ended {
            let out = match self.relayed.next_chunk().await {
                Some(Ok(bytes)) => self.take(&bytes),
                Some(Err(err)) => self.fail(&err.to_string()),
                None => self.finish(),
            };
            if !out.is_empty() {
                return Some(Bytes::from(out));
            }
        }
        None
    }

    /// One chunk of the remote's answer.
    fn take(&mut self, bytes: &[u8]) -> String {
        if !self.source_is_sse {
            if self.json.len() + bytes.len() > MAX_TRANSLATED_BYTES {
                return self.fail(&format!(
                    "the remote agent's answer is larger than {MAX_TRANSLATED_BYTES} bytes"
                ));
            }
            self.json.extend_from_slice(bytes);
            return String::new();
        }
        if !self.method.is_streaming() {
            return self
                .fail("the remote agent answered a call that does not stream with a stream");
        }
        match self.parser.feed(bytes) {
            // The remote's keep-alive comment (a line that starts with `:`) is passed on as
            // one of ours: the caller counts silence between bytes (the UI's idle timeout).
            Ok(frames) if frames.is_empty() && holds_comment(bytes) => encode_comment("keep-alive"),
            Ok(frames) => self.events(frames),
            Err(err) => self.fail(&format!("the remote agent's stream cannot be read: {err}")),
        }
    }

    /// Whole SSE events, translated; the first that ends a v0.3 stream ends the answer.
    fn events(&mut self, frames: Vec<SseFrame>) -> String {
        let mut out = String::new();
        for frame in frames {
            let SseFrame::Event(event) = frame else {
                continue;
            };
            let translated =
                translate::response(self.method, REMOTE, CLIENT, &self.id, event.data.as_bytes());
            out.push_str(&encode_data(&translated.json));
            if translated.ends_stream {
                self.end_after_final_event();
                break;
            }
        }
        out
    }

    /// The remote's answer ended.
    fn finish(&mut self) -> String {
        self.ended = true;
        if self.source_is_sse {
            return match self.parser.finish() {
                Ok(frames) => self.events(frames),
                Err(err) => self.fail(&format!("the remote agent's stream cannot be read: {err}")),
            };
        }
        let translated = translate::response(self.method, REMOTE, CLIENT, &self.id, &self.json);
        if self.method.is_streaming() {
            encode_data(&translated.json)
        } else {
            translated.json
        }
    }

    /// A v0.3 stream ends with its final event, where a v1.0 subscription may go on: the rest
    /// is not the caller's, and the recording has what it needs.
    fn end_after_final_event(&mut self) {
        self.ended = true;
        if let Some(recording) = &self.relayed.recording {
            recording.end();
        }
    }

    /// Ends the answer with a `-32603` error that says why (the caller's output always stands
    /// between events, so an error event can follow what was sent).
    fn fail(&mut self, message: &str) -> String {
        self.ended = true;
        let error = RpcResponse::error(
            self.id.clone(),
            ErrorCode::InternalError.with_message(message),
        )
        .to_json();
        if self.method.is_streaming() {
            encode_data(&error)
        } else {
            error
        }
    }
}

/// Whether a chunk of SSE holds a comment line (one that starts with `:`; a chunk that starts
/// inside a line may read as one, and then costs one extra keep-alive).
fn holds_comment(bytes: &[u8]) -> bool {
    bytes.first() == Some(&b':')
        || bytes
            .windows(2)
            .any(|pair| matches!(pair, [b'\n' | b'\r', b':']))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_remote_gets_v10_headers() {
        let mut headers = HeaderMap::new();
        headers.insert("a2a-version", HeaderValue::from_static("0.3"));
        headers.insert(
            "x-a2a-extensions",
            HeaderValue::from_static("https://kagent.dev/extensions/hitl/v1"),
        );
        headers.insert("accept", HeaderValue::from_static("text/event-stream"));
        headers.insert("cookie", HeaderValue::from_static("secret"));
        let out = remote_headers(&headers);
        let get = |name: &str| out.get(name).and_then(|value| value.to_str().ok());
        assert_eq!(get("a2a-version"), Some("1.0"));
        assert_eq!(
            get("a2a-extensions"),
            Some("https://kagent.dev/extensions/hitl/v1")
        );
        assert_eq!(get("x-a2a-extensions"), None);
        assert_eq!(get("accept"), Some("text/event-stream"));
        assert_eq!(get("content-type"), Some("application/json"));
        assert_eq!(get("cookie"), None);
    }

    #[test]
    fn a_keep_alive_is_told_from_a_piece_of_an_event() {
        assert!(holds_comment(b": keep-alive\n\n"));
        assert!(holds_comment(b"}}\n\n: keep-alive\n\n"));
        assert!(!holds_comment(b"data: {\"text\": \"a: b\"}"));
        assert!(!holds_comment(b""));
    }

    #[test]
    fn the_query_loses_its_version_only() {
        assert_eq!(without_version("A2A-Version=0.3&x=1"), "x=1");
        assert_eq!(without_version("x=1&y=A2A-Version"), "x=1&y=A2A-Version");
        assert_eq!(without_version("A2A-Version=0.3"), "");
    }
}
