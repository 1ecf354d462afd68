//! DNS rebinding: with `--auth none` on a loopback address, a request for another `Host` (a web
//! page whose name an attacker points at 127.0.0.1 is same-origin with the server) is refused,
//! so such a page can neither read the local user's chats nor decide their batches.

use serde_json::Value;

use crate::support::*;

/// `GET path` with the `Host` header `host`; the status and the body.
async fn get_for_host(app: &TestApp, path: &str, host: &str) -> (u16, Value) {
    let response = app
        .client
        .get(app.url(path))
        .header("host", host)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn with_auth_none_only_loopback_hosts_are_answered() {
    let app = spawn_app().await;
    let port = app.base.rsplit(':').next().unwrap().to_owned();
    for host in [format!("evil.example:{port}"), "evil.example".to_owned()] {
        for path in ["/api/sessions", "/api/approvals", "/healthz"] {
            let (status, body) = get_for_host(&app, path, &host).await;
            assert_eq!(status, 403, "{host} {path}: {body}");
            assert!(
                body["error"].as_str().unwrap().contains("--auth none"),
                "{body}"
            );
        }
    }
    for host in [
        format!("127.0.0.1:{port}"),
        format!("localhost:{port}"),
        format!("[::1]:{port}"),
    ] {
        let (status, body) = get_for_host(&app, "/api/sessions", &host).await;
        assert_eq!(status, 200, "{host}: {body}");
    }
}

#[tokio::test]
async fn with_tokens_any_host_is_answered() {
    let app = spawn_with(|config| {
        config.auth = signoff_server::AuthMode::Tokens;
        config.tokens = vec!["alice-token=alice".into()];
    })
    .await;
    let (status, body) = get_for_host(&app, "/healthz", "signoff.example").await;
    assert_eq!(status, 200, "{body}");
}
