//! UI figures: the built UI in headless Chromium, fed canned streams by
//! [`crate::ui_stream`], for 1,000 and 10,000 text chunks and for 50 and 200 tool cards.
//!
//! Each run sends the prompt, waits until the page shows the stream's first event, reads the
//! main thread's clock (Chromium's `TaskDuration` over CDP), releases the rest of the stream,
//! and waits until the page shows the last event: the figures are the time from the page's
//! first read of the rest to the DOM showing the last event, and the main thread's time per
//! released event. The ratio of the per-event cost at 10,000 to that at 1,000 shows whether a
//! path's cost grows with the history (it should stay near 1).

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde_json::{json, Value};
use thirtyfour::prelude::*;
use tokio::process::{Child, Command};
use tokio::time::Instant;

use crate::error::{BenchError, Result};
use crate::progress;
use crate::stats::{Figure, Summary};
use crate::ui_stream::{Canned, StreamServer, FIRST_EVENTS};

const GROUP: &str = "UI stream rendering (headless Chromium)";

/// Watches the page (times are performance.now(), ms): `last` is when `lastSel` first
/// matches; `firstRead` when the page first reads stream bytes after `window.__bench.armed` is
/// set (the UI reads the body with a ReadableStream reader). Cheap per mutation batch: one
/// `querySelector`, no text reads.
const OBSERVER: &str = r#"
const [lastSel] = arguments;
const bench = { armed: false, firstRead: null, last: null };
window.__bench = bench;
const read = ReadableStreamDefaultReader.prototype.read;
ReadableStreamDefaultReader.prototype.read = function () {
  return read.call(this).then((result) => {
    if (bench.armed && !result.done && bench.firstRead === null) bench.firstRead = performance.now();
    return result;
  });
};
const observer = new MutationObserver(() => {
  if (bench.last === null && document.querySelector(lastSel)) {
    bench.last = performance.now();
    observer.disconnect();
  }
});
observer.observe(document.body, { childList: true, subtree: true, characterData: true });
"#;

/// How many runs of each stream, and how long one may take.
#[derive(Debug, Clone, Copy)]
pub struct UiCounts {
    pub runs_small: usize,
    pub runs_large: usize,
    pub runs_tools: usize,
    pub chunks_small: usize,
    pub chunks_large: usize,
    /// A smaller tool-card chat, to see whether the per-event cost grows with the cards.
    pub tools_small: usize,
    pub tools: usize,
}

impl UiCounts {
    pub fn scaled(scale: f64) -> UiCounts {
        let runs = |full: usize| ((full as f64 * scale).round() as usize).max(1);
        UiCounts {
            runs_small: runs(5),
            runs_large: runs(3),
            runs_tools: runs(5),
            chunks_small: 1_000,
            chunks_large: 10_000,
            tools_small: 50,
            tools: 200,
        }
    }
}

/// The longest one run may take before it counts as failed.
fn run_limit(canned: Canned) -> Duration {
    match canned {
        Canned::Chunks(n) if n > 2_000 => Duration::from_secs(150),
        Canned::Chunks(_) | Canned::Tools(_) => Duration::from_secs(60),
    }
}

/// Chromium driven through chromedriver; also used by [`crate::ui_ready`].
pub struct Browser {
    pub driver: WebDriver,
    /// Killed on drop.
    _chromedriver: Child,
}

fn tool(env: &str, default: &str) -> PathBuf {
    std::env::var_os(env).map_or_else(|| PathBuf::from(default), PathBuf::from)
}

pub fn browser_error(err: WebDriverError) -> BenchError {
    BenchError::Browser(err.to_string())
}

impl Browser {
    pub async fn start(profile: &Path) -> Result<Browser> {
        let chromedriver = tool("CHROMEDRIVER", "/usr/bin/chromedriver");
        let chromium = tool("CHROMIUM", "/usr/bin/chromium");
        let port = std::net::TcpListener::bind(("127.0.0.1", 0))
            .and_then(|listener| listener.local_addr())
            .map_err(|err| BenchError::io("127.0.0.1:0", err))?
            .port();
        let child = Command::new(&chromedriver)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .map_err(|err| BenchError::io(&chromedriver, err))?;
        let deadline = Instant::now() + Duration::from_secs(20);
        while tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_err()
        {
            if Instant::now() > deadline {
                return Err(BenchError::Timeout("chromedriver did not start".into()));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let mut caps = DesiredCapabilities::chrome();
        caps.set_binary(&chromium.display().to_string())
            .map_err(browser_error)?;
        for arg in [
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-extensions",
            "--window-size=1280,900",
        ] {
            caps.add_arg(arg).map_err(browser_error)?;
        }
        caps.add_arg(&format!("--user-data-dir={}", profile.display()))
            .map_err(browser_error)?;
        let driver = WebDriver::new(format!("http://127.0.0.1:{port}"), caps)
            .await
            .map_err(browser_error)?;
        Ok(Browser {
            driver,
            _chromedriver: child,
        })
    }

    pub async fn js(&self, script: &str, args: Vec<Value>) -> Result<Value> {
        let ret = self
            .driver
            .execute(script, args)
            .await
            .map_err(browser_error)?;
        Ok(ret.json().clone())
    }

    /// Main-thread task time so far, in ms (CDP `Performance.getMetrics`, `TaskDuration`).
    async fn task_ms(&self) -> Result<f64> {
        let metrics = self
            .driver
            .cdp()
            .send_raw("Performance.getMetrics", json!({}))
            .await
            .map_err(browser_error)?;
        metrics["metrics"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|metric| metric["name"] == "TaskDuration")
            .and_then(|metric| metric["value"].as_f64())
            .map(|seconds| seconds * 1000.0)
            .ok_or_else(|| BenchError::Browser("no TaskDuration metric".into()))
    }

    /// Runs `script` every `every` until it returns something other than null or false.
    pub async fn wait_for(
        &self,
        what: &str,
        script: &str,
        limit: Duration,
        every: Duration,
    ) -> Result<Value> {
        let deadline = Instant::now() + limit;
        loop {
            let value = self.js(script, Vec::new()).await?;
            if !value.is_null() && value != Value::Bool(false) {
                return Ok(value);
            }
            if Instant::now() > deadline {
                return Err(BenchError::Timeout(format!("{what} within {limit:?}")));
            }
            tokio::time::sleep(every).await;
        }
    }
}

/// One run: what the page measured.
#[derive(Debug, Clone, Copy)]
struct Run {
    first_to_last_ms: f64,
    /// Main-thread task time from releasing the rest of the stream to just after its last
    /// event showed.
    task_ms: f64,
}

async fn run_once(browser: &Browser, server: &StreamServer, canned: Canned) -> Result<Run> {
    let fast = Duration::from_millis(50);
    browser
        .driver
        .goto(format!("{}/", server.base))
        .await
        .map_err(browser_error)?;
    browser
        .driver
        .cdp()
        .send_raw("Performance.enable", json!({}))
        .await
        .map_err(browser_error)?;
    browser
        .wait_for(
            "the composer is ready",
            "const box = document.querySelector('[data-testid=composer-input]');\
             return !!box && !box.disabled;",
            Duration::from_secs(30),
            fast,
        )
        .await?;
    // Both streams end with the bold last line.
    browser
        .js(OBSERVER, vec![json!("[data-testid=message-agent] strong")])
        .await?;
    let input = browser
        .driver
        .find(By::Css("[data-testid=composer-input]"))
        .await
        .map_err(browser_error)?;
    input
        .send_keys(canned.prompt())
        .await
        .map_err(browser_error)?;
    browser
        .driver
        .find(By::Css("[data-testid=send-button]"))
        .await
        .map_err(browser_error)?
        .click()
        .await
        .map_err(browser_error)?;
    let first_shown = match canned {
        Canned::Chunks(_) => "return !!document.querySelector('[data-testid=message-agent] em');",
        Canned::Tools(_) => "return !!document.querySelector('[data-testid=tool-card]');",
    };
    browser
        .wait_for(
            "the first event shown",
            first_shown,
            Duration::from_secs(30),
            fast,
        )
        .await?;
    // The page is idle again, the rest of the stream waits at the server's gate.
    tokio::time::sleep(Duration::from_millis(200)).await;
    browser
        .js("window.__bench.armed = true; return true;", Vec::new())
        .await?;
    let before = browser.task_ms().await?;
    server.release();
    // Polled slowly: each poll is a task on the page's main thread too.
    let seen = match browser
        .wait_for(
            "the last event shown",
            "const b = window.__bench; return b && b.last !== null ? b : null;",
            run_limit(canned),
            Duration::from_millis(250),
        )
        .await
    {
        Ok(seen) => seen,
        Err(err) => {
            // Say what the page shows, to tell a slow page from a stuck one.
            let page = browser
                .js(
                    "const t = document.querySelector('[data-testid=transcript]');\
                     return {bench: window.__bench, url: location.pathname,\
                             tail: t ? t.innerText.slice(-160) : null};",
                    Vec::new(),
                )
                .await
                .unwrap_or_default();
            return Err(BenchError::Unexpected(format!("{err}; the page: {page}")));
        }
    };
    // Let the work the last event queued (rendering) finish before reading the clock again.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let after = browser.task_ms().await?;
    let first_at = seen["firstRead"].as_f64();
    let last_at = seen["last"].as_f64();
    let (Some(first_at), Some(last_at)) = (first_at, last_at) else {
        return Err(BenchError::Unexpected(format!("the page saw {seen}")));
    };
    if let Canned::Tools(n) = canned {
        let cards = browser
            .js(
                "return document.querySelectorAll('[data-testid=tool-card]').length;",
                Vec::new(),
            )
            .await?;
        if cards.as_u64() != Some(n as u64) {
            return Err(BenchError::Unexpected(format!(
                "{cards} tool cards shown, not {n}"
            )));
        }
    }
    Ok(Run {
        first_to_last_ms: last_at - first_at,
        task_ms: after - before,
    })
}

/// Runs every stream and makes the figures; missing figures say why a part could not run.
pub async fn figures(dist: Option<&Path>, work_dir: &Path, counts: &UiCounts) -> Vec<Figure> {
    let Some(dist) = dist.filter(|dist| dist.join("index.html").is_file()) else {
        return vec![Figure::missing(
            GROUP,
            "stream rendering",
            "ms",
            "n/a (no built UI: run scripts/build-ui.sh)",
        )];
    };
    match measure(dist, work_dir, counts).await {
        Ok(figures) => figures,
        Err(err) => vec![Figure::missing(
            GROUP,
            "stream rendering",
            "ms",
            format!("failed: {err}"),
        )],
    }
}

async fn measure(dist: &Path, work_dir: &Path, counts: &UiCounts) -> Result<Vec<Figure>> {
    let server = StreamServer::start(dist).await?;
    let profile = work_dir.join("chromium-profile");
    std::fs::create_dir_all(&profile).map_err(|err| BenchError::io(&profile, err))?;
    let browser = Browser::start(&profile).await?;
    let measured = measure_in(&browser, &server, counts).await;
    // Quit on every path: killing chromedriver alone would leave Chromium running.
    let _ = browser.driver.quit().await;
    measured
}

async fn measure_in(
    browser: &Browser,
    server: &StreamServer,
    counts: &UiCounts,
) -> Result<Vec<Figure>> {
    progress(format_args!("ui: warm-up"));
    // The first load compiles the wasm; it is not a figure.
    let _ = run_once(browser, server, Canned::Chunks(10)).await;
    let scenarios = [
        (
            Canned::Chunks(counts.chunks_small),
            counts.runs_small,
            "text chunks",
        ),
        (
            Canned::Chunks(counts.chunks_large),
            counts.runs_large,
            "text chunks",
        ),
        (
            Canned::Tools(counts.tools_small),
            counts.runs_tools,
            "tool cards",
        ),
        (Canned::Tools(counts.tools), counts.runs_tools, "tool cards"),
    ];
    let mut figures = Vec::new();
    let mut medians: Vec<(Canned, f64)> = Vec::new();
    for (canned, runs, what) in scenarios {
        let n = match canned {
            Canned::Chunks(n) | Canned::Tools(n) => n,
        };
        progress(format_args!("ui: {n} {what}, {runs} run(s)"));
        let mut spans = Vec::new();
        let mut costs = Vec::new();
        let mut errors = Vec::new();
        for _ in 0..runs {
            match run_once(browser, server, canned).await {
                Ok(run) => {
                    spans.push(run.first_to_last_ms);
                    let released = canned.events().saturating_sub(FIRST_EVENTS).max(1);
                    costs.push(run.task_ms / released as f64);
                }
                Err(err) => {
                    errors.push(err.to_string());
                    // A run that timed out leaves a page still busy; stop this stream here.
                    break;
                }
            }
        }
        let errors_note = errors
            .first()
            .map(|first| format!("; {} run(s) failed: {first}", errors.len()))
            .unwrap_or_default();
        figures.push(
            Figure::samples(GROUP, &format!("{n} {what}: first -> last shown"), "ms", &spans)
                .with_note(format!(
                    "the page reads the first of the last {} events (sent at once) -> DOM shows the last{errors_note}",
                    canned.events().saturating_sub(FIRST_EVENTS)
                )),
        );
        figures.push(
            Figure::samples(
                GROUP,
                &format!("{n} {what}: main thread per event"),
                "ms",
                &costs,
            )
            .with_note(
                "Chromium TaskDuration from their release to 200 ms after the last shows / those events",
            ),
        );
        if let Some(summary) = Summary::of(&costs) {
            medians.push((canned, summary.median));
        }
    }
    let ratio = |small: Canned, large: Canned| {
        let cost = |which: Canned| {
            medians
                .iter()
                .find(|(canned, _)| *canned == which)
                .map(|(_, cost)| *cost)
        };
        Some(cost(large)? / cost(small)?)
    };
    let text_ratio = ratio(
        Canned::Chunks(counts.chunks_small),
        Canned::Chunks(counts.chunks_large),
    );
    let name = format!(
        "per-event cost {} / {} chunks",
        counts.chunks_large, counts.chunks_small
    );
    figures.push(match text_ratio {
        Some(ratio) => Figure::value(GROUP, &name, "x", ratio).with_note(
            "median main-thread time per event; 1 is flat, more means it grows with the history",
        ),
        None => Figure::missing(GROUP, &name, "x", "a run above failed"),
    });
    let name = format!(
        "per-event cost {} / {} tool cards",
        counts.tools, counts.tools_small
    );
    figures.push(
        match ratio(
            Canned::Tools(counts.tools_small),
            Canned::Tools(counts.tools),
        ) {
            Some(ratio) => Figure::value(GROUP, &name, "x", ratio)
                .with_note("the same for tool cards (not asked by the issue; shows growth)"),
            None => Figure::missing(GROUP, &name, "x", "a run above failed"),
        },
    );
    Ok(figures)
}
