//! The operations endpoints: `/healthz`, `/readyz` (and its 503s: a database at another schema
//! version, a server shutting down), and `/metrics` read strictly as Prometheus text, whose
//! counts follow a chat with a decision and an open stream.

use std::time::Duration;

use serde_json::json;
use signoff_server::agent::{Limits, NotReady, Runtime};
use signoff_server::store::Store;

use crate::hitl::pause;
use crate::support::*;

/// `GET /metrics`, read strictly.
async fn scrape(app: &TestApp) -> Scrape {
    let response = app.client.get(app.url("/metrics")).send().await.unwrap();
    assert_eq!(response.status(), 200);
    let content_type = response.headers()["content-type"].to_str().unwrap();
    assert!(
        content_type.starts_with("application/openmetrics-text; version=1.0.0"),
        "{content_type}"
    );
    let text = response.text().await.unwrap();
    parse_metrics(&text).unwrap_or_else(|why| panic!("{why}\n{text}"))
}

#[tokio::test]
async fn healthz_and_readyz_answer_for_a_server_that_can_work() {
    let app = spawn_app().await;
    assert_eq!(app.get("/healthz").await, (200, json!({"status": "ok"})));
    assert_eq!(app.get("/readyz").await, (200, json!({"status": "ready"})));
}

#[tokio::test]
async fn readyz_is_503_while_the_database_is_not_at_this_binarys_schema() {
    let app = spawn_app().await;
    // Ready first: the server has migrated its database (and so listens).
    assert_eq!(app.get("/readyz").await, (200, json!({"status": "ready"})));
    // Where each backend keeps its schema version.
    let set_version = |version: i64| {
        let dir = app.data_dir.path().to_owned();
        async move {
            let statements = if on_postgres() {
                vec![
                    "DELETE FROM signoff_schema".to_owned(),
                    format!("INSERT INTO signoff_schema (version) VALUES ({version})"),
                ]
            } else {
                vec![format!("PRAGMA user_version = {version}")]
            };
            let statements: Vec<&str> = statements.iter().map(String::as_str).collect();
            sql_execute(&dir, &statements).await;
        }
    };
    set_version(99).await;
    let (status, body) = app.get("/readyz").await;
    assert_eq!(status, 503, "{body}");
    assert_eq!(body["status"], "not ready");
    let reason = body["reason"].as_str().unwrap();
    assert!(
        reason.starts_with("the database schema is at version 99; this binary needs "),
        "{reason}"
    );
    // The process itself is fine: only readiness says no.
    assert_eq!(app.get("/healthz").await.0, 200);
    let latest: i64 = reason.rsplit(' ').next().unwrap().parse().unwrap();
    set_version(latest).await;
    assert_eq!(app.get("/readyz").await, (200, json!({"status": "ready"})));
}

#[tokio::test]
async fn a_runtime_that_is_shutting_down_is_not_ready() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&test_database(dir.path()).await).await.unwrap();
    let runtime = Runtime::new(store.clone(), Vec::new(), Limits::default());
    assert_eq!(runtime.check_ready().await, Ok(()));
    runtime.begin_shutdown();
    let refused = runtime.check_ready().await;
    assert_eq!(refused, Err(NotReady::ShuttingDown));
    assert_eq!(refused.unwrap_err().to_string(), "shutting down");
    runtime.shutdown(Duration::from_secs(5)).await;
    store.close().await;
}

#[tokio::test]
async fn metrics_parse_and_count_a_chat_with_a_decision() {
    let app = spawn_app().await;
    let fresh = scrape(&app).await;
    assert_eq!(fresh.value("signoff_pending_approvals", &[]), Some(0.0));
    assert_eq!(fresh.value("signoff_open_streams", &[]), Some(0.0));
    assert_eq!(fresh.types["signoff_time_to_pause_seconds"], "histogram");
    assert_eq!(fresh.count("signoff_time_to_pause_seconds_count", &[]), 0.0);

    // write and delete wait, read runs: one pause with a batch of two.
    let (task, context) = pause(&app, None).await;
    let pause_counted = |scrape: &Scrape| scrape.count("signoff_time_to_pause_seconds_count", &[]);
    // The pause's time is taken once its commit is written, just after the event went out.
    let paused = eventually("the pause to be timed", || async {
        let scrape = scrape(&app).await;
        (pause_counted(&scrape) == 1.0).then_some(scrape)
    })
    .await;
    assert_eq!(paused.value("signoff_pending_approvals", &[]), Some(1.0));
    let entered = |scrape: &Scrape, state: &str| {
        scrape.count("signoff_task_transitions_total", &[("state", state)])
    };
    assert_eq!(entered(&paused, "submitted"), 1.0);
    assert_eq!(entered(&paused, "input-required"), 1.0);
    let tool_calls = |scrape: &Scrape, tool: &str| {
        scrape.count("signoff_tool_call_seconds_count", &[("tool", tool)])
    };
    assert_eq!(tool_calls(&paused, "read_file"), 1.0);
    assert_eq!(tool_calls(&paused, "write_file"), 0.0);
    let turns = |scrape: &Scrape| {
        scrape.count(
            "signoff_model_turn_seconds_count",
            &[("agent", "default/demo")],
        )
    };
    assert_eq!(turns(&paused), 1.0);

    let results = decide(&app, &task, &context, json!({"decision_type": "approve"})).await;
    assert_eq!(results.last().unwrap()["status"]["state"], "completed");
    let decided = scrape(&app).await;
    assert_eq!(decided.value("signoff_pending_approvals", &[]), Some(0.0));
    assert_eq!(
        decided.count(
            "signoff_decisions_total",
            &[("verdict", "approve"), ("channel", "a2a")]
        ),
        2.0,
        "one per approved call"
    );
    assert_eq!(
        decided.count("signoff_decision_wait_seconds_count", &[("channel", "a2a")]),
        1.0
    );
    assert_eq!(entered(&decided, "completed"), 1.0);
    assert_eq!(tool_calls(&decided, "write_file"), 1.0);
    assert_eq!(tool_calls(&decided, "delete_file"), 1.0);
    assert_eq!(turns(&decided), 2.0);
    assert_eq!(
        decided.count(
            "signoff_model_turn_errors_total",
            &[("agent", "default/demo"), ("kind", "error")]
        ),
        0.0
    );
}

#[tokio::test]
async fn a_mixed_rest_decision_and_a_cancel_are_counted_per_call() {
    let app = spawn_app().await;
    let (task, _) = pause(&app, None).await;
    let data = json!({"decision_type": "batch",
                      "decisions": {"call_1": "approve", "call_2": "deny"}});
    let (status, body) = decide_rest(&app, None, &task, data).await;
    assert_eq!(status, 200, "{body}");
    let second = task_id(&say(&app, "write b.txt: x and delete readme.txt").await);
    let canceled = app
        .rpc(None, request("tasks/cancel", json!({"id": second})))
        .await;
    assert_eq!(
        canceled["result"]["status"]["state"], "canceled",
        "{canceled}"
    );
    let counted = scrape(&app).await;
    let decided = |verdict: &str, channel: &str| {
        counted.count(
            "signoff_decisions_total",
            &[("verdict", verdict), ("channel", channel)],
        )
    };
    assert_eq!(decided("approve", "rest"), 1.0);
    assert_eq!(decided("deny", "rest"), 1.0);
    assert_eq!(decided("cancel", "cancel"), 2.0, "both held calls dropped");
    assert_eq!(decided("approve", "a2a"), 0.0);
    assert_eq!(
        counted.count(
            "signoff_decision_wait_seconds_count",
            &[("channel", "rest")]
        ),
        1.0
    );
    // A cancel is not a person's answer to the batch: no wait is timed for it.
    assert_eq!(
        counted.count(
            "signoff_decision_wait_seconds_count",
            &[("channel", "cancel")]
        ),
        0.0
    );
    assert_eq!(counted.value("signoff_pending_approvals", &[]), Some(0.0));
}

#[tokio::test]
async fn an_open_stream_is_counted_until_it_ends() {
    let app = spawn_app().await;
    let mut live = say_live(&app, "count to 10000").await;
    let first = live.next().await.unwrap();
    let task = first["result"]["taskId"].as_str().unwrap().to_owned();
    let open = scrape(&app).await;
    assert_eq!(open.value("signoff_open_streams", &[]), Some(1.0));

    let canceled = app
        .rpc(None, request("tasks/cancel", json!({"id": task})))
        .await;
    assert_eq!(
        canceled["result"]["status"]["state"], "canceled",
        "{canceled}"
    );
    while live.next().await.is_some() {}
    eventually("the ended stream to be let go", || async {
        let scrape = scrape(&app).await;
        (scrape.value("signoff_open_streams", &[]) == Some(0.0)).then_some(())
    })
    .await;
    let counted = scrape(&app).await;
    assert_eq!(
        counted.count("signoff_task_transitions_total", &[("state", "canceled")]),
        1.0
    );
}

#[test]
fn the_metrics_reader_refuses_what_a_scraper_would() {
    let good = "# TYPE a counter\na_total{x=\"1\"} 2\n# TYPE h histogram\n\
                h_bucket{le=\"1\"} 1\nh_bucket{le=\"+Inf\"} 2\nh_sum 3\nh_count 2\n# EOF\n";
    let scrape = parse_metrics(good).unwrap();
    assert_eq!(scrape.value("a_total", &[("x", "1")]), Some(2.0));
    assert_eq!(scrape.count("h_count", &[]), 2.0);
    for bad in [
        "# TYPE a counter\na_total 1\n",
        "# TYPE a counter\na 1\n# EOF\n",
        "# TYPE a gauge\nb 1\n# EOF\n",
        "# TYPE a gauge\na{x=1} 1\n# EOF\n",
        "# TYPE a gauge\na one\n# EOF\n",
        "# TYPE a gauge\na 1\na 2\n# EOF\n",
        "# TYPE a gauge\na 1\n# TYPE b gauge\nb 1\n# TYPE a gauge\n# EOF\n",
        "# TYPE h histogram\nh_bucket{le=\"+Inf\"} 2\nh_count 3\n# EOF\n",
        "# TYPE h histogram\nh_bucket{le=\"1\"} 3\nh_bucket{le=\"+Inf\"} 2\nh_count 2\n# EOF\n",
    ] {
        assert!(parse_metrics(bad).is_err(), "accepted {bad:?}");
    }
}
