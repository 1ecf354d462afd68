//! Web Push against a push-service stand-in started here: a real server on port 0 with a
//! channel of kind `web_push` pushes each waiting batch to the devices enrolled, and closes it
//! once decided. What it sends is checked by an independent implementation
//! (`tests/web_push/check_push.py`, PyPI's PyJWT and http_ece; `tests/web_push/install.sh`
//! installs them): the VAPID JWT verifies (ES256) against the key `GET /api/push/vapid`
//! advertises, with the push service's origin as its audience, and the payload decrypts with
//! the subscription's private key, which the test made. A device whose push service answers
//! 410 is deleted. The stand-in listens on loopback, which the operator allows
//! (`--push-allow 127.0.0.1/32`); every other non-public address stays refused.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use axum::extract::Path as UrlPath;
use axum::http::{HeaderMap, StatusCode};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use serde_json::{json, Value};

use crate::support::*;

const AGENTS: &str = "\
[[agents]]\nname = \"demo\"\n\
[[agents.tools]]\nkind = \"builtin_files\"\nrequire_approval = [\"write_file\"]\n";

/// One push the stand-in took: the device's path, its headers and body.
#[derive(Debug, Clone)]
struct Received {
    device: String,
    headers: HeaderMap,
    body: Vec<u8>,
}

struct PushService {
    origin: String,
    received: Arc<Mutex<Vec<Received>>>,
}

impl PushService {
    fn endpoint(&self, device: &str) -> String {
        format!("{}/push/{device}", self.origin)
    }

    fn received(&self, device: &str) -> Vec<Received> {
        let received = self.received.lock().unwrap();
        received
            .iter()
            .filter(|push| push.device == device)
            .cloned()
            .collect()
    }
}

/// A push service: `POST /push/{device}` takes the push (201), except device `gone`'s (410, as
/// a push service answers for a subscription that expired or was unsubscribed).
async fn push_service() -> PushService {
    let received: Arc<Mutex<Vec<Received>>> = Arc::default();
    let taken = received.clone();
    let app = axum::Router::new().route(
        "/push/{device}",
        axum::routing::post(
            move |UrlPath(device): UrlPath<String>, headers: HeaderMap, body: axum::body::Bytes| {
                let taken = taken.clone();
                async move {
                    let gone = device == "gone";
                    taken.lock().unwrap().push(Received {
                        device,
                        headers,
                        body: body.to_vec(),
                    });
                    if gone {
                        StatusCode::GONE
                    } else {
                        StatusCode::CREATED
                    }
                }
            },
        ),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let origin = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    PushService { origin, received }
}

fn python() -> PathBuf {
    let venv = std::env::var_os("SIGNOFF_WEB_PUSH_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(&std::env::var("HOME").unwrap()).join(".cache/signoff/web-push-venv")
        });
    let python = venv.join("bin/python");
    assert!(
        python.exists(),
        "{} is missing: run crates/server/tests/web_push/install.sh (scripts/test.sh does)",
        python.display()
    );
    python
}

/// Runs `check_push.py` with `command` and `input` on stdin: its JSON answer.
fn check_push(command: &str, input: &Value) -> Value {
    use std::io::Write as _;
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/web_push/check_push.py");
    let mut child = std::process::Command::new(python())
        .arg(script)
        .arg(command)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.to_string().as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "check_push.py {command}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

async fn spawn_pushing(detail: &str) -> TestApp {
    let dir = tempfile::tempdir().unwrap();
    let agents = write_agents(dir.path(), AGENTS);
    let file = dir.path().join("notifications.toml");
    std::fs::write(
        &file,
        format!(
            "[delivery]\nretry_base = \"50ms\"\nretry_max = \"200ms\"\nretry_for = \"1h\"\n\
             poll = \"50ms\"\ntimeout = \"2s\"\n\n[[channels]]\nname = \"devices\"\n\
             kind = \"web_push\"\n[channels.web_push]\ndetail = \"{detail}\"\n"
        ),
    )
    .unwrap();
    spawn_in(dir, move |config| {
        config.agents_file = Some(agents);
        config.notifications = Some(file);
        config.public_url = Some("https://signoff.example.com".into());
        config.push_allow = vec!["127.0.0.1/32".into()];
    })
    .await
}

/// Enrols `device` at `endpoint` with `keys`: the status and answer.
async fn enrol(app: &TestApp, device: &str, endpoint: &str, keys: &Value) -> (u16, Value) {
    let body = json!({
        "device": device,
        "subscription": {
            "endpoint": endpoint,
            "expirationTime": null,
            "keys": {"p256dh": keys["p256dh"], "auth": keys["auth"]},
        },
    });
    app.post_json_as("/api/push/subscriptions", None, &body)
        .await
}

async fn devices(app: &TestApp) -> Vec<String> {
    let (status, list) = app.get("/api/push/subscriptions").await;
    assert_eq!(status, 200, "{list}");
    list["devices"]
        .as_array()
        .unwrap()
        .iter()
        .map(|device| device["device"].as_str().unwrap().to_owned())
        .collect()
}

/// The `n`th push (from 0) `device` took, once it came: checked by PyJWT and http_ece, its
/// decrypted payload.
async fn nth_push(
    service: &PushService,
    device: &str,
    n: usize,
    vapid: &str,
    keys: &Value,
) -> Value {
    let push = eventually(&format!("push {n} to {device}"), || async {
        service.received(device).get(n).cloned()
    })
    .await;
    let header = |name: &str| {
        push.headers
            .get(name)
            .and_then(|value| value.to_str().ok())
            .unwrap_or_default()
            .to_owned()
    };
    assert_eq!(header("content-encoding"), "aes128gcm");
    assert_eq!(header("content-type"), "application/octet-stream");
    assert!(
        header("ttl").parse::<u64>().unwrap() > 0,
        "{:?}",
        push.headers
    );
    let checked = check_push(
        "check",
        &json!({
            "authorization": header("authorization"),
            "vapid_key": vapid,
            "audience": service.origin,
            "body": URL_SAFE_NO_PAD.encode(&push.body),
            "private": keys["private"],
            "auth": keys["auth"],
        }),
    );
    assert_eq!(checked["claims"]["sub"], "https://signoff.example.com");
    assert!(
        checked["claims"]["exp"].as_i64().unwrap() > chrono::Utc::now().timestamp(),
        "{checked}"
    );
    serde_json::from_str(checked["plaintext"].as_str().unwrap()).unwrap()
}

#[tokio::test]
async fn push_a_waiting_batch_reaches_each_device_verified_and_decrypted_and_its_decision_closes_it(
) {
    let service = push_service().await;
    let app = spawn_pushing("generic").await;
    let (status, vapid) = app.get("/api/push/vapid").await;
    assert_eq!(status, 200, "{vapid}");
    let vapid = vapid["public_key"].as_str().unwrap().to_owned();
    assert_eq!(URL_SAFE_NO_PAD.decode(&vapid).unwrap().len(), 65);

    let phone = check_push("keys", &json!({}));
    let (status, enrolled) = enrol(&app, "Pixel", &service.endpoint("phone"), &phone).await;
    assert_eq!(status, 201, "{enrolled}");
    assert_eq!(enrolled["service"], service.origin.as_str());
    assert!(enrolled.get("endpoint").is_none(), "{enrolled}");
    let old = check_push("keys", &json!({}));
    let (status, _) = enrol(&app, "Old laptop", &service.endpoint("gone"), &old).await;
    assert_eq!(status, 201);
    assert_eq!(devices(&app).await, ["Pixel", "Old laptop"]);

    let results = say(&app, "write notes.txt: hello").await;
    let task = task_id(&results);
    let shown = nth_push(&service, "phone", 0, &vapid, &phone).await;
    assert_eq!(shown["type"], "pending", "{shown}");
    assert_eq!(shown["task_id"], task.as_str());
    assert_eq!(shown["body"], "demo waits for your approval");
    assert_eq!(shown["approve"], true);
    assert_eq!(shown["calls"].as_array().unwrap().len(), 1);
    let tag = shown["tag"].as_str().unwrap().to_owned();

    // The push service no longer knows the old laptop: its subscription goes.
    eventually("the gone device to be deleted", || async {
        (devices(&app).await == ["Pixel"]).then_some(())
    })
    .await;

    let (status, decided) =
        decide_rest(&app, None, &task, json!({"decision_type": "approve"})).await;
    assert_eq!(status, 200, "{decided}");
    let closed = nth_push(&service, "phone", 1, &vapid, &phone).await;
    assert_eq!(closed["type"], "close", "{closed}");
    assert_eq!(closed["tag"], tag.as_str());
    assert_eq!(
        service.received("gone").len(),
        1,
        "a deleted device is pushed no more"
    );
}

#[tokio::test]
async fn push_detail_calls_names_the_calls_and_bad_enrolments_are_refused_naming_why() {
    // It gives the server a private address (10.x): only loopback may be in reach.
    if !loopback_only(concat!(
        module_path!(),
        "::push_detail_calls_names_the_calls_and_bad_enrolments_are_refused_naming_why"
    )) {
        return;
    }
    let service = push_service().await;
    let app = spawn_pushing("calls").await;
    let (_, vapid) = app.get("/api/push/vapid").await;
    let vapid = vapid["public_key"].as_str().unwrap().to_owned();
    let keys = check_push("keys", &json!({}));

    let fine = service.endpoint("x");
    let refusals = [
        (
            "http://10.1.2.3/push/x",
            "phone",
            keys["p256dh"].clone(),
            "private",
        ),
        (fine.as_str(), "phone", json!("AAAA"), "p256dh"),
        (fine.as_str(), "", keys["p256dh"].clone(), "device"),
    ];
    for (endpoint, device, p256dh, why) in refusals {
        let bad = json!({"p256dh": p256dh, "auth": keys["auth"]});
        let (status, answer) = enrol(&app, device, endpoint, &bad).await;
        assert_eq!(status, 400, "{endpoint} {answer}");
        assert!(answer["error"].as_str().unwrap().contains(why), "{answer}");
    }
    let (status, answer) = app
        .post_json_as(
            "/api/push/subscriptions",
            None,
            &json!({"device": "x", "extra": 1}),
        )
        .await;
    assert_eq!(status, 400, "{answer}");
    assert!(devices(&app).await.is_empty());
    assert_eq!(app.delete("/api/push/subscriptions/wps_nobody").await, 404);

    let (status, _) = enrol(&app, "Pixel", &service.endpoint("phone"), &keys).await;
    assert_eq!(status, 201);
    let results = say(&app, "write notes.txt: hello").await;
    let shown = nth_push(&service, "phone", 0, &vapid, &keys).await;
    assert_eq!(shown["task_id"], task_id(&results).as_str());
    assert_eq!(shown["body"], "demo waits for your approval: write_file");

    // Revoked, the device is pushed no more.
    let (_, list) = app.get("/api/push/subscriptions").await;
    let id = list["devices"][0]["id"].as_str().unwrap();
    assert_eq!(
        app.delete(&format!("/api/push/subscriptions/{id}")).await,
        204
    );
    assert!(devices(&app).await.is_empty());
}

#[tokio::test]
async fn push_is_off_without_a_web_push_channel() {
    let app = spawn_app().await;
    let (status, answer) = app.get("/api/push/vapid").await;
    assert_eq!(status, 404, "{answer}");
    assert!(
        answer["error"].as_str().unwrap().contains("web_push"),
        "{answer}"
    );
}

#[tokio::test]
async fn push_a_notifications_decision_is_for_its_batch_only_audited_as_web_push_and_a_late_one_says_who_decided(
) {
    let service = push_service().await;
    let app = spawn_pushing("generic").await;
    let (_, vapid) = app.get("/api/push/vapid").await;
    let vapid = vapid["public_key"].as_str().unwrap().to_owned();
    let keys = check_push("keys", &json!({}));
    let (status, _) = enrol(&app, "Pixel", &service.endpoint("phone"), &keys).await;
    assert_eq!(status, 201);

    // Two batches in turn: the second waits once the first is decided.
    let results = say(&app, "write a.txt: 1, then write b.txt: 2").await;
    let task = task_id(&results);
    let first = nth_push(&service, "phone", 0, &vapid, &keys).await;
    let pinned = |batch: &Value| format!("/api/push/approvals/{task}?batch={batch}");
    let approve = json!({"decision_type": "approve"});

    let (status, answer) = app
        .post_json_as(&format!("/api/push/approvals/{task}"), None, &approve)
        .await;
    assert_eq!(
        status, 400,
        "a notification's decision names its batch: {answer}"
    );
    let (status, answer) = app
        .post_json_as(
            &format!("/api/approvals/{task}?batch=first"),
            None,
            &approve,
        )
        .await;
    assert_eq!(status, 400, "{answer}");
    assert!(
        answer["error"].as_str().unwrap().contains("batch"),
        "{answer}"
    );

    let (status, decided) = app
        .post_json_as(&pinned(&first["batch_id"]), None, &approve)
        .await;
    assert_eq!(status, 200, "{decided}");
    let closed = nth_push(&service, "phone", 1, &vapid, &keys).await;
    assert_eq!(closed["type"], "close");
    let next = nth_push(&service, "phone", 2, &vapid, &keys).await;
    assert_eq!(next["type"], "pending");
    assert_ne!(next["batch_id"], first["batch_id"]);

    // The first notification's Approve clicked again (a stale copy), over push or REST with its
    // pin: refused, saying who decided it; the batch that waits now is untouched.
    for path in [
        pinned(&first["batch_id"]),
        format!("/api/approvals/{task}?batch={}", first["batch_id"]),
    ] {
        let (status, answer) = app.post_json_as(&path, None, &approve).await;
        assert_eq!(status, 409, "{path}: {answer}");
        let error = answer["error"].as_str().unwrap();
        assert!(
            error.starts_with("Already decided by ") && error.contains("(web_push)"),
            "{error}"
        );
    }
    let (_, pending) = app.get("/api/approvals").await;
    assert_eq!(
        pending["approvals"].as_array().unwrap().len(),
        1,
        "{pending}"
    );
    assert_eq!(pending["approvals"][0]["batchId"], next["batch_id"]);
    assert!(app.sandbox().join("a.txt").exists());
    assert!(!app.sandbox().join("b.txt").exists());

    let reject = json!({"decision_type": "deny", "reason": "not now"});
    let (status, answer) = app
        .post_json_as(&pinned(&next["batch_id"]), None, &reject)
        .await;
    assert_eq!(status, 200, "{answer}");
    let (_, decided) = app.get("/api/approvals?state=decided").await;
    let channels: Vec<&str> = decided["decisions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|decision| decision["channel"].as_str().unwrap())
        .collect();
    assert_eq!(channels, ["web_push", "web_push"], "{decided}");
    assert!(!app.sandbox().join("b.txt").exists());
}
