//! A quorum counted across replicas: ten eligible approvers race to approve each of 50 batches
//! through three replicas on one PostgreSQL, under a two-person rule with a quorum of two.
//! Every call runs exactly once, after exactly two distinct approvals; every other approval
//! is told the batch was decided.

use std::sync::Arc;

use serde_json::{json, Value};
use sqlx::{Connection, Row};
use tokio::sync::Semaphore;

use crate::cluster::Picker;
use crate::support::*;

const BATCHES: usize = 50;
const APPROVERS: usize = 10;
/// Batches in flight at once.
const CONCURRENCY: usize = 5;

const AGENTS: &str = "[[agents]]\nname = \"demo\"\napprovers = [\"group:sre\"]\n\
                      requester_may_approve = false\nquorum = 2\n\
                      [[agents.tools]]\nkind = \"builtin_files\"\n\
                      require_approval = [\"write_file\"]\n";

/// The requester's chat on `base`: `write race-N.txt: N`, paused; its task.
async fn pause(client: &reqwest::Client, base: &str, index: usize) -> String {
    let body = message_request(
        "message/stream",
        message_v03(&format!("write race-{index}.txt: {index}"), None, None),
    );
    let response = client
        .post(format!("{base}{DEMO}"))
        .bearer_auth("requester-token")
        .header("accept", "text/event-stream")
        .json(&body)
        .send()
        .await
        .unwrap();
    let events = sse_payloads(&response.bytes().await.unwrap());
    let results = results(&events);
    assert_eq!(
        states(&results).last().map(String::as_str),
        Some("input-required"),
        "{events:?}"
    );
    task_id(&results)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn racing_approvers_on_three_replicas_make_each_quorum_exactly_once() {
    let database = create_database().await;
    let data_dir = tempfile::tempdir().unwrap();
    let agents = data_dir.path().join("agents.toml");
    std::fs::write(&agents, AGENTS).unwrap();
    let mut tokens = vec!["requester-token=requester:sre".to_owned()];
    tokens.extend((0..APPROVERS).map(|n| format!("a{n}-token=approver-{n}:sre")));
    let tokens = tokens.join(",");
    let agents = agents.display().to_string();
    let args = ["--agents", &agents, "--auth", "tokens", "--tokens", &tokens];
    let mut replicas = Vec::new();
    for _ in 0..3 {
        replicas.push(
            start_binary(
                data_dir.path(),
                &args,
                &[("SIGNOFF_DATABASE_URL", &database)],
            )
            .await,
        );
    }
    let bases: Arc<Vec<String>> = Arc::new(replicas.iter().map(|r| r.base.clone()).collect());
    let client = reqwest::Client::new();
    let slots = Arc::new(Semaphore::new(CONCURRENCY));
    let mut batches = Vec::new();
    for index in 0..BATCHES {
        let (client, bases, slots) = (client.clone(), bases.clone(), slots.clone());
        batches.push(tokio::spawn(async move {
            let _slot = slots.acquire().await.unwrap();
            let mut pick = Picker::new(index as u64);
            let base = bases[pick.below(bases.len())].clone();
            let task = pause(&client, &base, index).await;
            // Every approver at once, each through a replica picked at random.
            let approvals = (0..APPROVERS).map(|n| {
                let base = bases[pick.below(bases.len())].clone();
                let (client, task) = (client.clone(), task.clone());
                tokio::spawn(async move {
                    let response = client
                        .post(format!("{base}/api/approvals/{task}"))
                        .bearer_auth(format!("a{n}-token"))
                        .json(&json!({"decision_type": "approve"}))
                        .send()
                        .await
                        .unwrap();
                    let status = response.status().as_u16();
                    let body: Value = response.json().await.unwrap_or(Value::Null);
                    (status, body)
                })
            });
            let mut answers = Vec::new();
            for approval in approvals.collect::<Vec<_>>() {
                answers.push(approval.await.unwrap());
            }
            (index, task, answers)
        }));
    }
    let mut db = sqlx::PgConnection::connect(&database).await.unwrap();
    for batch in batches {
        let (index, task, answers) = batch.await.unwrap();
        let ok: Vec<&(u16, Value)> = answers
            .iter()
            .filter(|(status, _)| *status == 200)
            .collect();
        let refused = answers.iter().filter(|(status, _)| *status == 409).count();
        assert_eq!(
            ok.len(),
            2,
            "batch {index}: two approvals count: {answers:?}"
        );
        assert_eq!(
            refused,
            APPROVERS - 2,
            "batch {index}: the rest are late: {answers:?}"
        );
        // One of the two left the call at one of two; the other ran it.
        let partial = ok
            .iter()
            .filter(|(_, body)| body["quorum"].is_array())
            .count();
        assert_eq!(partial, 1, "batch {index}: {answers:?}");
        // The call ran once, after two distinct approvals of its arguments.
        let calls =
            sqlx::query("SELECT status, started_at IS NOT NULL FROM calls WHERE task_id = $1")
                .bind(&task)
                .fetch_all(&mut db)
                .await
                .unwrap();
        assert_eq!(calls.len(), 1, "batch {index}");
        let status: String = calls[0].get(0);
        assert!(
            status == "finished" || status == "started",
            "batch {index}: {status}"
        );
        let voters: Vec<String> = sqlx::query_scalar(
            "SELECT user_id FROM call_votes WHERE task_id = $1 AND verdict = 'approve' ORDER BY id",
        )
        .bind(&task)
        .fetch_all(&mut db)
        .await
        .unwrap();
        assert_eq!(voters.len(), 2, "batch {index}: {voters:?}");
        assert_ne!(voters[0], voters[1], "batch {index}: distinct approvers");
        assert!(!voters.contains(&"requester".to_owned()));
    }
    // Each file written once, with its content; each task's log holds one result.
    for index in 0..BATCHES {
        let written =
            std::fs::read_to_string(data_dir.path().join(format!("sandbox/race-{index}.txt")));
        assert_eq!(written.ok(), Some(index.to_string()), "race-{index}.txt");
    }
    let results: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM calls WHERE result IS NOT NULL")
        .fetch_one(&mut db)
        .await
        .unwrap();
    assert_eq!(results, BATCHES as i64, "each call answered once");
    drop(replicas);
}
