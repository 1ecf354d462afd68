//! Browser tests of what a person moving over from kagent's chat page expects to find: token
//! counts in the header and on each answer, a page for a chat that does not exist, and long
//! answers folded behind "Show more".

use crate::support::harness::{self, App};

/// `"1,234 tokens"` as 1234.
fn count_in(text: &str) -> u64 {
    let digits: String = text.chars().filter(char::is_ascii_digit).collect();
    digits
        .parse()
        .unwrap_or_else(|_| panic!("no count in {text:?}"))
}

/// The total the header shows, as a number.
async fn header_total(app: &App) -> u64 {
    count_in(&app.text("[data-testid=session-usage]").await)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn token_counts_show_in_the_header_and_on_each_answer_by_hover_and_focus() {
    let app = App::start("usage").await;
    app.open_new_chat().await;
    assert!(app.find_all("[data-testid=session-usage]").await.is_empty());
    app.send("count to 5").await;
    app.wait_for_status("ready").await;
    app.wait_for("the header shows the total", "[data-testid=session-usage]")
        .await;
    app.wait_for("the answer shows its count", "[data-testid=answer-usage]")
        .await;
    let first_total = header_total(&app).await;
    // A short answer has nothing to fold.
    assert!(app.find_all("[data-testid=show-more]").await.is_empty());
    assert!(first_total > 0);

    // Hidden until asked for; a mouse over it shows the breakdown.
    let chip = app.find("[data-testid=answer-usage]").await.unwrap();
    let tip = app.find("[data-testid=answer-usage-tip]").await.unwrap();
    assert!(!tip.is_displayed().await.unwrap());
    app.driver
        .action_chain()
        .move_to_element_center(&chip)
        .perform()
        .await
        .unwrap();
    app.wait_until("hovering shows the breakdown", || async {
        tip.is_displayed().await
    })
    .await;
    let breakdown = tip.text().await.unwrap();
    assert!(
        breakdown.contains("Prompt") && breakdown.contains("Completion"),
        "{breakdown}"
    );
    assert!(
        breakdown.ends_with(&format!("Total {first_total}")),
        "one answer: its total is the chat's ({first_total}): {breakdown}"
    );

    // A second answer: the header adds it up.
    app.driver
        .action_chain()
        .move_to_element_center(&app.find("[data-testid=chat-title]").await.unwrap())
        .perform()
        .await
        .unwrap();
    app.send("count to 12").await;
    app.wait_until("the second answer shows its count", || async {
        Ok(app.find_all("[data-testid=answer-usage]").await.len() == 2)
    })
    .await;
    app.wait_for_status("ready").await;
    let answers = app.find_all("[data-testid=answer-usage]").await;
    let mut sum = 0;
    for answer in &answers {
        let label = answer.attr("aria-label").await.unwrap().unwrap_or_default();
        assert!(
            label.starts_with("Tokens for this answer: Prompt"),
            "{label}"
        );
        sum += count_in(label.rsplit("Total").next().unwrap());
    }
    app.wait_until("the header shows both answers' total", || async {
        Ok(header_total(&app).await == sum)
    })
    .await;
    assert!(sum > first_total);

    // Keyboard: from the first answer's last control (its thumbs down), Tab moves to the
    // second count, and focus shows its breakdown.
    assert_eq!(
        answers[1].attr("tabindex").await.unwrap().as_deref(),
        Some("0")
    );
    app.js("document.querySelector('[data-testid=feedback-down]').focus()")
        .await;
    app.find("[data-testid=feedback-down]")
        .await
        .unwrap()
        .send_keys(thirtyfour::prelude::Key::Tab)
        .await
        .unwrap();
    let focused = app
        .js("return document.activeElement.getAttribute('aria-label')")
        .await;
    assert_eq!(
        focused.as_str(),
        answers[1].attr("aria-label").await.unwrap().as_deref()
    );
    let second_tip = answers[1]
        .find(thirtyfour::By::Css("[data-testid=answer-usage-tip]"))
        .await
        .unwrap();
    app.wait_until("focus shows the breakdown", || async {
        second_tip.is_displayed().await
    })
    .await;
    for scheme in ["light", "dark"] {
        app.color_scheme(scheme).await;
        app.shot(&format!("usage-{scheme}")).await;
    }
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_or_unknown_chat_shows_session_not_found_with_a_way_out() {
    let app = App::start("not-found").await;
    app.open_new_chat().await;
    app.send("count to 3").await;
    app.wait_for_status("ready").await;
    let session = app.session_id().await;
    let deleted = app
        .http
        .delete(format!("{}/api/sessions/{session}", app.base))
        .send()
        .await
        .unwrap()
        .status();
    assert!(deleted.is_success(), "{deleted}");

    for id in [session.as_str(), "no-such-chat"] {
        app.open(&format!("/agents/default/demo/chat/{id}")).await;
        let page = app
            .wait_for(
                "the not-found page shows",
                "[data-testid=session-not-found]",
            )
            .await;
        let text = page.text().await.unwrap();
        assert!(text.contains("Session not found"), "{text}");
        // A page, not a toast over an empty chat, and nothing to type into.
        assert!(app.find_all("[data-testid=toast]").await.is_empty());
        assert!(app
            .find_all("[data-testid=composer-input]")
            .await
            .is_empty());
        assert!(app.find_all("[data-testid=empty-state]").await.is_empty());
    }
    for scheme in ["light", "dark"] {
        app.color_scheme(scheme).await;
        app.shot(&format!("not-found-{scheme}")).await;
    }
    app.color_scheme("light").await;

    app.find("[data-testid=start-new-chat]")
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    app.wait_for("a new chat opens", "[data-testid=empty-state]")
        .await;
    assert_eq!(app.current_path().await, "/agents/default/demo/chat");
    assert!(app
        .find_all("[data-testid=session-not-found]")
        .await
        .is_empty());
    app.send("count to 2").await;
    app.wait_for_status("ready").await;
    assert_ne!(app.session_id().await, session);
    app.finish().await;
}

/// Whether the element matching `css` is cut short (its content is taller than its box).
async fn cut_short(app: &App, css: &str) -> bool {
    app.js(&format!(
        "const e = document.querySelector('{css}'); return e.scrollHeight > e.clientHeight + 1"
    ))
    .await
    .as_bool()
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_answer_and_a_long_result_fold_behind_show_more_with_whole_markdown() {
    let app = App::start("long-text").await;
    let mut notes = String::from("# Long notes\n\n");
    for n in 1..=40 {
        notes.push_str(&format!(
            "- item {n}: a line long enough to make the file long\n"
        ));
    }
    notes.push_str("\n```\nfirst code line\nlast code line\n```\n\nThe end.\n");
    std::fs::write(app.sandbox("long.md"), notes).unwrap();
    app.open_new_chat().await;
    app.send("read long.md").await;
    app.wait_for_status("ready").await;

    // The answer: clamped, yet all of its markdown is there and whole.
    let bubble = "[data-testid=message-agent]";
    app.wait_for("the long answer folds", &format!("{bubble}.clamped"))
        .await;
    assert!(cut_short(&app, bubble).await);
    let items = app.find_all(&format!("{bubble} li")).await;
    assert_eq!(items.len(), 40);
    assert_eq!(app.find_all(&format!("{bubble} pre")).await.len(), 1);
    let toggle = app
        .find(".row-agent > [data-testid=show-more]")
        .await
        .unwrap();
    assert_eq!(toggle.text().await.unwrap(), "Show more");
    assert_eq!(
        toggle.attr("aria-expanded").await.unwrap().as_deref(),
        Some("false")
    );
    app.shot("long-answer-folded").await;
    toggle.click().await.unwrap();
    app.wait_until("the whole answer shows", || async {
        Ok(!cut_short(&app, bubble).await)
    })
    .await;
    assert_eq!(toggle.text().await.unwrap(), "Show less");
    assert_eq!(
        toggle.attr("aria-expanded").await.unwrap().as_deref(),
        Some("true")
    );
    toggle.click().await.unwrap();
    app.wait_until("it folds again", || async {
        Ok(cut_short(&app, bubble).await)
    })
    .await;

    // The tool's result (one JSON line, wrapped when long): folded the same way once its
    // section is open.
    app.find("[data-testid=tool-result] summary")
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    let result = "[data-testid=tool-result] pre";
    app.wait_until("the long result folds", || async {
        Ok(cut_short(&app, result).await)
    })
    .await;
    let result_toggle = app
        .find("[data-testid=tool-result] [data-testid=show-more]")
        .await
        .unwrap();
    result_toggle.click().await.unwrap();
    app.wait_until("the whole result shows", || async {
        Ok(!cut_short(&app, result).await)
    })
    .await;
    let text = app.find(result).await.unwrap().text().await.unwrap();
    assert!(text.contains("The end."), "{text}");
    app.finish().await;
}

/// A model endpoint that answers a chat completion's headers and then stays silent, holding
/// each connection open: the agent's turn waits, and its stream sends nothing.
async fn silent_model() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}/v1", listener.local_addr().unwrap());
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((mut socket, _)) = listener.accept().await {
            let mut request = vec![0u8; 64 * 1024];
            let _ = tokio::io::AsyncReadExt::read(&mut socket, &mut request).await;
            let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\r\n";
            let _ = tokio::io::AsyncWriteExt::write_all(&mut socket, head.as_bytes()).await;
            held.push(socket);
        }
    });
    base
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_stream_is_ended_the_ui_says_so_and_keeps_the_typed_text() {
    let model = silent_model().await;
    let agents = format!(
        "[[agents]]\nname = \"silent\"\nnamespace = \"default\"\n\
         model = {{ kind = \"openai\", base_url = \"{model}\", model = \"m\" }}\n"
    );
    let app = App::start_with(
        "idle",
        harness::Options {
            agents_toml: Some(agents),
            stream_idle_timeout_secs: Some(2),
            ..harness::Options::default()
        },
    )
    .await;
    app.open_new_chat_of("/agents/default/silent/chat").await;
    app.send("are you there?").await;
    app.wait_for_text("[data-testid=message-user]", "are you there?")
        .await;
    // While the agent is silent, the person starts the next message.
    let input = app.find("[data-testid=composer-input]").await.unwrap();
    input.send_keys("my next question").await.unwrap();
    app.wait_for_status("error").await;
    // The whole sentence in the toast; the status line says it on one line.
    app.wait_for_text("[data-testid=toast]", "sent nothing for 2 seconds")
        .await;
    let status = app.texts("[data-testid=chat-status]").await.join("");
    assert!(status.contains("Error: the agent sent nothing"), "{status}");
    assert_eq!(
        input.prop("value").await.unwrap().as_deref(),
        Some("my next question")
    );
    let bubbles = app.texts("[data-testid=message-user]").await;
    assert_eq!(bubbles, ["are you there?"]);
    app.shot("stream-idle-ended").await;
    app.finish().await;
}
