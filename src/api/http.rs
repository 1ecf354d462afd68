//! The browser's HTTP through gloo-net: requests, JSON bodies, error bodies, streamed response
//! bodies (wasm-streams), and abort handles.

use futures_util::future::{select, Either};
use futures_util::StreamExt;
use gloo_net::http::{Request, RequestBuilder, Response};
use gloo_timers::future::TimeoutFuture;
use serde::de::DeserializeOwned;
use serde_json::Value;
use signoff_protocol::sse::{SseEvent, SseFrame, SseParser};
use wasm_bindgen::{JsCast, JsValue};
use wasm_streams::readable::IntoStream;
use wasm_streams::ReadableStream;
use web_sys::{AbortController, AbortSignal};

use super::ApiError;

/// Aborts its request when dropped, so a component that goes away stops its stream. Clones
/// share one controller: dropping any of them aborts. (gloo-net takes a signal but has no
/// controller of its own.)
#[derive(Clone)]
pub struct Abort {
    controller: Option<AbortController>,
}

impl Abort {
    pub fn new() -> Self {
        Abort {
            controller: AbortController::new().ok(),
        }
    }

    pub fn signal(&self) -> Option<AbortSignal> {
        self.controller.as_ref().map(AbortController::signal)
    }

    pub fn abort(&self) {
        if let Some(controller) = &self.controller {
            controller.abort();
        }
    }

    /// The controller itself, for aborting from a browser event (it stays owned here).
    pub fn controller(&self) -> Option<AbortController> {
        self.controller.clone()
    }
}

impl Default for Abort {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for Abort {
    fn drop(&mut self) {
        self.abort();
    }
}

/// gloo-net's error as the person reads it; an aborted fetch is no failure of the server.
fn from_gloo(err: gloo_net::Error) -> ApiError {
    match err {
        gloo_net::Error::JsError(js) if js.name == "AbortError" => ApiError::Aborted,
        gloo_net::Error::JsError(js) => ApiError::Network(js.message),
        gloo_net::Error::SerdeError(err) => ApiError::Decode(err.to_string()),
        gloo_net::Error::GlooError(message) => ApiError::Network(message),
    }
}

/// Where the UI keeps the bearer token of a server started with `--auth tokens`.
const TOKEN_KEY: &str = "signoff.token";

/// The value kept in localStorage under `key`, if any.
pub fn stored(key: &str) -> Option<String> {
    web_sys::window()?
        .local_storage()
        .ok()??
        .get_item(key)
        .ok()?
}

/// Keeps `value` in localStorage under `key` (nothing happens where storage is off).
pub fn store(key: &str, value: &str) {
    if let Some(storage) = web_sys::window().and_then(|window| window.local_storage().ok()?) {
        let _ = storage.set_item(key, value);
    }
}

/// The bearer token the person gave (from `/#token=…`, kept in localStorage), if any.
pub fn saved_token() -> Option<String> {
    stored(TOKEN_KEY).filter(|token| !token.trim().is_empty())
}

/// Keeps `token` for every later request (`state::account` says when).
pub fn save_token(token: &str) {
    store(TOKEN_KEY, token);
}

/// Who this browser calls the server as, in short: a hash of the bearer token (not the token),
/// or `anyone` without one. Tabs share an approvals stream only with tabs of the same caller.
pub fn caller_key() -> String {
    let Some(token) = saved_token() else {
        return "anyone".to_owned();
    };
    // FNV-1a: a name for a channel between tabs, not a secret.
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in token.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{hash:016x}")
}

/// The token given in the address as `#token=…`, taken out of the address (so it is not
/// shared with a copied link, nor kept in the history); the rest of the address stays.
pub fn take_token_from_address() -> Option<String> {
    let window = web_sys::window()?;
    let location = window.location();
    let hash = location.hash().unwrap_or_default();
    let token = hash.strip_prefix("#token=")?.to_owned();
    if let Ok(history) = window.history() {
        let path = location.pathname().unwrap_or_else(|_| "/".to_owned());
        let query = location.search().unwrap_or_default();
        let _ = history.replace_state_with_url(&JsValue::NULL, "", Some(&format!("{path}{query}")));
    }
    Some(token)
}

/// Sends `request` with a JSON body (`body` is JSON text) when there is one, and the person's
/// bearer token when they gave one.
pub(super) fn send(
    request: RequestBuilder,
    body: Option<String>,
) -> impl std::future::Future<Output = Result<Response, ApiError>> {
    // Not an async fn of its own: one state machine fewer in the download.
    send_as(request, body, saved_token())
}

/// [`send`] with `token` as the bearer token (none: without one).
async fn send_as(
    request: RequestBuilder,
    body: Option<String>,
    token: Option<String>,
) -> Result<Response, ApiError> {
    let request = match token {
        Some(token) => request.header("Authorization", &format!("Bearer {}", token.trim())),
        None => request,
    };
    let response = match body {
        Some(body) => {
            request
                .header("content-type", "application/json")
                .body(body)
                .map_err(from_gloo)?
                .send()
                .await
        }
        None => request.send().await,
    };
    check(response.map_err(from_gloo)?).await
}

/// Turns a non-2xx answer into an error carrying the server's own message when it sent one.
async fn check(response: Response) -> Result<Response, ApiError> {
    if response.ok() {
        return Ok(response);
    }
    let status = response.status();
    let body = response.text().await.unwrap_or_default();
    let from_json = serde_json::from_str::<Value>(&body).ok().and_then(|value| {
        ["error", "message"]
            .iter()
            .find_map(|key| match value.get(*key) {
                Some(Value::String(message)) => Some(message.clone()),
                Some(Value::Object(inner)) => inner
                    .get("message")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
                Some(_) | None => None,
            })
    });
    let message = from_json
        .or_else(|| (!body.trim().is_empty()).then(|| body.trim().to_owned()))
        .unwrap_or_else(|| format!("the server answered {status} {}", response.status_text()));
    Err(ApiError::Http { status, message })
}

/// The body as JSON; an empty body is `null`.
pub(super) async fn json(response: &Response) -> Result<Value, ApiError> {
    let body = response.text().await.map_err(from_gloo)?;
    if body.trim().is_empty() {
        return Ok(Value::Null);
    }
    serde_json::from_str(&body).map_err(|err| ApiError::Decode(err.to_string()))
}

pub(super) async fn get_json(url: &str) -> Result<Value, ApiError> {
    json(&send(Request::get(url), None).await?).await
}

/// GETs one of the server's REST answers as its type from `signoff_protocol::rest`.
pub(super) async fn get<T: DeserializeOwned>(url: &str) -> Result<T, ApiError> {
    let response = send(Request::get(url), None).await?;
    decode(url, &response.text().await.map_err(from_gloo)?)
}

/// GETs a REST answer as the user of `token` (none: without a token) rather than the saved
/// one.
pub(super) async fn get_as<T: DeserializeOwned>(
    url: &str,
    token: Option<String>,
) -> Result<T, ApiError> {
    let response = send_as(Request::get(url), None, token).await?;
    decode(url, &response.text().await.map_err(from_gloo)?)
}

/// POSTs a JSON body (`body` is JSON text) and reads the answer as its type from
/// `signoff_protocol::rest`.
pub(super) async fn post<T: DeserializeOwned>(url: &str, body: String) -> Result<T, ApiError> {
    let response = send(Request::post(url), Some(body)).await?;
    decode(url, &response.text().await.map_err(from_gloo)?)
}

/// Reads a REST answer; an answer that does not fit its type is an error naming the URL and
/// the field ("/api/agents: missing field `cardUrl` at line 1 column 230"), so the person sees
/// what broke instead of an empty list.
pub(super) fn decode<T: DeserializeOwned>(url: &str, body: &str) -> Result<T, ApiError> {
    serde_json::from_str(body).map_err(|err| ApiError::Decode(format!("{url}: {err}")))
}

/// POSTs a JSON body (`body` is JSON text) whose answer the caller does not need.
pub(super) async fn post_ignoring_answer(url: &str, body: String) -> Result<(), ApiError> {
    send(Request::post(url), Some(body)).await?;
    Ok(())
}

pub(super) async fn delete(url: &str) -> Result<(), ApiError> {
    send(Request::delete(url), None).await?;
    Ok(())
}

/// Reads a body stream chunk by chunk; `Ok(None)` at the end. A chunk that takes longer than
/// `idle_secs` to come ends the read with [`ApiError::Timeout`]; dropping the reader cancels
/// the stream.
struct BodyReader {
    chunks: IntoStream<'static>,
    idle_secs: u32,
}

impl BodyReader {
    fn new(response: &Response, idle_secs: u32) -> Result<Self, ApiError> {
        let body = response
            .body()
            .ok_or_else(|| ApiError::Decode("the stream has no body".to_owned()))?;
        Ok(BodyReader {
            chunks: ReadableStream::from_raw(body).into_stream(),
            idle_secs,
        })
    }

    async fn next(&mut self) -> Result<Option<Vec<u8>>, ApiError> {
        let idle = TimeoutFuture::new(self.idle_secs.saturating_mul(1000));
        let chunk = match select(self.chunks.next(), idle).await {
            Either::Left((chunk, _)) => chunk,
            Either::Right(((), _)) => return Err(ApiError::Timeout(self.idle_secs)),
        };
        match chunk {
            None => Ok(None),
            Some(Ok(chunk)) => Ok(Some(js_sys::Uint8Array::new(&chunk).to_vec())),
            Some(Err(err)) => Err(stream_error(&err)),
        }
    }
}

/// Reads an SSE body as it comes through the protocol's parser, handing each event to
/// `on_event` (whose error ends the read), until the body ends or sends `[DONE]`. A body read
/// that fails (or stays silent past `idle_secs`) aborts the request and ends the read with
/// that error.
pub(super) async fn read_sse(
    response: &Response,
    idle_secs: u32,
    max_event_bytes: usize,
    abort: &Abort,
    on_event: &mut dyn FnMut(SseEvent) -> Result<(), ApiError>,
) -> Result<(), ApiError> {
    let mut reader = BodyReader::new(response, idle_secs)?;
    let mut parser = SseParser::new(max_event_bytes);
    loop {
        let (frames, done) = match reader.next().await {
            Ok(Some(chunk)) => (parser.feed(&chunk), false),
            Ok(None) => (parser.finish(), true),
            Err(err) => {
                abort.abort();
                return Err(err);
            }
        };
        let frames = frames.map_err(|err| ApiError::Decode(err.to_string()))?;
        for frame in frames {
            match frame {
                SseFrame::Event(event) => on_event(event)?,
                SseFrame::Done => return Ok(()),
            }
        }
        if done {
            return Ok(());
        }
    }
}

/// Why a body read failed: the fetch's own error, `AbortError` when the request was aborted.
fn stream_error(err: &JsValue) -> ApiError {
    match err.dyn_ref::<js_sys::Error>() {
        Some(error) if error.name() == "AbortError" => ApiError::Aborted,
        Some(error) => ApiError::Network(String::from(error.message())),
        None => ApiError::Network(
            err.as_string()
                .unwrap_or_else(|| "the stream broke off".to_owned()),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use signoff_protocol::rest::SessionList;

    #[test]
    fn an_answer_that_misses_a_field_names_the_url_and_the_field() {
        let body = r#"{"sessions": [{"id": "s-1", "agent": "default/demo", "title": "hi",
                       "createdAt": "2026-11-22T18:57:03.782Z"}]}"#;
        let err = decode::<SessionList>("/api/sessions", body).unwrap_err();
        let shown = err.to_string();
        assert!(
            shown.starts_with(
                "the server sent something unreadable: /api/sessions: missing field `updatedAt`"
            ),
            "{shown}"
        );
        let err = decode::<SessionList>("/api/sessions", r#"{"sessions": {}}"#).unwrap_err();
        assert!(
            err.to_string()
                .contains("invalid type: map, expected a sequence"),
            "{err}"
        );
    }
}
