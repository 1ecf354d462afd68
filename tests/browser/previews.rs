//! Browser tests of previews on held cards (docs/wire.md, Previews): the diff of a
//! `write_file` with its signs and colours, the diff of an edit before it is sent, and the
//! notes for a new file, a delete, a missing file and a binary file.

use crate::support::harness::{card, click, edit_args, App};

/// Puts a file in the demo sandbox before the first turn (which would seed it otherwise).
fn put(app: &App, name: &str, bytes: &[u8]) {
    std::fs::create_dir_all(app.sandbox("")).unwrap();
    std::fs::write(app.sandbox(name), bytes).unwrap();
}

async fn wait_pending(app: &App, tool: &str) {
    app.wait_for(
        &format!("the {tool} card waits"),
        &format!("{}[data-status=pending]", card(tool)),
    )
    .await;
}

/// The lines of `css` as (class, text), in order.
async fn lines(app: &App, css: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for line in app.find_all(&format!("{css} .diff-line")).await {
        let class = line.class_name().await.unwrap().unwrap_or_default();
        out.push((class, line.text().await.unwrap()));
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_shows_its_diff_and_an_edit_is_diffed_before_it_is_sent() {
    let app = App::start("preview-diff").await;
    put(&app, "notes.txt", b"alpha\nbeta\ngamma\n");
    app.open_new_chat().await;
    app.send("write notes.txt: alpha").await;
    wait_pending(&app, "write_file").await;
    let diff = "[data-testid=tool-preview] [data-testid=preview-diff]";
    app.wait_for("the diff shows on the card", diff).await;
    let shown = lines(&app, diff).await;
    let removed: Vec<&str> = shown
        .iter()
        .filter(|(class, _)| class.contains("diff-del"))
        .map(|(_, text)| text.as_str())
        .collect();
    let added: Vec<&str> = shown
        .iter()
        .filter(|(class, _)| class.contains("diff-add"))
        .map(|(_, text)| text.as_str())
        .collect();
    assert!(
        removed.iter().all(|line| line.starts_with('-')),
        "{shown:?}"
    );
    assert!(added.iter().all(|line| line.starts_with('+')), "{shown:?}");
    assert!(removed.contains(&"-gamma"), "{shown:?}");
    assert!(shown[0].1.starts_with("--- a/notes.txt"), "{shown:?}");
    // Colour as well as the sign: added and removed lines have backgrounds of their own.
    let colours = app
        .js(
            "const bg = (c) => getComputedStyle(document.querySelector(c)).backgroundColor; \
             return [bg('.diff-add'), bg('.diff-del'), bg('.diff-ctx, .diff-hunk')];",
        )
        .await;
    let colours: Vec<&str> = colours
        .as_array()
        .unwrap()
        .iter()
        .map(|colour| colour.as_str().unwrap())
        .collect();
    assert_ne!(colours[0], colours[1]);
    assert_ne!(colours[0], colours[2]);
    app.wait_for_text(
        "[data-testid=tool-preview] [data-testid=preview-summary]",
        "added",
    )
    .await;
    app.shots("preview-diff").await;

    // Edit, then Save: the edited content is diffed against the file before anything is sent.
    edit_args(
        &app,
        "the editor opens",
        r#"{"path": "notes.txt", "content": "alpha\nbeta\nGAMMA\n"}"#,
    )
    .await;
    click(&app, "[data-testid=edit-save]").await;
    let edited = "[data-testid=tool-edited-preview] [data-testid=preview-diff]";
    app.wait_for("the edit's diff shows", edited).await;
    let shown: Vec<String> = lines(&app, edited)
        .await
        .into_iter()
        .map(|(_, text)| text)
        .collect();
    assert!(shown.contains(&"-gamma".to_owned()), "{shown:?}");
    assert!(shown.contains(&"+GAMMA".to_owned()), "{shown:?}");
    assert!(!shown.iter().any(|line| line == "-beta"), "{shown:?}");
    app.wait_for_text(
        "[data-testid=tool-edited-preview] [data-testid=preview-summary]",
        "1 line removed, 1 line added",
    )
    .await;
    assert_eq!(
        std::fs::read_to_string(app.sandbox("notes.txt")).unwrap(),
        "alpha\nbeta\ngamma\n",
        "nothing was sent yet"
    );
    app.shot("preview-edited").await;
    click(&app, "[data-testid=approve-button]").await;
    app.wait_until("the edited content was written", || async {
        Ok(
            std::fs::read_to_string(app.sandbox("notes.txt")).unwrap_or_default()
                == "alpha\nbeta\nGAMMA\n",
        )
    })
    .await;
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn new_deleted_missing_and_binary_files_say_what_they_are() {
    let app = App::start("preview-notes").await;
    put(&app, "old.txt", b"first line\nsecond line\n");
    put(&app, "logo.png", &[0x89, b'P', b'N', b'G', 0xff, 0x00]);
    app.open_new_chat().await;
    app.send("write fresh.txt: hello and delete old.txt and delete gone.txt and write logo.png: x")
        .await;
    wait_pending(&app, "delete_file").await;
    let summaries = "[data-testid=tool-preview] [data-testid=preview-summary]";
    app.wait_until("four previews show", || async {
        Ok(app.find_all(summaries).await.len() == 4)
    })
    .await;
    let texts = app.texts(summaries).await;
    assert_eq!(
        texts,
        [
            "New file (5 bytes)",
            "Deletes a file of 23 bytes. It begins:",
            "The file does not exist.",
            "Binary file (6 bytes), not shown.",
        ]
    );
    let first = app
        .texts("[data-testid=tool-preview] [data-testid=preview-diff]")
        .await;
    assert_eq!(first, ["first line\nsecond line"]);
    app.shot("preview-notes").await;
    app.finish().await;
}
