//! Notifications through a replica's death: two replicas with the same webhook channel, a
//! receiver that is slow for one of them and refuses its first few requests, chats paused on
//! both; the slow replica is SIGKILLed while it holds claimed notifications in flight and is
//! started again. Every batch's notification arrives, each retry with the same `webhook-id`,
//! the ones cut by the kill are sent again once their lease lapses, and the outbox drains.

use std::collections::{BTreeMap, HashSet};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::Query;
use axum::http::{HeaderMap, StatusCode};
use serde_json::Value;

use crate::support::*;

const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
/// Chats paused before the kill, and after the restart.
const BEFORE: usize = 30;
const AFTER: usize = 10;
/// The receiver's first requests answered 500 (whichever replica sent them).
const REFUSED: usize = 4;
/// How long the receiver takes to answer replica 0: its deliveries are in flight when it dies.
const SLOW: Duration = Duration::from_millis(1500);

/// One request the receiver got.
#[derive(Debug, Clone)]
struct Arrival {
    /// The `replica` the channel's URL names (each replica's notifications file names its own).
    replica: String,
    id: String,
    batch_id: i64,
    kind: String,
    /// Answered 2xx.
    taken: bool,
    /// Its answer was sent (not cut by the sender's death).
    answered: bool,
}

#[derive(Default)]
struct Seen {
    arrivals: Vec<Arrival>,
}

async fn receiver() -> (String, Arc<Mutex<Seen>>) {
    let seen: Arc<Mutex<Seen>> = Arc::default();
    let got = seen.clone();
    let app = axum::Router::new().route(
        "/hook",
        axum::routing::post(
            move |Query(query): Query<BTreeMap<String, String>>,
                  headers: HeaderMap,
                  body: String| {
                let got = got.clone();
                async move {
                    let body: Value = serde_json::from_str(&body).unwrap();
                    let replica = query.get("replica").cloned().unwrap_or_default();
                    let index = {
                        let mut got = got.lock().unwrap();
                        got.arrivals.push(Arrival {
                            replica: replica.clone(),
                            id: headers["webhook-id"].to_str().unwrap().to_owned(),
                            batch_id: body["data"]["batch_id"].as_i64().unwrap(),
                            kind: body["type"].as_str().unwrap().to_owned(),
                            taken: false,
                            answered: false,
                        });
                        got.arrivals.len() - 1
                    };
                    if replica == "0" {
                        tokio::time::sleep(SLOW).await;
                    }
                    let taken = index >= REFUSED;
                    let mut got = got.lock().unwrap();
                    got.arrivals[index].taken = taken;
                    got.arrivals[index].answered = true;
                    if taken {
                        StatusCode::NO_CONTENT
                    } else {
                        StatusCode::INTERNAL_SERVER_ERROR
                    }
                }
            },
        ),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, seen)
}

/// Replica `index` of the two, on `database`, its channel's URL naming it.
async fn replica(data_dir: &Path, database: &str, hook: &str, index: usize) -> Binary {
    let file = data_dir.join(format!("notifications-{index}.toml"));
    std::fs::write(
        &file,
        format!(
            "[delivery]\nretry_base = \"100ms\"\nretry_max = \"500ms\"\nretry_for = \"1h\"\n\
             poll = \"100ms\"\ntimeout = \"3s\"\n\n[[channels]]\nname = \"hook\"\n\
             kind = \"webhook\"\nurl = \"{hook}?replica={index}\"\nsecret_file = \"{}\"\n",
            data_dir.join("hook.secret").display()
        ),
    )
    .unwrap();
    start_binary(
        data_dir,
        &[
            "--notifications",
            file.to_str().unwrap(),
            "--public-url",
            "https://signoff.example.com",
        ],
        &[("SIGNOFF_DATABASE_URL", database)],
    )
    .await
}

/// Pauses one chat on `base`.
async fn pause(client: &reqwest::Client, base: &str) {
    let body = message_request(
        "message/send",
        message_v03("write notes.txt: hi", None, None),
    );
    let answer: Value = client
        .post(format!("{base}{DEMO}"))
        .json(&body)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        answer["result"]["status"]["state"], "input-required",
        "{answer}"
    );
}

async fn queued(client: &reqwest::Client, base: &str) -> Option<String> {
    let text = client
        .get(format!("{base}/metrics"))
        .send()
        .await
        .ok()?
        .text()
        .await
        .ok()?;
    text.lines()
        .find(|line| line.starts_with("signoff_notifications_queued "))
        .map(str::to_owned)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn notifications_claimed_by_a_killed_replica_are_sent_again_under_the_same_webhook_id() {
    let database = create_database().await;
    let data_dir = tempfile::tempdir().unwrap();
    std::fs::write(data_dir.path().join("hook.secret"), SECRET).unwrap();
    let (hook, seen) = receiver().await;
    let mut slow = Some(replica(data_dir.path(), &database, &hook, 0).await);
    let other = replica(data_dir.path(), &database, &hook, 1).await;
    let client = reqwest::Client::new();

    // Paused on the slow replica: its sender is woken by each of its commits, so it claims
    // some (the other replica polls and claims the rest).
    let base = slow.as_ref().unwrap().base.clone();
    for _ in 0..BEFORE {
        pause(&client, &base).await;
    }
    eventually("the slow replica's deliveries in flight", || async {
        let seen = seen.lock().unwrap();
        (seen.arrivals.iter())
            .any(|arrival| arrival.replica == "0" && !arrival.answered)
            .then_some(())
    })
    .await;
    let db = sqlx::PgPool::connect(&database).await.unwrap();
    let leased: i64 =
        sqlx::query_scalar("SELECT COUNT(*) FROM notifications WHERE lease_owner IS NOT NULL")
            .fetch_one(&db)
            .await
            .unwrap();
    assert!(leased >= 1, "the slow replica holds its claims");
    slow.take().unwrap().kill();
    // Not answered when it died: the replica never learned they arrived, so their rows stay.
    let (cut, killed_at): (HashSet<String>, usize) = {
        let seen = seen.lock().unwrap();
        let cut = (seen.arrivals.iter())
            .filter(|arrival| arrival.replica == "0" && !arrival.answered)
            .map(|arrival| arrival.id.clone())
            .collect();
        (cut, seen.arrivals.len())
    };
    assert!(!cut.is_empty(), "the kill cut deliveries in flight");

    // Started again; more chats paused on it.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let restarted = replica(data_dir.path(), &database, &hook, 0).await;
    for _ in 0..AFTER {
        pause(&client, &restarted.base).await;
    }

    // The outbox drains: each cut row once its lease lapsed, each refused row after its backoff.
    eventually("the outbox drained", || async {
        let left: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM notifications")
            .fetch_one(&db)
            .await
            .ok()?;
        (left == 0).then_some(())
    })
    .await;
    assert_eq!(
        queued(&client, &restarted.base).await.as_deref(),
        Some("signoff_notifications_queued 0")
    );
    assert_eq!(
        queued(&client, &other.base).await.as_deref(),
        Some("signoff_notifications_queued 0")
    );

    let batches: Vec<i64> = sqlx::query_scalar("SELECT id FROM batches ORDER BY id")
        .fetch_all(&db)
        .await
        .unwrap();
    assert_eq!(batches.len(), BEFORE + AFTER);
    let arrivals = seen.lock().unwrap().arrivals.clone();
    let mut ids_of: BTreeMap<i64, HashSet<&str>> = BTreeMap::new();
    for arrival in &arrivals {
        assert_eq!(arrival.kind, "batch.pending");
        ids_of
            .entry(arrival.batch_id)
            .or_default()
            .insert(&arrival.id);
    }
    for batch in &batches {
        let ids = ids_of.get(batch).map(HashSet::len).unwrap_or_default();
        assert_eq!(ids, 1, "batch {batch}: one webhook-id on every attempt");
        let id = ids_of[batch].iter().next().unwrap();
        assert!(
            arrivals.iter().any(|a| a.id == *id && a.taken),
            "batch {batch}'s notification was taken"
        );
    }
    assert_eq!(
        ids_of.len(),
        batches.len(),
        "no notification of another batch"
    );
    for id in &cut {
        let again = arrivals[killed_at..].iter().any(|a| a.id == *id && a.taken);
        assert!(again, "{id}, cut by the kill, was sent again and taken");
    }
    for refused in arrivals[..REFUSED].iter() {
        assert!(
            arrivals.iter().any(|a| a.id == refused.id && a.taken),
            "{} was refused, then retried and taken",
            refused.id
        );
    }
    let repeats = arrivals.len() - batches.len();
    #[allow(clippy::print_stdout)]
    {
        println!(
            "notifications: {} batches on 2 replicas, one killed with {} deliveries in flight \
             and restarted; {} requests to the receiver ({repeats} repeats under the same \
             webhook-id: {REFUSED} refused, the cut ones after their lease), the outbox drained",
            batches.len(),
            cut.len(),
            arrivals.len()
        );
    }
    drop(other);
    drop(restarted);
}
