//! Every error under `/api/` is JSON, `{"error": "…"}` (docs/rest.md, Errors). The refusals
//! that axum and tower-http make before a handler runs (a path that is not UTF-8, a body that
//! cannot be read or is cut off at the limit, a method a route does not take) come as plain
//! text or with no body at all; this turns them into the same JSON, with their words.

use axum::body::Body;
use axum::extract::Request;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::Response;
use serde_json::json;

/// The most of a plain-text refusal that is read to be rewritten (they are one line).
const REFUSAL_BYTES: usize = 16 * 1024;

pub async fn json_errors(request: Request, next: axum::middleware::Next) -> Response {
    if !request.uri().path().starts_with("/api/") {
        return next.run(request).await;
    }
    let method = request.method().clone();
    let response = next.run(request).await;
    let status = response.status();
    let is_json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.starts_with("application/json"));
    if !status.is_client_error() || is_json {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let text = axum::body::to_bytes(body, REFUSAL_BYTES)
        .await
        .map(|bytes| String::from_utf8_lossy(&bytes).trim().to_owned())
        .unwrap_or_default();
    let message = if !text.is_empty() {
        text
    } else if status == StatusCode::METHOD_NOT_ALLOWED {
        // axum adds the `Allow` header that names the methods after this layer.
        format!("method {method} is not allowed at this path (see the Allow header)")
    } else {
        status.canonical_reason().unwrap_or("refused").to_owned()
    };
    let body = json!({ "error": message }).to_string();
    parts.headers.remove(header::CONTENT_LENGTH);
    parts.headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    Response::from_parts(parts, Body::from(body))
}
