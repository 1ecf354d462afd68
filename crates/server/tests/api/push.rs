//! A2A push notifications (docs/wire.md, Push notifications): the config methods of both
//! versions, owned and validated; a paused task's update posted to a real receiver in each
//! version's payload, with the config's token and authentication and a JWT checked against the
//! served JWKS; client-chosen URLs on loopback, private, metadata or redirecting receivers
//! refused, and nothing sent there (6to4 and Teredo forms too, and a name that does not
//! resolve yet taken and checked when pushed: both in a loopback-only network namespace); a
//! push whose receiver was down is delivered by the server restarted since, from the outbox,
//! under the same id; a failed push is kept without its URL's secrets.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::http::{HeaderMap, StatusCode};
use axum::response::IntoResponse;
use serde_json::{json, Value};
use sha2::Digest;
use tokio::sync::Notify;

use crate::hitl::PROMPT;
use crate::support::*;

/// One request a receiver got.
#[derive(Debug, Clone)]
struct Received {
    headers: HeaderMap,
    body: Value,
}

/// A push receiver listening on `ip`; it answers 200, or redirects to `redirect` when set, or
/// 503 while it is `down`.
#[derive(Clone)]
struct Receiver {
    url: String,
    got: Arc<Mutex<Vec<Received>>>,
    arrived: Arc<Notify>,
    down: Arc<AtomicBool>,
}

impl Receiver {
    async fn start(ip: &str, redirect: Option<String>) -> Receiver {
        let listener = tokio::net::TcpListener::bind((ip, 0)).await.unwrap();
        let url = format!("http://{}/hook", listener.local_addr().unwrap());
        let got = Arc::new(Mutex::new(Vec::new()));
        let arrived = Arc::new(Notify::new());
        let down = Arc::new(AtomicBool::new(false));
        let (store, wake, is_down) = (got.clone(), arrived.clone(), down.clone());
        let handler = move |headers: HeaderMap, body: Bytes| {
            let (store, wake, redirect) = (store.clone(), wake.clone(), redirect.clone());
            let down = is_down.load(Ordering::SeqCst);
            async move {
                let body = serde_json::from_slice(&body).unwrap_or(Value::Null);
                store.lock().unwrap().push(Received { headers, body });
                wake.notify_waiters();
                match redirect {
                    _ if down => StatusCode::SERVICE_UNAVAILABLE.into_response(),
                    Some(to) => {
                        (StatusCode::TEMPORARY_REDIRECT, [("location", to)]).into_response()
                    }
                    None => StatusCode::OK.into_response(),
                }
            }
        };
        let app = axum::Router::new().route("/hook", axum::routing::post(handler));
        tokio::spawn(async move { axum::serve(listener, app).await });
        Receiver {
            url,
            got,
            arrived,
            down,
        }
    }

    fn got(&self) -> Vec<Received> {
        self.got.lock().unwrap().clone()
    }

    /// The first request whose body satisfies `wanted`.
    async fn wait_for(&self, what: &str, wanted: impl Fn(&Value) -> bool) -> Received {
        within(what, async {
            loop {
                let notified = self.arrived.notified();
                if let Some(found) = self.got().into_iter().find(|r| wanted(&r.body)) {
                    return found;
                }
                notified.await;
            }
        })
        .await
    }
}

/// The server, allowed to post to 127.0.0.1 only (as an operator allows a receiver of theirs).
async fn spawn_push_app() -> TestApp {
    spawn_with(|config| config.push_allow = vec!["127.0.0.1/32".into()]).await
}

/// A paused task of the demo agent (v0.3 stream); its id.
async fn paused_task(app: &TestApp) -> String {
    crate::hitl::pause(app, None).await.0
}

fn assert_error(response: &Value, code: i64, contains: &str) {
    assert_eq!(response["error"]["code"], code, "{response}");
    let message = response["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains(contains), "{contains:?} not in {response}");
}

#[tokio::test]
async fn configs_are_set_read_listed_and_deleted_in_both_versions() {
    let app = spawn_push_app().await;
    let receiver = Receiver::start("127.0.0.1", None).await;
    let task = paused_task(&app).await;
    let set = app
        .rpc(
            None,
            request(
                "tasks/pushNotificationConfig/set",
                json!({"taskId": task, "pushNotificationConfig": {"id": "mine", "url": receiver.url,
                    "token": "tok-1", "authentication": {"schemes": ["Bearer"], "credentials": "c1"}}}),
            ),
        )
        .await;
    assert_eq!(
        set["result"],
        json!({"taskId": task, "pushNotificationConfig": {"id": "mine", "url": receiver.url,
            "token": "tok-1", "authentication": {"schemes": ["Bearer"], "credentials": "c1"}}})
    );
    // v1.0 sees the same config in its own shape; an id is given when none is.
    let created = app
        .rpc(
            Some("1.0"),
            request(
                "CreateTaskPushNotificationConfig",
                json!({"taskId": task, "url": receiver.url}),
            ),
        )
        .await;
    let given = created["result"]["id"].as_str().unwrap().to_owned();
    assert_eq!(created["result"]["taskId"], task.as_str());
    let got = app
        .rpc(
            Some("1.0"),
            request(
                "GetTaskPushNotificationConfig",
                json!({"taskId": task, "id": "mine"}),
            ),
        )
        .await;
    assert_eq!(
        got["result"],
        json!({"taskId": task, "id": "mine", "url": receiver.url, "token": "tok-1",
            "authentication": {"scheme": "Bearer", "credentials": "c1"}})
    );
    let listed = app
        .rpc(
            Some("1.0"),
            request("ListTaskPushNotificationConfigs", json!({"taskId": task})),
        )
        .await;
    assert_eq!(listed["result"]["configs"].as_array().unwrap().len(), 2);
    let listed = app
        .rpc(
            None,
            request("tasks/pushNotificationConfig/list", json!({"id": task})),
        )
        .await;
    let ids: Vec<&str> = listed["result"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["pushNotificationConfig"]["id"].as_str().unwrap())
        .collect();
    assert!(
        ids.contains(&"mine") && ids.contains(&given.as_str()),
        "{listed}"
    );
    let deleted = app
        .rpc(
            None,
            request(
                "tasks/pushNotificationConfig/delete",
                json!({"id": task, "pushNotificationConfigId": "mine"}),
            ),
        )
        .await;
    assert_eq!(deleted["result"], Value::Null, "{deleted}");
    let gone = app
        .rpc(
            None,
            request(
                "tasks/pushNotificationConfig/get",
                json!({"id": task, "pushNotificationConfigId": "mine"}),
            ),
        )
        .await;
    assert_error(&gone, -32602, "no push notification config \"mine\"");
    let deleted = app
        .rpc(
            Some("1.0"),
            request(
                "DeleteTaskPushNotificationConfig",
                json!({"taskId": task, "id": given}),
            ),
        )
        .await;
    assert_eq!(deleted["result"], Value::Null, "{deleted}");
    // An unknown task has no configs to set.
    let unknown = app
        .rpc(
            Some("1.0"),
            request(
                "CreateTaskPushNotificationConfig",
                json!({"taskId": "nope", "url": receiver.url}),
            ),
        )
        .await;
    assert_error(&unknown, -32001, "not found");
}

#[tokio::test]
async fn another_users_task_has_no_configs_and_a_task_has_a_capped_number() {
    let app = spawn_with(|config| {
        config.auth = signoff_server::AuthMode::Tokens;
        config.tokens = vec!["ta=alice".into(), "tb=bob".into()];
        config.push_allow = vec!["127.0.0.1/32".into()];
    })
    .await;
    let receiver = Receiver::start("127.0.0.1", None).await;
    let sent = app
        .rpc_as(
            None,
            Some("ta"),
            message_request("message/send", message_v03("hi", None, None)),
        )
        .await;
    let task = sent["result"]["id"].as_str().unwrap().to_owned();
    let set = |n: usize| {
        request(
            "tasks/pushNotificationConfig/set",
            json!({"taskId": task, "pushNotificationConfig": {"id": format!("c{n}"), "url": receiver.url}}),
        )
    };
    for (method, params) in [
        ("tasks/pushNotificationConfig/list", json!({"id": task})),
        ("tasks/pushNotificationConfig/get", json!({"id": task})),
    ] {
        let theirs = app.rpc_as(None, Some("tb"), request(method, params)).await;
        assert_error(&theirs, -32001, "not found");
    }
    assert_error(
        &app.rpc_as(None, Some("tb"), set(0)).await,
        -32001,
        "not found",
    );
    for n in 0..signoff_server::agent::Limits::DEFAULT_PUSH_CONFIGS_PER_TASK {
        let ok = app.rpc_as(None, Some("ta"), set(n)).await;
        assert!(ok.get("result").is_some(), "{ok}");
    }
    let over = app.rpc_as(None, Some("ta"), set(99)).await;
    assert_error(&over, -32602, "the most it may have");
    // Replacing one of them is no new config.
    let again = app.rpc_as(None, Some("ta"), set(0)).await;
    assert!(again.get("result").is_some(), "{again}");
}

#[tokio::test]
async fn a_paused_task_is_posted_in_v03_with_its_token_credentials_and_a_verifiable_jwt() {
    let app = spawn_push_app().await;
    let receiver = Receiver::start("127.0.0.1", None).await;
    let mut params = json!({"message": message_v03(PROMPT, None, None)});
    params["configuration"] = json!({"blocking": false, "pushNotificationConfig": {
        "url": receiver.url, "token": "tok-v03",
        "authentication": {"schemes": ["Bearer"], "credentials": "receiver-secret"}}});
    let sent = app.rpc(None, request("message/send", params)).await;
    let task = sent["result"]["id"].as_str().unwrap().to_owned();
    let push = receiver
        .wait_for("the input-required push", |body| {
            body["status"]["state"] == "input-required"
        })
        .await;
    assert_eq!(push.body["kind"], "task");
    assert_eq!(push.body["id"], task.as_str());
    assert_eq!(push.headers["x-a2a-notification-token"], "tok-v03");
    assert_eq!(push.headers["authorization"], "Bearer receiver-secret");
    let jwt = push.headers["x-a2a-notification-signature"]
        .to_str()
        .unwrap();
    let claims = verify(&app, jwt, &receiver.url).await;
    assert_eq!(claims["taskId"], task.as_str());
    let body = serde_json::to_vec(&push.body).unwrap();
    // The body is JSON written compactly, so its bytes read back the same.
    assert_eq!(
        claims["request_body_sha256"],
        hex(&sha2::Sha256::digest(&body))
    );
    // The decision ends the task: completed is posted too.
    let context = push.body["contextId"].as_str().unwrap();
    decide(&app, &task, context, json!({"decision_type": "approve"})).await;
    receiver
        .wait_for("the completed push", |body| {
            body["status"]["state"] == "completed"
        })
        .await;
}

#[tokio::test]
async fn a_paused_task_is_posted_in_v10_as_a_stream_response() {
    let app = spawn_push_app().await;
    let receiver = Receiver::start("127.0.0.1", None).await;
    let mut params = json!({"message": message_v10(PROMPT, None, None)});
    params["configuration"] = json!({"returnImmediately": true,
        "taskPushNotificationConfig": {"url": receiver.url, "token": "tok-v10"}});
    let sent = app.rpc(Some("1.0"), request("SendMessage", params)).await;
    let task = sent["result"]["task"]["id"].as_str().unwrap().to_owned();
    let push = receiver
        .wait_for("the input-required push", |body| {
            body["task"]["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
        })
        .await;
    assert_eq!(push.body["task"]["id"], task.as_str());
    assert!(push.body["task"].get("kind").is_none());
    assert_eq!(push.headers["x-a2a-notification-token"], "tok-v10");
    // No authentication of its own: the JWT is the bearer credential.
    let bearer = push.headers["authorization"].to_str().unwrap();
    let jwt = bearer.strip_prefix("Bearer ").unwrap();
    assert_eq!(jwt, push.headers["x-a2a-notification-signature"]);
    verify(&app, jwt, &receiver.url).await;
}

/// An approver may decide a task routed to them, but its push configs are its owner's: a
/// decision that sets one is refused before it decides anything.
#[tokio::test]
async fn a_decision_that_sets_a_push_config_on_another_users_task_is_refused_and_decides_nothing() {
    const AGENTS: &str = "[[agents]]\nname = \"demo\"\napprovers = [\"group:sre\"]\n\
         [[agents.tools]]\nkind = \"builtin_files\"\nrequire_approval = [\"write_file\"]\n";
    let app = spawn_with_agents(AGENTS, |config| {
        config.push_allow = vec!["127.0.0.1/32".into()];
        config.auth = signoff_server::AuthMode::Tokens;
        config.tokens = vec!["carol-token=carol".into(), "bob-token=bob:sre".into()];
    })
    .await;
    let receiver = Receiver::start("127.0.0.1", None).await;
    let body = message_request("message/stream", message_v03("write p.txt: hi", None, None));
    let events = results(&app.stream_as(None, Some("carol-token"), body).await);
    let task = task_id(&events);
    let context = events[0]["contextId"].as_str().unwrap().to_owned();
    let approve = json!({"decision_type": "approve"});
    let mut params = json!({"message": decision(&task, &context, approve.clone())});
    params["configuration"] = json!({"pushNotificationConfig": {"url": receiver.url}});
    let refused = app
        .rpc_as(None, Some("bob-token"), request("message/send", params))
        .await;
    assert_error(&refused, -32001, "not found");
    let state = app
        .rpc_as(
            None,
            Some("carol-token"),
            request("tasks/get", json!({"id": task})),
        )
        .await;
    assert_eq!(
        state["result"]["status"]["state"], "input-required",
        "{state}"
    );
    // Without the config, bob's decision is taken.
    let params = json!({"message": decision(&task, &context, approve)});
    let decided = app
        .rpc_as(None, Some("bob-token"), request("message/send", params))
        .await;
    assert_eq!(
        decided["result"]["status"]["state"], "completed",
        "{decided}"
    );
    assert!(receiver.got().is_empty(), "nothing was set to post to");
}

#[tokio::test]
async fn urls_to_loopback_private_metadata_and_redirects_are_refused_and_get_nothing() {
    // The names of a machine's hosts file (`localhost` among them) resolve to 127.0.0.1, so
    // here the operator's receiver is at 127.0.0.2, allow-listed alone, and a receiver on
    // 127.0.0.1 stands for an internal service that names and addresses must not reach.
    let app = spawn_with(|config| config.push_allow = vec!["127.0.0.2/32".into()]).await;
    let internal = Receiver::start("127.0.0.1", None).await;
    let task = paused_task(&app).await;
    let port = internal
        .url
        .rsplit(':')
        .next()
        .unwrap()
        .trim_end_matches("/hook");
    for (url, reason) in [
        (internal.url.clone(), "a loopback address"),
        (
            format!("http://localhost:{port}/hook"),
            "a loopback address",
        ),
        (format!("http://[::1]:{port}/hook"), "a loopback address"),
        (
            format!("http://[::ffff:127.0.0.1]:{port}/hook"),
            "a loopback address",
        ),
        ("http://10.1.2.3/hook".to_owned(), "a private address"),
        (
            "http://169.254.169.254/latest/meta-data".to_owned(),
            "a cloud metadata address",
        ),
        (
            "http://100.64.0.1/hook".to_owned(),
            "a CGNAT (shared address space) address",
        ),
        ("http://[fd00::1]/hook".to_owned(), "a unique-local address"),
        ("ftp://example.com/hook".to_owned(), "not http or https"),
    ] {
        for version in [None, Some("1.0")] {
            let (method, params) = match version {
                None => (
                    "tasks/pushNotificationConfig/set",
                    json!({"taskId": task, "pushNotificationConfig": {"url": url}}),
                ),
                Some(_) => (
                    "CreateTaskPushNotificationConfig",
                    json!({"taskId": task, "url": url}),
                ),
            };
            let refused = app.rpc(version, request(method, params)).await;
            assert_error(&refused, -32602, "push notification URL refused");
            assert_error(&refused, -32602, reason);
        }
    }
    // A refused config given with a message sends nothing: the message is refused too.
    let mut params = json!({"message": message_v03("hi", None, None)});
    params["configuration"] = json!({"pushNotificationConfig": {"url": "http://10.0.0.1/"}});
    let refused = app.rpc(None, request("message/send", params)).await;
    assert_error(&refused, -32602, "a private address");
    let listed = app
        .rpc(
            None,
            request("tasks/pushNotificationConfig/list", json!({"id": task})),
        )
        .await;
    assert_eq!(listed["result"], json!([]));

    // An allowed receiver that redirects to the internal one: the redirect is not followed.
    let redirecting = Receiver::start("127.0.0.2", Some(internal.url.clone())).await;
    let mut params = json!({"message": message_v03(PROMPT, None, None)});
    params["configuration"] =
        json!({"blocking": false, "pushNotificationConfig": {"url": redirecting.url}});
    app.rpc(None, request("message/send", params)).await;
    redirecting
        .wait_for("the push to the redirecting receiver", |body| {
            body["status"]["state"] == "input-required"
        })
        .await;
    // A followed redirect would have been sent at once; give it the chance to show.
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    assert!(internal.got().is_empty(), "{:?}", internal.got());
    assert_eq!(redirecting.got().len(), 1, "a redirect is not retried");
}

#[tokio::test]
async fn the_signing_key_is_kept_in_the_store_across_restarts() {
    let app = spawn_push_app().await;
    let (status, before) = app.get("/.well-known/jwks.json").await;
    assert_eq!(status, 200);
    assert_eq!(before["keys"][0]["kty"], "OKP");
    let data_dir = app.stop().await;
    let app = spawn_in(data_dir, |_| {}).await;
    let (_, after) = app.get("/.well-known/jwks.json").await;
    assert_eq!(before, after);
}

/// The text of the server's `/metrics` once it has a line `wanted`.
async fn metrics_with(app: &TestApp, wanted: &str) -> String {
    eventually(wanted, || async {
        let text = app
            .client
            .get(app.url("/metrics"))
            .send()
            .await
            .ok()?
            .text()
            .await
            .ok()?;
        text.lines().any(|line| line == wanted).then_some(text)
    })
    .await
}

#[tokio::test]
async fn a_push_whose_receiver_was_down_is_delivered_after_a_restart_under_the_same_id() {
    let app = spawn_push_app().await;
    let receiver = Receiver::start("127.0.0.1", None).await;
    receiver.down.store(true, Ordering::SeqCst);
    let mut params = json!({"message": message_v03(PROMPT, None, None)});
    params["configuration"] =
        json!({"blocking": false, "pushNotificationConfig": {"url": receiver.url}});
    let sent = app.rpc(None, request("message/send", params)).await;
    let task = sent["result"]["id"].as_str().unwrap().to_owned();
    let refused = receiver
        .wait_for("the first try, refused", |body| {
            body["status"]["state"] == "input-required"
        })
        .await;
    let first = verify(&app, jwt_of(&refused), &receiver.url).await;
    // The failed try is written back (the row waits for its retry) before the server stops.
    metrics_with(
        &app,
        r#"signoff_notifications_total{channel="a2a-push",outcome="retry"} 1"#,
    )
    .await;
    let data_dir = app.stop().await;
    let tries = receiver.got().len();
    receiver.down.store(false, Ordering::SeqCst);

    let app = spawn_in(data_dir, |config| {
        config.push_allow = vec!["127.0.0.1/32".into()];
    })
    .await;
    let delivered = within("the push from the restarted server", async {
        loop {
            let notified = receiver.arrived.notified();
            if let Some(found) = receiver.got().get(tries) {
                return found.clone();
            }
            notified.await;
        }
    })
    .await;
    assert_eq!(delivered.body["id"], task.as_str());
    assert_eq!(delivered.body["status"]["state"], "input-required");
    let again = verify(&app, jwt_of(&delivered), &receiver.url).await;
    assert_eq!(again["jti"], first["jti"], "one notification, one id");
    assert!(again["jti"].as_str().unwrap().starts_with("push_"));
    // Counted under the pushes' own channel, and nothing is left queued.
    let metrics = metrics_with(
        &app,
        r#"signoff_notifications_total{channel="a2a-push",outcome="delivered"} 1"#,
    )
    .await;
    assert!(
        metrics.contains("signoff_notifications_queued 0"),
        "{metrics}"
    );
}

fn jwt_of(received: &Received) -> &str {
    received.headers["x-a2a-notification-signature"]
        .to_str()
        .unwrap()
}

/// The JWT's claims, checked with the key the server serves at `/.well-known/jwks.json`, for
/// audience `url`.
async fn verify(app: &TestApp, jwt: &str, url: &str) -> Value {
    let (status, jwks) = app.get("/.well-known/jwks.json").await;
    assert_eq!(status, 200);
    let jwks: jsonwebtoken::jwk::JwkSet = serde_json::from_value(jwks).unwrap();
    let header = jsonwebtoken::decode_header(jwt).unwrap();
    let jwk = jwks.find(header.kid.as_deref().unwrap()).unwrap();
    let key = jsonwebtoken::DecodingKey::from_jwk(jwk).unwrap();
    let mut validation = jsonwebtoken::Validation::new(jsonwebtoken::Algorithm::EdDSA);
    validation.set_audience(&[url]);
    validation.set_issuer(&["signoff"]);
    validation.set_required_spec_claims(&["exp", "iat", "aud", "iss"]);
    jsonwebtoken::decode::<Value>(jwt, &key, &validation)
        .unwrap()
        .claims
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

/// Sets `url` as a push config of `task` in both versions; each answer.
async fn set_in_both_versions(app: &TestApp, task: &str, url: &str) -> Vec<Value> {
    let mut answers = Vec::new();
    for version in [None, Some("1.0")] {
        let (method, params) = match version {
            None => (
                "tasks/pushNotificationConfig/set",
                json!({"taskId": task, "pushNotificationConfig": {"url": url}}),
            ),
            Some(_) => (
                "CreateTaskPushNotificationConfig",
                json!({"taskId": task, "url": url}),
            ),
        };
        answers.push(app.rpc(version, request(method, params)).await);
    }
    answers
}

#[tokio::test]
async fn six_to_four_and_teredo_forms_of_refused_addresses_are_refused() {
    if !loopback_only(concat!(
        module_path!(),
        "::six_to_four_and_teredo_forms_of_refused_addresses_are_refused"
    )) {
        return;
    }
    let app = spawn_app().await;
    let task = paused_task(&app).await;
    for (url, reason) in [
        // 6to4: the relay's IPv4 address in bits 16 to 48.
        ("http://[2002:7f00:1::]/hook", "a loopback address"),
        (
            "http://[2002:a9fe:a9fe::1]/latest/meta-data",
            "a cloud metadata address",
        ),
        ("http://[2002:a00:1::]/hook", "a private address"),
        // Teredo: the client's IPv4 address in the last 32 bits, inverted.
        (
            "http://[2001:0:4136:e378:8000:63bf:80ff:fffe]/hook",
            "a loopback address",
        ),
        (
            "http://[2001::5601:5601]/latest",
            "a cloud metadata address",
        ),
        ("http://[2001::f5ff:fffe]/hook", "a private address"),
        // IPv4-mapped and -compatible forms, as before.
        (
            "http://[::ffff:a9fe:a9fe]/latest",
            "a cloud metadata address",
        ),
        ("http://[::a00:1]/hook", "a private address"),
    ] {
        for refused in set_in_both_versions(&app, &task, url).await {
            assert_error(&refused, -32602, "push notification URL refused");
            assert_error(&refused, -32602, reason);
        }
    }
    let listed = app
        .rpc(
            None,
            request("tasks/pushNotificationConfig/list", json!({"id": task})),
        )
        .await;
    assert_eq!(listed["result"], json!([]));
}

#[tokio::test]
async fn a_name_that_does_not_resolve_yet_is_taken_and_checked_when_pushed() {
    if !loopback_only(concat!(
        module_path!(),
        "::a_name_that_does_not_resolve_yet_is_taken_and_checked_when_pushed"
    )) {
        return;
    }
    // Offline (this namespace has no resolver to reach), as the official suite may run.
    let app = spawn_app().await;
    let task = paused_task(&app).await;
    let url = "http://push-receiver.example.com/hook";
    for set in set_in_both_versions(&app, &task, url).await {
        assert!(set["error"].is_null(), "{set}");
    }
    // A name that resolves to a refused address is still refused when it is set.
    for refused in set_in_both_versions(&app, &task, "http://localhost/hook").await {
        assert_error(&refused, -32602, "localhost resolves to");
    }
    // The push when the task ends (one per config, one config per version) is checked at
    // connect time: the name does not resolve, so nothing is sent, and each waits for its
    // retry.
    let (status, body) = decide_rest(&app, None, &task, json!({"decision_type": "approve"})).await;
    assert_eq!(status, 200, "{body}");
    let metrics = metrics_with(
        &app,
        r#"signoff_notifications_total{channel="a2a-push",outcome="retry"} 2"#,
    )
    .await;
    assert!(!metrics.contains(r#"outcome="delivered""#), "{metrics}");
}

#[tokio::test]
async fn a_failed_push_is_kept_and_logged_without_its_urls_secrets() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("notifications.toml");
    // Retried for 1 ms: the first failure is the last.
    std::fs::write(&file, "[delivery]\nretry_for = \"1ms\"\n").unwrap();
    let app = spawn_in(dir, |config| {
        config.push_allow = vec!["127.0.0.1/32".into()];
        config.notifications = Some(file);
        config.public_url = Some("https://signoff.example.com".into());
    })
    .await;
    // A port nobody listens on: the connection is refused.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}/hook/path-secret?token=query-secret");
    let mut params = json!({"message": message_v03(PROMPT, None, None)});
    params["configuration"] = json!({"blocking": false, "pushNotificationConfig": {"url": url}});
    let sent = app.rpc(None, request("message/send", params)).await;
    assert!(sent["error"].is_null(), "{sent}");
    let failed = eventually("the push failed for good", || async {
        let (_, body) = app.get("/api/notifications/failed").await;
        let failed = body["failed"].as_array()?.clone();
        (!failed.is_empty()).then_some(failed)
    })
    .await;
    let error = failed[0]["last_error"].as_str().unwrap();
    assert!(error.contains("the request failed"), "{error}");
    for secret in ["path-secret", "query-secret", "/hook"] {
        assert!(
            !failed[0].to_string().contains(secret),
            "{secret} in {failed:?}"
        );
    }
}
