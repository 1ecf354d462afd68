//! Notifications through a webhook channel to a receiver on port 0: a pause and its decision
//! arrive, each signature checked by an independent verifier (PyPI's standardwebhooks, through
//! tests/notify/verify_webhooks.py; `tests/notify/install.sh` installs it); a receiver that
//! fails gets the same `webhook-id` on every retry; one that always fails ends in the failed
//! list; `/metrics` counts them. Channels routed by approver group hear only of the batches
//! those groups may decide; a receiver that never answers holds up no other channel; secrets
//! inside an argument are masked in what is sent.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use axum::http::{HeaderMap, StatusCode};
use serde_json::{json, Value};

use crate::support::*;

const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

/// One POST the receiver got.
#[derive(Debug, Clone)]
struct Delivery {
    id: String,
    timestamp: String,
    signature: String,
    body: String,
}

/// A webhook receiver that answers 500 to its first `fail_first` requests (all with `None`).
struct Receiver {
    url: String,
    got: Arc<Mutex<Vec<Delivery>>>,
}

async fn receiver(fail_first: Option<usize>) -> Receiver {
    let got: Arc<Mutex<Vec<Delivery>>> = Arc::default();
    let seen = got.clone();
    let app = axum::Router::new().route(
        "/hook",
        axum::routing::post(move |headers: HeaderMap, body: String| {
            let seen = seen.clone();
            async move {
                let header = |name: &str| {
                    headers
                        .get(name)
                        .and_then(|value| value.to_str().ok())
                        .unwrap_or("")
                        .to_owned()
                };
                let mut seen = seen.lock().unwrap();
                seen.push(Delivery {
                    id: header("webhook-id"),
                    timestamp: header("webhook-timestamp"),
                    signature: header("webhook-signature"),
                    body,
                });
                if fail_first.is_none_or(|n| seen.len() <= n) {
                    (StatusCode::INTERNAL_SERVER_ERROR, "receiver down")
                } else {
                    (StatusCode::NO_CONTENT, "")
                }
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    Receiver { url, got }
}

/// The server with a webhook channel to `url` for the demo agent's batches and a fast retry
/// schedule.
async fn spawn_notifying(url: &str, retry_for: &str) -> TestApp {
    spawn_routed(url, retry_for, "route = { agents = [\"default/demo\"] }\n").await
}

/// [`spawn_notifying`] with the channel's `route` line (empty: every agent).
async fn spawn_routed(url: &str, retry_for: &str, route: &str) -> TestApp {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("hook.secret"), SECRET).unwrap();
    let file = dir.path().join("notifications.toml");
    std::fs::write(
        &file,
        format!(
            "[delivery]\nretry_base = \"50ms\"\nretry_max = \"200ms\"\nretry_for = \"{retry_for}\"\n\
             poll = \"50ms\"\ntimeout = \"2s\"\n\n[[channels]]\nname = \"hook\"\nkind = \"webhook\"\n\
             url = \"{url}\"\nsecret_file = \"{}\"\n{route}",
            dir.path().join("hook.secret").display()
        ),
    )
    .unwrap();
    spawn_in(dir, move |config| {
        config.notifications = Some(file);
        config.public_url = Some("https://signoff.example.com".into());
    })
    .await
}

/// What the standardwebhooks reference library says of each delivery: its verified payload,
/// or why it refused it.
fn verify(deliveries: &[Delivery]) -> Vec<Result<Value, String>> {
    let venv = std::env::var_os("SIGNOFF_NOTIFY_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var("HOME").unwrap()).join(".cache/signoff/notify-venv")
        });
    let python = venv.join("bin/python");
    assert!(
        python.exists(),
        "{} is missing: run crates/server/tests/notify/install.sh",
        python.display()
    );
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/notify/verify_webhooks.py");
    let input: Vec<Value> = deliveries
        .iter()
        .map(|d| {
            json!({"headers": {"webhook-id": d.id, "webhook-timestamp": d.timestamp,
                               "webhook-signature": d.signature}, "body": d.body})
        })
        .collect();
    let mut child = std::process::Command::new(python)
        .arg(script)
        .arg(SECRET)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(Value::Array(input).to_string().as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success());
    String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(|line| {
            let answer: Value = serde_json::from_str(line).unwrap();
            if answer["ok"] == true {
                Ok(answer["payload"].clone())
            } else {
                Err(answer["error"].as_str().unwrap_or("").to_owned())
            }
        })
        .collect()
}

async fn deliveries(receiver: &Receiver, at_least: usize) -> Vec<Delivery> {
    eventually("the webhook deliveries", || async {
        let got = receiver.got.lock().unwrap().clone();
        (got.len() >= at_least).then_some(got)
    })
    .await
}

#[tokio::test]
async fn a_pause_and_its_decision_reach_the_webhook_signed_as_standard_webhooks_says() {
    let hook = receiver(Some(0)).await;
    let app = spawn_notifying(&hook.url, "1h").await;
    let results = say(&app, "write notes.txt: hi and delete old.txt").await;
    let (task, context) = (task_id(&results), context_id(&results));
    let got = deliveries(&hook, 1).await;
    let verified = verify(&got);
    let pending = verified[0].clone().expect("the pause's signature verifies");
    assert_eq!(pending["type"], "batch.pending");
    let data = &pending["data"];
    assert_eq!(data["task_id"], task.as_str());
    assert_eq!(data["agent"], "default/demo");
    assert_eq!(data["requester"], "local");
    assert_eq!(
        data["url"],
        format!("https://signoff.example.com/agents/default/demo/chat/{context}").as_str()
    );
    assert!(data["batch_id"].is_i64(), "{data}");
    let names: Vec<&str> = (data["calls"].as_array().unwrap().iter())
        .map(|call| call["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["write_file", "delete_file"]);

    let (status, _) = app
        .post_json_as(
            &format!("/api/approvals/{task}"),
            None,
            &json!({"decision_type": "approve"}),
        )
        .await;
    assert_eq!(status, 200);
    let got = deliveries(&hook, 2).await;
    let verified = verify(&got);
    let decided = verified[1]
        .clone()
        .expect("the decision's signature verifies");
    assert_eq!(decided["type"], "batch.decided");
    assert_eq!(decided["data"]["decided_by"], "local");
    assert_eq!(decided["data"]["channel"], "rest");
    assert_eq!(decided["data"]["batch_id"], data["batch_id"]);
    assert_ne!(got[0].id, got[1].id);

    // A body changed on the way, or another secret, is refused by the verifier.
    let mut forged = got[0].clone();
    forged.body = forged.body.replace("write_file", "read_file");
    assert!(verify(&[forged])[0].is_err());

    let metrics = eventually("the deliveries counted", || async {
        let text = app
            .client
            .get(app.url("/metrics"))
            .send()
            .await
            .ok()?
            .text()
            .await
            .ok()?;
        text.contains("signoff_notifications_total{channel=\"hook\",outcome=\"delivered\"} 2")
            .then_some(text)
    })
    .await;
    assert!(
        metrics.contains("signoff_notifications_queued 0"),
        "{metrics}"
    );
    app.stop().await;
}

#[tokio::test]
async fn a_receiver_that_fails_gets_the_same_webhook_id_on_every_retry_until_it_takes_it() {
    let hook = receiver(Some(3)).await;
    let app = spawn_notifying(&hook.url, "1h").await;
    say(&app, "write notes.txt: hi").await;
    let got = deliveries(&hook, 4).await;
    assert!(
        got.iter().all(|delivery| delivery.id == got[0].id),
        "{got:?}"
    );
    assert!(got[0].id.starts_with("msg_"), "{}", got[0].id);
    for verified in verify(&got) {
        verified.expect("every retry is signed again, with its own timestamp");
    }
    // Taken by the fourth: no fifth attempt, and the outbox is empty.
    eventually("the outbox drained", || async {
        let text = app
            .client
            .get(app.url("/metrics"))
            .send()
            .await
            .ok()?
            .text()
            .await
            .ok()?;
        text.contains("signoff_notifications_queued 0")
            .then_some(())
    })
    .await;
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert_eq!(hook.got.lock().unwrap().len(), 4);
    let (_, failed) = app.get("/api/notifications/failed").await;
    assert_eq!(failed, json!({"failed": []}));
    app.stop().await;
}

#[tokio::test]
async fn a_notification_out_of_retries_is_kept_and_listed_for_operators() {
    let hook = receiver(None).await;
    let app = spawn_notifying(&hook.url, "500ms").await;
    let results = say(&app, "write notes.txt: hi").await;
    let task = task_id(&results);
    let failed = eventually("the notification failed for good", || async {
        let (_, body) = app.get("/api/notifications/failed").await;
        let failed = body["failed"].as_array()?.clone();
        (!failed.is_empty()).then_some(failed)
    })
    .await;
    assert_eq!(failed.len(), 1, "{failed:?}");
    let row = &failed[0];
    assert_eq!(row["task_id"], task.as_str());
    assert_eq!(row["type"], "batch.pending");
    assert_eq!(row["channel"], "hook");
    assert_eq!(
        row["last_error"],
        "HTTP 500 Internal Server Error: receiver down"
    );
    let attempts = row["attempts"].as_i64().unwrap();
    let got = hook.got.lock().unwrap().clone();
    assert_eq!(
        got.len() as i64,
        attempts,
        "each attempt reached the receiver once"
    );
    assert!(got
        .iter()
        .all(|delivery| Some(delivery.id.as_str()) == row["id"].as_str()));
    let text = app
        .client
        .get(app.url("/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        text.contains("signoff_notifications_total{channel=\"hook\",outcome=\"failed\"} 1"),
        "{text}"
    );
    let (status, _) = app.get("/api/notifications/failed?limit=0").await;
    assert_eq!(status, 400);
    app.stop().await;
}

#[tokio::test]
async fn a_subagents_batch_is_notified_through_its_parents_only() {
    let hook = receiver(Some(0)).await;
    let app = spawn_routed(&hook.url, "1h", "").await;
    let paused = send_stream(
        &app,
        "/api/a2a/default/boss",
        message_v03("delegate default/demo: write a.txt: one", None, None),
    )
    .await;
    assert_eq!(states(&paused).last().unwrap(), "input-required");
    let parent = task_id(&paused);
    let (status, _) = app
        .post_json_as(
            &format!("/api/approvals/{parent}"),
            None,
            &json!({"decision_type": "approve"}),
        )
        .await;
    assert_eq!(status, 200);
    wait_for_state_at(&app, "/api/a2a/default/boss", &parent, "completed").await;
    // Every commit is made: once the outbox is empty, every notification has arrived.
    eventually("the outbox drained", || async {
        let text = app.client.get(app.url("/metrics")).send().await.ok()?;
        let text = text.text().await.ok()?;
        text.contains("signoff_notifications_queued 0")
            .then_some(())
    })
    .await;
    let got = hook.got.lock().unwrap().clone();
    let seen: Vec<(String, String, String)> = verify(&got)
        .into_iter()
        .map(|verified| {
            let payload = verified.unwrap();
            let data = &payload["data"];
            (
                payload["type"].as_str().unwrap().to_owned(),
                data["task_id"].as_str().unwrap().to_owned(),
                data["agent"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let boss = |kind: &str| (kind.to_owned(), parent.clone(), "default/boss".to_owned());
    assert_eq!(
        seen,
        [boss("batch.pending"), boss("batch.decided")],
        "the subagent's own pause and decision are not notified"
    );
    app.stop().await;
}

/// The server with the agents file `agents_toml`, people by token (carol and dave in sre, erin
/// in dev) and the notifications file of `channels` (TOML `[[channels]]` tables), fast retries
/// and an attempt's `timeout`.
async fn spawn_channels(agents_toml: &str, channels: &str, timeout: &str) -> TestApp {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("hook.secret"), SECRET).unwrap();
    let agents = write_agents(dir.path(), agents_toml);
    let file = dir.path().join("notifications.toml");
    let secret = dir.path().join("hook.secret");
    std::fs::write(
        &file,
        format!(
            "[delivery]\nretry_base = \"50ms\"\nretry_max = \"200ms\"\nretry_for = \"1h\"\n\
             poll = \"50ms\"\ntimeout = \"{timeout}\"\n\n{}",
            channels.replace("SECRET_FILE", &secret.display().to_string())
        ),
    )
    .unwrap();
    spawn_in(dir, move |config| {
        config.agents_file = Some(agents);
        config.auth = signoff_server::AuthMode::Tokens;
        config.tokens = vec![
            "carol-token=carol:sre".into(),
            "dave-token=dave:sre".into(),
            "erin-token=erin:dev".into(),
        ];
        config.notifications = Some(file);
        config.public_url = Some("https://signoff.example.com".into());
    })
    .await
}

/// A webhook channel `name` to `url`, with `route` (TOML inline table).
fn hook_channel(name: &str, url: &str, route: &str) -> String {
    format!(
        "[[channels]]\nname = \"{name}\"\nkind = \"webhook\"\nurl = \"{url}\"\n\
         secret_file = \"SECRET_FILE\"\nroute = {route}\n\n"
    )
}

/// Carol's chat with the demo agent saying `text`, paused: its task.
async fn carol_pauses(app: &TestApp, text: &str) -> String {
    let body = message_request("message/stream", message_v03(text, None, None));
    let results = results(&app.stream_as(None, Some("carol-token"), body).await);
    assert_eq!(
        states(&results).last().map(String::as_str),
        Some("input-required"),
        "{results:?}"
    );
    task_id(&results)
}

/// Waits until every notification written so far was sent.
async fn outbox_drained(app: &TestApp) {
    eventually("the outbox drained", || async {
        let text = app.client.get(app.url("/metrics")).send().await.ok()?;
        let text = text.text().await.ok()?;
        text.contains("signoff_notifications_queued 0")
            .then_some(())
    })
    .await;
}

/// Each delivery's event type and task, verified.
fn events_of(receiver: &Receiver) -> Vec<(String, String)> {
    let got = receiver.got.lock().unwrap().clone();
    verify(&got)
        .into_iter()
        .map(|verified| {
            let payload = verified.unwrap();
            (
                payload["type"].as_str().unwrap().to_owned(),
                payload["data"]["task_id"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

#[tokio::test]
async fn a_batch_routed_to_sre_reaches_the_sre_channel_and_not_the_dev_channel() {
    let (sre, dev, all) = (
        receiver(Some(0)).await,
        receiver(Some(0)).await,
        receiver(Some(0)).await,
    );
    let agents = "[[agents]]\nname = \"demo\"\n\
        [[agents.tools]]\nkind = \"builtin_files\"\nrequire_approval = [\"write_file\", \"delete_file\"]\n\
        [agents.tools.tool_approvers.write_file]\napprovers = [\"group:sre\"]\n\
        [agents.tools.tool_approvers.delete_file]\napprovers = [\"group:dev\", \"user:carol\"]\n";
    let channels = hook_channel("sre", &sre.url, "{ groups = [\"sre\"] }")
        + &hook_channel("dev", &dev.url, "{ groups = [\"dev\"] }")
        + &hook_channel("all", &all.url, "{ agents = [\"default/demo\"] }");
    let app = spawn_channels(agents, &channels, "2s").await;

    let write = carol_pauses(&app, "write a.txt: hi").await;
    let delete = carol_pauses(&app, "delete old.txt").await;
    // Dave (sre) approves the write: its decision goes where its pause went.
    let (status, _) = app
        .post_json_as(
            &format!("/api/approvals/{write}"),
            Some("dave-token"),
            &json!({"decision_type": "approve"}),
        )
        .await;
    assert_eq!(status, 200);
    outbox_drained(&app).await;

    let pending = |task: &str| ("batch.pending".to_owned(), task.to_owned());
    let decided = |task: &str| ("batch.decided".to_owned(), task.to_owned());
    assert_eq!(events_of(&sre), [pending(&write), decided(&write)]);
    assert_eq!(events_of(&dev), [pending(&delete)]);
    let mut every = events_of(&all);
    every.sort();
    let mut expected = vec![pending(&write), pending(&delete), decided(&write)];
    expected.sort();
    assert_eq!(
        every, expected,
        "a channel without groups hears of every batch"
    );
    app.stop().await;
}

#[tokio::test]
async fn a_receiver_that_never_answers_does_not_hold_up_another_channels_notifications() {
    // Accepts connections and never answers: each attempt holds its connection until the
    // sender's timeout, which is longer than the rest of the test needs.
    let stuck = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let stuck_url = format!("http://{}/hook", stuck.local_addr().unwrap());
    let (accepted_tx, mut accepted) = tokio::sync::mpsc::unbounded_channel();
    let (closed_tx, mut closed) = tokio::sync::mpsc::unbounded_channel::<()>();
    tokio::spawn(async move {
        loop {
            let Ok((mut socket, _)) = stuck.accept().await else {
                return;
            };
            let _ = accepted_tx.send(());
            let closed_tx = closed_tx.clone();
            tokio::spawn(async move {
                use tokio::io::AsyncReadExt;
                let mut buffer = vec![0u8; 4096];
                while matches!(socket.read(&mut buffer).await, Ok(n) if n > 0) {}
                let _ = closed_tx.send(());
            });
        }
    });
    let live = receiver(Some(0)).await;
    let channels = hook_channel("stuck", &stuck_url, "{}") + &hook_channel("live", &live.url, "{}");
    let agents = "[[agents]]\nname = \"demo\"\n\
        [[agents.tools]]\nkind = \"builtin_files\"\nrequire_approval = [\"write_file\"]\n";
    let app = spawn_channels(agents, &channels, "30s").await;

    let first = carol_pauses(&app, "write one.txt: 1").await;
    within("the stuck receiver's first connection", accepted.recv()).await;
    let second = carol_pauses(&app, "write two.txt: 2").await;
    // The live receiver gets both pauses while the stuck one still holds its first
    // connection open: the second notification did not wait for the first attempt to end.
    let arrived = tokio::select! {
        got = deliveries(&live, 2) => Some(got),
        _ = closed.recv() => None,
    };
    let arrived = arrived.expect("the stuck attempt ended before the live receiver got both");
    let tasks: Vec<String> = verify(&arrived)
        .into_iter()
        .map(|verified| {
            verified.unwrap()["data"]["task_id"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(tasks, [first, second]);
    assert!(
        closed.try_recv().is_err(),
        "the stuck receiver's connection is still open"
    );
    app.stop().await;
}

#[tokio::test]
async fn secrets_inside_an_argument_are_masked_in_the_webhooks_data() {
    let hook = receiver(None).await;
    let app = spawn_notifying(&hook.url, "1h").await;
    let (ghp, password, slack) = (
        "ghp_0123456789abcdefABCDEF0123456789abcd",
        "Pw0rd77secret",
        "xoxb-1234-5678-abcdefghij",
    );
    let command = format!(
        "curl -H \"Authorization: Bearer {ghp}\" https://api.example; psql \
         postgres://admin:{password}@db/app; SLACK_TOKEN={slack} ./go.sh"
    );
    say(&app, &format!("write run.sh: {command}")).await;
    let got = deliveries(&hook, 1).await;
    for secret in [ghp, password, slack] {
        assert!(!got[0].body.contains(secret), "{secret} in {}", got[0].body);
    }
    let sent: Value = serde_json::from_str(&got[0].body).unwrap();
    assert_eq!(
        sent["data"]["calls"][0]["args"]["content"],
        "curl -H \"Authorization: [masked]\" https://api.example; psql \
         postgres://admin:[masked]@db/app; SLACK_TOKEN=[masked] ./go.sh"
    );
}
