//! The store's contract, the same tests on both backends in one process: SQLite always, and
//! PostgreSQL too when `SIGNOFF_TEST_POSTGRES_URL` names a server (whatever
//! `SIGNOFF_TEST_BACKEND` says). A backend whose statements diverge from the other's fails here
//! under its own name: the commit (events numbered on, the state moved, the guard, the queue),
//! the compare-and-set on a batch, the conflicts and their reasons, the lease fence, and the
//! round trip of every column of a task and of a call.

use std::sync::Arc;

use serde_json::json;
use signoff_protocol::TaskState;
use signoff_server::store::{
    now_ms, AttemptFailed, AutoDecision, BatchState, CallStatus, CallUpdate, CallVerdict, Channel,
    Commit, CountWindows, Database, DecisionLinkRow, DecisionWrite, GrantInsert, GrantRow,
    GrantScope, Guard, NewCall, NewEvent, NewNotification, NotificationKind, OutboxDepth,
    PersonRow, PushConfigRow, SettledCallRow, Store, StoreError, SubagentLink, TaskRow, ToolPinRow,
    Verdict, LEASE, PUSH_CHANNEL,
};

use crate::support::create_database;

/// One backend under test: its name (for failure messages), the store, and its data folder.
struct Backend {
    name: &'static str,
    store: Store,
    _dir: tempfile::TempDir,
}

/// A fresh store on each backend this run can reach.
async fn backends() -> Vec<Backend> {
    let dir = tempfile::tempdir().unwrap();
    let sqlite = Store::open(&Database::Sqlite(dir.path().to_owned()))
        .await
        .unwrap();
    let mut backends = vec![Backend {
        name: "sqlite",
        store: sqlite,
        _dir: dir,
    }];
    if std::env::var("SIGNOFF_TEST_POSTGRES_URL").is_ok_and(|url| !url.is_empty()) {
        let dir = tempfile::tempdir().unwrap();
        let url = create_database().await;
        let postgres = Store::open(&Database::Postgres(url)).await.unwrap();
        backends.push(Backend {
            name: "postgres",
            store: postgres,
            _dir: dir,
        });
    }
    backends
}

/// A task with a distinct value in every column, so a column read from another (or not
/// written) shows. Spelt out field by field: a new column fails to compile here until this test
/// gives it a value.
fn task(id: &str) -> TaskRow {
    TaskRow {
        id: id.to_owned(),
        context_id: format!("context-of-{id}"),
        user_id: format!("user-of-{id}"),
        agent: "team/agent-of-test".into(),
        state: TaskState::Working,
        transcript: format!("[{{\"role\":\"user\",\"text\":\"{id}\"}}]"),
        last_seq: 0,
        created_at: "2026-01-02T03:04:05.006Z".into(),
        updated_at: "2026-01-02T03:04:05.007Z".into(),
        requester_groups: vec![format!("group-of-{id}"), "sre".into()],
    }
}

fn event(text: &str, is_final: bool) -> NewEvent {
    NewEvent {
        event: Arc::from(json!({ "text": text }).to_string()),
        is_final,
    }
}

fn call(call_id: &str, held: bool, auto: Option<AutoDecision>) -> NewCall {
    NewCall {
        call_id: call_id.to_owned(),
        name: format!("tool_{call_id}"),
        source: format!("source_{call_id}"),
        args: json!({ "path": call_id, "n": 1 }),
        args_sha256: format!("sha_{call_id}"),
        held,
        auto,
        why: Some(json!({"by": "rule", "id": format!("rule-of-{call_id}")})),
    }
}

#[tokio::test]
async fn a_task_row_round_trips_every_column_and_a_session_is_its_owners() {
    for Backend { name, store, .. } in backends().await {
        let row = task("t-row");
        let events = vec![event("submitted", false), event("working", false)];
        assert!(store
            .create_task(&row, "a title", events, None)
            .await
            .unwrap());
        let stored = store.task("t-row").await.unwrap().unwrap();
        assert_eq!(
            stored,
            TaskRow {
                last_seq: 2,
                ..row.clone()
            },
            "{name}"
        );
        let session = store.session(&row.context_id).await.unwrap().unwrap();
        assert_eq!(
            (&*session.user_id, &*session.agent, &*session.title),
            (&*row.user_id, &*row.agent, "a title"),
            "{name}"
        );
        // A second task in the session creates no session; another user's is refused.
        let second = TaskRow {
            id: "t-row-2".into(),
            ..row.clone()
        };
        assert!(!store
            .create_task(&second, "x", Vec::new(), None)
            .await
            .unwrap());
        let stranger = TaskRow {
            id: "t-row-3".into(),
            user_id: "someone else".into(),
            ..row.clone()
        };
        match store.create_task(&stranger, "x", Vec::new(), None).await {
            Err(StoreError::Conflict(reason)) => assert_eq!(
                reason, "the session belongs to another user or agent",
                "{name}"
            ),
            other => panic!("{name}: {other:?}"),
        }
        assert!(store.task("t-row-3").await.unwrap().is_none(), "{name}");
        store.close().await;
    }
}

#[tokio::test]
async fn a_commit_numbers_its_events_on_and_moves_the_task() {
    for Backend { name, store, .. } in backends().await {
        store
            .create_task(&task("t-log"), "chat", vec![event("first", false)], None)
            .await
            .unwrap();
        // A plain step (on PostgreSQL, its one-statement path).
        let plain = Commit {
            events: vec![event("a", false), event("b", false)],
            state: Some(TaskState::InputRequired),
            transcript: Some("[\"plain\"]".into()),
            ..Commit::default()
        };
        assert_eq!(store.commit("t-log", plain).await.unwrap(), 3, "{name}");
        // A step with calls (on PostgreSQL, a transaction), then one that ends the task.
        let with_call = Commit {
            events: vec![event("c", false)],
            new_calls: vec![call("call_1", false, None)],
            ..Commit::default()
        };
        assert_eq!(store.commit("t-log", with_call).await.unwrap(), 4, "{name}");
        let nothing = Commit::default();
        assert_eq!(store.commit("t-log", nothing).await.unwrap(), 4, "{name}");
        let done = Commit {
            events: vec![event("d", true)],
            state: Some(TaskState::Completed),
            ..Commit::default()
        };
        assert_eq!(store.commit("t-log", done).await.unwrap(), 5, "{name}");

        let events = store.events("t-log", 0, None, 100).await.unwrap();
        let seen: Vec<(i64, String, bool)> = events
            .iter()
            .map(|row| (row.seq, row.event.clone(), row.is_final))
            .collect();
        let expected: Vec<(i64, String, bool)> = ["first", "a", "b", "c", "d"]
            .iter()
            .enumerate()
            .map(|(index, text)| {
                let text = json!({ "text": text }).to_string();
                (index as i64 + 1, text, index == 4)
            })
            .collect();
        assert_eq!(seen, expected, "{name}");
        let paged = store.events("t-log", 1, Some(3), 100).await.unwrap();
        assert_eq!(
            paged.iter().map(|row| row.seq).collect::<Vec<_>>(),
            [2, 3],
            "{name}"
        );
        let row = store.task("t-log").await.unwrap().unwrap();
        assert_eq!(
            (row.state, &*row.transcript, row.last_seq),
            (TaskState::Completed, "[\"plain\"]", 5),
            "{name}"
        );
        assert_ne!(row.updated_at, task("t-log").updated_at, "{name}");
        store.close().await;
    }
}

#[tokio::test]
async fn a_refused_commit_writes_nothing_and_says_why() {
    for Backend { name, store, .. } in backends().await {
        store
            .create_task(&task("t-end"), "chat", Vec::new(), None)
            .await
            .unwrap();
        let cancel = Commit {
            state: Some(TaskState::Canceled),
            ..Commit::default()
        };
        store.commit("t-end", cancel).await.unwrap();
        // Both of PostgreSQL's paths: a plain step, and one with a call.
        let guarded = [
            Commit {
                events: vec![event("late", false)],
                guard: Some(Guard::NotTerminal),
                ..Commit::default()
            },
            Commit {
                events: vec![event("late", false)],
                new_calls: vec![call("late", false, None)],
                guard: Some(Guard::NotTerminal),
                ..Commit::default()
            },
        ];
        for commit in guarded {
            match store.commit("t-end", commit).await {
                Err(StoreError::Conflict(reason)) => {
                    assert_eq!(reason, "the task has ended", "{name}")
                }
                other => panic!("{name}: {other:?}"),
            }
        }
        assert!(store.calls("t-end").await.unwrap().is_empty(), "{name}");
        assert!(store.events("t-end", 0, None, 10).await.unwrap().is_empty());
        let row = store.task("t-end").await.unwrap().unwrap();
        assert_eq!(
            (row.state, row.last_seq),
            (TaskState::Canceled, 0),
            "{name}"
        );
        // An unguarded commit may still write to an ended task (a cancel's last word).
        let unguarded = Commit {
            events: vec![event("after", true)],
            ..Commit::default()
        };
        assert_eq!(store.commit("t-end", unguarded).await.unwrap(), 1, "{name}");
        // A task that is not there.
        for commit in [
            Commit::default(),
            Commit {
                new_calls: vec![call("x", false, None)],
                ..Commit::default()
            },
        ] {
            let missing = store.commit("t-missing", commit).await;
            assert!(
                matches!(missing, Err(StoreError::NotFound)),
                "{name}: {missing:?}"
            );
        }
        store.close().await;
    }
}

#[tokio::test]
async fn a_call_row_round_trips_every_column_and_starts_once() {
    for Backend { name, store, .. } in backends().await {
        store
            .create_task(&task("t-call"), "chat", Vec::new(), None)
            .await
            .unwrap();
        let denied = AutoDecision {
            user_id: "user-of-t-call".into(),
            channel: Channel::Rule,
            verdict: Verdict::Deny,
            reason: Some("no writes".into()),
            decision: json!({"decision_type": "deny", "rule": 3}),
            summary: "denied by a rule".into(),
        };
        let commit = Commit {
            new_calls: vec![
                call("free", false, None),
                call("ruled", false, Some(denied)),
            ],
            ..Commit::default()
        };
        store.commit("t-call", commit).await.unwrap();
        let start = |run_args| Commit {
            call_updates: vec![CallUpdate::Started {
                call_id: "free".into(),
                run_args,
                run_args_sha256: "run_sha".into(),
            }],
            ..Commit::default()
        };
        store
            .commit("t-call", start(json!({"path": "free", "edited": true})))
            .await
            .unwrap();
        match store.commit("t-call", start(json!({"again": 1}))).await {
            Err(StoreError::Conflict(reason)) => {
                assert_eq!(reason, "the call was already started", "{name}")
            }
            other => panic!("{name}: {other:?}"),
        }
        let finish = |result| Commit {
            call_updates: vec![CallUpdate::Finished {
                call_id: "free".into(),
                result,
            }],
            ..Commit::default()
        };
        store
            .commit("t-call", finish(json!({"ok": "first"})))
            .await
            .unwrap();
        // A call finishes once: a second result is not kept.
        store
            .commit("t-call", finish(json!({"ok": "second"})))
            .await
            .unwrap();

        let calls = store.calls("t-call").await.unwrap();
        assert_eq!(calls.len(), 2, "{name}");
        let free = &calls[0];
        assert_eq!(
            (
                &*free.task_id,
                &*free.call_id,
                free.position,
                &*free.name,
                &*free.source,
                &free.args,
                &*free.args_sha256,
                free.batch_id,
                free.status,
                free.verdict,
                &free.reason,
            ),
            (
                "t-call",
                "free",
                1,
                "tool_free",
                "source_free",
                &json!({"path": "free", "n": 1}),
                "sha_free",
                None,
                CallStatus::Finished,
                None,
                &None,
            ),
            "{name}"
        );
        assert_eq!(
            (
                &free.run_args,
                free.run_args_sha256.as_deref(),
                &free.result
            ),
            (
                &Some(json!({"path": "free", "edited": true})),
                Some("run_sha"),
                &Some(json!({"ok": "first"})),
            ),
            "{name}"
        );
        assert!(
            free.started_at.is_some() && free.finished_at.is_some(),
            "{name}"
        );
        // The call a rule denied: recorded with its own decided batch and the audit row.
        let ruled = &calls[1];
        assert_eq!(
            (
                ruled.position,
                ruled.status,
                ruled.verdict,
                ruled.reason.as_deref()
            ),
            (
                2,
                CallStatus::Denied,
                Some(Verdict::Deny),
                Some("no writes")
            ),
            "{name}"
        );
        let decisions = store.task_decisions("t-call").await.unwrap();
        assert_eq!(decisions.len(), 1, "{name}");
        let audit = &decisions[0];
        assert_eq!(Some(audit.batch_id), ruled.batch_id, "{name}");
        // A rule decided: no request, so no authentication.
        assert_eq!(audit.decider_auth, None, "{name}");
        assert_eq!(
            (
                &*audit.user_id,
                audit.channel,
                &audit.decision,
                &*audit.summary
            ),
            (
                "user-of-t-call",
                Channel::Rule,
                &json!({"decision_type": "deny", "rule": 3}),
                "denied by a rule"
            ),
            "{name}"
        );
        store.close().await;
    }
}

/// The write that approves every call of the task's pending batch `batch_id`.
fn approval(batch_id: i64, call_ids: &[&str]) -> DecisionWrite {
    DecisionWrite {
        batch_id,
        user_id: "user-of-t-batch".into(),
        decider_auth: Some("tokens".into()),
        channel: Channel::Rest,
        decision: json!({"decision_type": "approve"}),
        summary: "approved".into(),
        verdicts: call_ids
            .iter()
            .map(|call_id| CallVerdict {
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
        events: vec![event("approved", false)],
        votes: Vec::new(),
        uses_link: None,
        notifications: Vec::new(),
        push: false,
    }
}

#[tokio::test]
async fn a_batch_opens_with_its_held_calls_and_is_decided_once() {
    for Backend { name, store, .. } in backends().await {
        store
            .create_task(&task("t-batch"), "chat", Vec::new(), None)
            .await
            .unwrap();
        let pause = Commit {
            events: vec![event("paused", false)],
            state: Some(TaskState::InputRequired),
            new_calls: vec![call("held_1", true, None), call("held_2", true, None)],
            new_batch: Some(json!([{"id": "held_1"}, {"id": "held_2"}])),
            batch_deadline: Some("2999-01-01T00:00:00.000Z".into()),
            ..Commit::default()
        };
        assert_eq!(store.commit("t-batch", pause).await.unwrap(), 1, "{name}");
        let batch = store.pending_batch("t-batch").await.unwrap().unwrap();
        assert_eq!(
            (&*batch.task_id, batch.state, &batch.requests),
            (
                "t-batch",
                BatchState::Pending,
                &json!([{"id": "held_1"}, {"id": "held_2"}])
            ),
            "{name}"
        );
        let deadline = store.pending_deadline("t-batch").await.unwrap().unwrap();
        assert_eq!(
            (deadline.batch_id, &*deadline.expires_at),
            (batch.id, "2999-01-01T00:00:00.000Z"),
            "{name}"
        );
        let calls = store.calls("t-batch").await.unwrap();
        assert!(
            calls
                .iter()
                .all(|call| call.batch_id == Some(batch.id) && call.status == CallStatus::Held),
            "{name}: {calls:?}"
        );
        // The compare-and-set: the first decision wins, the second changes nothing.
        let last = store
            .decide("t-batch", approval(batch.id, &["held_1", "held_2"]))
            .await
            .unwrap();
        assert_eq!(last, 2, "{name}");
        match store
            .decide("t-batch", approval(batch.id, &["held_1", "held_2"]))
            .await
        {
            Err(StoreError::Conflict(reason)) => {
                assert_eq!(reason, "the batch was already decided", "{name}")
            }
            other => panic!("{name}: {other:?}"),
        }
        assert!(store.pending_batch("t-batch").await.unwrap().is_none());
        let row = store.task("t-batch").await.unwrap().unwrap();
        assert_eq!((row.state, row.last_seq), (TaskState::Working, 2), "{name}");
        let last = store.last_batch("t-batch").await.unwrap();
        assert_eq!(
            last.as_ref()
                .map(|batch| (batch.state, batch.expires_at.as_deref())),
            Some((BatchState::Decided, Some("2999-01-01T00:00:00.000Z"))),
            "{name}"
        );
        let statuses: Vec<_> = (store.calls("t-batch").await.unwrap())
            .iter()
            .map(|call| (call.status, call.verdict))
            .collect();
        let approved = (CallStatus::Approved, Some(Verdict::Approve));
        assert_eq!(statuses, [approved, approved], "{name}");
        assert_eq!(
            store.task_decisions("t-batch").await.unwrap().len(),
            1,
            "{name}"
        );
        store.close().await;
    }
}

fn notification(id: &str, kind: NotificationKind) -> NewNotification {
    NewNotification {
        id: id.to_owned(),
        channel: "hook".into(),
        kind,
        payload: json!({"agent": "team/agent-of-test", "id": id}),
    }
}

#[tokio::test]
async fn notifications_are_written_by_their_events_commit_claimed_once_and_retried_or_failed() {
    for Backend { name, store, .. } in backends().await {
        store
            .create_task(&task("t-note"), "chat", Vec::new(), None)
            .await
            .unwrap();
        // A refused commit (the task is gone) writes no notification either.
        let orphan = Commit {
            events: vec![event("paused", false)],
            notifications: vec![notification("msg_lost", NotificationKind::Pending)],
            ..Commit::default()
        };
        assert!(
            store.commit("no-such-task", orphan).await.is_err(),
            "{name}"
        );
        let pause = Commit {
            events: vec![event("paused", false)],
            state: Some(TaskState::InputRequired),
            new_calls: vec![call("held_1", true, None)],
            new_batch: Some(json!([{"id": "held_1"}])),
            notifications: vec![notification("msg_pause", NotificationKind::Pending)],
            ..Commit::default()
        };
        store.commit("t-note", pause).await.unwrap();
        let batch = store.pending_batch("t-note").await.unwrap().unwrap();
        let depth = store.outbox_depth().await.unwrap();
        assert_eq!(depth.queued, 1, "{name}");
        let now = now_ms();
        let claimed = store
            .claim_notifications("a", now, 60_000, 10)
            .await
            .unwrap();
        assert_eq!(claimed.len(), 1, "{name}");
        let row = &claimed[0];
        assert_eq!(
            (
                &*row.id,
                &*row.channel,
                row.kind,
                &*row.task_id,
                row.batch_id,
                row.attempts
            ),
            (
                "msg_pause",
                "hook",
                NotificationKind::Pending,
                "t-note",
                Some(batch.id),
                0
            ),
            "{name}: the pause's notification names the batch the same commit opened"
        );
        assert_eq!(row.payload["id"], "msg_pause", "{name}");
        // Leased: another sender does not get it.
        let other = store
            .claim_notifications("b", now, 60_000, 10)
            .await
            .unwrap();
        assert!(other.is_empty(), "{name}: {other:?}");
        // A failed attempt is retried when due, by whoever claims it then, same id.
        store
            .notification_attempt_failed(
                "a",
                "msg_pause",
                "HTTP 500",
                AttemptFailed::RetryAt(now + 10),
            )
            .await
            .unwrap();
        assert!(store
            .claim_notifications("b", now, 60_000, 10)
            .await
            .unwrap()
            .is_empty());
        let again = store
            .claim_notifications("b", now + 10, 60_000, 10)
            .await
            .unwrap();
        assert_eq!(
            (&*again[0].id, again[0].attempts),
            ("msg_pause", 1),
            "{name}"
        );
        // The decision writes its own notification in its commit; a lost compare-and-set none.
        let mut decided = approval(batch.id, &["held_1"]);
        decided.notifications = vec![notification("msg_decided", NotificationKind::Decided)];
        store.decide("t-note", decided.clone()).await.unwrap();
        decided.notifications = vec![notification("msg_twice", NotificationKind::Decided)];
        assert!(store.decide("t-note", decided).await.is_err(), "{name}");
        store.notification_delivered("msg_pause").await.unwrap();
        let rows = store
            .claim_notifications("a", now_ms(), 60_000, 10)
            .await
            .unwrap();
        let ids: Vec<_> = rows
            .iter()
            .map(|row| (&*row.id, row.kind, row.batch_id))
            .collect();
        assert_eq!(
            ids,
            [("msg_decided", NotificationKind::Decided, Some(batch.id))],
            "{name}"
        );
        // Out of retries: kept as failed, listed, no longer queued.
        store
            .notification_attempt_failed(
                "a",
                "msg_decided",
                "HTTP 404: gone",
                AttemptFailed::GiveUp,
            )
            .await
            .unwrap();
        let failed = store.failed_notifications(10).await.unwrap();
        assert_eq!(failed.len(), 1, "{name}");
        assert_eq!(
            (
                &*failed[0].id,
                failed[0].attempts,
                failed[0].last_error.as_deref()
            ),
            ("msg_decided", 1, Some("HTTP 404: gone")),
            "{name}"
        );
        assert!(failed[0].failed_at.is_some(), "{name}");
        assert_eq!(
            store.outbox_depth().await.unwrap(),
            OutboxDepth::default(),
            "{name}"
        );
        store.close().await;
    }
}

/// A task created with the push config of its first message has it from its first commit, so
/// its runner's first pause is pushed to it.
#[tokio::test]
async fn a_task_created_with_a_push_config_pushes_its_first_pause_to_it() {
    for Backend { name, store, .. } in backends().await {
        let config = PushConfigRow {
            task_id: "t-born".into(),
            id: "first".into(),
            user_id: "user-of-t-born".into(),
            version: "1.0".into(),
            url: "https://example.com/hook".into(),
            token: Some("tok".into()),
            auth_scheme: None,
            auth_credentials: None,
            created_at: "2026-01-02T03:04:05.000Z".into(),
        };
        store
            .create_task(&task("t-born"), "chat", Vec::new(), Some(config.clone()))
            .await
            .unwrap();
        assert_eq!(
            store.push_configs("t-born").await.unwrap(),
            vec![config],
            "{name}"
        );
        let paused = Commit {
            events: vec![event("paused", false)],
            state: Some(TaskState::InputRequired),
            push: true,
            ..Commit::default()
        };
        let seq = store.commit("t-born", paused).await.unwrap();
        let rows = store
            .claim_notifications("a", now_ms(), 60_000, 10)
            .await
            .unwrap();
        let got: Vec<_> = rows
            .iter()
            .map(|row| (row.kind, row.payload.clone()))
            .collect();
        assert_eq!(
            got,
            vec![(
                NotificationKind::Push,
                json!({"config_id": "first", "seq": seq})
            )],
            "{name}"
        );
        store.close().await;
    }
}

#[tokio::test]
async fn a_pushing_commit_writes_one_push_per_config_of_its_task_with_it() {
    for Backend { name, store, .. } in backends().await {
        store
            .create_task(&task("t-push"), "chat", Vec::new(), None)
            .await
            .unwrap();
        let step = |state| Commit {
            events: vec![event("moved", false)],
            state: Some(state),
            push: true,
            ..Commit::default()
        };
        // No config: nothing to push.
        store
            .commit("t-push", step(TaskState::InputRequired))
            .await
            .unwrap();
        assert_eq!(store.outbox_depth().await.unwrap().queued, 0, "{name}");
        for id in ["c1", "c2"] {
            let config = PushConfigRow {
                task_id: "t-push".into(),
                id: id.into(),
                user_id: "user-of-t-push".into(),
                version: "0.3".into(),
                url: "https://example.com/hook".into(),
                token: None,
                auth_scheme: None,
                auth_credentials: None,
                created_at: format!("2026-01-02T03:04:05.00{}Z", id.len()),
            };
            store.put_push_config(config, 8).await.unwrap();
        }
        let seq = store
            .commit("t-push", step(TaskState::Completed))
            .await
            .unwrap();
        let mut rows = store
            .claim_notifications("a", now_ms(), 60_000, 10)
            .await
            .unwrap();
        rows.sort_by(|a, b| {
            a.payload["config_id"]
                .as_str()
                .cmp(&b.payload["config_id"].as_str())
        });
        let got: Vec<_> = rows
            .iter()
            .map(|row| (&*row.channel, row.kind, &*row.task_id, row.payload.clone()))
            .collect();
        assert_eq!(
            got,
            vec![
                (
                    PUSH_CHANNEL,
                    NotificationKind::Push,
                    "t-push",
                    json!({"config_id": "c1", "seq": seq})
                ),
                (
                    PUSH_CHANNEL,
                    NotificationKind::Push,
                    "t-push",
                    json!({"config_id": "c2", "seq": seq})
                ),
            ],
            "{name}: the pushes name the commit's last event"
        );
        assert_ne!(rows[0].id, rows[1].id, "{name}");
        // A refused commit pushes nothing.
        assert!(store
            .commit(
                "t-push",
                Commit {
                    guard: Some(Guard::NotTerminal),
                    ..step(TaskState::Failed)
                }
            )
            .await
            .is_err());
        assert_eq!(store.outbox_depth().await.unwrap().queued, 2, "{name}");
        // A local subagent's task is pushed too: its owner set the configs on it (the
        // operator's channels hear of its calls through its parent's batch instead).
        store
            .create_task(&task("t-push-parent"), "chat", Vec::new(), None)
            .await
            .unwrap();
        let link = SubagentLink {
            parent_task_id: "t-push-parent".into(),
            parent_call_id: "call_sub".into(),
            agent: "team/sub".into(),
            child_task_id: "t-push".into(),
            child_context_id: "context-of-t-push".into(),
            remote: false,
            depth: 1,
            created_at: "2026-01-02T03:04:05.008Z".into(),
        };
        store.insert_subagent(link, None).await.unwrap();
        store
            .commit("t-push", step(TaskState::InputRequired))
            .await
            .unwrap();
        assert_eq!(store.outbox_depth().await.unwrap().queued, 4, "{name}");
        store.close().await;
    }
}

#[tokio::test]
async fn a_step_takes_its_queued_messages_and_an_ended_task_drops_the_rest() {
    for Backend { name, store, .. } in backends().await {
        store
            .create_task(&task("t-queue"), "chat", Vec::new(), None)
            .await
            .unwrap();
        for message in ["one", "two", "three"] {
            assert!(store
                .queue_message("t-queue", message.into())
                .await
                .unwrap());
        }
        let queued = store.queued_messages("t-queue").await.unwrap();
        let texts: Vec<&str> = queued.iter().map(|queued| &*queued.message).collect();
        assert_eq!(texts, ["one", "two", "three"], "{name}");
        // A step that would complete the task while messages wait is refused whole.
        let completing = Commit {
            events: vec![event("done", true)],
            state: Some(TaskState::Completed),
            unless_queued: true,
            ..Commit::default()
        };
        let refused = store.commit("t-queue", completing).await;
        assert!(
            matches!(refused, Err(StoreError::MessagesWaiting)),
            "{name}: {refused:?}"
        );
        assert_eq!(store.task("t-queue").await.unwrap().unwrap().last_seq, 0);
        // A step that delivers the first takes it from the queue.
        let delivering = Commit {
            events: vec![event("took one", false)],
            delivered: vec![queued[0].id],
            ..Commit::default()
        };
        store.commit("t-queue", delivering).await.unwrap();
        let left = store.queued_messages("t-queue").await.unwrap();
        assert_eq!(left, queued[1..], "{name}");
        // Ending the task drops what still waits, and takes no more.
        let failing = Commit {
            state: Some(TaskState::Failed),
            ..Commit::default()
        };
        store.commit("t-queue", failing).await.unwrap();
        assert!(store.queued_messages("t-queue").await.unwrap().is_empty());
        assert!(!store.queue_message("t-queue", "late".into()).await.unwrap());
        store.close().await;
    }
}

#[tokio::test]
async fn a_runners_step_needs_the_lease_where_replicas_share_the_database() {
    for Backend { name, store, .. } in backends().await {
        store
            .create_task(&task("t-lease"), "chat", Vec::new(), None)
            .await
            .unwrap();
        // Both of PostgreSQL's paths: a plain step, and one with a call.
        let steps = || {
            [
                Commit {
                    events: vec![event("step", false)],
                    leased: true,
                    ..Commit::default()
                },
                Commit {
                    new_calls: vec![call("leased", false, None)],
                    leased: true,
                    ..Commit::default()
                },
            ]
        };
        if store.replica().is_some() {
            for step in steps() {
                match store.commit("t-lease", step).await {
                    Err(StoreError::Conflict(reason)) => assert_eq!(
                        reason, "this replica no longer holds the task's lease",
                        "{name}"
                    ),
                    other => panic!("{name}: {other:?}"),
                }
            }
            assert!(store.acquire_lease("t-lease", LEASE).await.unwrap());
        }
        // Held (or, on SQLite, every lease is this process's): written.
        let [plain, with_call] = steps();
        assert_eq!(store.commit("t-lease", plain).await.unwrap(), 1, "{name}");
        assert_eq!(store.commit("t-lease", with_call).await.unwrap(), 1);
        assert_eq!(store.calls("t-lease").await.unwrap().len(), 1, "{name}");
        store.close().await;
    }
}

#[tokio::test]
async fn a_decision_link_is_used_in_its_decisions_write_and_only_once() {
    for Backend { name, store, .. } in backends().await {
        store
            .create_task(&task("t-link"), "chat", Vec::new(), None)
            .await
            .unwrap();
        let pause = Commit {
            events: vec![event("paused", false)],
            state: Some(TaskState::InputRequired),
            new_calls: vec![call("held_1", true, None)],
            new_batch: Some(json!([{"id": "held_1"}])),
            ..Commit::default()
        };
        store.commit("t-link", pause).await.unwrap();
        let batch = store.pending_batch("t-link").await.unwrap().unwrap();
        let link = |hash: &str, expires_at: &str| DecisionLinkRow {
            token_sha256: hash.to_owned(),
            task_id: "t-link".into(),
            batch_id: batch.id,
            user_id: "user-of-t-batch".into(),
            action: "approve".into(),
            created_at: "2026-01-01T00:00:00.000Z".into(),
            expires_at: expires_at.to_owned(),
            used_at: None,
        };
        store
            .insert_decision_links(vec![
                link("live", "2999-01-01T00:00:00.000Z"),
                link("old", "2000-01-01T00:00:00.000Z"),
            ])
            .await
            .unwrap();
        // An expired link fails the whole decision: the batch still waits.
        let through = |hash: &str| DecisionWrite {
            uses_link: Some(hash.to_owned()),
            ..approval(batch.id, &["held_1"])
        };
        match store.decide("t-link", through("old")).await {
            Err(StoreError::Conflict(reason)) => assert_eq!(
                reason, "the decision link was already used or has expired",
                "{name}"
            ),
            other => panic!("{name}: {other:?}"),
        }
        assert_eq!(
            store.pending_batch("t-link").await.unwrap().map(|b| b.id),
            Some(batch.id),
            "{name}: nothing of the refused decision was kept"
        );
        assert!(store.task_decisions("t-link").await.unwrap().is_empty());
        store.decide("t-link", through("live")).await.unwrap();
        let used = store.decision_link("live").await.unwrap().unwrap();
        assert!(used.used_at.is_some(), "{name}");
        assert_eq!(used.batch_id, batch.id);
        let unused = store.decision_link("old").await.unwrap().unwrap();
        assert_eq!(unused.used_at, None, "{name}");
        assert_eq!(store.decision_link("none").await.unwrap(), None);
        store.close().await;
    }
}

fn grant(id: &str, uses_left: Option<i64>, expires_at: Option<&str>) -> GrantRow {
    GrantRow {
        id: id.to_owned(),
        user_id: "u".into(),
        agent: "default/demo".into(),
        tool: "write_file".into(),
        scope: GrantScope::Agent,
        context_id: None,
        args: None,
        created_by: "u".into(),
        created_at: signoff_server::store::now(),
        revoked_at: None,
        expires_at: expires_at.map(str::to_owned),
        uses_left,
    }
}

/// A grant for 3 calls raced by 10 allows exactly 3, on every backend (the use is taken by one
/// compare-and-set in the store, so replicas cannot overspend it); a spent or expired grant is no
/// longer in force, and a revoked one cannot be used.
#[tokio::test]
async fn a_counted_grant_allows_exactly_its_uses_and_an_expired_one_none() {
    for Backend { name, store, .. } in backends().await {
        let inserted = store
            .insert_grant(grant("three", Some(3), None), 100)
            .await
            .unwrap();
        assert_eq!(inserted, GrantInsert::Inserted, "{name}");
        let now = signoff_server::store::now();
        let racers: Vec<_> = (0..10)
            .map(|_| {
                let (store, now) = (store.clone(), now.clone());
                tokio::spawn(async move { store.use_grant("three", &now).await.unwrap() })
            })
            .collect();
        let mut allowed = 0;
        for racer in racers {
            if racer.await.unwrap() {
                allowed += 1;
            }
        }
        assert_eq!(allowed, 3, "{name}: a 3-use grant raced by 10 calls");
        let in_force = store
            .applicable_grants("u", "default/demo", "c")
            .await
            .unwrap();
        assert!(in_force.is_empty(), "{name}: spent: {in_force:?}");
        assert!(store.grants("u").await.unwrap().is_empty(), "{name}");

        store
            .insert_grant(grant("hour", None, Some("2000-01-01T00:00:00.000Z")), 100)
            .await
            .unwrap();
        assert!(
            !store.use_grant("hour", &now).await.unwrap(),
            "{name}: expired"
        );
        assert!(store.grants("u").await.unwrap().is_empty(), "{name}");

        store
            .insert_grant(
                grant("later", Some(5), Some("2999-01-01T00:00:00.000Z")),
                100,
            )
            .await
            .unwrap();
        let listed = store.grants("u").await.unwrap();
        assert_eq!(listed.len(), 1, "{name}");
        assert_eq!(listed[0].uses_left, Some(5), "{name}");
        assert!(store.use_grant("later", &now).await.unwrap(), "{name}");
        assert_eq!(
            store.grants("u").await.unwrap()[0].uses_left,
            Some(4),
            "{name}"
        );
        assert!(store.revoke_grant("u", "later", &now).await.unwrap());
        assert!(
            !store.use_grant("later", &now).await.unwrap(),
            "{name}: revoked"
        );
        store.close().await;
    }
}

#[tokio::test]
async fn the_directory_keeps_each_persons_latest_sign_in_and_finds_the_members_of_groups() {
    let person = |id: &str, email: Option<&str>, groups: &[&str], at: &str| PersonRow {
        user_id: id.to_owned(),
        name: Some(format!("{id} Example")),
        email: email.map(str::to_owned),
        groups: groups.iter().map(|group| group.to_string()).collect(),
        last_seen: at.to_owned(),
    };
    let ids = |people: Vec<PersonRow>| -> Vec<String> {
        people.into_iter().map(|person| person.user_id).collect()
    };
    let groups = |names: &[&str]| -> Vec<String> { names.iter().map(|n| n.to_string()).collect() };
    for Backend { name, store, .. } in backends().await {
        let t0 = "2026-01-01T00:00:00.000Z";
        let alice = person("alice", Some("alice@example.com"), &["oncall", "sre"], t0);
        store.put_person(alice.clone()).await.unwrap();
        store
            .put_person(person("bob", None, &["dev"], t0))
            .await
            .unwrap();
        store
            .put_person(person("carol", Some("c@example.com"), &["sre-leads"], t0))
            .await
            .unwrap();
        assert_eq!(store.person("alice").await.unwrap(), Some(alice), "{name}");
        assert_eq!(store.person("nobody").await.unwrap(), None, "{name}");
        let sre = store.people_in_groups(&groups(&["sre"])).await.unwrap();
        assert_eq!(ids(sre), ["alice"], "{name}: a group is matched whole");
        let both = store
            .people_in_groups(&groups(&["dev", "sre"]))
            .await
            .unwrap();
        assert_eq!(
            ids(both),
            ["alice", "bob"],
            "{name}: any of the groups, each once"
        );
        assert!(
            store.people_in_groups(&[]).await.unwrap().is_empty(),
            "{name}"
        );
        // A later sign-in replaces what the earlier one said: bob left dev for sre.
        let t1 = "2026-01-02T00:00:00.000Z";
        let moved = person("bob", Some("bob@example.com"), &["sre"], t1);
        store.put_person(moved.clone()).await.unwrap();
        assert_eq!(store.person("bob").await.unwrap(), Some(moved), "{name}");
        let dev = store.people_in_groups(&groups(&["dev"])).await.unwrap();
        assert!(dev.is_empty(), "{name}");
        let sre = store.people_in_groups(&groups(&["sre"])).await.unwrap();
        assert_eq!(ids(sre), ["alice", "bob"], "{name}");
        // By email (whom a Slack user's email names): without regard to ASCII case, and the
        // most recently seen of two with one address.
        let found = store.person_by_email("ALICE@example.com").await.unwrap();
        assert_eq!(found.map(|p| p.user_id).as_deref(), Some("alice"), "{name}");
        assert_eq!(
            store.person_by_email("x@example.com").await.unwrap(),
            None,
            "{name}"
        );
        let t2 = "2026-01-03T00:00:00.000Z";
        store
            .put_person(person("alice2", Some("alice@example.com"), &[], t2))
            .await
            .unwrap();
        let found = store.person_by_email("alice@example.com").await.unwrap();
        assert_eq!(
            found.map(|p| p.user_id).as_deref(),
            Some("alice2"),
            "{name}"
        );
        store.close().await;
    }
}

fn pin(digest: &str, pinned_by: &str) -> ToolPinRow {
    ToolPinRow {
        agent: "default/demo".into(),
        tool: "write_file".into(),
        source: "remote".into(),
        digest: digest.into(),
        definition: format!("{{\"name\":\"{digest}\"}}"),
        pinned_at: signoff_server::store::now(),
        pinned_by: pinned_by.into(),
    }
}

/// A tool's first pin wins on every backend; a repin takes only from the digest it names, and
/// revokes the grants of that tool (and no other) in the same write.
#[tokio::test]
async fn a_tools_first_pin_stays_and_a_repin_from_its_digest_revokes_its_grants() {
    for Backend { name, store, .. } in backends().await {
        let first = store.pin_first_seen(pin("aaa", "first use")).await.unwrap();
        assert_eq!(first.digest, "aaa", "{name}");
        let again = store.pin_first_seen(pin("bbb", "first use")).await.unwrap();
        assert_eq!(again, first, "{name}: the first pin stays");
        let mut other_tool = grant("other", None, None);
        other_tool.tool = "read_file".into();
        for grant in [grant("old", None, None), other_tool] {
            store.insert_grant(grant, 100).await.unwrap();
        }

        let stale = store.repin_tool(pin("ccc", "op"), "bbb").await.unwrap();
        assert!(
            !stale,
            "{name}: a repin from a digest that is not the pin's"
        );
        assert_eq!(store.grants("u").await.unwrap().len(), 2, "{name}");
        assert!(
            store.repin_tool(pin("ccc", "op"), "aaa").await.unwrap(),
            "{name}"
        );
        let pins = store.tool_pins("default/demo").await.unwrap();
        assert_eq!(pins.len(), 1, "{name}");
        assert_eq!(
            (pins[0].digest.as_str(), pins[0].pinned_by.as_str()),
            ("ccc", "op"),
            "{name}"
        );
        let left: Vec<String> = store
            .grants("u")
            .await
            .unwrap()
            .into_iter()
            .map(|grant| grant.tool)
            .collect();
        assert_eq!(
            left,
            ["read_file"],
            "{name}: only the repinned tool's grants go"
        );
        assert!(
            store.tool_pins("default/other").await.unwrap().is_empty(),
            "{name}"
        );
    }
}

/// A call settled at once is its owner's alone, listed newest first, and replayed with the
/// calls of chats, on every backend.
#[tokio::test]
async fn a_settled_call_is_its_owners_listed_newest_first_and_replayed() {
    for Backend { name, store, .. } in backends().await {
        let settled = |id: &str, user: &str, at: &str| SettledCallRow {
            id: id.into(),
            user_id: user.into(),
            requester_groups: vec!["sre".into()],
            agent: "default/demo".into(),
            tool: "read_file".into(),
            source: "files".into(),
            args: json!({"path": id}),
            args_sha256: format!("sha-{id}"),
            verdict: Verdict::Approve,
            why: json!({"by": "default", "id": "require_approval", "outcome": "allow",
                        "summary": "needs no approval"}),
            settled_at: at.into(),
        };
        for row in [
            settled("c1", "alice", "2026-12-01T10:00:00.000Z"),
            settled("c2", "alice", "2026-12-02T10:00:00.000Z"),
            settled("c3", "bob", "2026-12-02T11:00:00.000Z"),
        ] {
            store.insert_settled_call(row).await.unwrap();
        }
        let mine = store.settled_calls("alice", 10).await.unwrap();
        let ids: Vec<&str> = mine.iter().map(|row| row.id.as_str()).collect();
        assert_eq!(ids, ["c2", "c1"], "{name}");
        assert_eq!(
            mine[1],
            settled("c1", "alice", "2026-12-01T10:00:00.000Z"),
            "{name}"
        );
        assert_eq!(store.settled_calls("alice", 1).await.unwrap().len(), 1);
        assert!(
            store.settled_call("alice", "c3").await.unwrap().is_none(),
            "{name}"
        );
        assert!(
            store.settled_call("bob", "c3").await.unwrap().is_some(),
            "{name}"
        );
        // A second row with the same id is refused, not merged.
        assert!(store
            .insert_settled_call(settled("c1", "alice", "2026-12-03T10:00:00.000Z"))
            .await
            .is_err());
        let replayed = store
            .replay_calls("2026-12-02T00:00:00.000Z")
            .await
            .unwrap();
        let replayed: Vec<(&str, &str, &[String])> = replayed
            .iter()
            .map(|call| {
                let groups = call.requester_groups.as_slice();
                (call.call.call_id.as_str(), call.user_id.as_str(), groups)
            })
            .collect();
        let sre = ["sre".to_owned()];
        assert_eq!(
            replayed,
            [("c2", "alice", &sre[..]), ("c3", "bob", &sre[..])],
            "{name}"
        );
    }
}

/// A call of tool `pay` (or `name`) with `args`, allowed to run unless `auto` decides it.
fn paid(call_id: &str, name: &str, args: serde_json::Value, auto: Option<AutoDecision>) -> NewCall {
    NewCall {
        call_id: call_id.to_owned(),
        name: name.to_owned(),
        source: "payments".into(),
        args,
        args_sha256: format!("sha_{call_id}"),
        held: false,
        auto,
        why: None,
    }
}

#[tokio::test]
async fn the_counts_sum_a_tools_numeric_arguments_as_they_ran_over_each_window() {
    for Backend { name, store, .. } in backends().await {
        let user = "user-of-t-sum";
        let other_task = TaskRow {
            id: "t-sum-2".into(),
            context_id: "another-chat".into(),
            ..task("t-sum")
        };
        for (row, title) in [
            (task("t-sum"), "a"),
            (other_task, "b"),
            (task("t-stranger"), "c"),
        ] {
            store
                .create_task(&row, title, Vec::new(), None)
                .await
                .unwrap();
        }
        let denied = AutoDecision {
            user_id: user.into(),
            channel: Channel::Rule,
            verdict: Verdict::Deny,
            reason: Some("too much".into()),
            decision: json!({"decision_type": "deny"}),
            summary: "denied by a rule".into(),
        };
        let calls = |calls| Commit {
            new_calls: calls,
            ..Commit::default()
        };
        store
            .commit(
                "t-sum",
                calls(vec![
                    paid("edited", "pay", json!({"amount": 30, "to": "ann"}), None),
                    paid("waiting", "pay", json!({"amount": 2.5}), None),
                    paid("refused", "pay", json!({"amount": 100}), Some(denied)),
                    paid("other-tool", "refund", json!({"amount": 7}), None),
                ]),
            )
            .await
            .unwrap();
        // Approved at 20 where 30 was asked: the sums count what ran.
        let started = Commit {
            call_updates: vec![CallUpdate::Started {
                call_id: "edited".into(),
                run_args: json!({"amount": 20, "to": "ann"}),
                run_args_sha256: "run_sha".into(),
            }],
            ..Commit::default()
        };
        store.commit("t-sum", started).await.unwrap();
        let other = calls(vec![paid("b1", "pay", json!({"amount": 5}), None)]);
        store.commit("t-sum-2", other).await.unwrap();
        let stranger = calls(vec![paid("s1", "pay", json!({"amount": 1000}), None)]);
        store.commit("t-stranger", stranger).await.unwrap();

        // The hour starts after every start (only calls yet to run are in it); the day holds all.
        let windows = CountWindows {
            hour: "9999-01-01T00:00:00.000Z".into(),
            day: "2000-01-01T00:00:00.000Z".into(),
        };
        let counts = store
            .call_counts("t-sum", user, "pay", &windows)
            .await
            .unwrap();
        assert_eq!(counts.tool_allowed_in_task, 2, "{name}");
        assert_eq!(counts.tool_allowed_by_user_last_hour, 2, "{name}");
        let amount = |sums: &std::collections::BTreeMap<String, i64>| sums.get("amount").copied();
        // 20 + 2.5 in the task, rounded up; 2.5 + 5 yet to run; 20 + 2.5 + 5 in the day.
        assert_eq!(amount(&counts.sum_in_task), Some(23), "{name}: {counts:?}");
        assert_eq!(
            amount(&counts.sum_by_user_last_hour),
            Some(8),
            "{name}: {counts:?}"
        );
        assert_eq!(
            amount(&counts.sum_by_user_last_day),
            Some(28),
            "{name}: {counts:?}"
        );
        // Only numeric arguments are summed.
        assert!(!counts.sum_in_task.contains_key("to"), "{name}: {counts:?}");

        let none = store
            .call_counts("t-sum", user, "transfer", &windows)
            .await
            .unwrap();
        assert!(none.sum_by_user_last_day.is_empty(), "{name}: {none:?}");
        store.close().await;
    }
}

/// Two stores on one database, as two replicas, each signing with the server's key: their
/// decisions append to one chain, a store's last head right at its next append when it
/// wrote the last one and stale when the other did. The chain has no gap and no fork, and
/// verifies.
#[tokio::test]
async fn two_stores_deciding_in_turn_keep_one_chain_of_receipts() {
    use signoff_server::agent::receipts::{self, ExportFormat, Verified};
    let dir = tempfile::tempdir().unwrap();
    let mut databases = vec![("sqlite", Database::Sqlite(dir.path().to_owned()))];
    if std::env::var("SIGNOFF_TEST_POSTGRES_URL").is_ok_and(|url| !url.is_empty()) {
        databases.push(("postgres", Database::Postgres(create_database().await)));
    }
    for (name, database) in databases {
        let key = dir.path().join(format!("{name}-receipts.key"));
        let (first, second) = (
            Store::open(&database).await.unwrap(),
            Store::open(&database).await.unwrap(),
        );
        for store in [&first, &second] {
            receipts::install(store, &key).await.unwrap();
        }
        for round in 0..6 {
            let store = [&first, &first, &second, &first, &second, &second][round];
            let task_id = format!("t-chain-{round}");
            store
                .create_task(&task(&task_id), "chat", Vec::new(), None)
                .await
                .unwrap();
            let (one, two) = (format!("held_{round}_1"), format!("held_{round}_2"));
            let pause = Commit {
                events: vec![event("paused", false)],
                state: Some(TaskState::InputRequired),
                new_calls: vec![call(&one, true, None), call(&two, true, None)],
                new_batch: Some(json!([{"id": one}, {"id": two}])),
                ..Commit::default()
            };
            store.commit(&task_id, pause).await.unwrap();
            let batch = store.pending_batch(&task_id).await.unwrap().unwrap();
            store
                .decide(&task_id, approval(batch.id, &[&one, &two]))
                .await
                .unwrap();
        }
        let exported = receipts::export(&first, ExportFormat::Jsonl).await.unwrap();
        assert_eq!(
            receipts::verify(&exported, None),
            Verified::Holds { count: 12 },
            "{name}: {exported}"
        );
        first.close().await;
        second.close().await;
    }
}
