//! Previews of held file calls (docs/wire.md, Previews): each action request's
//! `metadata.preview`, made at pause time without touching the sandbox.

use serde_json::{json, Value};

use crate::support::*;

/// Puts a file in the demo agent's sandbox before its first turn (which would seed it).
fn put(app: &TestApp, name: &str, bytes: &[u8]) {
    std::fs::create_dir_all(app.sandbox()).unwrap();
    std::fs::write(app.sandbox().join(name), bytes).unwrap();
}

/// Sends `text` to the demo agent; the action requests of the one batch it pauses with.
async fn held(app: &TestApp, text: &str) -> Vec<Value> {
    let results = say(app, text).await;
    let interrupts = data_parts(&results, "interrupt_data");
    assert_eq!(interrupts.len(), 1, "one batch: {results:?}");
    interrupts[0]["action_requests"].as_array().unwrap().clone()
}

#[tokio::test]
async fn a_changed_file_is_previewed_as_a_unified_diff_in_both_versions() {
    let app = spawn_app().await;
    put(&app, "notes.txt", b"hello\nworld\n");
    let path = app.sandbox().join("notes.txt");
    let requests = held(&app, "write notes.txt: hi").await;
    let metadata = &requests[0]["metadata"];
    assert_eq!(
        metadata["preview"],
        "--- a/notes.txt\n+++ b/notes.txt\n@@ -1,2 +1 @@\n-hello\n-world\n+hi\n\\ No newline at end of file\n"
    );
    assert_eq!(metadata["preview_base"], "hello\nworld\n");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "hello\nworld\n");

    // v1.0 carries the same metadata in the same place.
    let events = app
        .stream(
            Some("1.0"),
            message_request(
                "SendStreamingMessage",
                message_v10("write notes.txt: hi", None, None),
            ),
        )
        .await;
    let last = results(&events).last().cloned().unwrap();
    let parts = last["statusUpdate"]["status"]["message"]["parts"]
        .as_array()
        .unwrap()
        .clone();
    let data = parts.iter().find_map(|part| part.get("data")).unwrap();
    assert_eq!(data["action_requests"][0]["metadata"], *metadata);
}

#[tokio::test]
async fn a_new_file_a_delete_and_a_missing_file_say_so() {
    let app = spawn_app().await;
    let requests = held(
        &app,
        "write fresh.txt: four and delete old.txt and delete gone.txt",
    )
    .await;
    assert_eq!(
        preview_only(&requests[0]),
        json!({"preview": {"new_file": true, "size": 4}})
    );
    let old = std::fs::read_to_string(app.sandbox().join("old.txt")).unwrap();
    assert_eq!(
        requests[1]["metadata"]["preview"],
        json!({"exists": true, "size": old.len(), "first_lines": old, "more_lines": 0})
    );
    assert_eq!(requests[2]["metadata"]["preview"], json!({"exists": false}));
    assert!(!app.sandbox().join("fresh.txt").exists());
}

#[tokio::test]
async fn a_large_file_is_capped_and_carries_no_base() {
    let app = spawn_app().await;
    let text: String = (0..10_000).map(|line| format!("line {line}\n")).collect();
    put(&app, "big.txt", text.as_bytes());
    let requests = held(&app, "write big.txt: short").await;
    let metadata = requests[0]["metadata"].as_object().unwrap();
    let diff = metadata["preview"].as_str().unwrap();
    let lines: Vec<&str> = diff.lines().collect();
    // Two headers, 200 lines of the hunk, then the count of the rest (of 1 + 10,000 + 2).
    assert_eq!(lines.len(), 203, "{diff}");
    assert_eq!(lines[2], "@@ -1,10000 +1 @@");
    assert_eq!(lines[202], "… 9803 more lines");
    assert!(diff.len() <= 33 * 1024);
    assert!(
        !metadata.contains_key("preview_base"),
        "89 KB is over the base's cap"
    );
}

#[tokio::test]
async fn a_binary_file_is_said_to_be_binary_and_not_shown() {
    let app = spawn_app().await;
    let bytes = [0x89, b'P', b'N', b'G', 0xff, 0x00, b'S', b'E', b'C'];
    put(&app, "logo.png", &bytes);
    let requests = held(&app, "write logo.png: text and delete logo.png").await;
    for request in &requests {
        assert_eq!(
            preview_only(request),
            json!({"preview": {"binary": true, "size": 9}}),
            "{request}"
        );
    }
    assert_eq!(
        std::fs::read(app.sandbox().join("logo.png")).unwrap(),
        bytes
    );
}

/// A request's metadata without its `signoff_why` (what decided the call, tested in `cedar`).
fn preview_only(request: &Value) -> Value {
    let mut metadata = request["metadata"].clone();
    if let Some(fields) = metadata.as_object_mut() {
        fields.remove("signoff_why");
    }
    metadata
}
