//! Browser tests of the UI's wasm chunks (docs/toolchain.md, UI chunks): a fresh chat fetches
//! none of them before its composer works but its header's Share menu, then the approvals
//! stream's chunk while it is idle, the chunks of the cards and of Stop once the person starts
//! writing, and each other part behind a split point fetches its own chunk when first shown.

use crate::support::harness::App;

/// The paths of every file the page has fetched so far.
async fn fetched(app: &App) -> Vec<String> {
    let value = app
        .js("return performance.getEntriesByType('resource').map(e => new URL(e.name).pathname)")
        .await;
    value
        .as_array()
        .unwrap()
        .iter()
        .map(|path| path.as_str().unwrap().to_owned())
        .collect()
}

fn chunks(paths: &[String]) -> Vec<&String> {
    paths
        .iter()
        .filter(|path| path.starts_with("/split_"))
        .collect()
}

#[tokio::test]
async fn a_fresh_chat_fetches_no_chunk_and_each_part_fetches_its_own_when_first_shown() {
    let app = App::start("chunks").await;
    app.open_new_chat().await;
    app.wait_for("a composer", "[data-testid=composer-input]")
        .await;
    let before = fetched(&app).await;
    assert!(
        before.iter().any(|path| path.ends_with("_bg.wasm")),
        "the main module: {before:?}"
    );
    // The chunks of the cards, of Stop and of the approvals stream may already be on their
    // way: they are fetched as soon as the page is idle.
    let prefetched = ["/split_cards-", "/split_stop-", "/split_stream-"];
    let loaded = chunks(&before);
    assert!(
        loaded.iter().all(|path| path.starts_with("/split_share-")
            || prefetched.iter().any(|chunk| path.starts_with(chunk))),
        "a fresh chat fetched more than its header's Share menu, the cards, Stop and the approvals stream: {loaded:?}"
    );
    let fetched_all = |wanted: &'static [&'static str]| {
        let app = &app;
        move || async move {
            let loaded = fetched(app).await;
            Ok(wanted
                .iter()
                .all(|chunk| chunks(&loaded).iter().any(|path| path.starts_with(chunk))))
        }
    };
    app.wait_until(
        "the approvals stream's chunk is fetched while the chat is idle",
        fetched_all(&["/split_stream-"]),
    )
    .await;
    let idle = fetched(&app).await;
    assert!(
        !chunks(&idle)
            .iter()
            .any(|path| path.starts_with("/split_cards-")),
        "the cards' chunk before the person writes anything: {idle:?}"
    );
    // Before any card shows, so that a first card, its Reject or Edit, and Stop while the agent
    // works wait for no fetch.
    let input = app.find("[data-testid=composer-input]").await.unwrap();
    input.send_keys("hello").await.unwrap();
    app.wait_until(
        "the chunks of the cards and Stop are fetched once the person writes",
        fetched_all(&["/split_cards-", "/split_stop-"]),
    )
    .await;
    assert!(
        app.find_all("[data-testid=tool-card]").await.is_empty(),
        "a fresh chat shows no card"
    );
    input.send_keys(thirtyfour::Key::Enter).await.unwrap();
    // The thumbs come from the answer's chunk, with the markdown parser.
    app.wait_for("the thumbs", "[data-testid=feedback-up]")
        .await;
    let answered = fetched(&app).await;
    assert!(
        chunks(&answered)
            .iter()
            .any(|path| path.starts_with("/split_answer-")),
        "an answer's chunk: {answered:?}"
    );
    assert!(
        !chunks(&answered)
            .iter()
            .any(|path| path.starts_with("/split_approvals-")),
        "the Approvals page's chunk before its first use: {answered:?}"
    );

    crate::support::harness::click(&app, "[data-testid=approvals-link]").await;
    app.wait_for("the Approvals page", "[data-testid=approvals-page]")
        .await;
    let after = fetched(&app).await;
    assert!(
        chunks(&after)
            .iter()
            .any(|path| path.starts_with("/split_approvals-")),
        "the Approvals page's chunk: {after:?}"
    );
    app.assert_no_errors().await;
    app.finish().await;
}
