//! UI time to a usable chat: in headless Chromium, from navigation to the composer accepting
//! input, for a fresh chat and for a stored chat of 200 messages and 50 tool cards opened by its
//! URL, both served by the real server binary.
//!
//! A script injected before the page's own (`Page.addScriptToEvaluateOnNewDocument`) watches
//! the DOM and stamps `performance.now()` (ms since navigation start) at the first mutation
//! after which the composer is in the page, enabled, writable and laid out. The composer stays
//! disabled while a stored chat loads, so for that chat the time includes fetching and showing
//! its history.

use std::path::Path;
use std::time::Duration;

use serde_json::{json, Value};
use signoff_protocol::TaskState;

use crate::client::{self, A2aClient};
use crate::error::{BenchError, Result};
use crate::progress;
use crate::server::ServerProcess;
use crate::stats::Figure;
use crate::ui_render::{browser_error, Browser};

const GROUP: &str = "UI time to a usable chat (headless Chromium)";

/// The stored chat's size: user messages and answers, and how many of its turns call a tool.
const TURNS: usize = 100;
const TOOL_TURNS: usize = 50;

/// Runs in every new document before the page's scripts. A MutationObserver (not a timer)
/// so the stamp is the moment the DOM changed, not the next poll; the cheap checks come first
/// because it runs on every mutation batch until the composer is ready.
const WATCHER: &str = r#"
(() => {
  const ready = () => {
    const box = document.querySelector('[data-testid=composer-input]');
    return !!box && !box.disabled && !box.readOnly && !box.closest('[inert]')
      && box.getClientRects().length > 0;
  };
  const observer = new MutationObserver(() => {
    if (window.__usable === undefined && ready()) {
      window.__usable = performance.now();
      // What the page showed at that moment, to check the stored chat was in it.
      window.__usableCards = document.querySelectorAll('[data-testid=tool-card]').length;
      observer.disconnect();
    }
  });
  observer.observe(document, { childList: true, subtree: true, attributes: true });
})();
"#;

/// The loads of each page; the issue asks for the median of 20.
pub fn loads(scale: f64) -> usize {
    ((20.0 * scale).round() as usize).max(5)
}

/// Runs both pages and makes the figures; missing figures say why a part could not run.
pub async fn figures(
    binary: &Path,
    dist: Option<&Path>,
    work_dir: &Path,
    loads: usize,
) -> Vec<Figure> {
    let Some(dist) = dist.filter(|dist| dist.join("index.html").is_file()) else {
        return vec![Figure::missing(
            GROUP,
            "time to a usable chat",
            "ms",
            "n/a (no built UI: run scripts/build-ui.sh)",
        )];
    };
    match measure(binary, dist, work_dir, loads).await {
        Ok(figures) => figures,
        Err(err) => vec![Figure::missing(
            GROUP,
            "time to a usable chat",
            "ms",
            format!("failed: {err}"),
        )],
    }
}

async fn measure(binary: &Path, dist: &Path, work_dir: &Path, loads: usize) -> Result<Vec<Figure>> {
    let server = ServerProcess::start_with_ui(binary, &work_dir.join("ui-ready"), dist).await?;
    progress(format_args!(
        "ui-ready: a chat of {TURNS} turns ({TOOL_TURNS} with a tool call) through the demo agent"
    ));
    let context = match stored_chat(&server).await {
        Ok(context) => context,
        Err(err) => {
            let _ = server.stop().await;
            return Err(err);
        }
    };
    let profile = work_dir.join("chromium-profile-ready");
    std::fs::create_dir_all(&profile).map_err(|err| BenchError::io(&profile, err))?;
    let measured = match Browser::start(&profile).await {
        Ok(browser) => {
            let measured = measure_in(&browser, &server, &context, loads).await;
            // Quit on every path: killing chromedriver alone would leave Chromium running.
            let _ = browser.driver.quit().await;
            measured
        }
        Err(err) => Err(err),
    };
    let _ = server.stop().await;
    measured
}

/// Makes the stored chat through the real A2A endpoint and the demo agent's scripted model:
/// every other turn calls one tool (writes wait for approval and are approved), the rest get
/// the model's help text. Returns the chat's context id.
async fn stored_chat(server: &ServerProcess) -> Result<String> {
    let http = reqwest::Client::new();
    let client = A2aClient::new(http, server.endpoint("default", "demo"));
    let mut context: Option<String> = None;
    for turn in 0..TURNS {
        let tool_turn = turn % (TURNS / TOOL_TURNS) == 0;
        let prompt = match (tool_turn, turn / 2 % 3) {
            (false, _) => "hello",
            (true, 0) => "list files",
            (true, 1) => "read readme.txt",
            (true, _) => "write a.txt: x",
        };
        let mut message = client::user_text(prompt);
        message.context_id = context.clone();
        let events = client.stream(message).await?;
        let (task_id, context_id) = client::ids_of(&events)
            .ok_or_else(|| BenchError::Unexpected("the stream named no task".into()))?;
        let ended = events.last().and_then(|last| client::state_of(&last.event));
        if ended == Some(TaskState::InputRequired) {
            let decided = client
                .stream(client::approve(&task_id, &context_id))
                .await?;
            client::ended_in(&decided, TaskState::Completed)?;
        } else {
            client::ended_in(&events, TaskState::Completed)?;
        }
        context = Some(context_id);
    }
    context.ok_or_else(|| BenchError::Unexpected("no chat was made".into()))
}

/// Loads `url` once from a blank page; ms from navigation start to a usable composer.
async fn load_once(browser: &Browser, url: &str) -> Result<f64> {
    // From a blank page, so every load is a full navigation and no state of the last one stays.
    browser
        .driver
        .goto("about:blank")
        .await
        .map_err(browser_error)?;
    browser.driver.goto(url).await.map_err(browser_error)?;
    let usable = browser
        .wait_for(
            "the composer accepts input",
            "return window.__usable === undefined ? null : window.__usable;",
            Duration::from_secs(60),
            Duration::from_millis(50),
        )
        .await?;
    usable
        .as_f64()
        .ok_or_else(|| BenchError::Unexpected(format!("the page measured {usable}")))
}

async fn measure_in(
    browser: &Browser,
    server: &ServerProcess,
    context: &str,
    loads: usize,
) -> Result<Vec<Figure>> {
    browser
        .driver
        .cdp()
        .send_raw(
            "Page.addScriptToEvaluateOnNewDocument",
            json!({ "source": WATCHER }),
        )
        .await
        .map_err(browser_error)?;
    let fresh = format!("{}/", server.base);
    // Context ids are UUIDs, safe in a path segment as they are.
    let stored = format!("{}/agents/default/demo/chat/{context}", server.base);
    progress(format_args!("ui-ready: warm-up"));
    // The first load fills the HTTP cache and compiles the wasm; it is not a figure.
    load_once(browser, &fresh).await?;
    let mut figures = Vec::new();
    progress(format_args!("ui-ready: a fresh chat, {loads} loads"));
    let mut samples = Vec::new();
    for _ in 0..loads {
        samples.push(load_once(browser, &fresh).await?);
    }
    figures.push(
        Figure::samples(
            GROUP,
            "fresh chat: navigation -> composer usable",
            "ms",
            &samples,
        )
        .with_note(format!(
            "{loads} loads of / (after one warm-up, cache warm): navigation start -> the \
                 composer is in the DOM, enabled and laid out"
        )),
    );
    progress(format_args!("ui-ready: the stored chat, {loads} loads"));
    let mut samples = Vec::new();
    for _ in 0..loads {
        samples.push(load_once(browser, &stored).await?);
    }
    // What the page shows, so the figure says what it measured.
    let shown: Value = browser
        .js(
            "return [document.querySelectorAll('[data-testid=message-user],\
             [data-testid=message-agent]').length,\
             document.querySelectorAll('[data-testid=tool-card]').length,\
             window.__usableCards];",
            Vec::new(),
        )
        .await?;
    let count = |index: usize| shown[index].as_u64().unwrap_or(0);
    let (messages, cards, cards_when_usable) = (count(0), count(1), count(2));
    if cards != TOOL_TURNS as u64 || cards_when_usable != cards {
        return Err(BenchError::Unexpected(format!(
            "the stored chat shows {cards} tool cards ({cards_when_usable} when the composer \
             became usable), not {TOOL_TURNS}"
        )));
    }
    figures.push(
        Figure::samples(
            GROUP,
            &format!("{messages} messages, {cards} tool cards: navigation -> composer usable"),
            "ms",
            &samples,
        )
        .with_note(format!(
            "{loads} loads of the stored chat's URL: the same, with its history fetched and shown \
             (the composer is disabled until then)"
        )),
    );
    Ok(figures)
}
