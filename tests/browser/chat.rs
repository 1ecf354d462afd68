//! Browser tests of the chat itself: the home page and agent list, a streamed answer, reloads
//! and a server restart mid-turn, a long chat opened on its last rows, the sidebar, Stop,
//! hostile text, a phone's layout, a refused message, messages queued while the agent works,
//! and a reply to a waiting batch.

use crate::support::harness::{self, click, App};
use serde_json::Value;

fn state_of(task: &Value) -> &str {
    task["status"]["state"].as_str().unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn home_opens_the_first_agent_and_lists_the_agents() {
    let app = App::start("home").await;
    app.open("/").await;
    app.wait_for("an agent is listed", "[data-testid=agent-item]")
        .await;
    let agents = app.texts("[data-testid=agent-item]").await;
    assert!(
        agents.iter().any(|agent| agent.contains("default/demo")),
        "{agents:?}"
    );
    app.wait_until("/ opens the first agent's chat", || async {
        Ok(app.current_path().await == "/agents/default/demo/chat")
    })
    .await;
    app.wait_for("the empty state shows", "[data-testid=empty-state]")
        .await;
    let gated = app.texts("[data-testid=catalog-tool]").await;
    assert!(
        gated
            .iter()
            .any(|tool| tool.contains("write_file") && tool.contains("Requires approval")),
        "{gated:?}"
    );
    assert!(
        gated
            .iter()
            .any(|tool| tool.contains("read_file") && !tool.contains("Requires approval")),
        "{gated:?}"
    );
    app.shot("chat-empty").await;
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_streams_its_answer_and_the_url_follows_the_session() {
    let app = App::start("stream").await;
    app.open_new_chat().await;
    app.send("count to 30").await;
    app.wait_for_text("[data-testid=message-user]", "count to 30")
        .await;
    // While it streams: part of the answer shows, marked as streaming.
    app.wait_for(
        "the answer streams",
        "[data-testid=message-agent].streaming",
    )
    .await;
    let partial = app.texts("[data-testid=message-agent]").await.join("");
    assert!(!partial.contains("30"), "the answer came whole: {partial}");
    app.shot("chat-streaming").await;
    app.wait_for_status("ready").await;
    app.wait_for_text("[data-testid=message-agent]", "30").await;
    let session = app.session_id().await;
    assert!(!session.is_empty());
    let tasks = app.stored_tasks(&session).await;
    assert_eq!(
        tasks.iter().map(state_of).collect::<Vec<_>>(),
        ["completed"]
    );
    app.shot("chat-answered").await;
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reload_shows_the_chat_again() {
    let app = App::start("reload").await;
    app.open_new_chat().await;
    app.send("read readme.txt").await;
    app.wait_for(
        "the tool card shows",
        "[data-testid=tool-card][data-status=completed]",
    )
    .await;
    app.wait_for_status("ready").await;
    let before = app.texts("[data-testid=message-agent]").await;
    let path = app.current_path().await;
    app.assert_no_errors().await;
    app.driver.refresh().await.unwrap();
    app.wait_for_text("[data-testid=message-user]", "read readme.txt")
        .await;
    app.wait_for(
        "the card is rebuilt",
        "[data-testid=tool-card][data-status=completed]",
    )
    .await;
    assert_eq!(app.current_path().await, path);
    assert_eq!(app.texts("[data-testid=message-agent]").await, before);
    // The stored chat's messages were asked for as the app started, not once the agents list
    // (which its chat waits for to mount) had answered: the request went out first.
    let started = app
        .js(
            "const start = (path) => performance.getEntriesByType('resource') \
             .find((entry) => new URL(entry.name).pathname.startsWith(path))?.startTime; \
             return [start('/api/sessions/'), start('/api/agents')];",
        )
        .await;
    let (messages, agents) = (started[0].as_f64(), started[1].as_f64());
    assert!(
        messages
            .zip(agents)
            .is_some_and(|(messages, agents)| messages <= agents),
        "the chat's messages were asked for after the agents list: {started}"
    );
    app.shot("chat-reloaded").await;
    app.finish().await;
}

/// Records, from the page's start, each of the person's messages as it is drawn, in
/// `window.__drawn`: every new element, so a message drawn anew shows twice (an element moved
/// in the page, as a keyed list may when rows are added above it, is the same element).
const DRAWN_TAP: &str = r#"
window.__drawn = [];
const seen = new WeakSet();
new MutationObserver((changes) => {
  for (const change of changes) {
    for (const node of change.addedNodes) {
      if (!(node instanceof Element)) continue;
      const found = node.matches('[data-testid=message-user]')
        ? [node] : node.querySelectorAll('[data-testid=message-user]');
      for (const message of found) {
        if (seen.has(message)) continue;
        seen.add(message);
        window.__drawn.push(message.textContent.trim());
      }
    }
  }
}).observe(document, { childList: true, subtree: true });
"#;

/// A stored chat longer than a screenful opens on its last rows; the older ones are added
/// above them while the page is idle, until all are there in order, each drawn once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_stored_chat_opens_on_its_last_messages_and_adds_the_older_ones() {
    let app = App::start("long-chat").await;
    app.open_new_chat().await;
    let sent: Vec<String> = (1..=14).map(|n| format!("note {n}")).collect();
    for text in &sent {
        app.send(text).await;
        app.wait_for_text("[data-testid=message-user]", text).await;
        app.wait_for_status("ready").await;
    }
    app.before_each_page(DRAWN_TAP).await;
    app.driver.refresh().await.unwrap();
    let shown = || async {
        let texts = app.texts("[data-testid=message-user]").await;
        texts
            .iter()
            .map(|text| text.trim().to_owned())
            .collect::<Vec<_>>()
    };
    app.wait_until("every message is back, in order", || async {
        Ok(shown().await == sent)
    })
    .await;
    let drawn: Vec<String> = serde_json::from_value(app.js("return window.__drawn").await).unwrap();
    let at = |text: &String| {
        let at = drawn.iter().position(|drawn| drawn == text);
        at.unwrap_or_else(|| panic!("{text:?} never drawn: {drawn:?}"))
    };
    assert!(
        at(&sent[sent.len() - 1]) < at(&sent[0]),
        "the last message drawn before the first: {drawn:?}"
    );
    let mut once = drawn.clone();
    once.sort();
    once.dedup();
    assert_eq!(once.len(), drawn.len(), "each drawn once: {drawn:?}");
    assert_eq!(drawn.len(), sent.len(), "{drawn:?}");
    app.assert_no_errors().await;
    app.shot("chat-long-reloaded").await;
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_restart_mid_turn_says_so_then_follows_the_turn_to_its_end() {
    let mut app = App::start("server-restart").await;
    app.open_new_chat().await;
    app.send("count to 200").await;
    app.wait_for(
        "the answer streams",
        "[data-testid=message-agent].streaming",
    )
    .await;
    // The first keystroke prefetched the cards' and Stop's chunks. A fetch the stop cut would be
    // fetched again later, but the loader logs the failure, and this test checks the console.
    app.wait_until("the prefetched chunks are in", || async {
        let fetched = app
            .js(
                "return ['split_cards-', 'split_stop-'].every((chunk) => performance \
                 .getEntriesByType('resource').some((entry) => entry.name.includes(chunk)))",
            )
            .await;
        Ok(fetched == Value::Bool(true))
    })
    .await;
    app.stop_server().await;
    // Before, the chat said "Error: the stream ended before the agent finished" and stayed so.
    app.wait_for_status("reconnecting").await;
    app.wait_for_text("[data-testid=chat-status]", "reconnecting")
        .await;
    app.shot("server-down-mid-turn").await;
    app.start_server().await;
    app.wait_for_status("ready").await;
    app.wait_for_text("[data-testid=message-agent]", "199, 200")
        .await;
    app.shot("server-back-turn-finished").await;
    // Stopped while the chat is idle: it says so, not a green "Ready", until the server is back.
    app.stop_server().await;
    app.wait_for_status("offline").await;
    app.wait_for_text("[data-testid=chat-status]", "Cannot reach the server")
        .await;
    app.start_server().await;
    app.wait_for_status("ready").await;
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_agent_details_stay_as_the_person_left_them_across_a_reload() {
    let app = App::start("details-kept").await;
    app.open_new_chat().await;
    let open = ".layout.details-open";
    app.wait_for("the details show in a wide window", open)
        .await;
    click(&app, "[aria-label='Hide agent details']").await;
    app.wait_until("the details close", || async {
        Ok(app.find_all(open).await.is_empty())
    })
    .await;
    // Before, every reload opened them again.
    app.driver.refresh().await.unwrap();
    app.wait_for("the agent list loads", "[data-testid=agent-item]")
        .await;
    assert!(
        app.find_all(open).await.is_empty(),
        "the details opened again"
    );
    click(&app, "[data-testid=toggle-details]").await;
    app.wait_for("the details show again", open).await;
    app.driver.refresh().await.unwrap();
    app.wait_for("the details stay open after a reload", open)
        .await;
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_chat_shows_in_the_sidebar_and_can_be_deleted() {
    let app = App::start("sessions").await;
    app.open_new_chat().await;
    app.send("list files").await;
    app.wait_for_status("ready").await;
    let first = app.session_id().await;
    app.wait_for_text("[data-testid=session-item]", "list files")
        .await;

    app.find("[data-testid=new-chat]")
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    app.wait_for("the new chat is empty", "[data-testid=empty-state]")
        .await;
    assert_eq!(app.current_path().await, "/agents/default/demo/chat");
    app.send("read readme.txt").await;
    app.wait_for_status("ready").await;
    let second = app.session_id().await;
    assert_ne!(first, second);
    app.wait_until("both chats are listed, newest first", || async {
        let titles = app.texts("[data-testid=session-item]").await;
        Ok(titles.len() == 2 && titles[0].contains("read readme.txt"))
    })
    .await;
    assert_eq!(app.texts(".group-heading").await, ["Today"]);
    app.shot("sidebar-two-chats").await;

    // Delete the first chat, with a confirmation.
    let row = format!("[data-testid=session-item][data-session-id='{first}']");
    app.find(&format!("{row} [data-testid=session-delete]"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    let confirm = app
        .wait_for(
            "the confirmation shows",
            &format!("{row} [data-testid=session-delete-confirm]"),
        )
        .await;
    app.shot("sidebar-delete-confirm").await;
    confirm.click().await.unwrap();
    app.wait_until("the chat is gone from the sidebar", || async {
        Ok(app.find_all("[data-testid=session-item]").await.len() == 1)
    })
    .await;
    let status = app
        .http
        .get(format!("{}/api/sessions/{first}", app.base))
        .send()
        .await
        .unwrap()
        .status();
    assert_eq!(status.as_u16(), 404);
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_cancels_the_task_on_the_server() {
    let app = App::start("stop").await;
    app.open_new_chat().await;
    app.send("count to 2000").await;
    app.wait_for(
        "the answer streams",
        "[data-testid=message-agent].streaming",
    )
    .await;
    let stop = app
        .wait_for("Stop shows", "[data-testid=stop-button]")
        .await;
    stop.click().await.unwrap();
    app.wait_for("the chat says canceled", "[data-testid=notice-canceled]")
        .await;
    app.wait_for_status("ready").await;
    let session = app.session_id().await;
    let tasks = app.stored_tasks(&session).await;
    assert_eq!(tasks.iter().map(state_of).collect::<Vec<_>>(), ["canceled"]);
    let shown = app.texts("[data-testid=message-agent]").await.join("");
    assert!(!shown.contains("2000"), "the answer ran to its end");
    app.shot("chat-stopped").await;
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_script_in_a_message_is_shown_as_text_and_never_runs() {
    let app = App::start("script").await;
    app.open_new_chat().await;
    // "list files and …": the scripted model quotes the part it did not understand.
    let hostile = "list files and <script>window.__pwned = 1</script><img src=x onerror=\"window.__pwned = 2\">";
    app.send(hostile).await;
    app.wait_for_status("ready").await;
    app.wait_for_text(
        "[data-testid=message-user]",
        "<script>window.__pwned = 1</script>",
    )
    .await;
    app.wait_for_text("[data-testid=message-agent]", "<img src=x")
        .await;
    assert_eq!(app.js("return typeof window.__pwned").await, "undefined");
    assert!(app.find_all(".bubble script, .bubble img").await.is_empty());
    app.shot("chat-script-as-text").await;
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_layout_fits_a_phone() {
    let app = App::start_with(
        "phone",
        harness::Options {
            size: (390, 844),
            ..harness::Options::default()
        },
    )
    .await;
    std::fs::write(
        app.sandbox("table.md"),
        format!(
            "Headers:\n\n|{}\n|{}\n|{}\n",
            "description |".repeat(8),
            "---|".repeat(8),
            " x |".repeat(8)
        ),
    )
    .unwrap();
    app.open_new_chat().await;
    app.send("read readme.txt and read table.md").await;
    app.wait_for_status("ready").await;
    app.wait_for("the table shows", ".markdown th").await;
    let overflow = app
        .js("return document.documentElement.scrollWidth - window.innerWidth")
        .await;
    assert!(
        overflow.as_i64().unwrap_or(1) <= 0,
        "the page scrolls sideways by {overflow}"
    );
    // A header never breaks inside its word: a table too wide scrolls in its box instead
    // (before, a phone's headers stood a few letters a line).
    let lines = app
        .js(
            "return [...document.querySelectorAll('.markdown th')].map((th) => { \
             const range = document.createRange(); range.selectNodeContents(th); \
             return range.getClientRects().length; })",
        )
        .await;
    let lines: Vec<u64> = serde_json::from_value(lines).unwrap();
    assert_eq!(lines.len(), 8);
    assert!(
        lines.iter().all(|&count| count == 1),
        "lines per header: {lines:?}"
    );
    app.shot("phone-chat").await;
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_message_shows_the_servers_words_and_gives_the_text_back() {
    // A laptop-sized window, where the composer reaches the right edge under any toast.
    let app = App::start_with(
        "refused",
        harness::Options {
            size: (900, 700),
            ..harness::Options::default()
        },
    )
    .await;
    // An agent the server does not run: the send is refused.
    app.open("/agents/default/nobody/chat").await;
    app.send("hello?").await;
    app.wait_for("a toast shows", "[data-testid=toast]").await;
    let toast = app.texts("[data-testid=toast]").await.join(" ");
    assert!(toast.contains("nobody"), "{toast}");
    let input = app.find("[data-testid=composer-input]").await.unwrap();
    assert_eq!(
        input.prop("value").await.unwrap().as_deref(),
        Some("hello?")
    );
    assert!(app.find_all("[data-testid=message-user]").await.is_empty());
    // The toast leaves the composer's Send button free to press again.
    let overlap = app
        .js(
            "const a = document.querySelector('[data-testid=toast]').getBoundingClientRect();\
             const b = document.querySelector('[data-testid=send-button]').getBoundingClientRect();\
             return a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;",
        )
        .await;
    assert_eq!(
        overlap,
        serde_json::json!(false),
        "the toast covers the Send button"
    );
    app.shot("toast-refused").await;
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_sent_while_the_agent_works_is_queued_then_delivered() {
    let app = App::start("queued").await;
    app.open_new_chat().await;
    app.send("count to 400").await;
    app.wait_for(
        "the answer streams",
        "[data-testid=message-agent].streaming",
    )
    .await;
    // The composer stays usable and says what a message does now.
    let input = app.find("[data-testid=composer-input]").await.unwrap();
    input.send_keys("list files").await.unwrap();
    app.wait_for_text("[data-testid=composer-hint]", "waits")
        .await;
    input.send_keys(thirtyfour::Key::Enter).await.unwrap();
    app.wait_for("the message shows queued", "[data-testid=message-queued]")
        .await;
    app.shot("chat-queued").await;
    // The count ends, the message reaches the agent, and the agent answers it in the same task.
    app.wait_for(
        "the message shows delivered",
        "[data-testid=message-delivered]",
    )
    .await;
    app.wait_for_status("ready").await;
    assert!(app
        .find_all("[data-testid=message-queued]")
        .await
        .is_empty());
    let session = app.session_id().await;
    let tasks = app.stored_tasks(&session).await;
    assert_eq!(
        tasks.iter().map(state_of).collect::<Vec<_>>(),
        ["completed"]
    );
    let said: Vec<&str> = tasks[0]["history"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|message| message["role"] == "user")
        .filter_map(|message| message["parts"][0]["text"].as_str())
        .collect();
    assert_eq!(said, ["count to 400", "list files"]);
    let shown = app.texts("[data-testid=message-agent]").await.join(" ");
    assert!(shown.contains("The folder . holds"), "{shown}");
    app.assert_no_errors().await;
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_to_a_waiting_batch_says_it_rejects_the_calls_then_does() {
    let app = App::start("reply").await;
    app.open_new_chat().await;
    app.send("write notes.txt: hi and delete old.txt").await;
    app.wait_for_status("approval").await;
    let input = app.find("[data-testid=composer-input]").await.unwrap();
    input
        .send_keys("write it to drafts/notes.txt instead")
        .await
        .unwrap();
    app.wait_for_text(
        "[data-testid=composer-hint]",
        "Sending this will reject the 2 pending calls, with your message as the reason.",
    )
    .await;
    app.shot("chat-reply-hint").await;
    input.send_keys(thirtyfour::Key::Enter).await.unwrap();
    app.wait_for_status("ready").await;
    let shown = app.texts("[data-testid=message-agent]").await.join(" ");
    assert!(
        shown.contains("write it to drafts/notes.txt instead"),
        "the agent read the reason: {shown}"
    );
    let session = app.session_id().await;
    let tasks = app.stored_tasks(&session).await;
    assert_eq!(
        tasks.iter().map(state_of).collect::<Vec<_>>(),
        ["completed"]
    );
    assert!(!app.sandbox("notes.txt").exists(), "a rejected call ran");
    app.assert_no_errors().await;
    app.finish().await;
}
