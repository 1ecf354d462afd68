//! The legacy HTTP+SSE MCP transport (protocol 2024-11-05), client side, for kagent's
//! `sse_tools`: rmcp 3 dropped its SSE client. A GET opens the event stream; its first
//! `endpoint` event names the URL to POST messages to; the server's messages arrive as
//! `message` events on the stream.

use futures_util::stream::{BoxStream, StreamExt};
use reqwest::header::{HeaderMap, ACCEPT};
use reqwest::Url;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::RoleClient;
use sse_stream::{Sse, SseStream};

#[derive(Debug, thiserror::Error)]
pub enum SseError {
    #[error("{0}")]
    Http(#[from] reqwest::Error),
    #[error("invalid URL: {0}")]
    Url(String),
    #[error("the event stream failed: {0}")]
    Stream(String),
    #[error("the event stream ended before the server named its message endpoint")]
    NoEndpoint,
}

/// A connected legacy-SSE transport.
pub struct SseClientTransport {
    client: reqwest::Client,
    /// Where messages are POSTed (from the server's `endpoint` event).
    endpoint: Url,
    headers: HeaderMap,
    events: BoxStream<'static, Result<Sse, String>>,
}

impl SseClientTransport {
    /// Opens the event stream and waits for the server to name its message endpoint.
    pub async fn connect(
        url: &str,
        headers: &[(http::HeaderName, http::HeaderValue)],
    ) -> Result<SseClientTransport, SseError> {
        let base = Url::parse(url).map_err(|error| SseError::Url(error.to_string()))?;
        let headers: HeaderMap = headers.iter().cloned().collect();
        let client = reqwest::Client::new();
        let response = client
            .get(base.clone())
            .header(ACCEPT, "text/event-stream")
            .headers(headers.clone())
            .send()
            .await?
            .error_for_status()?;
        let mut events = SseStream::from_bytes_stream(response.bytes_stream())
            .map(|event| event.map_err(|error| error.to_string()))
            .boxed();
        let endpoint = loop {
            match events.next().await {
                Some(Ok(event)) if event.event.as_deref() == Some("endpoint") => {
                    let data = event.data.unwrap_or_default();
                    break base
                        .join(data.trim())
                        .map_err(|error| SseError::Url(error.to_string()))?;
                }
                Some(Ok(_other)) => {}
                Some(Err(error)) => return Err(SseError::Stream(error)),
                None => return Err(SseError::NoEndpoint),
            }
        };
        Ok(SseClientTransport {
            client,
            endpoint,
            headers,
            events,
        })
    }
}

impl Transport<RoleClient> for SseClientTransport {
    type Error = SseError;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl std::future::Future<Output = Result<(), SseError>> + Send + 'static {
        let request = self
            .client
            .post(self.endpoint.clone())
            .headers(self.headers.clone())
            .json(&item);
        async move {
            request.send().await?.error_for_status()?;
            Ok(())
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        {
            loop {
                let event = match self.events.next().await? {
                    Ok(event) => event,
                    Err(error) => {
                        tracing::warn!(endpoint = %self.endpoint, "MCP SSE stream failed: {error}");
                        return None;
                    }
                };
                // Unnamed events are messages too (the SSE default event type).
                if !matches!(event.event.as_deref(), None | Some("message")) {
                    continue;
                }
                let Some(data) = event.data else { continue };
                match serde_json::from_str(&data) {
                    Ok(message) => return Some(message),
                    Err(error) => {
                        tracing::warn!(endpoint = %self.endpoint, "unreadable MCP message: {error}")
                    }
                }
            }
        }
    }

    fn close(&mut self) -> impl std::future::Future<Output = Result<(), SseError>> + Send {
        // Dropping the transport drops the GET, which ends the server's session.
        std::future::ready(Ok(()))
    }
}
