//! Web Push in Chromium: a person enrols this browser from the account menu (the dialog shot
//! at a phone's width, light and dark), the server's push for a waiting batch is decrypted
//! (PyPI's http_ece, `crates/server/tests/web_push/check_push.py`) and handed to the real
//! service worker with DevTools' `ServiceWorker.deliverPushMessage`, which shows a notification
//! with Approve and Reject. Its Approve, clicked in the worker (through the worker's own DevTools
//! target), decides through the server; a second batch decided elsewhere, the stale
//! notification's Approve says who decided it and changes nothing; a close push closes each.
//!
//! The machine reaches no push service, so the page's `PushManager.subscribe` is replaced by
//! one that makes the subscription a browser makes (a P-256 key pair and a 16-byte secret, by
//! WebCrypto) at a push service stand-in started here; everything after it is the real chain.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};

use crate::support::harness::{click, App, Options};

/// The subscription a browser makes, at `window.__pushEndpoint`; its private key and secret
/// kept for the test (`window.__pushKeys`).
const SUBSCRIBE: &str = r#"
(() => {
  const b64 = (bytes) => btoa(String.fromCharCode(...new Uint8Array(bytes)))
    .replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
  PushManager.prototype.subscribe = async function () {
    const pair = await crypto.subtle.generateKey({name: "ECDH", namedCurve: "P-256"}, true, ["deriveBits"]);
    const p256dh = b64(await crypto.subtle.exportKey("raw", pair.publicKey));
    const priv = b64(await crypto.subtle.exportKey("pkcs8", pair.privateKey));
    const auth = b64(crypto.getRandomValues(new Uint8Array(16)));
    const json = {endpoint: window.__pushEndpoint, expirationTime: null, keys: {p256dh, auth}};
    localStorage.setItem("__pushKeys", JSON.stringify({private: priv, auth}));
    return {endpoint: json.endpoint, toJSON: () => json};
  };
})();
"#;

const AGENTS: &str = "[[agents]]\nname = \"deploy\"\n\
    [[agents.tools]]\nkind = \"builtin_files\"\nrequire_approval = [\"write_file\"]\n";

/// A push service: every push it takes, in order.
async fn push_service() -> (String, Arc<Mutex<Vec<Vec<u8>>>>) {
    let taken: Arc<Mutex<Vec<Vec<u8>>>> = Arc::default();
    let pushes = taken.clone();
    let app = axum::Router::new().route(
        "/push/chromium",
        axum::routing::post(move |body: axum::body::Bytes| {
            let pushes = pushes.clone();
            async move {
                pushes.lock().unwrap().push(body.to_vec());
                axum::http::StatusCode::CREATED
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let origin = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (format!("{origin}/push/chromium"), taken)
}

/// Push `n` (from 0) as the service worker would read it: decrypted by http_ece with the
/// subscription's keys.
async fn decrypted(app: &App, taken: &Arc<Mutex<Vec<Vec<u8>>>>, n: usize, keys: &Value) -> String {
    app.wait_until(&format!("push {n} reaches the push service"), || async {
        Ok(taken.lock().unwrap().len() > n)
    })
    .await;
    let body = taken.lock().unwrap()[n].clone();
    let python = venv_python();
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("crates/server/tests/web_push/check_push.py");
    let hex: String = body.iter().map(|byte| format!("{byte:02x}")).collect();
    let input = json!({"body_hex": hex, "private": keys["private"], "auth": keys["auth"]});
    let output = std::process::Command::new(python)
        .arg(script)
        .arg("decrypt")
        .arg(input.to_string())
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

/// Hands `data` to the page's service worker as a push, as a push service would.
async fn deliver(app: &App, data: &str) {
    let cdp = app.driver.cdp();
    cdp.send_raw("ServiceWorker.enable", json!({}))
        .await
        .unwrap();
    // A fresh profile's first registration is number 0.
    cdp.send_raw(
        "ServiceWorker.deliverPushMessage",
        json!({"origin": app.base, "registrationId": "0", "data": data}),
    )
    .await
    .unwrap();
}

/// The service worker's notifications now: tag, body and actions of each.
async fn notifications(app: &App) -> Vec<Value> {
    let found = app
        .driver
        .execute_async(
            "const done = arguments[arguments.length - 1];
             navigator.serviceWorker.ready
               .then((r) => r.getNotifications())
               .then((all) => done(all.map((n) => ({tag: n.tag, body: n.body,
                 actions: n.actions.map((a) => a.action)}))));",
            Vec::new(),
        )
        .await
        .unwrap();
    serde_json::from_value(found.json().clone()).unwrap()
}

/// Clicks `action` of the one notification the worker shows, in the worker itself
/// (`crates/server/tests/web_push/worker_click.py`): what the worker answered.
fn click_in_worker(app: &App, action: &str) -> String {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("crates/server/tests/web_push/worker_click.py");
    let output = std::process::Command::new(venv_python())
        .arg(script)
        .arg(app.devtools_port().to_string())
        .arg(&app.base)
        .arg(action)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice::<Value>(&output.stdout)
        .unwrap()
        .as_str()
        .unwrap()
        .to_owned()
}

/// The web push venv's Python (`crates/server/tests/web_push/install.sh`).
fn venv_python() -> PathBuf {
    std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap()
        .join(".cache/signoff/web-push-venv/bin/python")
}

/// alice's decisions, newest first.
async fn decisions(app: &App) -> Vec<Value> {
    let answer: Value = app
        .http
        .get(format!("{}/api/approvals?state=decided", app.base))
        .bearer_auth("alice-token")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    answer["decisions"].as_array().unwrap().clone()
}

#[tokio::test]
async fn web_push_enrols_approves_from_the_notification_and_a_stale_one_says_who_decided() {
    let (endpoint, taken) = push_service().await;
    let app = App::start_with(
        "web-push",
        Options {
            agents_toml: Some(AGENTS.to_owned()),
            tokens: Some(vec!["alice-token=alice".into()]),
            notifications: Some("[[channels]]\nname = \"devices\"\nkind = \"web_push\"\n".into()),
            ..Options::default()
        },
    )
    .await;
    app.before_each_page(&format!(
        "window.__pushEndpoint = {};\n{SUBSCRIBE}",
        json!(endpoint)
    ))
    .await;
    app.driver
        .cdp()
        .send_raw(
            "Browser.grantPermissions",
            json!({"origin": app.base, "permissions": ["notifications"]}),
        )
        .await
        .unwrap();
    app.phone().await;
    app.open("/agents/default/deploy/chat#token=alice-token")
        .await;
    // At a phone's width the account menu is in the sidebar, behind the menu button.
    click(&app, ".menu-button").await;
    click(&app, "[data-testid=account-name]").await;
    click(&app, "[data-testid=push-open]").await;
    app.wait_for("the dialog opens", "[data-testid=push-dialog]")
        .await;
    app.assert_phone_width().await;
    app.shots("web-push-enrol-phone").await;
    let name = app.find("[data-testid=push-device-name]").await.unwrap();
    name.clear().await.unwrap();
    name.send_keys("Alice's phone").await.unwrap();
    click(&app, "[data-testid=push-enrol]").await;
    app.wait_for_text("[data-testid=push-device]", "Alice's phone")
        .await;
    let keys: Value = serde_json::from_str(
        app.js("return localStorage.getItem('__pushKeys')")
            .await
            .as_str()
            .unwrap(),
    )
    .unwrap();
    click(&app, "[data-testid=push-close]").await;

    app.open_new_chat_of("/agents/default/deploy/chat").await;
    app.send("write notes.txt: hello").await;
    app.wait_for(
        "the batch waits",
        "[data-testid=batch-bar], [data-testid=tool-card]",
    )
    .await;
    let pending = decrypted(&app, &taken, 0, &keys).await;
    let message: Value = serde_json::from_str(&pending).unwrap();
    assert_eq!(message["body"], "deploy waits for your approval");
    deliver(&app, &pending).await;
    app.wait_until("the notification shows", || async {
        Ok(notifications(&app).await.len() == 1)
    })
    .await;
    let shown = notifications(&app).await;
    assert_eq!(
        shown[0]["actions"],
        json!(["approve", "reject"]),
        "{shown:?}"
    );
    assert_eq!(shown[0]["tag"], message["tag"]);

    // The notification's Approve, clicked in the real worker: the server decides, on channel
    // web_push, and its close push closes what the worker then said.
    assert_eq!(click_in_worker(&app, "approve"), "clicked");
    app.wait_until("the worker says it approved", || async {
        let shown = notifications(&app).await;
        Ok(shown.len() == 1 && shown[0]["body"] == "Approved.")
    })
    .await;
    let decided = decisions(&app).await;
    assert_eq!(decided[0]["channel"], "web_push", "{decided:?}");
    let close = decrypted(&app, &taken, 1, &keys).await;
    deliver(&app, &close).await;
    app.wait_until("the notification closes", || async {
        Ok(notifications(&app).await.is_empty())
    })
    .await;

    // A second batch, decided elsewhere (over REST, as another client would) before its close
    // push arrives: the stale notification's Approve decides nothing and says who decided.
    app.send("write second.txt: again").await;
    let pending = decrypted(&app, &taken, 2, &keys).await;
    let message: Value = serde_json::from_str(&pending).unwrap();
    deliver(&app, &pending).await;
    app.wait_until("the second notification shows", || async {
        Ok(notifications(&app).await.len() == 1)
    })
    .await;
    let task = message["task_id"].as_str().unwrap();
    let decided = app
        .http
        .post(format!("{}/api/approvals/{task}", app.base))
        .bearer_auth("alice-token")
        .json(&json!({"decision_type": "deny", "reason": "not this one"}))
        .send()
        .await
        .unwrap();
    assert_eq!(decided.status(), 200);
    assert_eq!(click_in_worker(&app, "approve"), "clicked");
    app.wait_until("the worker says who decided", || async {
        let shown = notifications(&app).await;
        Ok(shown.len() == 1
            && shown[0]["body"]
                .as_str()
                .is_some_and(|body| body.starts_with("Already decided by alice (rest)")))
    })
    .await;
    assert_eq!(decisions(&app).await.len(), 2, "nothing decided twice");
    let close = decrypted(&app, &taken, 3, &keys).await;
    assert_eq!(
        serde_json::from_str::<Value>(&close).unwrap()["type"],
        "close"
    );
    deliver(&app, &close).await;
    app.wait_until("the notification closes", || async {
        Ok(notifications(&app).await.is_empty())
    })
    .await;
    app.assert_no_errors().await;
    app.finish().await;
}
