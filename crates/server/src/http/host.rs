//! With `--auth none` on a loopback address the server answers only requests whose `Host` is a
//! loopback name or address. A web page whose own name an attacker points at 127.0.0.1 (DNS
//! rebinding) is same-origin with the server from then on: without this check it could read
//! every chat, make policies and decide batches of the one local user.

use std::net::IpAddr;

use axum::extract::{Request, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;

use super::AppState;

/// Answers `403` to a request for another host while `state.loopback_only`.
pub async fn refuse_foreign_host(
    State(state): State<AppState>,
    request: Request,
    next: axum::middleware::Next,
) -> Response {
    if state.loopback_only {
        // HTTP/1.0 may leave Host out; a browser always sends it.
        if let Some(host) = request.headers().get(header::HOST) {
            let host = String::from_utf8_lossy(host.as_bytes()).into_owned();
            if !is_loopback_host(&host) {
                let body = json!({"error": format!(
                    "host {host:?} is not this machine: with --auth none the server answers only \
                     localhost (start it with --auth tokens to serve other names)"
                )});
                return (StatusCode::FORBIDDEN, Json(body)).into_response();
            }
        }
    }
    next.run(request).await
}

/// `localhost` (or a name under it), or a loopback address, with or without a port.
fn is_loopback_host(host: &str) -> bool {
    let name = match host.strip_prefix('[') {
        // `[::1]:8080`
        Some(bracketed) => bracketed.split(']').next().unwrap_or(""),
        None => match host.rsplit_once(':') {
            Some((name, port)) if port.bytes().all(|byte| byte.is_ascii_digit()) => name,
            _ => host,
        },
    };
    let name = name.trim_end_matches('.').to_ascii_lowercase();
    name == "localhost"
        || name.ends_with(".localhost")
        || name.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_names_and_addresses_pass_and_others_do_not() {
        for host in [
            "localhost",
            "localhost:8080",
            "LOCALHOST.:8080",
            "app.localhost:3000",
            "127.0.0.1",
            "127.0.0.1:8080",
            "127.1.2.3:80",
            "[::1]:8080",
            "[::1]",
        ] {
            assert!(is_loopback_host(host), "{host}");
        }
        for host in [
            "evil.example",
            "evil.example:8080",
            "localhost.evil.example",
            "10.0.0.1:8080",
            "[::2]:8080",
            "127.0.0.1.nip.io",
            "",
        ] {
            assert!(!is_loopback_host(host), "{host}");
        }
    }
}
