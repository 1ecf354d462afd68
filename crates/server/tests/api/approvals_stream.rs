//! `GET /api/approvals/stream`: an event when a batch starts waiting (`pending`) and when it
//! stops (`decided`: a decision, a cancel, an expiry, a deleted chat), ids that grow, a resume
//! with `Last-Event-ID` that loses and repeats nothing, each person's own events only, and
//! heartbeats while nothing happens.

use serde_json::{json, Value};

use crate::support::*;

fn heartbeat_every_second(config: &mut signoff_server::Config) {
    config.approvals_heartbeat_secs = 1;
}

/// A paused chat with the demo agent (one held `write_file`): its task and context.
async fn pause_as(app: &TestApp, token: Option<&str>, file: &str) -> (String, String) {
    let body = message_request(
        "message/stream",
        message_v03(&format!("write {file}: hi"), None, None),
    );
    let results = results(&app.stream_as(None, token, body).await);
    assert_eq!(
        states(&results).last().map(String::as_str),
        Some("input-required")
    );
    (task_id(&results), context_id(&results))
}

async fn pause(app: &TestApp, file: &str) -> (String, String) {
    pause_as(app, None, file).await
}

fn pending(task: &str) -> (String, String) {
    ("pending".to_owned(), task.to_owned())
}

fn decided(task: &str) -> (String, String) {
    ("decided".to_owned(), task.to_owned())
}

/// The ids of `frames` grow strictly.
fn assert_rising(frames: &[ApprovalsFrame]) {
    let ids: Vec<i64> = frames.iter().map(ApprovalsFrame::id).collect();
    assert!(ids.windows(2).all(|pair| pair[0] < pair[1]), "{ids:?}");
}

#[tokio::test]
async fn a_pause_a_decision_and_a_cancel_each_send_one_event() {
    let app = spawn_app().await;
    let mut stream = open_approvals(&app, None, None).await;

    let (task, context) = pause(&app, "a.txt").await;
    let first = stream.next_event().await;
    assert_eq!(first.about(), pending(&task));
    let data = first.data();
    assert_eq!(data["contextId"], context.as_str());
    assert_eq!(data["agent"], "default/demo");
    assert_eq!(data["title"], "write a.txt: hi");
    assert_eq!(data["calls"][0]["name"], "write_file");
    assert_eq!(data["calls"][0]["args"]["path"], "a.txt");
    assert!(data["since"].as_str().is_some(), "{data}");

    let (status, _) = decide_rest(&app, None, &task, json!({"decision_type": "approve"})).await;
    assert_eq!(status, 200);
    let second = stream.next_event().await;
    assert_eq!(second.about(), decided(&task));
    assert_eq!(second.data()["outcome"], "rest");
    assert_eq!(second.data()["decidedBy"], "local");
    assert_eq!(second.data()["contextId"], context.as_str());

    let (canceled, _) = pause(&app, "b.txt").await;
    let third = stream.next_event().await;
    assert_eq!(third.about(), pending(&canceled));
    let answer = app
        .rpc(None, request("tasks/cancel", json!({"id": canceled})))
        .await;
    assert_eq!(answer["result"]["status"]["state"], "canceled", "{answer}");
    let fourth = stream.next_event().await;
    assert_eq!(fourth.about(), decided(&canceled));
    assert_eq!(fourth.data()["outcome"], "cancel");

    // A decision in the chat (A2A) ends a batch the same way.
    let (in_chat, in_chat_context) = pause(&app, "c.txt").await;
    assert_eq!(stream.next_event().await.about(), pending(&in_chat));
    decide(
        &app,
        &in_chat,
        &in_chat_context,
        json!({"decision_type": "deny"}),
    )
    .await;
    let sixth = stream.next_event().await;
    assert_eq!(sixth.about(), decided(&in_chat));
    assert_eq!(sixth.data()["outcome"], "a2a");

    assert_rising(&[first, second, third, fourth, sixth]);
}

#[tokio::test]
async fn an_expired_batch_and_a_deleted_chat_end_their_pending_batches() {
    let agents = "[[agents]]\nname = \"demo\"\napproval_timeout = \"1s\"\non_timeout = \"reject\"\n\
         [[agents.tools]]\nkind = \"builtin_files\"\nrequire_approval = [\"write_file\", \"delete_file\"]\n";
    let app = spawn_with_agents(agents, |_| {}).await;
    let mut stream = open_approvals(&app, None, None).await;
    let (task, _) = pause(&app, "a.txt").await;
    let waiting = stream.next_event().await;
    assert_eq!(waiting.about(), pending(&task));
    assert!(
        waiting.data()["expiresAt"].as_str().is_some(),
        "{:?}",
        waiting
    );
    let expired = stream.next_event().await;
    assert_eq!(expired.about(), decided(&task));
    assert_eq!(expired.data()["outcome"], "expiry");

    let app = spawn_app().await;
    let mut stream = open_approvals(&app, None, None).await;
    let (task, context) = pause(&app, "a.txt").await;
    assert_eq!(stream.next_event().await.about(), pending(&task));
    assert_eq!(app.delete(&format!("/api/sessions/{context}")).await, 204);
    let deleted = stream.next_event().await;
    assert_eq!(deleted.about(), decided(&task));
    assert_eq!(deleted.data()["outcome"], "deleted");
    assert_eq!(deleted.data()["decidedBy"], Value::Null);
}

#[tokio::test]
async fn a_new_stream_starts_with_what_waits_and_a_resumed_one_loses_and_repeats_nothing() {
    let app = spawn_with(heartbeat_every_second).await;
    let (one, _) = pause(&app, "one.txt").await;
    let (two, _) = pause(&app, "two.txt").await;
    let (gone, _) = pause(&app, "gone.txt").await;
    decide_rest(&app, None, &gone, json!({"decision_type": "deny"})).await;

    // A new stream: the batches that wait now, oldest first, and nothing of the decided one.
    let mut stream = open_approvals(&app, None, None).await;
    let start = stream.events_until_heartbeat().await;
    let about: Vec<_> = start.iter().map(ApprovalsFrame::about).collect();
    assert_eq!(about, vec![pending(&one), pending(&two)]);
    assert_rising(&start);

    decide_rest(&app, None, &one, json!({"decision_type": "approve"})).await;
    let seen = stream.next_event().await;
    assert_eq!(seen.about(), decided(&one));
    drop(stream);

    // While nobody listens: a new batch, and a decision.
    let (three, _) = pause(&app, "three.txt").await;
    decide_rest(&app, None, &two, json!({"decision_type": "approve"})).await;

    // Resumed after the last event seen: exactly what came since, in order.
    let mut resumed = open_approvals(&app, None, Some(seen.id())).await;
    let missed = resumed.events_until_heartbeat().await;
    let about: Vec<_> = missed.iter().map(ApprovalsFrame::about).collect();
    assert_eq!(about, vec![pending(&three), decided(&two)]);
    assert!(missed[0].id() > seen.id());
    assert_rising(&missed);

    // Resumed from the first event of the start: the rest of the history after it, each once.
    let mut again = open_approvals(&app, None, Some(start[0].id())).await;
    let replay = again.events_until_heartbeat().await;
    let about: Vec<_> = replay.iter().map(ApprovalsFrame::about).collect();
    assert_eq!(
        about,
        vec![
            pending(&two),
            pending(&gone),
            decided(&gone),
            decided(&one),
            pending(&three),
            decided(&two)
        ]
    );
    assert_eq!(replay[0].id(), start[1].id());

    // Live again after the resume.
    decide_rest(&app, None, &three, json!({"decision_type": "approve"})).await;
    assert_eq!(resumed.next_event().await.about(), decided(&three));
}

#[tokio::test]
async fn a_quiet_stream_sends_heartbeats_and_a_bad_last_event_id_is_refused() {
    let app = spawn_with(heartbeat_every_second).await;
    let mut stream = open_approvals(&app, None, None).await;
    assert_eq!(stream.next().await, ApprovalsFrame::Heartbeat);
    assert_eq!(stream.next().await, ApprovalsFrame::Heartbeat);

    let response = app
        .client
        .get(app.url("/api/approvals/stream"))
        .header("Last-Event-ID", "yesterday")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 400);
    let body: Value = response.json().await.unwrap();
    assert_eq!(
        body["error"],
        "Last-Event-ID must be a whole number of 0 or more, not \"yesterday\""
    );
}

#[tokio::test]
async fn with_tokens_each_person_hears_only_of_the_batches_they_may_decide() {
    let app = spawn_with(|config| {
        config.auth = signoff_server::AuthMode::Tokens;
        config.tokens = vec!["alice-token=alice".into(), "bob-token=bob".into()];
    })
    .await;
    let response = app
        .client
        .get(app.url("/api/approvals/stream"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 401);

    let mut alice = open_approvals(&app, Some("alice-token"), None).await;
    let mut bob = open_approvals(&app, Some("bob-token"), None).await;
    let (hers, _) = pause_as(&app, Some("alice-token"), "hers.txt").await;
    let (status, _) = decide_rest(
        &app,
        Some("alice-token"),
        &hers,
        json!({"decision_type": "approve"}),
    )
    .await;
    assert_eq!(status, 200);
    let (his, _) = pause_as(&app, Some("bob-token"), "his.txt").await;

    // Events come in id order, so had Bob's stream carried Alice's, they would come first.
    assert_eq!(bob.next_event().await.about(), pending(&his));
    assert_eq!(alice.next_event().await.about(), pending(&hers));
    assert_eq!(alice.next_event().await.about(), decided(&hers));

    // A new stream of Alice's shows nothing of Bob's waiting batch.
    let (her_next, _) = pause_as(&app, Some("alice-token"), "next.txt").await;
    let mut fresh = open_approvals(&app, Some("alice-token"), None).await;
    assert_eq!(fresh.next_event().await.about(), pending(&her_next));
    assert_eq!(alice.next_event().await.about(), pending(&her_next));
}

#[tokio::test]
async fn on_a_shared_database_an_id_means_the_same_event_on_every_replica() {
    // Two servers on one PostgreSQL database are two replicas; an SQLite file has one process,
    // so this runs on PostgreSQL only (SIGNOFF_TEST_BACKEND=postgres).
    if !on_postgres() {
        return;
    }
    let first = spawn_app().await;
    let url = database_url(first.data_dir.path()).await;
    let second = spawn_with(|config| config.database_url = url).await;
    let mut here = open_approvals(&first, None, None).await;

    // Paused through the other replica: heard here (its NOTIFY wakes this stream).
    let (task, _) = pause(&second, "a.txt").await;
    let waiting = here.next_event().await;
    assert_eq!(waiting.about(), pending(&task));
    let (status, _) = decide_rest(&first, None, &task, json!({"decision_type": "approve"})).await;
    assert_eq!(status, 200);
    let decided_here = here.next_event().await;
    assert_eq!(decided_here.about(), decided(&task));

    // Resumed through the other replica after the first event: the same next event, same id.
    let mut there = open_approvals(&second, None, Some(waiting.id())).await;
    assert_eq!(there.next_event().await, decided_here);
}

#[tokio::test]
async fn one_user_may_have_so_many_approvals_streams_open_and_no_more() {
    let app = spawn_with(|config| {
        config.auth = signoff_server::AuthMode::Tokens;
        config.tokens = vec!["alice-token=alice".into(), "bob-token=bob".into()];
        // A closed stream is noticed when its next heartbeat cannot be sent.
        config.approvals_heartbeat_secs = 1;
    })
    .await;
    let most = signoff_server::DEFAULT_APPROVALS_STREAMS_PER_USER;
    let mut open = Vec::new();
    for _ in 0..most {
        open.push(open_approvals(&app, Some("alice-token"), None).await);
    }
    let one_more = || async {
        app.client
            .get(app.url("/api/approvals/stream"))
            .bearer_auth("alice-token")
            .send()
            .await
            .unwrap()
    };
    let refused = one_more().await;
    assert_eq!(refused.status(), 429);
    let body: Value = refused.json().await.unwrap();
    assert_eq!(
        body,
        json!({"error": format!("you have {most} approvals streams open, the most one user may; \
                                 close one (one per browser is enough: its tabs share it)")})
    );
    // Another person's streams are counted apart.
    let mut bob = open_approvals(&app, Some("bob-token"), None).await;
    let (his, _) = pause_as(&app, Some("bob-token"), "his.txt").await;
    assert_eq!(bob.next_event().await.about(), pending(&his));
    // A stream that closes frees its place.
    drop(open.pop());
    let reopened = eventually("a closed stream's place to be free", || async {
        let response = one_more().await;
        (response.status() == 200).then_some(response)
    })
    .await;
    drop(reopened);
    app.stop().await;
}
