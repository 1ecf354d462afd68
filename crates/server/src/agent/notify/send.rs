//! Outbound HTTP for the channels: one POST per attempt through a client that follows no
//! redirect (a 3xx is a failed attempt), with connect and total timeouts, reading at most
//! [`MAX_ANSWER_BYTES`] of the receiver's answer (for the error kept when it refuses). The
//! channels' URLs are the operator's, so they are trusted; an address check for URLs that
//! clients give belongs where such URLs are taken.

use futures_util::StreamExt;
use http::header::{HeaderName, HeaderValue, CONTENT_TYPE};

/// The most bytes of a receiver's answer read: enough to say why it refused.
pub const MAX_ANSWER_BYTES: usize = 4096;

/// The longest part of an answer kept in an error.
const ERROR_ANSWER_CHARS: usize = 200;

/// The client every channel sends through.
pub fn client(
    connect_timeout: std::time::Duration,
    timeout: std::time::Duration,
) -> Result<reqwest::Client, String> {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .connect_timeout(connect_timeout)
        .timeout(timeout)
        .user_agent(concat!("signoff/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|err| format!("the notifications' HTTP client: {err}"))
}

/// POSTs `body` (JSON) with `headers`; `Ok` on a 2xx answer, else why not (never the URL, which
/// may be a secret).
pub async fn post(
    client: &reqwest::Client,
    url: &str,
    headers: Vec<(HeaderName, HeaderValue)>,
    body: Vec<u8>,
) -> Result<(), String> {
    let mut request = client
        .post(url)
        .header(CONTENT_TYPE, HeaderValue::from_static("application/json"))
        .body(body);
    for (name, value) in headers {
        request = request.header(name, value);
    }
    let response = request.send().await.map_err(|err| describe(&err))?;
    let status = response.status();
    let mut answer = Vec::new();
    let mut chunks = response.bytes_stream();
    while let Some(chunk) = chunks.next().await {
        let Ok(chunk) = chunk else { break };
        let room = MAX_ANSWER_BYTES - answer.len();
        answer.extend_from_slice(&chunk[..chunk.len().min(room)]);
        if answer.len() >= MAX_ANSWER_BYTES {
            break;
        }
    }
    if status.is_success() {
        return Ok(());
    }
    let text = signoff_protocol::redact::shorten_text(
        String::from_utf8_lossy(&answer).trim(),
        ERROR_ANSWER_CHARS,
    );
    if status.is_redirection() {
        return Err(format!("HTTP {status}: redirects are not followed"));
    }
    Err(format!("HTTP {status}: {text}"))
}

/// A transport error in words, without the URL.
pub(super) fn describe(err: &reqwest::Error) -> String {
    let kind = if err.is_timeout() {
        "timed out"
    } else if err.is_connect() {
        "could not connect"
    } else {
        "request failed"
    };
    let mut source = std::error::Error::source(err);
    let mut detail = String::new();
    while let Some(cause) = source {
        detail = cause.to_string();
        source = cause.source();
    }
    if detail.is_empty() {
        kind.to_owned()
    } else {
        format!("{kind}: {detail}")
    }
}
