//! The deadline ladder (crates/server/README.md, Approvers; docs/rest.md, Deadline ladder): a
//! waiting batch is reminded after `remind_after` (marked in the inbox, sent again on the
//! approvals stream, a `batch.reminded` notification), escalates after `escalate_after` (its
//! `escalate_to` may then decide it, a `batch.escalated` notification, audited), and an
//! eligible approver may extend its deadline within `max_extend` (a `batch.extended`
//! notification). Each step happens once, also
//! with two servers on one PostgreSQL store.

use std::path::Path;
use std::sync::{Arc, Mutex};

use axum::http::StatusCode;
use serde_json::{json, Value};

use crate::support::*;

/// `fast` reminds after 1 s and escalates to dba after 2 s; `slow` would escalate to dba only
/// after an hour; `timed` expires after an hour and may be extended by 30 minutes in all;
/// `fixed` expires after an hour and may not be extended; `roomy` expires after an hour and may
/// be extended by 1000 hours. Each holds `write_file` for sre approvers, never the requester.
const AGENTS: &str = "\
[[agents]]\nname = \"fast\"\napprovers = [\"group:sre\"]\nrequester_may_approve = false\n\
remind_after = \"1s\"\nescalate_after = \"2s\"\nescalate_to = [\"group:dba\"]\n\
[[agents.tools]]\nkind = \"builtin_files\"\nrequire_approval = [\"write_file\"]\n\
[[agents]]\nname = \"slow\"\napprovers = [\"group:sre\"]\nrequester_may_approve = false\n\
escalate_after = \"1h\"\nescalate_to = [\"group:dba\"]\n\
[[agents.tools]]\nkind = \"builtin_files\"\nrequire_approval = [\"write_file\"]\n\
[[agents]]\nname = \"timed\"\napprovers = [\"group:sre\"]\nrequester_may_approve = false\n\
approval_timeout = \"1h\"\nmax_extend = \"30m\"\n\
[[agents.tools]]\nkind = \"builtin_files\"\nrequire_approval = [\"write_file\"]\n\
[[agents]]\nname = \"fixed\"\napprovers = [\"group:sre\"]\nrequester_may_approve = false\n\
approval_timeout = \"1h\"\n\
[[agents.tools]]\nkind = \"builtin_files\"\nrequire_approval = [\"write_file\"]\n\
[[agents]]\nname = \"roomy\"\napprovers = [\"group:sre\"]\nrequester_may_approve = false\n\
approval_timeout = \"1h\"\nmax_extend = \"1000h\"\n\
[[agents.tools]]\nkind = \"builtin_files\"\nrequire_approval = [\"write_file\"]\n";

const TOKENS: [&str; 4] = [
    "carol-token=carol:sre",
    "bob-token=bob:sre",
    "dana-token=dana:dba",
    "erin-token=erin:dev",
];

/// A webhook receiver that refuses every delivery (so the outbox keeps each row), and the
/// bodies it was sent.
struct Refusing {
    url: String,
    bodies: Arc<Mutex<Vec<Value>>>,
}

async fn refusing_receiver() -> Refusing {
    let bodies: Arc<Mutex<Vec<Value>>> = Arc::default();
    let seen = bodies.clone();
    let app = axum::Router::new().route(
        "/hook",
        axum::routing::post(move |body: String| {
            let seen = seen.clone();
            async move {
                seen.lock()
                    .unwrap()
                    .push(serde_json::from_str(&body).unwrap_or(Value::Null));
                (StatusCode::SERVICE_UNAVAILABLE, "not now")
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    Refusing { url, bodies }
}

/// A server on `dir` with [`AGENTS`], [`TOKENS`] and a webhook channel to `hook` for every
/// event.
async fn spawn_ladder(dir: tempfile::TempDir, hook: &str) -> TestApp {
    let agents = write_agents(dir.path(), AGENTS);
    let secret = dir.path().join("hook.secret");
    std::fs::write(&secret, "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").unwrap();
    let notifications = dir.path().join("notifications.toml");
    std::fs::write(
        &notifications,
        format!(
            "[delivery]\nretry_base = \"1h\"\nretry_max = \"1h\"\nretry_for = \"24h\"\n\
             poll = \"50ms\"\ntimeout = \"2s\"\n\n[[channels]]\nname = \"hook\"\n\
             kind = \"webhook\"\nurl = \"{hook}\"\nsecret_file = \"{}\"\n",
            secret.display()
        ),
    )
    .unwrap();
    spawn_in(dir, move |config| {
        config.agents_file = Some(agents);
        config.notifications = Some(notifications);
        config.public_url = Some("https://signoff.example.com".into());
        config.auth = signoff_server::AuthMode::Tokens;
        config.tokens = TOKENS.iter().map(|token| token.to_string()).collect();
    })
    .await
}

/// Carol asks `agent` to write a file; the paused task and context.
async fn pause(app: &TestApp, agent: &str, file: &str) -> (String, String) {
    let body = message_request(
        "message/stream",
        message_v03(&format!("write {file}: hi"), None, None),
    );
    let response = app
        .post(&format!("/api/a2a/default/{agent}"))
        .json(&body)
        .bearer_auth("carol-token")
        .send()
        .await
        .unwrap();
    let events = SseStream::new(response).collect().await;
    let results = results(&events);
    assert_eq!(
        states(&results).last().map(String::as_str),
        Some("input-required"),
        "{results:?}"
    );
    (task_id(&results), context_id(&results))
}

/// The batch of `task` in the inbox of `token`'s holder, once `ready` says it is as expected.
async fn inbox_entry(
    app: &TestApp,
    token: &str,
    task: &str,
    what: &str,
    ready: impl Fn(&Value) -> bool,
) -> Value {
    eventually(what, || async {
        let (_, inbox) = app.get_as("/api/approvals", Some(token)).await;
        inbox["approvals"]
            .as_array()?
            .iter()
            .find(|batch| batch["taskId"] == task && ready(batch))
            .cloned()
    })
    .await
}

/// How many `kind` rows of `task` a table holds (`batch_steps` by step kind, `notifications`
/// by event type).
async fn rows(dir: &Path, table: &str, kind: &str, task: &str) -> i64 {
    sql_count(
        dir,
        &format!("SELECT COUNT(*) FROM {table} WHERE task_id = ?1 AND kind = '{kind}'"),
        task,
    )
    .await
}

#[tokio::test]
async fn a_waiting_batch_is_reminded_then_escalated_and_the_escalated_group_may_decide() {
    let hook = refusing_receiver().await;
    let app = spawn_ladder(tempfile::tempdir().unwrap(), &hook.url).await;
    let approve = json!({"decision_type": "approve"});

    // Before any escalation dana (dba) may not decide a batch: slow's escalates in an hour.
    let (slow, _) = pause(&app, "slow", "slow.txt").await;
    let (status, body) = decide_rest(&app, Some("dana-token"), &slow, approve.clone()).await;
    assert_eq!(status, 404, "not hers to see: {body}");

    let mut bob = open_approvals(&app, Some("bob-token"), None).await;
    let (task, _) = pause(&app, "fast", "fast.txt").await;

    // The reminder: bob's stream sends the batch again, marked; so does his inbox.
    let reminded = within("bob's stream to announce the reminder", async {
        loop {
            let frame = bob.next_event().await;
            let (name, about) = frame.about();
            if name == "pending"
                && about == task
                && frame.data()["ladder"]["remindedAt"].is_string()
            {
                return frame.data().clone();
            }
        }
    })
    .await;
    assert_eq!(reminded["routing"]["eligibleBy"], json!(["group:sre"]));
    inbox_entry(
        &app,
        "bob-token",
        &task,
        "bob's inbox to mark the reminder",
        |batch| batch["ladder"]["remindedAt"].is_string(),
    )
    .await;

    // The escalation: the batch is in dana's inbox, eligible by dba, and she approves it.
    let escalated = inbox_entry(&app, "dana-token", &task, "the escalation to dba", |_| true).await;
    assert_eq!(
        escalated["ladder"]["escalatedTo"],
        json!(["group:dba"]),
        "{escalated}"
    );
    assert_eq!(escalated["routing"]["eligibleBy"], json!(["group:dba"]));
    let (status, body) = decide_rest(&app, Some("dana-token"), &task, approve).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["decision"]["calls"][0]["verdict"], "approve", "{body}");

    // Each step once, each with its notification, and both in the audit.
    let dir = app.data_dir.path();
    assert_eq!(rows(dir, "batch_steps", "remind", &task).await, 1);
    assert_eq!(rows(dir, "batch_steps", "escalate", &task).await, 1);
    assert_eq!(rows(dir, "notifications", "batch.reminded", &task).await, 1);
    assert_eq!(
        rows(dir, "notifications", "batch.escalated", &task).await,
        1
    );
    let sent = eventually("the escalation's webhook", || async {
        let bodies = hook.bodies.lock().unwrap().clone();
        bodies
            .iter()
            .find(|body| body["type"] == "batch.escalated" && body["data"]["task_id"] == task)
            .cloned()
    })
    .await;
    assert_eq!(sent["data"]["escalated_to"], json!(["group:dba"]), "{sent}");
    assert_eq!(sent["data"]["requester"], "carol");
    let (_, audit) = app
        .get_as("/api/approvals?state=decided", Some("dana-token"))
        .await;
    let entry = audit["decisions"]
        .as_array()
        .and_then(|entries| entries.iter().find(|entry| entry["taskId"] == task))
        .cloned()
        .unwrap_or_else(|| panic!("the decision in dana's audit: {audit}"));
    let kinds: Vec<&str> = entry["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|step| step["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["remind", "escalate"], "{entry}");
    assert_eq!(entry["steps"][1]["to"], json!(["group:dba"]));
    assert!(entry["steps"][1].get("by").is_none(), "{entry}");
}

#[tokio::test]
async fn an_eligible_approver_extends_the_deadline_within_max_extend_and_no_further() {
    let hook = refusing_receiver().await;
    let app = spawn_ladder(tempfile::tempdir().unwrap(), &hook.url).await;
    let (task, _) = pause(&app, "timed", "timed.txt").await;
    let path = format!("/api/approvals/{task}/extend");
    let first = inbox_entry(&app, "bob-token", &task, "the batch", |_| true).await;
    let first = first["expiresAt"].as_str().unwrap().to_owned();
    let at = |text: &str| chrono::DateTime::parse_from_rfc3339(text).unwrap();

    // Not eligible (erin is dev; carol asked, under the two-person rule): refused.
    for token in ["erin-token", "carol-token"] {
        let (status, body) = app
            .post_json_as(&path, Some(token), &json!({"by": "5m"}))
            .await;
        assert_eq!(status, 403, "{token}: {body}");
    }
    for bad in [
        json!({"by": "soon"}),
        json!({"by": "0s"}),
        json!({"until": "5m"}),
    ] {
        let (status, body) = app.post_json_as(&path, Some("bob-token"), &bad).await;
        assert_eq!(status, 400, "{bad}: {body}");
    }

    // 20 minutes, then 15 more would pass max_extend's 30: refused naming it; 10 fit.
    let (status, body) = app
        .post_json_as(
            &path,
            Some("bob-token"),
            &json!({"by": "20m", "note": "on it"}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["firstExpiresAt"], first.as_str());
    assert_eq!(body["maxExtend"], "30m");
    let moved = body["expiresAt"].as_str().unwrap().to_owned();
    assert_eq!((at(&moved) - at(&first)).num_minutes(), 20, "{body}");
    let listed = inbox_entry(&app, "bob-token", &task, "the new deadline", |_| true).await;
    assert_eq!(listed["expiresAt"], moved.as_str());
    // The webhook hears of it: who extended it, to when, from when, and why.
    let extended = eventually("the batch.extended webhook", || async {
        let bodies = hook.bodies.lock().unwrap().clone();
        bodies
            .into_iter()
            .find(|body| body["type"] == "batch.extended")
    })
    .await;
    let data = &extended["data"];
    assert_eq!(data["task_id"], task.as_str(), "{extended}");
    assert_eq!(data["extended_by"], "bob", "{extended}");
    assert_eq!(data["expires_at"], moved.as_str(), "{extended}");
    assert_eq!(data["previous_expires_at"], first.as_str(), "{extended}");
    assert_eq!(data["note"], "on it", "{extended}");
    assert_eq!(data["requester"], "carol", "{extended}");
    assert_eq!(data["calls"][0]["name"], "write_file", "{extended}");
    let dir = app.data_dir.path();
    assert_eq!(rows(dir, "notifications", "batch.extended", &task).await, 1);

    let (status, body) = app
        .post_json_as(&path, Some("bob-token"), &json!({"by": "15m"}))
        .await;
    assert_eq!(status, 400, "{body}");
    let message = body.to_string();
    assert!(message.contains("max_extend = 30m"), "{message}");
    let (status, body) = app
        .post_json_as(&path, Some("bob-token"), &json!({"by": "10m"}))
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        (at(body["expiresAt"].as_str().unwrap()) - at(&first)).num_minutes(),
        30
    );

    // An agent without max_extend: no extension, saying why.
    let (fixed, _) = pause(&app, "fixed", "fixed.txt").await;
    let (status, body) = app
        .post_json_as(
            &format!("/api/approvals/{fixed}/extend"),
            Some("bob-token"),
            &json!({"by": "1m"}),
        )
        .await;
    assert_eq!(status, 400, "{body}");
    assert!(body.to_string().contains("max_extend"), "{body}");

    // The extensions are audited with the decision; a decided batch is extended no more.
    let (status, body) = decide_rest(
        &app,
        Some("bob-token"),
        &task,
        json!({"decision_type": "approve"}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = app
        .post_json_as(&path, Some("bob-token"), &json!({"by": "1m"}))
        .await;
    assert_eq!(status, 409, "{body}");
    let (_, audit) = app
        .get_as("/api/approvals?state=decided", Some("bob-token"))
        .await;
    let entry = audit["decisions"]
        .as_array()
        .and_then(|entries| entries.iter().find(|entry| entry["taskId"] == task))
        .cloned()
        .unwrap_or_else(|| panic!("the decision in bob's audit: {audit}"));
    let steps = entry["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 2, "{entry}");
    assert_eq!(steps[0]["kind"], "extend");
    assert_eq!(steps[0]["by"], "bob");
    assert_eq!(steps[0]["note"], "on it");
    assert_eq!(steps[0]["expiresAt"], moved.as_str());
}

#[tokio::test]
async fn extensions_are_at_least_a_minute_within_max_extend_and_at_most_twenty_a_batch() {
    let hook = refusing_receiver().await;
    let app = spawn_ladder(tempfile::tempdir().unwrap(), &hook.url).await;
    let (task, _) = pause(&app, "roomy", "roomy.txt").await;
    let path = format!("/api/approvals/{task}/extend");
    let extend = |by: &'static str| {
        let (app, path) = (&app, &path);
        async move {
            app.post_json_as(path, Some("bob-token"), &json!({"by": by}))
                .await
        }
    };
    let dir = app.data_dir.path();

    // A millisecond or 59 seconds is no reprieve; a billion years is no date (it was a 500).
    for by in ["1ms", "59s"] {
        let (status, body) = extend(by).await;
        assert_eq!(status, 400, "{by}: {body}");
        assert!(body.to_string().contains("least extension, 1m"), "{body}");
    }
    for by in ["1000000000years", "1001h"] {
        let (status, body) = extend(by).await;
        assert_eq!(status, 400, "{by}: {body}");
        assert!(body.to_string().contains("max_extend = 1000h"), "{body}");
    }
    assert_eq!(rows(dir, "batch_steps", "extend", &task).await, 0);

    // Twenty extensions of a minute, and no more, though max_extend leaves room.
    for _ in 0..20 {
        let (status, body) = extend("1m").await;
        assert_eq!(status, 200, "{body}");
    }
    let (status, body) = extend("1m").await;
    assert_eq!(status, 400, "{body}");
    assert!(
        body.to_string().contains("the most one batch takes (20)"),
        "{body}"
    );
    assert_eq!(rows(dir, "batch_steps", "extend", &task).await, 20);
    assert_eq!(
        rows(dir, "notifications", "batch.extended", &task).await,
        20
    );
}

#[tokio::test]
async fn the_inbox_and_the_stream_say_max_extend_and_the_first_deadline_before_any_extension() {
    let hook = refusing_receiver().await;
    let app = spawn_ladder(tempfile::tempdir().unwrap(), &hook.url).await;
    let mut bob = open_approvals(&app, Some("bob-token"), None).await;
    let (task, _) = pause(&app, "timed", "timed.txt").await;
    // Bob's stream says it with the batch's first word on it.
    let said = within("bob's stream to send the batch", async {
        loop {
            let frame = bob.next_event().await;
            let (name, about) = frame.about();
            if name == "pending" && about == task {
                return frame.data().clone();
            }
        }
    })
    .await;
    let first = said["expiresAt"].as_str().unwrap().to_owned();
    assert_eq!(said["ladder"]["maxExtend"], "30m", "{said}");
    assert_eq!(said["ladder"]["firstExpiresAt"], first.as_str(), "{said}");
    // So do the inboxes of an approver (a routed batch) and of the requester (her own).
    for token in ["bob-token", "carol-token"] {
        let listed = inbox_entry(&app, token, &task, "the batch", |_| true).await;
        assert_eq!(listed["ladder"]["maxExtend"], "30m", "{token}: {listed}");
        assert_eq!(
            listed["ladder"]["firstExpiresAt"],
            first.as_str(),
            "{token}: {listed}"
        );
        assert_eq!(listed["expiresAt"], first.as_str(), "{token}: {listed}");
    }
    // After an extension the first deadline stays, the deadline moves.
    let (status, body) = app
        .post_json_as(
            &format!("/api/approvals/{task}/extend"),
            Some("bob-token"),
            &json!({"by": "20m"}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let moved = body["expiresAt"].as_str().unwrap().to_owned();
    for token in ["bob-token", "carol-token"] {
        let listed = inbox_entry(&app, token, &task, "the new deadline", |batch| {
            batch["expiresAt"] == moved.as_str()
        })
        .await;
        assert_eq!(listed["ladder"]["maxExtend"], "30m", "{token}: {listed}");
        assert_eq!(
            listed["ladder"]["firstExpiresAt"],
            first.as_str(),
            "{token}: {listed}"
        );
    }
    // An agent without max_extend says none: its batch has no ladder at all.
    let (fixed, _) = pause(&app, "fixed", "fixed.txt").await;
    let listed = inbox_entry(&app, "bob-token", &fixed, "the fixed batch", |_| true).await;
    assert!(listed["expiresAt"].is_string(), "{listed}");
    assert_eq!(listed.get("ladder"), None, "{listed}");
}

#[tokio::test]
async fn with_two_servers_on_one_store_each_step_happens_once() {
    if !on_postgres() {
        // One process owns a SQLite store: there is no second server to race.
        return;
    }
    let hook = refusing_receiver().await;
    let one = spawn_ladder(tempfile::tempdir().unwrap(), &hook.url).await;
    let dir = tempfile::tempdir().unwrap();
    // The second server uses the first one's database (the test keeps its URL in the folder).
    let url = database_url(one.data_dir.path()).await.unwrap();
    std::fs::write(dir.path().join("test-database-url"), url).unwrap();
    let two = spawn_ladder(dir, &hook.url).await;

    let (task, _) = pause(&one, "fast", "twice.txt").await;
    // Both servers sweep the batch; the escalation shows on either.
    for app in [&one, &two] {
        inbox_entry(app, "dana-token", &task, "the escalation to dba", |_| true).await;
        inbox_entry(app, "bob-token", &task, "the reminder", |batch| {
            batch["ladder"]["remindedAt"].is_string()
        })
        .await;
    }
    // A later batch escalated too: the first one's steps have been due through many sweeps
    // of both servers by then, and still there is one of each.
    let (slow, _) = pause(&two, "fast", "later.txt").await;
    inbox_entry(
        &one,
        "dana-token",
        &slow,
        "a later batch's escalation",
        |_| true,
    )
    .await;
    let dir = one.data_dir.path();
    assert_eq!(rows(dir, "batch_steps", "remind", &task).await, 1);
    assert_eq!(rows(dir, "batch_steps", "escalate", &task).await, 1);
    assert_eq!(rows(dir, "notifications", "batch.reminded", &task).await, 1);
    assert_eq!(
        rows(dir, "notifications", "batch.escalated", &task).await,
        1
    );
    // Dana decides on the second server what the first one paused.
    let (status, body) = decide_rest(
        &two,
        Some("dana-token"),
        &task,
        json!({"decision_type": "approve"}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
}

#[tokio::test]
async fn a_subagents_call_nested_in_its_parents_batch_is_reminded_by_its_own_agents_ladder() {
    // The boss has no ladder; the demo agent, whose calls wait nested in the boss's batch, has.
    let agents = "[[agents]]\nname = \"boss\"\nagents = [\"default/demo\"]\n\
         [[agents]]\nname = \"demo\"\nremind_after = \"1s\"\n\
         [[agents.tools]]\nkind = \"builtin_files\"\nrequire_approval = [\"write_file\"]\n";
    let app = spawn_with_agents(agents, |_| {}).await;
    let paused = send_stream(
        &app,
        "/api/a2a/default/boss",
        message_v03("delegate default/demo: write nested.txt: hi", None, None),
    )
    .await;
    assert_eq!(
        states(&paused).last().map(String::as_str),
        Some("input-required"),
        "{paused:?}"
    );
    let task = task_id(&paused);
    let reminded = eventually("the boss's batch to be reminded", || async {
        let (_, inbox) = app.get("/api/approvals").await;
        inbox["approvals"]
            .as_array()?
            .iter()
            .find(|batch| batch["taskId"] == task && batch["ladder"]["remindedAt"].is_string())
            .cloned()
    })
    .await;
    assert_eq!(reminded["agent"], "default/boss", "{reminded}");
    assert_eq!(
        rows(app.data_dir.path(), "batch_steps", "remind", &task).await,
        1
    );
}

#[tokio::test]
async fn only_the_servers_own_deadline_ladder_reminds_escalates_or_expires() {
    use signoff_server::agent::approvals::{Actor, Command};
    use signoff_server::agent::runtime::{Channel, Outcome};
    use signoff_server::agent::{AgentError, Decider, Limits, Runtime};

    let dir = tempfile::tempdir().unwrap();
    let store = signoff_server::store::Store::open(&test_database(dir.path()).await)
        .await
        .unwrap();
    let runtime = Runtime::new(store, Vec::new(), Limits::default());
    // A person, through any channel, even the expiry's, may not take the ladder's steps.
    let people = [
        Actor::of(&Decider::subject("carol"), Channel::Rest),
        Actor::of(&Decider::subject("carol"), Channel::Expiry),
    ];
    for actor in &people {
        for command in [
            Command::Remind,
            Command::Escalate,
            Command::Expire {
                expires_at: "2026-12-03T00:00:00Z".to_owned(),
            },
        ] {
            let refused = runtime.apply("some-task", actor, command.clone()).await;
            assert!(
                matches!(refused, Err(AgentError::InvalidParams(ref why)) if why.contains("the server's own")),
                "{actor:?} {command:?}: {refused:?}"
            );
        }
    }
    // The ladder itself: a step of a batch that no longer waits is left alone.
    let swept = runtime
        .apply("some-task", &Actor::deadline(), Command::Remind)
        .await;
    assert!(matches!(swept, Ok(Outcome::Swept)), "{swept:?}");
}
