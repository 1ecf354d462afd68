//! The Slack app channel against a stand-in for Slack's Web API started here (`chat.postMessage`,
//! `chat.update`, `users.info`, `views.open`, and the interactions' `response_url`): a real
//! server on port 0 posts each waiting batch, and interaction requests signed here as Slack
//! signs them (`v0=` HMAC-SHA256 over `v0:{timestamp}:{body}` with the signing secret) decide
//! it through `POST /api/slack/interactions`. Every body the server sends is type-checked
//! against `@slack/types` and Block Kit's limits (the checks of `slack.rs`).
//!
//! People: dana (sre), erin (dev) and gus (sre) are in the directory, seen through an authenticating proxy
//! with their emails; frank (sre) asks. Slack's users: `UDANA` and `UERIN` by the emails
//! `users.info` gives, `UGHOST` with an email nobody in Signoff has, `UFRANK` mapped to frank
//! in the channel's `users`.

use std::sync::{Arc, Mutex};

use axum::extract::{Path, Query};
use axum::http::HeaderMap;
use hmac::{Hmac, Mac};
use percent_encoding::{utf8_percent_encode, NON_ALPHANUMERIC};
use serde_json::{json, Value};
use sha2::Sha256;

use crate::slack::{limit_violations, node_modules, ping_risks, screenshot, type_errors_with};
use crate::support::*;

const SECRET: &str = "8f742231b10e8888abcd99yyyzzz85a5";
const TOKEN: &str = "xoxb-signoff-test";

const AGENTS: &str = "\
[[agents]]\nname = \"demo\"\napprovers = [\"group:sre\"]\nrequester_may_approve = false\n\
[[agents.tools]]\nkind = \"builtin_files\"\nrequire_approval = [\"write_file\"]\n\
[[agents]]\nname = \"brief\"\napprovers = [\"group:sre\"]\napproval_timeout = \"1s\"\n\
[[agents.tools]]\nkind = \"builtin_files\"\nrequire_approval = [\"write_file\"]\n\
[[agents]]\nname = \"ladder\"\napprovers = [\"group:sre\"]\nremind_after = \"1s\"\n\
[[agents.tools]]\nkind = \"builtin_files\"\nrequire_approval = [\"write_file\"]\n\
[[agents]]\nname = \"pair\"\napprovers = [\"group:sre\"]\nrequester_may_approve = false\n\
quorum = 2\n[[agents.tools]]\nkind = \"builtin_files\"\nrequire_approval = [\"write_file\"]\n";

/// What the stand-in was sent: each Web API call (method, body), and each `response_url` body.
#[derive(Default)]
struct Seen {
    calls: Vec<(String, Value)>,
    told: Vec<Value>,
    /// Calls without the bot token.
    unauthorized: usize,
}

struct StandIn {
    api: String,
    seen: Arc<Mutex<Seen>>,
}

impl StandIn {
    fn calls(&self, method: &str) -> Vec<Value> {
        let seen = self.seen.lock().unwrap();
        let calls = seen.calls.iter().filter(|(m, _)| m == method);
        calls.map(|(_, body)| body.clone()).collect()
    }

    fn told(&self) -> Vec<String> {
        let seen = self.seen.lock().unwrap();
        seen.told
            .iter()
            .map(|body| body["text"].as_str().unwrap_or("").to_owned())
            .collect()
    }
}

/// Slack's Web API as far as the channel uses it: posts get `ts` 1.000001, 1.000002, …
async fn stand_in() -> StandIn {
    let seen: Arc<Mutex<Seen>> = Arc::default();
    let (posts, users, told) = (seen.clone(), seen.clone(), seen.clone());
    let app = axum::Router::new()
        .route(
            "/api/{method}",
            axum::routing::post(
                move |Path(method): Path<String>, headers: HeaderMap, body: String| {
                    let seen = posts.clone();
                    async move {
                        let body: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
                        let mut seen = seen.lock().unwrap();
                        if headers.get("authorization").and_then(|v| v.to_str().ok())
                            != Some(&format!("Bearer {TOKEN}"))
                        {
                            seen.unauthorized += 1;
                        }
                        seen.calls.push((method.clone(), body.clone()));
                        let posted = seen.calls.iter().filter(|(m, _)| m == "chat.postMessage");
                        let ts = format!("1.{:06}", posted.count());
                        axum::Json(match method.as_str() {
                            "chat.postMessage" => {
                                json!({"ok": true, "channel": body["channel"], "ts": ts})
                            }
                            "chat.update" | "views.open" => json!({"ok": true}),
                            _ => json!({"ok": false, "error": "unknown_method"}),
                        })
                    }
                },
            ),
        )
        .route(
            "/api/users.info",
            axum::routing::get(
                move |Query(query): Query<std::collections::HashMap<String, String>>| {
                    let seen = users.clone();
                    async move {
                        seen.lock()
                            .unwrap()
                            .calls
                            .push(("users.info".into(), json!(query)));
                        let email = match query.get("user").map(String::as_str) {
                            Some("UDANA") => "Dana@Example.test",
                            Some("UERIN") => "erin@example.test",
                            Some("UGHOST") => "ghost@elsewhere.test",
                            _ => {
                                return axum::Json(json!({"ok": false, "error": "user_not_found"}))
                            }
                        };
                        axum::Json(json!({"ok": true, "user": {"profile": {"email": email}}}))
                    }
                },
            ),
        )
        .route(
            "/respond",
            axum::routing::post(move |body: String| {
                let seen = told.clone();
                async move {
                    let body: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
                    seen.lock().unwrap().told.push(body);
                    "ok"
                }
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let api = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    StandIn { api, seen }
}

async fn spawn_app(slack: &StandIn) -> TestApp {
    let dir = tempfile::tempdir().unwrap();
    let agents = write_agents(dir.path(), AGENTS);
    let (token, secret) = (dir.path().join("bot-token"), dir.path().join("signing"));
    std::fs::write(&token, format!("{TOKEN}\n")).unwrap();
    std::fs::write(&secret, SECRET).unwrap();
    let file = dir.path().join("notifications.toml");
    std::fs::write(
        &file,
        format!(
            "[delivery]\nretry_base = \"50ms\"\nretry_max = \"200ms\"\nretry_for = \"1h\"\n\
             poll = \"50ms\"\ntimeout = \"2s\"\n\n[[channels]]\nname = \"team-slack\"\n\
             kind = \"slack_app\"\n[channels.slack]\nbot_token_file = \"{}\"\n\
             signing_secret_file = \"{}\"\nchannel = \"C0SIGNOFF\"\napi_url = \"{}/api\"\n\
             users = {{ UFRANK = \"frank\" }}\n",
            token.display(),
            secret.display(),
            slack.api
        ),
    )
    .unwrap();
    let app = spawn_in(dir, move |config| {
        config.agents_file = Some(agents);
        config.notifications = Some(file);
        config.public_url = Some("https://signoff.example.com".into());
        config.auth = signoff_server::AuthMode::Proxy;
        config.trusted_proxies = vec!["127.0.0.0/8".into()];
    })
    .await;
    for (user, groups) in [("dana", "sre"), ("erin", "dev"), ("gus", "sre")] {
        let me = as_person(app.client.get(app.url("/api/me")), user, groups);
        assert_eq!(me.send().await.unwrap().status(), 200);
    }
    app
}

/// A request as `user` of `groups`, with the email `{user}@example.test`, as the proxy names
/// them.
fn as_person(
    request: reqwest::RequestBuilder,
    user: &str,
    groups: &str,
) -> reqwest::RequestBuilder {
    request
        .header("x-auth-request-user", user)
        .header("x-auth-request-email", format!("{user}@example.test"))
        .header("x-auth-request-groups", groups)
}

/// Frank asks `agent` to write a file: the paused task.
async fn pause(app: &TestApp, agent: &str, text: &str) -> String {
    let body = message_request("message/stream", message_v03(text, None, None));
    let ask = as_person(
        app.post(&format!("/api/a2a/default/{agent}")).json(&body),
        "frank",
        "sre",
    );
    let results = results(&SseStream::new(ask.send().await.unwrap()).collect().await);
    assert_eq!(
        states(&results).last().map(String::as_str),
        Some("input-required"),
        "{results:?}"
    );
    task_id(&results)
}

/// An interaction request's body: Slack's form with the JSON `payload`.
fn form(payload: &Value) -> String {
    format!(
        "payload={}",
        utf8_percent_encode(&payload.to_string(), NON_ALPHANUMERIC)
    )
}

/// `body` signed as Slack signs it, at `timestamp`, with `secret`.
fn signature(secret: &str, timestamp: i64, body: &str) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).unwrap();
    mac.update(format!("v0:{timestamp}:{body}").as_bytes());
    let bytes = mac.finalize().into_bytes();
    let hex: String = bytes.iter().map(|byte| format!("{byte:02x}")).collect();
    format!("v0={hex}")
}

/// POSTs `body` to the interactions endpoint with `timestamp` and `signature`: its status and
/// answer.
async fn send_signed(app: &TestApp, body: &str, timestamp: i64, signature: &str) -> (u16, String) {
    let response = app
        .post("/api/slack/interactions")
        .header("content-type", "application/x-www-form-urlencoded")
        .header("x-slack-request-timestamp", timestamp.to_string())
        .header("x-slack-signature", signature)
        .body(body.to_owned())
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.text().await.unwrap())
}

/// A click by Slack user `user` on the button `action` of `message`, as Slack sends it.
fn click(slack: &StandIn, message: &Value, user: &str, action: &str) -> Value {
    let button = message["blocks"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|block| block["elements"].as_array().cloned().unwrap_or_default())
        .find(|element| element["action_id"] == action)
        .unwrap_or_else(|| panic!("no {action} button in {message}"));
    json!({
        "type": "block_actions",
        "user": {"id": user, "username": user.to_lowercase()},
        "api_app_id": "A0SIGNOFF",
        "trigger_id": format!("trigger-{user}"),
        "response_url": format!("{}/respond", slack.api),
        "container": {"type": "message", "channel_id": "C0SIGNOFF"},
        "actions": [{"type": "button", "action_id": action, "value": button["value"]}],
    })
}

/// Signs `payload` now and sends it: the status and answer.
async fn interact(app: &TestApp, payload: &Value) -> (u16, String) {
    let body = form(payload);
    let now = chrono::Utc::now().timestamp();
    send_signed(app, &body, now, &signature(SECRET, now, &body)).await
}

/// Waits until the stand-in was sent `count` calls of `method`; their bodies.
async fn calls(slack: &StandIn, method: &str, count: usize) -> Vec<Value> {
    eventually(&format!("{count} {method}"), || async {
        let calls = slack.calls(method);
        (calls.len() >= count).then_some(calls)
    })
    .await
}

/// Waits until the person was told `count` things; what.
async fn told(slack: &StandIn, count: usize) -> Vec<String> {
    eventually(&format!("{count} answers"), || async {
        let told = slack.told();
        (told.len() >= count).then_some(told)
    })
    .await
}

/// `user` (of sre) decides `task`'s batch in Signoff, over REST.
async fn decide_in_signoff(app: &TestApp, task: &str, user: &str, decision: Value) {
    let request = app.post(&format!("/api/approvals/{task}")).json(&decision);
    let response = as_person(request, user, "sre").send().await.unwrap();
    assert_eq!(response.status(), 200, "{:?}", response.text().await);
}

/// Whether dana's inbox still lists `task`'s batch.
async fn waits(app: &TestApp, task: &str) -> bool {
    let inbox = as_person(app.client.get(app.url("/api/approvals")), "dana", "sre");
    let inbox: Value = inbox.send().await.unwrap().json().await.unwrap();
    inbox["approvals"]
        .as_array()
        .unwrap()
        .iter()
        .any(|batch| batch["taskId"] == task)
}

/// The decisions recorded on `task`, as dana's recent decisions list them.
async fn decisions(app: &TestApp, task: &str) -> Vec<Value> {
    decisions_as(app, task, "dana").await
}

/// The decisions recorded on `task`, as `user`'s (of sre) recent decisions list them.
async fn decisions_as(app: &TestApp, task: &str, user: &str) -> Vec<Value> {
    let url = app.url("/api/approvals?state=decided");
    let list = as_person(app.client.get(url), user, "sre");
    let list: Value = list.send().await.unwrap().json().await.unwrap();
    let entries = list["decisions"]
        .as_array()
        .or(list["approvals"].as_array());
    entries
        .unwrap_or_else(|| panic!("{list}"))
        .iter()
        .filter(|entry| entry["taskId"] == task)
        .cloned()
        .collect()
}

/// Whether `message` has a button left.
fn has_buttons(message: &Value) -> bool {
    message.to_string().contains("\"button\"")
}

#[tokio::test]
async fn a_signed_click_approves_once_as_the_mapped_person_and_nothing_else_decides() {
    let slack = stand_in().await;
    let app = spawn_app(&slack).await;
    let task = pause(&app, "demo", "write a.txt: token=hunter2 hello").await;
    let posted = calls(&slack, "chat.postMessage", 1).await;
    let message = &posted[0];
    assert_eq!(message["channel"], "C0SIGNOFF");
    let text = message.to_string();
    assert!(
        text.contains("write_file") && text.contains("a.txt"),
        "{text}"
    );
    assert!(!text.contains("hunter2"), "a secret reached Slack: {text}");
    assert!(
        text.contains("_Preview_") && text.contains("a new file of"),
        "{text}"
    );
    for action in ["signoff_approve", "signoff_reject", "signoff_open"] {
        assert!(text.contains(action), "{action}: {text}");
    }
    screenshot("slack-message-waiting", message);

    // Not Slack's: a bad signature, another secret, a stale timestamp, none at all.
    let approve = click(&slack, message, "UDANA", "signoff_approve");
    let body = form(&approve);
    let now = chrono::Utc::now().timestamp();
    let good = signature(SECRET, now, &body);
    let mut flipped = good.clone().into_bytes();
    let last = flipped.len() - 1;
    flipped[last] = if flipped[last] == b'0' { b'1' } else { b'0' };
    let flipped = String::from_utf8(flipped).unwrap();
    for (timestamp, signed, why) in [
        (now, flipped.as_str(), "does not verify"),
        (
            now,
            &signature("another-secret", now, &body),
            "does not verify",
        ),
        (
            now - 301,
            &signature(SECRET, now - 301, &body),
            "five minutes",
        ),
        (now, "", "does not verify"),
    ] {
        let (status, answer) = send_signed(&app, &body, timestamp, signed).await;
        assert_eq!(status, 401, "{answer}");
        assert!(answer.contains(why), "{why}: {answer}");
    }
    // Signed, but by people who may not decide: erin is not of sre, ghost is nobody Signoff
    // knows, and frank (mapped by the channel) asked, so the two-person rule keeps him out.
    for user in ["UERIN", "UGHOST", "UFRANK"] {
        let (status, _) = interact(&app, &click(&slack, message, user, "signoff_approve")).await;
        assert_eq!(status, 200);
    }
    let answers = told(&slack, 3).await;
    assert!(
        answers
            .iter()
            .filter(|text| text.contains("You may not decide"))
            .count()
            == 2,
        "{answers:#?}"
    );
    assert!(
        answers
            .iter()
            .any(|text| text.contains("ghost@elsewhere.test")),
        "{answers:#?}"
    );
    assert!(waits(&app, &task).await, "nothing was decided");
    assert!(slack.calls("chat.update").is_empty());

    // Dana's click approves; every copy is closed, saying so.
    let (status, answer) = send_signed(&app, &body, now, &good).await;
    assert_eq!(status, 200, "{answer}");
    let updated = calls(&slack, "chat.update", 1).await;
    assert_eq!(updated[0]["ts"], "1.000001");
    assert_eq!(updated[0]["channel"], "C0SIGNOFF");
    let closed = updated[0].to_string();
    assert!(closed.contains("Approved by dana (slack)"), "{closed}");
    assert!(!has_buttons(&updated[0]), "{closed}");
    screenshot("slack-message-approved", &updated[0]);
    let answers = told(&slack, 4).await;
    assert_eq!(answers[3], "Decided.");

    // The same signed click again (a replay, or a second click on a stale copy): told who
    // decided, and nothing is decided twice.
    let (status, _) = send_signed(&app, &body, now, &good).await;
    assert_eq!(status, 200);
    let answers = told(&slack, 5).await;
    assert!(
        answers[4].starts_with("Already decided by dana (slack): Approved"),
        "{answers:#?}"
    );
    let decided = decisions(&app, &task).await;
    assert_eq!(decided.len(), 1, "{decided:#?}");
    assert_eq!(decided[0]["channel"], "slack", "{decided:#?}");
    assert!(!waits(&app, &task).await);
    assert_eq!(slack.seen.lock().unwrap().unauthorized, 0);
    app.stop().await;
}

#[tokio::test]
async fn rejecting_takes_a_reason_in_a_modal_and_a_decision_in_signoff_closes_every_copy() {
    node_modules();
    let slack = stand_in().await;
    let app = spawn_app(&slack).await;

    // A rejection from Slack: the Reject button opens the modal; its submission decides.
    let demo = pause(&app, "demo", "write b.txt: <!channel> & more").await;
    let posted = calls(&slack, "chat.postMessage", 1).await;
    let (status, _) = interact(&app, &click(&slack, &posted[0], "UDANA", "signoff_reject")).await;
    assert_eq!(status, 200);
    let opened = calls(&slack, "views.open", 1).await;
    assert_eq!(opened[0]["trigger_id"], "trigger-UDANA");
    let view = &opened[0]["view"];
    let submission = |user: &str, reason: &str| {
        json!({
            "type": "view_submission",
            "user": {"id": user},
            "view": {
                "callback_id": view["callback_id"],
                "private_metadata": view["private_metadata"],
                "state": {"values": {"reason": {"reason": {"type": "plain_text_input", "value": reason}}}},
            },
        })
    };
    // Erin's submission (she got the modal some other way) is refused inside the modal.
    let (status, answer) = interact(&app, &submission("UERIN", "no")).await;
    assert_eq!(status, 200);
    let answer: Value = serde_json::from_str(&answer).unwrap();
    assert_eq!(answer["response_action"], "errors", "{answer}");
    assert!(waits(&app, &demo).await);
    let (status, answer) = interact(&app, &submission("UDANA", "not on Fridays")).await;
    assert_eq!((status, answer.as_str()), (200, ""));
    let updated = calls(&slack, "chat.update", 1).await;
    let closed = updated[0].to_string();
    assert!(
        closed.contains("Rejected: not on Fridays by dana (slack)"),
        "{closed}"
    );
    assert!(!has_buttons(&updated[0]));

    // A batch posted twice (its reminder is a second copy), then decided in Signoff: both
    // copies are updated.
    let ladder = pause(&app, "ladder", "write c.txt: hi").await;
    let posted = calls(&slack, "chat.postMessage", 3).await;
    let deny = json!({"decision_type": "deny", "reason": "wrong file"});
    decide_in_signoff(&app, &ladder, "dana", deny).await;
    // A copy recorded while the decision was being made is closed twice (by the decision's
    // row and by its own post, which finds the batch decided): `chat.update` is idempotent,
    // so what counts is that each copy is closed.
    let updated = calls(&slack, "chat.update", 3).await;
    let mut closed_ts: Vec<&str> = updated[1..]
        .iter()
        .map(|message| message["ts"].as_str().unwrap())
        .collect();
    closed_ts.sort_unstable();
    closed_ts.dedup();
    assert_eq!(closed_ts, ["1.000002", "1.000003"]);
    for message in &updated[1..] {
        assert!(
            message
                .to_string()
                .contains("Rejected: wrong file by dana (rest)"),
            "{message}"
        );
        assert!(!has_buttons(message));
    }

    // Every body the channel sent: Slack's types and Block Kit's limits, and no pings.
    let mut messages = posted.clone();
    messages.extend(updated);
    let problems: Vec<String> = messages
        .iter()
        .flat_map(|message| {
            limit_violations(message)
                .into_iter()
                .chain(ping_risks(message))
        })
        .collect();
    assert!(problems.is_empty(), "{problems:#?}");
    for message in &posted {
        for button in message["blocks"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|block| block["elements"].as_array().cloned().unwrap_or_default())
        {
            assert!(button["value"].as_str().map_or(0, str::len) <= 2000);
        }
    }
    let title = view["title"]["text"].as_str().unwrap();
    assert!(title.chars().count() <= 24, "a modal's title: {title}");
    assert!(view["private_metadata"].as_str().unwrap().len() <= 3000);
    let (errors, control) = type_errors_with(
        "import type { KnownBlock } from \"@slack/types\";\n\
         type Message = { channel: string; ts?: string; text: string; blocks: KnownBlock[] };\n",
        &messages,
        &[
            json!({"channel": "C1", "text": "x", "blocks": [{"type": "actions", "elements": [
                {"type": "button", "action_id": "a", "text": {"type": "mrkdwn", "text": "x"}}
            ]}]}),
        ],
    );
    assert_eq!(errors, Vec::<String>::new());
    assert!(!control.is_empty(), "tsc let a mrkdwn button text through");
    let (errors, control) = type_errors_with(
        "import type { KnownBlock, ModalView } from \"@slack/types\";\n\
         type Message = { trigger_id: string; view: Omit<ModalView, \"blocks\"> & \
         { blocks: KnownBlock[] } };\n",
        &opened,
        &[json!({"trigger_id": "t", "view": {"type": "modal", "title": "x", "blocks": []}})],
    );
    assert_eq!(errors, Vec::<String>::new());
    assert!(
        !control.is_empty(),
        "tsc let a modal without a plain-text title through"
    );
    app.stop().await;
}

#[tokio::test]
async fn an_approval_short_of_its_quorum_shows_on_every_copy_and_the_last_one_closes_them() {
    node_modules();
    let slack = stand_in().await;
    let app = spawn_app(&slack).await;
    let task = pause(&app, "pair", "write e.txt: hi").await;
    let posted = calls(&slack, "chat.postMessage", 1).await;

    // Dana's click is counted, one of the two approvals: the copy says who approved so far and
    // keeps its buttons for the second approver.
    let (status, _) = interact(&app, &click(&slack, &posted[0], "UDANA", "signoff_approve")).await;
    assert_eq!(status, 200);
    let answers = told(&slack, 1).await;
    assert!(answers[0].contains("counted"), "{answers:#?}");
    let updated = calls(&slack, "chat.update", 1).await;
    assert_eq!(updated[0]["ts"], "1.000001");
    let counted = updated[0].to_string();
    assert!(
        counted.contains("Approved so far by dana: 1 of 2"),
        "{counted}"
    );
    assert!(counted.contains("write_file"), "{counted}");
    assert!(has_buttons(&updated[0]), "{counted}");
    assert!(
        waits(&app, &task).await,
        "one approval of two decides nothing"
    );
    screenshot("slack-message-counted", &updated[0]);

    // Gus approves in Signoff: the quorum is met, and the copy is closed, saying by whom.
    decide_in_signoff(&app, &task, "gus", json!({"decision_type": "approve"})).await;
    let updated = calls(&slack, "chat.update", 2).await;
    let closed = updated[1].to_string();
    assert!(closed.contains("Approved by gus (rest)"), "{closed}");
    assert!(!has_buttons(&updated[1]), "{closed}");
    assert!(!waits(&app, &task).await);

    // Dana's second click, on her stale copy, decides nothing more.
    let (status, _) = interact(&app, &click(&slack, &posted[0], "UDANA", "signoff_approve")).await;
    assert_eq!(status, 200);
    let answers = told(&slack, 2).await;
    assert!(
        answers[1].starts_with("Already decided by gus"),
        "{answers:#?}"
    );
    let decided = decisions_as(&app, &task, "gus").await;
    assert_eq!(decided.len(), 1, "{decided:#?}");
    assert_eq!(decided[0]["channel"], "rest", "{decided:#?}");

    let problems: Vec<String> = updated
        .iter()
        .flat_map(|message| {
            limit_violations(message)
                .into_iter()
                .chain(ping_risks(message))
        })
        .collect();
    assert!(problems.is_empty(), "{problems:#?}");
    let (errors, _) = type_errors_with(
        "import type { KnownBlock } from \"@slack/types\";\n\
         type Message = { channel: string; ts?: string; text: string; blocks: KnownBlock[] };\n",
        &updated,
        &[],
    );
    assert_eq!(errors, Vec::<String>::new());
    app.stop().await;
}

#[tokio::test]
async fn a_hand_over_and_an_expiry_close_the_copies_and_a_click_on_a_closed_one_decides_nothing() {
    let slack = stand_in().await;
    let app = spawn_app(&slack).await;

    // Handed over: the copy says to whom and by whom, without buttons; a new copy asks.
    let demo = pause(&app, "demo", "write d.txt: hi").await;
    calls(&slack, "chat.postMessage", 1).await;
    let handover = as_person(
        app.post(&format!("/api/approvals/{demo}/handover"))
            .json(&json!({"to": "group:dba", "note": "yours"})),
        "dana",
        "sre",
    );
    assert_eq!(handover.send().await.unwrap().status(), 200);
    let updated = calls(&slack, "chat.update", 1).await;
    let closed = updated[0].to_string();
    assert!(
        closed.contains("handed over to group:dba by dana"),
        "{closed}"
    );
    assert!(!has_buttons(&updated[0]));
    let posted = calls(&slack, "chat.postMessage", 2).await;
    assert!(has_buttons(&posted[1]), "{}", posted[1]);
    // The new copy's button decides; every copy, the handed-over one too, then says so.
    let (status, _) = interact(&app, &click(&slack, &posted[1], "UDANA", "signoff_approve")).await;
    assert_eq!(status, 200);
    let updated = calls(&slack, "chat.update", 3).await;
    let ts: Vec<&str> = updated[1..]
        .iter()
        .map(|m| m["ts"].as_str().unwrap())
        .collect();
    assert_eq!(ts, ["1.000001", "1.000002"]);
    assert!(updated[1..]
        .iter()
        .all(|m| m.to_string().contains("Approved by dana (slack)") && !has_buttons(m)));

    // Expired: its copy says so; a click on it afterwards is told, and decides nothing.
    let brief = pause(&app, "brief", "write e.txt: soon").await;
    let posted = calls(&slack, "chat.postMessage", 3).await;
    let updated = calls(&slack, "chat.update", 4).await;
    assert_eq!(updated[3]["ts"], "1.000003");
    assert!(
        updated[3].to_string().contains("expired unanswered"),
        "{}",
        updated[3]
    );
    assert!(!has_buttons(&updated[3]));
    let (status, _) = interact(&app, &click(&slack, &posted[2], "UDANA", "signoff_approve")).await;
    assert_eq!(status, 200);
    let answers = told(&slack, 2).await;
    assert!(answers[1].starts_with("Already decided by"), "{answers:#?}");
    assert!(answers[1].contains("(expiry)"), "{answers:#?}");
    assert!(decisions(&app, &brief)
        .await
        .iter()
        .all(|d| d["channel"] != "slack"));
    app.stop().await;
}
