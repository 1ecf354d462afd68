//! The store's own guarantees, on the backend under test (SQLite, or PostgreSQL with
//! `SIGNOFF_TEST_BACKEND=postgres`): each call starts at most once, whoever tries, and a
//! runner writes only while its replica holds the task's lease.

use serde_json::json;
use signoff_protocol::TaskState;
use signoff_server::store::{now, CallUpdate, Commit, NewCall, Store, StoreError, TaskRow, LEASE};

use crate::support::*;

fn task(id: &str) -> TaskRow {
    let now = now();
    TaskRow {
        id: id.to_owned(),
        context_id: format!("context-of-{id}"),
        user_id: "local".into(),
        agent: "default/demo".into(),
        state: TaskState::Working,
        transcript: "[]".into(),
        last_seq: 0,
        created_at: now.clone(),
        updated_at: now,
    }
}

fn started(call_id: &str) -> Commit {
    Commit {
        call_updates: vec![CallUpdate::Started {
            call_id: call_id.to_owned(),
            run_args: json!({"path": "a.txt"}),
            run_args_sha256: "sha".into(),
        }],
        ..Commit::default()
    }
}

#[tokio::test]
async fn a_call_starts_once_so_a_runner_that_lost_its_task_cannot_run_it_again() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&test_database(dir.path()).await).await.unwrap();
    store
        .create_task(&task("t-1"), "a chat", Vec::new())
        .await
        .unwrap();
    let call = NewCall {
        call_id: "call_1".into(),
        name: "read_file".into(),
        source: "builtin".into(),
        args: json!({"path": "a.txt"}),
        args_sha256: "sha".into(),
        held: false,
        auto: None,
    };
    let recorded = Commit {
        new_calls: vec![call],
        ..Commit::default()
    };
    store.commit("t-1", recorded).await.unwrap();

    // The first runner starts it; a second (another replica after a lapsed lease, or a stale
    // runner) is refused and nothing of its step is written.
    store.commit("t-1", started("call_1")).await.unwrap();
    let again = store.commit("t-1", started("call_1")).await;
    assert!(
        matches!(again, Err(StoreError::Conflict(_))),
        "a second start: {again:?}"
    );
    let calls = store.calls("t-1").await.unwrap();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].status.as_str(), "started");
    // A call that was never free to run (held for a decision) does not start either.
    let held = NewCall {
        call_id: "call_2".into(),
        name: "write_file".into(),
        source: "builtin".into(),
        args: json!({"path": "b.txt"}),
        args_sha256: "sha".into(),
        held: true,
        auto: None,
    };
    let recorded = Commit {
        new_calls: vec![held],
        ..Commit::default()
    };
    store.commit("t-1", recorded).await.unwrap();
    assert!(matches!(
        store.commit("t-1", started("call_2")).await,
        Err(StoreError::Conflict(_))
    ));
    store.close().await;
}

#[tokio::test]
async fn a_runners_step_is_written_only_while_its_replica_holds_the_lease() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&test_database(dir.path()).await).await.unwrap();
    store
        .create_task(&task("t-2"), "a chat", Vec::new())
        .await
        .unwrap();
    let step = || Commit {
        transcript: Some("[\"a step\"]".into()),
        leased: true,
        ..Commit::default()
    };
    let without_lease = store.commit("t-2", step()).await;
    if on_postgres() {
        // Shared: nobody leased it to this replica, so its runner's step is refused.
        assert!(
            matches!(without_lease, Err(StoreError::Conflict(_))),
            "{without_lease:?}"
        );
        assert!(store.acquire_lease("t-2", LEASE).await.unwrap());
        store.commit("t-2", step()).await.unwrap();
        // Given up (it lapses at once): refused again.
        store.release_lease("t-2").await.unwrap();
        assert!(matches!(
            store.commit("t-2", step()).await,
            Err(StoreError::Conflict(_))
        ));
    } else {
        // One process owns an SQLite file: there are no leases to hold.
        without_lease.unwrap();
    }
    // A write that is not the runner's (a cancel) needs no lease.
    let cancel = Commit {
        state: Some(TaskState::Canceled),
        ..Commit::default()
    };
    store.commit("t-2", cancel).await.unwrap();
    store.close().await;
}
