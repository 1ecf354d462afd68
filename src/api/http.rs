//! `fetch` with web-sys: requests, JSON bodies, error bodies, and abort handles.

use js_sys::{Array, Promise, Uint8Array};
use serde::de::DeserializeOwned;
use serde_json::Value;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use web_sys::{
    AbortController, AbortSignal, Headers, ReadableStreamDefaultReader, RequestInit, Response,
};

use super::ApiError;

/// Aborts its request when dropped, so a component that goes away stops its stream. Clones
/// share one controller: dropping any of them aborts.
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

fn describe(err: &JsValue) -> String {
    if let Some(error) = err.dyn_ref::<js_sys::Error>() {
        return String::from(error.message());
    }
    err.as_string().unwrap_or_else(|| format!("{err:?}"))
}

fn is_abort(err: &JsValue) -> bool {
    err.dyn_ref::<js_sys::Error>()
        .is_some_and(|error| error.name() == "AbortError")
}

pub(super) fn network(err: JsValue) -> ApiError {
    if is_abort(&err) {
        ApiError::Aborted
    } else {
        ApiError::Network(describe(&err))
    }
}

/// Sends one request; `body` is JSON text.
pub(super) async fn send(
    method: &str,
    url: &str,
    body: Option<&str>,
    headers: &[(&str, &str)],
    signal: Option<&AbortSignal>,
) -> Result<Response, ApiError> {
    let window = web_sys::window().ok_or_else(|| ApiError::Network("no window".to_owned()))?;
    let init = RequestInit::new();
    init.set_method(method);
    let header_map = Headers::new().map_err(network)?;
    for (name, value) in headers {
        header_map.set(name, value).map_err(network)?;
    }
    if let Some(body) = body {
        header_map
            .set("content-type", "application/json")
            .map_err(network)?;
        init.set_body(&JsValue::from_str(body));
    }
    init.set_headers(&header_map);
    if let Some(signal) = signal {
        init.set_signal(Some(signal));
    }
    let answer = JsFuture::from(window.fetch_with_str_and_init(url, &init))
        .await
        .map_err(network)?;
    answer
        .dyn_into::<Response>()
        .map_err(|_| ApiError::Network("fetch gave no response".to_owned()))
}

pub(super) async fn text(response: &Response) -> Result<String, ApiError> {
    let promise = response.text().map_err(network)?;
    let text = JsFuture::from(promise).await.map_err(network)?;
    Ok(text.as_string().unwrap_or_default())
}

/// Turns a non-2xx answer into an error carrying the server's own message when it sent one.
pub(super) async fn check(response: Response) -> Result<Response, ApiError> {
    if response.ok() {
        return Ok(response);
    }
    let status = response.status();
    let body = text(&response).await.unwrap_or_default();
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

pub(super) async fn json(response: &Response) -> Result<Value, ApiError> {
    let body = text(response).await?;
    if body.trim().is_empty() {
        return Ok(Value::Null);
    }
    serde_json::from_str(&body).map_err(|err| ApiError::Decode(err.to_string()))
}

pub(super) async fn get_json(url: &str) -> Result<Value, ApiError> {
    let response = check(send("GET", url, None, &[], None).await?).await?;
    json(&response).await
}

/// GETs one of the server's REST answers as its type from `signoff_protocol::rest`.
pub(super) async fn get<T: DeserializeOwned>(url: &str) -> Result<T, ApiError> {
    let response = check(send("GET", url, None, &[], None).await?).await?;
    decode(url, &text(&response).await?)
}

/// Reads a REST answer; an answer that does not fit its type is an error naming the URL and
/// the field ("/api/agents: missing field `cardUrl` at line 1 column 230"), so the person sees
/// what broke instead of an empty list.
pub(super) fn decode<T: DeserializeOwned>(url: &str, body: &str) -> Result<T, ApiError> {
    serde_json::from_str(body).map_err(|err| ApiError::Decode(format!("{url}: {err}")))
}

pub(super) async fn delete(url: &str) -> Result<(), ApiError> {
    check(send("DELETE", url, None, &[], None).await?).await?;
    Ok(())
}

fn sleep(ms: i32) -> Promise {
    Promise::new(&mut |resolve, _reject| {
        if let Some(window) = web_sys::window() {
            // The timer is never cleared: resolving an already settled race does nothing.
            let _ = window.set_timeout_with_callback_and_timeout_and_arguments_0(&resolve, ms);
        }
    })
}

/// Reads a body stream chunk by chunk; `Ok(None)` at the end. A chunk that takes longer than
/// `idle_secs` to come cancels the stream with [`ApiError::Timeout`].
pub(super) struct BodyReader {
    reader: ReadableStreamDefaultReader,
    idle_secs: u32,
}

impl BodyReader {
    pub(super) fn new(response: &Response, idle_secs: u32) -> Result<Self, ApiError> {
        let body = response
            .body()
            .ok_or_else(|| ApiError::Decode("the stream has no body".to_owned()))?;
        let reader = body
            .get_reader()
            .dyn_into::<ReadableStreamDefaultReader>()
            .map_err(|_| ApiError::Decode("the stream cannot be read".to_owned()))?;
        Ok(BodyReader { reader, idle_secs })
    }

    pub(super) async fn next(&mut self) -> Result<Option<Vec<u8>>, ApiError> {
        let millis = i32::try_from(self.idle_secs.saturating_mul(1000)).unwrap_or(i32::MAX);
        let race = Promise::race(&Array::of2(&self.reader.read(), &sleep(millis)));
        let result = JsFuture::from(race).await.map_err(network)?;
        if result.is_undefined() {
            let _ = self.reader.cancel();
            return Err(ApiError::Timeout(self.idle_secs));
        }
        let done = js_sys::Reflect::get(&result, &JsValue::from_str("done"))
            .map_err(network)?
            .as_bool()
            .unwrap_or(true);
        if done {
            return Ok(None);
        }
        let value = js_sys::Reflect::get(&result, &JsValue::from_str("value")).map_err(network)?;
        Ok(Some(Uint8Array::new(&value).to_vec()))
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
