//! Feedback on answers (`/api/feedback`): storage with the answer's task and message ids,
//! validation that changes nothing, per-user lists, and the ratings in the chat's tasks.

use serde_json::{json, Value};

use crate::support::*;

async fn say_as(app: &TestApp, token: Option<&str>, text: &str) -> Vec<Value> {
    let body = message_request("message/stream", message_v03(text, None, None));
    results(&app.stream_as(None, token, body).await)
}

async fn rate(app: &TestApp, token: Option<&str>, body: Value) -> (u16, Value) {
    app.post_json_as("/api/feedback", token, &body).await
}

#[tokio::test]
async fn feedback_is_stored_with_the_answer_listed_per_user_and_shown_in_the_chat() {
    let app = spawn_with(|config| {
        config.auth = signoff_server::AuthMode::Tokens;
        config.tokens = vec!["alice-token=alice".into(), "bob-token=bob".into()];
    })
    .await;
    let (alice, bob) = (Some("alice-token"), Some("bob-token"));
    let first = say_as(&app, alice, "list files").await;
    let (task, chat) = (task_id(&first), context_id(&first));
    let other = say_as(&app, alice, "count to 3").await;
    let (other_task, other_chat) = (task_id(&other), context_id(&other));

    let (status, down) = rate(
        &app,
        alice,
        json!({"task_id": task, "context_id": chat, "rating": "down", "reason": "  too terse "}),
    )
    .await;
    assert_eq!(status, 201, "{down}");
    assert_eq!(down["rating"], "down");
    assert_eq!(down["reason"], "too terse");
    assert_eq!(down["created_by"], "alice");
    assert_eq!(down["task_id"], task.as_str());
    assert_eq!(down["context_id"], chat.as_str());
    // The answer's message: the task's last agent message.
    let (_, session) = app.get_as(&format!("/api/sessions/{chat}"), alice).await;
    let stored = &session["tasks"][0];
    let answer = stored["status"]["message"]["messageId"]
        .as_str()
        .map(str::to_owned)
        .or_else(|| {
            stored["history"]
                .as_array()
                .unwrap()
                .iter()
                .rev()
                .find(|message| message["role"] == "agent")
                .map(|message| message["messageId"].as_str().unwrap().to_owned())
        })
        .unwrap();
    assert_eq!(down["message_id"], answer.as_str());
    let (status, up) = rate(
        &app,
        alice,
        json!({"task_id": task, "context_id": chat, "rating": "up"}),
    )
    .await;
    assert_eq!(status, 201, "{up}");
    assert_eq!(up["reason"], Value::Null);
    // An answer streamed as an artifact is rated by the artifact's id.
    let (status, counted) = rate(
        &app,
        alice,
        json!({"task_id": other_task, "context_id": other_chat, "rating": "up"}),
    )
    .await;
    assert_eq!(status, 201, "{counted}");
    let (_, other_session) = app
        .get_as(&format!("/api/sessions/{other_chat}"), alice)
        .await;
    let artifacts = other_session["tasks"][0]["artifacts"].as_array().unwrap();
    assert_eq!(
        counted["message_id"],
        artifacts.last().unwrap()["artifactId"],
        "{other_session}"
    );

    // Bad input: a clear error, and nothing stored.
    let long = "x".repeat(4 * 1024 + 1);
    for (body, want, words) in [
        (
            json!({"task_id": task, "context_id": chat, "rating": "meh"}),
            400,
            "rating",
        ),
        (json!({"task_id": task, "context_id": chat}), 400, "rating"),
        (
            json!({"task_id": task, "context_id": chat, "rating": "up", "extra": 1}),
            400,
            "extra",
        ),
        (
            json!({"task_id": task, "context_id": "nope", "rating": "up"}),
            404,
            "session nope not found",
        ),
        (
            json!({"task_id": "nope", "context_id": chat, "rating": "up"}),
            404,
            "task nope not found",
        ),
        (
            json!({"task_id": other_task, "context_id": chat, "rating": "up"}),
            400,
            "is not in chat",
        ),
        (
            json!({"task_id": task, "context_id": chat, "rating": "down", "reason": long}),
            400,
            "the limit is 4096 bytes",
        ),
    ] {
        let (status, answer) = rate(&app, alice, body.clone()).await;
        assert_eq!(status, want, "{body}: {answer}");
        let error = answer["error"].as_str().unwrap();
        assert!(error.contains(words), "{error}");
    }
    // Another user cannot rate Alice's answer, and sees none of her ratings.
    let (status, _) = rate(
        &app,
        bob,
        json!({"task_id": task, "context_id": chat, "rating": "up"}),
    )
    .await;
    assert_eq!(status, 404);
    let (_, bobs) = app.get_as("/api/feedback", bob).await;
    assert_eq!(bobs, json!({"feedback": []}));
    let (status, _) = app.get_as("/api/feedback", None).await;
    assert_eq!(status, 401);

    let (status, mine) = app.get_as("/api/feedback", alice).await;
    assert_eq!(status, 200);
    assert_eq!(mine["feedback"], json!([down, up, counted]));
    // In the chat: each task's ratings beside its audit trail.
    let (_, session) = app.get_as(&format!("/api/sessions/{chat}"), alice).await;
    assert_eq!(
        session["tasks"][0]["metadata"]["signoff_feedback"],
        json!([down, up])
    );
}

#[tokio::test]
async fn deleting_a_chat_deletes_its_ratings_and_share_links() {
    let app = spawn_app().await;
    let done = say(&app, "list files").await;
    let (task, chat) = (task_id(&done), context_id(&done));
    let (status, _) = rate(
        &app,
        None,
        json!({"task_id": task, "context_id": chat, "rating": "up"}),
    )
    .await;
    assert_eq!(status, 201);
    let (status, _) = app
        .post_json_as(&format!("/api/sessions/{chat}/shares"), None, &json!({}))
        .await;
    assert_eq!(status, 201);
    assert_eq!(app.delete(&format!("/api/sessions/{chat}")).await, 204);
    for table in ["feedback", "shares"] {
        let sql = format!("SELECT COUNT(*) FROM {table} WHERE context_id = ?1");
        assert_eq!(
            sql_count(app.data_dir.path(), &sql, &chat).await,
            0,
            "{table} keeps rows of the deleted chat"
        );
    }
    let (_, mine) = app.get("/api/feedback").await;
    assert_eq!(mine, json!({"feedback": []}));
}
