//! The store's own guarantees, on the backend under test (SQLite, or PostgreSQL with
//! `SIGNOFF_TEST_BACKEND=postgres`): each call starts at most once, whoever tries, a runner
//! writes only while its replica holds the task's lease, and an approval event wakes the
//! approvals streams of its own user only, here or on another replica.

use serde_json::json;
use signoff_protocol::TaskState;
use signoff_server::store::{
    BatchState, CallUpdate, Channel, Commit, DecisionWrite, NewCall, Store, StoreError, TaskRow,
    LEASE,
};

use crate::support::*;

fn task(id: &str) -> TaskRow {
    TaskRow::new(
        id.to_owned(),
        format!("context-of-{id}"),
        "local".into(),
        "default/demo".into(),
        TaskState::Working,
        "[]".into(),
    )
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
        .create_task(&task("t-1"), "a chat", Vec::new(), None)
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
        why: None,
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
        why: None,
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
        .create_task(&task("t-2"), "a chat", Vec::new(), None)
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

/// `task(id)` of `user`, in a session of its own.
fn task_of(id: &str, user: &str) -> TaskRow {
    TaskRow {
        user_id: user.to_owned(),
        ..task(id)
    }
}

/// A step that opens a batch on the task (as a pause does).
fn pause() -> Commit {
    Commit {
        new_batch: Some(json!([])),
        state: Some(TaskState::InputRequired),
        ..Commit::default()
    }
}

/// The write that decides the task's pending batch.
async fn decide(store: &Store, task_id: &str, user: &str) {
    let batch = store.pending_batch(task_id).await.unwrap().unwrap();
    let write = DecisionWrite {
        batch_id: batch.id,
        user_id: user.to_owned(),
        decider_auth: Some("none".into()),
        channel: Channel::Rest,
        decision: json!({"decision_type": "approve"}),
        summary: "approve".into(),
        verdicts: Vec::new(),
        batch_state: BatchState::Decided,
        task_state: TaskState::Working,
        events: Vec::new(),
        votes: Vec::new(),
        uses_link: None,
        notifications: Vec::new(),
        push: false,
    };
    store.decide(task_id, write).await.unwrap();
}

#[tokio::test]
async fn an_approval_event_wakes_the_streams_of_its_own_user_only() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&test_database(dir.path()).await).await.unwrap();
    let mut alice = store.approval_wakes("alice", 16).unwrap();
    let mut bob = store.approval_wakes("bob", 16).unwrap();
    for (id, user) in [("t-alice", "alice"), ("t-bob", "bob")] {
        store
            .create_task(&task_of(id, user), "a chat", Vec::new(), None)
            .await
            .unwrap();
    }
    // Bob's batch starts and stops waiting: his stream wakes each time, Alice's never.
    store.commit("t-bob", pause()).await.unwrap();
    assert!(bob.has_changed().unwrap(), "bob's pause wakes bob");
    bob.borrow_and_update();
    decide(&store, "t-bob", "bob").await;
    assert!(bob.has_changed().unwrap(), "bob's decision wakes bob");
    bob.borrow_and_update();
    assert!(!alice.has_changed().unwrap(), "bob's events woke alice");
    // Alice's own pause wakes hers only.
    store.commit("t-alice", pause()).await.unwrap();
    assert!(alice.has_changed().unwrap(), "alice's pause wakes alice");
    assert!(!bob.has_changed().unwrap(), "alice's pause woke bob");
    // So does the deletion of her chat while it waits.
    alice.borrow_and_update();
    store.delete_session("context-of-t-alice").await.unwrap();
    assert!(alice.has_changed().unwrap(), "a deleted chat wakes alice");
    assert!(!bob.has_changed().unwrap(), "alice's deleted chat woke bob");
    store.close().await;
}

#[tokio::test]
async fn another_replicas_approval_event_wakes_the_streams_of_its_own_user_only() {
    // Two stores on one PostgreSQL database are two replicas; an SQLite file has one process.
    if !on_postgres() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let here = Store::open(&test_database(dir.path()).await).await.unwrap();
    let there = Store::open(&test_database(dir.path()).await).await.unwrap();
    let _changes = here.listen().await.unwrap().unwrap();
    let users = ["alice", "bob", "carol"];
    let mut wakes: Vec<_> = users
        .iter()
        .map(|user| here.approval_wakes(user, 16).unwrap())
        .collect();
    for user in users {
        let task = task_of(&format!("t-{user}"), user);
        there
            .create_task(&task, "a chat", Vec::new(), None)
            .await
            .unwrap();
    }
    // Each pauses on the other replica, Carol last: notices come in commit order, so once
    // Carol's has woken her stream, the others' have been heard too.
    for user in users {
        there.commit(&format!("t-{user}"), pause()).await.unwrap();
    }
    within("carol's stream to wake", wakes[2].changed())
        .await
        .unwrap();
    for (user, wake) in users.iter().zip(wakes.iter_mut()) {
        assert_eq!(
            *wake.borrow_and_update(),
            1,
            "{user} woken by her own event alone"
        );
    }
    // Not `close`d: that would wait for the listening connection, which is `here`'s until the
    // process ends.
    there.close().await;
}
