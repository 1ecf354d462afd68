//! Bench: what a signed receipt costs a decision. Pauses a task on one held call, then on two
//! (a commit that opens the batch), and approves them (a decision write), one task at a time,
//! on a store that signs receipts (the server's case: one receipt per call appended, chained
//! and signed in the decision's transaction) and on one without a receipt key (no receipts),
//! interleaved so both see the same machine; the median and p90 of the pause, the approval and
//! both together, and the difference per approval. Then the Ed25519 signature of one receipt
//! alone, which the store cannot make cheaper. The whole cost of a receipt is in the
//! decision's store write, so the store's figures are the server's, without HTTP and the
//! runner around them. On
//! SQLite, and on PostgreSQL too when `SIGNOFF_TEST_POSTGRES_URL` names one (a fresh database
//! each, dropped at the end). Run with `cargo bench -p signoff-server --bench receipts`
//! (`-- --rounds N` to change the count).

#![allow(clippy::print_stdout, clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Instant;

use serde_json::json;
use signoff_protocol::TaskState;
use signoff_server::store::{
    BatchState, CallStatus, CallVerdict, Channel, Commit, Database, DecisionWrite, NewCall,
    NewEvent, Seal, Store, TaskRow, Verdict,
};
use sqlx::{Connection, Executor};

const ROUNDS: usize = 2000;
const WARM_UP: usize = 100;

fn main() {
    let mut args = std::env::args().skip(1);
    let mut rounds = ROUNDS;
    while let Some(arg) = args.next() {
        if arg == "--rounds" {
            rounds = args.next().and_then(|n| n.parse().ok()).unwrap();
        }
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let admin = std::env::var("SIGNOFF_TEST_POSTGRES_URL").ok();
        for calls in [1, 2] {
            bench(None, rounds, calls).await;
            if let Some(admin) = &admin {
                bench(Some(admin), rounds, calls).await;
            }
        }
    });
}

fn event(text: &str) -> NewEvent {
    NewEvent {
        event: Arc::from(json!({ "text": text }).to_string()),
        is_final: false,
    }
}

fn held(call_id: &str, tool: &str) -> NewCall {
    let args = json!({"path": format!("{call_id}.txt"), "content": "hi"});
    NewCall {
        call_id: call_id.to_owned(),
        name: tool.to_owned(),
        source: "builtin".into(),
        args_sha256: signoff_server::agent::pins::digest(&args),
        args,
        held: true,
        auto: None,
        why: None,
    }
}

const CALLS: [(&str, &str); 2] = [("call_1", "write_file"), ("call_2", "delete_file")];

/// Pauses a new task on the first `calls` of [`CALLS`], held; the milliseconds and the batch's
/// id.
async fn pause(store: &Store, id: &str, calls: usize) -> (f64, i64) {
    let task = TaskRow {
        id: id.to_owned(),
        context_id: format!("c-{id}"),
        user_id: "alice".into(),
        agent: "default/demo".into(),
        state: TaskState::Working,
        transcript: "[]".into(),
        last_seq: 0,
        created_at: signoff_server::store::now(),
        updated_at: signoff_server::store::now(),
        requester_groups: Vec::new(),
    };
    store
        .create_task(&task, "bench", Vec::new(), None)
        .await
        .unwrap();
    let started = Instant::now();
    let commit = Commit {
        events: vec![event("paused")],
        state: Some(TaskState::InputRequired),
        new_calls: CALLS[..calls]
            .iter()
            .map(|(call_id, tool)| held(call_id, tool))
            .collect(),
        new_batch: Some(json!(CALLS[..calls]
            .iter()
            .map(|(call_id, _)| json!({ "id": call_id }))
            .collect::<Vec<_>>())),
        ..Commit::default()
    };
    store.commit(id, commit).await.unwrap();
    let ms = started.elapsed().as_secs_f64() * 1000.0;
    (ms, store.pending_batch(id).await.unwrap().unwrap().id)
}

/// Approves every call of the batch; the milliseconds.
async fn approve(store: &Store, id: &str, batch_id: i64, calls: usize) -> f64 {
    let write = DecisionWrite {
        batch_id,
        user_id: "alice".into(),
        decider_auth: Some("tokens".into()),
        channel: Channel::Rest,
        decision: json!({"decision_type": "approve"}),
        summary: "Approved".into(),
        verdicts: CALLS[..calls]
            .iter()
            .map(|(call_id, _)| CallVerdict {
                call_id: (*call_id).to_owned(),
                status: CallStatus::Approved,
                verdict: Verdict::Approve,
                reason: None,
                run_args: None,
                run_args_sha256: None,
            })
            .collect(),
        batch_state: BatchState::Decided,
        task_state: TaskState::Working,
        events: vec![event("approved")],
        votes: Vec::new(),
        uses_link: None,
        notifications: Vec::new(),
        push: false,
    };
    let started = Instant::now();
    store.decide(id, write).await.unwrap();
    started.elapsed().as_secs_f64() * 1000.0
}

async fn open(dir: &std::path::Path, admin: Option<&str>) -> (Store, Option<String>) {
    std::fs::create_dir_all(dir).unwrap();
    let (database, name) = match admin {
        None => (Database::Sqlite(dir.to_owned()), None),
        Some(admin) => {
            let name = format!("signoff_bench_{}", uuid::Uuid::new_v4().simple());
            let mut connection = sqlx::PgConnection::connect(admin).await.unwrap();
            connection
                .execute(format!("CREATE DATABASE {name}").as_str())
                .await
                .unwrap();
            let (server, _) = admin.split('?').next().unwrap().rsplit_once('/').unwrap();
            (Database::Postgres(format!("{server}/{name}")), Some(name))
        }
    };
    (Store::open(&database).await.unwrap(), name)
}

fn quantile(samples: &mut [f64], q: f64) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples[((samples.len() - 1) as f64 * q).round() as usize]
}

async fn bench(admin: Option<&str>, rounds: usize, calls: usize) {
    let backend = if admin.is_some() {
        "PostgreSQL"
    } else {
        "SQLite"
    };
    let work = tempfile::tempdir().unwrap();
    let (signing, signing_db) = open(&work.path().join("with"), admin).await;
    let seal = signoff_server::agent::receipts::install(&signing, &work.path().join("audit-key"))
        .await
        .unwrap();
    let (plain, plain_db) = open(&work.path().join("without"), admin).await;
    // [pause, approve, both] for the store without receipts, then the one with.
    let mut samples = [
        [Vec::new(), Vec::new(), Vec::new()],
        [Vec::new(), Vec::new(), Vec::new()],
    ];
    for round in 0..WARM_UP + rounds {
        for (which, store) in [&plain, &signing].into_iter().enumerate() {
            let id = format!("t-{round}");
            let (paused, batch) = pause(store, &id, calls).await;
            let approved = approve(store, &id, batch, calls).await;
            if round >= WARM_UP {
                samples[which][0].push(paused);
                samples[which][1].push(approved);
                samples[which][2].push(paused + approved);
            }
        }
    }
    let stored = signing.receipts_after(0, i64::MAX).await.unwrap();
    let receipts = stored.len();
    assert_eq!(receipts, calls * (WARM_UP + rounds), "a receipt per call");
    assert!(plain.receipts_after(0, 1).await.unwrap().is_empty());
    println!(
        "receipts on {backend}: {rounds} tasks paused on {calls} held call(s) and approved, one \
         at a time, on each store ({receipts} receipts signed)"
    );
    println!(
        "  {:<34} {:>12} {:>12} {:>12}",
        "", "median ms", "p90 ms", ""
    );
    let mut medians = [[0.0; 3]; 2];
    for (which, name) in ["without receipts", "with receipts"]
        .into_iter()
        .enumerate()
    {
        for (part, label) in ["pause", "approve", "pause + approve"]
            .into_iter()
            .enumerate()
        {
            let median = quantile(&mut samples[which][part], 0.5);
            let p90 = quantile(&mut samples[which][part], 0.9);
            medians[which][part] = median;
            println!(
                "  {:<34} {median:>12.3} {p90:>12.3}",
                format!("{name}: {label}")
            );
        }
    }
    println!(
        "  the receipts' cost per approval of {calls} call(s) (median difference): approve \
         {:+.3} ms, pause + approve {:+.3} ms",
        medians[1][1] - medians[0][1],
        medians[1][2] - medians[0][2]
    );
    if admin.is_none() {
        let body = stored[0].body.as_bytes();
        let mut signing_ms: Vec<f64> = (0..rounds)
            .map(|_| {
                let started = Instant::now();
                std::hint::black_box(seal.sign(std::hint::black_box(body)));
                started.elapsed().as_secs_f64() * 1000.0
            })
            .collect();
        println!(
            "  of which the Ed25519 signature of one receipt ({} bytes) alone: median {:.3} ms",
            body.len(),
            quantile(&mut signing_ms, 0.5)
        );
    }
    signing.close().await;
    plain.close().await;
    if let Some(admin) = admin {
        let mut connection = sqlx::PgConnection::connect(admin).await.unwrap();
        for name in [signing_db, plain_db].into_iter().flatten() {
            let _ = connection
                .execute(format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)").as_str())
                .await;
        }
    }
}
