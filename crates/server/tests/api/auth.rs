//! Who a request comes from, in the modes that need no identity provider: `--auth tokens` with
//! groups (on the command line and in a tokens file), and `--auth proxy`, whose headers count
//! only from `--trusted-proxies`. (`--auth oidc` runs against a real provider: `tests/oidc`.)

use serde_json::{json, Value};

use crate::support::*;

const ALICE: [(&str, &str); 3] = [
    ("x-auth-request-user", "alice"),
    ("x-auth-request-email", "alice@example.com"),
    ("x-auth-request-groups", "sre,oncall"),
];

/// `method path` with the proxy's headers for alice; the status and the body.
async fn as_alice(app: &TestApp, path: &str, body: Option<Value>) -> (u16, Value) {
    let mut request = match &body {
        Some(body) => app.client.post(app.url(path)).json(body),
        None => app.client.get(app.url(path)),
    };
    for (name, value) in ALICE {
        request = request.header(name, value);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

fn proxy(trusted: &str) -> impl FnOnce(&mut signoff_server::Config) + '_ {
    move |config| {
        config.auth = signoff_server::AuthMode::Proxy;
        config.trusted_proxies = vec![trusted.to_owned()];
    }
}

#[tokio::test]
async fn a_trusted_proxy_names_the_user_and_groups_and_chats_are_theirs() {
    let app = spawn_with(proxy("127.0.0.0/8")).await;
    let (status, me) = as_alice(&app, "/api/me", None).await;
    assert_eq!(status, 200, "{me}");
    assert_eq!(
        me,
        json!({"user": "alice", "email": "alice@example.com", "groups": ["oncall", "sre"],
               "auth": "proxy"})
    );
    let message = a2a::message_request("message/send", a2a::message_v03("hello", None, None));
    let (status, answer) = as_alice(&app, DEMO, Some(message)).await;
    assert_eq!(status, 200, "{answer}");
    let (_, sessions) = as_alice(&app, "/api/sessions", None).await;
    assert_eq!(
        sessions["sessions"].as_array().unwrap().len(),
        1,
        "{sessions}"
    );
    // Without the headers, from the proxy's own address, there is no user.
    let (status, _) = app.get("/api/sessions").await;
    assert_eq!(status, 401);
}

#[tokio::test]
async fn proxy_headers_from_an_untrusted_address_are_ignored_and_nothing_runs() {
    let app = spawn_with(proxy("10.0.0.0/8")).await;
    let (status, body) = as_alice(&app, "/api/me", None).await;
    assert_eq!(status, 401, "{body}");
    let message = a2a::message_request("message/send", a2a::message_v03("hello", None, None));
    let (status, _) = as_alice(&app, DEMO, Some(message)).await;
    assert_eq!(status, 401);
    // The same store, now trusting this address: alice has no chat.
    let data_dir = app.stop().await;
    let again = spawn_in(data_dir, proxy("127.0.0.1")).await;
    let (status, sessions) = as_alice(&again, "/api/sessions", None).await;
    assert_eq!(status, 200);
    assert_eq!(sessions["sessions"], json!([]));
}

#[tokio::test]
async fn a_tokens_file_gives_tokens_with_groups() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("tokens");
    std::fs::write(
        &file,
        "# people\ntA=alice:sre+oncall\ntB=bob, tC=carol # ops\n",
    )
    .unwrap();
    let app = spawn_with(|config| {
        config.auth = signoff_server::AuthMode::Tokens;
        config.tokens_file = Some(file);
    })
    .await;
    let (status, me) = app.get_as("/api/me", Some("tA")).await;
    assert_eq!(status, 200, "{me}");
    assert_eq!(me["groups"], json!(["oncall", "sre"]));
    let (status, me) = app.get_as("/api/me", Some("tC")).await;
    assert_eq!((status, me["user"].clone()), (200, json!("carol")));
}

#[tokio::test]
async fn auth_none_is_refused_on_an_address_that_is_not_loopback() {
    // Bound on every interface but never sent anything: the server must refuse before serving.
    for address in ["0.0.0.0:0", "[::]:0"] {
        let Ok(listener) = tokio::net::TcpListener::bind(address).await else {
            continue; // no IPv6 on this machine
        };
        let dir = tempfile::tempdir().unwrap();
        let config = signoff_server::Config::new(dir.path());
        let started = signoff_server::run(listener, config, std::future::pending());
        let err = within("the server to refuse", started)
            .await
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("--auth none") && err.contains("only on a loopback address"),
            "{err}"
        );
        // It says what to use instead.
        for instead in ["--auth tokens", "--auth proxy", "--auth oidc"] {
            assert!(err.contains(instead), "{instead} in {err}");
        }
    }
}

#[tokio::test]
async fn bad_auth_flags_stop_the_server_with_a_clear_error() {
    type Configure = Box<dyn FnOnce(&mut signoff_server::Config)>;
    let cases: [(Configure, &str); 3] = [
        (
            Box::new(|config| config.auth = signoff_server::AuthMode::Proxy),
            "--auth proxy needs --trusted-proxies",
        ),
        (
            Box::new(|config| {
                config.auth = signoff_server::AuthMode::Tokens;
                config.tokens = vec!["secret-token=alice:sre++ops".into()];
            }),
            "--tokens: entry 1 has an empty group",
        ),
        (
            Box::new(|config| config.auth = signoff_server::AuthMode::Oidc),
            "--auth oidc needs --oidc-client-id",
        ),
    ];
    for (configure, wanted) in cases {
        let dir = tempfile::tempdir().unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let mut config = signoff_server::Config::new(dir.path());
        configure(&mut config);
        let err = signoff_server::run(listener, config, std::future::pending())
            .await
            .unwrap_err()
            .to_string();
        assert!(err.contains(wanted), "{err}");
        assert!(!err.contains("secret-token"), "{err}");
    }
}

#[tokio::test]
async fn a_decision_records_that_the_proxy_authenticated_its_decider() {
    let app = spawn_with(proxy("127.0.0.0/8")).await;
    let prompt = crate::hitl::PROMPT;
    let message = a2a::message_request("message/send", a2a::message_v03(prompt, None, None));
    let (status, answer) = as_alice(&app, DEMO, Some(message)).await;
    assert_eq!(status, 200, "{answer}");
    let task = eventually("the batch to wait for alice", || async {
        let (_, pending) = as_alice(&app, "/api/approvals", None).await;
        pending["approvals"][0]["taskId"]
            .as_str()
            .map(str::to_owned)
    })
    .await;
    let path = format!("/api/approvals/{task}");
    let (status, body) = as_alice(&app, &path, Some(json!({"decision_type": "approve"}))).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["decision"]["decidedBy"], "alice");
    assert_eq!(body["decision"]["deciderAuth"], "proxy");
    let (_, decided) = as_alice(&app, "/api/approvals?state=decided", None).await;
    assert_eq!(decided["decisions"][0]["deciderAuth"], "proxy", "{decided}");
}
