//! Browser tests of the Approvals page and its live stream: two tabs of one person and two
//! people with tokens see batches come and go without a reload, a decision made in the inbox
//! runs once, the tab title counts, notifications (a stubbed `window.Notification`) come only
//! when turned on and the tab is hidden, a broken approvals stream resumes after its last
//! event, losing and repeating nothing, and seven tabs share one stream.

use crate::support::harness::{card, click, App, Browser, Options};
use serde_json::{json, Value};
use thirtyfour::prelude::*;

const INBOX_BATCH: &str = "[data-testid=inbox-batch]";

/// Pauses a new chat with `agent` over A2A as the user of `token` (as another client would):
/// its task and context ids.
async fn pause(app: &App, agent: &str, token: Option<&str>, text: &str) -> (String, String) {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "message/stream", "params": {
        "message": {"kind": "message", "messageId": format!("m-{text}"), "role": "user",
                    "parts": [{"kind": "text", "text": text}]}}});
    let mut request = app
        .http
        .post(format!("{}/api/a2a/default/{agent}", app.base))
        .json(&body);
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let text = request.send().await.unwrap().text().await.unwrap();
    let results: Vec<Value> = text
        .lines()
        .filter_map(|line| line.strip_prefix("data: "))
        .map(|data| serde_json::from_str::<Value>(data).unwrap()["result"].clone())
        .collect();
    let last = results.last().unwrap();
    assert_eq!(last["status"]["state"], "input-required", "{text}");
    let task = last["taskId"].as_str().or(last["id"].as_str()).unwrap();
    (
        task.to_owned(),
        last["contextId"].as_str().unwrap().to_owned(),
    )
}

/// Decides `task` over REST as the user of `token`.
async fn decide(app: &App, token: Option<&str>, task: &str, decision: Value) {
    let mut request = app
        .http
        .post(format!("{}/api/approvals/{task}", app.base))
        .json(&decision);
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    assert_eq!(request.send().await.unwrap().status(), 200);
}

async fn title(app: &App) -> String {
    app.driver.title().await.unwrap_or_default()
}

async fn wait_title(app: &App, expected: &str) {
    let what = format!("the tab title is {expected:?}");
    app.wait_until(&what, || async { Ok(title(app).await == expected) })
        .await;
}

/// A number the stream tap (`STREAM_TAP`) keeps, as the page says it now.
async fn count(app: &App, name: &str) -> u64 {
    app.js(&format!("return {name}"))
        .await
        .as_u64()
        .unwrap_or(0)
}

/// The task ids of the batches the inbox shows, top to bottom.
async fn inbox_tasks(app: &App) -> Vec<String> {
    let ids = app
        .js("return [...document.querySelectorAll('[data-testid=inbox-batch]')].map((e) => e.dataset.taskId)")
        .await;
    serde_json::from_value(ids).unwrap_or_default()
}

async fn wait_inbox(app: &App, expected: &[&str]) {
    let what = format!("the inbox shows {expected:?}");
    app.wait_until(&what, || async { Ok(inbox_tasks(app).await == expected) })
        .await;
}

fn in_inbox(task: &str, css: &str) -> String {
    format!("{INBOX_BATCH}[data-task-id=\"{task}\"] {css}")
}

/// The decisions of `task` in the audit trail.
async fn decisions_of(app: &App, task: &str) -> Vec<Value> {
    let body = app.get_json("/api/approvals?state=decided&limit=500").await;
    body["decisions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|entry| entry["taskId"] == task)
        .cloned()
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_tabs_of_one_person_share_the_inbox_live_and_an_inbox_decision_runs_once() {
    let app = App::start("inbox-two-tabs").await;
    app.open_new_chat().await;
    let chat_tab = app.driver.window().await.unwrap();
    let inbox_tab = app.driver.new_tab().await.unwrap();
    app.driver
        .switch_to_window(inbox_tab.clone())
        .await
        .unwrap();
    app.open("/approvals").await;
    app.wait_for("the empty inbox", "[data-testid=approvals-empty]")
        .await;
    wait_title(&app, "Signoff").await;

    // A batch made in the chat tab shows in the inbox tab, and both titles count it.
    app.driver.switch_to_window(chat_tab.clone()).await.unwrap();
    app.send("write notes.txt: first").await;
    app.wait_for(
        "the pending card",
        &format!("{}[data-status=pending]", card("write_file")),
    )
    .await;
    wait_title(&app, "(1) Signoff").await;
    app.driver
        .switch_to_window(inbox_tab.clone())
        .await
        .unwrap();
    app.wait_for(
        "the batch in the inbox",
        &format!("{INBOX_BATCH} {}", card("write_file")),
    )
    .await;
    wait_title(&app, "(1) Signoff").await;
    app.wait_for_text("[data-testid=approvals-badge]", "1")
        .await;
    app.wait_for_text("[data-testid=inbox-agent]", "default/demo")
        .await;
    // Titled with what it asks for; the chat it came from beside it.
    app.wait_for_text("[data-testid=inbox-asks]", "write_file notes.txt")
        .await;
    app.wait_for_text("[data-testid=inbox-open-chat]", "write notes.txt: first")
        .await;

    // Decided in the chat tab: it leaves the inbox tab.
    app.driver.switch_to_window(chat_tab.clone()).await.unwrap();
    click(
        &app,
        &format!("{} [data-testid=approve-button]", card("write_file")),
    )
    .await;
    app.wait_for_status("ready").await;
    app.driver
        .switch_to_window(inbox_tab.clone())
        .await
        .unwrap();
    app.wait_for("the inbox empties", "[data-testid=approvals-empty]")
        .await;
    // It does not vanish without a word: the page says what became of it.
    app.wait_for_text(
        "[data-testid=recent-batch]",
        "write_file notes.txt: decided by local",
    )
    .await;
    wait_title(&app, "Signoff").await;
    assert!(app
        .find_all("[data-testid=approvals-badge]")
        .await
        .is_empty());

    // Made in the chat tab, decided in the inbox tab: it runs once, and the chat tab says at
    // once that it was decided elsewhere.
    app.driver.switch_to_window(chat_tab.clone()).await.unwrap();
    app.send("delete notes.txt").await;
    app.wait_for(
        "the pending card",
        &format!("{}[data-status=pending]", card("delete_file")),
    )
    .await;
    app.driver
        .switch_to_window(inbox_tab.clone())
        .await
        .unwrap();
    app.wait_for(
        "the delete in the inbox",
        &format!("{INBOX_BATCH} {}", card("delete_file")),
    )
    .await;
    let task = inbox_tasks(&app).await.remove(0);
    click(&app, &in_inbox(&task, "[data-testid=approve-button]")).await;
    app.wait_for("the inbox empties", "[data-testid=approvals-empty]")
        .await;
    app.wait_until("the approved call has run", || async {
        Ok(decisions_of(&app, &task)
            .await
            .first()
            .is_some_and(|entry| entry["calls"][0]["result"].is_object()))
    })
    .await;
    assert!(!app.sandbox("notes.txt").exists());
    let decisions = decisions_of(&app, &task).await;
    assert_eq!(decisions.len(), 1, "{decisions:?}");
    assert_eq!(decisions[0]["calls"].as_array().unwrap().len(), 1);
    assert!(
        decisions[0]["calls"][0]["result"].is_object(),
        "{decisions:?}"
    );
    app.driver.switch_to_window(chat_tab).await.unwrap();
    app.wait_for_text(
        "[data-testid=decided-elsewhere]",
        "Decided elsewhere by local.",
    )
    .await;
    app.wait_until("the chat shows the call done", || async {
        let status = app
            .find(&card("delete_file"))
            .await?
            .attr("data-status")
            .await?
            .unwrap_or_default();
        Ok(status != "pending")
    })
    .await;
    wait_title(&app, "Signoff").await;
    app.finish().await;
}

/// Runs the steps of `person`'s browser with the app's helpers: the app drives `person`'s
/// browser until the returned driver is put back.
fn switch(app: &mut App, person: &WebDriver) -> WebDriver {
    std::mem::replace(&mut app.driver, person.clone())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_people_with_tokens_each_see_and_decide_only_their_own_batches() {
    let mut app = App::start_with(
        "inbox-two-people",
        Options {
            tokens: Some(vec!["alice-token=alice".into(), "bob-token=bob".into()]),
            ..Options::default()
        },
    )
    .await;
    app.open("/approvals#token=alice-token").await;
    app.wait_for("Alice's empty inbox", "[data-testid=approvals-empty]")
        .await;
    let bob = Browser::start((1280, 900)).await;
    let alice = switch(&mut app, &bob.driver);
    app.open("/approvals#token=bob-token").await;
    app.wait_for("Bob's empty inbox", "[data-testid=approvals-empty]")
        .await;

    let (hers, _) = pause(&app, "demo", Some("alice-token"), "write alice.txt: hers").await;
    let (his, _) = pause(&app, "demo", Some("bob-token"), "write bob.txt: his").await;
    // Bob's inbox: his batch only (had Alice's reached him, it would have come first).
    wait_inbox(&app, &[his.as_str()]).await;
    wait_title(&app, "(1) Signoff").await;
    switch(&mut app, &alice);
    wait_inbox(&app, &[hers.as_str()]).await;
    wait_title(&app, "(1) Signoff").await;

    // Bob decides his in his inbox: it runs once; Alice's stays.
    switch(&mut app, &bob.driver);
    click(&app, &in_inbox(&his, "[data-testid=approve-button]")).await;
    wait_inbox(&app, &[]).await;
    wait_title(&app, "Signoff").await;
    app.wait_until("Bob's call has run", || async {
        Ok(std::fs::read_to_string(app.sandbox("bob.txt")).is_ok_and(|text| text == "his"))
    })
    .await;
    assert!(!app.sandbox("alice.txt").exists());
    let _ = bob.driver.clone().quit().await;
    switch(&mut app, &alice);
    wait_inbox(&app, &[hers.as_str()]).await;
    wait_title(&app, "(1) Signoff").await;
    app.finish().await;
}

/// A stand-in for the browser's notifications, installed before the page's scripts: it
/// records what would be shown and whether permission was asked; `window.__hidden` plays the
/// tab being in the background.
const NOTIFICATION_STUB: &str = r#"
window.__shown = [];
window.__asked = 0;
window.__hidden = false;
class StubNotification {
  constructor(title, options) {
    this.title = title;
    this.body = (options && options.body) || '';
    this.onclick = null;
    window.__shown.push(this);
  }
  close() { this.closed = true; }
  static requestPermission() {
    window.__asked += 1;
    StubNotification.permission = 'granted';
    return Promise.resolve('granted');
  }
}
StubNotification.permission = 'default';
window.Notification = StubNotification;
Object.defineProperty(document, 'hidden', { configurable: true, get: () => window.__hidden });
"#;

async fn shown(app: &App) -> Vec<Value> {
    app.js("return window.__shown.map((n) => ({title: n.title, body: n.body}))")
        .await
        .as_array()
        .cloned()
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn notifications_come_only_when_turned_on_and_the_tab_is_hidden_and_lead_to_the_card() {
    let app = App::start("inbox-notifications").await;
    app.before_each_page(NOTIFICATION_STUB).await;
    app.open("/approvals").await;
    app.wait_for("the empty inbox", "[data-testid=approvals-empty]")
        .await;

    // Off (the default): a batch while hidden raises nothing, and nobody asked permission.
    app.js("window.__hidden = true").await;
    let (first, _) = pause(&app, "demo", None, "write one.txt: 1").await;
    wait_inbox(&app, &[first.as_str()]).await;
    wait_title(&app, "(1) Signoff").await;
    assert!(shown(&app).await.is_empty());
    assert_eq!(app.js("return window.__asked").await, 0);

    // Turned on: permission is asked on that click, once, and the choice is kept.
    app.js("window.__hidden = false").await;
    click(&app, "[data-testid=notify-toggle]").await;
    app.wait_until("notifications are on", || async {
        Ok(app.js("return window.__asked").await == 1
            && app
                .js("return localStorage.getItem('signoff.notifications')")
                .await
                == "on")
    })
    .await;

    // On, but the tab is visible: nothing.
    let (second, _) = pause(&app, "demo", None, "write two.txt: 2").await;
    wait_inbox(&app, &[second.as_str(), first.as_str()]).await;
    assert!(shown(&app).await.is_empty());

    // On and hidden: one notification naming the agent and the tools.
    app.js("window.__hidden = true").await;
    let (_, third_context) = pause(&app, "demo", None, "delete old.txt").await;
    app.wait_until("one notification", || async {
        Ok(shown(&app).await.len() == 1)
    })
    .await;
    wait_title(&app, "(3) Signoff").await;
    let note = shown(&app).await.remove(0);
    assert_eq!(note["title"], "default/demo waits for your approval");
    assert_eq!(note["body"], "delete_file · delete old.txt");

    // Its click opens the chat and focuses the waiting card.
    app.js("window.__hidden = false; window.__shown[0].onclick()")
        .await;
    app.wait_until("the chat of the batch is open", || async {
        Ok(app.current_path().await.ends_with(&third_context))
    })
    .await;
    app.wait_until("the card's Approve has the focus", || async {
        Ok(app
            .js("return document.activeElement && document.activeElement.dataset.testid")
            .await
            == "approve-button")
    })
    .await;
    assert!(app
        .find(&format!(
            "{} [data-testid=approve-button]",
            card("delete_file")
        ))
        .await
        .is_ok());
    app.finish().await;
}

/// Installed before the page's scripts: the approvals stream's responses pass through a
/// stream the test can break (`window.__breakApprovals()`), and each request's
/// `Last-Event-ID`, each event id the page was given and each abort of a request are recorded.
const STREAM_TAP: &str = r#"
window.__resumedAfter = [];
window.__ids = [];
window.__approvalsAborted = 0;
window.__breakApprovals = () => {};
const realFetch = window.fetch.bind(window);
window.fetch = async (input, init) => {
  // The chunk loader fetches a URL object; the client fetches strings or Requests.
  const url = input instanceof Request ? input.url : String(input);
  if (!url.includes('/api/approvals/stream')) return realFetch(input, init);
  const headers = new Headers((init && init.headers) || (typeof input === 'string' ? {} : input.headers));
  window.__resumedAfter.push(headers.get('Last-Event-ID'));
  const signal = (init && init.signal) || (typeof input === 'string' ? null : input.signal);
  if (signal) signal.addEventListener('abort', () => { window.__approvalsAborted += 1; });
  const response = await realFetch(input, init);
  const reader = response.body.getReader();
  let text = '';
  const tapped = new ReadableStream({
    start(controller) {
      window.__breakApprovals = () => { reader.cancel(); controller.error(new TypeError('broken by the test')); };
      const pump = () => reader.read().then(({ done, value }) => {
        if (done) { controller.close(); return; }
        text += new TextDecoder().decode(value);
        let end;
        while ((end = text.indexOf('\n\n')) >= 0) {
          const block = text.slice(0, end);
          text = text.slice(end + 2);
          const id = block.split('\n').find((line) => line.startsWith('id: '));
          if (id) window.__ids.push(Number(id.slice(4)));
        }
        controller.enqueue(value);
        return pump();
      }).catch((error) => {
        // An aborted request errors the page's stream as it would without the tap.
        try { controller.error(error); } catch (_) {}
      });
      pump();
    },
  });
  return new Response(tapped, { status: response.status, headers: response.headers });
};
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broken_approvals_stream_resumes_after_its_last_event_losing_and_repeating_nothing() {
    let app = App::start("inbox-reconnect").await;
    app.before_each_page(STREAM_TAP).await;
    app.open("/approvals").await;
    app.wait_for("the empty inbox", "[data-testid=approvals-empty]")
        .await;
    let (first, _) = pause(&app, "demo", None, "write one.txt: 1").await;
    wait_inbox(&app, &[first.as_str()]).await;
    let before: Vec<i64> = serde_json::from_value(app.js("return window.__ids").await).unwrap();
    assert_eq!(before.len(), 1, "{before:?}");

    // Broken; meanwhile a new batch waits and the first is decided.
    app.js("window.__breakApprovals()").await;
    let (second, _) = pause(&app, "demo", None, "write two.txt: 2").await;
    decide(&app, None, &first, json!({"decision_type": "approve"})).await;
    wait_inbox(&app, &[second.as_str()]).await;
    wait_title(&app, "(1) Signoff").await;

    // The new request resumed after the last event the page had, and the page got each later
    // event once, in order.
    let resumed: Vec<Option<String>> =
        serde_json::from_value(app.js("return window.__resumedAfter").await).unwrap();
    assert_eq!(resumed[0], None);
    assert_eq!(resumed[1], Some(before[0].to_string()), "{resumed:?}");
    let ids: Vec<i64> = serde_json::from_value(app.js("return window.__ids").await).unwrap();
    assert!(ids.windows(2).all(|pair| pair[0] < pair[1]), "{ids:?}");
    assert_eq!(
        ids.len(),
        3,
        "the first pending, the second pending and the first decided: {ids:?}"
    );
    app.finish().await;
}

/// A page the browser keeps for Back must not hold its approvals stream open: a browser allows
/// six connections per server, and five quick reloads left the next page waiting a minute for
/// one. `pagehide` aborts the stream; a page shown again follows it again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_approvals_stream_closes_when_the_page_is_hidden_and_follows_again_after() {
    let app = App::start("inbox-pagehide").await;
    app.before_each_page(STREAM_TAP).await;
    app.open("/").await;
    app.wait_until("the approvals stream is requested", || async {
        Ok(count(&app, "window.__resumedAfter.length").await == 1)
    })
    .await;
    assert_eq!(count(&app, "window.__approvalsAborted").await, 0);

    app.js("window.dispatchEvent(new Event('pagehide'))").await;
    app.wait_until("the stream is aborted on pagehide", || async {
        Ok(count(&app, "window.__approvalsAborted").await == 1)
    })
    .await;
    // Brought back from the back/forward cache.
    app.js("window.dispatchEvent(new PageTransitionEvent('pageshow', {persisted: true}))")
        .await;
    app.wait_until("the stream is followed again", || async {
        Ok(count(&app, "window.__resumedAfter.length").await == 2)
    })
    .await;
    app.finish().await;
}

/// Seven tabs of one person: one follows the approvals stream for all. With a stream in every
/// tab, the browser's six connections to a server were taken and the seventh tab never loaded.
/// When the leading tab closes, another follows on from the last event it passed on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn seven_tabs_load_and_share_one_approvals_stream_which_another_tab_takes_over() {
    let app = App::start("inbox-seven-tabs").await;
    app.before_each_page(STREAM_TAP).await;
    app.open("/").await;
    let mut tabs = vec![app.driver.window().await.unwrap()];
    for _ in 1..7 {
        let tab = app.driver.new_tab().await.unwrap();
        app.driver.switch_to_window(tab.clone()).await.unwrap();
        app.before_each_page(STREAM_TAP).await;
        app.open("/").await;
        tabs.push(tab);
    }
    let streams_in = |tab: WindowHandle| {
        let app = &app;
        async move {
            app.driver.switch_to_window(tab).await.unwrap();
            let after: Vec<Option<String>> =
                serde_json::from_value(app.js("return window.__resumedAfter").await).unwrap();
            after
        }
    };

    let (first, _) = pause(&app, "demo", None, "write one.txt: 1").await;
    for tab in &tabs {
        app.driver.switch_to_window(tab.clone()).await.unwrap();
        wait_title(&app, "(1) Signoff").await;
    }
    let mut leaders = Vec::new();
    for tab in &tabs {
        let streams = streams_in(tab.clone()).await;
        assert!(streams.len() <= 1, "{streams:?}");
        if !streams.is_empty() {
            leaders.push(tab.clone());
        }
    }
    assert_eq!(leaders.len(), 1, "one tab follows the stream");
    app.driver
        .switch_to_window(leaders[0].clone())
        .await
        .unwrap();
    let seen: Vec<i64> = serde_json::from_value(app.js("return window.__ids").await).unwrap();
    app.driver.close_window().await.unwrap();
    tabs.retain(|tab| *tab != leaders[0]);

    let next = std::sync::Mutex::new(None);
    app.wait_until("another tab follows the stream", || async {
        for tab in &tabs {
            if !streams_in(tab.clone()).await.is_empty() {
                *next.lock().unwrap() = Some(tab.clone());
            }
        }
        Ok(next.lock().unwrap().is_some())
    })
    .await;
    let next = next.into_inner().unwrap().unwrap();
    assert_eq!(
        streams_in(next).await,
        [seen.last().map(i64::to_string)],
        "the new leader follows on after the last event"
    );

    pause(&app, "demo", None, "write two.txt: 2").await;
    for tab in &tabs {
        app.driver.switch_to_window(tab.clone()).await.unwrap();
        wait_title(&app, "(2) Signoff").await;
    }
    decide(&app, None, &first, json!({"decision_type": "approve"})).await;
    for tab in &tabs {
        app.driver.switch_to_window(tab.clone()).await.unwrap();
        wait_title(&app, "(1) Signoff").await;
        app.assert_no_errors().await;
    }
    assert_eq!(decisions_of(&app, &first).await.len(), 1);
    app.finish().await;
}

/// A leading tab the browser freezes (long in the background) lets another tab lead, and when
/// it resumes it follows that tab instead of opening a stream of its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frozen_leading_tab_lets_another_lead_and_follows_it_when_it_resumes() {
    let app = App::start("inbox-freeze").await;
    app.before_each_page(STREAM_TAP).await;
    app.open("/").await;
    app.wait_until("the first tab follows the stream", || async {
        Ok(count(&app, "window.__resumedAfter.length").await == 1)
    })
    .await;
    let first = app.driver.window().await.unwrap();
    let second = app.driver.new_tab().await.unwrap();
    app.driver.switch_to_window(second.clone()).await.unwrap();
    app.before_each_page(STREAM_TAP).await;
    app.open("/").await;
    assert_eq!(count(&app, "window.__resumedAfter.length").await, 0);

    app.driver.switch_to_window(first.clone()).await.unwrap();
    app.js("document.dispatchEvent(new Event('freeze'))").await;
    app.wait_until("the frozen tab's stream is aborted", || async {
        Ok(count(&app, "window.__approvalsAborted").await == 1)
    })
    .await;
    app.driver.switch_to_window(second.clone()).await.unwrap();
    app.wait_until("the second tab follows the stream", || async {
        Ok(count(&app, "window.__resumedAfter.length").await == 1)
    })
    .await;

    app.driver.switch_to_window(first.clone()).await.unwrap();
    app.js("document.dispatchEvent(new Event('resume'))").await;
    pause(&app, "demo", None, "write one.txt: 1").await;
    for tab in [&first, &second] {
        app.driver.switch_to_window(tab.clone()).await.unwrap();
        wait_title(&app, "(1) Signoff").await;
    }
    app.driver.switch_to_window(first).await.unwrap();
    assert_eq!(count(&app, "window.__resumedAfter.length").await, 1);
    app.assert_no_errors().await;
    app.finish().await;
}

/// Where the browser has no Web Locks (a page served neither from localhost nor over HTTPS),
/// each tab follows its own approvals stream, and still counts what waits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_web_locks_each_tab_follows_its_own_stream() {
    let app = App::start("inbox-no-locks").await;
    let no_locks = "Object.defineProperty(Navigator.prototype, 'locks', { get: () => undefined });";
    let mut tabs = Vec::new();
    for index in 0..2 {
        if index > 0 {
            let tab = app.driver.new_tab().await.unwrap();
            app.driver.switch_to_window(tab).await.unwrap();
        }
        app.before_each_page(no_locks).await;
        app.before_each_page(STREAM_TAP).await;
        app.open("/").await;
        assert_eq!(app.js("return navigator.locks === undefined").await, true);
        tabs.push(app.driver.window().await.unwrap());
    }
    pause(&app, "demo", None, "write one.txt: 1").await;
    for tab in &tabs {
        app.driver.switch_to_window(tab.clone()).await.unwrap();
        wait_title(&app, "(1) Signoff").await;
        assert_eq!(count(&app, "window.__resumedAfter.length").await, 1);
        app.assert_no_errors().await;
    }
    app.finish().await;
}

/// Screenshots of the inbox with three batches from two agents, light and dark.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_inbox_with_three_batches_from_two_agents() {
    let tools = "[[agents.tools]]\nkind = \"builtin_files\"\nrequire_approval = [\"write_file\", \"delete_file\"]\n";
    let agents = format!(
        "[[agents]]\nname = \"demo\"\ndescription = \"Files in a sandbox\"\n{tools}\
         [[agents]]\nname = \"ops\"\ndescription = \"Keeps the sandbox tidy\"\n{tools}"
    );
    let app = App::start_with(
        "inbox-three",
        Options {
            agents_toml: Some(agents),
            size: (1280, 1700),
            ..Options::default()
        },
    )
    .await;
    app.open("/approvals").await;
    let (one, _) = pause(&app, "demo", None, "write notes.txt: hello there").await;
    let (two, _) = pause(&app, "ops", None, "delete old.txt").await;
    let (three, _) = pause(
        &app,
        "demo",
        None,
        "write plan.md: step one and delete draft.md",
    )
    .await;
    wait_inbox(&app, &[three.as_str(), two.as_str(), one.as_str()]).await;
    app.wait_for(
        "the batch bar of the two-call batch",
        "[data-testid=batch-bar]",
    )
    .await;
    app.wait_until("every card loaded", || async {
        Ok(app.find_all("[data-testid=tool-card]").await.len() == 4)
    })
    .await;
    wait_title(&app, "(3) Signoff").await;
    app.shots("inbox-three").await;
    app.finish().await;
}
