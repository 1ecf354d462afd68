//! Three `signoff` replicas on one PostgreSQL, as behind a load balancer without sticky
//! sessions: each chat's prompt, follower, decision and state checks go to replicas picked at
//! random, one replica is SIGKILLed mid-run and started again, and at the end every task has
//! ended, every follower saw the log without a gap or a repeat, and no call ran twice.
//!
//! `nginx` runs the README's load balancer (`deploy/nginx.conf`) in front of three replicas.
//! `notify`: a replica killed while it sends notifications, and started again.
//!
//! Needs `SIGNOFF_TEST_POSTGRES_URL` (`scripts/test.sh` provides a throwaway server); it is run
//! by name (`cargo test -p signoff-server --test replicas`), not by a plain `cargo test`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

// Shared by every test crate; each uses part of it.
#[allow(dead_code, unused_imports)]
#[path = "../support/mod.rs"]
mod support;

mod cluster;
mod nginx;
mod notify;
mod quorum;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use sqlx::{Connection, Row};
use tokio::sync::Semaphore;

use cluster::{Cluster, Picker};
use support::*;

const REPLICAS: usize = 3;
const CHATS: usize = 300;
/// Chats in flight at once.
const CONCURRENCY: usize = 24;
/// The replica killed, once this many chats have paused.
const KILL_AFTER: usize = 100;

/// What one chat saw: a streamed answer (`count to 20`, about a second of events) followed
/// live from a second replica, then a write that waits for approval, decided on a third.
struct Chat {
    index: usize,
    /// The counting task and the writing task.
    tasks: [String; 2],
    /// The whole stream of the counting task's message, unless its replica was killed under it.
    prompted: Option<Vec<Value>>,
    /// A follower of the counting task on another replica (its events after the task it
    /// answered with), unless it came after the end or its replica was killed under it.
    followed: Option<Vec<Value>>,
    /// The decision's stream, unless it was made over REST or its replica was killed under it.
    decided: Option<Vec<Value>>,
    /// What the chat did besides: a cancel of the counting task, or a message queued for it.
    variant: Variant,
    /// A queued message's answer said it was taken (not cut by the kill).
    queue_taken: bool,
}

/// How a chat varies, so each way across replicas is exercised: every decision channel, a
/// cancel and a queued message, each sent to a replica other than the one driving the task (as
/// often as chance has it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Variant {
    /// The counting task runs to its end.
    Plain,
    /// The counting task is canceled through a replica picked at random while it streams.
    Cancel,
    /// A message is sent to the counting task through a replica picked at random while it
    /// streams: it waits in the database and joins the conversation before the next turn.
    Queue,
}

/// How the write is decided.
#[derive(Debug, Clone, Copy)]
enum Channel {
    A2a,
    Rest,
    Text,
}

/// The text of the message a `Queue` chat sends to its working task.
const QUEUED: &str = "count to 3";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_replicas_share_one_database_through_a_kill_and_a_restart() {
    let database = create_database().await;
    let data_dir = tempfile::tempdir().unwrap();
    let cluster = Arc::new(Cluster::start(REPLICAS, data_dir.path(), &database).await);

    let paused = Arc::new(AtomicUsize::new(0));
    let killer = {
        let (cluster, paused) = (cluster.clone(), paused.clone());
        tokio::spawn(async move {
            eventually("enough chats to pause before the kill", || async {
                (paused.load(Ordering::SeqCst) >= KILL_AFTER).then_some(())
            })
            .await;
            cluster.kill(0);
            // Down for a moment: its requests fail, the others carry on, its leases lapse.
            tokio::time::sleep(Duration::from_secs(3)).await;
            cluster.restart(0).await;
        })
    };

    let gate = Arc::new(Semaphore::new(CONCURRENCY));
    let mut chats = Vec::new();
    for index in 0..CHATS {
        let (cluster, paused, gate) = (cluster.clone(), paused.clone(), gate.clone());
        chats.push(tokio::spawn(async move {
            let _slot = gate.acquire().await.unwrap();
            run_chat(&cluster, index, &paused).await
        }));
    }
    let mut done = Vec::new();
    for chat in chats {
        done.push(chat.await.unwrap());
    }
    killer.await.unwrap();

    // Every task ended, its log has no hole, and each of its calls has one result.
    let mut db = sqlx::PgConnection::connect(&database).await.unwrap();
    let rows = sqlx::query("SELECT id, state, last_seq FROM tasks")
        .fetch_all(&mut db)
        .await
        .unwrap();
    assert_eq!(rows.len(), 2 * CHATS, "two tasks per chat");
    let mut events_checked = 0;
    let mut double_runs = 0;
    let mut followers = 0;
    let (mut queued, mut canceled) = (0, 0);
    for chat in &done {
        let ends = match chat.variant {
            Variant::Cancel => ["canceled", "completed"],
            Variant::Plain | Variant::Queue => ["completed", "completed"],
        };
        for (task, end) in chat.tasks.iter().zip(ends) {
            let state: String = sqlx::query_scalar("SELECT state FROM tasks WHERE id = $1")
                .bind(task)
                .fetch_one(&mut db)
                .await
                .unwrap();
            assert_eq!(state, end, "chat {}: {task} ended {state}", chat.index);
        }
        let [counting, writing] = &chat.tasks;
        let counted = stored_log(&mut db, counting).await;
        if chat.queue_taken {
            assert!(
                user_texts(&counted).iter().any(|text| text == QUEUED),
                "chat {}: the queued message was delivered into the log",
                chat.index
            );
            queued += 1;
        }
        canceled += usize::from(chat.variant == Variant::Cancel);
        // The message's own stream is the whole log; a follower on another replica, there
        // before the end, gets exactly the log's last events: nothing missed, nothing twice.
        if let Some(prompted) = &chat.prompted {
            assert_eq!(
                prompted, &counted,
                "chat {}: the stream is the log",
                chat.index
            );
            events_checked += prompted.len();
        }
        if let Some(followed) = &chat.followed {
            assert_tail(&counted, followed, chat.index, "follower");
            events_checked += followed.len();
            followers += 1;
        }
        let written = stored_log(&mut db, writing).await;
        let results_per_call = tool_results_per_call(&written);
        assert_eq!(results_per_call.len(), 1, "chat {}: one write", chat.index);
        double_runs += results_per_call.iter().filter(|(_, n)| *n > 1).count();
        let file = data_dir
            .path()
            .join("sandbox")
            .join(format!("notes-{}.txt", chat.index));
        if let Ok(text) = std::fs::read_to_string(&file) {
            assert_eq!(text, format!("hi {}", chat.index));
        }
        if let Some(decided) = &chat.decided {
            assert_tail(&written, decided, chat.index, "decision");
            events_checked += decided.len();
        }
    }
    for row in &rows {
        let (id, last_seq): (String, i64) = (row.get(0), row.get(2));
        let count: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM task_events WHERE task_id = $1")
            .bind(&id)
            .fetch_one(&mut db)
            .await
            .unwrap();
        assert_eq!(count, last_seq, "task {id}'s log has a hole");
    }
    let unfinished_calls: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM calls WHERE status <> 'finished' OR result IS NULL",
    )
    .fetch_one(&mut db)
    .await
    .unwrap();
    assert_eq!(
        unfinished_calls, 0,
        "every call has exactly one recorded end"
    );
    assert_eq!(double_runs, 0, "no call ran twice");
    let receipts = receipts_hold(&mut db, &database).await;
    let report = cluster.report();
    assert!(
        report.unexpected.is_empty(),
        "errors from replicas that were not killed: {:?}",
        report.unexpected
    );
    assert!(
        followers > CHATS / 2,
        "only {followers} followers came in time"
    );
    // The counts are this test's report (scripts/test.sh shows them).
    #[allow(clippy::print_stdout)]
    {
        println!(
            "replicas: {} tasks ended on {REPLICAS} replicas, 1 kill and restart, \
         {events_checked} streamed events checked against the log ({followers} cross-replica \
         followers), {canceled} canceled and {queued} given a queued message through random replicas, \
         decisions over A2A, REST and text, {} requests cut by the kill, 0 double runs, 0 other \
         errors, {receipts} signed receipts in one chain",
            2 * CHATS,
            report.expected
        );
    }
}

/// The receipts the replicas wrote form one chain, without a gap or a fork, that verifies with
/// the served keys: one receipt per decided call. How many there are.
async fn receipts_hold(db: &mut sqlx::PgConnection, database: &str) -> i64 {
    use signoff_server::agent::receipts::{self, ExportFormat, Verified};
    let decided: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM calls WHERE verdict IS NOT NULL")
        .fetch_one(&mut *db)
        .await
        .unwrap();
    let store = signoff_server::store::Store::open(&signoff_server::store::Database::Postgres(
        database.to_owned(),
    ))
    .await
    .unwrap();
    let exported = receipts::export(&store, ExportFormat::Jsonl).await.unwrap();
    store.close().await;
    assert_eq!(
        receipts::verify(&exported, None),
        Verified::Holds { count: decided },
        "the receipts of {decided} decided calls"
    );
    decided
}

/// One chat: a streamed answer followed from a second replica, then a write decided on a
/// third (each replica picked at random, and again after a failure); waits for both ends.
async fn run_chat(cluster: &Cluster, index: usize, paused: &AtomicUsize) -> Chat {
    let mut pick = Picker::new(index as u64);
    let context = uuid::Uuid::new_v4().to_string();
    let variant = match index % 10 {
        3 => Variant::Cancel,
        6 => Variant::Queue,
        _ => Variant::Plain,
    };
    let channel = [Channel::A2a, Channel::Rest, Channel::Text][index % 3];
    let mut queue_taken = false;

    // The answer's stream, and a follower on another replica while it streams.
    let count = message_v03("count to 20", None, Some(&context));
    let (counting, prompted, followed) = loop {
        let base = cluster.pick(&mut pick);
        match cluster
            .follow(&base, message_request("message/stream", count.clone()))
            .await
        {
            Ok((first, rest)) => {
                let task = task_id(&results(std::slice::from_ref(&first)));
                let follower = cluster
                    .follow(
                        &cluster.pick(&mut pick),
                        request("tasks/resubscribe", json!({"id": task})),
                    )
                    .await;
                match variant {
                    Variant::Plain => {}
                    Variant::Cancel => cancel(cluster, &mut pick, &task).await,
                    Variant::Queue => {
                        queue_taken = queue(cluster, &mut pick, &task, &context).await
                    }
                }
                let prompted = rest.await.unwrap().ok().map(|mut events| {
                    events.insert(0, first);
                    results(&events)
                });
                let followed = match follower {
                    // Subscribed before the end: it follows on.
                    Ok((snapshot, rest)) if !is_final_task(&snapshot) => {
                        rest.await.unwrap().ok().map(|events| results(&events))
                    }
                    Ok(_) | Err(()) => None,
                };
                break (task, prompted, followed);
            }
            // Cut before we learnt the task: it may exist all the same.
            Err(()) => {
                if let Some(task) = cluster.task_of_context(&mut pick, &context, 0).await {
                    break (task, None, None);
                }
            }
        }
    };
    let end = if variant == Variant::Cancel {
        "canceled"
    } else {
        "completed"
    };
    cluster
        .wait_for(&mut pick, &counting, |state| state == end)
        .await;

    let write = message_v03(
        &format!("write notes-{index}.txt: hi {index}"),
        None,
        Some(&context),
    );
    let writing = loop {
        let base = cluster.pick(&mut pick);
        match cluster
            .stream(&base, message_request("message/stream", write.clone()))
            .await
        {
            Ok(events) => break task_id(&results(&events)),
            Err(()) => {
                if let Some(task) = cluster.task_of_context(&mut pick, &context, 1).await {
                    break task;
                }
            }
        }
    };
    cluster
        .wait_for(&mut pick, &writing, |state| state == "input-required")
        .await;
    paused.fetch_add(1, Ordering::SeqCst);

    let approve = json!({"decision_type": "approve"});
    let mut decided = None;
    loop {
        let base = cluster.pick(&mut pick);
        // Whether the decision was taken, and its stream (A2A and text only).
        let sent = match channel {
            Channel::Rest => cluster
                .decide_rest(&base, &writing, approve.clone())
                .await
                .map(|status| (status == 200, None)),
            Channel::A2a | Channel::Text => {
                let message = match channel {
                    Channel::Text => message_v03("approve", Some(&writing), Some(&context)),
                    Channel::A2a | Channel::Rest => decision(&writing, &context, approve.clone()),
                };
                cluster
                    .stream(&base, message_request("message/stream", message))
                    .await
                    .map(|events| {
                        let taken = events.iter().all(|event| event.get("error").is_none());
                        (taken, taken.then(|| results(&events)))
                    })
            }
        };
        match sent {
            Ok((true, events)) => {
                decided = events;
                break;
            }
            // Refused: an earlier attempt, cut by the kill, had decided it.
            Ok((false, _)) => {
                let state = cluster.state(&mut pick, &writing).await;
                assert_ne!(state, "input-required", "chat {index}: a decision refused");
                break;
            }
            Err(()) => {
                if cluster.state(&mut pick, &writing).await != "input-required" {
                    break;
                }
            }
        }
    }
    cluster
        .wait_for(&mut pick, &writing, |state| state == "completed")
        .await;
    Chat {
        index,
        tasks: [counting, writing],
        prompted,
        followed,
        decided,
        variant,
        queue_taken,
    }
}

/// Cancels the task through a replica picked at random (again after a failure).
async fn cancel(cluster: &Cluster, pick: &mut Picker, task: &str) {
    loop {
        let base = cluster.pick(pick);
        if let Ok(answer) = cluster.cancel(&base, task).await {
            assert_eq!(
                answer["result"]["status"]["state"], "canceled",
                "the cancel of {task}: {answer}"
            );
            return;
        }
        if cluster.state(pick, task).await == "canceled" {
            return;
        }
    }
}

/// Sends [`QUEUED`] to the working task through a replica picked at random (again after a
/// failure, unless the message was taken).
async fn queue(cluster: &Cluster, pick: &mut Picker, task: &str, context: &str) -> bool {
    let message = message_v03(QUEUED, Some(task), Some(context));
    loop {
        let base = cluster.pick(pick);
        match cluster
            .stream(&base, message_request("message/stream", message.clone()))
            .await
        {
            Ok(events) if events.iter().all(|event| event.get("error").is_none()) => return true,
            // Refused: only because the task ended first (a retry after a cut, or a slow
            // machine, can reach it after its last count), never while it still works.
            Ok(events) => {
                let state = cluster.state(pick, task).await;
                assert_eq!(
                    state, "completed",
                    "a message to the working task {task} was refused: {events:?}"
                );
                return false;
            }
            // Cut by the kill: it may or may not have been taken; send it again while the task
            // works (the log then shows it once or twice).
            Err(()) => {
                if cluster.state(pick, task).await == "completed" {
                    return false;
                }
            }
        }
    }
}

/// The texts of the user messages in a task's log (as status-update messages).
fn user_texts(log: &[Value]) -> Vec<String> {
    log.iter()
        .filter_map(|event| event["status"]["message"].as_object())
        .filter(|message| message["role"] == "user")
        .filter_map(|message| message["parts"].as_array())
        .map(|parts| {
            parts
                .iter()
                .filter_map(|part| part["text"].as_str())
                .collect::<String>()
        })
        .collect()
}

/// Whether a resubscribe's first event is a task that had already ended.
fn is_final_task(event: &Value) -> bool {
    let state = &event["result"]["status"]["state"];
    ["completed", "failed", "canceled", "rejected"]
        .iter()
        .any(|done| state == done)
}

/// A task's stored log, each event as the JSON it was stored as.
async fn stored_log(db: &mut sqlx::PgConnection, task: &str) -> Vec<Value> {
    let texts: Vec<String> =
        sqlx::query_scalar("SELECT event FROM task_events WHERE task_id = $1 ORDER BY seq")
            .bind(task)
            .fetch_all(db)
            .await
            .unwrap();
    texts
        .iter()
        .map(|text| serde_json::from_str(text).unwrap())
        .collect()
}

/// How many results each call id has in `log`.
fn tool_results_per_call(log: &[Value]) -> Vec<(String, usize)> {
    let mut counts: Vec<(String, usize)> = Vec::new();
    for result in data_parts(log, "function_response") {
        let id = result["id"].as_str().unwrap_or_default().to_owned();
        match counts.iter_mut().find(|(known, _)| *known == id) {
            Some((_, n)) => *n += 1,
            None => counts.push((id, 1)),
        }
    }
    counts
}

/// `streamed` must be exactly the last events of `log`, ending with the final one.
fn assert_tail(log: &[Value], streamed: &[Value], chat: usize, what: &str) {
    assert!(
        streamed.len() <= log.len(),
        "chat {chat}: the {what} got more events than the log has"
    );
    let tail = &log[log.len() - streamed.len()..];
    assert_eq!(
        streamed, tail,
        "chat {chat}: the {what}'s events differ from the log's last ones"
    );
    assert_eq!(
        streamed.last().map(|event| event["final"].clone()),
        Some(Value::Bool(true)),
        "chat {chat}: the {what} ends with the final event"
    );
}
