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

/// `POST path` (`body`, or none) or `GET path` through the proxy with `headers`, each as given
/// (bytes, repeats and all): the status and the body.
async fn via_proxy(
    app: &TestApp,
    path: &str,
    body: Option<Value>,
    headers: &[(&str, &[u8])],
) -> (u16, Value) {
    let mut request = match &body {
        Some(body) => app.client.post(app.url(path)).json(body),
        None => app.client.get(app.url(path)),
    };
    for (name, value) in headers {
        let value = reqwest::header::HeaderValue::from_bytes(value).unwrap();
        request = request.header(*name, value);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn a_proxy_header_sent_twice_is_refused_and_nothing_runs() {
    let app = spawn_with(proxy("127.0.0.0/8")).await;
    let message = a2a::message_request("message/send", a2a::message_v03("hello", None, None));
    for repeated in [
        "x-auth-request-user",
        "x-auth-request-email",
        "x-auth-request-groups",
    ] {
        let mut headers: Vec<(&str, &[u8])> = ALICE
            .iter()
            .map(|(name, value)| (*name, value.as_bytes()))
            .collect();
        headers.push((repeated, b"mallory"));
        let (status, body) = via_proxy(&app, DEMO, Some(message.clone()), &headers).await;
        assert_eq!(status, 400, "{repeated}: {body}");
        let error = body["error"].as_str().unwrap_or_default();
        assert!(
            error.contains(repeated) && error.contains("more than once"),
            "{error}"
        );
    }
    let (_, sessions) = as_alice(&app, "/api/sessions", None).await;
    assert_eq!(sessions["sessions"], json!([]), "nothing ran");
}

#[tokio::test]
async fn proxy_values_are_taken_byte_for_byte_and_padded_ones_refused() {
    let app = spawn_with(proxy("127.0.0.0/8")).await;
    let user = |value: &'static str| ("x-auth-request-user", value.as_bytes());
    let groups = |value: &'static str| ("x-auth-request-groups", value.as_bytes());
    for headers in [
        vec![user("\u{2003}alice")],
        vec![user("alice\u{a0}")],
        vec![user("alice"), groups("sre\u{a0}")],
        vec![user("alice"), groups("sre, oncall")],
        vec![user("alice"), ("x-auth-request-email", b"a\t@example.com")],
    ] {
        let (status, body) = via_proxy(&app, "/api/me", None, &headers).await;
        assert_eq!(status, 400, "{headers:?}: {body}");
        assert!(
            body["error"].as_str().unwrap().contains("names nobody"),
            "{body}"
        );
    }
    // UTF-8 as the proxy sent it, not trimmed, not refused for being beyond ASCII.
    let (status, me) = via_proxy(&app, "/api/me", None, &[user("Zoë"), groups("sre")]).await;
    assert_eq!(status, 200, "{me}");
    assert_eq!(me["user"], "Zoë");
    assert_eq!(me["groups"], json!(["sre"]));
}

#[tokio::test]
async fn a_cross_site_post_through_the_proxy_makes_no_share_or_decision_link() {
    let app = spawn_with(proxy("127.0.0.0/8")).await;
    let message = a2a::message_request(
        "message/send",
        a2a::message_v03(crate::hitl::PROMPT, None, None),
    );
    let (status, answer) = as_alice(&app, DEMO, Some(message)).await;
    assert_eq!(status, 200, "{answer}");
    let context = answer["result"]["contextId"].as_str().unwrap().to_owned();
    let task = eventually("the batch to wait for alice", || async {
        let (_, pending) = as_alice(&app, "/api/approvals", None).await;
        pending["approvals"][0]["taskId"]
            .as_str()
            .map(str::to_owned)
    })
    .await;
    let alice: Vec<(&str, &[u8])> = ALICE
        .iter()
        .map(|(name, value)| (*name, value.as_bytes()))
        .collect();
    let shares = format!("/api/sessions/{context}/shares");
    let links = format!("/api/approvals/{task}/links");
    let post = |path: String, extra: Vec<(&'static str, &'static [u8])>| {
        let headers = [alice.clone(), extra].concat();
        let app = &app;
        async move {
            // Body-less, as a page's form or fetch may send unasked.
            let mut request = app.client.post(app.url(&path));
            for (name, value) in &headers {
                request = request.header(
                    *name,
                    reqwest::header::HeaderValue::from_bytes(value).unwrap(),
                );
            }
            request.send().await.unwrap().status().as_u16()
        }
    };
    for cross in [
        vec![("sec-fetch-site", &b"cross-site"[..])],
        vec![("sec-fetch-site", &b"same-site"[..])],
        vec![("origin", &b"https://evil.example"[..])],
    ] {
        assert_eq!(post(shares.clone(), cross.clone()).await, 403, "{cross:?}");
        assert_eq!(post(links.clone(), cross.clone()).await, 403, "{cross:?}");
    }
    let (_, listed) = as_alice(&app, &shares, None).await;
    assert_eq!(listed["shares"], json!([]), "{listed}");
    // From our own pages, and from a program (neither header), they are made.
    let own = vec![("sec-fetch-site", &b"same-origin"[..])];
    assert_eq!(post(shares.clone(), own.clone()).await, 201);
    assert_eq!(post(links.clone(), own).await, 201);
    assert_eq!(post(shares.clone(), Vec::new()).await, 201);
}

/// Approvers of the demo agent's writes: the sre group, two of them.
const SRE_QUORUM_OF_TWO: &str =
    "[[agents]]\nname = \"demo\"\napprovers = [\"group:sre\"]\nquorum = 2\n\
    [[agents.tools]]\nkind = \"builtin_files\"\nrequire_approval = [\"write_file\"]\n";

#[tokio::test]
async fn one_person_the_proxy_names_two_ways_is_one_approver_of_a_quorum() {
    let app = spawn_with_agents(SRE_QUORUM_OF_TWO, |config| {
        config.auth = signoff_server::AuthMode::Proxy;
        config.trusted_proxies = vec!["127.0.0.0/8".to_owned()];
    })
    .await;
    let person = |user: &'static str, email: &'static str| -> Vec<(&'static str, &'static [u8])> {
        vec![
            ("x-auth-request-user", user.as_bytes()),
            ("x-auth-request-email", email.as_bytes()),
            ("x-auth-request-groups", b"sre"),
        ]
    };
    let carol = person("carol", "carol@example.com");
    let message = a2a::message_request(
        "message/send",
        a2a::message_v03("write q.txt: hi", None, None),
    );
    let (status, answer) = via_proxy(&app, DEMO, Some(message), &carol).await;
    assert_eq!(status, 200, "{answer}");
    let task = answer["result"]["id"].as_str().unwrap().to_owned();
    let path = format!("/api/approvals/{task}");
    let approve = json!({"decision_type": "approve"});
    let zed = person("Zed", "zed@example.com");
    let (status, body) = eventually("carol's batch to wait", || async {
        let (status, body) = via_proxy(&app, &path, Some(approve.clone()), &zed).await;
        (status != 409).then_some((status, body))
    })
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["quorum"][0]["approvedBy"], json!(["Zed"]));
    // The same address under another subject is the same person: not a second approval.
    let (status, body) = via_proxy(
        &app,
        &path,
        Some(approve.clone()),
        &person("zed", "ZED@example.com"),
    )
    .await;
    assert_eq!(status, 409, "{body}");
    assert!(!app.sandbox().join("q.txt").exists());
    let (status, body) = via_proxy(
        &app,
        &path,
        Some(approve),
        &person("amy", "amy@example.com"),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    eventually("the write to run", || async {
        app.sandbox().join("q.txt").exists().then_some(())
    })
    .await;
}
